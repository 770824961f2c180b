"""The CUDA target. Without CuPy and a GPU, every kernel of the cube tests is still rendered to CUDA C and
checked by the host C++ compiler against stub declarations of CUDA's built-ins (syntax and types); with
them, CuPy arrays launch directly and the other test files run their kernels on "cuda" too."""

from __future__ import annotations

import os
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
import test_cube as T  # noqa: E402 - the kernels of the language tests

from ember import cube
from ember.cube import testing

L = cube.library
HAS_CUDA = testing.has_cuda()

STUB = r"""
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define asm(...) 0
struct uint3 { unsigned x, y, z; };
extern uint3 threadIdx, blockIdx, gridDim;
#define DEF(T, N) struct N##2 { T x, y; }; struct N##4 { T x, y, z, w; }; \
  inline N##2 make_##N##2(T a, T b) { return {a, b}; } \
  inline N##4 make_##N##4(T a, T b, T c, T d) { return {a, b, c, d}; }
DEF(float, float) DEF(double, double) DEF(int, int) DEF(unsigned, uint) DEF(long long, longlong)
DEF(unsigned char, uchar)
void __syncthreads(); unsigned __activemask();
template <class T> T __shfl_sync(unsigned, T, int); template <class T> T __shfl_down_sync(unsigned, T, int);
template <class T> T __shfl_up_sync(unsigned, T, int); template <class T> T __shfl_xor_sync(unsigned, T, int);
template <class T> T atomicAdd(T*, T); template <class T> T atomicSub(T*, T); template <class T> T atomicMax(T*, T);
template <class T> T atomicMin(T*, T); template <class T> T atomicAnd(T*, T); template <class T> T atomicOr(T*, T);
template <class T> T atomicXor(T*, T); template <class T> T atomicExch(T*, T);
template <class T> T atomicCAS(T*, T, T);
template <class T> T __shfl(T, int); template <class T> T __shfl_down(T, int);
template <class T> T __shfl_up(T, int); template <class T> T __shfl_xor(T, int);
float __int_as_float(int); int __float_as_int(float); float __uint_as_float(unsigned); unsigned __float_as_uint(float);
double __longlong_as_double(long long); long long __double_as_longlong(double);
"""
MATH = ("exp exp2 expm1 log log2 log10 log1p sqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc "
        "floor ceil trunc rint fabs").split()
MATH2 = "pow atan2 copysign hypot fmod fmin fmax".split()


def _stub() -> str:
    lines = [STUB]
    for t, s in (("float", "f"), ("double", "")):
        lines += [f"{t} {n}{s}({t});" for n in MATH] + [f"{t} {n}{s}({t}, {t});" for n in MATH2]
        lines.append(f"{t} fma{s}({t}, {t}, {t});")
    return "\n".join(lines)


def _samples():
    f32 = np.zeros(8, np.float32)
    i32 = np.zeros(8, np.int32)
    f16 = np.zeros((3, 8), np.float16)
    bf = np.zeros((3, 8), ml_dtypes.bfloat16)
    m = np.zeros((4, 8), np.float32)
    yield T.arith_int, (i32, i32, np.zeros((7, 8), np.int32)), 64
    for dt in (np.float32, np.float64):
        yield T.arith_float, (np.zeros(8, dt), np.zeros(8, dt), np.zeros((7, 8), dt)), 32
        yield T.math_kernel, (np.zeros(8, dt), np.zeros((29, 8), dt), np.zeros((3, 8), bool)), 16
    yield T.mixed_types, (np.zeros(3, np.int64), np.zeros(3, np.uint32), np.zeros(3, bool), np.zeros(3),
                          1, 1, 1.0, True), 8
    yield T.half_copy, (f32, np.zeros(8, np.float16), np.zeros(8, ml_dtypes.bfloat16), f32), 32
    yield T.vec_kernel, (f16, f16, f32), 4
    yield T.vec_kernel, (bf, bf, f32), 4
    yield T.vec_kernel, (m, m, np.zeros(8, np.float64)), 4
    yield T.collatz, (i32, i32, 10), 32
    yield T.loops2d, (m, 1), (4, 4)
    yield T.reverse_block, (f32, f32), 64
    yield T.tree_sum, (f32, f32), 64
    yield T.warp_ops, (f32, m), 64
    yield T.atomics, (i32, f32, i32, f32, i32), 128
    yield T.helpers, (f32, f32, 8), 32
    yield L.reduce_rows_kernel, (m, f32, "max"), 256
    yield L.matmul_kernel, (m, m, m, 32, 32, 16, 4, 4, True, False), (8, 8)
    yield L.matmul_kernel, (m, m, m, 32, 32, 16, 4, 4, True, True), (8, 8)
    yield L.matmul_kernel, (f16[:, :4].copy(), f16[:, :4].copy(), f16[:, :4].copy(), 32, 32, 16, 4, 4, False, False), \
        (8, 8)
    yield L.softmax_rows_kernel, (m, m), 256
    yield L.histogram_kernel, (f32, i32, 0.0, 1.0, 10), 256
    yield L.scan_blocks_kernel, (i32, i32, i32), 256
    yield L.transpose_kernel, (m, m, 32), (32, 8)

    @cube.kernel
    def more_atomics(a: cube.Array[cube.i64], f: cube.Array[cube.f64], g: cube.Array[cube.f32]):
        i = cube.global_idx.x
        cube.atomic_sub(a, 0, cube.i64(i))
        cube.atomic_max(a, 1, cube.i64(i))
        cube.atomic_xor(a, 2, cube.i64(i))
        cube.atomic_cas(a, 3, cube.i64(0), cube.i64(i))
        cube.atomic_max(f, 0, cube.f64(i))
        cube.atomic_xchg(f, 1, cube.f64(i))
        cube.atomic_cas(f, 2, 0.0, cube.f64(i))
        cube.atomic_sub(g, 0, 1.0)
        cube.atomic_cas(g, 1, 0.0, 2.0)

    yield more_atomics, (np.zeros(4, np.int64), np.zeros(4), np.zeros(4, np.float32)), 32
    yield _hinted, (np.zeros(16, np.float32), np.zeros(16, np.int32), np.zeros(16, np.float32), f32), 4


@cube.kernel(eviction_policy="evict_last")
def _hinted(x: cube.Array[cube.f32], n: cube.Array[cube.i32], io: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    # x and n are only read (their vector loads take the hint), io is read and written (its loads stay plain)
    i = cube.global_idx.x
    if i * 4 < out.size:
        k = n.vec4[i]
        v = x.vec4[i] * 2.0 + io.vec4[i]
        io.vec4[i] = v
        out.vec4[i] = v + cube.vec4(cube.f32(k.x), cube.f32(k.y), cube.f32(k.z), cube.f32(k.w)) + x[i]


def _bundle(target: str) -> str:
    """Every sample kernel rendered for ``target``, each in its own namespace (helpers repeat)."""
    parts = []
    for n, (k, args, block) in enumerate(_samples()):
        src = k.generated_source(*args, block=block, device=target)
        assert 'extern "C" __global__' in src and "__launch_bounds__" in src
        head, _, body = src.partition("/* cube kernel")
        body = ("/* cube kernel" + body).replace('extern "C"', "").replace("cb_kernel(", f"cb_kernel_{n}(")
        helpers = "\n".join(ln for ln in head.splitlines() if not ln.startswith(("typedef", "#include")))
        parts.append(f"namespace k{n} {{\n{helpers}\n{body}\n}}")
    return "\n".join(parts)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler")
def test_cuda_sources_compile_against_stubs(tmp_path):
    text = "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n" \
           "typedef unsigned long long uint64_t; typedef unsigned short uint16_t;\n" + _stub() + "\n" + _bundle("cuda")
    f = tmp_path / "all.cpp"
    f.write_text(text)
    r = subprocess.run(["g++", "-std=c++14", "-fsyntax-only", "-Wno-unused", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-5000:]


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs hipcc (Debian: apt-get install hipcc)")
def test_hip_sources_compile_with_hipcc(tmp_path):
    f = tmp_path / "all.hip"
    f.write_text("#include <hip/hip_runtime.h>\n" + _bundle("hip"))
    env = dict(os.environ, HIP_PLATFORM="amd")
    r = subprocess.run(["hipcc", "--offload-arch=gfx90a", "-c", str(f), "-o", str(tmp_path / "all.o")], env=env,
                       capture_output=True, text=True, timeout=300)
    if "error" in r.stderr and "unknown" in r.stderr.lower() and "offload-arch" in r.stderr:
        pytest.skip("hipcc without the AMD toolchain")
    assert r.returncode == 0, r.stderr[-5000:]
    assert (tmp_path / "all.o").stat().st_size > 0


@pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
def test_cupy_arrays_launch_directly():
    import cupy
    x = cupy.arange(100, dtype=cupy.float32)
    y = cupy.ones(100, dtype=cupy.float32)
    T.axpy[1, 128](2.0, x, y)
    assert cupy.asnumpy(y).tolist() == [2.0 * k + 1 for k in range(100)]
    with pytest.raises(cube.LaunchError, match="different devices"):
        T.axpy[1, 128](2.0, np.zeros(100, np.float32), y)
    m = cupy.asarray(np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32))
    np.testing.assert_allclose(cupy.asnumpy(L.matmul(m, m.T.copy())), cupy.asnumpy(m @ m.T), rtol=1e-3, atol=1e-3)


@pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
def test_vector_access_checks_alignment():
    import cupy
    x = cupy.zeros((3, 6), cupy.float32)  # rows of 6 are not whole vec4s
    with pytest.raises(cube.LaunchError, match="multiple of 4"):
        T.vec_kernel[3, 4](x, x, cupy.zeros(8, cupy.float32))


@cube.kernel
def _mul_add(a: cube.Array[cube.f32], b: cube.Array[cube.f32], c: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i < out.size:
        out[i] = a[i] * b[i] + c[i]


_mul_add_contracted = cube.kernel(_mul_add.fn, name="_mul_add_contracted", contract=True)


def _fma_operands():
    # a * b is not representable in float32, so rounding it before the add shows in the sum
    a = np.full(256, 1.0 + 2.0 ** -12, np.float32)
    c = -(a.astype(np.float64) ** 2).astype(np.float32)
    return a, a.copy(), c


def test_contract_is_a_compile_option_the_c_target_ignores():
    """contract=True changes only how GPU compilers may treat a * b + c: on the C target (always
    -ffp-contract=off) the two kernels give numpy's two-rounding result."""
    assert _mul_add_contracted.contract and not _mul_add.contract
    a, b, c = _fma_operands()
    want = a * b + c  # numpy: the product rounds to float32, then the sum
    for kern in (_mul_add, _mul_add_contracted):
        out = np.empty_like(a)
        kern[1, 256](a, b, c, out)
        np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
def test_contract_gives_the_fused_multiply_add_on_cuda():
    import cupy
    a, b, c = _fma_operands()
    fused = (a.astype(np.float64) * b + c).astype(np.float32)  # one rounding, as an FMA
    assert not np.array_equal(fused, a * b + c)
    for kern, want in ((_mul_add, a * b + c), (_mul_add_contracted, fused)):
        out = cupy.empty(256, np.float32)
        kern[1, 256](cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), out)
        np.testing.assert_array_equal(cupy.asnumpy(out), want)


def _hinted_operands():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(np.float32)
    n = rng.integers(-9, 9, 64).astype(np.int32)
    io = rng.standard_normal(64).astype(np.float32)
    v = x * 2.0 + io
    return (x, n, io), (v, v + n.astype(np.float32) + x[np.arange(64) // 4])  # out: x[i] added to vector i


def test_eviction_policy_hints_the_vector_loads_of_read_only_arrays():
    """cube.kernel(eviction_policy=...) renders on CUDA as PTX loads with an L1 priority and an L2 cache
    policy, for the vector loads of arrays the kernel doesn't write; HIP and the C target ignore it and the
    kernel computes the same values."""
    (x, n, io), (want_io, want) = _hinted_operands()
    out = np.empty_like(x)
    io_c = io.copy()
    _hinted[1, 16](x, n, io_c, out)
    np.testing.assert_allclose(io_c, want_io, rtol=1e-6)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    src = _hinted.generated_source(x, n, io, out, block=16, device="cuda")
    assert "createpolicy.fractional.L2::evict_last.b64" in src
    for ptx in ("f32", "b32"):
        assert f"ld.global.L1::evict_last.L2::cache_hint.v4.{ptx}" in src
    assert "cb_ld_evict_last_f32x4(&x[" in src and "cb_ld_evict_last_i32x4(&n[" in src
    assert "cb_ld_evict_last_f32x4(&io[" not in src  # written by the kernel: a plain load
    assert "reinterpret_cast<const float4 *>(&io[" in src
    assert "asm" not in _hinted.generated_source(x, n, io, out, block=16, device="hip")
    plain = cube.kernel(_hinted.fn)
    assert "cache_hint" not in plain.generated_source(x, n, io, out, block=16, device="cuda")


def test_eviction_policy_must_be_a_known_hint():
    with pytest.raises(ValueError, match="eviction_policy must be one of .*'evict_first', 'evict_last'.* got 'keep'"):
        cube.kernel(_hinted.fn, eviction_policy="keep")


@pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
def test_eviction_policy_kernels_run_on_cuda():
    import cupy
    (x, n, io), (want_io, want) = _hinted_operands()
    for policy in ("evict_last", "evict_first"):
        kern = cube.kernel(_hinted.fn, eviction_policy=policy)
        io_d, out = cupy.asarray(io), cupy.empty(64, np.float32)
        kern[1, 16](cupy.asarray(x), cupy.asarray(n), io_d, out)
        np.testing.assert_allclose(cupy.asnumpy(io_d), want_io, rtol=1e-6)
        np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=1e-6)
