"""The WebGPU target (wgpu-py; lavapipe on CPU-only machines): arrays, aliasing, big grids, packed
16-bit and bool storage, and the errors for what WGSL lacks. The language and library tests also run
their kernels here when wgpu finds an adapter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ember import cube
from ember.cube import testing

pytestmark = pytest.mark.skipif(not testing.has_wgpu(), reason="needs wgpu and an adapter (pip install wgpu; "
                                                               "apt-get install mesa-vulkan-drivers)")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.float16, ml_dtypes.bfloat16, np.bool_])
def test_arrays_round_trip(dtype):
    from ember.cube.runtime.wgpu import WgpuArray
    a = (np.arange(7) % 3).astype(dtype)
    w = WgpuArray.from_numpy(a)
    assert w.shape == (7,) and np.array_equal(w.numpy(), a) and w.numpy().dtype == a.dtype
    assert WgpuArray.empty((0, 3), cube.f32).numpy().shape == (0, 3)


@cube.kernel
def where_index(flags: cube.Array[cube.bool_], out: cube.Array[cube.i32], halves: cube.Array[cube.f16]):
    i = cube.global_idx.x
    if i < out.size:
        flags[i] = i % 3 == 0
        halves[i] = cube.f32(i) + 0.25
        out[i] = cube.block_idx.x + cube.i32(flags[i])


def test_packed_writes_and_a_grid_past_65535_blocks():
    from ember.cube.runtime.wgpu import WgpuArray
    n = 70001  # one thread per block: more blocks than one dispatch dimension holds
    flags = WgpuArray.empty((n,), cube.bool_)
    out = WgpuArray.empty((n,), cube.i32)
    halves = WgpuArray.empty((n,), cube.f16)
    where_index[n, 1](flags, out, halves)
    k = np.arange(n)
    assert np.array_equal(flags.numpy(), k % 3 == 0)
    assert np.array_equal(out.numpy(), k + (k % 3 == 0))
    with np.errstate(over="ignore"):  # past 65504 the halves are inf, as numpy rounds them
        assert np.array_equal(halves.numpy(), (k + 0.25).astype(np.float32).astype(np.float16))


@cube.kernel
def scale_into(x: cube.Array[cube.f32], y: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i < y.size:
        y[i] = x[i] * 3.0


def test_one_buffer_as_two_arguments():
    from ember.cube.runtime.wgpu import WgpuArray
    a = WgpuArray.from_numpy(np.arange(5, dtype=np.float32))
    scale_into[1, 8](a, a)  # read-only x and writable y share a buffer: bound read-write both
    assert a.numpy().tolist() == [0.0, 3.0, 6.0, 9.0, 12.0]


@cube.kernel
def wide(x: cube.Array[cube.i64]):
    x[0] = x[0] + 1


@cube.kernel
def shuffled(x: cube.Array[cube.f32]):
    x[cube.thread_idx.x] = cube.shfl_down(x[cube.thread_idx.x], 1)


def test_what_wgsl_lacks_is_a_compile_error():
    from ember.cube.runtime.wgpu import WgpuArray
    with pytest.raises(cube.CompileError, match="wgsl"):
        wide[1, 1](WgpuArray.from_numpy(np.zeros(2, np.int64)))
    with pytest.raises(cube.CompileError, match="warp operations are not supported on the wgsl target") as e:
        shuffled[1, 32](WgpuArray.from_numpy(np.zeros(32, np.float32)))
    assert "test_cube_wgsl.py" in str(e.value)


def test_mixing_devices_is_refused():
    from ember.cube.runtime.wgpu import WgpuArray
    with pytest.raises(cube.LaunchError, match="different devices"):
        scale_into[1, 8](np.zeros(4, np.float32), WgpuArray.from_numpy(np.zeros(4, np.float32)))
