"""The C target's uniform-code pass (ember/cube/uniform.py): values and branches that are the same in
every thread of a block leave the simd thread loop. Each kernel runs against numpy on every available
target (the pass is C-only; the others must agree); the C source is checked for the rewritten shape."""

from __future__ import annotations

import numpy as np
import pytest

from ember import cube
from ember.cube import testing

DEVICES = testing.devices()
RNG = np.random.default_rng(7)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@cube.kernel
def rows_fast_path(a: cube.Array[cube.f32], b: cube.Array[cube.f32], out: cube.Array[cube.f32], n: cube.i32,
                   per_row: cube.i32, blocks: cube.i32):
    # the fused elementwise kernels' shape: a grid-stride loop over (row, block of the row), a full-block
    # fast path and a bounds-checked tail
    for bx in range(cube.block_idx.x, blocks, cube.grid_dim.x):
        row = bx // per_row
        jb = bx - row * per_row
        j = jb * cube.block_dim.x + cube.thread_idx.x
        if (jb + 1) * cube.block_dim.x <= n:
            out[row * n + j] = a[row * n + j] * 2.0 + b[j]
        else:
            if j < n:
                out[row * n + j] = a[row * n + j] * 2.0 - b[j]
        cube.sync_threads()


@pytest.mark.parametrize("n", [64, 100, 17])
def test_uniform_branch_matches_numpy(device, n):
    block, rows = 32, 5
    per_row = -(-n // block)
    a = RNG.standard_normal(rows * n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(rows * n, np.float32)
    testing.run(device, rows_fast_path[3, block], a, b, out, n, per_row, rows * per_row)
    full = (n // block) * block  # columns in full blocks take the fast path, the rest the tail
    want = (a.reshape(rows, n) * 2.0).astype(np.float32)
    want[:, :full] += b[:full]
    want[:, full:] -= b[full:]
    np.testing.assert_allclose(out.reshape(rows, n), want, rtol=1e-6)


def test_uniform_branch_is_unswitched_in_c():
    a = np.zeros(64, np.float32)
    src = rows_fast_path.generated_source(a, np.zeros(32, np.float32), np.zeros(64, np.float32), 32, 1, 2,
                                          block=32)
    loop = src.index("#pragma omp simd")
    # the row and block-of-row are computed once per block, before the thread loop...
    assert "row = cb_floordiv_i32(bx, per_row);" in src[:loop]
    # ...and the branch on them picks one of two thread loops
    assert src.count("#pragma omp simd") == 2
    assert src.index("if (") < loop


@cube.kernel
def early_return(a: cube.Array[cube.f32], out: cube.Array[cube.f32], d: cube.i32):
    i = cube.global_idx.x
    if i >= a.size:
        return
    q = 100 // d  # must not run for blocks whose threads all returned (d == 0 there would trap)
    if q > 10:
        out[i] = a[i] + cube.f32(q)
    else:
        out[i] = a[i] - cube.f32(q)


def test_nothing_is_hoisted_past_a_return(device):
    a = RNG.standard_normal(40).astype(np.float32)
    out = np.zeros(40, np.float32)
    testing.run(device, early_return[1, 64], a, out, 4)
    np.testing.assert_allclose(out, a + 25)
    src = early_return.generated_source(a, out, 4, block=64)
    loop = src.index("#pragma omp simd")
    assert "100" not in src[:loop]


@cube.kernel
def reassigned(a: cube.Array[cube.f32], out: cube.Array[cube.f32], s: cube.i32):
    for bx in range(cube.block_idx.x, 2, cube.grid_dim.x):
        k = bx * s  # assigned twice: a per-thread variable, not hoisted
        j = bx * cube.block_dim.x + cube.thread_idx.x
        if j % 2 == 0:
            k = k + 1
        if k > 0:
            out[j] = a[j] + cube.f32(k)
        else:
            out[j] = a[j]
        cube.sync_threads()


def test_a_variable_assigned_twice_stays_per_thread(device):
    a = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    testing.run(device, reassigned[1, 32], a, out, 3)
    j = np.arange(64)
    k = (j // 32) * 3 + (j % 2 == 0)
    np.testing.assert_allclose(out, np.where(k > 0, a + k, a), rtol=1e-6)


@cube.kernel
def uniform_with_loop(a: cube.Array[cube.f32], out: cube.Array[cube.f32], n: cube.i32, stop: cube.i32):
    for bx in range(cube.block_idx.x, 2, cube.grid_dim.x):
        j = bx * cube.block_dim.x + cube.thread_idx.x
        if bx < stop:  # uniform: unswitched; the loop inside keeps its break
            acc = 0.0
            for k in range(n):
                if k > j:
                    break
                acc += a[k]
            out[j] = acc
        else:
            out[j] = -1.0
        cube.sync_threads()


def test_a_loop_with_break_inside_a_uniform_branch(device):
    a = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    testing.run(device, uniform_with_loop[1, 32], a, out, 64, 1)
    want = np.where(np.arange(64) < 32, np.cumsum(a.astype(np.float64)), -1.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
