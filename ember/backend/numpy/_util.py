"""Helpers shared by the numpy backend's op modules."""

from __future__ import annotations

import numpy as np

try:
    from ml_dtypes import bfloat16 as _bf16
    LOW_PRECISION = (np.dtype(np.float16), np.dtype(_bf16))
except ImportError:  # pragma: no cover
    LOW_PRECISION = (np.dtype(np.float16),)


def np_dtype(d):
    """numpy dtype of an ember dtype attribute (None passes through)."""
    return None if d is None else d.np


def upcast(fn):
    """Run ``fn`` in float32 for float16/bfloat16 inputs and round the result back, as PyTorch's
    CPU kernels do; numpy's own half-precision loops accumulate in half precision."""

    def wrapper(x, *args, **kw):
        dt = x.dtype
        if dt in LOW_PRECISION:
            r = fn(x.astype(np.float32), *args, **kw)
            return r.astype(dt) if r.dtype == np.float32 else r
        return fn(x, *args, **kw)

    wrapper.__name__ = getattr(fn, "__name__", "op")
    return wrapper


def axis(dim):
    """Protocol dims (tuple, or None for all) to a numpy axis argument."""
    return None if dim is None else tuple(dim)
