"""The standard's statistical and utility reductions: sum, prod, mean, std, var, max, min,
cumulative_sum/prod, all, any, argmax, argmin, count_nonzero, diff.

Translations from ember's PyTorch-style reductions: ``axis``/``keepdims`` names; ``axis=()``
reduces nothing (PyTorch reads an empty dim list as "every dim"); argmax/argmin with
``axis=None, keepdims=True`` keep every axis as size 1; ``correction`` may be any float.

>>> import ember.array_api as xp
>>> x = xp.asarray([[1.0, 2.0], [3.0, 5.0]])
>>> xp.sum(x, axis=()).shape, xp.std(x, axis=0, correction=1)
(ember.Size([2, 2]), tensor([1.4142, 2.1213]))
"""

from __future__ import annotations

import builtins

import ember

from .. import _dtype as dt
from .._elementwise import cast
from .._tensor import Tensor
from ._helpers import axis_tuple, check_array, norm_axis, promote

__all__ = ["all", "any", "argmax", "argmin", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff",
           "max", "mean", "min", "prod", "std", "sum", "var"]


def _axes(x: Tensor, axis, op: str):
    """(tensor to reduce, dims for ember, keepdims fix-up) with ``axis=()`` made a size-1 new axis."""
    axes = axis_tuple(axis, x.ndim, op)
    if axes == ():  # reduce over a new trailing axis of size 1: the values are kept, as the standard says
        return x.reshape(*x._shape, 1), (x.ndim,), True
    if axes is None or x.ndim == 0:
        return x, None, False
    return x, axes, False


def _reduce(fn, x: Tensor, axis, keepdims: builtins.bool, op: str, **kw) -> Tensor:
    check_array(x, op)
    y, dims, squeeze = _axes(x, axis, op)
    if dims is None:
        out = fn(y, **kw)
        return out.reshape((1,) * x.ndim) if keepdims and x.ndim else out
    out = fn(y, dims, keepdims and not squeeze, **kw)
    return out


def _accumulate_dtype(x: Tensor, dtype, op: str) -> dt.dtype:
    """sum/prod/cumulative_*'s dtype: as asked, else x's, widened to int64 for small integers and bool."""
    if dtype is not None:
        if not isinstance(dtype, dt.dtype):
            raise TypeError(f"{op}: dtype must be an ember dtype, got {dtype!r}")
        return dtype
    if x._dtype.category < 2:
        return dt.int64
    return x._dtype


def sum(x: Tensor, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (every axis by default)."""
    d = _accumulate_dtype(check_array(x, "sum"), dtype, "sum")
    return _reduce(lambda t, *a: ember.sum(t, *a, dtype=d), x, axis, keepdims, "sum")


def prod(x: Tensor, /, *, axis=None, dtype=None, keepdims: builtins.bool = False) -> Tensor:
    """Product over ``axis``."""
    d = _accumulate_dtype(check_array(x, "prod"), dtype, "prod")
    return _reduce(lambda t, *a: ember.prod(t, *a, dtype=d), x, axis, keepdims, "prod")


def mean(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (floating arrays)."""
    return _reduce(ember.mean, x, axis, keepdims, "mean")


def _var(t, *args, correction):
    if args:
        return ember.var(t, args[0], keepdim=args[1], correction=correction)
    return ember.var(t, correction=correction)


def var(x: Tensor, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Tensor:
    """Variance over ``axis`` with N - correction degrees of freedom (population variance by default)."""
    return _reduce(_var, x, axis, keepdims, "var", correction=correction)


def std(x: Tensor, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False) -> Tensor:
    """Standard deviation: sqrt(var)."""
    return ember.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def max(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """Largest element over ``axis`` (NaN if any is NaN); an error for an empty reduction."""
    return _reduce(lambda t, *a: ember.amax(t, *a) if a else ember.amax(t), x, axis, keepdims, "max")


def min(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """Smallest element over ``axis``."""
    return _reduce(lambda t, *a: ember.amin(t, *a) if a else ember.amin(t), x, axis, keepdims, "min")


def all(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """True where every element over ``axis`` is nonzero (a bool array; PyTorch keeps uint8 for uint8)."""
    return cast(_reduce(ember.all, x, axis, keepdims, "all"), dt.bool)


def any(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """True where some element over ``axis`` is nonzero (a bool array)."""
    return cast(_reduce(ember.any, x, axis, keepdims, "any"), dt.bool)


def count_nonzero(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False) -> Tensor:
    """Number of nonzero elements over ``axis`` (int64)."""
    check_array(x, "count_nonzero")
    return sum(ember.ne(x, 0), axis=axis, keepdims=keepdims)


def _arg(fn, x: Tensor, axis, keepdims: builtins.bool, op: str) -> Tensor:
    check_array(x, op)
    if axis is None:
        out = fn(x.reshape(-1), 0) if x.ndim else fn(x)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return fn(x, norm_axis(axis, builtins.max(x.ndim, 1), op), keepdims)


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Tensor:
    """Index of the first largest element over ``axis`` (of the flattened array when None)."""
    return _arg(ember.argmax, x, axis, keepdims, "argmax")


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Tensor:
    """Index of the first smallest element over ``axis``."""
    return _arg(ember.argmin, x, axis, keepdims, "argmin")


def _cumulative(fn, fill: int, x: Tensor, axis, dtype, include_initial: builtins.bool, op: str) -> Tensor:
    check_array(x, op)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}: axis is required for arrays of more than one dimension (got {x.ndim})")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{op}: needs an array of at least one dimension")
    a = norm_axis(axis, x.ndim, op)
    d = _accumulate_dtype(x, dtype, op)
    out = fn(x, a, dtype=d)
    if include_initial:
        shape = list(x._shape)
        shape[a] = 1
        out = ember.cat([ember.full(tuple(shape), fill, dtype=d, device=x._device), out], a)
    return out


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype=None,
                   include_initial: builtins.bool = False) -> Tensor:
    """Running sum along ``axis``; ``include_initial`` starts with a 0 (one more element along axis)."""
    return _cumulative(ember.cumsum, 0, x, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Tensor, /, *, axis: int | None = None, dtype=None,
                    include_initial: builtins.bool = False) -> Tensor:
    """Running product along ``axis``; ``include_initial`` starts with a 1."""
    return _cumulative(ember.cumprod, 1, x, axis, dtype, include_initial, "cumulative_prod")


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``axis`` (prepend/append join x first); bools give x[i+1] != x[i].

    >>> xp.diff(xp.asarray([1, 4, 9, 16]), n=2)
    tensor([2, 2])
    """
    check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: needs an array of at least one dimension")
    if not isinstance(n, builtins.int) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    a = norm_axis(axis, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        d = promote("diff", *parts)
        x = ember.cat([cast(p, d) for p in parts], a)
    for _ in range(n):
        m = x._shape[a]
        if m == 0:
            break
        hi, lo = x.narrow(a, 1, m - 1), x.narrow(a, 0, m - 1)
        x = ember.ne(hi, lo) if x._dtype is dt.bool else ember.sub(hi, lo)
    return x if n else x.clone()
