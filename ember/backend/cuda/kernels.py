"""Hand-written CUDA kernels for row-wise ops that CuPy would run as several passes: softmax and
log_softmax over the last dim, and layer norm's forward (norm_affine over trailing dims).

One block per row: each thread strides over the row, then warp shuffles and shared memory reduce.
Compiled by NVRTC through CuPy on first use, once per process; float32 and float64 only (16-bit
inputs are upcast by the callers). ``get(name, ctype)`` returns None when a kernel cannot be built,
and the callers fall back to their array-module code.
"""

from __future__ import annotations

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
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = nmax(m, xr[j]);
    m = block_max(m, sh);
    if (logmode && !e_finite(m)) m = 0;   // all -inf (or +inf) rows: no inf - inf
    CT s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += e_exp(xr[j] - m);
    s = block_sum(s, sh);
    if (logmode) {
        CT ls = e_log(s);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - m - ls;
    } else {
        CT inv = (CT)1 / s;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = e_exp(xr[j] - m) * inv;
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

// Per-channel statistics of a (N, C, L) tensor (batch norm): block c reduces the N*L elements of channel c.
extern "C" __global__ void ember_chstats_CT(const CT* __restrict__ x, CT* __restrict__ mean, CT* __restrict__ var,
                                           long long N, long long C, long long L) {
    __shared__ CT sh[32];
    long long c = blockIdx.x, total = N * L;
    CT s = 0;
    for (long long k = threadIdx.x; k < total; k += blockDim.x) s += x[((k / L) * C + c) * L + k % L];
    CT m = block_sum(s, sh) / (CT)total;
    CT q = 0;
    for (long long k = threadIdx.x; k < total; k += blockDim.x) {
        CT d = x[((k / L) * C + c) * L + k % L] - m;
        q += d * d;
    }
    CT v = block_sum(q, sh) / (CT)total;
    if (threadIdx.x == 0) { mean[c] = m; var[c] = v; }
}

// Per-channel sums of g and g * xhat (batch norm's backward), xhat = (x - mean) * rstd.
extern "C" __global__ void ember_chgrad_CT(const CT* __restrict__ x, const CT* __restrict__ g,
                                          const CT* __restrict__ mean, const CT* __restrict__ rstd,
                                          CT* __restrict__ sg, CT* __restrict__ sgx, long long N, long long C,
                                          long long L) {
    __shared__ CT sh[32];
    long long c = blockIdx.x, total = N * L;
    CT m = mean[c], r = rstd[c];
    CT s1 = 0, s2 = 0;
    for (long long k = threadIdx.x; k < total; k += blockDim.x) {
        long long at = ((k / L) * C + c) * L + k % L;
        CT gv = g[at];
        s1 += gv;
        s2 += gv * (x[at] - m) * r;
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    if (threadIdx.x == 0) { sg[c] = s1; sgx[c] = s2; }
}
"""

_BN_FORWARD = (
    "T x, raw T m, raw T r, raw T w, raw T b, int64 C, int64 L, int32 has_w, int32 has_b", "T y",
    "long long c = (i / L) % C; T t = (x - m[c]) * r[c]; if (has_w) t *= w[c]; if (has_b) t += b[c]; y = t;",
    "ember_bn_forward")
_BN_BACKWARD = (
    "T x, T g, raw T m, raw T r, raw T w, raw T sg, raw T sgx, int64 C, int64 L, T inv_n, int32 has_w", "T gx",
    "long long c = (i / L) % C; T xh = (x - m[c]) * r[c]; T wc = has_w ? w[c] : (T)1; "
    "gx = r[c] * wc * (g - sg[c] * inv_n - xh * sgx[c] * inv_n);",
    "ember_bn_backward")
_elementwise: dict = {}


def elementwise(which: str):
    """CuPy ElementwiseKernels of batch norm ('bn_forward', 'bn_backward'), or None."""
    if which not in _elementwise:
        try:
            import cupy
            spec = {"bn_forward": _BN_FORWARD, "bn_backward": _BN_BACKWARD}[which]
            _elementwise[which] = cupy.ElementwiseKernel(*spec)
        except Exception:  # noqa: BLE001 - the caller falls back
            _elementwise[which] = None
    return _elementwise[which]


_CTYPES = {"float32": "float", "float64": "double"}
_modules: dict = {}
_cache: dict = {}


def get(name: str, dtype_name: str):
    """The compiled kernel ``ember_<name>_<ctype>`` for a numpy dtype name, or None."""
    ctype = _CTYPES.get(dtype_name)
    if ctype is None:
        return None
    key = (name, ctype)
    if key not in _cache:
        try:
            mod = _modules.get(ctype)
            if mod is None:
                import cupy
                mod = _modules[ctype] = cupy.RawModule(code=_SOURCE.replace("CT", ctype), options=("-std=c++17",))
            _cache[key] = mod.get_function(f"ember_{name}_{ctype}")
        except Exception as e:  # noqa: BLE001 - the caller's array-module code covers every case
            import warnings
            warnings.warn(f"ember's CUDA kernel {name} ({ctype}) could not be built, using the slower path: {e}",
                          RuntimeWarning, stacklevel=2)
            _cache[key] = None
    return _cache[key]


def threads_for(cols: int) -> int:
    """Threads per row block: enough to cover short rows, at most 1024."""
    t = 32
    while t < 1024 and t * 4 < cols:
        t *= 2
    return t
