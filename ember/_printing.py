"""PyTorch-style tensor printing (a first version; see set_printoptions)."""

from __future__ import annotations

import numpy as np

from . import _dtype as dt


def tensor_repr(t) -> str:
    arr = np.asarray(t.numpy(force=True))
    if t.dtype is dt.bfloat16 or t.dtype is dt.float16:
        arr = arr.astype(np.float32)
    body = np.array2string(arr, separator=", ", prefix="tensor(")
    extras = []
    if t.dtype not in (dt.get_default_dtype(), dt.int64, dt.bool):
        extras.append(f"dtype={t.dtype!r}")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
