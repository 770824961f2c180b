"""Dropout as one op: ``dropout(x) p, seed, offset -> (x * mask, mask)`` with ``mask = keep * (1 / (1 - p))``
in x's dtype, where ``keep = u >= p`` for the uniforms ``rand`` draws at ``(seed, offset)`` over x's shape
(float32 ones, float64 for float64 x). These are the numbers ``nn.functional.dropout``'s composition
(``x * ((rand(x.shape) >= p).to(x.dtype) * (1 / (1 - p)))``) computes at the same generator state, so a
backend with the op (one pass on the GPU) and one without train identically. The gradient is
``grad * mask`` (autodiff's rule), which needs no random numbers.

The functions are written against an array module ``xp``: the numpy backend runs them, the CUDA backend
for the dtypes and cases its kernel doesn't take.

>>> y, m = dropout(np.ones(4, np.float32), 0.5, 0, 0)
>>> sorted(set(m.tolist())) == sorted(set(y.tolist())) and set(m.tolist()) <= {0.0, 2.0}
True
"""

from __future__ import annotations

import numpy as np

from .random import _uniform

__all__ = ["dropout", "dropped_of", "keep_scale"]


def keep_scale(dtype, p: float) -> float:
    """1 / (1 - p) rounded to ``dtype``, as dropout multiplies by it (``keep * (1 / (1 - p))`` in x's dtype)."""
    return float(np.dtype(dtype).type(1.0 / (1.0 - p)))


def dropped_of(xp, x, p: float, uniform):
    """(x * mask, mask) for ``0 < p < 1``; ``uniform(n, npdtype)`` gives the n uniforms of the op's stream."""
    dtype = x.dtype
    u = uniform(x.size, np.float64 if dtype == np.float64 else np.float32).reshape(x.shape)
    mask = xp.where(u >= p, dtype.type(keep_scale(dtype, p)), dtype.type(0))
    with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as in the composition (numpy's warning is noise)
        return (x * mask).astype(dtype, copy=False), mask


def dropout(x, p, seed, offset):
    """The numpy backend's op (see the module docstring)."""
    return dropped_of(np, np.asarray(x), float(p), lambda n, npdtype: _uniform(seed, offset, n, npdtype))


OPS = {"dropout": dropout}
