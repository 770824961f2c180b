"""Creation ops of the CUDA backend (array module ``xp``); values match the numpy reference."""

from __future__ import annotations

import math

import numpy as np


def build(xp) -> dict:
    def _full(shape, value, dtype):
        if value == 0 and not _negative_zero(value):
            # a memset: CuPy's full fills through a conversion kernel (gradients' zeros of bfloat16 buffers)
            return xp.zeros(shape, dtype=dtype.np)
        return xp.full(shape, value, dtype=dtype.np)

    def _empty(shape, dtype):
        return xp.empty(shape, dtype=dtype.np)

    def _arange(start, end, step, dtype):
        if dtype.is_floating_point:
            n = max(0, int(math.ceil((end - start) / step)))
            return (start + step * xp.arange(n, dtype=np.float64)).astype(dtype.np)
        return xp.arange(start, end, step, dtype=np.int64).astype(dtype.np, copy=False)

    def _linspace(start, end, steps, dtype):
        if steps == 1:
            return xp.full((1,), start, dtype=np.float64).astype(dtype.np)
        step = (end - start) / (steps - 1)
        i = xp.arange(steps, dtype=np.float64)
        half = steps // 2  # PyTorch fills the first half from start and the second from end
        out = xp.where(i < half, start + step * i, end - step * (steps - 1 - i))
        if not dtype.is_floating_point and dtype.np.kind in "iu":
            out = xp.trunc(out)
        return out.astype(dtype.np)

    def _eye(n, m, dtype):
        return xp.eye(n, m, dtype=dtype.np)

    def _negative_zero(v) -> bool:
        try:
            return math.copysign(1.0, v) < 0
        except TypeError:  # complex
            return False

    return {"full": _full, "empty": _empty, "arange": _arange, "linspace": _linspace, "eye": _eye}
