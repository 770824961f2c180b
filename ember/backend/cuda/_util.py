"""Helpers shared by the CUDA backend's op modules."""

from __future__ import annotations

import numpy as np

try:
    from ml_dtypes import bfloat16 as _bf16
    LOW = (np.dtype(np.float16), np.dtype(_bf16))
except ImportError:  # pragma: no cover
    LOW = (np.dtype(np.float16),)


def axis(dim):
    """Protocol dims (tuple, or None for all) to an array-module axis argument."""
    return None if dim is None else tuple(dim)


def acc_dtype(dtype):
    """The accumulation dtype for an ember result dtype: float32 for half precision."""
    return np.dtype(np.float32) if dtype.np in LOW else dtype.np
