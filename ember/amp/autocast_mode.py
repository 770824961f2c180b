"""ember.autocast: mixed precision regions with PyTorch's semantics.

Inside ``with ember.autocast("cpu"):`` the matmul family, linear and convolutions run in
bfloat16 (or ``dtype=ember.float16``) and numerically sensitive ops (the losses, prod, trace,
inverse, ...) run in float32, whatever the dtypes of their inputs; outputs keep the dtype their
op ran in, and autograd casts gradients back, so parameters and their ``.grad`` stay float32.
Which op does what follows PyTorch's per-device lists (``ember._autocast_hooks.POLICIES``); other
ops run in the dtypes they are given. The state is per thread.

>>> import ember
>>> a, b = ember.ones(2, 3), ember.ones(3, 4)
>>> with ember.autocast("cpu"):
...     c = a @ b
>>> c.dtype
ember.bfloat16
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .. import _dtype as dt
from .._autocast_hooks import DEFAULT_DTYPES, POLICIES, state
from .._tensor import Tensor

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "set_autocast_enabled", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "custom_fwd", "custom_bwd"]

_SUPPORTED = {"cpu": (dt.bfloat16, dt.float16), "cuda": (dt.float16, dt.bfloat16)}


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in POLICIES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}' "
                           f"(ember autocasts {', '.join(repr(k) for k in POLICIES)})")
    return device_type


def _default_type(device_type: str | None) -> str:
    if device_type is None:
        from .._device import get_default_device
        return get_default_device().type
    return _check_device_type(device_type)


def is_autocast_available(device_type: str) -> bool:
    """Whether ``ember.autocast`` supports ``device_type`` and such a device exists here."""
    if device_type not in POLICIES:
        return False
    from .._device import device
    try:
        device(device_type).backend  # noqa: B018 - building the stack is the availability check
    except Exception:
        return False
    return True


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (default: the default device's type) on this thread."""
    return _default_type(device_type) in state.enabled


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The low dtype autocast uses on ``device_type`` (bfloat16 on the CPU, float16 on CUDA unless changed)."""
    return state.dtypes[_check_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the low dtype for ``device_type`` (what ``autocast(device_type)`` uses when no dtype is given)."""
    d = dt.as_dtype(dtype)
    state.dtypes[_check_device_type(device_type)] = d
    if device_type in state.enabled:
        state.enabled[device_type] = d


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Switch autocast on or off for ``device_type`` without a context (prefer ``ember.autocast``)."""
    _check_device_type(device_type)
    if enabled:
        state.enabled[device_type] = state.dtypes[device_type]
    else:
        state.enabled.pop(device_type, None)
    state.refresh()


def is_autocast_cache_enabled() -> bool:
    """Whether autocast keeps the low-precision copies of weights for the rest of the region."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached low-precision copies of weights (done on leaving the outermost autocast)."""
    state.cache.clear()


class autocast:  # noqa: N801 - PyTorch's name
    """Run the ops of a region (or of a decorated function) in mixed precision.

    ``device_type``: the device type whose ops autocast ('cpu' or 'cuda'); ``dtype``: the low
    dtype (default: ``get_autocast_dtype(device_type)``, bfloat16 on the CPU); ``enabled=False``
    turns autocast off inside an enclosing region; ``cache_enabled``: reuse the low-precision copy
    of each weight within the region (default: ``is_autocast_cache_enabled()``).

    >>> with ember.autocast("cpu", dtype=ember.float16):
    ...     y = ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3))
    >>> y.dtype
    ember.float16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        self.device = _check_device_type(device_type)
        self.fast_dtype = state.dtypes[self.device] if dtype is None else dt.as_dtype(dtype)
        self._cache_enabled = state.cache_enabled if cache_enabled is None else bool(cache_enabled)
        enabled = bool(enabled)
        if enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            names = ", ".join(f"ember.{d.name}" for d in _SUPPORTED[self.device])
            warnings.warn(f"In {self.device.upper()} autocast, but the target dtype {self.fast_dtype} is not "
                          f"supported. Disabling autocast.\n{self.device.upper()} Autocast only supports dtype "
                          f"of {names} currently.", stacklevel=2)
            enabled = False
        if enabled and self.device != "cpu" and not is_autocast_available(self.device):
            warnings.warn(f"User provided device_type of '{self.device}', but no {self.device} device is "
                          "available. Disabling autocast.", stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        dev = self.device
        self._prev = (state.enabled.get(dev), state.dtypes[dev], state.cache_enabled)
        state.dtypes[dev] = self.fast_dtype
        if self._enabled:
            state.enabled[dev] = self.fast_dtype
        else:
            state.enabled.pop(dev, None)
        state.cache_enabled = self._cache_enabled
        state.nesting += 1
        state.refresh()
        return self

    def __exit__(self, *exc) -> bool:
        dev = self.device
        state.nesting -= 1
        if state.nesting == 0:  # leaving the outermost region: the weight copies may be stale next time
            state.cache.clear()
        prev_enabled, state.dtypes[dev], state.cache_enabled = self._prev
        if prev_enabled is None:
            state.enabled.pop(dev, None)
        else:
            state.enabled[dev] = prev_enabled
        state.refresh()
        return False

    def __call__(self, func: Callable) -> Callable:
        """Use as a decorator: every call of ``func`` runs in a fresh region with these settings."""
        settings = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(func)
        def run(*args, **kwargs):
            with autocast(*settings):
                return func(*args, **kwargs)
        return run

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled}, "
                f"cache_enabled={self._cache_enabled})")


def _cast_arg(value: Any, device_type: str, dtype: dt.dtype) -> Any:
    if isinstance(value, Tensor):
        ok = value._device.type == device_type and value._dtype.is_floating_point and value._dtype is not dt.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_arg(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_arg(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of an ``ember.autograd.Function`` under autocast.

    Without ``cast_inputs`` forward runs with the caller's autocast state, which ``custom_bwd``
    then restores for backward. With ``cast_inputs=dtype``, inside an autocast region forward runs
    with autocast off and its floating tensor arguments (on ``device_type``) cast to that dtype.
    """
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0]
        ctx._fwd_used_autocast = is_autocast_enabled(device_type)
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None or not ctx._fwd_used_autocast:
            return fwd(*args, **kwargs)
        to = dt.as_dtype(cast_inputs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_arg(args, device_type, to), **_cast_arg(kwargs, device_type, to))
    return forward


def custom_bwd(bwd: Callable | None = None, *, device_type: str):
    """Decorator for the ``backward`` of an ``ember.autograd.Function``: runs it with the autocast
    state its forward (decorated with ``custom_fwd``) ran with."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", DEFAULT_DTYPES[device_type])):
            return bwd(*args, **kwargs)
    return backward
