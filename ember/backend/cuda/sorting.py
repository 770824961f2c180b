"""Sorting and selection on the CUDA backend (array module ``xp``): PyTorch's order (NaN after +inf,
first when descending), stable sorts. Half types sort through float32 (exact), which CuPy needs for
bfloat16 anyway."""

from __future__ import annotations

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

    return {"argsort": _argsort, "sort": _sort, "topk": _topk, "kthvalue": _kthvalue}
