"""softmax and log_softmax: composites with a backend fast path.

When the backend implements ``softmax``/``log_softmax`` itself (the numpy backend does, in a few
in-place passes), the frontend dispatches one op; otherwise it decomposes into max, sub, exp, sum
and div, which any backend has.
"""

from __future__ import annotations

from . import _dtype as dt
from ._autocast_hooks import autocast_inputs
from ._shape import norm_dim
from ._tensor import Tensor, method, wrap

__all__ = ["softmax", "log_softmax"]


def _prep(input: Tensor, dim, dtype, op: str):
    if dim is None:
        raise TypeError(f"{op}() missing required argument 'dim' (implicit dim choice is deprecated in PyTorch)")
    x = input
    if dtype is not None:
        x = x.to(dt.as_dtype(dtype))
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating tensor (or pass dtype=), got {x._dtype}")
    return x, norm_dim(dim, x.ndim, op) if x.ndim else 0


@method
def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim, computed stably.

    >>> ember.tensor([1.0, 2.0, 3.0]).softmax(0)
    tensor([0.0900, 0.2447, 0.6652])
    """
    (input,) = autocast_inputs("softmax", input)  # noqa: A001 - ember.autocast: float32 on CUDA
    x, d = _prep(input, dim, dtype, "softmax")
    if not x.ndim:
        return (x - x).exp()
    b = x._device.backend
    if b.supports("softmax"):
        return wrap(b.run("softmax", (x._h,), {"dim": d}), x._shape, x._dtype, x._device)
    m = x.amax(d, keepdim=True)
    # only an all -inf row has its max replaced (its result is then NaN-free zeros / 0 = NaN as in
    # PyTorch); a +inf max must stay, so that the row becomes NaN as PyTorch's does
    e = (x - m.masked_fill(m == float("-inf"), 0.0)).exp()
    return e / e.sum(d, keepdim=True)


@method
def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """x - logsumexp(x) along dim."""
    (input,) = autocast_inputs("log_softmax", input)  # noqa: A001 - ember.autocast: float32 on CUDA
    x, d = _prep(input, dim, dtype, "log_softmax")
    if not x.ndim:
        return x - x
    b = x._device.backend
    if b.supports("log_softmax"):
        return wrap(b.run("log_softmax", (x._h,), {"dim": d}), x._shape, x._dtype, x._device)
    return x - x.logsumexp(d, keepdim=True)
