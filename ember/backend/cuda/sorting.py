"""Sorting, selection, searching and counting on the CUDA backend (array module ``xp``): PyTorch's order
(NaN after +inf, first when descending), stable sorts. Half types sort through float32 (exact), which
CuPy needs for bfloat16 anyway.

Counting ops scatter-add into a zeroed array (atomics on the GPU) with the output length the frontend
computed, so ``cupy.bincount``'s hidden read of ``max(x)`` is avoided. ``unique`` and
``unique_consecutive`` return data-dependent sizes: they read one number (the count of distinct
values) from the device, the sync PyTorch's CUDA ``unique`` does as well.
"""

from __future__ import annotations

import math

import numpy as np

from ._util import LOW


def build(xp) -> dict:
    def _order(x):
        return x.astype(np.float32) if x.dtype in LOW else x

    def _argsort(x, dim, descending, stable=True):
        key = _order(x)
        if not descending:
            return xp.argsort(key, axis=dim, kind="stable").astype(np.int64, copy=False)
        # descending and stable: sort the reversed array ascending, reverse back, remap positions
        n = x.shape[dim]
        idx = xp.argsort(xp.flip(key, dim), axis=dim, kind="stable")
        return (n - 1 - xp.flip(idx, dim)).astype(np.int64, copy=False)

    def _sort(x, dim, descending, stable=True):
        idx = _argsort(x, dim, descending, stable)
        return xp.take_along_axis(x, idx, axis=dim), idx

    def _topk(x, k, dim, largest, sorted=True):  # noqa: A002 - PyTorch's name
        idx = _argsort(x, dim, largest)
        idx = xp.take(idx, xp.arange(k), axis=dim)
        return xp.take_along_axis(x, idx, axis=dim), idx

    def _kthvalue(x, k, dim, keepdim):
        idx = _argsort(x, dim, False)
        pick = xp.take(idx, xp.asarray([k - 1]), axis=dim)
        values = xp.take_along_axis(x, pick, axis=dim)
        if not keepdim:
            values, pick = values.squeeze(dim), pick.squeeze(dim)
        return values, pick

    def _searchsorted(sorted_seq, values, right=False, out_int32=False):
        """Binary search of every value in its row of ``sorted_seq`` (1-d, or rows matching the values'
        leading dims), vectorised over all values. The comparisons are PyTorch's (``!(mid >= v)`` /
        ``!(mid > v)``), so NaNs land where PyTorch puts them. A fixed number of halvings
        (bit_length(n)) replaces the reference's "any still active?" test, which would read the
        device on every step."""
        s, v = _order(sorted_seq), _order(values)
        n = s.shape[-1]
        s2 = s.reshape(1, n) if s.ndim == 1 else s.reshape(math.prod(s.shape[:-1]), n)
        v2 = v.reshape(1, v.size) if s.ndim == 1 else v.reshape(s2.shape[0], v.shape[-1])
        lo = xp.zeros(v2.shape, np.int64)
        hi = xp.full(v2.shape, n, np.int64)
        for _ in range(n.bit_length()):
            active = lo < hi
            mid = lo + ((hi - lo) >> 1)
            m = xp.take_along_axis(s2, xp.minimum(mid, n - 1), axis=1)
            go_right = ~(m > v2) if right else ~(m >= v2)
            lo = xp.where(active & go_right, mid + 1, lo)
            hi = xp.where(active & ~go_right, mid, hi)
        return lo.reshape(v.shape).astype(np.int32 if out_int32 else np.int64)

    def _count(pos, length):
        """How often each of 0..length-1 occurs in ``pos`` (int64); atomic adds on the GPU."""
        out = xp.zeros(length, np.uint64)  # CuPy's scatter-add has no int64 atomics; counts are >= 0
        xp.add.at(out, pos.astype(np.int64, copy=False), 1)
        return out.astype(np.int64)

    def _bincount(x, weights=None, minlength=0, length=0):
        # the frontend computed the length (max(x) + 1 or minlength) and cast weights to the output dtype
        if weights is None:
            return _count(x, length)
        out = xp.zeros(length, np.float64)  # float64 sums as the reference (order may differ on the GPU)
        xp.add.at(out, x.astype(np.int64, copy=False), weights.astype(np.float64))
        return out.astype(weights.dtype)

    def _histc(x, bins, min, max):  # noqa: A002 - PyTorch's names
        """Counts of x in ``bins`` equal bins over [min, max] (max falls in the last bin; NaN and values
        outside are skipped). Bin positions use PyTorch's arithmetic in the input dtype:
        ``int((x - min) * bins / (max - min))``. Skipped elements count into an extra bin that is
        dropped, so the data never needs compacting (a sync)."""
        data = x.reshape(-1)
        lo, hi, nb = (xp.asarray(v, dtype=x.dtype) for v in (min, max, bins))
        inside = (data >= lo) & (data <= hi)
        safe = xp.where(inside, data, lo)  # NaN and out-of-range values never reach the int cast
        dt = x.dtype  # each step rounds to the input dtype, as on the CPU (CuPy may widen a half quotient)
        pos = ((safe - lo).astype(dt, copy=False) * nb).astype(dt, copy=False)
        pos = xp.minimum((pos / (hi - lo)).astype(dt, copy=False).astype(np.int64), bins - 1)
        return _count(xp.where(inside, pos, bins), bins + 1)[:bins].astype(x.dtype)

    def _run_starts(keys):
        """True where a sorted run of equal rows begins (NaN never equals NaN, as in PyTorch)."""
        change = xp.ones(keys.shape[0], bool)
        if keys.shape[0] > 1:
            diff = keys[1:] != keys[:-1]
            change[1:] = diff if diff.ndim == 1 else diff.reshape(diff.shape[0], math.prod(diff.shape[1:])).any(axis=1)
        return change

    def _lexsort_rows(flat):
        """Order of the rows of the 2-d ``flat`` in lexicographic order, stable: one stable sort per
        column from the last to the first (what numpy's and CuPy's lexsort do)."""
        order = xp.arange(flat.shape[0])
        for c in range(flat.shape[1] - 1, -1, -1):
            order = order[xp.argsort(flat[order, c], kind="stable")]
        return order

    def _runs(change, n):
        """(k, starts): the number of runs and where each begins. k is the one number read from the
        device; the starts are scattered to their run number without compacting (no second sync)."""
        group = xp.cumsum(change) - 1
        k = int(group[-1]) + 1 if n else 0
        starts = xp.empty(k + 1, np.int64)
        starts[xp.where(change, group, k)] = xp.arange(n)  # non-starts land in the spare slot k
        return k, starts[:k], group

    def _uniq(rows, order, change, shape, dim, return_inverse, return_counts):
        n = rows.shape[0]
        k, starts, group = _runs(change, n)
        values = rows[starts] if order is None else rows[order[starts]]
        if dim is not None:
            values = xp.moveaxis(values, 0, dim)
        out = [xp.ascontiguousarray(values)]
        if return_inverse:
            if order is None:
                inv = group.astype(np.int64, copy=False)
            else:
                inv = xp.empty(n, np.int64)
                inv[order] = group
            out.append(inv.reshape(shape) if dim is None else inv)
        if return_counts:
            out.append(xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=np.int64)])).astype(np.int64))
        return tuple(out)

    def _unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """Sorted unique elements (or slices along ``dim``), with inverse indices and counts. Reads the
        number of distinct values from the device once (a sync, as in PyTorch)."""
        if dim is None:
            rows = x.reshape(-1)
            order = xp.argsort(_order(rows), kind="stable")
            change = _run_starts(_order(rows)[order])
        else:
            rows = xp.moveaxis(x, dim, 0)
            flat = _order(rows.reshape(rows.shape[0], math.prod(rows.shape[1:])))
            order = _lexsort_rows(flat) if flat.shape[1] else xp.arange(flat.shape[0])
            change = _run_starts(flat[order])
        return _uniq(rows, order, change, x.shape, dim, return_inverse, return_counts)

    def _unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
        rows = x.reshape(-1) if dim is None else xp.moveaxis(x, dim, 0)
        return _uniq(rows, None, _run_starts(rows), x.shape, dim, return_inverse, return_counts)

    return {"argsort": _argsort, "sort": _sort, "topk": _topk, "kthvalue": _kthvalue,
            "searchsorted": _searchsorted, "bincount": _bincount, "histc": _histc,
            "unique": _unique, "unique_consecutive": _unique_consecutive}
