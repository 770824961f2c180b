"""Reductions and scans of the CUDA backend, written against an array module ``xp``.

Half-precision inputs accumulate in float32 and round once (as the numpy reference and PyTorch do).
CuPy's ufuncs have no ``accumulate`` beyond add and multiply, so cummax, cummin and logcumsumexp run as
log-step (Hillis-Steele) scans: ceil(log2(n)) elementwise passes over the whole tensor, which keep a
GPU busy where a sequential scan along one dim would not. :func:`scan` and :func:`segmented_scan`
are shared with the scatter reductions (indexing.py).
"""

from __future__ import annotations

import numpy as np

from .. import capture
from . import cublas
from ._util import LOW, acc_dtype, axis


def scan(xp, ufunc, a, axis: int):
    """Inclusive scan of ``a`` along ``axis`` with an associative ``ufunc`` (maximum, minimum, logaddexp,
    add, ...): after pass k element i combines elements (i - 2**k, i]. The earlier operand is always
    the left one, so ties resolve as in a sequential ``ufunc.accumulate``.

    >>> scan(np, np.maximum, np.array([1, 3, 2, 5]), 0)
    array([1, 3, 3, 5])
    """
    v = xp.moveaxis(a, axis, -1).copy()  # a fresh array: each pass writes into it
    n = v.shape[-1]
    step = 1
    while step < n:
        v[..., step:] = ufunc(v[..., :-step], v[..., step:])  # the right side is computed before the write
        step *= 2
    return xp.moveaxis(v, -1, axis)


def segmented_scan(xp, ufunc, v, seg):
    """Inclusive scan of the 1-d ``v`` restarting wherever the sorted segment ids ``seg`` change: each
    element combines the elements of its own segment up to itself (segments are contiguous, so the
    partner ``step`` places back holds only its segment's elements when it is in the same segment).

    >>> segmented_scan(np, np.add, np.array([1, 2, 3, 4]), np.array([0, 0, 1, 1]))
    array([1, 3, 3, 7])
    """
    v = v.copy()
    n = v.shape[0]
    step = 1
    while step < n:
        same = seg[step:] == seg[:-step]
        v[step:] = xp.where(same, ufunc(v[:-step], v[step:]), v[step:])
        step *= 2
    return v


def build(xp) -> dict:
    def _acc(x):
        return x.astype(np.float32) if x.dtype in LOW else x

    def _red(fn):
        def run(x, dim, keepdim, dtype):
            out = fn(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype))
            return out.astype(dtype.np, copy=False)
        return run

    gpu = xp is not np
    _plain_sum = _red(xp.sum)

    def _sum(x, dim, keepdim, dtype):
        """Sums over the leading dims of a contiguous float tensor with many rows (bias gradients) as one
        cuBLAS GEMM (cublas.row_sum); everything else through CuPy."""
        if gpu and dim and x.size >= (1 << 16) and x.flags.c_contiguous:
            k = len(dim)
            if 0 < k < x.ndim and tuple(dim) == tuple(range(k)) and x.dtype.kind in "fV":
                rows = int(np.prod(x.shape[:k]))
                if rows >= 64:
                    r = cublas.row_sum(x.reshape(rows, -1), acc_dtype(dtype), capture._depth[0] > 0)
                    if r is not None:
                        r = r.astype(dtype.np, copy=False)
                        return r.reshape(((1,) * k if keepdim else ()) + x.shape[k:])
        return _plain_sum(x, dim, keepdim, dtype)

    def _mean(x, dim, keepdim, dtype):
        a = _acc(x)
        if a.size == 0 or (dim is not None and any(x.shape[d] == 0 for d in dim)):
            s = xp.sum(a, axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype))
            return (s * np.nan).astype(dtype.np)  # 0/0, as PyTorch gives for an empty mean
        return xp.mean(a, axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype)).astype(dtype.np, copy=False)

    def _ext(fn):
        def run(x, dim, keepdim):
            return fn(x, axis=axis(dim), keepdims=keepdim)
        return run

    def _nan_arg(fn, x, ax, keepdims):
        """The first NaN of a row wins, as in PyTorch; rows without NaN take the first extreme."""
        r = fn(x, axis=ax, keepdims=keepdims)
        if x.dtype.kind == "f" or x.dtype in LOW:
            nan = xp.isnan(x)
            r = xp.where(xp.any(nan, axis=ax, keepdims=keepdims), xp.argmax(nan, axis=ax, keepdims=keepdims), r)
        return r

    def _arg(fn):
        def run(x, dim, keepdim):
            if dim is None:
                r = _nan_arg(fn, x.reshape(-1), None, False)
                return r.astype(np.int64).reshape((1,) * x.ndim if keepdim else ())
            return _nan_arg(fn, x, dim, keepdim).astype(np.int64, copy=False)
        return run

    def _var(x, dim, correction, keepdim):
        a = _acc(x)
        n = a.size if dim is None else int(np.prod([x.shape[d] for d in dim]))
        centred = a - xp.mean(a, axis=axis(dim), keepdims=True)
        ss = xp.sum(centred * centred, axis=axis(dim), keepdims=keepdim)
        # PyTorch divides by max(0, n - correction): inf (or NaN for 0/0) when n <= correction
        return (ss / float(max(0.0, n - correction))).astype(x.dtype, copy=False)

    def _scan(fn):
        def run(x, dim, dtype):
            return fn(_acc(x), axis=dim, dtype=acc_dtype(dtype)).astype(dtype.np, copy=False)
        return run

    def _extreme_dim(argname):
        argf = _arg(getattr(xp, argname))

        def run(x, dim, keepdim):
            idx = argf(x, dim, True)
            values = xp.take_along_axis(x, idx, axis=dim)
            if not keepdim:
                values, idx = values.squeeze(dim), idx.squeeze(dim)
            return values, idx
        return run

    def _even_select(x, v, dim, keepdim):
        return v.copy()

    def _cum_extreme(ufunc):
        def run(x, dim):
            if x.size == 0:
                return x.copy(), xp.zeros(x.shape, np.int64)
            values = scan(xp, ufunc, x, dim)  # max/min propagate NaN, so a NaN takes over and sticks
            shape = [1] * x.ndim
            shape[dim] = x.shape[dim]
            pos = xp.arange(x.shape[dim], dtype=np.int64).reshape(shape)
            # the latest position holding the running extreme (the reference's rule, PyTorch's result)
            hit = x == values
            if x.dtype.kind == "f" or x.dtype in LOW:
                hit |= xp.isnan(x)
            return values, scan(xp, xp.maximum, xp.where(hit, pos, 0), dim)
        return run

    def _logcumsumexp(x, dim):
        # logaddexp pairs are stable (max + log1p(exp(-|a - b|))); half types work in float32
        return scan(xp, xp.logaddexp, _acc(x), dim).astype(x.dtype, copy=False)

    return {
        "sum": _sum, "nansum": _red(xp.nansum), "prod": _red(xp.prod), "mean": _mean,
        "amax": _ext(xp.max), "amin": _ext(xp.min), "all": _ext(xp.all), "any": _ext(xp.any),
        "argmax": _arg(xp.argmax), "argmin": _arg(xp.argmin), "var": _var,
        "cumsum": _scan(xp.cumsum), "cumprod": _scan(xp.cumprod), "even_select": _even_select,
        "max_dim": _extreme_dim("argmax"), "min_dim": _extreme_dim("argmin"),
        "cummax": _cum_extreme(xp.maximum), "cummin": _cum_extreme(xp.minimum), "logcumsumexp": _logcumsumexp,
    }
