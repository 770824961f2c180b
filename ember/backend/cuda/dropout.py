"""``dropout`` on the GPU in one pass (see ember/backend/numpy/dropout.py for the op's definition).

Composed from CuPy ops, dropout is four passes over a float32 mask: Philox uniforms, ``u >= p``, the cast to
x's dtype, the scale, then the product with x. Here a thread takes 8 elements: one Philox block of the
``rand`` stream (the composition's numbers), x read and the result and the mask written 16 bytes at a time
where the arrays allow. float32, float16 and bfloat16 (float32 math, one rounding); float64 and a kernel that
fails to build take the reference code. Inside a CUDA graph capture the kernel reads the Philox key and
counter shift from the capture's device array, so each replay draws a fresh mask (random.py).
"""

from __future__ import annotations

import numpy as np

from ..numpy import dropout as reference
from . import attention
from . import random as cuda_random

_KERNEL = r"""
extern "C" __global__ void ember_dropout(const S* __restrict__ x, S* __restrict__ out, S* __restrict__ mask,
                                         unsigned long long n, float p, float keep, int vec,
                                         unsigned long long key, unsigned long long c0, unsigned long long c1,
                                         unsigned long long c2, const unsigned long long* st) {
    if (st) { ember_shift(st, c0, c1, c2); key = st[0]; }
    unsigned long long c = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;  // elements 8c .. 8c+7
    if (c * 8 >= n) return;
    unsigned long long w[4];
    ember_philox_words(key, c0, c1, c2, c, w);
    const S ks = sv(keep), zero = sv(0.0f);
    const float kf = ld(ks);
    float f[8];
    S o[8], m[8];
    const bool whole = vec && c * 8 + 8 <= n;
    if (whole) load8(x + c * 8, f);
    for (int q = 0; q < 8; ++q) {
        unsigned long long e = c * 8 + q;
        if (!whole && e >= n) break;
        bool kept = ember_u24(w, q) >= p;
        m[q] = kept ? ks : zero;
        o[q] = sv((whole ? f[q] : ld(x[e])) * (kept ? kf : 0.0f));
        if (!whole) { out[e] = o[q]; mask[e] = m[q]; }
    }
    if (whole) { pack8(out + c * 8, o); pack8(mask + c * 8, m); }
}
"""


def source(dtype_name: str) -> str:
    """The CUDA source of the kernel for x stored as ``dtype_name`` (float32, bfloat16, float16)."""
    return attention.typed_prefix(dtype_name) + _KERNEL


def _get(dtype_name: str):
    got = attention.typed_functions("dropout", dtype_name, source, ("ember_dropout",))
    return None if got is None else got[0]


def build(xp) -> dict:
    gpu = xp is not np
    words = cuda_random._Words(xp)

    def dropout(x, p, seed, offset):
        p = float(p)
        kern = _get(x.dtype.name) if gpu and x.size else None
        if kern is None or offset >> 192:
            return reference.dropped_of(xp, x, p, lambda n, npdtype: cuda_random.uniform(xp, words, seed, offset, n,
                                                                                          npdtype))
        x = xp.ascontiguousarray(x)
        out, mask = xp.empty_like(x), xp.empty_like(x)
        st = cuda_random._Words._graph_state(seed, offset)
        n = x.size
        vec = all(a.data.ptr % 16 == 0 for a in (x, out, mask))
        kern((((n + 7) // 8 + 255) // 256,), (256,), (
            x, out, mask, np.uint64(n), np.float32(p), np.float32(reference.keep_scale(x.dtype, p)), np.int32(vec),
            np.uint64(seed & cuda_random._MASK64), *cuda_random.kernel_counter(offset),
            np.uint64(0) if st is None else st))
        return out, mask

    return {"dropout": dropout}
