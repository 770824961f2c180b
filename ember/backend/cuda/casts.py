"""Data movement 16 bytes a thread: casts between float32 and the 16-bit floats, strided copies, and the
arithmetic of two same-shape 16-bit tensors (residual adds, gradient sums, dropout's products).

Autocast casts every activation and gradient that crosses between float32 and bfloat16, and attention makes
its permuted q, k, v contiguous for cuBLAS; CuPy's ``astype`` and copy kernels move one element a thread,
several times slower than the memory for 2-byte types. The cast kernels take contiguous, 16-byte aligned
arrays (others go to ``astype``) and round to nearest even, keeping NaN a NaN, as ``astype`` does. The copy
kernel gathers 16-byte pieces of an array whose last dim is contiguous and whose other strides and base are
multiples of 16 bytes (up to 6 dims after merging), into a new C-contiguous array. The arithmetic kernels
compute each element in float32 and round once, as CuPy's and PyTorch's 16-bit kernels do: the same bits.
"""

from __future__ import annotations

import re
import warnings

import numpy as np

# float <-> 16-bit bits, without CUDA headers (bfloat16 by bit arithmetic, float16 by the PTX conversions)
_CONVERT = r"""
__device__ inline float bf16_in(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ inline unsigned short bf16_out(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
#ifdef EMBER_HOST_SIM
#define __align__(n) __attribute__((aligned(n)))
#endif
struct __align__(16) ember_f4 { float x, y, z, w; };
struct __align__(16) ember_u4 { unsigned x, y, z, w; };
#ifdef EMBER_HOST_SIM
__device__ inline float f16_in(unsigned short v) { return 0.0f; }
__device__ inline unsigned short f16_out(float f) { return 0; }
#else
__device__ inline float f16_in(unsigned short v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f; }
__device__ inline unsigned short f16_out(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
"""

# thread t converts elements 8t .. 8t+7: two float4 on the float32 side, one uint4 (8 halves) on the other
_KERNELS = r"""
extern "C" __global__ void ember_to16_NAME(const float* __restrict__ src, unsigned short* __restrict__ dst,
                                           unsigned long long n) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, i = t * 8;
    if (i + 8 <= n) {
        ember_f4 a = ((const ember_f4*)src)[2 * t], b = ((const ember_f4*)src)[2 * t + 1];
        ember_u4 o;
        o.x = (unsigned)OUT(a.x) | ((unsigned)OUT(a.y) << 16);
        o.y = (unsigned)OUT(a.z) | ((unsigned)OUT(a.w) << 16);
        o.z = (unsigned)OUT(b.x) | ((unsigned)OUT(b.y) << 16);
        o.w = (unsigned)OUT(b.z) | ((unsigned)OUT(b.w) << 16);
        ((ember_u4*)dst)[t] = o;
    } else {
        for (; i < n; ++i) dst[i] = OUT(src[i]);
    }
}

extern "C" __global__ void ember_from16_NAME(const unsigned short* __restrict__ src, float* __restrict__ dst,
                                             unsigned long long n) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, i = t * 8;
    if (i + 8 <= n) {
        ember_u4 v = ((const ember_u4*)src)[t];
        ember_f4 a, b;
        a.x = IN((unsigned short)(v.x & 0xffffu)); a.y = IN((unsigned short)(v.x >> 16));
        a.z = IN((unsigned short)(v.y & 0xffffu)); a.w = IN((unsigned short)(v.y >> 16));
        b.x = IN((unsigned short)(v.z & 0xffffu)); b.y = IN((unsigned short)(v.z >> 16));
        b.z = IN((unsigned short)(v.w & 0xffffu)); b.w = IN((unsigned short)(v.w >> 16));
        ((ember_f4*)dst)[2 * t] = a;
        ((ember_f4*)dst)[2 * t + 1] = b;
    } else {
        for (; i < n; ++i) dst[i] = IN(src[i]);
    }
}
"""


# output piece t (row-major over the merged dims d0..d5) comes from byte offset sum(i_k * s_k) of the source
_GATHER = r"""
extern "C" __global__ void ember_gather16(const char* __restrict__ src, ember_u4* __restrict__ dst,
                                          unsigned long long n, long long d1, long long d2, long long d3,
                                          long long d4, long long d5, long long s0, long long s1, long long s2,
                                          long long s3, long long s4, long long s5) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned long long r = t;
    long long off = (long long)(r % d5) * s5; r /= d5;
    off += (long long)(r % d4) * s4; r /= d4;
    off += (long long)(r % d3) * s3; r /= d3;
    off += (long long)(r % d2) * s2; r /= d2;
    off += (long long)(r % d1) * s1; r /= d1;
    off += (long long)r * s0;
    dst[t] = *(const ember_u4*)(src + off);
}
"""


# thread t computes elements 8t .. 8t+7 of two C-contiguous arrays of n8 * 8 elements; b is a whole array
# (b8 = n8) or a row of b8 * 8 elements repeated over a's rows (a bias)
_ARITH = r"""
__device__ inline unsigned ember_OPNAME_pair_NAME(unsigned x, unsigned y) {
    float a0 = IN((unsigned short)(x & 0xffffu)), b0 = IN((unsigned short)(y & 0xffffu));
    float a1 = IN((unsigned short)(x >> 16)), b1 = IN((unsigned short)(y >> 16));
    return (unsigned)OUT(a0 OP b0) | ((unsigned)OUT(a1 OP b1) << 16);
}
extern "C" __global__ void ember_OPNAME16_NAME(const ember_u4* __restrict__ a, const ember_u4* __restrict__ b,
                                               ember_u4* __restrict__ o, unsigned long long n8,
                                               unsigned long long b8) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (t >= n8) return;
    ember_u4 x = a[t], y = b[t % b8], r;
    r.x = ember_OPNAME_pair_NAME(x.x, y.x); r.y = ember_OPNAME_pair_NAME(x.y, y.y);
    r.z = ember_OPNAME_pair_NAME(x.z, y.z); r.w = ember_OPNAME_pair_NAME(x.w, y.w);
    o[t] = r;
}
"""
ARITH_OPS = {"add": "+", "sub": "-", "mul": "*"}


# rows of 2-byte elements copied between two row pitches (elements), 8 elements of a row a thread: row j of dst
# gets src's row j, then zeros up to dcols (dst's logical width); 16-byte loads (vin) and stores (vout) where the
# pitch and base allow. Matrices with rows of odd lengths go to cuBLAS padded this way, and come back
_REPITCH = r"""
extern "C" __global__ void ember_repitch16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                           unsigned long long rows, unsigned long long cols,
                                           unsigned long long dcols, unsigned long long ps,
                                           unsigned long long pd, int vin, int vout) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long chunks = (dcols + 7) / 8, r = t / chunks, j = (t % chunks) * 8;
    if (r >= rows) return;
    const unsigned short* s = src + r * ps;
    unsigned short* d = dst + r * pd;
    unsigned short h[8];
    if (vin && j + 8 <= cols) {
        ember_u4 u = *(const ember_u4*)(s + j);
        unsigned w[4] = {u.x, u.y, u.z, u.w};
        for (int q = 0; q < 4; ++q) {
            h[2 * q] = (unsigned short)(w[q] & 0xffffu);
            h[2 * q + 1] = (unsigned short)(w[q] >> 16);
        }
    } else {
        for (int q = 0; q < 8; ++q) h[q] = j + q < cols ? s[j + q] : (unsigned short)0;
    }
    if (vout && j + 8 <= pd) {  // a whole chunk inside the row's pitch: padding past dcols gets zeros
        ember_u4 u;
        u.x = h[0] | ((unsigned)h[1] << 16); u.y = h[2] | ((unsigned)h[3] << 16);
        u.z = h[4] | ((unsigned)h[5] << 16); u.w = h[6] | ((unsigned)h[7] << 16);
        *(ember_u4*)(d + j) = u;
    } else {
        for (int q = 0; q < 8 && j + q < dcols; ++q) d[j + q] = h[q];
    }
}
"""


def source() -> str:
    """The CUDA source of the kernels (ember_to16_bf16, ember_from16_bf16, ..._f16, ember_gather16,
    ember_add16_bf16 and the other arithmetic)."""
    def typed(code: str, name: str) -> str:
        return code.replace("NAME", name).replace("OUT", f"{name}_out").replace("IN(", f"{name}_in(")
    body = ""
    for name in ("bf16", "f16"):
        body += typed(_KERNELS, name)
        body += "".join(typed(_ARITH.replace("OPNAME", op).replace("OP", sym), name) for op, sym in ARITH_OPS.items())
    return _CONVERT + body + _GATHER + _REPITCH


_module: list = []


def _kernel(name: str):
    if not _module:
        try:
            import cupy
            _module.append(cupy.RawModule(code=source(), options=("-std=c++17",)))
        except Exception as e:  # noqa: BLE001 - astype covers every case
            warnings.warn(f"ember's CUDA cast kernels could not be built, using astype: {e}", RuntimeWarning,
                          stacklevel=3)
            _module.append(None)
    mod = _module[0]
    if mod is None:
        return None
    try:
        return mod.get_function(name)
    except Exception:  # noqa: BLE001
        _module[0] = None
        return None


_NAMES = {"bfloat16": "bf16", "float16": "f16"}


def cast(xp, x, target):
    """``x.astype(target)`` in one vectorised pass for contiguous float32 <-> float16/bfloat16 arrays of at
    least 4096 elements, C or Fortran order (kept: astype's order "K"; a transposed weight's gradient is
    Fortran-ordered); None for every other case (the caller uses astype)."""
    if x.size < 4096:
        return None
    if x.flags.c_contiguous:
        order = "C"
    elif x.flags.f_contiguous:
        order = "F"
    else:
        return None
    src, dst = x.dtype.name, np.dtype(target).name
    if src == "float32" and dst in _NAMES:
        name = f"ember_to16_{_NAMES[dst]}"
    elif dst == "float32" and src in _NAMES:
        name = f"ember_from16_{_NAMES[src]}"
    else:
        return None
    if x.data.ptr % 16:
        return None
    kern = _kernel(name)
    if kern is None:
        return None
    out = xp.empty(x.shape, target, order=order)
    n = x.size
    kern((((n + 7) // 8 + 255) // 256,), (256,), (x, out, np.uint64(n)))
    return out


def arith(xp, op: str, x, y):
    """``x op y`` (op: add, sub, mul) of C-contiguous float16/bfloat16 arrays of one dtype, at least 4096
    elements in whole 16-byte pieces, 8 elements a thread: ``y`` of x's shape, or a row broadcast over x's
    rows (a bias: y's shape is x's trailing dims, leading 1s allowed); None for every other case (the caller
    uses the ufunc, which moves one element a thread)."""
    n = x.size
    if (n < 4096 or n % 8 or x.dtype != y.dtype or not x.flags.c_contiguous or not y.flags.c_contiguous
            or (x.data.ptr | y.data.ptr) % 16):
        return None
    if x.shape != y.shape:  # y must be x's trailing dims after leading 1s: (C,) or (1, 1, C) on (N, T, C)
        if y.ndim > x.ndim or not y.size or y.size % 8:
            return None
        core = tuple(y.shape)
        while core and core[0] == 1:
            core = core[1:]
        if not core or tuple(x.shape[x.ndim - len(core):]) != core:
            return None
    short = _NAMES.get(x.dtype.name)
    kern = None if short is None else _kernel(f"ember_{op}16_{short}")
    if kern is None:
        return None
    out = xp.empty(x.shape, x.dtype)
    n8 = n // 8
    kern(((n8 + 255) // 256,), (256,), (x, y, out, np.uint64(n8), np.uint64(y.size // 8)))
    return out


# ---- one-pass elementwise maps of 16-bit arrays (GELU and its derivative, ...), 8 elements a thread ------------
_MAP = r"""
extern "C" __global__ void KNAME(PARAMS ember_u4* __restrict__ ember_out, unsigned long long ember_n8) {
    unsigned long long ember_t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (ember_t >= ember_n8) return;
    LOADS
    unsigned ember_r[4];
    for (int ember_k = 0; ember_k < 4; ++ember_k) {
        unsigned short ember_half[2];
        for (int ember_h = 0; ember_h < 2; ++ember_h) {
            ELEMENTS
            float RESULT;
            BODY
            ember_half[ember_h] = OUT(RESULT);
        }
        ember_r[ember_k] = (unsigned)ember_half[0] | ((unsigned)ember_half[1] << 16);
    }
    ember_u4 ember_o;
    ember_o.x = ember_r[0]; ember_o.y = ember_r[1]; ember_o.z = ember_r[2]; ember_o.w = ember_r[3];
    ember_out[ember_t] = ember_o;
}
"""
_maps: dict = {}


def map_source(name: str, inputs: list, result: str, body: str, short: str) -> str:
    """CUDA source of the kernel ``name``: ``body`` (C with float variables named ``inputs``, assigning
    ``result``; ``T``/``ACC`` mean float) over 16-bit (``short``: bf16, f16) arrays, 8 elements a thread."""
    params = "".join(f"const ember_u4* __restrict__ p_{v}, " for v in inputs)
    loads = " ".join(f"ember_u4 q_{v} = p_{v}[ember_t]; unsigned w_{v}[4] = {{q_{v}.x, q_{v}.y, q_{v}.z, q_{v}.w}};"
                     for v in inputs)
    elements = " ".join(f"float {v} = {short}_in((unsigned short)(w_{v}[ember_k] >> (16 * ember_h)));"
                        for v in inputs)
    code = (_MAP.replace("KNAME", name).replace("PARAMS", params).replace("LOADS", loads)
            .replace("ELEMENTS", elements).replace("RESULT", result).replace("OUT(", f"{short}_out(")
            .replace("BODY", re.sub(r"\b(T|ACC)\b", "float", body)))
    return _CONVERT + code


def map16(which: str, spec: tuple, *arrays):
    """``spec`` (an ElementwiseKernel spec of kernels.py: inputs all ``T``, one ``T`` output) over
    C-contiguous float16/bfloat16 arrays of one shape and dtype, at least 4096 elements in whole 16-byte
    pieces, 8 elements a thread (CuPy's kernel moves one); None for every other case."""
    x = arrays[0]
    n = x.size
    short = _NAMES.get(x.dtype.name)
    if short is None or n < 4096 or n % 8:
        return None
    for a in arrays:
        if a.shape != x.shape or a.dtype != x.dtype or not a.flags.c_contiguous or a.data.ptr % 16:
            return None
    key = (which, short)
    kern = _maps.get(key, False)
    if kern is False:
        params, outs, body, _ = spec
        inputs = [p.split()[1] for p in params.split(",")]
        kinds = {p.split()[0] for p in params.split(",")} | {outs.split()[0]}
        kern = None
        if kinds == {"T"} and "," not in outs:
            try:
                import cupy
                name = f"ember_map16_{which}_{short}"
                src = map_source(name, inputs, outs.split()[1], body, short)
                kern = cupy.RawModule(code=src, options=("-std=c++17",)).get_function(name)
            except Exception as e:  # noqa: BLE001 - the caller's kernel covers every case
                warnings.warn(f"ember's 16-bit CUDA kernel for {which} could not be built: {e}", RuntimeWarning,
                              stacklevel=2)
        _maps[key] = kern
    if kern is None:
        return None
    import cupy
    out = cupy.empty(x.shape, x.dtype)
    n8 = n // 8
    kern(((n8 + 255) // 256,), (256,), (*arrays, out, np.uint64(n8)))
    return out


def copy_rows(xp, src, dst) -> None:
    """``dst[..., :cols] = src`` and zeros in dst's columns past src's, for 2-byte arrays with the same leading
    shape whose rows (last dim contiguous) are evenly spaced over all leading dims (C-contiguous arrays and
    row-padded views of them): one pass, 8 elements a thread."""
    cols, dcols = src.shape[-1], dst.shape[-1]
    rows = src.size // cols if cols else 0
    kern = _kernel("ember_repitch16") if rows and dcols >= cols else None

    def pitch(a):  # elements between rows, when every leading dim steps by whole rows of that pitch
        if a.ndim < 2:
            return a.shape[-1]
        p = a.strides[-2] // a.itemsize
        step = p
        for n, st in zip(reversed(a.shape[:-1]), reversed(a.strides[:-1])):
            if n != 1 and st != step * a.itemsize:
                return None
            step *= n
        return p
    ps, pd = pitch(src), pitch(dst)
    if (kern is None or src.itemsize != 2 or dst.itemsize != 2 or src.strides[-1] != 2 or dst.strides[-1] != 2
            or ps is None or pd is None or src.shape[:-1] != dst.shape[:-1]):
        dst[..., :cols] = src
        if dcols > cols:
            dst[..., cols:] = 0
        return
    vin = ps % 8 == 0 and src.data.ptr % 16 == 0
    vout = pd % 8 == 0 and dst.data.ptr % 16 == 0
    n = rows * ((dcols + 7) // 8)
    kern(((n + 255) // 256,), (256,), (src, dst, np.uint64(rows), np.uint64(cols), np.uint64(dcols), np.uint64(ps),
                                       np.uint64(pd), np.int32(vin), np.int32(vout)))


def pieces(shape: tuple, strides: tuple, itemsize: int, ptr: int):
    """(sizes, byte strides) of an array as 16-byte pieces, dims merged where they are one run, at most 6
    of them; None when it isn't made of aligned 16-byte pieces (last dim not contiguous, a stride or the base
    not a multiple of 16 bytes)."""
    if not shape or strides[-1] != itemsize or (shape[-1] * itemsize) % 16 or ptr % 16:
        return None
    sizes = list(shape[:-1]) + [shape[-1] * itemsize // 16]
    steps = list(strides[:-1]) + [16]
    dims = [(n, s) for n, s in zip(sizes, steps) if n != 1]
    if any(s % 16 for _, s in dims):
        return None
    merged: list = []
    for n, s in dims:  # a dim that steps over exactly the next one's run joins it
        if merged and merged[-1][1] == s * n:
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    if len(merged) > 6:
        return None
    merged = [(1, 0)] * (6 - len(merged)) + merged
    return [n for n, _ in merged], [s for _, s in merged]


def contiguous(xp, x):
    """``x`` as a C-contiguous array: itself when it is one; else gathered 16 bytes a thread where
    :func:`pieces` allows (and the array isn't tiny), else ``xp.ascontiguousarray``."""
    if x.flags.c_contiguous:
        return x
    got = pieces(x.shape, x.strides, x.itemsize, x.data.ptr) if x.nbytes >= (1 << 16) else None
    kern = None if got is None else _kernel("ember_gather16")
    if kern is None:
        return xp.ascontiguousarray(x)
    sizes, steps = got
    out = xp.empty(x.shape, x.dtype)
    n = x.nbytes // 16
    kern(((n + 255) // 256,), (256,), (x, out, np.uint64(n), *(np.int64(v) for v in sizes[1:]),
                                      *(np.int64(v) for v in steps)))
    return out


__all__ = ["arith", "cast", "contiguous", "copy_rows", "map16", "map_source", "pieces", "source"]
