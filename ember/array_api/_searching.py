"""The standard's searching, sorting, set and indexing functions: where, nonzero, searchsorted,
sort, argsort, unique_*, isin, take, take_along_axis.

The ``unique_*`` family is composed from ember ops: a stable sort, a "differs from the previous
element" mask (NaN differs from everything, so each NaN is its own unique value, as the
standard asks), and scans/scatters for the first indices, inverse indices and counts.

>>> import ember.array_api as xp
>>> xp.unique_counts(xp.asarray([3, 1, 3, 3]))
UniqueCountsResult(values=tensor([1, 3]), counts=tensor([1, 3]))
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

import ember

from .. import _dtype as dt
from .._elementwise import cast
from .._tensor import Tensor
from ._helpers import check_array, norm_axis, operands

__all__ = ["argsort", "isin", "nonzero", "searchsorted", "sort", "take", "take_along_axis", "unique_all",
           "unique_counts", "unique_inverse", "unique_values", "where"]


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def where(condition: Tensor, x1, x2, /) -> Tensor:
    """x1 where condition is true, else x2 (arrays or Python scalars, promoted by the standard's rules)."""
    check_array(condition, "where", "condition")
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        d = _scalar_dtype(x1, x2)
    else:
        d = None
    a, b = operands("where", x1, x2, d)
    a = a if isinstance(a, Tensor) else ember.full((), a, dtype=b._dtype if isinstance(b, Tensor) else d,
                                                    device=condition._device)
    b = b if isinstance(b, Tensor) else ember.full((), b, dtype=a._dtype, device=condition._device)
    return ember.where(cast(condition, dt.bool), a, b)


def _scalar_dtype(*scalars) -> dt.dtype:
    if builtins.all(isinstance(s, builtins.bool) for s in scalars):
        return dt.bool
    if builtins.any(isinstance(s, builtins.float) for s in scalars):
        return dt.get_default_dtype()
    return dt.int64


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the nonzero elements, one int64 array per axis."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: zero-dimensional arrays are not allowed; use nonzero(reshape(x, (1,)))")
    return tuple(ember.nonzero(x, as_tuple=True))


def searchsorted(x1: Tensor, x2, /, *, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """Where each element of x2 would go in the sorted 1-d x1 to keep it sorted (int64 indices).

    >>> xp.searchsorted(xp.asarray([1.0, 3.0, 5.0]), xp.asarray([3.0, 6.0]), side="right")
    tensor([2, 3])
    """
    check_array(x1, "searchsorted", "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be one-dimensional, got shape {tuple(x1._shape)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, b = operands("searchsorted", x1, x2)
    if not isinstance(b, Tensor):
        b = ember.full((), b, dtype=a._dtype, device=a._device)
    if sorter is not None:
        sorter = cast(check_array(sorter, "searchsorted", "sorter"), dt.int64)
    return ember.searchsorted(a, b, side=side, sorter=sorter)


def sort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Tensor:
    """x sorted along ``axis`` (ember's sort is always stable; NaNs sort last, or first when descending)."""
    check_array(x, "sort")
    if x.ndim == 0:
        raise ValueError("sort: zero-dimensional arrays can't be sorted along an axis")
    return ember.sort(x, norm_axis(axis, x.ndim, "sort"), descending, stable=True).values


def argsort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Tensor:
    """The indices that sort x along ``axis`` (stable: ties keep their order, also when descending)."""
    check_array(x, "argsort")
    if x.ndim == 0:
        raise ValueError("argsort: zero-dimensional arrays can't be sorted along an axis")
    return ember.argsort(x, norm_axis(axis, x.ndim, "argsort"), descending, stable=True)


def _unique(x: Tensor, op: str):
    """(values, first indices, inverse indices shaped like x, counts), each NaN distinct."""
    check_array(x, op)
    flat = x.reshape(-1)
    n = flat._shape[0]
    order = ember.argsort(flat, stable=True)
    ordered = flat[order]
    if n == 0:
        idx = ember.zeros((0,), dtype=dt.int64, device=x._device)
        return ordered, idx, ember.zeros(x._shape, dtype=dt.int64, device=x._device), idx
    # True where an element starts a new value: different from the one before it (NaN != NaN)
    starts = ember.cat([ember.ones((1,), dtype=dt.bool, device=x._device), ember.ne(ordered[1:], ordered[:-1])])
    group = ember.cumsum(starts.to(dt.int64), 0) - 1  # the unique value each sorted element belongs to
    positions = ember.nonzero(starts, as_tuple=True)[0]
    values = ordered[positions]
    first = order[positions]  # the stable sort puts each value's first occurrence at its start
    ends = ember.cat([positions[1:], ember.full((1,), n, dtype=dt.int64, device=x._device)])
    counts = ends - positions
    inverse = ember.empty((n,), dtype=dt.int64, device=x._device)
    inverse[order] = group
    return values, first, inverse.reshape(x._shape), counts


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """Unique values (sorted), the index of each one's first occurrence, inverse indices and counts."""
    return UniqueAllResult(*_unique(x, "unique_all"))


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """Unique values (sorted) and how often each occurs."""
    v, _, _, c = _unique(x, "unique_counts")
    return UniqueCountsResult(v, c)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """Unique values and, for each element of x, the index of its value (shaped like x)."""
    v, _, inv, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(v, inv)


def unique_values(x: Tensor, /) -> Tensor:
    """The unique values of x, sorted (each NaN is its own value)."""
    return _unique(x, "unique_values")[0]


def isin(x1, x2, /, *, invert: builtins.bool = False) -> Tensor:
    """True where an element of x1 occurs in x2 (anywhere); ``invert`` negates. NaN is never found.

    >>> xp.isin(xp.asarray([1, 2, 5]), xp.asarray([5, 1]))
    tensor([ True, False,  True])
    """
    a, b = operands("isin", x1, x2)
    if not isinstance(a, Tensor):
        a = ember.full((), a, dtype=b._dtype, device=b._device)
    if not isinstance(b, Tensor):
        b = ember.full((), b, dtype=a._dtype, device=a._device)
    pool = ember.sort(b.reshape(-1)).values
    m = pool._shape[0]
    if m == 0:
        found = ember.zeros(a._shape, dtype=dt.bool, device=a._device)
    else:
        pos = ember.clamp(ember.searchsorted(pool, a.contiguous()), max=m - 1)
        found = ember.eq(pool[pos], a)
    return ember.logical_not(found) if invert else found


def _index(indices: Tensor, op: str) -> Tensor:
    check_array(indices, op, "indices")
    if indices._dtype.category != 1:
        raise TypeError(f"{op}: indices must have an integer dtype, got {indices._dtype}")
    return cast(indices, dt.int64)


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements of x at ``indices`` along ``axis`` (which may be left out for 1-d x).

    >>> xp.take(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 0, 1]), axis=1)
    tensor([[2, 1, 2],
            [4, 3, 4]])
    """
    check_array(x, "take")
    idx = _index(indices, "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for arrays of more than one dimension (got {x.ndim})")
        axis = 0
    a = norm_axis(axis, x.ndim, "take")
    return x[(slice(None),) * a + (idx,)]


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """Values of x at ``indices`` along ``axis``, the other axes broadcast (numpy.take_along_axis)."""
    check_array(x, "take_along_axis")
    idx = _index(indices, "take_along_axis")
    if x.ndim != idx.ndim:
        raise ValueError(f"take_along_axis: x and indices must have the same number of dimensions, got "
                         f"{x.ndim} and {idx.ndim}")
    return ember.take_along_dim(x, idx, norm_axis(axis, x.ndim, "take_along_axis"))
