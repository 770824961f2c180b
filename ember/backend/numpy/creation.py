"""Creation ops of the numpy backend."""

from __future__ import annotations

import numpy as np


def _full(shape, value, dtype):
    return np.full(shape, value, dtype=dtype.np)


def _empty(shape, dtype):
    return np.empty(shape, dtype=dtype.np)


def _arange(start, end, step, dtype):
    if dtype.is_floating_point:
        # computed in float64 like PyTorch, then rounded to the dtype
        n = max(0, int(np.ceil((end - start) / step)))
        return (start + step * np.arange(n, dtype=np.float64)).astype(dtype.np)
    return np.arange(start, end, step, dtype=np.int64).astype(dtype.np, copy=False)


def _linspace(start, end, steps, dtype):
    if steps == 1:
        return np.full((1,), start, dtype=np.float64).astype(dtype.np)
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    # PyTorch fills the first half from start and the second half from end (symmetric rounding)
    half = steps // 2
    out = np.where(i < half, start + step * i, end - step * (steps - 1 - i))
    if not dtype.is_floating_point:
        out = np.trunc(out) if dtype.np.kind in "iu" else out
    return out.astype(dtype.np)


def _eye(n, m, dtype):
    return np.eye(n, m, dtype=dtype.np)


OPS = {"full": _full, "empty": _empty, "arange": _arange, "linspace": _linspace, "eye": _eye}
