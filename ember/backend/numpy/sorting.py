"""Sorting, selection and counting ops of the numpy backend.

Orders follow PyTorch: NaN sorts after +inf (first when descending), -0.0 equals 0.0, and sorts
are stable. The frontend has normalised dims and checked ranges, dtypes and output lengths.
"""

# ruff: noqa: A002 - PyTorch's argument names (input, min, max, sorted, ord) shadow builtins

from __future__ import annotations

import numpy as np

from ._util import LOW_PRECISION


def _order(x):
    """An array numpy sorts in PyTorch's order (NaN last); half types sort through float32."""
    return x.astype(np.float32) if x.dtype in LOW_PRECISION else x


def _argsort(x, dim, descending, stable=True):
    key = _order(x)
    if not descending:
        return np.argsort(key, axis=dim, kind="stable").astype(np.int64, copy=False)
    # descending and stable: sort the reversed array ascending, reverse back, remap positions
    n = x.shape[dim]
    idx = np.argsort(np.flip(key, dim), axis=dim, kind="stable")
    return (n - 1 - np.flip(idx, dim)).astype(np.int64, copy=False)


def _sort(x, dim, descending, stable=True):
    idx = _argsort(x, dim, descending, stable)
    return np.take_along_axis(x, idx, axis=dim), idx


def _topk(x, k, dim, largest, sorted=True):
    # always sorted: PyTorch leaves the order unspecified for sorted=False
    idx = _argsort(x, dim, largest)
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _kthvalue(x, k, dim, keepdim):
    idx = _argsort(x, dim, False)
    pick = np.take(idx, [k - 1], axis=dim)
    values = np.take_along_axis(x, pick, axis=dim)
    if not keepdim:
        values, pick = values.squeeze(dim), pick.squeeze(dim)
    return values, pick


def _searchsorted(sorted_seq, values, right=False, out_int32=False):
    """Binary search of every value in its row of ``sorted_seq`` (1-d, or rows matching the values'
    leading dims), vectorised over all values at once. The comparisons are PyTorch's
    (``!(mid >= v)`` / ``!(mid > v)``), so NaNs land where PyTorch puts them."""
    s, v = _order(sorted_seq), _order(values)
    n = s.shape[-1]
    s2 = s.reshape(1, n) if s.ndim == 1 else s.reshape(-1, n)
    v2 = v.reshape(1, -1) if s.ndim == 1 else v.reshape(s2.shape[0], -1)
    rows = np.arange(s2.shape[0])[:, None]
    lo = np.zeros(v2.shape, np.int64)
    hi = np.full(v2.shape, n, np.int64)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = lo + ((hi - lo) >> 1)
        m = s2[rows, np.minimum(mid, n - 1)]
        right_half = ~(m > v2) if right else ~(m >= v2)
        lo = np.where(active & right_half, mid + 1, lo)
        hi = np.where(active & ~right_half, mid, hi)
    return lo.reshape(v.shape).astype(np.int32 if out_int32 else np.int64)


def _bincount(x, weights=None, minlength=0, length=0):
    # the frontend computed the length (max(x) + 1 or minlength) and cast weights to the output dtype
    if weights is None:
        return np.bincount(x, minlength=length).astype(np.int64)
    return np.bincount(x, weights=weights.astype(np.float64), minlength=length).astype(weights.dtype)


def _histc(x, bins, min, max):
    """Counts of x in ``bins`` equal bins over [min, max] (max falls in the last bin; NaN and values
    outside are skipped). Bin positions use PyTorch's arithmetic in the input dtype:
    ``int((x - min) * bins / (max - min))``."""
    data = x.reshape(-1)
    lo, hi = x.dtype.type(min), x.dtype.type(max)
    data = data[(data >= lo) & (data <= hi)]
    pos = ((data - lo) * x.dtype.type(bins) / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return np.bincount(pos, minlength=bins).astype(x.dtype)


def _run_starts(keys):
    """True where a sorted run of equal rows begins (NaN never equals NaN, as in PyTorch)."""
    change = np.ones(keys.shape[0], bool)
    if keys.shape[0] > 1:
        diff = keys[1:] != keys[:-1]
        change[1:] = diff if diff.ndim == 1 else diff.reshape(diff.shape[0], int(np.prod(diff.shape[1:]))).any(axis=1)
    return change


def _unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique elements (or slices along ``dim``), with inverse indices and counts."""
    if dim is None:
        rows = x.reshape(-1)
        order = np.argsort(_order(rows), kind="stable")
    else:
        rows = np.moveaxis(x, dim, 0)
        flat = _order(rows.reshape(rows.shape[0], int(np.prod(rows.shape[1:]))))
        # lexicographic row order: np.lexsort takes its primary key last
        order = np.lexsort(flat.T[::-1]) if flat.shape[1] else np.arange(flat.shape[0])
    srt = rows[order]
    change = _run_starts(_order(srt))
    values = srt[change]
    if dim is not None:
        values = np.moveaxis(values, 0, dim)
    out = [np.ascontiguousarray(values)]
    if return_inverse:
        inv = np.empty(order.shape[0], np.int64)
        inv[order] = np.cumsum(change) - 1
        out.append(inv.reshape(x.shape) if dim is None else inv)
    if return_counts:
        starts = np.flatnonzero(change)
        out.append(np.diff(np.append(starts, order.shape[0])).astype(np.int64))
    return tuple(out)


def _unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    rows = x.reshape(-1) if dim is None else np.moveaxis(x, dim, 0)
    change = _run_starts(rows)
    values = rows[change]
    if dim is not None:
        values = np.moveaxis(values, 0, dim)
    out = [np.ascontiguousarray(values)]
    if return_inverse:
        inv = (np.cumsum(change) - 1).astype(np.int64)
        out.append(inv.reshape(x.shape) if dim is None else inv)
    if return_counts:
        starts = np.flatnonzero(change)
        out.append(np.diff(np.append(starts, rows.shape[0])).astype(np.int64))
    return tuple(out)


OPS = {
    "sort": _sort, "argsort": _argsort, "topk": _topk, "kthvalue": _kthvalue,
    "searchsorted": _searchsorted, "bincount": _bincount, "histc": _histc,
    # these replace the versions in indexing.py (registered earlier), which merge NaNs
    "unique": _unique, "unique_consecutive": _unique_consecutive,
}
