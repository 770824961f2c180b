"""CpuC's conv family: im2col/col2im and max pooling in C, convolution as C im2col + BLAS GEMM.

1-d and 2-d float32/float64 inputs take the compiled path (a 1-d input runs as a height-1 2-d one);
everything else (3-d, integers, 16-bit floats, depthwise convs) runs the numpy backend's code. Max
pooling is compiled for 2x2 stride-2 windows; its backward for any window. The
convolutions keep the numpy backend's structure (chunks of the batch sized to stay in cache, one
BLAS thread per worker thread, see ``ember/backend/numpy/conv.py``); what C replaces is the column
copy (a strided 6-d numpy copy) and the column sum of the transposed convolution (a numpy loop over
kernel offsets).
"""

from __future__ import annotations

import math

import numpy as np

from ..numpy import conv as npc
from ._lib import call, par, ptr, suffix


def _as2d(shape_sp, *geoms):
    """Spatial sizes and geometry tuples of a 1-d op as a height-1 2-d op (2-d passes through)."""
    if len(shape_sp) == 2:
        return (tuple(shape_sp),) + geoms
    out = [(1,) + tuple(shape_sp)]
    for g in geoms:
        g = tuple(g)
        out.append(((0, 0),) + g if g and isinstance(g[0], tuple) else (1,) + g)
    return tuple(out)


def _ok(*arrays) -> str | None:
    """The kernel suffix when every array is float32 (or every one float64) with 1 or 2 spatial dims."""
    dt = arrays[0].dtype
    if any(a.dtype != dt or a.ndim not in (3, 4) for a in arrays):
        return None
    return suffix(dt)


def _osz(isz, padding, kernel, stride, dilation):
    return tuple(npc._out_size(n, lo, hi, k, s, d)
                 for n, (lo, hi), k, s, d in zip(isz, padding, kernel, stride, dilation))


def _geometry_args(isz2, kernel2, stride2, pad2, dil2, osz2):
    return (isz2[0], isz2[1], kernel2[0], kernel2[1], stride2[0], stride2[1], pad2[0][0], pad2[1][0],
            dil2[0], dil2[1], osz2[0], osz2[1])


def im2col_into(s, x, cols, n, c, geo, cks, ns, parallel):
    """Run the im2col kernel: x (n, c, H, W) contiguous, cols laid out by (cks, ns)."""
    call("im2col_" + s, ptr(x), ptr(cols), n, c, *geo, cks, ns, parallel)


# ---- convolution ----------------------------------------------------------------------------------
def _conv(x, w, b=None, *, stride, padding, dilation, groups):
    s = _ok(x, w)
    if s is None or (b is not None and b.dtype != x.dtype):
        return npc._conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    N, C = x.shape[:2]
    O, Ci = w.shape[:2]
    G = groups
    Co = O // G
    kernel = w.shape[2:]
    osz = _osz(x.shape[2:], padding, kernel, stride, dilation)
    K, L = math.prod(kernel), math.prod(osz)
    if N * O * L == 0 or Ci * K == 0 or (Ci == 1 and G > 1):
        return npc._conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    isz2, k2, s2, p2, d2, o2 = _as2d(x.shape[2:], kernel, stride, padding, dilation, osz)
    geo = _geometry_args(isz2, k2, s2, p2, d2, o2)
    x = np.ascontiguousarray(x)
    wm = np.ascontiguousarray(w).reshape(G, Co, Ci * K)
    out = np.empty((N, G, Co, L), x.dtype)
    bias = None if b is None else b.reshape(G, Co, 1)
    if G == 1:
        wm, out3 = wm[0], out.reshape(N, Co, L)
        bias = None if bias is None else bias[0]
    else:
        out3 = out
    shape = (G, Ci * K, L) if G > 1 else (Ci * K, L)
    direct = all(k == 1 and st == 1 for k, st in zip(kernel, stride)) and not any(a or c for a, c in padding)
    per = C * K * L
    chunk = max(1, min(N, npc._CHUNK_BYTES // max(1, per * x.itemsize)))
    single = chunk >= N

    def work(n0):
        n1 = min(N, n0 + chunk)
        m = n1 - n0
        if direct:
            cols = x[n0:n1].reshape((m,) + shape)
        else:
            cols = npc._scratch(m * per, x.dtype)
            im2col_into(s, x[n0:n1], cols, m, C, geo, L, C * K * L, par(m * per) if single else 0)
            cols = cols.reshape((m,) + shape)
        o = out3[n0:n1]
        np.matmul(wm, cols, out=o)
        if bias is not None:
            o += bias

    npc._parallel(work, range(0, N, chunk), N * O * Ci * K * L, blas=True)
    return out.reshape((N, O) + osz)


def _conv_weight(x, g, *, kernel_size, stride, padding, dilation, groups):
    s = _ok(x, g)
    kernel = tuple(kernel_size)
    N, C = x.shape[:2]
    O = g.shape[1]
    G = groups
    Ci, Co = C // G, O // G
    K = math.prod(kernel)
    osz = g.shape[2:]
    L = math.prod(osz)
    if s is None or N * L * Ci * K * Co == 0:
        return npc._conv_weight(x, g, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                                groups=groups)
    isz2, k2, s2, p2, d2, o2 = _as2d(x.shape[2:], kernel, stride, padding, dilation, osz)
    geo = _geometry_args(isz2, k2, s2, p2, d2, o2)
    x = np.ascontiguousarray(x)
    if G == 1 and C * K <= 64:  # a thin product (first layers): dot products in C beat BLAS
        g = np.ascontiguousarray(g)
        gw = np.empty((O, C * K))
        call("conv_weight_small_" + s, ptr(x), ptr(g), ptr(gw), N, C, *geo, O, par(N * O * C * K * L // 16))
        return gw.astype(x.dtype).reshape((O, Ci) + kernel)
    gm = g.reshape(N, G, Co, L)
    per = C * K * L
    chunk = max(1, min(N, npc._CHUNK_BYTES // max(1, per * x.itemsize)))
    single = chunk >= N
    partial: dict = {}
    import threading

    def work(n0):
        n1 = min(N, n0 + chunk)
        m = n1 - n0
        # columns laid out (C*K, m, L): one GEMM over the chunk's m*L positions
        cols = npc._scratch(m * per, x.dtype)
        im2col_into(s, x[n0:n1], cols, m, C, geo, m * L, L, par(m * per) if single else 0)
        gc = npc._scratch(m * O * L, x.dtype, 1).reshape(G, Co, m, L)
        np.copyto(gc, gm[n0:n1].transpose(1, 2, 0, 3))
        r = np.matmul(gc.reshape(G, Co, m * L), cols.reshape(G, Ci * K, m * L).transpose(0, 2, 1))
        acc = partial.setdefault(threading.get_ident(), r)
        if acc is not r:
            acc += r

    npc._parallel(work, range(0, N, chunk), N * O * Ci * K * L, blas=True)
    gw = sum(partial.values())
    return gw.reshape((O, Ci) + kernel)


def _conv_transpose(x, w, b=None, *, stride, padding, dilation, groups):
    s = _ok(x, w)
    N, C = x.shape[:2]
    G = groups
    Ci, Co = C // G, w.shape[1] if w.ndim > 1 else 0
    kernel = w.shape[2:]
    K = math.prod(kernel)
    isz = x.shape[2:]
    Lin = math.prod(isz)
    osz = tuple((n - 1) * st + d * (k - 1) + 1 - lo - hi
                for n, (lo, hi), k, st, d in zip(isz, padding, kernel, stride, dilation))
    if s is None or (b is not None and b.dtype != x.dtype) or N * G * Co * math.prod(osz) == 0 or Ci * K * Lin == 0:
        return npc._conv_transpose(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    # col2im's "columns grid" is the input; its "image" the output, with padding lo
    osz2, k2, s2, p2, d2, i2 = _as2d(osz, kernel, stride, padding, dilation, isz)
    geo = _geometry_args(osz2, k2, s2, p2, d2, i2)
    x = np.ascontiguousarray(x)
    wt = np.ascontiguousarray(w).reshape(G, Ci, Co * K).transpose(0, 2, 1)   # (G, Co*K, Ci)
    xm = x.reshape(N, G, Ci, Lin)
    out = np.empty((N, G * Co) + osz, x.dtype)
    per = G * Co * K * Lin
    chunk = max(1, min(N, npc._CHUNK_BYTES // max(1, per * x.itemsize)))
    single = chunk >= N

    def work(n0):
        n1 = min(N, n0 + chunk)
        m = n1 - n0
        cols = npc._scratch(m * per, x.dtype).reshape(m, G, Co * K, Lin)
        np.matmul(wt, xm[n0:n1], out=cols)
        call("col2im_" + s, ptr(cols), ptr(out[n0:n1]), m, G * Co, *geo, Lin, G * Co * K * Lin,
             par(m * per) if single else 0, 1)

    npc._parallel(work, range(0, N, chunk), N * per * Ci, blas=True)
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(osz))
    return out


def _im2col(x, *, kernel_size, dilation, padding, stride):
    s = _ok(x)
    N, C = x.shape[:2]
    osz = _osz(x.shape[2:], padding, kernel_size, stride, dilation)
    K, L = math.prod(kernel_size), math.prod(osz)
    if s is None or N * C * K * L == 0:
        return npc._im2col(x, kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride)
    isz2, k2, s2, p2, d2, o2 = _as2d(x.shape[2:], kernel_size, stride, padding, dilation, osz)
    out = np.empty((N, C * K, L), x.dtype)
    im2col_into(s, np.ascontiguousarray(x), out, N, C, _geometry_args(isz2, k2, s2, p2, d2, o2), L, C * K * L,
                par(out.size))
    return out


def _col2im(cols, *, output_size, kernel_size, dilation, padding, stride):
    s = suffix(cols.dtype) if cols.ndim == 3 and len(output_size) in (1, 2) else None
    N = cols.shape[0]
    K = math.prod(kernel_size)
    C = cols.shape[1] // K if K else 0
    blocks = _osz(output_size, padding, kernel_size, stride, dilation)
    if s is None or N * C * math.prod(output_size) == 0 or cols.size == 0:
        return npc._col2im(cols, output_size=output_size, kernel_size=kernel_size, dilation=dilation,
                           padding=padding, stride=stride)
    osz2, k2, s2, p2, d2, b2 = _as2d(tuple(output_size), kernel_size, stride, padding, dilation, blocks)
    out = np.empty((N, C) + tuple(output_size), cols.dtype)
    L = math.prod(blocks)
    cols = np.ascontiguousarray(cols)   # a name keeps the copy alive while C reads it
    call("col2im_" + s, ptr(cols), ptr(out), N, C,
         *_geometry_args(osz2, k2, s2, p2, d2, b2), L, C * K * L, par(cols.size), 0)
    return out


# ---- pooling ---------------------------------------------------------------------------------------
def _pool_geometry(x, kernel_size, stride, padding, dilation):
    osz = _osz(x.shape[2:], padding, kernel_size, stride, dilation)
    isz2, k2, s2, p2, d2, o2 = _as2d(x.shape[2:], kernel_size, stride, padding, dilation, osz)
    return osz, isz2, k2, s2, p2, d2, o2


def _fast_pool(H, W, OH, OW, KH, KW, SH, SW, p2, DH, DW) -> bool:
    """2x2 windows, stride 2, no padding or dilation, whole windows: the geometry of the vectorised
    kernel. Other windows run the numpy backend's code, whose passes over whole output planes (one
    per kernel offset) beat the general C kernel's per-window loop (3x3 stride-2 pooling of a
    ResNet stem: 59 ms against numpy's 32 ms on one core)."""
    return (KH, KW, SH, SW, DH, DW) == (2, 2, 2, 2, 1, 1) and not any(a or b for a, b in p2) \
        and OH == H // 2 and OW == W // 2


def _max_pool_into(x, kernel_size, stride, padding, dilation, with_indices: bool):
    """(values, indices or None) from the 2x2 kernel, or None when the numpy code should run."""
    s = _ok(x)
    if s is None:
        return None
    osz, (H, W), (KH, KW), (SH, SW), p2, (DH, DW), (OH, OW) = _pool_geometry(x, kernel_size, stride, padding, dilation)
    if not _fast_pool(H, W, OH, OW, KH, KW, SH, SW, p2, DH, DW):
        return None
    vals = np.empty(x.shape[:2] + osz, x.dtype)
    idx = np.empty(vals.shape, np.int64) if with_indices else None
    if vals.size:
        x = np.ascontiguousarray(x)
        call("max_pool2x2_" + s, ptr(x), ptr(vals), ptr(idx), x.shape[0] * x.shape[1], H, W, OH, OW, par(x.size))
    return vals, idx


def _max_pool(x, *, kernel_size, stride, padding, dilation):
    r = _max_pool_into(x, kernel_size, stride, padding, dilation, True)
    if r is None:
        return npc._max_pool(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
    return r


def _max_pool_values(x, *, kernel_size, stride, padding, dilation):
    r = _max_pool_into(x, kernel_size, stride, padding, dilation, False)
    if r is None:
        return npc._max_pool_values(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
    return r[0]


def _max_pool_backward(g, idx, *, input_size, disjoint=False):
    s = suffix(g.dtype)
    N, C = g.shape[:2]
    Lin = math.prod(input_size)
    if s is None or g.size == 0 or Lin == 0 or idx.dtype != np.int64:
        return npc._max_pool_backward(g, idx, input_size=input_size, disjoint=disjoint)
    out = np.empty((N, C) + tuple(input_size), g.dtype)
    P = N * C
    g, idx = np.ascontiguousarray(g), np.ascontiguousarray(idx)
    call("max_pool_backward_" + s, ptr(g), ptr(idx), ptr(out),
         P, g.size // P, Lin, par(out.size))
    return out


OPS = {
    "conv": _conv, "conv_weight": _conv_weight, "conv_transpose": _conv_transpose, "im2col": _im2col,
    "col2im": _col2im, "max_pool": _max_pool, "max_pool_values": _max_pool_values,
    "max_pool_backward": _max_pool_backward,
}
