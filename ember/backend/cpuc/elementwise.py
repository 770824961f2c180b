"""CpuC's elementwise ops in C: relu, where (the select of a gradient mask), clamp with scalar bounds,
and comparisons with a scalar, for float32/float64 operands that are contiguous and of the result's
shape (scalars broadcast). Broadcasting, other dtypes and inputs under ``SMALL`` elements run the
numpy backend's code. Large inputs are split over OpenMP threads: this is where they beat numpy,
which runs one ufunc on one core.
"""

from __future__ import annotations

import numpy as np

from ..numpy import elementwise as npe
from ..numpy import nn as npn
from ._lib import STREAM_MIN, call, fbits, par, ptr, suffix

SMALL = 1 << 15  # measured: below this a ctypes call (3-6 us) costs more than numpy's loop saves
_CMP = {"lt": 0, "le": 1, "gt": 2, "ge": 3, "eq": 4, "ne": 5}


def _dense(a, shape, dt) -> bool:
    return isinstance(a, np.ndarray) and a.shape == shape and a.dtype == dt and a.flags.c_contiguous


def _scalar(v) -> bool:
    return isinstance(v, float | int) and not isinstance(v, bool)


def _relu(x):
    s = suffix(x.dtype)
    if s is None or x.size < SMALL or not x.flags.c_contiguous:
        return npn.OPS["relu"](x)
    y = np.empty(x.shape, x.dtype)
    call("relu_" + s, ptr(x), ptr(y), x.size, par(x.size, STREAM_MIN))
    return y


def _where(cond, x, y):
    ref = x if isinstance(x, np.ndarray) else y
    if not isinstance(ref, np.ndarray) or not isinstance(cond, np.ndarray) or cond.dtype != np.bool_ \
            or cond.size < SMALL or not cond.flags.c_contiguous:
        return npe._where(cond, x, y)
    shape, dt = cond.shape, ref.dtype
    s = suffix(dt)
    xa, ya = isinstance(x, np.ndarray), isinstance(y, np.ndarray)
    if s is None or (xa and not _dense(x, shape, dt)) or (ya and not _dense(y, shape, dt)) \
            or (not xa and not _scalar(x)) or (not ya and not _scalar(y)):
        return npe._where(cond, x, y)
    out = np.empty(shape, dt)
    call("where_" + s, ptr(cond), ptr(x) if xa else 0, ptr(y) if ya else 0, ptr(out), cond.size,
         0 if xa else fbits(float(x)), 0 if ya else fbits(float(y)), par(cond.size, STREAM_MIN))
    return out


def _clamp(x, lo, hi):
    s = suffix(x.dtype)
    if s is None or x.size < SMALL or not x.flags.c_contiguous or not all(v is None or _scalar(v) for v in (lo, hi)):
        return npe._clamp(x, lo, hi)
    out = np.empty(x.shape, x.dtype)
    call("clamp_" + s, ptr(x), ptr(out), x.size, lo is not None, hi is not None,
         fbits(0.0 if lo is None else float(lo)), fbits(0.0 if hi is None else float(hi)), par(x.size, STREAM_MIN))
    return out


def _cmp_fn(name: str):
    fallback = npe.OPS[name]
    code = _CMP[name]

    def run(x, y):
        if not isinstance(x, np.ndarray) or not _scalar(y) or x.size < SMALL or not x.flags.c_contiguous:
            return fallback(x, y)
        s = suffix(x.dtype)
        if s is None:
            return fallback(x, y)
        out = np.empty(x.shape, np.bool_)
        call("cmp_" + s, ptr(x), ptr(out), x.size, code, fbits(float(y)), par(x.size, STREAM_MIN))
        return out
    run.__name__ = name
    return run


OPS = {"relu": _relu, "where": _where, "clamp": _clamp, **{n: _cmp_fn(n) for n in _CMP}}
