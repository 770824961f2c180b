"""Composite nn ops the CUDA backend runs directly (fewer passes than the frontend's decomposition):
softmax, log_softmax, logsumexp, the normalisation pair norm_affine/norm_affine_backward (batch,
layer, group and instance norm), training-mode batch_norm/batch_norm_backward with (C,) parameters
and the running-statistics update. Other composites are left to the frontend, which decomposes
them into primitives that also run on the GPU. Half precision computes in float32 and rounds once."""

from __future__ import annotations

import numpy as np

from .. import capture
from . import cublas, kernels
from ._util import LOW


def build(xp) -> dict:
    gpu = xp is not np

    def _work(x):
        return x.astype(np.float32) if x.dtype in LOW else x

    def _rows(x, dim):
        """x (computation dtype) as a C-contiguous array when a row kernel can run over ``dim``."""
        if not gpu or x.size == 0 or dim != x.ndim - 1 or x.shape[-1] > (1 << 30):
            return None
        w = _work(x)
        return w if w.flags.c_contiguous else xp.ascontiguousarray(w)

    def _row_softmax(x, dim, log):
        w = _rows(x, dim)
        k = None if w is None else kernels.get("softmax", w.dtype)
        if k is None:
            return None
        cols = w.shape[-1]
        y = xp.empty_like(w)
        k((w.size // cols,), (kernels.threads_for(cols),), (w, y, np.int64(cols), np.int32(log)))
        return y.astype(x.dtype, copy=False)

    def _softmax(x, dim):
        y = _row_softmax(x, dim, 0)
        if y is not None:
            return y
        w = _work(x)
        out = xp.exp(w - xp.max(w, axis=dim, keepdims=True))
        out /= xp.sum(out, axis=dim, keepdims=True)
        return out.astype(x.dtype, copy=False)

    def _log_softmax(x, dim):
        y = _row_softmax(x, dim, 1)
        if y is not None:
            return y
        w = _work(x)
        m = xp.max(w, axis=dim, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), m.dtype))
        out = w - m
        out -= xp.log(xp.sum(xp.exp(out), axis=dim, keepdims=True))
        return out.astype(x.dtype, copy=False)

    def _log_softmax_backward(y, grad, dim):
        """log_softmax's input gradient ``g - exp(y) * sum(g)`` over ``dim``: one row kernel over the last dim."""
        w = _rows(y, dim)
        k = None if w is None or grad.shape != y.shape else kernels.get("log_softmax_backward", w.dtype)
        if k is not None:
            g = _rows(grad, dim).astype(w.dtype, copy=False)
            cols = w.shape[-1]
            out = xp.empty_like(w)
            k((w.size // cols,), (kernels.threads_for(cols),), (w, g, out, np.int64(cols)))
            return out.astype(y.dtype, copy=False)
        wy, wg = _work(y), _work(grad)
        return (wg - xp.exp(wy) * wg.sum(axis=dim, keepdims=True)).astype(y.dtype, copy=False)

    def _logsumexp(x, dim, keepdim):
        w = _work(x)
        ax = None if dim is None else tuple(dim)
        if w.size == 0:
            return xp.log(xp.sum(xp.exp(w), axis=ax, keepdims=keepdim)).astype(x.dtype)
        m = xp.max(w, axis=ax, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), m.dtype))
        out = xp.log(xp.sum(xp.exp(w - m), axis=ax, keepdims=True)) + m
        if not keepdim:
            out = out.reshape(()) if ax is None else xp.squeeze(out, axis=ax)
        return out.astype(x.dtype, copy=False)

    def _stats(a, axes):
        m = xp.mean(a, axis=axes, keepdims=True)
        c = a - m
        v = xp.mean(c * c, axis=axes, keepdims=True)
        return m, c, v

    def _norm_affine(x, weight, bias, dim, eps):
        axes = tuple(dim)
        d = x.dtype
        stat_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        if x.size == 0:
            nan = xp.full(stat_shape, np.nan, dtype=d)
            return xp.empty(x.shape, dtype=d), nan, nan.copy()
        fast = _row_norm(x, weight, bias, axes, eps, stat_shape)
        if fast is None:
            fast = _batch_norm(x, weight, bias, axes, eps, stat_shape)
        if fast is not None:
            return fast
        a = _work(x)
        m, c, v = _stats(a, axes)
        y = c * (1.0 / xp.sqrt(v + eps)).astype(a.dtype)
        if weight is not None:
            y *= _work(weight)
        if bias is not None:
            y += _work(bias)
        return y.astype(d, copy=False), m.astype(d, copy=False), v.astype(d, copy=False)

    def _trailing(p, tail):
        """p (weight or bias) as a contiguous vector over the normalised trailing dims, or None."""
        shape = tuple(p.shape)
        while len(shape) > len(tail) and shape[0] == 1:
            shape = shape[1:]
        if shape != tail:
            return None
        return xp.ascontiguousarray(_work(p)).reshape(-1)

    def _row_norm(x, weight, bias, axes, eps, stat_shape):
        """Layer norm's forward in one kernel when the normalised dims are the trailing ones."""
        k = len(axes)
        if not gpu or axes != tuple(range(x.ndim - k, x.ndim)):
            return None
        w = _rows(x.reshape(x.shape[:x.ndim - k] + (-1,)), x.ndim - k) if k else None
        kern = None if w is None else kernels.get("layernorm", w.dtype)
        if kern is None:
            return None
        tail = tuple(x.shape[x.ndim - k:])
        wv = None if weight is None else _trailing(weight, tail)
        bv = None if bias is None else _trailing(bias, tail)
        if (weight is not None and wv is None) or (bias is not None and bv is None):
            return None
        cols = w.shape[-1]
        rows = w.size // cols
        y = xp.empty_like(w)
        mean = xp.empty(rows, w.dtype)
        var = xp.empty(rows, w.dtype)
        wp = w if wv is None else wv.astype(w.dtype, copy=False)  # any pointer when absent: the flag says so
        bp = w if bv is None else bv.astype(w.dtype, copy=False)
        kern((rows,), (kernels.threads_for(cols),),
             (w, wp, bp, y, mean, var, np.int64(cols), w.dtype.type(eps), np.int32(wv is not None),
              np.int32(bv is not None)))
        d = x.dtype
        return (y.reshape(x.shape).astype(d, copy=False), mean.reshape(stat_shape).astype(d, copy=False),
                var.reshape(stat_shape).astype(d, copy=False))

    def _rows_sum(a, shape):
        """a (rows, cols) summed over its rows, shaped ``shape`` (one GEMM through cuBLAS when it can)."""
        r = cublas.row_sum(a, a.dtype, capture._depth[0] > 0) if a.shape[0] >= 64 else None
        return (a.sum(axis=0) if r is None else r).reshape(shape)

    def _row_norm_backward(x, weight, grad, axes, eps, bias_shape):
        """Layer norm's backward when the normalised dims are the trailing ones: one row kernel for the
        input's gradient (and g * xhat), the parameters' gradients as sums over the rows."""
        k = len(axes)
        if (not gpu or not k or axes != tuple(range(x.ndim - k, x.ndim)) or grad.shape != x.shape
                or x.dtype != grad.dtype or x.dtype not in (np.float32, np.float64)):
            return None
        tail = tuple(x.shape[x.ndim - k:])
        if bias_shape is not None and tuple(bias_shape) != tail:
            return None
        wv = None if weight is None else _trailing(weight, tail)
        if weight is not None and (wv is None or weight.dtype != x.dtype):
            return None
        kern = kernels.get("layernorm_backward", x.dtype)
        if kern is None:
            return None
        cols = int(np.prod(tail))
        rows = x.size // cols
        xs, gs = xp.ascontiguousarray(x).reshape(rows, cols), xp.ascontiguousarray(grad).reshape(rows, cols)
        gx = xp.empty_like(xs)
        gxh = xp.empty_like(xs) if wv is not None else gx
        kern((rows,), (kernels.threads_for(cols),),
             (xs, xs if wv is None else wv, gs, gx, gxh, np.int64(cols), x.dtype.type(eps), np.int32(wv is not None)))
        gw = None if wv is None else _rows_sum(gxh, weight.shape)
        gb = None if bias_shape is None else _rows_sum(gs, tuple(bias_shape))
        return gx.reshape(x.shape), gw, gb

    def _channel_vec(p, C, ndim):
        """weight/bias of batch norm as a contiguous (C,) vector (shape (C,) or (1, C, 1, ...)), or None."""
        shape = tuple(p.shape)
        if shape == (C,) or shape == (1, C) + (1,) * (ndim - 2) or shape == (C,) + (1,) * (ndim - 2):
            return xp.ascontiguousarray(_work(p)).reshape(C)
        return None

    def _channels(x, axes, *params):
        """(x as (N, C, L) contiguous work array, param vectors) when ``axes`` are batch norm's (every dim
        but 1) and the GPU kernels apply; else None."""
        if not gpu or x.ndim < 2 or axes != (0,) + tuple(range(2, x.ndim)) or x.size == 0:
            return None
        a = _work(x)
        if a.dtype != np.float32 and a.dtype != np.float64:
            return None
        C = x.shape[1]
        vecs = []
        for p in params:
            v = None if p is None else _channel_vec(p, C, x.ndim)
            if p is not None and v is None:
                return None
            vecs.append(None if v is None else v.astype(a.dtype, copy=False))
        a = a if a.flags.c_contiguous else xp.ascontiguousarray(a)
        return a.reshape(x.shape[0], C, -1), vecs

    def _bn_grid(a3):
        """(kernels' chunk size, blocks per channel S): enough blocks to fill the GPU when channels are few
        and long (ResNet's first layers: 64 channels of 400k elements), one per channel when they are many and
        short; S <= 256 = threads per block, so a block adds up its channel's S partials in one step."""
        N, C, L = a3.shape
        total = N * L
        S = max(1, min(256, -(-total // 8192), -(-2048 // C)))
        chunk = -(-total // S)
        return chunk, -(-total // chunk)

    def _bn_ok(a3):
        N, C, L = a3.shape
        return N * L < (1 << 31) and C < 65536 and L < (1 << 31)

    def _batch_norm(x, weight, bias, axes, eps, stat_shape, running=None, counter=None):
        """Two launches: per-channel partial sums, then one pass normalising (and the statistics; with
        ``running`` = (running_mean, running_var, keep, take_mean, take_var), of the work dtype and
        contiguous, the running statistics too; with ``counter`` (one int64), one added to it)."""
        got = _channels(x, axes, weight, bias)
        if got is None or not _bn_ok(got[0]):
            return None
        a3, (wv, bv) = got
        stats, apply = kernels.get("bnstats", a3.dtype), kernels.get("bnfwd", a3.dtype)
        if stats is None or apply is None:
            return None
        N, C, L = a3.shape
        chunk, S = _bn_grid(a3)
        # one allocation for the partial sums and the two statistics (each allocation costs host time)
        buf = xp.empty(C * (4 * S + 2), a3.dtype)
        part, mean, var = buf[:4 * C * S], buf[4 * C * S:4 * C * S + C], buf[4 * C * S + C:]
        geo = (np.int32(N), np.int32(C), np.int32(L), np.int32(chunk))
        stats((S, C), (256,), (a3, a3, part) + geo + (np.int32(0),))
        y = xp.empty(x.shape, a3.dtype)
        rm, rv, keep, take_m, take_v = running if running is not None else (a3, a3, 0.0, 0.0, 0.0)
        apply((S, C), (256,), (a3, part, a3 if wv is None else wv, a3 if bv is None else bv, y, mean, var) + geo
              + (a3.dtype.type(eps), np.int32(wv is not None), np.int32(bv is not None), rm, rv, np.float64(keep),
                 np.float64(take_m), np.float64(take_v), np.int32(running is not None),
                 np.uint64(0) if counter is None else counter))
        d = x.dtype
        return (y.astype(d, copy=False), mean.reshape(stat_shape).astype(d, copy=False),
                var.reshape(stat_shape).astype(d, copy=False))

    def _batch_norm_backward(x, weight, grad, axes, eps, bias_shape):
        """Two launches: per-channel partial sums of x, x^2, g, g*x in one read of x and g, then one pass
        writing the input gradient (and the weight and bias gradients, per channel)."""
        got = _channels(x, axes, weight)
        if got is None or grad.shape != x.shape or not _bn_ok(got[0]):
            return None
        a3, (wv,) = got
        stats, apply = kernels.get("bnstats", a3.dtype), kernels.get("bnbwd", a3.dtype)
        if stats is None or apply is None:
            return None
        g3 = _work(grad).astype(a3.dtype, copy=False)
        g3 = (g3 if g3.flags.c_contiguous else xp.ascontiguousarray(g3)).reshape(a3.shape)
        N, C, L = a3.shape
        chunk, S = _bn_grid(a3)
        part = xp.empty((C, S, 4), a3.dtype)
        geo = (np.int32(N), np.int32(C), np.int32(L), np.int32(chunk))
        stats((S, C), (256,), (a3, g3, part) + geo + (np.int32(1),))
        # results allocated in their final shapes: arrays that own their memory are stored as .grad by
        # autograd as they are (a reshaped view would be copied)
        gx = xp.empty(x.shape, a3.dtype)
        sgx = xp.empty(C if weight is None else weight.shape, a3.dtype)
        sg = xp.empty(C if bias_shape is None else tuple(bias_shape), a3.dtype)
        apply((S, C), (256,), (a3, g3, part, a3 if wv is None else wv, gx, sgx, sg) + geo
              + (a3.dtype.type(eps), np.int32(wv is not None)))
        d = x.dtype
        gw = None if weight is None else sgx.astype(weight.dtype, copy=False)
        gb = None if bias_shape is None else sg.astype(d, copy=False)
        return gx.astype(d, copy=False), gw, gb

    def _sum_to(g, shape):
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
        s = xp.sum(g, axis=axes, keepdims=True) if axes else g
        return s.reshape(shape)

    def _norm_affine_backward(x, weight, grad, dim, eps, bias_shape):
        axes = tuple(dim)
        d = x.dtype
        if x.size == 0:
            return (xp.zeros(x.shape, d), None if weight is None else xp.zeros(weight.shape, weight.dtype),
                    None if bias_shape is None else xp.zeros(bias_shape, d))
        fast = _batch_norm_backward(x, weight, grad, axes, eps, bias_shape)
        if fast is None:
            fast = _row_norm_backward(x, weight, grad, axes, eps, bias_shape)
        if fast is not None:
            return fast
        a, g = _work(x), _work(grad)
        m, c, v = _stats(a, axes)
        r = (1.0 / xp.sqrt(v + eps)).astype(a.dtype)
        xhat = c * r
        gxhat = g if weight is None else g * _work(weight)
        gx = r * (gxhat - xp.mean(gxhat, axis=axes, keepdims=True)
                  - xhat * xp.mean(gxhat * xhat, axis=axes, keepdims=True))
        gw = None if weight is None else _sum_to(g * xhat, weight.shape).astype(weight.dtype, copy=False)
        gb = None if bias_shape is None else _sum_to(g, tuple(bias_shape)).astype(d, copy=False)
        return gx.astype(d, copy=False), gw, gb

    def _running_update_(stat, new, momentum, scale):
        """Batch norm's running statistic moved toward this batch's value in one launch (the frontend's
        composite takes a scale, a multiply-add and a reshape). ``new`` has stat's element count."""
        if new.size != stat.size:
            raise ValueError(f"running_update_: the new value has {new.size} elements, the statistic {stat.size}")
        keep, take = 1.0 - float(momentum), float(momentum) * float(scale)
        v = new.reshape(stat.shape)
        kern = (kernels.elementwise("running_update") if gpu and stat.dtype in (np.float32, np.float64)
                and v.dtype in (np.float32, np.float64) else None)
        if kern is not None:
            kern(v, keep, take, stat)
            return stat
        w = _work(stat)
        r = w * keep + _work(v).astype(w.dtype, copy=False) * take
        stat[...] = r.astype(stat.dtype, copy=False)
        return stat

    def _bn_axes(x):
        return (0,) + tuple(range(2, x.ndim))

    def _bn_view(p, ndim):
        """A (C,) parameter shaped (C, 1, ...) to broadcast against (N, C, *spatial)."""
        return None if p is None else p.reshape((p.shape[0],) + (1,) * (ndim - 2))

    def _batch_norm_op(x, weight, bias, running_mean=None, running_var=None, counter=None, *, eps, momentum):
        """Training-mode batch norm with (C,) parameters, statistics and running statistics updated in
        place (and the module's batch counter): one op where the frontend would issue two reshapes, two
        running updates and an increment."""
        C = x.shape[1]
        axes = _bn_axes(x)
        if counter is not None and (counter.dtype != np.int64 or counter.size != 1):
            raise ValueError(f"batch_norm: counter must hold one int64, got {counter.dtype} of size {counter.size}")
        if x.size == 0:
            if counter is not None:
                counter += 1
            nan = xp.full((C,), np.nan, dtype=x.dtype)
            return xp.empty(x.shape, dtype=x.dtype), nan, nan.copy()
        count = x.size // C
        unbias = count / max(count - 1, 1)
        work = np.float32 if x.dtype in LOW else x.dtype
        both = running_mean is not None and running_var is not None
        # the running statistics updated inside the normalising kernel when they are of its dtype
        running = ((running_mean, running_var, 1.0 - momentum, momentum, momentum * unbias)
                   if both and running_mean.dtype == work and running_var.dtype == work
                   and running_mean.flags.c_contiguous and running_var.flags.c_contiguous else None)
        fast = _batch_norm(x, weight, bias, axes, eps, (C,), running, counter)
        if fast is None:
            y, mean, var = _norm_affine(x, _bn_view(weight, x.ndim), _bn_view(bias, x.ndim), list(axes), eps)
            fast, running = (y, mean.reshape(C), var.reshape(C)), None
            if counter is not None:
                counter += 1
        if running is None and running_mean is not None:
            _running_update_(running_mean, fast[1], momentum, 1.0)
        if running is None and running_var is not None:
            _running_update_(running_var, fast[2], momentum, unbias)
        return fast

    def _batch_norm_backward_op(x, weight, grad, *, eps, has_bias):
        C = x.shape[1]
        axes = _bn_axes(x)
        if x.size == 0:
            return (xp.zeros(x.shape, x.dtype), None if weight is None else xp.zeros((C,), weight.dtype),
                    xp.zeros((C,), x.dtype) if has_bias else None)
        fast = _batch_norm_backward(x, weight, grad, axes, eps, (C,) if has_bias else None)
        if fast is not None:
            return fast
        gx, gw, gb = _norm_affine_backward(x, _bn_view(weight, x.ndim), grad, list(axes), eps,
                                           (C,) + (1,) * (x.ndim - 2) if has_bias else None)
        return gx, None if gw is None else gw.reshape(C), None if gb is None else gb.reshape(C)

    return {"softmax": _softmax, "log_softmax": _log_softmax, "log_softmax_backward": _log_softmax_backward,
            "logsumexp": _logsumexp, "norm_affine": _norm_affine,
            "norm_affine_backward": _norm_affine_backward, "running_update_": _running_update_,
            "batch_norm": _batch_norm_op, "batch_norm_backward": _batch_norm_backward_op}
