"""CpuC's softmax, log_softmax, sum/mean/amax/amin/var and cumsum in C.

Softmax runs over contiguous rows (the softmax dim last); cumsum along any dim of a contiguous
input; reductions over any set of dims that are adjacent in a contiguous input (the input viewed
as (A, R, B), reduced over R: trailing dims, leading dims such as a bias gradient's batch sum, or
a middle block). Other cases, other dtypes and small inputs run the numpy backend's code.
"""

from __future__ import annotations

import math

import numpy as np

from ..numpy import composite as npcomp
from ..numpy import reduce as npr
from ._lib import STREAM_MIN, call, fbits, par, ptr, suffix

# Below these sizes the numpy backend's code runs: a ctypes call costs 3-6 us, which a softmax
# (several numpy passes and temporaries) earns back from about 4K elements and a single-pass
# reduction (numpy's is vectorised too) only where threads start, measured on the 2-core machine.
SMALL = 4096
SMALL_REDUCE = 1 << 15
_OPS = {"sum": 0, "mean": 0, "amax": 1, "amin": 2, "var": 3}


def _rows_fn(log: int, fallback):
    def run(x, dim):
        s = suffix(x.dtype)
        if s is None or x.ndim == 0 or dim != x.ndim - 1 or x.size < max(SMALL, 1) or not x.flags.c_contiguous:
            return fallback(x, dim)
        D = x.shape[-1]
        y = np.empty(x.shape, x.dtype)
        call("softmax_" + s, ptr(x), ptr(y), x.size // D, D, log, par(4 * x.size))
        return y
    run.__name__ = fallback.__name__
    return run


def _adjacent(x, dim):
    """(A, R, B) when the reduced dims are one block of adjacent dims of a contiguous x, else None."""
    if dim is None:
        return 1, x.size, 1
    dims = sorted(dim)
    if not dims or dims != list(range(dims[0], dims[-1] + 1)):
        return None
    sh = x.shape
    return math.prod(sh[:dims[0]]), math.prod(sh[dims[0]:dims[-1] + 1]), math.prod(sh[dims[-1] + 1:])


def _out_shape(x, dim, keepdim):
    dims = range(x.ndim) if dim is None else dim
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    return tuple(n for i, n in enumerate(x.shape) if i not in dims)


def _reduce_fn(name: str, fallback):
    op = _OPS[name]

    def run(x, dim, keepdim=False, dtype=None, correction=None, _fb=fallback):
        s = suffix(x.dtype)
        if name == "var":
            args = (x, dim, correction, keepdim)
        else:
            args = (x, dim, keepdim) if name in ("amax", "amin") else (x, dim, keepdim, dtype)
        if s is None or x.size < max(SMALL_REDUCE, 1) or not x.flags.c_contiguous or \
                (dtype is not None and dtype.np != x.dtype):
            return _fb(*args)
        arb = _adjacent(x, dim)
        if arb is None:
            return _fb(*args)
        A, R, B = arb
        out = np.empty(_out_shape(x, dim, keepdim), x.dtype)
        scale = 1.0 / R if name == "mean" else 1.0
        div = max(0.0, R - correction) if name == "var" else 1.0   # PyTorch's: inf or NaN when R <= correction
        call("reduce_" + s, ptr(x), ptr(out), A, R, B, op, fbits(scale), par(x.size, STREAM_MIN) if A * B > 1 else 0,
             fbits(div))
        return out
    run.__name__ = name
    return run


def _var(x, dim, correction, keepdim):
    return _VAR(x, dim, keepdim, correction=correction)


def _cumsum(x, dim, dtype):
    s = suffix(x.dtype)
    if s is None or dtype.np != x.dtype or x.size < max(SMALL_REDUCE, 1) or not x.flags.c_contiguous:
        return npr._cumsum(x, dim, dtype)
    sh = x.shape
    A, R, B = math.prod(sh[:dim]), sh[dim], math.prod(sh[dim + 1:])
    out = np.empty(sh, x.dtype)
    call("cumsum_" + s, ptr(x), ptr(out), A, R, B, par(x.size) if A * B > 1 else 0)
    return out


_VAR = _reduce_fn("var", npr._var)

OPS = {
    "softmax": _rows_fn(0, npcomp._softmax),
    "log_softmax": _rows_fn(1, npcomp._log_softmax),
    "sum": _reduce_fn("sum", npr._sum),
    "mean": _reduce_fn("mean", npr._mean),
    "amax": _reduce_fn("amax", npr._amax),
    "amin": _reduce_fn("amin", npr._amin),
    "var": _var,
    "cumsum": _cumsum,
}
