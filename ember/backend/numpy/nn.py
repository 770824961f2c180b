"""The numpy backend's nn ops: fused activations, normalisations, resampling and attention, and
the first-order backward kernels of norms and attention.

Each op here is optional in the protocol sense: the frontend (``ember/nn``) and the gradient rules
have decompositions into primitives for backends without it. The numpy versions exist because a
few in-place passes beat a chain of separately dispatched ops, because large inputs are split over
a small thread pool (numpy itself uses one core), and because they are written to be stable
(attention never materialises more than a block of scores, norms accumulate in float32 for the
16-bit floats).

Semantics follow PyTorch's CPU kernels, including NaN propagation and which side of a threshold
the boundary value falls on.
"""

from __future__ import annotations

import math
import os

import numpy as np

from . import special
from ._util import LOW_PRECISION

# ---- threads ------------------------------------------------------------------------------------------
# numpy runs one ufunc on one core but releases the GIL inside it, so big inputs are cut into
# chunks that a small thread pool processes in parallel. The chunk size balances cache reuse (the
# passes over a chunk hit L2) against the Python steps between ufunc calls, which hold the GIL and
# serialise the threads when chunks are small: 256K elements measured best for layer_norm and silu
# on 2 cores (16K-64K ones were up to 2x slower). Small inputs stay on the caller's thread.
_CHUNK = 1 << 18        # at most this many elements per task
_PARALLEL_MIN = 1 << 18  # inputs smaller than this run inline
_pool = None
_pool_pid = None
_nthreads = 1


def _threads():
    """The shared thread pool, or None on a single core. A forked child (a DataLoader worker) gets
    a pool of its own: the parent's threads do not exist there."""
    global _pool, _nthreads, _pool_pid
    if _pool is None or _pool_pid != os.getpid():
        _pool_pid = os.getpid()
        try:  # the cores this process may run on (taskset, cgroups), not the machine's
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            n = os.cpu_count() or 1
        n = _nthreads = min(n, 8)
        if n == 1:
            _pool = False
        else:
            from concurrent.futures import ThreadPoolExecutor
            _pool = ThreadPoolExecutor(n, thread_name_prefix="ember-nn")
    return _pool or None


def _spans(n: int, unit: int) -> list:
    """Split range(n) of ``unit``-element items into (start, stop) spans: one per thread at least,
    none over _CHUNK elements (unless one item is)."""
    total = n * max(unit, 1)
    parts = max(_nthreads if _threads() is not None else 1, -(-total // _CHUNK))
    step = max(1, -(-n // parts))
    return [(a, min(n, a + step)) for a in range(0, n, step)]


def _run_all(tasks) -> None:
    """Run the zero-argument callables, on the pool when there is one and more than one task."""
    pool = _threads() if len(tasks) > 1 else None
    if pool is None:
        for t in tasks:
            t()
        return
    for f in [pool.submit(t) for t in tasks]:
        f.result()


# ---- activations ----------------------------------------------------------------------------------
_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _act(fn):
    """An activation kernel ``fn(x, **attrs)``, made to: run 16-bit floats in float32 (rounding once,
    as PyTorch's CPU kernels), run 0-d inputs as 1-element arrays (numpy turns 0-d arithmetic
    results into scalars, which the in-place steps can't write), and split large contiguous inputs
    into chunks processed on the thread pool."""
    def one(x, attrs):
        r = fn(x.astype(np.float32) if x.dtype in LOW_PRECISION else x, **attrs)
        return r.astype(x.dtype, copy=False)

    def run(x, **attrs):
        if x.ndim == 0:
            return one(x.reshape(1), attrs).reshape(())
        if x.size < _PARALLEL_MIN or not x.flags.c_contiguous or _threads() is None:
            return one(x, attrs)
        out = np.empty_like(x)
        xf, of = x.reshape(-1), out.reshape(-1)

        def task(a, b):
            def go():
                of[a:b] = one(xf[a:b], attrs)
            return go
        _run_all([task(a, b) for a, b in _spans(x.size, 1)])
        return out
    run.__name__ = fn.__name__
    return run


def _c(v, x):
    """A Python float as a scalar of x's dtype (PyTorch converts coefficients to the compute type)."""
    return x.dtype.type(v)


def _relu(x):
    return np.maximum(x, x.dtype.type(0), out=...)


def _relu_(x):
    np.maximum(x, x.dtype.type(0), out=x)
    return x


def _leaky_relu(x, negative_slope):
    y = x * _c(negative_slope, x)
    if 0.0 <= negative_slope <= 1.0:  # then the larger of x and slope * x is the result (NaN propagates)
        return np.maximum(x, y, out=y)
    return np.asarray(np.where(x > 0, x, y))


def _hardtanh(x, min_val, max_val):
    # clamp semantics: NaN propagates, the max wins when min_val > max_val
    lo, hi = x.dtype.type(min_val), x.dtype.type(max_val)
    return np.minimum(np.maximum(x, lo), hi, out=...)


def _hardtanh_(x, min_val, max_val):
    lo, hi = x.dtype.type(min_val), x.dtype.type(max_val)
    np.maximum(x, lo, out=x)
    np.minimum(x, hi, out=x)
    return x


def _elu(x, alpha, scale, input_scale):
    # alpha * scale * expm1(min(x, 0) * input_scale) is 0 for x > 0, and max(x, 0) * scale is 0 for
    # x <= 0: their sum is the result without a select (NaN propagates through both)
    neg = np.minimum(x, 0)
    if input_scale != 1.0:
        neg *= _c(input_scale, x)
    np.expm1(neg, out=neg)
    neg *= _c(alpha, x) * _c(scale, x)
    pos = np.maximum(x, 0)
    if scale != 1.0:
        pos *= _c(scale, x)
    neg += pos
    return neg


# erfc(z) = t·exp(P(t) - z²) with t = 2/(2 + z), z >= 0: P a degree-9 least-squares fit (made for
# ember against scipy's erfcx on [0, 10]; |log error| < 5e-8). Only float32 uses it: twelve
# vectorised passes instead of scipy's scalar erf (2.5x faster), and Φ(x) = erfc(-x/√2)/2 keeps
# its relative accuracy in the lower tail, where 1 + erf(x/√2) cancels.
_ERFC_P = np.array([-1.2654414498658104, 0.9984931412714968, 0.3878909788480558, 0.02841518476121619,
                    0.01997770699838276, -0.11628856292628649, -0.6519561815768269, 1.1230094666624877,
                    -0.6663535442250581, 0.14225330595248503], dtype=np.float32)


def _gelu_f32(x):
    """x·Φ(x) for float32 x, without a select (np.where with a data-dependent mask costs more than
    the whole polynomial): with p = Φ(-|x|), x·Φ(x) = min(x, 0)·p + max(x, 0)·(1 - p) for either
    sign (and +inf stays inf)."""
    z = np.abs(x)
    z *= np.float32(_SQRT1_2)
    t = z + np.float32(2)
    np.divide(np.float32(2), t, out=t)
    p = np.full_like(x, _ERFC_P[-1])
    for c in _ERFC_P[-2::-1]:
        p *= t
        p += c
    z *= z
    p -= z
    np.exp(p, out=p)
    p *= t
    p *= np.float32(0.5)  # Φ(-|x|) = erfc(|x|/√2)/2
    q = np.subtract(np.float32(1), p)
    q *= np.maximum(x, np.float32(0))
    p *= np.minimum(x, np.float32(0))
    p += q
    return p


def _gelu(x, approximate):
    if approximate == "tanh":
        inner = x * x
        inner *= _c(_GELU_KAPPA, x)
        inner *= x
        inner += x
        inner *= _c(_GELU_BETA, x)
        np.tanh(inner, out=inner)
        inner += 1
        inner *= x
        inner *= _c(0.5, x)
        return inner
    if x.dtype == np.float32:
        return _gelu_f32(x)
    inner = special.erf(x * _c(_SQRT1_2, x))
    inner += 1
    inner *= x
    inner *= _c(0.5, x)
    return np.asarray(inner)


def _silu(x):
    d = np.exp(-x)
    d += 1
    return np.divide(x, d, out=d)


def _mish(x):
    t = np.exp(x)
    np.log1p(t, out=t)
    np.tanh(t, out=t)
    return np.multiply(x, t, out=t)


def _softplus(x, beta, threshold):
    xb = x * _c(beta, x)
    soft = np.log1p(np.exp(xb))
    soft /= _c(beta, x)
    return np.asarray(np.where(xb > _c(threshold, x), x, soft))


def _hardsigmoid(x):
    y = x + _c(3.0, x)
    np.maximum(y, 0, out=y)
    np.minimum(y, _c(6.0, x), out=y)
    y /= _c(6.0, x)
    return y


def _hardswish(x):
    y = x + _c(3.0, x)
    np.maximum(y, 0, out=y)
    np.minimum(y, _c(6.0, x), out=y)
    y *= x
    y /= _c(6.0, x)
    return y


def _logsigmoid(x):
    # min(x, 0) - log1p(exp(-|x|)): no overflow for either sign
    t = np.exp(-np.abs(x))
    np.log1p(t, out=t)
    return np.subtract(np.minimum(x, 0), t, out=t)


# ---- normalisation --------------------------------------------------------------------------------
def _work(x):
    return x.astype(np.float32) if x.dtype in LOW_PRECISION else x


def _trailing_rows(x, dims, *params):
    """(rows, width, params as width-vectors) when ``dims`` are x's trailing dims, x is C-contiguous
    and every param (or None) varies along those dims only: then the op is row-wise on
    x.reshape(rows, width). None otherwise."""
    k = len(dims)
    if k == 0 or tuple(dims) != tuple(range(x.ndim - k, x.ndim)) or not x.flags.c_contiguous:
        return None
    tail = x.shape[x.ndim - k:]
    vecs = []
    for p in params:
        if p is None:
            vecs.append(None)
            continue
        lead = p.shape[:max(p.ndim - k, 0)]
        if any(n != 1 for n in lead):
            return None
        vecs.append(np.ascontiguousarray(np.broadcast_to(p.reshape(p.shape[len(lead):]), tail)).reshape(-1))
    width = math.prod(tail)
    return (x.size // width if width else 0), width, vecs


def _channel_layout(x, dims, *params):
    """(N, C, L, params as C-vectors) when the statistics are per channel (every dim but dim 1, as
    in batch norm), x is C-contiguous and each param (or None) varies along dim 1 only: then the op
    works on x.reshape(N, C, L) with sums along the contiguous L first. None otherwise."""
    if x.ndim < 2 or tuple(dims) != (0,) + tuple(range(2, x.ndim)) or not x.flags.c_contiguous:
        return None
    C = x.shape[1]
    vecs = []
    for p in params:
        if p is None:
            vecs.append(None)
            continue
        full = (1,) * (x.ndim - p.ndim) + p.shape
        if p.ndim > x.ndim or any(n != 1 for i, n in enumerate(full) if i != 1):
            return None
        vecs.append(np.broadcast_to(p.reshape(-1), (C,)))
    return x.shape[0], C, math.prod(x.shape[2:]), vecs


def _channel_sum(a3):
    """Per-channel sums of an (N, C, L) array: pairwise along L (numpy's accurate sum), then the N
    row sums in float64."""
    return a3.sum(axis=2).sum(axis=0, dtype=np.float64)


def _channel_dot(a3, b3):
    """Per-channel sums of a3 * b3 without the product temporary: each (n, c) row's dot product
    (einsum, 3x faster than multiply-then-sum here), then the N row sums in float64."""
    return np.einsum("ncl,ncl->nc", a3, b3).sum(axis=0, dtype=np.float64)


def _channel_stats(x3, eps):
    """(centred x, mean, biased var, 1/sqrt(var + eps)) per channel of an (N, C, L) array."""
    dt = x3.dtype.type
    n = x3.shape[0] * x3.shape[2]
    mean = _channel_sum(x3) / n
    xc = x3 - mean.astype(x3.dtype)[:, None]
    var = _channel_dot(xc, xc) / n
    rstd = 1 / np.sqrt(var + eps)
    return xc, dt(mean), dt(var), dt(rstd)

def _row_blocks(rows: int, width: int):
    return _spans(rows, width) if rows * width >= _PARALLEL_MIN else [(0, rows)]


def _norm_rows(x2, w, b, eps, y2, mean, var):
    """Layer norm of the rows of the 2-d x2, written into y2 (and the row statistics): six passes,
    the centred values computed straight into the output."""
    xw = _work(x2)
    m = np.mean(xw, axis=1, keepdims=True)
    xc = np.subtract(xw, m, out=y2) if y2.dtype == xw.dtype else xw - m
    v = np.einsum("ij,ij->i", xc, xc)[:, None] / xw.dtype.type(x2.shape[1])  # no squared temporary
    r = v + xw.dtype.type(eps)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    xc *= r
    if w is not None:
        xc *= w
    if b is not None:
        xc += b
    if xc is not y2:
        y2[...] = xc
    mean[...] = m
    var[...] = v


def _norm_affine(x, weight, bias, dim, eps):
    """(y, mean, var): y = (x - mean) / sqrt(var + eps) * weight + bias with the mean and biased
    variance over ``dim`` (kept as size-1 dims); weight/bias broadcast against x."""
    axes = tuple(dim)
    d = x.dtype
    stat_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    if x.size == 0:
        nan = np.full(stat_shape, np.nan, dtype=d)
        return np.empty(x.shape, dtype=d), nan, nan.copy()
    rowwise = _trailing_rows(x, axes, weight, bias)
    if rowwise is not None:  # layer norm (and group/instance norm without affine): cache-sized row blocks
        rows, width, (w, b) = rowwise
        w = None if w is None else _work(w)
        b = None if b is None else _work(b)
        x2 = x.reshape(rows, width)
        y = np.empty(x.shape, dtype=d)
        y2 = y.reshape(rows, width)
        mean, var = np.empty((rows, 1), dtype=d), np.empty((rows, 1), dtype=d)
        _run_all([lambda r0=r0, r1=r1: _norm_rows(x2[r0:r1], w, b, eps, y2[r0:r1], mean[r0:r1], var[r0:r1])
                  for r0, r1 in _row_blocks(rows, width)])
        return y, mean.reshape(stat_shape), var.reshape(stat_shape)
    chan = _channel_layout(x, axes, weight, bias)
    if chan is not None:  # batch norm: per-channel statistics, no strided multi-axis reductions
        N, C, L, (w, b) = chan
        xc, mean, var, rstd = _channel_stats(_work(x).reshape(N, C, L), eps)
        xc *= (rstd if w is None else rstd * _work(w))[:, None]
        if b is not None:
            xc += _work(b)[:, None]
        return (xc.reshape(x.shape).astype(d, copy=False), mean.reshape(stat_shape).astype(d, copy=False),
                var.reshape(stat_shape).astype(d, copy=False))
    xw = _work(x)
    mean = np.mean(xw, axis=axes, keepdims=True)
    xc = np.subtract(xw, mean)
    sq = np.square(xc)
    var = np.mean(sq, axis=axes, keepdims=True)
    del sq
    rstd = var + xw.dtype.type(eps)
    np.sqrt(rstd, out=rstd)
    np.reciprocal(rstd, out=rstd)
    if weight is not None:  # fold the weight into the per-row factor when it is no bigger
        ww = _work(weight)
        if ww.size <= rstd.size and np.broadcast_shapes(ww.shape, rstd.shape) == rstd.shape:
            xc *= rstd * ww
        else:
            xc *= rstd
            xc *= ww
    else:
        xc *= rstd
    if bias is not None:
        xc += _work(bias)
    return xc.astype(d, copy=False), mean.astype(d, copy=False), var.astype(d, copy=False)


def _rms_rows(x2, w, eps, y2):
    xw = _work(x2)
    ms = np.einsum("ij,ij->i", xw, xw)[:, None] / xw.dtype.type(x2.shape[1])
    ms += xw.dtype.type(eps)
    np.sqrt(ms, out=ms)
    y = xw / ms
    if w is not None:
        y *= w
    y2[...] = y


def _rms_norm(x, weight, dim, eps):
    axes = tuple(dim)
    if x.size == 0:
        return np.empty(x.shape, dtype=x.dtype)
    rowwise = _trailing_rows(x, axes, weight)
    if rowwise is not None:
        rows, width, (w,) = rowwise
        w = None if w is None else _work(w)
        y = np.empty(x.shape, dtype=x.dtype)
        x2, y2 = x.reshape(rows, width), y.reshape(rows, width)
        _run_all([lambda r0=r0, r1=r1: _rms_rows(x2[r0:r1], w, eps, y2[r0:r1]) for r0, r1 in _row_blocks(rows, width)])
        return y
    xw = _work(x)
    ms = np.mean(np.square(xw), axis=axes, keepdims=True)
    ms += xw.dtype.type(eps)
    np.sqrt(ms, out=ms)
    y = np.divide(xw, ms)
    if weight is not None:
        y *= _work(weight)
    return y.astype(x.dtype, copy=False)


def _sum_to(a, shape):
    """Sum a broadcast result back to ``shape`` (the gradient of broadcasting)."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and a.shape[lead + i] != 1)
    return (np.sum(a, axis=axes, keepdims=True) if axes else a).reshape(shape)


def _norm_rows_backward(x2, w, g2, eps, gx2, sums):
    """Backward of :func:`_norm_rows` for a block of rows; adds the block's Σg·x̂ and Σg to sums."""
    xw, gw = _work(x2), _work(g2)
    width = xw.dtype.type(x2.shape[1])
    m = np.mean(xw, axis=1, keepdims=True)
    xhat = xw - m
    r = np.einsum("ij,ij->i", xhat, xhat)[:, None] / width
    r += xw.dtype.type(eps)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    xhat *= r
    gxhat = gw * w if w is not None else gw
    a = np.mean(gxhat, axis=1, keepdims=True)
    b = np.einsum("ij,ij->i", gxhat, xhat)[:, None] / width
    sums.append((np.einsum("ij,ij->j", gw, xhat), np.sum(gw, axis=0)))
    gxhat = gxhat - a if gxhat is gw else np.subtract(gxhat, a, out=gxhat)
    xhat *= b
    gxhat -= xhat
    gxhat *= r
    gx2[...] = gxhat


def _norm_affine_backward(x, weight, grad, dim, eps, bias_shape):
    """(grad_x, grad_weight?, grad_bias?) of norm_affine's y for the output gradient ``grad``; the
    statistics are recomputed. First-order only (autodiff runs the composite rule when recording)."""
    axes = tuple(dim)
    d = x.dtype
    if x.size == 0:
        return (np.zeros(x.shape, d), None if weight is None else np.zeros(weight.shape, weight.dtype),
                None if bias_shape is None else np.zeros(bias_shape, d))
    rowwise = _trailing_rows(x, axes, weight) if grad.flags.c_contiguous else None
    if rowwise is not None:
        rows, width, (w,) = rowwise
        w = None if w is None else _work(w)
        gx = np.empty(x.shape, d)
        x2, g2, gx2 = x.reshape(rows, width), grad.reshape(rows, width), gx.reshape(rows, width)
        sums = []
        _run_all([lambda r0=r0, r1=r1: _norm_rows_backward(x2[r0:r1], w, g2[r0:r1], eps, gx2[r0:r1], sums)
                  for r0, r1 in _row_blocks(rows, width)])
        tail = x.shape[x.ndim - len(axes):]
        gw = None if weight is None else _sum_to(sum(t[0] for t in sums).reshape(tail), weight.shape)
        gb = None if bias_shape is None else _sum_to(sum(t[1] for t in sums).reshape(tail), bias_shape)
        return (gx, None if gw is None else gw.astype(weight.dtype), None if gb is None else gb.astype(d))
    chan = _channel_layout(x, axes, weight) if grad.flags.c_contiguous else None
    if chan is not None:
        return _channel_norm_backward(x, weight, grad, eps, bias_shape, chan)
    xw, gw_ = _work(x), _work(grad)
    n = xw.dtype.type(math.prod(x.shape[i] for i in axes))
    m = np.mean(xw, axis=axes, keepdims=True)
    xhat = xw - m
    r = np.sum(np.square(xhat), axis=axes, keepdims=True) / n
    r += xw.dtype.type(eps)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    xhat *= r
    gxhat = gw_ * _work(weight) if weight is not None else gw_
    a = np.mean(gxhat, axis=axes, keepdims=True)
    b = np.mean(gxhat * xhat, axis=axes, keepdims=True)
    gw = None if weight is None else _sum_to(gw_ * xhat, weight.shape).astype(weight.dtype)
    gb = None if bias_shape is None else _sum_to(gw_, bias_shape).astype(d)
    gx = (gxhat - a - xhat * b) * r
    return gx.astype(d, copy=False), gw, gb


def _channel_norm_backward(x, weight, grad, eps, bias_shape, chan):
    """norm_affine_backward for per-channel statistics (batch norm) on (N, C, L) views:
    gx = w·rstd·(g - mean(g) - x̂·mean(g·x̂)), gw = Σ g·x̂, gb = Σ g, each channel's sums along L first."""
    N, C, L, (w,) = chan
    d = x.dtype
    g3 = _work(grad).reshape(N, C, L)
    xc, _, _, rstd = _channel_stats(_work(x).reshape(N, C, L), eps)
    n = N * L
    gsum = _channel_sum(g3).astype(xc.dtype)
    dot = _channel_dot(g3, xc).astype(xc.dtype)  # Σ g·(x - mean) = Σ g·x̂ / rstd
    xc *= (dot * rstd * rstd / n)[:, None]
    gx = np.subtract(g3, xc, out=xc)
    gx -= (gsum / n)[:, None]
    gx *= (rstd if w is None else rstd * _work(w))[:, None]
    gw = None if weight is None else (dot * rstd).reshape(weight.shape).astype(weight.dtype)
    gb = None if bias_shape is None else gsum.reshape(bias_shape).astype(d)
    return gx.reshape(x.shape).astype(d, copy=False), gw, gb


def _rms_rows_backward(x2, w, g2, eps, gx2, sums):
    xw, gw = _work(x2), _work(g2)
    width = xw.dtype.type(x2.shape[1])
    r = np.einsum("ij,ij->i", xw, xw)[:, None] / width
    r += xw.dtype.type(eps)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    xhat = xw * r
    gxhat = gw * w if w is not None else gw
    b = np.einsum("ij,ij->i", gxhat, xhat)[:, None] / width
    if w is not None:
        sums.append(np.einsum("ij,ij->j", gw, xhat))
    xhat *= b
    gx = np.subtract(gxhat, xhat, out=xhat)
    gx *= r
    gx2[...] = gx


def _rms_norm_backward(x, weight, grad, dim, eps):
    """(grad_x, grad_weight?) of rms_norm (statistics recomputed; first-order only)."""
    axes = tuple(dim)
    d = x.dtype
    if x.size == 0:
        return np.zeros(x.shape, d), None if weight is None else np.zeros(weight.shape, weight.dtype)
    rowwise = _trailing_rows(x, axes, weight) if grad.flags.c_contiguous else None
    if rowwise is not None:
        rows, width, (w,) = rowwise
        w = None if w is None else _work(w)
        gx = np.empty(x.shape, d)
        x2, g2, gx2 = x.reshape(rows, width), grad.reshape(rows, width), gx.reshape(rows, width)
        sums = []
        _run_all([lambda r0=r0, r1=r1: _rms_rows_backward(x2[r0:r1], w, g2[r0:r1], eps, gx2[r0:r1], sums)
                  for r0, r1 in _row_blocks(rows, width)])
        tail = x.shape[x.ndim - len(axes):]
        gw = None if weight is None else _sum_to(sum(sums).reshape(tail), weight.shape).astype(weight.dtype)
        return gx, gw
    xw, gw_ = _work(x), _work(grad)
    r = np.mean(np.square(xw), axis=axes, keepdims=True)
    r += xw.dtype.type(eps)
    r = 1 / np.sqrt(r)
    xhat = xw * r
    gxhat = gw_ * _work(weight) if weight is not None else gw_
    b = np.mean(gxhat * xhat, axis=axes, keepdims=True)
    gw = None if weight is None else _sum_to(gw_ * xhat, weight.shape).astype(weight.dtype)
    return ((gxhat - xhat * b) * r).astype(d, copy=False), gw


# ---- resampling -------------------------------------------------------------------------------------
def _resample_part(x, idx, w, dim, out):
    wshape = [1] * x.ndim
    wshape[dim] = idx.shape[1]
    acc = np.take(x, idx[0], axis=dim)
    acc *= w[0].reshape(wshape)
    for k in range(1, idx.shape[0]):
        t = np.take(x, idx[k], axis=dim)
        t *= w[k].reshape(wshape)
        acc += t
    out[...] = acc


def _resample_taps(x, idx, w, dim):
    """Σ_k w[k] * x.take(idx[k], dim): 1-d interpolation along ``dim`` with K taps per output
    position (idx, w of shape (K, n_out)); the leading dim is split over the thread pool."""
    xw = _work(x)
    ww = w.astype(xw.dtype, copy=False)
    shape = list(x.shape)
    shape[dim] = idx.shape[1]
    out = np.empty(shape, dtype=x.dtype)
    if out.size == 0:
        return out
    lead = 0 if dim != 0 else (1 if x.ndim > 1 else None)
    if lead is None or out.size < _PARALLEL_MIN or _threads() is None:
        _resample_part(xw, idx, ww, dim, out)
        return out
    n = x.shape[lead]
    tasks = []
    for a, b in _spans(n, out.size // max(n, 1)):
        key = [slice(None)] * x.ndim
        key[lead] = slice(a, b)
        key = tuple(key)
        tasks.append(lambda key=key: _resample_part(xw[key], idx, ww, dim, out[key]))
    _run_all(tasks)
    return out


# ---- attention -------------------------------------------------------------------------------------
_BLOCK_ELEMS = 1 << 18  # score elements per block (1 MiB of float32): one 512x512 head per task measured best
_EXP_SAFE = {np.dtype(np.float32): 80.0, np.dtype(np.float64): 700.0}  # |score| below which exp is exact-safe


class _SingleThreadedBlas:
    """Run BLAS single-threaded inside the block: attention threads over blocks itself, and nested
    BLAS threads on a busy 2-core machine spin-wait each other into a 10x slowdown. numpy's bundled
    OpenBLAS exposes the switch; without it the blocks run on the caller's thread only."""

    def __init__(self):
        self.get = self.set = None
        try:
            import ctypes
            with open("/proc/self/maps") as maps:  # the BLAS library numpy loaded
                paths = sorted({line.split()[-1] for line in maps if "openblas" in line.split()[-1]})
            for path in paths:
                lib = ctypes.CDLL(path)
                for prefix in ("scipy_openblas", "openblas"):
                    for suffix in ("64_", ""):
                        g = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                        st = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                        if g is not None and st is not None:
                            self.get, self.set = g, st
                            return
        except Exception:  # pragma: no cover - no /proc, no ctypes, an unknown BLAS: stay sequential
            self.get = self.set = None

    def __enter__(self):
        self.saved = self.get()
        self.set(1)

    def __exit__(self, *exc):
        self.set(self.saved)


_blas = None


def _blas_switch():
    """The BLAS thread switch, or None when it is unavailable (then attention runs sequentially)."""
    global _blas
    if _blas is None:
        _blas = _SingleThreadedBlas()
    return _blas if _blas.set is not None else None


class _Attention:
    """What the forward and backward kernels share: the flattened (nb, ...) operands, the mask,
    the block plan and the blocked (unnormalised) attention weights.

    Scores are built a block of batch entries and query rows at a time, so the (L, S) matrices
    never exist for the whole batch, and large problems run the blocks on the thread pool with
    BLAS single-threaded. When every |score| is provably below exp's overflow bound (from the row
    norms of q and k, plus the largest finite additive mask value) the max-subtraction pass is
    skipped: exp(s) is then neither inf nor a whole row of 0 (only masked keys give 0)."""

    def __init__(self, q, k, v, mask, scale, is_causal):
        self.out_dtype = q.dtype
        if q.dtype in LOW_PRECISION:
            q, k, v = (a.astype(np.float32) for a in (q, k, v))
            if mask is not None and mask.dtype != np.bool_:
                mask = mask.astype(np.float32)
        self.L, self.S, self.E, self.Ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
        self.batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                         mask.shape[:-2] if mask is not None and mask.ndim > 2 else ())
        self.nb = math.prod(self.batch)
        self.dtype, self.scale, self.causal = q.dtype, scale, is_causal
        self.empty = self.nb == 0 or self.L == 0 or self.S == 0
        if self.empty:
            return
        self.qf, self.kf, self.vf = self.flat(q), self.flat(k), self.flat(v)
        self.mf, self.shared = None, True
        if mask is not None:
            if mask.ndim <= 2 or all(n == 1 for n in mask.shape[:-2]):
                self.mf = np.broadcast_to(mask.reshape(mask.shape[-2:]) if mask.ndim >= 2 else mask, (self.L, self.S))
            else:
                self.mf, self.shared = self.flat(np.broadcast_to(mask, mask.shape[:-2] + (self.L, self.S))), False
        bound = abs(scale) * float(np.sqrt(np.max(np.einsum("...i,...i->...", self.qf, self.qf)))
                                   * np.sqrt(np.max(np.einsum("...i,...i->...", self.kf, self.kf))))
        if self.mf is not None and self.mf.dtype != np.bool_:
            if np.isnan(self.mf).any():
                bound = math.inf
            else:
                finite = self.mf[np.isfinite(self.mf)]
                bound += float(np.max(np.abs(finite))) if finite.size else 0.0
        self.skip_max = bound < _EXP_SAFE.get(q.dtype, 0.0)
        L, S, nb = self.L, self.S, self.nb
        if is_causal:  # row blocks let each block stop at its last query's keys
            self.rows = min(L, 128)
            self.bb = max(1, min(nb, _BLOCK_ELEMS // (self.rows * S)))
        elif L * S <= _BLOCK_ELEMS:
            self.rows, self.bb = L, max(1, min(nb, _BLOCK_ELEMS // (L * S)))
        else:
            self.rows, self.bb = max(1, _BLOCK_ELEMS // S), 1

    def flat(self, a):
        return np.broadcast_to(a, self.batch + a.shape[-2:]).reshape((self.nb,) + a.shape[-2:])

    def keys(self, r1):
        """Keys a block ending at query row r1 attends: all, or up to r1 (causal, top-left)."""
        return min(self.S, r1) if self.causal else self.S

    def weights(self, b0, b1, r0, r1):
        """exp(scores - row max) of a block (unnormalised; masked keys 0)."""
        s_hi = self.keys(r1)
        neg_inf = self.dtype.type(-np.inf)
        qs = self.qf[b0:b1, r0:r1] * self.dtype.type(self.scale)  # scaling q costs L·E, the scores L·S
        s = np.matmul(qs, self.kf[b0:b1, :s_hi].swapaxes(-1, -2))
        if self.mf is not None:
            m = self.mf[r0:r1, :s_hi] if self.shared else self.mf[b0:b1, r0:r1, :s_hi]
            if m.dtype == np.bool_:
                np.copyto(s, neg_inf, where=~m)
            else:
                s += m
        if self.causal and s_hi > r0 + 1:  # keys after each query row, inside this block's columns
            cols = np.arange(r0 + 1, s_hi)
            np.copyto(s[..., r0 + 1:s_hi], neg_inf, where=cols[None, :] > np.arange(r0, r1)[:, None])
        if not self.skip_max:
            mx = np.max(s, axis=-1, keepdims=True)
            mx[~np.isfinite(mx)] = 0  # all -inf rows: exp(-inf - 0) = 0 instead of NaN
            s -= mx
        np.exp(s, out=s)
        return s

    def row_blocks(self):
        return [(r0, min(self.L, r0 + self.rows)) for r0 in range(0, self.L, self.rows)]

    def batch_blocks(self):
        return [(b0, min(self.nb, b0 + self.bb)) for b0 in range(0, self.nb, self.bb)]

    def run(self, tasks):
        """Run the block tasks, threaded (BLAS single-threaded meanwhile) when the problem is big."""
        blas = _blas_switch() if len(tasks) > 1 and self.nb * self.L * self.S >= (1 << 21) \
            and _threads() is not None else None
        if blas is None:
            for t in tasks:
                t()
        else:
            with blas:
                _run_all(tasks)

    def shaped(self, a, *tail):
        return a.reshape(self.batch + tail).astype(self.out_dtype, copy=False)


def _sdpa(q, k, v, mask, scale, is_causal):
    """softmax(q @ k.T * scale + mask) @ v over the last two dims, batch dims broadcast. Per block
    (see :class:`_Attention`): the weights, then (weights @ [v | 1]) gives the weighted values and
    the row sums in one BLAS call. Rows whose every key is masked give 0 (as PyTorch's CPU kernel),
    not NaN."""
    a = _Attention(q, k, v, mask, scale, is_causal)
    out = np.zeros((a.nb, a.L, a.Ev), dtype=a.dtype)
    if a.empty:
        return a.shaped(out, a.L, a.Ev)
    Ev = a.Ev

    def block(b0, b1, r0, r1):
        w = a.weights(b0, b1, r0, r1)
        s_hi = a.keys(r1)
        vaug = np.empty((b1 - b0, s_hi, Ev + 1), dtype=a.dtype)  # [v | 1]: the row sums come from the same matmul
        vaug[..., :Ev] = a.vf[b0:b1, :s_hi]
        vaug[..., Ev] = 1
        o = np.matmul(w, vaug)
        denom = o[..., Ev:]
        np.divide(o[..., :Ev], denom, out=out[b0:b1, r0:r1], where=denom != 0)

    a.run([lambda b=b, r=r: block(*b, *r) for b in a.batch_blocks() for r in a.row_blocks()])
    return a.shaped(out, a.L, Ev)


def _sdpa_backward(q, k, v, mask, out, grad, scale, is_causal):
    """(grad_q, grad_k, grad_v, grad_mask) of scaled_dot_product_attention for the output gradient
    ``grad`` (``out`` is the forward result). Gradients come in the broadcast batch shape; grad_mask
    is None for no or a bool mask, else the scores' gradient summed over the batch (mask's dims 2+
    shared) or per batch entry. Blocks recompute their weights (nothing of the forward is kept but
    its output); each task owns a range of batch entries, so key/value gradients accumulate over
    its row blocks without locks."""
    a = _Attention(q, k, v, mask, scale, is_causal)
    dt_ = a.dtype
    gq = np.zeros((a.nb, a.L, a.E), dt_)
    gk = np.zeros((a.nb, a.S, a.E), dt_)
    gv = np.zeros((a.nb, a.S, a.Ev), dt_)
    want_mask = mask is not None and mask.dtype != np.bool_
    if a.empty:
        gm = None if not want_mask else np.zeros(a.batch + (a.L, a.S), dt_)
        return a.shaped(gq, a.L, a.E), a.shaped(gk, a.S, a.E), a.shaped(gv, a.S, a.Ev), \
            None if gm is None else gm.astype(a.out_dtype)
    g = a.flat(_work(grad))
    o = a.flat(_work(out))
    partial = []
    gm_full = np.zeros((a.nb, a.L, a.S), dt_) if want_mask and not a.shared else None

    def task(b0, b1):
        gm_part = np.zeros((a.L, a.S), dt_) if want_mask and a.shared else None
        for r0, r1 in a.row_blocks():
            s_hi = a.keys(r1)
            p = a.weights(b0, b1, r0, r1)
            den = np.sum(p, axis=-1, keepdims=True)
            np.divide(p, den, out=p, where=den != 0)
            gb = g[b0:b1, r0:r1]
            gv[b0:b1, :s_hi] += np.matmul(p.swapaxes(-1, -2), gb)
            dp = np.matmul(gb, a.vf[b0:b1, :s_hi].swapaxes(-1, -2))
            dp -= np.einsum("bij,bij->bi", gb, o[b0:b1, r0:r1])[..., None]  # rowsum(g * out)
            dp *= p  # the scores' gradient
            gq[b0:b1, r0:r1] = np.matmul(dp, a.kf[b0:b1, :s_hi])
            gk[b0:b1, :s_hi] += np.matmul(dp.swapaxes(-1, -2), a.qf[b0:b1, r0:r1])
            if gm_part is not None:
                gm_part[r0:r1, :s_hi] += dp.sum(axis=0)
            elif gm_full is not None:
                gm_full[b0:b1, r0:r1, :s_hi] = dp
        if gm_part is not None:
            partial.append(gm_part)

    a.run([lambda b=b: task(*b) for b in a.batch_blocks()])
    gq *= dt_.type(a.scale)
    gk *= dt_.type(a.scale)
    gm = None
    if want_mask:
        gm = sum(partial) if a.shared else gm_full.reshape(a.batch + (a.L, a.S))
        gm = gm.astype(a.out_dtype, copy=False)
    return a.shaped(gq, a.L, a.E), a.shaped(gk, a.S, a.E), a.shaped(gv, a.S, a.Ev), gm


from .attention import OPS as _ATTENTION_OPS  # noqa: E402 - attention weights with dropout
from .dropout import OPS as _DROPOUT_OPS  # noqa: E402 - dropout in one pass

OPS = {
    "relu": _act(_relu), "relu_": _relu_, "leaky_relu": _act(_leaky_relu), "hardtanh": _act(_hardtanh),
    "hardtanh_": _hardtanh_, "elu": _act(_elu), "gelu": _act(_gelu), "silu": _act(_silu),
    "mish": _act(_mish), "softplus": _act(_softplus), "hardsigmoid": _act(_hardsigmoid),
    "hardswish": _act(_hardswish), "logsigmoid": _act(_logsigmoid),
}


def _into(fn):
    """The in-place form of an activation kernel: compute, then write into the input's memory."""
    def run(x, **attrs):
        np.copyto(x, fn(x, **attrs))
        return x
    return run


for _name in ("leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid"):
    OPS[_name + "_"] = _into(OPS[_name])
OPS |= {
    "norm_affine": _norm_affine, "rms_norm": _rms_norm, "norm_affine_backward": _norm_affine_backward,
    "rms_norm_backward": _rms_norm_backward,
    "scaled_dot_product_attention": _sdpa, "scaled_dot_product_attention_backward": _sdpa_backward,
    "resample_taps": _resample_taps,
}
OPS |= _ATTENTION_OPS | _DROPOUT_OPS
