"""Sorting, selection and counting ops of the numpy backend."""

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
    side = "right" if right else "left"
    dt = np.int32 if out_int32 else np.int64
    s, v = _order(sorted_seq), _order(values)
    if s.ndim == 1:
        return np.searchsorted(s, v, side=side).astype(dt)
    lead = s.shape[:-1]
    s2 = s.reshape(-1, s.shape[-1])
    v2 = v.reshape(-1, v.shape[-1])
    out = np.empty(v2.shape, dt)
    for row in range(s2.shape[0]):
        out[row] = np.searchsorted(s2[row], v2[row], side=side)
    return out.reshape(lead + (v.shape[-1],))


def _bincount(x, weights=None, minlength=0):
    if weights is None:
        return np.bincount(x, minlength=minlength).astype(np.int64)
    out = np.bincount(x, weights=_order(weights), minlength=minlength)
    return out.astype(weights.dtype if weights.dtype.kind == "f" else np.float64)


def _histc(x, bins, min, max):
    data = _order(x).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    data = data[(data >= lo) & (data <= hi)]
    hist, _ = np.histogram(data, bins=bins, range=(lo, hi))
    return hist.astype(x.dtype)


OPS = {
    "sort": _sort, "argsort": _argsort, "topk": _topk, "kthvalue": _kthvalue,
    "searchsorted": _searchsorted, "bincount": _bincount, "histc": _histc,
}
