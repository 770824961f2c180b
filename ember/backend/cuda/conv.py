"""Convolution and max pooling on the CUDA backend (array module ``xp``): im2col plus one cuBLAS GEMM.

CuPy 14 dropped cuDNN, so convolutions gather the sliding windows of the padded input into a
column matrix (one copy through a strided view) and multiply it by the weight in a single batched
GEMM over the groups. ``conv_weight`` is the same GEMM against the output gradient; ``conv_transpose``
is the GEMM followed by col2im (one strided add per kernel offset). Max pooling reads the same window
view. Other pools and im2col/col2im as ops take the host path.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..meta import conv_out_size
from ._util import LOW

_out_size = conv_out_size


_IM2COL_2D = r"""
    // col is (C, KH, KW, N, OH, OW); i runs over it. Out-of-range taps read the zero padding.
    long long t = i;
    int ow = t % OW; t /= OW;
    int oh = t % OH; t /= OH;
    int n = t % N; t /= N;
    int kw = t % KW; t /= KW;
    int kh = t % KH;
    int c = t / KH;
    int y = oh * sh - ph + kh * dh;
    int z = ow * sw - pw + kw * dw;
    if (y >= 0 && y < H && z >= 0 && z < W) {
        col = x[(((long long)n * C + c) * H + y) * W + z];
    } else {
        col = (T)0.0f;
    }
"""


def _im2col_kernel():
    """A CuPy ElementwiseKernel writing the 2-d column matrix in one pass (no padded copy, no strided
    6-d gather through CuPy's generic indexing)."""
    import cupy
    return cupy.ElementwiseKernel(
        "raw T x, int32 C, int32 H, int32 W, int32 KH, int32 KW, int32 OH, int32 OW, int32 N, int32 sh, "
        "int32 sw, int32 ph, int32 pw, int32 dh, int32 dw", "T col", _IM2COL_2D, "ember_im2col2d")


def build(xp, movement_ops: dict, linalg_ops: dict) -> dict:
    as_strided = xp.lib.stride_tricks.as_strided
    matmul = linalg_ops["matmul"]  # follows allow_tf32, and handles bfloat16 batches
    gpu = xp is not np
    kernel_2d = []  # built on first use: [kernel] or [None] when it can't be built

    def _pad(x, pads, value=0):
        if not any(a or b for a, b in pads):
            return x
        shape = x.shape[:2] + tuple(n + a + b for n, (a, b) in zip(x.shape[2:], pads))
        out = xp.full(shape, value, x.dtype)
        out[(slice(None), slice(None)) + tuple(slice(a, a + n) for n, (a, _) in zip(x.shape[2:], pads))] = x
        return out

    def _windows(xpad, kernel, stride, dilation, osz):
        """(N, C, *kernel, *osz) view of the padded input: the columns, uncopied."""
        sp = xpad.strides[2:]
        return as_strided(xpad, xpad.shape[:2] + tuple(kernel) + tuple(osz),
                          xpad.strides[:2] + tuple(s * d for s, d in zip(sp, dilation))
                          + tuple(s * st for s, st in zip(sp, stride)))

    def _cols(x, kernel, stride, padding, dilation, osz, G):
        """(G, Ci*K, N*L) column matrix of x."""
        nd = len(kernel)
        N, C = x.shape[:2]
        if gpu and nd == 2 and x.dtype.kind in "fiub":
            if not kernel_2d:
                try:
                    kernel_2d.append(_im2col_kernel())
                except Exception:  # noqa: BLE001 - no kernel: the generic path below works everywhere
                    kernel_2d.append(None)
            if kernel_2d[0] is not None:
                col = xp.empty((C,) + tuple(kernel) + (N,) + tuple(osz), x.dtype)
                (H, W), (KH, KW), (OH, OW) = x.shape[2:], kernel, osz
                kernel_2d[0](xp.ascontiguousarray(x), C, H, W, KH, KW, OH, OW, N, stride[0], stride[1],
                             padding[0][0], padding[1][0], dilation[0], dilation[1], col)
                return col.reshape(G, (C // G) * KH * KW, N * OH * OW)
        win = _windows(_pad(x, padding), kernel, stride, dilation, osz)
        # (C, *kernel, N, *osz): channels and kernel offsets first, so one GEMM covers the batch
        perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
        cols = xp.ascontiguousarray(win.transpose(perm))
        return cols.reshape(G, (C // G) * math.prod(kernel), N * math.prod(osz))

    def _mm(a, b):
        """Batched over groups; one plain GEMM for the usual single group."""
        if a.shape[0] == 1:
            return matmul(a[0], b[0])[None]
        return matmul(a, b)

    def _to_nc(y, N, O, osz):
        """(O, N*L) -> (N, O, *osz), C-contiguous."""
        return xp.ascontiguousarray(y.reshape((O, N) + tuple(osz)).swapaxes(0, 1))

    def _conv(x, w, b=None, *, stride, padding, dilation, groups):
        N, C = x.shape[:2]
        O, Ci = w.shape[:2]
        kernel = w.shape[2:]
        G = groups
        osz = tuple(_out_size(n, lo, hi, k, s, d)
                    for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel, stride, dilation))
        K = math.prod(kernel)
        if N * O * math.prod(osz) == 0 or Ci * K == 0:
            out = xp.zeros((N, O) + osz, x.dtype)
        else:
            cols = _cols(x, kernel, stride, padding, dilation, osz, G)
            y = _mm(w.reshape(G, O // G, Ci * K), cols)  # (G, Co, N*L)
            out = _to_nc(y, N, O, osz)
        if b is not None:
            out += b.reshape((1, O) + (1,) * len(osz))
        return out

    def _conv_weight(x, g, *, kernel_size, stride, padding, dilation, groups):
        N, C = x.shape[:2]
        O = g.shape[1]
        G = groups
        osz = tuple(g.shape[2:])
        kernel = tuple(kernel_size)
        Ci = C // G
        K = math.prod(kernel)
        if N * math.prod(osz) == 0 or Ci * K == 0:
            return xp.zeros((O, Ci) + kernel, x.dtype)
        cols = _cols(x, kernel, stride, padding, dilation, osz, G)  # (G, Ci*K, N*L)
        gm = xp.ascontiguousarray(g.swapaxes(0, 1)).reshape(G, O // G, N * math.prod(osz))
        gw = _mm(gm, cols.transpose(0, 2, 1))  # (G, Co, Ci*K)
        return gw.reshape((O, Ci) + kernel)

    def _conv_transpose(x, w, b=None, *, stride, padding, dilation, groups):
        N, C = x.shape[:2]
        G = groups
        Ci = C // G
        Co = w.shape[1]
        kernel = tuple(w.shape[2:])
        nd = len(kernel)
        sp = tuple(x.shape[2:])
        K = math.prod(kernel)
        full = tuple((n - 1) * s + d * (k - 1) + 1 for n, s, d, k in zip(sp, stride, dilation, kernel))
        wdt = np.float32 if x.dtype in LOW else x.dtype
        acc = xp.zeros((G * Co, N) + full, wdt)
        if N * math.prod(sp) > 0 and Ci * K * Co > 0:
            xm = xp.ascontiguousarray(x.swapaxes(0, 1)).reshape(G, Ci, N * math.prod(sp))
            wm = w.reshape(G, Ci, Co * K).transpose(0, 2, 1)
            cols = _mm(wm, xm).reshape((G * Co,) + kernel + (N,) + sp)  # (G*Co, *k, N, *sp)
            for kk in itertools.product(*[range(k) for k in kernel]):
                dst = (slice(None), slice(None)) + tuple(
                    slice(k * d, k * d + s * (n - 1) + 1, s) for k, d, s, n in zip(kk, dilation, stride, sp))
                acc[dst] += cols[(slice(None),) + kk]
        # crop (lo, hi) from the full output; a negative hi appends zeros (output_padding)
        grow = [(max(0, -lo), max(0, -hi)) for lo, hi in padding]
        if any(a or b2 for a, b2 in grow):
            acc = _pad(acc, grow)
        key = (slice(None), slice(None)) + tuple(
            slice(max(0, lo), acc.shape[2 + i] - max(0, hi)) for i, (lo, hi) in enumerate(padding))
        out = xp.ascontiguousarray(acc[key].swapaxes(0, 1)).astype(x.dtype, copy=False)
        if b is not None:
            out += b.reshape((1, G * Co) + (1,) * nd)
        return out

    def _lowest(dt):
        return -np.inf if (dt.kind == "f" or dt in LOW) else np.iinfo(dt).min

    def _pool_windows(x, kernel_size, stride, padding, dilation):
        """(values, valid): each window's elements flattened on the last axis, and which are not padding."""
        nd = len(kernel_size)
        osz = tuple(_out_size(n, lo, hi, k, s, d)
                    for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel_size, stride, dilation))
        perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
        K = math.prod(kernel_size)

        def flat(a, fill):
            win = _windows(_pad(a, padding, fill), kernel_size, stride, dilation, osz)
            return xp.ascontiguousarray(win.transpose(perm)).reshape(a.shape[:2] + osz + (K,))

        valid = flat(xp.ones((1, 1) + x.shape[2:], bool), False)
        return flat(x, _lowest(x.dtype)), valid, osz

    def _first_max(flat, valid):
        """Position in each window of its first maximum among real elements (NaN is the maximum)."""
        if flat.size == 0:
            return xp.zeros(flat.shape[:-1], np.int64)
        m = xp.max(flat, axis=-1, keepdims=True)  # NaN when the window holds one
        hit = flat == m
        if flat.dtype.kind == "f" or flat.dtype in LOW:
            hit |= xp.isnan(flat) & xp.isnan(m)
        return xp.argmax(hit & valid, axis=-1)

    def _max_pool(x, *, kernel_size, stride, padding, dilation):
        flat, valid, osz = _pool_windows(x, kernel_size, stride, padding, dilation)
        k = _first_max(flat, valid)
        vals = xp.take_along_axis(flat, k[..., None], axis=-1)[..., 0]
        # flat input position of the chosen element: output corner + kernel offset, minus padding
        isz = x.shape[2:]
        pos = xp.zeros(k.shape, np.int64)
        rem = k.astype(np.int64)
        for i in reversed(range(len(kernel_size))):
            ki = rem % kernel_size[i]
            rem = rem // kernel_size[i]
            shape = [1] * k.ndim
            shape[2 + i] = osz[i]
            o = xp.arange(osz[i], dtype=np.int64).reshape(shape)
            coord = o * stride[i] + ki * dilation[i] - padding[i][0]
            pos += coord * int(math.prod(isz[i + 1:]))
        return vals, pos

    def _max_pool_values(x, *, kernel_size, stride, padding, dilation):
        flat, valid, _ = _pool_windows(x, kernel_size, stride, padding, dilation)
        k = _first_max(flat, valid)
        return xp.take_along_axis(flat, k[..., None], axis=-1)[..., 0]

    def _max_pool_backward(g, idx, *, input_size, disjoint=False):
        N, C = g.shape[:2]
        P = math.prod(input_size)
        wdt = np.float32 if g.dtype in LOW else g.dtype
        out = xp.zeros((N * C, P), wdt)
        rows = xp.arange(N * C).reshape(-1, 1)
        L = math.prod(g.shape[2:])
        gi = g.reshape(N * C, L).astype(wdt, copy=False)
        ii = idx.reshape(N * C, L)
        if disjoint:
            out[rows, ii] = gi
        else:
            xp.add.at(out, (xp.broadcast_to(rows, ii.shape), ii), gi)
        return out.astype(g.dtype, copy=False).reshape((N, C) + tuple(input_size))

    return {"conv": _conv, "conv_weight": _conv_weight, "conv_transpose": _conv_transpose,
            "max_pool": _max_pool, "max_pool_values": _max_pool_values, "max_pool_backward": _max_pool_backward}
