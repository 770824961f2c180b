"""The Optimizer base class: parameter groups, per-parameter state, state dicts, hooks.

An optimizer holds ``param_groups`` (a list of dicts: ``"params"`` plus that group's options,
filled from ``defaults``) and ``state`` (parameter -> dict of tensors such as ``exp_avg``).
``state_dict()`` uses PyTorch's layout, so the two are interchangeable after converting the tensors::

    {"state": {0: {"step": tensor(3.), "exp_avg": ...}, ...},     # keyed by parameter index
     "param_groups": [{"lr": 0.001, ..., "params": [0, 1, 2]}]}   # indices in group order

Subclasses implement ``step(closure=None)``; updates run under ``no_grad`` with in-place ops.
"""

from __future__ import annotations

import copy
import functools
import warnings
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import capture
from ..backend.autodiff import Autodiff
from ..backend.autodiff.graph import version
from ..backend.capture import capturing
from ..nn.module import RemovableHandle  # the handle every register_*_hook returns

__all__ = ["Optimizer", "required"]


class _Required:
    """Marker for an option without a default (``lr`` of SGD in old PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"

    def __deepcopy__(self, memo):
        return self


required = _Required()


def _with_hooks(step):
    """Wrap a subclass's step so registered pre/post hooks run around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(self._step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"optimizer step pre-hook must return None or (args, kwargs), got {res}")
                args, kwargs = res
        if capturing():
            _capture_check(self)
        out = step(self, *args, **kwargs)
        self._opt_called = True  # lets a scheduler warn when it is stepped before the optimizer
        for hook in list(self._step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    wrapper._ember_hooked = True
    return wrapper


def _capture_check(opt) -> None:
    """A step inside a capture (ember.compile, a CUDA graph): note the optimizer, whose options a replay
    must still match, and give up an ember.compile capture when the step can't be replayed: an
    optimizer without a replay-correct step (it reads its step count on the host), or an option held
    in a tensor (read on the host)."""
    from ..backend import capture
    capture.note_optimizer(opt)
    if not getattr(type(opt), "_replay_safe", False):
        capture.taint(f"{type(opt).__name__}.step reads values on the host (only SGD, Adam and AdamW steps "
                      "can be captured)")
    elif any(isinstance(v, Tensor) or isinstance(v, (tuple, list)) and any(isinstance(x, Tensor) for x in v)
             for g in opt.param_groups for k, v in g.items() if k != "params"):
        capture.taint(f"{type(opt).__name__} has an option held in a tensor (read on the host each step)")


def scalar(x) -> float:
    """A Python float from an option that may be a 1-element tensor (``lr=ember.tensor(0.01)``)."""
    return float(x.item()) if isinstance(x, Tensor) else float(x)


class Optimizer:
    """Base class of the optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs (``model.named_parameters()``),
    or of dicts that each define a parameter group with its own options::

        ember.optim.SGD([{"params": model.body.parameters()},
                         {"params": model.head.parameters(), "lr": 1e-3}], lr=1e-2, momentum=0.9)
    """

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._step_pre_hooks: OrderedDict = OrderedDict()
        self._step_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _with_hooks(step)

    # ---- groups --------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing ones come from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = None
        if params and isinstance(params[0], tuple):
            if not all(isinstance(p, tuple) and len(p) == 2 for p in params):
                raise ValueError("all optimizer params should be (name, tensor) pairs, or none of them")
            names = [n for n, _ in params]
            params = [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        if names is not None:
            group["param_names"] = names
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        if self.param_groups and ("param_names" in self.param_groups[0]) != (names is not None):
            raise ValueError("all optimizer param groups should be with/without names.")
        self.param_groups.append(group)

    # ---- gradients and steps -------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters (to None by default, else to zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = g.detach().zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Update the parameters once; ``closure`` re-evaluates the loss (LBFGS needs it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    @staticmethod
    def _eval_closure(closure):
        """Run the closure with grad enabled (step itself runs under no_grad)."""
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad
        with enable_grad():
            return closure()

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return new (args, kwargs)."""
        h = RemovableHandle(self._step_pre_hooks)
        self._step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        h = RemovableHandle(self._step_post_hooks)
        self._step_post_hooks[h.id] = hook
        return h

    # ---- state dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{options..., "params": [indices]}]}``: parameters are
        numbered in group order; the tensors are the live state (not copies), as in PyTorch."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state saved by :meth:`state_dict` (from this optimizer type with the same
        group sizes). Floating state tensors are converted to their parameter's dtype and device,
        except ``step``; tensors are copied, so the source dict stays independent."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups' entries")
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        groups = self.param_groups
        if len(groups) != len(saved_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups ({len(saved_groups)}) "
                             f"than the optimizer ({len(groups)})")
        for i, (g, s) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(f"loaded state dict contains a parameter group ({i}) that doesn't match the size of "
                                 f"optimizer's group: {len(s['params'])} vs {len(g['params'])} parameters")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value, key=None):
            if isinstance(value, Tensor):
                if key == "step" or not value.is_floating_point() or not param.is_floating_point():
                    return value.to(device=param.device).clone()
                return value.to(device=param.device, dtype=param.dtype).clone()
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, key) for v in value)
            return copy.deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = cast(p, v)
            else:
                state[k] = copy.deepcopy(v)
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups

    # ---- misc ----------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_step_post_hooks", OrderedDict())

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            out += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    out += f"\n    {k}: {g[k]}"
        return out + "\n)"


# ---- helpers shared by the optimizer modules ------------------------------------------------------
def check_common(lr, eps=0.0, weight_decay=0.0, betas=None, **flags) -> None:
    """PyTorch's argument checks, plus a clear refusal of the options ember does not implement."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= scalar(weight_decay):
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if betas is not None:
        for i, b in enumerate(betas):
            if not 0.0 <= scalar(b) < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    for name in ("differentiable", "capturable", "fused"):
        if flags.get(name):
            raise ValueError(f"{name}=True is not supported by ember's optimizers (they run eagerly, in place, "
                             "under no_grad); leave it unset")


def step_tensor(device, value: float = 0.0) -> Tensor:
    """A fresh ``step`` counter: a 0-d float32 tensor (float64 under a float64 default dtype), as in PyTorch."""
    from .. import _dtype as dt
    from .._creation import full
    d = dt.float64 if dt.get_default_dtype() is dt.float64 else dt.float32
    return full((), value, dtype=d, device=device)


def step_count(state: dict, device) -> float:
    """Increment the parameter's ``step`` counter and return its new value as a Python float.

    The counter is a tensor on the parameter's device (for state_dict and for captured steps); reading a
    CUDA counter back each step would be a sync per parameter, so the value is mirrored on the host and
    read back only when the counter may have changed behind the mirror (an in-place op on it, a replay of
    captured work, a new counter from load_state_dict)."""
    st = state.get("step")
    if st is None:
        st = state["step"] = step_tensor(device)
    before = _stamp(st)
    known = _host_steps.get(id(st))
    st.add_(1)
    if before is not None and known is not None and known[0]() is st and known[2] == before:
        t = float(st._dtype.np.type(known[1]) + st._dtype.np.type(1))  # the counter's own rounding
    else:
        t = float(st.item())
    after = _stamp(st)
    if after is not None:
        if len(_host_steps) > 65536:
            for k in [k for k, v in _host_steps.items() if v[0]() is None]:
                del _host_steps[k]
        _host_steps[id(st)] = (weakref.ref(st), t, after)
    return t


# id(step tensor) -> (weak reference, value, stamp when the value was taken): see step_count
_host_steps: dict = {}


def _stamp(t: Tensor):
    """(storage version, replays so far) of a counter, or None where the device's stack keeps no versions
    (then the mirror is not used)."""
    be = t._device.backend
    if not isinstance(be, Autodiff):
        return None
    return version(be.storage(t._h)), capture.replays()


def grads_of(group: dict) -> Iterable[tuple[Tensor, Tensor]]:
    """(parameter, gradient) for the group's parameters that have a gradient; the gradient is negated
    for ``maximize=True`` groups."""
    maximize = group.get("maximize", False)
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        if g.is_sparse if hasattr(g, "is_sparse") else False:  # pragma: no cover - no sparse tensors yet
            raise RuntimeError("sparse gradients are not supported")
        yield p, (-g if maximize else g)


__all__ += ["check_common", "step_count", "step_tensor", "grads_of", "scalar", "no_grad"]
