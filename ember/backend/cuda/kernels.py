"""Hand-written CUDA kernels of the CUDA backend, for ops that CuPy would run as several passes.

* row kernels (one block per row, warp shuffles and shared memory reduce): softmax and log_softmax over
  the last dim, layer norm's forward (norm_affine over trailing dims);
* batch norm's forward and backward: a per-channel partial-sums pass and one streaming pass each;
* elementwise kernels of convolution and pooling: col2im as a gather, 2-d max pooling and its backward;
* ``gemm_batched``: a batched GEMM straight through cuBLAS (weights shared by the batch, TF32 honoured).

Compiled by NVRTC through CuPy on first use, once per process. Row and batch-norm kernels are float32 and
float64 only (16-bit inputs are upcast by the callers). ``get(name, ctype)`` and ``elementwise(which)``
return None when a kernel cannot be built, and the callers fall back to their array-module code.
"""

from __future__ import annotations

import numpy as np

_SOURCE = r"""
__device__ inline float e_neg_inf(float) { return __int_as_float(0xff800000); }
__device__ inline double e_neg_inf(double) { return __longlong_as_double(0xfff0000000000000LL); }
__device__ inline float e_exp(float v) { return expf(v); }
__device__ inline double e_exp(double v) { return exp(v); }
__device__ inline float e_log(float v) { return logf(v); }
__device__ inline double e_log(double v) { return log(v); }
__device__ inline float e_rsqrt(float v) { return 1.0f / sqrtf(v); }
__device__ inline double e_rsqrt(double v) { return 1.0 / sqrt(v); }
__device__ inline bool e_finite(float v) { return isfinite(v); }
__device__ inline bool e_finite(double v) { return isfinite(v); }
// max that propagates NaN (as torch's softmax: a NaN row gives NaNs)
template <typename T> __device__ T nmax(T a, T b) { return (a != a || b != b) ? (a + b) : (a > b ? a : b); }
template <typename T> __device__ T warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = nmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <typename T> __device__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename T> __device__ T block_max(T v, T* sh) {
    v = warp_max(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : sh[0];
    if (wid == 0) { v = warp_max(v); if (lane == 0) sh[0] = v; }
    __syncthreads();
    return sh[0];
}
template <typename T> __device__ T block_sum(T v, T* sh) {
    v = warp_sum(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : (T)0;
    if (wid == 0) { v = warp_sum(v); if (lane == 0) sh[0] = v; }
    __syncthreads();
    return sh[0];
}

extern "C" __global__ void ember_softmax_CT(const CT* __restrict__ x, CT* __restrict__ y, long long cols, int logmode) {
    __shared__ CT sh[32];
    const CT* xr = x + (long long)blockIdx.x * cols;
    CT* yr = y + (long long)blockIdx.x * cols;
    CT m = e_neg_inf((CT)0);
    if (logmode) {
        // one read for max and sum (online: the sum rescaled when the max grows), one for the result:
        // cross-entropy's rows of a vocabulary don't stay in cache between passes
        CT s = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            CT v = xr[j];
            if (v > m) { s = s * e_exp(m - v) + (CT)1; m = v; }
            else if (v != e_neg_inf((CT)0)) s += e_exp(v - m);  // -inf adds nothing (and no -inf - -inf)
        }
        CT mt = m;
        CT mb = block_max(m, sh);
        CT st = s == (CT)0 ? (CT)0 : s * e_exp(mt - mb);
        CT ls = e_log(block_sum(st, sh));
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - mb - ls;
        return;
    }
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = nmax(m, xr[j]);
    m = block_max(m, sh);
    CT s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += e_exp(xr[j] - m);
    s = block_sum(s, sh);
    CT inv = (CT)1 / s;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = e_exp(xr[j] - m) * inv;
}

// log_softmax's gradient per row: gx = g - exp(y) * sum(g)
extern "C" __global__ void ember_log_softmax_backward_CT(const CT* __restrict__ y, const CT* __restrict__ g,
                                                         CT* __restrict__ gx, long long cols) {
    __shared__ CT sh[32];
    const long long off = (long long)blockIdx.x * cols;
    CT s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += g[off + j];
    s = block_sum(s, sh);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) gx[off + j] = g[off + j] - e_exp(y[off + j]) * s;
}

// layer norm's input gradient per row (statistics recomputed from x): gx = r (gxhat - mean(gxhat) - xhat
// mean(gxhat xhat)) with gxhat = g w; also g xhat per element (the weight's gradient summed over rows)
extern "C" __global__ void ember_layernorm_backward_CT(const CT* __restrict__ x, const CT* __restrict__ w,
                                                       const CT* __restrict__ g, CT* __restrict__ gx,
                                                       CT* __restrict__ gxh, long long cols, CT eps, int has_w) {
    __shared__ CT sh[32];
    const long long off = (long long)blockIdx.x * cols;
    const CT* xr = x + off;
    const CT* gr = g + off;
    CT s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    CT m = block_sum(s, sh) / (CT)cols;
    CT q = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) { CT d = xr[j] - m; q += d * d; }
    CT r = e_rsqrt(block_sum(q, sh) / (CT)cols + eps);
    CT sa = 0, sb = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        CT gh = has_w ? gr[j] * w[j] : gr[j];
        sa += gh;
        sb += gh * (xr[j] - m) * r;
    }
    CT a = block_sum(sa, sh) / (CT)cols;
    CT b = block_sum(sb, sh) / (CT)cols;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        CT xh = (xr[j] - m) * r;
        CT gh = has_w ? gr[j] * w[j] : gr[j];
        gx[off + j] = r * (gh - a - xh * b);
        if (has_w) gxh[off + j] = gr[j] * xh;
    }
}

extern "C" __global__ void ember_layernorm_CT(const CT* __restrict__ x, const CT* __restrict__ w,
                                              const CT* __restrict__ b, CT* __restrict__ y, CT* __restrict__ mean,
                                              CT* __restrict__ var, long long cols, CT eps, int has_w,
                                              int has_b) {
    __shared__ CT sh[32];
    const CT* xr = x + (long long)blockIdx.x * cols;
    CT* yr = y + (long long)blockIdx.x * cols;
    CT s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    CT m = block_sum(s, sh) / (CT)cols;
    CT q = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) { CT d = xr[j] - m; q += d * d; }
    CT v = block_sum(q, sh) / (CT)cols;
    CT r = e_rsqrt(v + eps);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        CT t = (xr[j] - m) * r;
        if (has_w) t *= w[j];
        if (has_b) t += b[j];
        yr[j] = t;
    }
    if (threadIdx.x == 0) { mean[blockIdx.x] = m; var[blockIdx.x] = v; }
}

// Batch norm over a C-contiguous (N, C, L) tensor in two launches per direction. Pass 1 (bnstats): block
// (s, c) sums chunk s of channel c's N*L elements into part[c][s][0..3]: sum d, sum d^2 and, for the backward,
// sum g, sum g*d, where d = x - K and K = x[0, c, 0] is a sample of the channel (the shift keeps one-pass
// variance accurate when the mean is large against the spread). Pass 2 (bnfwd / bnbwd): every block first
// adds up its channel's S partials (S <= blockDim), then streams its chunk once. Chunk indices are 32-bit
// (the caller checks N*L < 2^31).
extern "C" __global__ void ember_bnstats_CT(const CT* __restrict__ x, const CT* __restrict__ g, CT* __restrict__ part,
                                           int N, int C, int L, int chunk, int with_g) {
    __shared__ CT sh[32];
    int s = blockIdx.x, c = blockIdx.y, S = gridDim.x;
    unsigned int total = (unsigned int)N * (unsigned int)L;
    unsigned int start = (unsigned int)s * (unsigned int)chunk;
    unsigned int end = min(start + (unsigned int)chunk, total);
    CT K = x[(long long)c * L];
    CT s1 = 0, s2 = 0, t1 = 0, t2 = 0;
    for (unsigned int k = start + threadIdx.x; k < end; k += blockDim.x) {
        unsigned int n = k / (unsigned int)L, l = k - n * (unsigned int)L;
        long long at = ((long long)n * C + c) * L + l;
        CT d = x[at] - K;
        s1 += d;
        s2 += d * d;
        if (with_g) { CT gv = g[at]; t1 += gv; t2 += gv * d; }
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    if (with_g) { t1 = block_sum(t1, sh); t2 = block_sum(t2, sh); }
    if (threadIdx.x == 0) {
        CT* p = part + ((long long)c * S + s) * 4;
        p[0] = s1; p[1] = s2; p[2] = t1; p[3] = t2;
    }
}

__device__ inline void bn_totals(const CT* __restrict__ part, int c, int S, int nsums, CT* tot, CT* sh) {
    for (int j = 0; j < nsums; ++j) {
        CT v = 0;
        for (int q = threadIdx.x; q < S; q += blockDim.x) v += part[((long long)c * S + q) * 4 + j];
        tot[j] = block_sum(v, sh);
    }
}

extern "C" __global__ void ember_bnfwd_CT(const CT* __restrict__ x, const CT* __restrict__ part,
                                         const CT* __restrict__ w, const CT* __restrict__ b, CT* __restrict__ y,
                                         CT* __restrict__ mean, CT* __restrict__ var, int N, int C, int L, int chunk,
                                         CT eps, int has_w, int has_b, CT* __restrict__ rmean, CT* __restrict__ rvar,
                                         double keep, double take_m, double take_v, int has_running,
                                         long long* __restrict__ counter) {
    __shared__ CT sh[32];
    int s = blockIdx.x, c = blockIdx.y, S = gridDim.x;
    CT tot[2];
    bn_totals(part, c, S, 2, tot, sh);
    unsigned int total = (unsigned int)N * (unsigned int)L;
    CT cnt = (CT)total;
    CT K = x[(long long)c * L];
    CT dm = tot[0] / cnt;
    CT v = tot[1] / cnt - dm * dm;
    if (v < (CT)0) v = 0;
    CT m = K + dm;
    CT r = e_rsqrt(v + eps);
    CT a = has_w ? r * w[c] : r;
    CT bb = has_b ? b[c] : (CT)0;
    if (s == 0 && threadIdx.x == 0) {
        mean[c] = m; var[c] = v;
        if (has_running) {  // running statistics move toward the batch's (the variance unbiased by take_v)
            rmean[c] = (CT)(keep * (double)rmean[c] + take_m * (double)m);
            rvar[c] = (CT)(keep * (double)rvar[c] + take_v * (double)v);
        }
        if (counter != nullptr && c == 0) *counter += 1;  // the module's num_batches_tracked
    }
    unsigned int start = (unsigned int)s * (unsigned int)chunk;
    unsigned int end = min(start + (unsigned int)chunk, total);
    for (unsigned int k = start + threadIdx.x; k < end; k += blockDim.x) {
        unsigned int n = k / (unsigned int)L, l = k - n * (unsigned int)L;
        long long at = ((long long)n * C + c) * L + l;
        y[at] = (x[at] - m) * a + bb;
    }
}

// gx = r * w * (g - mean(g) - xhat * mean(g * xhat)); gw = sum(g * xhat); gb = sum(g)
extern "C" __global__ void ember_bnbwd_CT(const CT* __restrict__ x, const CT* __restrict__ g,
                                         const CT* __restrict__ part, const CT* __restrict__ w, CT* __restrict__ gx,
                                         CT* __restrict__ gw, CT* __restrict__ gb, int N, int C, int L, int chunk,
                                         CT eps, int has_w) {
    __shared__ CT sh[32];
    int s = blockIdx.x, c = blockIdx.y, S = gridDim.x;
    CT tot[4];
    bn_totals(part, c, S, 4, tot, sh);
    unsigned int total = (unsigned int)N * (unsigned int)L;
    CT cnt = (CT)total;
    CT K = x[(long long)c * L];
    CT dm = tot[0] / cnt;
    CT v = tot[1] / cnt - dm * dm;
    if (v < (CT)0) v = 0;
    CT m = K + dm;
    CT r = e_rsqrt(v + eps);
    CT sgx = r * (tot[3] - dm * tot[2]);   // sum g * (x - mean) * r
    CT k1 = has_w ? r * w[c] : r;
    CT mg = tot[2] / cnt, mx = sgx / cnt * r;
    if (s == 0 && threadIdx.x == 0) { gw[c] = sgx; gb[c] = tot[2]; }
    unsigned int start = (unsigned int)s * (unsigned int)chunk;
    unsigned int end = min(start + (unsigned int)chunk, total);
    for (unsigned int k = start + threadIdx.x; k < end; k += blockDim.x) {
        unsigned int n = k / (unsigned int)L, l = k - n * (unsigned int)L;
        long long at = ((long long)n * C + c) * L + l;
        gx[at] = k1 * (g[at] - mg - (x[at] - m) * mx);
    }
}
"""

# ---- convolution's column kernels (RawModule with templates) ------------------------------------------------
# A 3-d grid: blockIdx.z is the sample, blockIdx.y a column row (c, kh, kw) for im2col or an output channel
# for col2im, threads run over the spatial positions: one 32-bit division per element (an ElementwiseKernel
# decodes six 64-bit indices per element, which costs more than the memory traffic). im2col moves elements as
# raw bytes (U: an unsigned integer of the element's size), so one kernel serves every dtype, padding taps
# being zero bits. col2im is a gather: each output element adds up the column entries that land on it,
# entry (n, c, kernel offset q, iy, ix) at n*sN + c*sC + q*sK + iy*W + ix, so both column layouts the backend
# builds, (N, C*K, L) and (C, K, N, L), are read in place, and the crop of conv_transpose is free.
_CONV_SOURCE = r"""
template <typename U>
__global__ void ember_im2col(const U* __restrict__ x, U* __restrict__ col, int C, int H, int W, int KH, int KW,
                             int OH, int OW, int N, int sh, int sw, int ph, int pw, int dh, int dw, int per_sample) {
    int L = OH * OW;
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= L) return;
    int ck = blockIdx.y, n = blockIdx.z;
    int kw = ck % KW, t = ck / KW;
    int kh = t % KH, c = t / KH;
    int oh = l / OW, ow = l - oh * OW;
    int y = oh * sh - ph + kh * dh, z = ow * sw - pw + kw * dw;
    U v = 0;
    if (y >= 0 && y < H && z >= 0 && z < W) v = x[(((long long)n * C + c) * H + y) * W + z];
    long long CK = (long long)C * KH * KW;
    col[per_sample ? ((long long)n * CK + ck) * L + l : ((long long)ck * N + n) * L + l] = v;
}

template <typename T, typename A>
__global__ void ember_col2im(const T* __restrict__ cols, T* __restrict__ out, int CO, int OH, int OW, int H, int W,
                             int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw, long long sN,
                             long long sC, long long sK) {
    int OL = OH * OW;
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= OL) return;
    int c = blockIdx.y, n = blockIdx.z;
    int oy = l / OW, ox = l - oy * OW;
    int fy = oy + ph, fx = ox + pw;
    const T* base = cols + (long long)n * sN + (long long)c * sC;
    A s = 0;
    for (int kh = 0; kh < KH; ++kh) {
        int ty = fy - kh * dh;
        if (ty < 0) break;
        int iy = ty;
        if (sh != 1) { if (ty % sh) continue; iy = ty / sh; }
        if (iy >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            int tx = fx - kw * dw;
            if (tx < 0) break;
            int ix = tx;
            if (sw != 1) { if (tx % sw) continue; ix = tx / sw; }
            if (ix >= W) continue;
            s += (A)base[(long long)(kh * KW + kw) * sK + (long long)iy * W + ix];
        }
    }
    out[((long long)n * CO + c) * OL + l] = (T)s;
}
"""
_UINT = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_COL2IM = {np.dtype(np.float32): "float,float", np.dtype(np.float64): "double,double"}
_conv_module: list = []


def conv_kernel(which: str, dtype):
    """'im2col' (any dtype, by element size) or 'col2im' (float32/float64) as a compiled RawKernel, or None."""
    if which == "im2col":
        name = f"ember_im2col<{_UINT[dtype.itemsize]}>" if dtype.itemsize in _UINT else None
    else:
        pair = _COL2IM.get(dtype)
        name = None if pair is None else f"ember_col2im<{pair}>"
    if name is None:
        return None
    if not _conv_module:
        try:
            import cupy
            names = [f"ember_im2col<{u}>" for u in _UINT.values()] + [f"ember_col2im<{t}>" for t in _COL2IM.values()]
            _conv_module.append(cupy.RawModule(code=_CONV_SOURCE, options=("-std=c++17",), name_expressions=names))
        except Exception as e:  # noqa: BLE001 - the callers' generic paths cover every case
            import warnings
            warnings.warn(f"ember's CUDA convolution kernels could not be built, using the slower path: {e}",
                          RuntimeWarning, stacklevel=2)
            _conv_module.append(None)
    mod = _conv_module[0]
    return None if mod is None else mod.get_function(name)


# ---- elementwise kernels of convolution and max pooling (CuPy ElementwiseKernel, one launch each) ----------
# col2im as a gather: each output element of conv_transpose (N, CO, OH, OW; the cropped output, so no crop
# copy follows) adds up the column entries that land on it, walking the KH*KW kernel offsets. The column
# entry of (n, c, kernel offset q, input row iy, column ix) is at n*sN + c*sC + q*sK + iy*W + ix, so both
# column layouts the backend builds, (N, CO*K, H*W) and (CO, K, N, H*W), are read in place.
_COL2IM_2D = (
    "raw T cols, int32 CO, int32 OH, int32 OW, int32 H, int32 W, int32 KH, int32 KW, int32 sh, int32 sw, "
    "int32 ph, int32 pw, int32 dh, int32 dw, int64 sN, int64 sC, int64 sK", "T out",
    r"""
    int ox = i % OW; long long t = i / OW;
    int oy = t % OH; t /= OH;
    int c = t % CO;
    long long n = t / CO;
    int fy = oy + ph, fx = ox + pw;
    ACC s = 0;
    const long long base = n * sN + (long long)c * sC;
    for (int kh = 0; kh < KH; ++kh) {
        int ty = fy - kh * dh;
        if (ty < 0) break;
        if (ty % sh) continue;
        int iy = ty / sh;
        if (iy >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            int tx = fx - kw * dw;
            if (tx < 0) break;
            if (tx % sw) continue;
            int ix = tx / sw;
            if (ix >= W) continue;
            s += (ACC)cols[base + (long long)(kh * KW + kw) * sK + (long long)iy * W + ix];
        }
    }
    out = (T)s;
    """, "ember_col2im2d")

# 2-d max pooling: each output element scans its window's in-range taps once; the first maximum wins, a NaN
# wins over every number (the first NaN), and idx is the flat input position (row * W + column).
_MAXPOOL_2D = (
    "raw T x, int32 H, int32 W, int32 OH, int32 OW, int32 KH, int32 KW, int32 sh, int32 sw, int32 ph, "
    "int32 pw, int32 dh, int32 dw, T lowest", "T y, int64 idx",
    r"""
    int ow = i % OW; long long t = i / OW;
    int oh = t % OH;
    long long base = (t / OH) * H * W;
    T best = lowest;
    long long bi = (long long)(oh * sh - ph) * W + (ow * sw - pw);
    bool found = false;
    for (int kh = 0; kh < KH; ++kh) {
        int r = oh * sh - ph + kh * dh;
        if (r < 0 || r >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            int q = ow * sw - pw + kw * dw;
            if (q < 0 || q >= W) continue;
            T v = x[base + (long long)r * W + q];
            if (!found || (!(best != best) && (v > best || v != v))) {
                best = v;
                bi = (long long)r * W + q;
                found = true;
            }
        }
    }
    y = best;
    idx = bi;
    """, "ember_maxpool2d")

# max pooling's backward: each output gradient goes to its saved input position (out zeroed by the caller);
# atomic adds where windows overlap, plain stores where they cannot (disjoint windows).
_MAXPOOL_BWD = (
    "T g, int64 idx, int64 L, int64 P, int32 disjoint", "raw T out",
    "long long at = (i / L) * P + idx; if (disjoint) out[at] = g; else atomicAdd(&out[at], g);",
    "ember_maxpool_backward")

# relu's gradient from its result: zero where y <= 0 (NaN passes the gradient, as the rule's where does)
_RELU_BWD = ("T y, T g", "T o", "o = (y <= (T)0) ? (T)0 : g;", "ember_relu_backward")
# a running statistic moving toward a new value in place: s = keep * s + take * new (float64 weights)
_RUNNING = ("U v, float64 keep, float64 take", "T s", "s = (T)(keep * (double)s + take * (double)v);",
            "ember_running_update")

# the logistic function in one pass, with the frontend's formula (exp of -|x| never overflows; the two
# branches meet at 0) in the array's own float type, so it matches the ufunc composition bit for bit
_SIGMOID = ("T x", "T y", "T e = exp(-fabs(x)); y = (x >= (T)0) ? (T)1 / ((T)1 + e) : e / ((T)1 + e);",
            "ember_sigmoid")

# GELU and its derivative in one pass, computed in ACC (float; double for float64) and rounded once:
# 16-bit inputs no longer make float32 copies around a chain of ufuncs. tanh form: t = tanh(b(x + k x³));
# erf form: Φ(x) = erfc(-x/√2)/2, accurate in the lower tail, and φ(x) = exp(-x²/2)/√(2π).
_GELU_TANH = ("T x", "T y", "ACC v = (ACC)x; ACC t = tanh((ACC)0.7978845608028654 * (v + (ACC)0.044715 * v * v * v));"
              " y = (T)((ACC)0.5 * v * ((ACC)1 + t));", "ember_gelu_tanh")
_GELU_ERF = ("T x", "T y", "ACC v = (ACC)x; y = (T)(v * (ACC)0.5 * erfc(-v * (ACC)0.7071067811865476));",
             "ember_gelu_erf")
_GELU_TANH_BWD = ("T x, T g", "T o",
                  "ACC v = (ACC)x; ACC t = tanh((ACC)0.7978845608028654 * (v + (ACC)0.044715 * v * v * v));"
                  " ACC d = (ACC)0.5 * ((ACC)1 + t) + (ACC)0.5 * v * ((ACC)1 - t * t) * (ACC)0.7978845608028654"
                  " * ((ACC)1 + (ACC)0.134145 * v * v); o = (T)((ACC)g * d);", "ember_gelu_tanh_backward")
_GELU_ERF_BWD = ("T x, T g", "T o",
                 "ACC v = (ACC)x; ACC d = (ACC)0.5 * erfc(-v * (ACC)0.7071067811865476)"
                 " + v * exp((ACC)-0.5 * v * v) * (ACC)0.3989422804014327; o = (T)((ACC)g * d);",
                 "ember_gelu_erf_backward")

# a 16-bit float tensor with a Python scalar, in one pass: CuPy computes bfloat16 * 0.5 in float32 and
# the result is cast back (two launches and a float32 temporary); here the scalar stays a float32, as
# in PyTorch's kernels, and the result rounds once. "rscalar_*": the scalar is the left operand.
_SCALAR = {f"{kind}_{name}": ("T x, float32 s", "T y", f"y = (T)({body});", f"ember_{kind}_{name}")
           for name, sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"))
           for kind, body in (("scalar", f"(float)x {sym} s"), ("rscalar", f"s {sym} (float)x"))}

# one Adam/AdamW step of a parameter in one pass (optim.Adam's formulas, in its order): weight decay,
# the moments, then p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps); the scalars come in float64
_ADAM = ("T g, float64 lr, float64 b1, float64 b2, float64 eps, float64 wd, bool decoupled, float64 bc1, "
         "float64 sqrt_bc2", "T p, T m, T v",
         "ACC gg = (ACC)g; ACC pp = (ACC)p;"
         " if (wd != 0.0) { if (decoupled) pp = pp * (ACC)(1.0 - lr * wd); else gg = gg + pp * (ACC)wd; }"
         " ACC mm = (1.0 - b1 < 0.5) ? (ACC)m + (ACC)(1.0 - b1) * (gg - (ACC)m) : gg - (gg - (ACC)m) * (ACC)b1;"
         " ACC vv = (ACC)v * (ACC)b2 + gg * gg * (ACC)(1.0 - b2);"
         " ACC denom = sqrt(vv) / (ACC)sqrt_bc2 + (ACC)eps;"
         " p = (T)(pp - (ACC)(lr / bc1) * (mm / denom)); m = (T)mm; v = (T)vv;", "ember_adam_step")

# the same step with the bias-correction count read from a device tensor (a CUDA graph replays it for each
# step): 1 - beta^t as -expm1(t ln beta) in ACC (accurate where 1 - beta^t cancels, and cheap: a double pow per
# element cost more than the rest of the update); ln beta comes from the host
_ADAM_T = ("T g, raw float32 st, float64 lr, float64 lnb1, float64 lnb2, float64 b1, float64 b2, float64 eps, "
           "float64 wd, bool decoupled", "T p, T m, T v",
           "ACC t_ = (ACC)st[0]; ACC bc1 = -expm1(t_ * (ACC)lnb1); ACC sbc2 = sqrt(-expm1(t_ * (ACC)lnb2));"
           " ACC gg = (ACC)g; ACC pp = (ACC)p;"
           " if (wd != 0.0) { if (decoupled) pp = pp * (ACC)(1.0 - lr * wd); else gg = gg + pp * (ACC)wd; }"
           " ACC mm = (1.0 - b1 < 0.5) ? (ACC)m + (ACC)(1.0 - b1) * (gg - (ACC)m) : gg - (gg - (ACC)m) * (ACC)b1;"
           " ACC vv = (ACC)v * (ACC)b2 + gg * gg * (ACC)(1.0 - b2);"
           " ACC denom = sqrt(vv) / sbc2 + (ACC)eps;"
           " p = (T)(pp - ((ACC)lr / bc1) * (mm / denom)); m = (T)mm; v = (T)vv;", "ember_adam_step_t")

_SPECS = {**_SCALAR, "adam_step": _ADAM, "adam_step_t": _ADAM_T, "col2im2d": _COL2IM_2D, "maxpool2d": _MAXPOOL_2D,
          "maxpool_backward": _MAXPOOL_BWD,
          "relu_backward": _RELU_BWD, "running_update": _RUNNING, "sigmoid": _SIGMOID,
          "gelu_tanh": _GELU_TANH, "gelu_erf": _GELU_ERF, "gelu_tanh_backward": _GELU_TANH_BWD,
          "gelu_erf_backward": _GELU_ERF_BWD}
_elementwise: dict = {}


def spec(which: str) -> tuple:
    """(params, outputs, body, name) of the ElementwiseKernel ``which``."""
    return _SPECS[which]


def elementwise(which: str, acc: str = "float"):
    """The CuPy ElementwiseKernel ``which`` ('col2im2d' with accumulator type ``acc``, 'maxpool2d',
    'maxpool_backward', 'relu_backward', 'running_update', 'sigmoid', 'gelu_tanh', 'gelu_erf' and their
    '_backward's), built on first use; None when it cannot be built (the caller falls back)."""
    key = (which, acc)
    if key not in _elementwise:
        try:
            import cupy
            params, outs, body, name = _SPECS[which]
            _elementwise[key] = cupy.ElementwiseKernel(params, outs, body.replace("ACC", acc), f"{name}_{acc}")
        except Exception:  # noqa: BLE001 - the caller falls back
            _elementwise[key] = None
    return _elementwise[key]


def try_elementwise(which: str, *args, acc: str = "float"):
    """Run the ElementwiseKernel ``which`` on ``args``; None when it can't be built or fails to compile
    at this first call (reported once by :func:`unavailable`): the caller then takes its ufunc path."""
    kern = elementwise(which, acc)
    if kern is None:
        return None
    import cupy
    try:
        return kern(*args)
    except cupy.cuda.compiler.CompileException as e:  # CuPy compiles at the first call
        unavailable(which, e, acc)
        return None


def unavailable(which: str, error: Exception, acc: str = "float") -> None:
    """Mark an ElementwiseKernel that failed to compile at its first call: later calls take the
    caller's fallback, and the failure is reported once."""
    import warnings
    _elementwise[(which, acc)] = None
    warnings.warn(f"ember's CUDA kernel {which} could not be built, using the slower path: {error}",
                  RuntimeWarning, stacklevel=3)


# ---- batched GEMM straight through cuBLAS ------------------------------------------------------------------
# CuPy's matmul of stacked operands copies non-contiguous ones, builds pointer arrays for broadcast ones (three
# extra launches) and ignores the TF32 compute type; convolutions need neither, so they call
# cublasGemmStridedBatchedEx here: a weight shared by the whole batch is batch stride 0.
def _stored(m, item: int):
    """(array, transposed, ld, batch stride) of a 2-d/3-d operand whose matrices cuBLAS can read in place:
    rows contiguous (row-major) or columns contiguous (then it is the transpose of a row-major matrix)."""
    shape, strides = m.shape, m.strides
    r, c = shape[-2], shape[-1]
    sr, sc = strides[-2], strides[-1]
    bs = strides[0] if len(shape) == 3 and shape[0] > 1 else 0
    if sr < 0 or sc < 0 or bs < 0 or sr % item or sc % item or bs % item:
        return None
    sr, sc, bs = sr // item, sc // item, bs // item
    if sc == 1 or c == 1:
        ld = sr if r > 1 else c
        if ld >= max(1, c):
            return m, False, ld, bs
    if sr == 1 or r == 1:
        ld = sc if c > 1 else r
        if ld >= max(1, r):
            return m, True, ld, bs
    return None


def gemm_batched(xp, a, b, trans_a: bool = False, trans_b: bool = False, out=None):
    """``op(a) @ op(b)`` over a batch, as a C-contiguous (B, M, N) array (``out`` when given: C-contiguous,
    of that shape and dtype); ``a`` and ``b`` are 2-d (one matrix for the whole batch) or 3-d, ``op``
    transposes the last two dims when asked. On numpy this is ``numpy.matmul``; on CuPy one
    cublasGemmStridedBatchedEx call (float32 on TF32 tensor cores while
    ``ember.backends.cuda.matmul.allow_tf32`` is set; float16/bfloat16 accumulate in float32).

    >>> gemm_batched(np, np.ones((2, 3)), np.ones((4, 3, 5))).shape
    (4, 2, 5)
    """
    types = None if xp is np or a.dtype != b.dtype else _gemm_types(a.dtype)
    # while a CUDA graph capture is open, graphs.Capture has swapped cupy.matmul for ember's ctypes cuBLAS call
    # (CuPy refuses its own cuBLAS wrappers while capturing): the products go through it
    if types is None or xp.matmul is not _cu[4]:
        oa = a.swapaxes(-1, -2) if trans_a else a
        ob = b.swapaxes(-1, -2) if trans_b else b
        r = xp.matmul(oa, ob)
        r = r if r.ndim == 3 else r[None]
        if r.dtype != a.dtype and a.dtype == b.dtype:  # numpy multiplies ml_dtypes' bfloat16 into float32
            r = r.astype(a.dtype)
        if out is not None:
            out[...] = r
            return out
        return r
    cupy, cublas = _cu[0], _cu[1]
    batch = max(a.shape[0] if a.ndim == 3 else 1, b.shape[0] if b.ndim == 3 else 1)
    M = a.shape[-1] if trans_a else a.shape[-2]
    K = a.shape[-2] if trans_a else a.shape[-1]
    N = b.shape[-2] if trans_b else b.shape[-1]
    item = a.itemsize
    if out is None:
        out = cupy.empty((batch, M, N), a.dtype)
    elif out.shape != (batch, M, N) or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise ValueError(f"gemm_batched: out must be a C-contiguous {(batch, M, N)} {a.dtype} array, got "
                         f"{out.shape} {out.dtype}")
    if out.size == 0:
        return out
    if K == 0:
        out.fill(0)
        return out
    sa, sb = _stored(a, item), _stored(b, item)
    if sa is None:
        a = cupy.ascontiguousarray(a)
        sa = _stored(a, item)
    if sb is None:
        b = cupy.ascontiguousarray(b)
        sb = _stored(b, item)
    a, fa, lda, bsa = sa
    b, fb, ldb, bsb = sb
    ta, tb = trans_a ^ fa, trans_b ^ fb
    cuda_type, compute, compute_tf32, one, zero = types
    if compute_tf32 is not None and _cu[3].matmul.allow_tf32:
        compute = compute_tf32
    # row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B goes first
    cublas.gemmStridedBatchedEx(
        _cu[2](), 1 if tb else 0, 1 if ta else 0, N, M, K, one,
        b.data.ptr, cuda_type, ldb, bsb, a.data.ptr, cuda_type, lda, bsa, zero,
        out.data.ptr, cuda_type, N, M * N, batch, compute, cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    return out


_CUDA_TYPES = {"float32": "CUDA_R_32F", "float64": "CUDA_R_64F", "float16": "CUDA_R_16F", "bfloat16": "CUDA_R_16BF"}
# alpha = 1 and beta = 0 in host memory, for the life of the process; cuBLAS takes their addresses
_COEF = [np.array([1, 0], np.float32), np.array([1, 0], np.float64)]
# cupy, cublas, get_cublas_handle, ember.backends.cuda, CuPy's own matmul (imported on first use)
_cu: list = []
_types: dict = {}     # numpy dtype -> (cuda data type, compute type, TF32 compute type or None, alpha, beta)


def _gemm_types(dtype):
    """cuBLAS types of a dtype (looked up by dtype object: numpy's ``dtype.name`` is slow), or None."""
    got = _types.get(dtype, False)
    if got is not False:
        return got
    if not _cu:
        import cupy
        from cupy_backends.cuda.libs import cublas

        from ..switches import cuda as flags
        from . import cublas as ctypes_cublas
        _cu.extend((cupy, cublas, cupy.cuda.device.get_cublas_handle, flags,
                    ctypes_cublas._state.get("cupy_matmul", cupy.matmul)))
    from cupy_backends.cuda.api import runtime
    cublas = _cu[1]
    name = np.dtype(dtype).name
    got = None
    if name in _CUDA_TYPES:
        coef = _COEF[1] if name == "float64" else _COEF[0]
        one, zero = int(coef.ctypes.data), int(coef.ctypes.data) + coef.itemsize
        compute = cublas.CUBLAS_COMPUTE_64F if name == "float64" else cublas.CUBLAS_COMPUTE_32F
        tf32 = cublas.CUBLAS_COMPUTE_32F_FAST_TF32 if name == "float32" else None
        got = (getattr(runtime, _CUDA_TYPES[name]), compute, tf32, one, zero)
    _types[dtype] = got
    return got


_CTYPES = {"float32": "float", "float64": "double"}
_modules: dict = {}
_cache: dict = {}


def get(name: str, dtype):
    """The compiled kernel ``ember_<name>_<ctype>`` for a numpy dtype (or its name), or None."""
    got = _cache.get((name, dtype), False)
    if got is not False:
        return got
    ctype = _CTYPES.get(np.dtype(dtype).name)
    got = None
    if ctype is not None:
        try:
            mod = _modules.get(ctype)
            if mod is None:
                import cupy
                mod = _modules[ctype] = cupy.RawModule(code=_SOURCE.replace("CT", ctype), options=("-std=c++17",))
            got = mod.get_function(f"ember_{name}_{ctype}")
        except Exception as e:  # noqa: BLE001 - the caller's array-module code covers every case
            import warnings
            warnings.warn(f"ember's CUDA kernel {name} ({ctype}) could not be built, using the slower path: {e}",
                          RuntimeWarning, stacklevel=2)
    _cache[(name, dtype)] = got
    return got


def threads_for(cols: int, per_thread: int = 4, most: int = 1024) -> int:
    """Threads per row block: enough to cover short rows (``per_thread`` elements each), at most ``most``."""
    t = 32
    while t < most and t * per_thread < cols:
        t *= 2
    return t
