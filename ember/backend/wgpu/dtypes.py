"""How each ember dtype lives in a WGSL storage buffer.

WGSL computes in 32-bit ``f32``, ``i32`` and ``u32`` (``f16`` behind an optional feature, no 64-bit
types), so every element is stored in one 32-bit word and narrower dtypes are kept exact by a
*fix-up* applied whenever a kernel stores a value:

=========  =======  ==================================================================
dtype      stored   fix-up on store
=========  =======  ==================================================================
bool       u32      0 or 1
uint8      u32      ``& 255`` (wraps like uint8)
int8       i32      sign-extend the low 8 bits (wraps like int8)
int16      i32      sign-extend the low 16 bits
int32      i32      none
int64      i32      none: 32-bit values; a tensor written with larger values is stored
                    whole (2 words) and computed on the host, like float64
float16    f32      round to the nearest float16 (ties to even, overflow to inf)
bfloat16   f32      round to the nearest bfloat16
float32    f32      none
float64    2 words  none: WGSL has no float64, so every op on float64 runs on the host
=========  =======  ==================================================================

Half-precision tensors therefore take 4 bytes an element here, and compute in float32 with one
rounding per op, as PyTorch's CPU kernels do. float64 tensors live on the device (views and
transfers work as for any dtype) but are computed by the numpy backend, read and written back per
op: correct, and slow; :func:`ember.wgpu.host_ops` counts those runs.
"""

from __future__ import annotations

import numpy as np

from ... import _dtype as D

ST = {D.bool: "u32", D.uint8: "u32", D.int8: "i32", D.int16: "i32", D.int32: "i32", D.int64: "i32",
      D.float16: "f32", D.bfloat16: "f32", D.float32: "f32"}
HOST_DTYPES = frozenset({D.float64})  # stored raw, computed on the host


def words(dtype) -> int:
    """32-bit words per element."""
    return 2 if dtype is D.float64 else 1


def np_stored(dtype):
    """numpy dtype of the device representation of ``dtype``."""
    return np.float64 if dtype is D.float64 else NP_ST[st(dtype)]


# numpy dtype of the stored words
NP_ST = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}

HELPERS = """
fn _f2i(v: f32) -> i32 {
  // C's float -> int as x86 does it (PyTorch's CPU semantics): NaN and out-of-range give INT_MIN
  if (abs(v) < 2147483648.0) { return i32(v); }
  return i32(-2147483647 - 1);
}
fn _f16r(v: f32) -> f32 {
  // NaN tested on the bits: WGSL lets drivers assume no NaN, and NVIDIA's folds v == v to true
  let b = bitcast<u32>(v);
  let a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { return v; }
  if (a >= 0x477ff000u) { return bitcast<f32>((b & 0x80000000u) | 0x7f800000u); }
  if (a < 0x38800000u) { return round(v * 16777216.0) * 5.9604644775390625e-08; }
  return bitcast<f32>((b + 0xFFFu + ((b >> 13u) & 1u)) & 0xFFFFE000u);
}
fn _bf16r(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return v; }
  return bitcast<f32>((b + 0x7FFFu + ((b >> 16u) & 1u)) & 0xFFFF0000u);
}
"""


class DtypeUnsupported(TypeError, RuntimeError):
    """A dtype the Wgpu backend cannot hold (float64: WGSL has no 64-bit floats)."""


def st(dtype) -> str:
    """The WGSL type a dtype is stored (and computed) as."""
    t = ST.get(dtype)
    if t is None:
        raise DtypeUnsupported(f"dtype {dtype.name} has no kernel type on device 'wgpu' (WGSL has no "
                               f"{dtype.name}): a bug in the Wgpu backend, which runs such ops on the host")
    return t


def fix(dtype, expr: str) -> str:
    """WGSL that turns a value of the stored type into the dtype's exact stored value."""
    if dtype is D.uint8:
        return f"(({expr}) & 255u)"
    if dtype is D.int8:
        return f"((({expr}) << 24u) >> 24u)"
    if dtype is D.int16:
        return f"((({expr}) << 16u) >> 16u)"
    if dtype is D.float16:
        return f"_f16r({expr})"
    if dtype is D.bfloat16:
        return f"_bf16r({expr})"
    return expr


def convert(expr: str, src, dst) -> str:
    """WGSL converting a value stored as ``src``'s type into ``dst``'s value (C casts, as PyTorch)."""
    a, b = st(src), st(dst)
    if dst is D.bool:
        return f"select(1u, 0u, ({expr}) == {zero(a)})"  # not !=: NaN is true, and naga's != is ordered
    if src is D.bool:
        return f"{b}({expr})"
    if a == b:
        return fix(dst, expr)
    if a == "f32":  # float -> int: truncate toward zero through i32 (uint8 wraps, like PyTorch's CPU cast)
        inner = f"_f2i({expr})"
        return fix(dst, inner if b == "i32" else f"bitcast<u32>({inner})")
    if b == "f32":
        return fix(dst, f"f32({expr})")
    return fix(dst, f"bitcast<{b}>({expr})")


def zero(t: str) -> str:
    return {"f32": "0.0", "i32": "0i", "u32": "0u"}[t]


def to_words(a: np.ndarray, dtype) -> np.ndarray:
    """Host array -> the 32-bit words stored on the device (C order)."""
    if dtype is D.float64:
        return np.ascontiguousarray(a, dtype=np.float64).view(np.uint32)
    t = st(dtype)
    if dtype is D.int64 and a.size:
        lo, hi = a.min(), a.max()
        if lo < -2**31 or hi >= 2**31:
            raise OverflowError(f"int64 values on device 'wgpu' are computed in 32 bits; values in [{lo}, {hi}] "
                                "cannot be written into a tensor created with 32-bit values (WGSL has no 64-bit "
                                "integers)")
    return np.ascontiguousarray(a, dtype=NP_ST[t])


def from_words(w: np.ndarray, dtype) -> np.ndarray:
    """Stored words (of the stored numpy type) -> a host array of ``dtype``."""
    return w.astype(dtype.np)


def scalar_bits(value, t: str) -> int:
    """A Python scalar as the i32 bit pattern of WGSL type ``t`` (scalars travel in the metadata)."""
    if t == "f32":
        return int(np.array(value, np.float32).view(np.int32))
    v = int(value)
    if t == "u32":
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v
    if not -2**31 <= v < 2**31:
        raise OverflowError(f"the scalar {value} does not fit in the 32-bit integers of device 'wgpu'")
    return v


def read_scalar(t: str, k: str) -> str:
    """WGSL reading metadata slot ``k`` as a value of type ``t``."""
    return f"mt[{k}]" if t == "i32" else f"bitcast<{t}>(mt[{k}])"
