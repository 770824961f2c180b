"""``attention_weights`` and its backward on the GPU: one row kernel each (see ember/backend/numpy/attention.py
for the op's definition).

Attention with dropout composed from CuPy ops is ~20 passes over the (batch, heads, L, S) scores, most of them
in float32 behind bfloat16 tensors; here the forward reads the scores once into a block per row (max and sum
reductions, then the weights and the dropped weights written with the dropout mask drawn in the kernel from
the ``rand`` stream's Philox counters), and the backward reads the weights, the dropped weights and the
gradient once. float32, float16 and bfloat16 scores (float32 math); float64, or a kernel that fails to build,
takes the array-module code of the numpy backend. Inside a CUDA graph capture the kernel reads the Philox key
and counter shift from the capture's device array, so each replay draws fresh masks (random.py).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..numpy import attention as reference
from . import random as cuda_random

# storage types: how a 16-bit float is read and written (bits, no CUDA headers: round to nearest even)
_STORAGE = {
    "float32": ("float", "__device__ inline float ld(float v) { return v; }\n"
                         "__device__ inline float sv(float v) { return v; }\n"),
    "bfloat16": ("unsigned short",
                 "__device__ inline float ld(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }\n"
                 "__device__ inline unsigned short sv(float f) {\n"
                 "    unsigned u = __float_as_uint(f);\n"
                 "    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN stays NaN\n"
                 "    u += 0x7fffu + ((u >> 16) & 1u);\n"
                 "    return (unsigned short)(u >> 16);\n"
                 "}\n"),
    "float16": ("unsigned short",
                "__device__ inline float ld(unsigned short v) {\n"
                "    float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(v)); return f; }\n"
                "__device__ inline unsigned short sv(float f) {\n"
                "    unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"),
}

_REDUCE = r"""
// max that propagates NaN (a NaN score gives a NaN row, as the composed softmax)
__device__ inline float nmax(float a, float b) { return (a != a || b != b) ? (a + b) : (a > b ? a : b); }
__device__ float block_max(float v, float* sh) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v = nmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize, nw = (blockDim.x + warpSize - 1) / warpSize;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < nw ? sh[lane] : sh[0];
        for (int o = warpSize / 2; o > 0; o >>= 1) v = nmax(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}
__device__ float block_sum(float v, float* sh) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize, nw = (blockDim.x + warpSize - 1) / warpSize;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < nw ? sh[lane] : 0.0f;
        for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}
"""

_KERNELS = r"""
// One block per row of the scores (rows of n keys, L queries per batch entry). Keys j > i of query i are
// masked when causal. Weights and dropped weights are written in chunks of 8 elements at flat positions
// 8c..8c+7, so that one Philox block (4 words = 8 uniforms, the rand stream's numbering) serves a chunk.
extern "C" __global__ void ember_attention_weights(
        const S* __restrict__ scores, S* __restrict__ weights, S* __restrict__ dropped,
        long long rows, long long n, long long L, float scale, int causal, float p, float keep,
        unsigned long long key, unsigned long long c0, unsigned long long c1, unsigned long long c2,
        const unsigned long long* st) {
    __shared__ float sh[32];
    if (st) { ember_shift(st, c0, c1, c2); key = st[0]; }
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const S* s = scores + r * n;
        long long lim = causal ? ((r % L) + 1 < n ? (r % L) + 1 : n) : n;
        float m = -INFINITY;
        for (long long j = threadIdx.x; j < lim; j += blockDim.x) m = nmax(m, ld(s[j]) * scale);
        m = block_max(m, sh);
        if (!isfinite(m)) m = 0.0f;  // a row of -inf: exp(-inf) = 0 (then weights 0), not NaN
        float sum = 0.0f;
        for (long long j = threadIdx.x; j < lim; j += blockDim.x) sum += expf(ld(s[j]) * scale - m);
        float den = block_sum(sum, sh);
        if (den == 0.0f) den = 1.0f;
        unsigned long long base = (unsigned long long)r * n, end = base + n;
        for (unsigned long long c = base / 8 + threadIdx.x; c * 8 < end; c += blockDim.x) {
            unsigned long long w[4] = {0, 0, 0, 0};
            if (dropped != weights) ember_philox_words(key, c0, c1, c2, c, w);
            for (int k = 0; k < 8; ++k) {
                unsigned long long e = c * 8 + k;
                if (e < base || e >= end) continue;
                long long j = (long long)(e - base);
                float v = j < lim ? expf(ld(s[j]) * scale - m) / den : 0.0f;
                S wv = st_(v);
                weights[e] = wv;
                if (dropped != weights) {
                    unsigned int half = (unsigned int)(w[k / 2] >> (32 * (k % 2)));
                    float u = (float)(half >> 8) * 5.9604644775390625e-08f;  // top 24 bits * 2^-24
                    dropped[e] = st_(ld(wv) * (u >= p ? keep : 0.0f));
                }
            }
        }
    }
}

// grad_scores = w * (g' - sum_j d_j g_j) * scale, g' = g * keep where d != 0 (else 0) with dropout, g without
extern "C" __global__ void ember_attention_weights_backward(
        const S* __restrict__ wts, const S* __restrict__ dropped, const S* __restrict__ grad, S* __restrict__ out,
        long long rows, long long n, float scale, float keep, int dropout) {
    __shared__ float sh[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const S* w = wts + r * n;
        const S* d = dropped + r * n;
        const S* g = grad + r * n;
        float dot = 0.0f;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) dot += ld(d[j]) * ld(g[j]);
        dot = block_sum(dot, sh);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            float gj = ld(g[j]);
            if (dropout) gj = ld(d[j]) != 0.0f ? gj * keep : 0.0f;
            out[r * n + j] = st_(ld(w[j]) * (gj - dot) * scale);
        }
    }
}
"""


def source(dtype_name: str) -> str:
    """The CUDA source of both kernels for scores stored as ``dtype_name`` (float32, bfloat16, float16)."""
    ctype, convert = _STORAGE[dtype_name]
    body = _KERNELS.replace("S*", f"{ctype}*").replace("S wv", f"{ctype} wv").replace("st_(", "sv(")
    return (f"#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n{convert}"
            + cuda_random._WORDS_FN + cuda_random._UNIT_FN + _REDUCE + body)


_kernels: dict = {}


def _get(dtype_name: str):
    """(forward, backward) RawKernels for a storage dtype, or None when they can't be built (reported once)."""
    got = _kernels.get(dtype_name, False)
    if got is not False:
        return got
    got = None
    if dtype_name in _STORAGE:
        try:
            import cupy
            mod = cupy.RawModule(code=source(dtype_name), options=("-std=c++17",))
            got = (mod.get_function("ember_attention_weights"), mod.get_function("ember_attention_weights_backward"))
        except Exception as e:  # noqa: BLE001 - the array-module code covers every case
            warnings.warn(f"ember's CUDA attention-weights kernels ({dtype_name}) could not be built, using the "
                          f"slower path: {e}", RuntimeWarning, stacklevel=3)
    _kernels[dtype_name] = got
    return got


def _threads(n: int) -> int:
    t = 32
    while t < 256 and t * 8 < n:
        t *= 2
    return t


def _grid(rows: int) -> int:
    return max(1, min(rows, 1 << 20))


def build(xp) -> dict:
    gpu = xp is not np
    words = cuda_random._Words(xp)

    def uniform_for(seed, offset):
        return lambda n, npdtype: cuda_random.uniform(xp, words, seed, offset, n, npdtype)

    def _kernels_for(x):
        if not gpu or x.size == 0 or x.ndim < 2:
            return None
        return _get(x.dtype.name)

    def attention_weights(scores, scale, is_causal, dropout_p, seed, offset):
        scale, p = float(scale), float(dropout_p)
        ks = _kernels_for(scores)
        if ks is None or (p > 0.0 and offset >> 192):
            return reference.weights_of(xp, scores, scale, bool(is_causal), p, uniform_for(seed, offset))
        s = xp.ascontiguousarray(scores)
        n, L = s.shape[-1], s.shape[-2]
        rows = s.size // n
        w = xp.empty_like(s)
        d = xp.empty_like(s) if p > 0.0 else w
        mask64 = (1 << 64) - 1
        st = cuda_random._Words._graph_state(seed, offset) if p > 0.0 else None
        keep = reference.keep_scale(s.dtype, p) if p > 0.0 else 1.0
        ks[0]((_grid(rows),), (_threads(n),),
              (s, w, d, np.int64(rows), np.int64(n), np.int64(L), np.float32(scale), np.int32(bool(is_causal)),
               np.float32(p), np.float32(keep), np.uint64(seed & mask64), np.uint64(offset & mask64),
               np.uint64((offset >> 64) & mask64), np.uint64((offset >> 128) & mask64), np.uint64(0) if st is None else st))
        return w, d

    def attention_weights_backward(weights, dropped, grad, scale, dropout_p):
        scale, p = float(scale), float(dropout_p)
        ks = _kernels_for(weights)
        if ks is None or grad.dtype != weights.dtype or dropped.dtype != weights.dtype:
            return reference.backward_of(xp, weights, dropped, grad, scale, p)
        w, d, g = (xp.ascontiguousarray(a) for a in (weights, dropped, grad))
        n = w.shape[-1]
        rows = w.size // n
        out = xp.empty_like(w)
        keep = reference.keep_scale(w.dtype, p) if p > 0.0 else 1.0
        ks[1]((_grid(rows),), (_threads(n),),
              (w, d, g, out, np.int64(rows), np.int64(n), np.float32(scale), np.float32(keep), np.int32(p > 0.0)))
        return out

    return {"attention_weights": attention_weights, "attention_weights_backward": attention_weights_backward}


__all__ = ["build", "source"]
