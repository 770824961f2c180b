"""Convolution and max pooling on the CUDA backend (array module ``xp``): column matrices and cuBLAS GEMMs.

CuPy 14 dropped cuDNN. With one group (every ResNet convolution):

* ``conv``: one GEMM per sample, ``W (O, C*K) @ cols[n] (C*K, L)``, in a single strided-batched cuBLAS call
  (the weight has batch stride 0) that writes NCHW directly. A 1x1 kernel without padding needs no columns
  (``cols[n]`` is ``x[n]``, subsampled by one strided copy when strided); other kernels gather them with one
  im2col launch (2-d) or a strided view copy (1-d, 3-d).
* ``conv_transpose`` (conv's input gradient): ``W^T @ x[n]`` per sample in one call; for 1x1 unstrided that
  is the result, otherwise col2im runs as one gather kernel that writes the cropped NCHW output.
* ``conv_weight``: per-sample products ``g[n] @ cols[n]^T`` summed over the batch, or one GEMM over N*L
  after a transposed copy of g, whichever moves fewer bytes.

Grouped convolutions use the (C*K, N*L) column layout and one GEMM batched over the groups. The GPU
kernels live in :mod:`.kernels`; on numpy (the tests' "cudasim") the same code runs with numpy's matmul and
strided views. Max pooling (2-d) is one kernel on the GPU, its backward a scatter; other pools and
im2col/col2im as ops take the host path.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..meta import conv_out_size
from . import cudnn, kernels
from ._util import LOW

_out_size = conv_out_size


def _pointwise(kernel, padding) -> bool:
    """A 1x1(x1) kernel without padding: the columns are the (subsampled) input itself."""
    return all(k == 1 for k in kernel) and all(lo == 0 and hi == 0 for lo, hi in padding)


def build(xp, movement_ops: dict, linalg_ops: dict) -> dict:
    as_strided = xp.lib.stride_tricks.as_strided
    matmul = linalg_ops["matmul"]  # follows allow_tf32, and handles bfloat16 batches
    gpu = xp is not np

    def _im2col_gpu(x, kernel, stride, padding, dilation, osz, per_sample):
        """The 2-d column matrix from one kernel launch, (N, C, KH, KW, L) when ``per_sample`` else
        (C, KH, KW, N, L); None where the kernel doesn't apply (numpy, other ranks, grid limits)."""
        if not (gpu and x.ndim == 4):
            return None
        N, C = x.shape[:2]
        (KH, KW), (OH, OW) = kernel, osz
        L = OH * OW
        if C * KH * KW > 65535 or N > 65535 or L >= 1 << 31:
            return None
        k = kernels.conv_kernel("im2col", x.dtype)
        if k is None:
            return None
        col = xp.empty(((N, C, KH, KW) if per_sample else (C, KH, KW, N)) + (L,), x.dtype)
        if col.size:
            t = 256 if L > 128 else 64
            i32 = np.int32
            k(((L + t - 1) // t, C * KH * KW, N), (t,),
              (xp.ascontiguousarray(x), col, i32(C), i32(x.shape[2]), i32(x.shape[3]), i32(KH), i32(KW), i32(OH),
               i32(OW), i32(N), i32(stride[0]), i32(stride[1]), i32(padding[0][0]), i32(padding[1][0]),
               i32(dilation[0]), i32(dilation[1]), i32(per_sample)))
        return col

    def _gather_2d(x):
        """The col2im gather for x's dtype on the GPU (2-d): ('raw', RawKernel) for float32/float64,
        ('ew', ElementwiseKernel) for float16, or None."""
        if not (gpu and x.ndim == 4 and x.dtype.kind == "f"):
            return None
        k = kernels.conv_kernel("col2im", x.dtype)
        if k is not None:
            return "raw", k
        k = kernels.elementwise("col2im2d", "double" if x.dtype == np.float64 else "float")
        return None if k is None else ("ew", k)

    def _bmm(a, b, ta=False, tb=False, out=None):
        """op(a) @ op(b) batched, (B, M, N): one cuBLAS call for floating dtypes (a 2-d operand is shared by
        the batch, no broadcast copy); other dtypes through the backend's matmul."""
        if a.dtype.kind == "f" or a.dtype in LOW:
            return kernels.gemm_batched(xp, a, b, ta, tb, out)
        r = matmul(a.swapaxes(-1, -2) if ta else a, b.swapaxes(-1, -2) if tb else b)
        r = r if r.ndim == 3 else r[None]
        if out is not None:
            out[...] = r
            return out
        return r

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
        """(G, Ci*K, N*L) column matrix of x: channels and kernel offsets first, so one GEMM covers the batch."""
        nd = len(kernel)
        N, C = x.shape[:2]
        col = _im2col_gpu(x, kernel, stride, padding, dilation, osz, False)
        if col is not None:
            return col.reshape(G, (C // G) * math.prod(kernel), N * math.prod(osz))
        win = _windows(_pad(x, padding), kernel, stride, dilation, osz)
        perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
        cols = xp.ascontiguousarray(win.transpose(perm))
        return cols.reshape(G, (C // G) * math.prod(kernel), N * math.prod(osz))

    def _cols_ps(x, kernel, stride, padding, dilation, osz):
        """(N, C*K, L) column matrices, one per sample, so that a GEMM per sample writes NCHW. For a 1x1
        kernel without padding they are x itself (a view), or x subsampled (one copy) when strided."""
        N, C = x.shape[:2]
        K, L = math.prod(kernel), math.prod(osz)
        if _pointwise(kernel, padding):
            if any(s != 1 for s in stride):
                x = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
            return x.reshape(N, C, L)  # a view when x is contiguous and unstrided
        col = _im2col_gpu(x, kernel, stride, padding, dilation, osz, True)
        if col is not None:
            return col.reshape(N, C * K, L)
        win = _windows(_pad(x, padding), kernel, stride, dilation, osz)  # already (N, C, *kernel, *osz)
        return xp.ascontiguousarray(win).reshape(N, C * K, L)

    def _mm(a, b):
        """Batched over groups; one plain GEMM for the usual single group."""
        if a.shape[0] == 1:
            return matmul(a[0], b[0])[None]
        return matmul(a, b)

    def _to_nc(y, N, O, osz):
        """(O, N*L) -> (N, O, *osz), C-contiguous."""
        return xp.ascontiguousarray(y.reshape((O, N) + tuple(osz)).swapaxes(0, 1))

    def _conv(x, w, b=None, *, stride, padding, dilation, groups):
        out = (cudnn.conv_forward(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
               if gpu and cudnn.routes(w.shape[2:]) else None)
        if out is not None:
            if b is not None:
                out += b.reshape((1, -1) + (1,) * (out.ndim - 2))
            return out
        N, C = x.shape[:2]
        O, Ci = w.shape[:2]
        kernel = w.shape[2:]
        G = groups
        osz = tuple(_out_size(n, lo, hi, k, s, d)
                    for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel, stride, dilation))
        K = math.prod(kernel)
        if N * O * math.prod(osz) == 0 or Ci * K == 0:
            out = xp.zeros((N, O) + osz, x.dtype)
        elif G == 1:
            # one GEMM per sample, W (O, C*K) @ cols[n] (C*K, L), written straight into NCHW
            cols = _cols_ps(x, kernel, stride, padding, dilation, osz)
            out = _bmm(w.reshape(O, Ci * K), cols).reshape((N, O) + osz)
        else:
            cols = _cols(x, kernel, stride, padding, dilation, osz, G)
            y = _mm(w.reshape(G, O // G, Ci * K), cols)  # (G, Co, N*L)
            out = _to_nc(y, N, O, osz)
        if b is not None:
            out += b.reshape((1, O) + (1,) * len(osz))
        return out

    def _conv_weight(x, g, *, kernel_size, stride, padding, dilation, groups):
        if gpu and cudnn.routes(kernel_size):
            gw = cudnn.conv_backward_filter(x, g, kernel_size=kernel_size, stride=stride, padding=padding,
                                            dilation=dilation, groups=groups)
            if gw is not None:
                return gw
        N, C = x.shape[:2]
        O = g.shape[1]
        G = groups
        osz = tuple(g.shape[2:])
        kernel = tuple(kernel_size)
        Ci = C // G
        K, L = math.prod(kernel), math.prod(osz)
        if N * L == 0 or Ci * K == 0:
            return xp.zeros((O, Ci) + kernel, x.dtype)
        # the result owns its memory (no reshaped view), so autograd stores it as .grad without a copy
        gw = xp.empty((O, Ci) + kernel, x.dtype)
        if G == 1 and N * O * C * K <= N * L * (O + (C if _pointwise(kernel, padding) else 0)):
            # per-sample products (N, O, C*K) summed over the batch: fewer bytes than the transposed copies
            # of g (and of x, for 1x1) that one GEMM over N*L needs when C*K is small against L (early layers)
            cols = _cols_ps(x, kernel, stride, padding, dilation, osz)
            xp.sum(_bmm(g.reshape(N, O, L), cols, tb=True), axis=0, out=gw.reshape(O, Ci * K))
            return gw
        cols = _cols(x, kernel, stride, padding, dilation, osz, G)  # (G, Ci*K, N*L)
        gm = xp.ascontiguousarray(g.swapaxes(0, 1)).reshape(G, O // G, N * L)
        _bmm(gm, cols, tb=True, out=gw.reshape(G, O // G, Ci * K))
        return gw

    def _conv_transpose(x, w, b=None, *, stride, padding, dilation, groups):
        out = (cudnn.conv_backward_data(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
               if gpu and cudnn.routes(w.shape[2:]) else None)
        if out is not None:
            if b is not None:
                out += b.reshape((1, -1) + (1,) * (out.ndim - 2))
            return out
        N, C = x.shape[:2]
        G = groups
        Ci = C // G
        Co = w.shape[1]
        kernel = tuple(w.shape[2:])
        nd = len(kernel)
        sp = tuple(x.shape[2:])
        K, L = math.prod(kernel), math.prod(sp)
        full = tuple((n - 1) * s + d * (k - 1) + 1 for n, s, d, k in zip(sp, stride, dilation, kernel))
        osz = tuple(f - lo - hi for f, (lo, hi) in zip(full, padding))
        out = None
        work = N * L > 0 and Ci * K * Co > 0
        gather = _gather_2d(x) if work else None
        if work and G == 1 and _pointwise(kernel, padding) and all(s == 1 for s in stride):
            # 1x1: W^T (Co, Ci) @ x[n] (Ci, L) per sample is the NCHW result
            out = _bmm(w.reshape(Ci, Co), x.reshape(N, Ci, L), ta=True).reshape((N, Co) + sp)
        elif work and G == 1 and gather is not None:
            # per-sample columns W^T (Co*K, Ci) @ x[n], then col2im as one gather kernel writing the crop
            cols = _bmm(w.reshape(Ci, Co * K), x.reshape(N, Ci, L), ta=True)  # (N, Co*K, L)
            out = _gather(gather, cols, x, (N, Co), osz, kernel, stride, padding, dilation, (Co * K * L, K * L, L))
        elif work and gather is not None:
            xm = xp.ascontiguousarray(x.swapaxes(0, 1)).reshape(G, Ci, N * L)
            cols = _mm(w.reshape(G, Ci, Co * K).transpose(0, 2, 1), xm)  # (G, Co*K, N*L) = (G*Co, K, N, L)
            out = _gather(gather, cols, x, (N, G * Co), osz, kernel, stride, padding, dilation, (L, K * N * L, N * L))
        if out is None:
            out = _conv_transpose_generic(x, w, G, Ci, Co, kernel, stride, padding, dilation, full)
        if b is not None:
            out += b.reshape((1, G * Co) + (1,) * nd)
        return out

    def _gather(kern, cols, x, nc, osz, kernel, stride, padding, dilation, col_strides):
        out = xp.empty(nc + tuple(osz), x.dtype)
        if not out.size:
            return out
        kind, k = kern
        H, W = x.shape[2:]
        geo = (osz[0], osz[1], H, W, kernel[0], kernel[1], stride[0], stride[1], padding[0][0], padding[1][0],
               dilation[0], dilation[1])
        OL = osz[0] * osz[1]
        if kind == "raw" and nc[1] <= 65535 and nc[0] <= 65535 and OL < 1 << 31:
            t = 256 if OL > 128 else 64
            k(((OL + t - 1) // t, nc[1], nc[0]), (t,), (cols, out, np.int32(nc[1])) + tuple(np.int32(v) for v in geo)
              + tuple(np.int64(v) for v in col_strides))
            return out
        if kind == "raw":
            ew = kernels.elementwise("col2im2d", "double" if x.dtype == np.float64 else "float")
            if ew is None:
                return None
            k = ew
        k(cols, nc[1], *geo, *col_strides, out)
        return out

    def _conv_transpose_generic(x, w, G, Ci, Co, kernel, stride, padding, dilation, full):
        """GEMM, then col2im as one strided add per kernel offset into a zeroed buffer, then the crop."""
        N = x.shape[0]
        sp = tuple(x.shape[2:])
        K = math.prod(kernel)
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
        return xp.ascontiguousarray(acc[key].swapaxes(0, 1)).astype(x.dtype, copy=False)

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

    def _max_pool_2d(x, kernel_size, stride, padding, dilation):
        """(values, indices) from one kernel launch on the GPU (2-d, numeric dtypes), or None."""
        if not (gpu and len(kernel_size) == 2 and x.dtype.kind in "fiu"):
            return None
        kern = kernels.elementwise("maxpool2d")
        if kern is None:
            return None
        osz = tuple(_out_size(n, lo, hi, k, s, d)
                    for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel_size, stride, dilation))
        vals = xp.empty(x.shape[:2] + osz, x.dtype)
        idx = xp.empty(vals.shape, np.int64)
        if vals.size:
            kern(xp.ascontiguousarray(x), x.shape[2], x.shape[3], osz[0], osz[1], kernel_size[0], kernel_size[1],
                 stride[0], stride[1], padding[0][0], padding[1][0], dilation[0], dilation[1],
                 x.dtype.type(_lowest(x.dtype)), vals, idx)
        return vals, idx

    def _max_pool(x, *, kernel_size, stride, padding, dilation):
        fast = _max_pool_2d(x, kernel_size, stride, padding, dilation)
        if fast is not None:
            return fast
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
        fast = _max_pool_2d(x, kernel_size, stride, padding, dilation)
        if fast is not None:
            return fast[0]
        flat, valid, _ = _pool_windows(x, kernel_size, stride, padding, dilation)
        k = _first_max(flat, valid)
        return xp.take_along_axis(flat, k[..., None], axis=-1)[..., 0]

    def _max_pool_backward(g, idx, *, input_size, disjoint=False):
        N, C = g.shape[:2]
        P = math.prod(input_size)
        L = math.prod(g.shape[2:])
        kern = kernels.elementwise("maxpool_backward") if gpu and g.dtype in (np.float32, np.float64) else None
        if kern is not None:
            # zeroed result, then one scatter launch (atomic adds where windows overlap)
            out = xp.zeros((N, C) + tuple(input_size), g.dtype)
            if g.size:
                kern(g, idx, L, P, int(bool(disjoint)), out)
            return out
        wdt = np.float32 if g.dtype in LOW else g.dtype
        out = xp.zeros((N * C, P), wdt)
        rows = xp.arange(N * C).reshape(-1, 1)
        gi = g.reshape(N * C, L).astype(wdt, copy=False)
        ii = idx.reshape(N * C, L)
        if disjoint:
            out[rows, ii] = gi
        else:
            xp.add.at(out, (xp.broadcast_to(rows, ii.shape), ii), gi)
        return out.astype(g.dtype, copy=False).reshape((N, C) + tuple(input_size))

    return {"conv": _conv, "conv_weight": _conv_weight, "conv_transpose": _conv_transpose,
            "max_pool": _max_pool, "max_pool_values": _max_pool_values, "max_pool_backward": _max_pool_backward}
