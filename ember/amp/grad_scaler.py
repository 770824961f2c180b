"""ember.amp.GradScaler: loss scaling for float16 training, with PyTorch's semantics.

Small float16 gradients underflow to zero; scaling the loss by a large factor before backward keeps
them representable. The scaler multiplies the loss by ``scale``, divides the gradients by it again
(``unscale_``) before the optimizer step, skips the step when a gradient is inf or NaN (the scale
was too large) and adapts the scale: ``backoff_factor`` after a skipped step, ``growth_factor``
after ``growth_interval`` good steps in a row::

    scaler = ember.amp.GradScaler()
    for x, y in data:
        opt.zero_grad()
        with ember.autocast("cpu", dtype=ember.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)      # unscales, then steps only if every gradient is finite
        scaler.update()

The scale and the growth counter live in 0-d tensors on the loss's device, so nothing syncs with
the host until ``step`` reads whether an inf was found.
"""

from __future__ import annotations

import enum
import warnings
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Dynamic loss scaling (see the module docstring).

    ``init_scale``: the first scale (2**16); ``growth_factor`` (> 1) and ``backoff_factor`` (< 1):
    how the scale changes; ``growth_interval``: good steps before it grows; ``enabled=False`` makes
    every method a pass-through, so one script runs with and without scaling.

    >>> import ember
    >>> scaler = ember.amp.GradScaler(init_scale=8.0)
    >>> scaler.scale(ember.tensor(1.5))
    tensor(12.)
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled:
            from .._device import device as get_device
            try:
                get_device(self._device).backend  # noqa: B018 - building the stack checks availability
            except Exception:
                warnings.warn(f"GradScaler is enabled, but device {self._device!r} is not available. Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = float(init_scale)
            self._scale: Tensor | None = None
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict = defaultdict(_fresh_state)

    # ---- scaling ------------------------------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        from .._creation import full
        self._scale = full((), self._init_scale, dtype=dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dt.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of tensors) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(value.device)
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return map(apply, value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        """Divide every gradient by the scale in place; per device, whether one was inf or NaN."""
        found: dict = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = g.device
                    bad = g.isfinite().logical_not().any().to(dt.float32)
                    if dev not in found:
                        found[dev] = found_inf.to(dev)
                    found[dev] = found[dev].maximum(bad)
                    g.mul_(inv_scale.to(dev))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale now (for clipping before ``step``)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        # the reciprocal in float64, rounded once to float32, as PyTorch does
        inv_scale = self._scale.double().reciprocal().float()
        from .._creation import zeros
        found_inf = zeros((), dtype=dt.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless ``unscale_`` already did) and call ``optimizer.step(*args, **kwargs)`` only if
        every gradient is finite; returns what step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale after the iteration's steps: back off if any step found inf/NaN, grow after
        ``growth_interval`` clean iterations. ``new_scale`` sets it directly instead."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, (int, float)) and not isinstance(new_scale, bool):
                scale.fill_(float(new_scale))
            else:
                reason = "new_scale should be a float or a 1-element tensor with requires_grad=False."
                assert isinstance(new_scale, Tensor), reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                scale.copy_(new_scale.reshape(()).to(scale.device))
        else:
            found_infs = [f.to(scale.device) for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found = found_infs[0]
            for f in found_infs[1:]:
                found = found + f
            self._update_scale_(scale, tracker, found > 0)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _update_scale_(self, scale: Tensor, tracker: Tensor, found: Tensor) -> None:
        """In place: scale *= backoff and the counter resets after an inf; otherwise the counter
        counts up and, reaching growth_interval, resets while the scale grows (if that stays finite).
        Products are formed in float64 and rounded once to float32, as PyTorch's kernel does."""
        with no_grad():
            counted = tracker + 1
            due = counted == self._growth_interval
            grown = (scale.double() * self._growth_factor).float()
            backed = (scale.double() * self._backoff_factor).float()
            kept = grown.where(due.logical_and(grown.isfinite()), scale)
            scale.copy_(backed.where(found, kept))
            tracker.copy_(counted.where(found.logical_or(due).logical_not(), 0).to(dt.int32))

    # ---- accessors ----------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled); a sync point."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)
