"""Average and adaptive max pooling, and im2col/col2im as ops, on the CUDA backend (array module ``xp``).

The arithmetic is the numpy reference's (``ember/backend/numpy/conv.py``), vectorised over the whole
batch instead of chunked for a CPU cache: avg_pool adds one strided slice of the input per kernel
offset (padding is never read, so no padded copy) and divides by the reference's divisors; its
backward spreads the scaled gradient back the same way; col2im adds one slice per kernel offset in the
reference's order, so float results match it bit for bit. adaptive_max_pool takes the reference's
clamped gathers (one per offset of the largest window). Half precision accumulates in float32, integers
in int64, and rounds once. im2col of 2-d inputs on the GPU is conv.py's NVRTC kernel (one pass, no
padded copy) where its layouts match the op's; otherwise, and on numpy, a strided copy of the padded
input. max_pool and convolution live in conv.py.

>>> import numpy as np
>>> ops = build(np)
>>> ops["avg_pool"](np.arange(4.0).reshape(1, 1, 4), kernel_size=(2,), stride=(2,), padding=(0,),
...                 ceil_mode=False, count_include_pad=True, divisor_override=None)
array([[[0.5, 2.5]]])
"""

from __future__ import annotations

import math

import numpy as np

from ..meta import conv_out_size
from ..numpy.conv import _adaptive_windows, _avg_divisor, _pool_osz, _valid_offsets, _work_dtype
from ._util import LOW


def build(xp) -> dict:
    gpu = xp is not np
    as_strided = xp.lib.stride_tricks.as_strided
    im2col_kernel = []  # conv.py's 2-d im2col kernel, built on first use ([None] when unavailable)

    def _int_div(s, div):
        """Integer division truncating toward zero (C semantics, as PyTorch's integer avg_pool)."""
        q = xp.abs(s) // xp.abs(div)
        return xp.where((s < 0) != (div < 0), -q, q)

    def _divide(acc, isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override, cd):
        div = xp.asarray(_avg_divisor(isz, osz, kernel_size, stride, padding, count_include_pad,
                                      divisor_override, np.int64 if cd.kind == "i" else cd))
        return _int_div(acc, div) if cd.kind == "i" else acc / div

    def _avg_pool(x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        dt = x.dtype
        cd = _work_dtype(dt)
        isz = x.shape[2:]
        osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
        acc = xp.zeros(x.shape[:2] + osz, cd)
        if acc.size == 0:
            return acc.astype(dt)
        xc = x.astype(cd, copy=False)
        for _, osl, isl in _valid_offsets(isz, kernel_size, stride, (1,) * len(osz), padding, osz):
            acc[osl] += xc[isl]
        out = _divide(acc, isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override, cd)
        return out.astype(dt, copy=False)

    def _avg_pool_backward(g, *, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override):
        dt = g.dtype
        cd = _work_dtype(dt)
        isz = tuple(input_size)
        osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
        out = xp.zeros(g.shape[:2] + isz, cd)
        if g.size and out.size:
            div = xp.asarray(_avg_divisor(isz, osz, kernel_size, stride, padding, count_include_pad,
                                          divisor_override, cd))
            gs = g.astype(cd, copy=False) / div
            for _, osl, isl in _valid_offsets(isz, kernel_size, stride, (1,) * len(osz), padding, osz):
                out[isl] += gs[osl]
        return out.astype(dt, copy=False)

    def _adaptive_max_pool(x, *, output_size):
        """(values, int64 indices): window i spans [floor(i*n/o), ceil((i+1)*n/o)); windows shorter than
        the longest are read with clamped gathers (repeating a window's last element changes neither
        max nor the chosen index). A greater element or a NaN takes over, as in the reference."""
        dt = x.dtype
        cd = np.dtype(np.float32) if dt in LOW else dt
        isz = x.shape[2:]
        osz = tuple(output_size)
        nd = len(osz)
        vals = xp.empty(x.shape[:2] + osz, cd)
        idx = xp.zeros(vals.shape, np.int64)
        if vals.size == 0:
            return vals.astype(dt), idx
        xc = x.astype(cd, copy=False)
        wins = [_adaptive_windows(n, o) for n, o in zip(isz, osz)]
        kmax = tuple(int(ln.max()) for _, ln in wins)
        instr = [math.prod(isz[i + 1:]) for i in range(nd)]
        isfloat = cd.kind == "f"
        for j, k in enumerate(np.ndindex(*kmax)):
            pos = [st + np.minimum(kk, ln - 1) for kk, (st, ln) in zip(k, wins)]
            grid = np.ix_(*pos)  # host index tables (output-sized), then one gather on the device
            v = xc[(slice(None), slice(None)) + tuple(xp.asarray(g) for g in grid)]
            flat = xp.asarray(sum(p * s for p, s in zip(grid, instr)))
            if j == 0:
                vals[...] = v
                idx[...] = flat
                continue
            upd = v > vals
            if isfloat:
                upd |= xp.isnan(v)
            vals = xp.where(upd, v, vals)
            idx = xp.where(upd, flat, idx)
        return vals.astype(dt, copy=False), idx

    def _pad(x, pads):
        if not any(a or b for a, b in pads):
            return x
        shape = x.shape[:2] + tuple(n + a + b for n, (a, b) in zip(x.shape[2:], pads))
        out = xp.zeros(shape, x.dtype)
        out[(slice(None), slice(None)) + tuple(slice(a, a + n) for n, (a, _) in zip(x.shape[2:], pads))] = x
        return out

    def _kernel():
        if not im2col_kernel:
            try:
                from .conv import _im2col_kernel
                im2col_kernel.append(_im2col_kernel())
            except Exception:  # noqa: BLE001 - no kernel: the strided copy below works everywhere
                im2col_kernel.append(None)
        return im2col_kernel[0]

    def _im2col(x, *, kernel_size, dilation, padding, stride):
        """(N, C, *sp) -> (N, C*prod(kernel), L): every sliding block as a column (any dtype)."""
        N, C = x.shape[:2]
        kernel = tuple(kernel_size)
        osz = tuple(conv_out_size(n, lo, hi, k, s, d)
                    for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel, stride, dilation))
        K, L = math.prod(kernel), math.prod(osz)
        if N * C * K * L == 0:
            return xp.zeros((N, C * K, L), x.dtype)
        k2 = _kernel() if gpu and len(kernel) == 2 and x.dtype.kind in "fiub" else None
        # conv.py's kernel writes (C, KH, KW, N, OH, OW), the op's layout when N == 1; with its
        # per_sample flag (a 16th input) it writes (N, C, KH, KW, OH, OW), the op's layout for any N.
        # Other signatures, and N > 1 without the flag, take the strided copy.
        per_sample = k2 is not None and k2.nin == 16
        if k2 is not None and (per_sample or (k2.nin == 15 and N == 1)):
            col = xp.empty(((N, C) + kernel if per_sample else (C,) + kernel + (N,)) + osz, x.dtype)
            (H, W), (KH, KW), (OH, OW) = x.shape[2:], kernel, osz
            args = (xp.ascontiguousarray(x), C, H, W, KH, KW, OH, OW, N, stride[0], stride[1],
                    padding[0][0], padding[1][0], dilation[0], dilation[1])
            k2(*(args + ((1,) if per_sample else ())), col)
            return col.reshape(N, C * K, L)
        xpad = _pad(x, padding)
        sp = xpad.strides[2:]
        win = as_strided(xpad, xpad.shape[:2] + kernel + osz,
                         xpad.strides[:2] + tuple(a * d for a, d in zip(sp, dilation))
                         + tuple(a * s for a, s in zip(sp, stride)))
        return xp.ascontiguousarray(win).reshape(N, C * K, L)

    def _col2im(cols, *, output_size, kernel_size, dilation, padding, stride):
        """(N, C*prod(kernel), L) -> (N, C, *output_size): the adjoint of im2col (overlaps add up, in the
        reference's order of kernel offsets)."""
        N = cols.shape[0]
        kernel = tuple(kernel_size)
        K = math.prod(kernel)
        C = cols.shape[1] // K if K else 0
        blocks = tuple(conv_out_size(n, lo, hi, k, s, d)
                       for n, (lo, hi), k, s, d in zip(output_size, padding, kernel, stride, dilation))
        cd = _work_dtype(cols.dtype) if cols.dtype.kind != "b" else cols.dtype
        out = xp.zeros((N, C) + tuple(output_size), cd)
        if out.size and cols.size:
            flat = cols.astype(cd, copy=False).reshape((N, C, K) + blocks)
            lo = tuple(p[0] for p in padding)
            for i, bsl, osl in _valid_offsets(tuple(output_size), kernel, stride, dilation, lo, blocks):
                out[osl] += flat[:, :, i][bsl]
        return out.astype(cols.dtype, copy=False)

    return {"avg_pool": _avg_pool, "avg_pool_backward": _avg_pool_backward, "adaptive_max_pool": _adaptive_max_pool,
            "im2col": _im2col, "col2im": _col2im}
