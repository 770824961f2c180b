"""CpuC's normalisation ops: ``norm_affine`` and ``norm_affine_backward`` in C for the two layouts
that matter, per-channel statistics (batch norm: every dim but dim 1) and per-row statistics (layer
norm: trailing dims), float32/float64 and contiguous; other layouts and dtypes run the numpy
backend's code. The layout tests are the numpy backend's, so both backends take the same inputs
the same way.
"""

from __future__ import annotations

import numpy as np

from ..numpy import nn as npn
from ._lib import call, fbits, par, ptr, suffix


def _vec(v, dt):
    return None if v is None else np.ascontiguousarray(v, dtype=dt)


def _same(dt, *arrays) -> bool:
    return all(a is None or a.dtype == dt for a in arrays)


def _norm_affine(x, weight, bias, dim, eps):
    axes = tuple(dim)
    s = suffix(x.dtype)
    if s is None or x.size == 0 or not _same(x.dtype, weight, bias):
        return npn._norm_affine(x, weight, bias, dim, eps)
    stat_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    chan = npn._channel_layout(x, axes, weight, bias)
    if chan is not None:
        N, C, L, (w, b) = chan
        w, b = _vec(w, x.dtype), _vec(b, x.dtype)
        y = np.empty(x.shape, x.dtype)
        mean, var = np.empty(C, x.dtype), np.empty(C, x.dtype)
        call("bn_fwd_" + s, ptr(x), ptr(w), ptr(b), ptr(y), ptr(mean), ptr(var), N, C, L, fbits(eps),
             par(x.size) if C > 1 else 0)
        return y, mean.reshape(stat_shape), var.reshape(stat_shape)
    rows = npn._trailing_rows(x, axes, weight, bias)
    if rows is not None:
        R, D, (w, b) = rows
        w, b = _vec(w, x.dtype), _vec(b, x.dtype)
        y = np.empty(x.shape, x.dtype)
        mean, var = np.empty(R, x.dtype), np.empty(R, x.dtype)
        call("ln_fwd_" + s, ptr(x), ptr(w), ptr(b), ptr(y), ptr(mean), ptr(var), R, D, fbits(eps),
             par(x.size) if R > 1 else 0)
        return y, mean.reshape(stat_shape), var.reshape(stat_shape)
    return npn._norm_affine(x, weight, bias, dim, eps)


def _norm_affine_backward(x, weight, grad, dim, eps, bias_shape):
    axes = tuple(dim)
    d = x.dtype
    s = suffix(d)
    if s is None or x.size == 0 or grad.dtype != d or not _same(d, weight) or not grad.flags.c_contiguous:
        return npn._norm_affine_backward(x, weight, grad, dim, eps, bias_shape)
    chan = npn._channel_layout(x, axes, weight)
    if chan is not None:
        N, C, L, (w,) = chan
        w = _vec(w, d)
        gx = np.empty(x.shape, d)
        dot, gsum, rstd = np.empty(C), np.empty(C), np.empty(C)
        call("bn_bwd_" + s, ptr(x), ptr(w), ptr(grad), ptr(gx), ptr(dot), ptr(gsum), ptr(rstd), N, C, L,
             fbits(eps), par(x.size) if C > 1 else 0)
        gw = None if weight is None else (dot * rstd).reshape(weight.shape).astype(weight.dtype)
        gb = None if bias_shape is None else gsum.reshape(bias_shape).astype(d)
        return gx, gw, gb
    rows = npn._trailing_rows(x, axes, weight)
    if rows is not None:
        R, D, (w,) = rows
        w = _vec(w, d)
        gx = np.empty(x.shape, d)
        xhat = np.empty(x.shape, d)
        call("ln_bwd_" + s, ptr(x), ptr(w), ptr(grad), ptr(gx), ptr(xhat), R, D, fbits(eps),
             par(x.size) if R > 1 else 0)
        gw = gb = None
        if weight is not None or bias_shape is not None:
            su, suv = np.empty(D), np.empty(D)
            call("col_sums_" + s, ptr(grad), ptr(xhat if weight is not None else None), ptr(su), ptr(suv), R, D,
                 par(x.size) if D > 256 else 0)
            tail = x.shape[x.ndim - len(axes):]
            if weight is not None:
                gw = npn._sum_to(suv.reshape(tail), weight.shape).astype(weight.dtype)
            if bias_shape is not None:
                gb = npn._sum_to(su.reshape(tail), bias_shape).astype(d)
        return gx, gw, gb
    return npn._norm_affine_backward(x, weight, grad, dim, eps, bias_shape)


OPS = {"norm_affine": _norm_affine, "norm_affine_backward": _norm_affine_backward}
