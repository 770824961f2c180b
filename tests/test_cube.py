"""ember.cube's kernel language: each feature's kernel against numpy, on every available target.

Kernels are module-level so a variant compiles once per session; sizes are tiny (compile time
dominates). The C target always runs; "cuda" and "wgpu" join when CuPy / wgpu and a device exist.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from ember import cube
from ember.cube import testing

DEVICES = testing.devices()
RNG = np.random.default_rng(1234)
HERE = os.path.abspath(__file__)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def lineno(text: str) -> int:
    """The line of this file holding ``text`` (for checking where compile errors point)."""
    with open(HERE) as f:
        for k, line in enumerate(f, 1):
            if text in line and "lineno(" not in line:
                return k
    raise AssertionError(text)


# ---- arithmetic and types ------------------------------------------------------------------------
@cube.kernel
def arith_int(a: cube.Array[cube.i32], b: cube.Array[cube.i32], out: cube.Array[cube.i32, 2]):
    i = cube.global_idx.x
    if i < a.size:
        x = a[i]
        y = b[i]
        out[0, i] = x // y
        out[1, i] = x % y
        out[2, i] = (x << 2) ^ (y >> 1) | (x & 7)
        out[3, i] = cube.min(x, y) * 3 - cube.max(x, y)
        out[4, i] = abs(x) + (-y if x > y else ~y)
        out[5, i] = cube.i32(0 <= x < 5 and not (y == 3 or y == -3))
        out[6, i] = x ** 2 + 1


def test_integer_arithmetic_follows_python(device):
    a = RNG.integers(-20, 20, 40).astype(np.int32)
    b = RNG.integers(-5, 6, 40).astype(np.int32)
    b[b == 0] = 7
    out = np.zeros((7, 40), np.int32)
    testing.run(device, arith_int[1, 64], a, b, out)
    assert np.array_equal(out[0], a // b) and np.array_equal(out[1], a % b)
    assert np.array_equal(out[2], (a << 2) ^ (b >> 1) | (a & 7))
    assert np.array_equal(out[3], np.minimum(a, b) * 3 - np.maximum(a, b))
    assert np.array_equal(out[4], np.abs(a) + np.where(a > b, -b, ~b))
    assert np.array_equal(out[5], ((0 <= a) & (a < 5) & ~((b == 3) | (b == -3))).astype(np.int32))
    assert np.array_equal(out[6], a * a + 1)


@cube.kernel
def arith_float(a: cube.Array, b: cube.Array, out: cube.Array[cube.Any, 2]):
    i = cube.global_idx.x
    if i < a.size:
        x = a[i]
        y = b[i]
        out[0, i] = x // y
        out[1, i] = x % y
        out[2, i] = x / y - 0.5 * x
        out[3, i] = cube.max(x, y)
        out[4, i] = cube.fmin(x, y)
        out[5, i] = cube.where(x > y, x, y) ** 3
        out[6, i] = cube.fma(x, y, 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_arithmetic_nan_inf(device, dtype):
    if device == "wgpu" and dtype == np.float64:
        pytest.skip("WGSL has no f64")
    a = np.array([1.5, -7.25, 3.0, np.nan, np.inf, -0.0, 5.0, -2.5], dtype)
    b = np.array([0.5, 2.0, -0.75, 1.0, 2.0, 3.0, np.nan, -1.0], dtype)
    out = np.zeros((7, a.size), dtype)
    testing.run(device, arith_float[1, 32], a, b, out)
    if not testing.ieee(device):  # a GPU's WGSL compiler may assume finite values
        keep = np.isfinite(a) & np.isfinite(b)
        a, b, out = a[keep], b[keep], out[:, keep]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out[0], np.floor_divide(a, b))
        np.testing.assert_array_equal(out[1], np.mod(a, b))
        np.testing.assert_allclose(out[2], a / b - dtype(0.5) * a, rtol=1e-6)
        np.testing.assert_array_equal(out[3], np.maximum(a, b))
        np.testing.assert_array_equal(out[4], np.fmin(a, b))
        np.testing.assert_allclose(out[5], np.where(a > b, a, b) ** 3, rtol=1e-6)
        np.testing.assert_allclose(out[6], a * b + 1, rtol=1e-6)


MATH_FNS = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
            "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil",
            "trunc", "round", "sigmoid", "abs"]


@cube.func
def apply_all(x):
    return (cube.exp(x), cube.exp2(x), cube.expm1(x), cube.log(x), cube.log2(x), cube.log10(x), cube.log1p(x),
            cube.sqrt(x), cube.rsqrt(x), cube.sin(x), cube.cos(x), cube.tan(x), cube.asin(x), cube.acos(x),
            cube.atan(x), cube.sinh(x), cube.cosh(x), cube.tanh(x), cube.asinh(x), cube.acosh(x), cube.atanh(x),
            cube.erf(x), cube.erfc(x), cube.floor(x), cube.ceil(x), cube.trunc(x), cube.round(x), cube.sigmoid(x),
            abs(x))


@cube.kernel
def math_kernel(x: cube.Array, out: cube.Array[cube.Any, 2], flags: cube.Array[cube.bool_, 2]):
    i = cube.global_idx.x
    if i < x.size:
        v = x[i]
        r = apply_all(v)
        for k in cube.static_range(len(r)):
            out[k, i] = r[k]
        flags[0, i] = cube.isnan(v)
        flags[1, i] = cube.isinf(v)
        flags[2, i] = cube.isfinite(v)


def _ref(name, x):
    import scipy.special as sp
    if name == "rsqrt":
        return 1 / np.sqrt(x)
    if name == "sigmoid":
        return sp.expit(x)
    if name in ("erf", "erfc"):
        return getattr(sp, name)(x)
    if name == "round":
        return np.round(x)
    return getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                        "acosh": "arccosh", "atanh": "arctanh"}.get(name, name))(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_intrinsics_match_numpy(device, dtype):
    if device == "wgpu" and dtype == np.float64:
        pytest.skip("WGSL has no f64")
    x = np.array([0.3, -0.7, 2.5, -2.5, 0.5, 1.5, 12.0, -0.0, np.nan, np.inf, -np.inf, 0.99], dtype)
    out = np.zeros((len(MATH_FNS), x.size), dtype)
    flags = np.zeros((3, x.size), bool)
    testing.run(device, math_kernel[1, 16], x, out, flags)
    if not testing.ieee(device):  # a GPU's WGSL compiler may assume finite values
        keep = np.isfinite(x)
        x, out, flags = x[keep], out[:, keep], flags[:, keep]
    tol = 2e-6 if dtype == np.float32 else 1e-13
    with np.errstate(all="ignore"):
        for k, name in enumerate(MATH_FNS):
            ref = _ref(name, x).astype(dtype)
            np.testing.assert_allclose(out[k], ref, rtol=tol, atol=tol, err_msg=name)
    assert np.array_equal(flags[0], np.isnan(x)) and np.array_equal(flags[1], np.isinf(x))
    assert np.array_equal(flags[2], np.isfinite(x))


@cube.kernel
def mixed_types(xi: cube.Array[cube.i64], xu: cube.Array[cube.u32], xb: cube.Array[cube.bool_],
                out: cube.Array[cube.f64], a: cube.i64, s: cube.u32, f: cube.f64, flag: cube.bool_):
    i = cube.global_idx.x
    if i < out.size:
        big = xi[i] * a + 1
        u = xu[i] * s + 3  # u32 arithmetic wraps
        b = xb[i] != flag
        out[i] = cube.f64(big) + cube.f64(u) * f + cube.f64(cube.i32(b))


def test_i64_u32_bool_f64_scalars(device):
    if device == "wgpu":
        pytest.skip("WGSL has no i64/f64")
    xi = np.array([3, -(2 ** 40), 7], np.int64)
    xu = np.array([1, 2 ** 31, 5], np.uint32)
    xb = np.array([True, False, True])
    out = np.zeros(3, np.float64)
    testing.run(device, mixed_types[1, 8], xi, xu, xb, out, 2 ** 33, 4, 0.5, True)
    u = (xu.astype(np.uint64) * 4 + 3) % 2 ** 32
    np.testing.assert_array_equal(out, (xi * 2 ** 33 + 1) + u * 0.5 + (xb != True))  # noqa: E712


# ---- 16-bit floats and vectors -------------------------------------------------------------------
@cube.kernel
def half_copy(x: cube.Array[cube.f32], h: cube.Array[cube.f16], b: cube.Array[cube.bf16], back: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i < x.size:
        h[i] = x[i]
        b[i] = x[i] * 2.0
        back[i] = h[i] + b[i]


def test_f16_bf16_store_round_to_nearest_even(device):
    import ml_dtypes
    x = np.array([1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 65520.0, 1e-7, 3e-5, -2.0, np.inf, 0.1, 1e30,
                  1 + 2 ** -8 + 2 ** -20], np.float32)
    h = np.zeros(x.size, np.float16)
    b = np.zeros(x.size, ml_dtypes.bfloat16)
    back = np.zeros(x.size, np.float32)
    testing.run(device, half_copy[1, 32], x, h, b, back)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(b.astype(np.float32), (x * 2).astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(back, h.astype(np.float32) + b.astype(np.float32))


@cube.kernel
def vec_kernel(x: cube.Array[cube.Any, 2], out: cube.Array[cube.Any, 2], y: cube.Array):
    r = cube.block_idx.x
    j = cube.thread_idx.x
    if j * 4 < x.shape[1]:
        v = x.vec4[r, j]
        w = v * 2.0 + cube.vec4(1.0, 2.0, 3.0, 4.0)
        w.y = cube.max(v.x, v.w)
        out.vec4[r, j] = w
    k = r * cube.block_dim.x + j
    if k * 2 < y.size:
        p = y.vec2[k]
        y.vec2[k] = cube.vec2(p.y, p.x)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_vector_loads_and_stores(device, dtype):
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = RNG.standard_normal((3, 8)).astype(dt)
    out = np.zeros_like(x)
    y = np.arange(10, dtype=np.float32)
    testing.run(device, vec_kernel[3, 4], x, out, y)
    xf = x.astype(np.float32)
    ref = xf * 2 + np.tile(np.float32([1, 2, 3, 4]), 2)
    ref[:, 1::4] = np.maximum(xf[:, 0::4], xf[:, 3::4])
    np.testing.assert_array_equal(out.astype(np.float32), ref.astype(dt).astype(np.float32))
    assert np.array_equal(y, np.arange(10, dtype=np.float32).reshape(5, 2)[:, ::-1].ravel())


# ---- control flow --------------------------------------------------------------------------------
@cube.kernel
def collatz(n0: cube.Array[cube.i32], steps: cube.Array[cube.i32], LIMIT: cube.Const[int]):
    i = cube.global_idx.x
    if i >= n0.size:
        return
    n = n0[i]
    count = 0
    while True:
        if n == 1:
            break
        count += 1
        if count >= LIMIT:
            count = -1
            break
        if n % 2 == 0:
            n = n // 2
            continue
        n = 3 * n + 1
    steps[i] = count


def _collatz(n, limit):
    c = 0
    while n != 1:
        c += 1
        if c >= limit:
            return -1
        n = n // 2 if n % 2 == 0 else 3 * n + 1
    return c


def test_while_break_continue_return_and_consts(device):
    n0 = np.arange(1, 40, dtype=np.int32)
    for limit in (100, 20):
        steps = np.zeros_like(n0)
        testing.run(device, collatz[2, 32], n0, steps, limit)
        assert steps.tolist() == [_collatz(int(n), limit) for n in n0]
    variants = [k for k in collatz.variants if k[0] == "c"]
    assert device != "cpu" or len(variants) == 2  # one variant per constant value


@cube.kernel
def loops2d(out: cube.Array[cube.f32, 2], step: cube.i32):
    r = cube.global_idx.y
    c = cube.global_idx.x
    if r < out.shape[0] and c < out.shape[1]:
        acc = 0.0
        for k in range(r, -1, -1):
            acc += cube.f32(k)
        for _k in range(0, c, step):
            acc += 0.5
        for k in cube.static_range(3):
            acc = acc * 2.0 if k == 1 else acc
        out[r, c] = acc + cube.f32(cube.grid_dim.x * 100 + cube.block_dim.y)


def test_2d_grid_and_block_and_loops(device):
    out = np.zeros((7, 11), np.float32)
    testing.run(device, loops2d[(3, 2), (4, 4)], out, 3)
    r, c = np.meshgrid(np.arange(7), np.arange(11), indexing="ij")
    ref = (r * (r + 1) / 2 + 0.5 * np.ceil(c / 3)) * 2 + 304
    np.testing.assert_array_equal(out, ref)


# ---- shared memory, barriers, warps --------------------------------------------------------------
@cube.kernel
def reverse_block(x: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    buf = cube.shared(cube.f32, cube.block_dim.x)
    t = cube.thread_idx.x
    i = cube.global_idx.x
    buf[t] = x[i]
    cube.sync_threads()
    out[i] = buf[cube.block_dim.x - 1 - t] + cube.f32(t)


@cube.kernel
def tree_sum(x: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    buf = cube.shared(cube.f32, 64)
    t = cube.thread_idx.x
    if cube.block_idx.x >= out.size:  # a uniform early exit before the barriers
        return
    buf[t] = x[cube.global_idx.x]
    cube.sync_threads()
    s = 32
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cube.sync_threads()
        s //= 2
    if t == 0:
        out[cube.block_idx.x] = buf[0]


def test_shared_memory_and_barriers(device):
    x = RNG.standard_normal(128).astype(np.float32)
    out = np.zeros(128, np.float32)
    testing.run(device, reverse_block[2, 64], x, out)
    np.testing.assert_array_equal(out, x.reshape(2, 64)[:, ::-1].ravel() + np.tile(np.arange(64, dtype=np.float32), 2))
    sums = np.zeros(2, np.float32)
    testing.run(device, tree_sum[3, 64], x, sums)  # the third block returns early
    np.testing.assert_allclose(sums, x.reshape(2, 64).sum(1), rtol=1e-5)


@cube.kernel
def warp_ops(x: cube.Array[cube.f32], out: cube.Array[cube.f32, 2]):
    i = cube.global_idx.x
    v = x[i]
    out[0, i] = cube.warp_sum(v)
    out[1, i] = cube.warp_max(v)
    out[2, i] = cube.shfl(v, 3)
    out[3, i] = cube.shfl_down(v, 1)
    out[4, i] = cube.shfl_xor(v, 5)
    out[5, i] = cube.f32(cube.lane_id())
    w = v
    offset = 16
    while offset > 0:  # a shuffle reduction in a uniform loop
        w += cube.shfl_xor(w, offset)
        offset //= 2
    out[6, i] = w


def test_warp_reductions_and_shuffles(device):
    if device == "wgpu":
        pytest.skip("subgroup operations are not used on the wgsl target")
    x = RNG.integers(-50, 50, 64).astype(np.float32)
    out = np.zeros((7, 64), np.float32)
    testing.run(device, warp_ops[1, 64], x, out)
    w = x.reshape(2, 32)
    lane = np.arange(32)
    assert np.array_equal(out[0], np.repeat(w.sum(1), 32)) and np.array_equal(out[1], np.repeat(w.max(1), 32))
    assert np.array_equal(out[2], np.repeat(w[:, 3], 32))
    down = np.where(lane + 1 < 32, np.roll(w, -1, axis=1), w)
    assert np.array_equal(out[3], down.ravel())
    assert np.array_equal(out[4], w[:, lane ^ 5].ravel())
    assert np.array_equal(out[5], np.tile(lane, 2)) and np.array_equal(out[6], out[0])


@cube.kernel
def early_stop(x: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    buf = cube.shared(cube.f32, 32)
    t = cube.thread_idx.x
    total = 0.0
    k = 0
    while True:
        buf[t] = x[k * 32 + t]
        cube.sync_threads()
        if buf[0] < 0.0:  # the same in every thread: a block-level break
            break
        total += buf[t]
        k += 1
        cube.sync_threads()
    out[t] = total


@cube.kernel
def return_between_barriers(out: cube.Array[cube.i32]):
    buf = cube.shared(cube.i32, 64)
    t = cube.thread_idx.x
    for r in range(3):
        buf[t] = t * r
        cube.sync_threads()
        if t == 5 and r == 1:
            return  # thread 5 leaves; the others go on through the barriers
        out[t] += buf[63 - t]
        cube.sync_threads()


@cube.kernel
def warps_in_3d_blocks(out: cube.Array[cube.i32, 3], sums: cube.Array[cube.f32]):
    tz = cube.thread_idx.z
    out[tz, cube.thread_idx.y, cube.thread_idx.x] = cube.lane_id()
    v = cube.f32(tz + 1)
    acc = 0.0
    for _ in range(3):
        v = v * 2.0
        acc += cube.warp_sum(v)
    if cube.lane_id() == 0:
        sums[(tz * 3 + cube.thread_idx.y) * 8 // 32] = acc


def test_block_level_break_returns_between_barriers_and_3d_warps(device):
    if device == "wgpu":
        pytest.skip("WGSL refuses barriers after non-uniform exits and has no warp operations here")
    x = np.ones(32 * 5, np.float32)
    x[32 * 3] = -1
    out = np.zeros(32, np.float32)
    testing.run(device, early_stop[1, 32], x, out)
    assert np.all(out == 3.0)
    o = np.zeros(64, np.int32)
    testing.run(device, return_between_barriers[1, 64], o)
    t = np.arange(64)
    ref = (63 - t) * 3
    ref[5], ref[58] = 0, 10  # buf[5] keeps its r=1 value after thread 5 returns
    assert np.array_equal(o, ref)
    lanes = np.zeros((2, 3, 8), np.int32)
    sums = np.zeros(2, np.float32)
    testing.run(device, warps_in_3d_blocks[1, (8, 3, 2)], lanes, sums)
    assert np.array_equal(lanes.ravel(), np.arange(48) % 32)
    tz = np.arange(48) // 24 + 1.0
    assert sums.tolist() == [tz[:32].sum() * 14, tz[32:].sum() * 14]


@cube.kernel
def atomics(x: cube.Array[cube.i32], f: cube.Array[cube.f32], counts: cube.Array[cube.i32],
            stats: cube.Array[cube.f32], ids: cube.Array[cube.i32]):
    local = cube.shared(cube.i32, 4)
    t = cube.thread_idx.x
    if t < 4:
        local[t] = 0
    cube.sync_threads()
    i = cube.global_idx.x
    if i < x.size:
        v = x[i]
        cube.atomic_add(counts, v % 8, 1)
        cube.atomic_add(local, v % 4, 1)
        cube.atomic_add(stats, 0, f[i])
        cube.atomic_max(stats, 1, f[i])
        cube.atomic_min(stats, 2, f[i])
        old = cube.atomic_cas(ids, 0, -1, i)  # the first thread to get here claims slot 0
        if old == -1:
            cube.atomic_xchg(ids, 1, 1)
    cube.sync_threads()
    if t < 4:
        cube.atomic_add(counts, 8 + t, local[t])


def test_atomics_across_blocks(device):
    x = RNG.integers(0, 100, 1000).astype(np.int32)
    f = RNG.integers(-1000, 1000, 1000).astype(np.float32)
    counts = np.zeros(12, np.int32)
    stats = np.array([0.0, -np.inf, np.inf], np.float32)
    ids = np.array([-1, 0], np.int32)
    testing.run(device, atomics[8, 128], x, f, counts, stats, ids)
    assert np.array_equal(counts[:8], np.bincount(x % 8, minlength=8))
    assert np.array_equal(counts[8:], np.bincount(x % 4, minlength=4))
    assert stats[0] == f.sum() and stats[1] == f.max() and stats[2] == f.min()  # integers: exact in any order
    assert 0 <= ids[0] < 1000 and ids[1] == 1


# ---- helpers, locals, masks ----------------------------------------------------------------------
@cube.func
def poly(x, c):
    acc = x * 0.0
    for k in cube.static_range(len(c)):
        acc = acc * x + c[k]
    return acc


COEFFS = (1.0, -2.0, 0.5)


@cube.kernel
def helpers(x: cube.Array[cube.f32], out: cube.Array[cube.f32], n: cube.i32):
    i = cube.global_idx.x
    hist = cube.local(cube.f32, 3)
    for k in cube.static_range(3):
        hist[k] = cube.load(x, i + k, mask=i + k < n, other=-1.0)
    a, b = hist[0], hist[2]
    a, b = b, a
    cube.store(out, i, poly(a - b, COEFFS) + math.pi * 0.0, mask=i < n)


def test_funcs_locals_masks_and_swaps(device):
    x = RNG.standard_normal(20).astype(np.float32)
    out = np.full(32, 7.0, np.float32)
    testing.run(device, helpers[1, 32], x, out, 20)
    xp = np.concatenate([x, [-1.0, -1.0]]).astype(np.float32)
    d = xp[2:22] - xp[:20]
    np.testing.assert_allclose(out[:20], (d - 2) * d + 0.5, rtol=1e-6)
    assert np.all(out[20:] == 7.0)


def test_empty_grid_is_a_no_op():
    out = np.zeros(4, np.float32)
    reverse_block[0, 64](out, out)
    assert np.all(out == 0)


# ---- ember tensors ------------------------------------------------------------------------------
@cube.kernel
def axpy(a: cube.f32, x: cube.Array[cube.f32], y: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i < y.size:
        y[i] = a * x[i] + y[i]


def test_ember_tensors_in_place():
    import ember
    x = ember.arange(10, dtype=ember.float32)
    y = ember.ones(2, 5)  # any rank: flat arrays index the storage
    axpy[1, 32](2.0, x, y)
    assert y.tolist() == [[1.0, 3.0, 5.0, 7.0, 9.0], [11.0, 13.0, 15.0, 17.0, 19.0]]
    w = ember.zeros(4, 3)
    with pytest.raises(cube.LaunchError, match="not C-contiguous"):
        axpy[1, 32](1.0, x[:10], w.t())
    p = ember.ones(10, requires_grad=True)
    with pytest.raises(cube.LaunchError, match="requires grad"):
        axpy[1, 32](1.0, x, p)
    axpy[1, 32](1.0, p, y.view(10))  # reading a tensor that requires grad is fine
    assert y[0, 0].item() == 2.0
    row = y[1]  # a contiguous view with an offset: the kernel writes into its base's storage
    axpy[1, 32](-1.0, ember.ones(5), row)
    assert y.tolist()[1] == [11.0, 13.0, 15.0, 17.0, 19.0] and y.tolist()[0][0] == 2.0


def test_kernel_write_bumps_version_for_autograd():
    import ember
    a = ember.ones(4, requires_grad=True)
    y = ember.ones(4)
    z = a * y  # saves y for the gradient
    axpy[1, 32](1.0, ember.ones(4), y)
    with pytest.raises(RuntimeError):
        z.sum().backward()


# ---- errors --------------------------------------------------------------------------------------
def _kernel_error(src: str) -> cube.CompileError:
    ns = {"cube": cube, "np": np}
    path = os.path.join(os.path.dirname(HERE), "__cube_err_kernel.py")
    code = compile(src, path, "exec")
    import linecache
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)
    exec(code, ns)
    k = ns["k"]
    out = np.zeros(4, np.float32)
    with pytest.raises(cube.CompileError) as info:
        k[1, 4](out)
    return info.value


@pytest.mark.parametrize("body, message, line", [
    ("    out[0] = [v for v in range(3)]\n", "list comprehension is not supported", 3),
    ("    x = cube.thread_idx.x\n    out[0] = x + 1.5\n", "float literal 1.5 can't be combined with i32", 4),
    ("    out[0] = undefined_thing + 1\n", "unknown name 'undefined_thing'", 3),
    ("    i = cube.thread_idx.x\n    if i < 2:\n        cube.sync_threads()\n", "depends on the thread", 4),
    ("    out[0] = cube.f64(1.0)\n", "storing f64 into 'out'", 3),
    ("    out[0] = cube.exp(3)\n", "needs float arguments, got i32", 3),
    ("    for i in range(3):\n        i = 2\n", "loop variable 'i' is assigned inside the loop", 3),
])
def test_compile_errors_point_at_the_kernel_line(body, message, line):
    src = "@cube.kernel\ndef k(out: cube.Array[cube.f32]):\n" + body
    err = _kernel_error(src)
    assert message in str(err), str(err)
    assert err.line == line and err.filename.endswith("__cube_err_kernel.py")
    assert str(err).startswith(f"{err.filename}:{line}: ")
    assert src.splitlines()[line - 1].strip() in str(err)


def test_launch_errors():
    x = np.zeros(8, np.float32)
    with pytest.raises(cube.LaunchError, match="must be an array of f32.*got f64"):
        axpy[1, 8](1.0, np.zeros(8), x)
    with pytest.raises(cube.LaunchError, match="takes 3 arguments"):
        axpy[1, 8](1.0, x)
    with pytest.raises(cube.LaunchError, match="must be a number"):
        axpy[1, 8]("a", x, x)
    with pytest.raises(cube.LaunchError, match="not C-contiguous"):
        axpy[1, 8](1.0, np.zeros(16, np.float32)[::2], x)
    with pytest.raises(cube.LaunchError, match="read-only"):
        ro = np.zeros(8, np.float32)
        ro.flags.writeable = False
        axpy[1, 8](1.0, x, ro)
    with pytest.raises(cube.LaunchError, match="at most 1024 threads"):
        axpy[1, (64, 32)]
    with pytest.raises(cube.LaunchError, match="must have 2 dims"):
        loops2d[1, 1](x, 1)
    with pytest.raises(cube.LaunchError, match=r"'LIMIT' of kernel 'collatz' must be an int \(cube.Const\[int\]\)"):
        collatz[1, 1](np.zeros(2, np.int32), np.zeros(2, np.int32), 2.5)
    with pytest.raises(cube.LaunchError, match=r"kern\[grid, block\]|\[grid, block\]"):
        axpy(1.0, x, x)


def test_generated_source_is_readable_c():
    src = axpy.generated_source(1.0, np.zeros(4, np.float32), np.zeros(4, np.float32), block=128)
    assert "void cb_entry" in src and "#pragma omp simd" in src and "y[i] = ((a * x[i]) + y[i]);" in src


@cube.kernel
def masked_scale(x: cube.Array[cube.f32], m: cube.Array[cube.bool_], out: cube.Array[cube.f32],
                 flags: cube.Array[cube.bool_]):
    i = cube.global_idx.x
    if i < x.size:
        out[i] = cube.where(m[i], cube.f32(0.0), x[i] * 2.0)
        flags[i] = x[i] > 0.5


def test_bool_arrays_are_bytes_in_c(device):
    # C stores bools as bytes (uint8_t loads compared with 0 vectorise next to floats; C bool loads don't)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(300).astype(np.float32)
    m = rng.random(300) > 0.5
    out, flags = np.zeros(300, np.float32), np.zeros(300, np.bool_)
    testing.run(device, masked_scale[3, 128], x, m, out, flags)
    np.testing.assert_array_equal(out, np.where(m, np.float32(0), x * np.float32(2)))
    np.testing.assert_array_equal(flags, x > 0.5)
    src = masked_scale.generated_source(x, m, out, flags, block=128)
    assert "const uint8_t *m" in src and "(m[i] != 0)" in src and "(uint8_t)(" in src


def test_no_compiler_is_a_clear_error(monkeypatch, tmp_path):
    from ember.cube.runtime import c as cr
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    saved = cr._COMPILER
    cr._COMPILER = None
    try:
        with pytest.raises(cube.CompilerUnavailable, match="needs a C compiler"):
            cr.compiler()
    finally:
        cr._COMPILER = saved


def test_software_f16_and_no_openmp_paths(monkeypatch):
    """The portable f16 conversion and a build without OpenMP give the same results."""
    import ml_dtypes

    from ember.cube.runtime import c as cr
    comp = cr.compiler()
    monkeypatch.setattr(comp, "flags", [f for f in comp.flags if f != "-fopenmp"] + ["-DCB_NO_FLOAT16"])
    fresh = cube.kernel(half_copy.fn)
    x = (RNG.standard_normal(40) * 10.0 ** RNG.integers(-8, 6, 40)).astype(np.float32)
    x[:6] = [65520.0, 65519.0, 1e-7, np.nan, -np.inf, 2.0 ** -24 * 1.5]
    h = np.zeros(40, np.float16)
    b = np.zeros(40, ml_dtypes.bfloat16)
    back = np.zeros(40, np.float32)
    fresh[2, 32](x, h, b, back)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(b.astype(np.float32), (x * 2).astype(ml_dtypes.bfloat16).astype(np.float32))
