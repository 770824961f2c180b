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
from . import casts, kernels
from . import random as cuda_random

# storage types: how 8 elements are read (16-byte loads) and written, and one converted (casts.py's
# conversions: round to nearest even, no CUDA headers)
_TWO_BYTE = r"""
__device__ inline void load8(const unsigned short* p, float* f) {
    ember_u4 u = *(const ember_u4*)p;
    unsigned w[4] = {u.x, u.y, u.z, u.w};
    for (int q = 0; q < 4; ++q) {
        f[2 * q] = ld((unsigned short)(w[q] & 0xffffu));
        f[2 * q + 1] = ld((unsigned short)(w[q] >> 16));
    }
}
__device__ inline void pack8(unsigned short* p, const unsigned short* h) {
    ember_u4 u;
    u.x = h[0] | ((unsigned)h[1] << 16); u.y = h[2] | ((unsigned)h[3] << 16);
    u.z = h[4] | ((unsigned)h[5] << 16); u.w = h[6] | ((unsigned)h[7] << 16);
    *(ember_u4*)p = u;
}
"""
_STORAGE = {
    "float32": ("float", r"""
__device__ inline float ld(float v) { return v; }
__device__ inline float sv(float v) { return v; }
__device__ inline void load8(const float* p, float* f) {
    ember_f4 a = ((const ember_f4*)p)[0], b = ((const ember_f4*)p)[1];
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w; f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
}
__device__ inline void pack8(float* p, const float* h) {
    ember_f4 a, b;
    a.x = h[0]; a.y = h[1]; a.z = h[2]; a.w = h[3]; b.x = h[4]; b.y = h[5]; b.z = h[6]; b.w = h[7];
    ((ember_f4*)p)[0] = a; ((ember_f4*)p)[1] = b;
}
"""),
    "bfloat16": ("unsigned short", "__device__ inline float ld(unsigned short v) { return bf16_in(v); }\n"
                                   "__device__ inline unsigned short sv(float f) { return bf16_out(f); }\n"
                                   + _TWO_BYTE),
    "float16": ("unsigned short", "__device__ inline float ld(unsigned short v) { return f16_in(v); }\n"
                                  "__device__ inline unsigned short sv(float f) { return f16_out(f); }\n" + _TWO_BYTE),
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
            // a chunk past the causal limit has weights 0 and drops to 0 whatever the mask: no Philox block
            if (dropped != weights && c * 8 < base + lim) ember_philox_words(key, c0, c1, c2, c, w);
            for (int k = 0; k < 8; ++k) {
                unsigned long long e = c * 8 + k;
                if (e < base || e >= end) continue;
                long long j = (long long)(e - base);
                float v = j < lim ? expf(ld(s[j]) * scale - m) / den : 0.0f;
                S wv = sv(v);
                weights[e] = wv;
                if (dropped != weights) {
                    dropped[e] = sv(ld(wv) * (ember_u24(w, k) >= p ? keep : 0.0f));
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
            out[r * n + j] = sv(ld(w[j]) * (gj - dot) * scale);
        }
    }
}
"""


# The same two kernels for rows of n <= 1024 keys with n % 8 == 0 (attention's usual shapes): a warp per row,
# each lane holding up to 4 chunks of 8 in registers (16-byte loads and stores, warp-shuffle reductions, no
# block barriers), and causal rows read only up to their last key. EMBER_WARP is 32 on the GPU (the host
# compiler's test builds it with 1).
_WARP_KERNELS = r"""
#ifndef EMBER_WARP
#define EMBER_WARP 32
#endif
#define EMBER_CHUNKS (128 / EMBER_WARP)
__device__ inline float warp_max(float v) {
    for (int o = EMBER_WARP / 2; o > 0; o >>= 1) v = nmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ inline float warp_sum(float v) {
    for (int o = EMBER_WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void ember_attention_weights_warp(
        const S* __restrict__ scores, S* __restrict__ weights, S* __restrict__ dropped,
        long long rows, long long n, long long L, float scale, int causal, float p, float keep,
        unsigned long long key, unsigned long long c0, unsigned long long c1, unsigned long long c2,
        const unsigned long long* st) {
    if (st) { ember_shift(st, c0, c1, c2); key = st[0]; }
    const int lane = threadIdx.x % EMBER_WARP, per_block = blockDim.x / EMBER_WARP;
    const long long chunks = n / 8, warps = (long long)gridDim.x * per_block;
    for (long long r = (long long)blockIdx.x * per_block + threadIdx.x / EMBER_WARP; r < rows; r += warps) {
        const long long lim = causal ? ((r % L) + 1 < n ? (r % L) + 1 : n) : n;
        float v[EMBER_CHUNKS][8];
        float m = -INFINITY;
        for (int k = 0; k < EMBER_CHUNKS; ++k) {
            long long c = lane + (long long)k * EMBER_WARP;
            if (c < chunks && c * 8 < lim) {
                load8(scores + r * n + c * 8, v[k]);
                for (int q = 0; q < 8; ++q) {
                    v[k][q] = c * 8 + q < lim ? v[k][q] * scale : -INFINITY;
                    m = nmax(m, v[k][q]);
                }
            } else {
                for (int q = 0; q < 8; ++q) v[k][q] = -INFINITY;
            }
        }
        m = warp_max(m);
        if (!isfinite(m)) m = 0.0f;  // a row of -inf: exp(-inf) = 0 (then weights 0), not NaN
        float sum = 0.0f;
        for (int k = 0; k < EMBER_CHUNKS; ++k)
            for (int q = 0; q < 8; ++q) { v[k][q] = expf(v[k][q] - m); sum += v[k][q]; }
        float den = warp_sum(sum);
        if (den == 0.0f) den = 1.0f;
        for (int k = 0; k < EMBER_CHUNKS; ++k) {
            long long c = lane + (long long)k * EMBER_WARP;
            if (c >= chunks) break;
            S wv[8], dv[8];
            for (int q = 0; q < 8; ++q) wv[q] = sv(v[k][q] / den);
            pack8(weights + r * n + c * 8, wv);
            if (dropped != weights && c * 8 >= lim) {  // past the causal limit: weights 0, dropped 0
                for (int q = 0; q < 8; ++q) dv[q] = wv[q];
                pack8(dropped + r * n + c * 8, dv);
            } else if (dropped != weights) {
                unsigned long long w[4];
                ember_philox_words(key, c0, c1, c2, (unsigned long long)(r * chunks + c), w);
                for (int q = 0; q < 8; ++q) dv[q] = sv(ld(wv[q]) * (ember_u24(w, q) >= p ? keep : 0.0f));
                pack8(dropped + r * n + c * 8, dv);
            }
        }
    }
}

extern "C" __global__ void ember_attention_weights_backward_warp(
        const S* __restrict__ wts, const S* __restrict__ dropped, const S* __restrict__ grad, S* __restrict__ out,
        long long rows, long long n, float scale, float keep, int dropout) {
    const int lane = threadIdx.x % EMBER_WARP, per_block = blockDim.x / EMBER_WARP;
    const long long chunks = n / 8, warps = (long long)gridDim.x * per_block;
    for (long long r = (long long)blockIdx.x * per_block + threadIdx.x / EMBER_WARP; r < rows; r += warps) {
        float d[EMBER_CHUNKS][8], g[EMBER_CHUNKS][8];
        float dot = 0.0f;
        for (int k = 0; k < EMBER_CHUNKS; ++k) {
            long long c = lane + (long long)k * EMBER_WARP;
            if (c >= chunks) break;
            load8(dropped + r * n + c * 8, d[k]);
            load8(grad + r * n + c * 8, g[k]);
            for (int q = 0; q < 8; ++q) dot += d[k][q] * g[k][q];
        }
        dot = warp_sum(dot);
        for (int k = 0; k < EMBER_CHUNKS; ++k) {
            long long c = lane + (long long)k * EMBER_WARP;
            if (c >= chunks) break;
            float w[8];
            S o[8];
            load8(wts + r * n + c * 8, w);
            for (int q = 0; q < 8; ++q) {
                float gj = g[k][q];
                if (dropout) gj = d[k][q] != 0.0f ? gj * keep : 0.0f;
                o[q] = sv(w[q] * (gj - dot) * scale);
            }
            pack8(out + r * n + c * 8, o);
        }
    }
}
"""


def typed_prefix(dtype_name: str) -> str:
    """The head of a row/Philox kernel source for storage ``dtype_name``: ``typedef ... S``, the 16-bit
    conversions, ``ld``/``sv``/``load8``/``pack8`` and the Philox helpers (also dropout.py's)."""
    ctype, convert = _STORAGE[dtype_name]  # the kernels are written for the storage type S
    return (f"#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\ntypedef {ctype} S;\n"
            f"{casts._CONVERT}{convert}" + cuda_random._WORDS_FN + cuda_random._UNIT_FN)


def source(dtype_name: str) -> str:
    """The CUDA source of the kernels for scores stored as ``dtype_name`` (float32, bfloat16, float16)."""
    return typed_prefix(dtype_name) + _REDUCE + _KERNELS + _WARP_KERNELS


_built: dict = {}


def typed_functions(label: str, dtype_name: str, source_fn, names: tuple):
    """The RawKernels ``names`` of ``source_fn(dtype_name)``, built once per (label, storage dtype); None when
    they can't be built (reported once: the caller takes its array-module code)."""
    key = (label, dtype_name)
    got = _built.get(key, False)
    if got is not False:
        return got
    got = None
    if dtype_name in _STORAGE:
        try:
            import cupy
            mod = cupy.RawModule(code=source_fn(dtype_name), options=("-std=c++17",))
            got = tuple(mod.get_function(n) for n in names)
        except Exception as e:  # noqa: BLE001 - the array-module code covers every case
            warnings.warn(f"ember's CUDA {label} kernels ({dtype_name}) could not be built, using the slower path: "
                          f"{e}", RuntimeWarning, stacklevel=3)
    _built[key] = got
    return got


def _get(dtype_name: str):
    """(forward, backward, warp forward, warp backward) RawKernels for a storage dtype, or None."""
    return typed_functions("attention-weights", dtype_name, source,
                           tuple(f"ember_attention_weights{k}" for k in ("", "_backward", "_warp", "_backward_warp")))


def _grid(rows: int) -> int:
    return max(1, min(rows, 1 << 20))


_WARP_ROWS = 4  # rows (warps) a block of the warp-per-row kernels


def _launch(n: int, rows: int, arrays) -> tuple:
    """(warp-per-row kernels?, grid, block) for ``rows`` rows of n keys: the warp kernels take rows of
    8..1024 keys in multiples of 8 in 16-byte aligned arrays, the block-per-row kernels the rest."""
    if n % 8 == 0 and 8 <= n <= 1024 and all(a.data.ptr % 16 == 0 for a in arrays):
        return True, (_grid(-(-rows // _WARP_ROWS)),), (32 * _WARP_ROWS,)
    return False, (_grid(rows),), (kernels.threads_for(n, 8, 256),)


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
        st = cuda_random._Words._graph_state(seed, offset) if p > 0.0 else None
        keep = reference.keep_scale(s.dtype, p) if p > 0.0 else 1.0
        warp, grid, block = _launch(n, rows, (s, w, d))
        ks[2 if warp else 0](grid, block, (
            s, w, d, np.int64(rows), np.int64(n), np.int64(L), np.float32(scale), np.int32(bool(is_causal)),
            np.float32(p), np.float32(keep), np.uint64(seed & cuda_random._MASK64), *cuda_random.kernel_counter(offset),
            np.uint64(0) if st is None else st))
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
        warp, grid, block = _launch(n, rows, (w, d, g, out))
        ks[3 if warp else 1](grid, block, (w, d, g, out, np.int64(rows), np.int64(n), np.float32(scale),
                                           np.float32(keep), np.int32(p > 0.0)))
        return out

    return {"attention_weights": attention_weights, "attention_weights_backward": attention_weights_backward}


__all__ = ["build", "source"]
