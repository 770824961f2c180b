"""ember.cube.library: every library kernel against numpy, on every available target (tiny sizes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ember import cube
from ember.cube import testing

L = cube.library
DEVICES = testing.devices()
RNG = np.random.default_rng(7)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def run(device, fn, *arrays, **kw):
    moved = [testing.to_device(a, device) if isinstance(a, np.ndarray) else a for a in arrays]
    return testing.to_numpy(fn(*moved, **kw))


@cube.func
def gelu_tanh(x):
    return 0.5 * x * (1.0 + cube.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@cube.func
def lerp(a, b, w):
    return a + w * (b - a)


def test_map(device):
    x = RNG.standard_normal(1000).astype(np.float32)
    y = RNG.standard_normal(1000).astype(np.float32)
    ref = 0.5 * x * (1 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)))
    np.testing.assert_allclose(run(device, L.map, gelu_tanh, x), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run(device, L.map, lerp, x, y, np.full_like(x, 0.25)), x + 0.25 * (y - x),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_reduce_rows(device, op, dtype):
    x = (RNG.standard_normal((5, 300)) * 100).astype(dtype)
    got = run(device, L.reduce_rows, x, op=op)
    ref = getattr(x.astype(np.float64), op)(axis=1)
    if dtype == np.int32 or op != "sum":
        np.testing.assert_array_equal(got, ref.astype(dtype))
    else:
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-3 if dtype == np.float16 else 1e-5)


def test_reduce_rows_nan_and_empty_rows():
    x = np.ones((3, 4), np.float32)
    x[1, 2] = np.nan
    assert np.isnan(L.reduce_rows(x, "max")[1]) and L.reduce_rows(x, "max")[0] == 1
    e = L.reduce_rows(np.zeros((2, 0), np.float32), "sum")
    assert e.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("shape", [(37, 45, 29), (64, 48, 36), (1, 1, 1), (70, 8, 130)])
def test_matmul_f32(device, shape):
    m, k, n = shape
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(run(device, L.matmul, a, b), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, ml_dtypes.bfloat16])
def test_matmul_other_floats(device, dtype):
    if device == "wgpu" and dtype == np.float64:
        pytest.skip("WGSL has no f64")
    a = RNG.standard_normal((20, 12)).astype(dtype)
    b = RNG.standard_normal((12, 16)).astype(dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = run(device, L.matmul, a, b).astype(np.float64)
    tol = 1e-12 if dtype == np.float64 else 2e-2
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_matmul_large_tiles_on_cpu():
    a = RNG.standard_normal((130, 40)).astype(np.float32)
    b = RNG.standard_normal((40, 140)).astype(np.float32)
    np.testing.assert_allclose(L.matmul(a, b, tiles="large"), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_rows(device, dtype):
    x = (RNG.standard_normal((6, 333)) * 4).astype(dtype)
    if dtype == np.float32 and testing.ieee(device):
        x[2, 5] = np.inf
    xf = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(xf - xf.max(1, keepdims=True))
        ref = e / e.sum(1, keepdims=True)
    got = run(device, L.softmax_rows, x).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 2e-3, atol=1e-7)


def test_histogram(device):
    x = (RNG.integers(0, 20, 5000) + 0.5).astype(np.float32)  # away from bin edges
    x[:3] = [-1.0, 25.0, 20.0]  # outside the range, and hi itself (in the last bin)
    got = run(device, L.histogram, x, bins=10, lo=0.0, hi=20.0)
    ref = np.histogram(x, bins=10, range=(0.0, 20.0))[0]
    assert got.dtype == np.int32 and np.array_equal(got, ref)


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 70000])
def test_cumsum_int(device, n):
    x = RNG.integers(-100, 100, n).astype(np.int32)
    assert np.array_equal(run(device, L.cumsum, x), np.cumsum(x, dtype=np.int32))


def test_cumsum_float(device):
    x = RNG.standard_normal(3000).astype(np.float32)
    np.testing.assert_allclose(run(device, L.cumsum, x), np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1), (33, 70), (64, 32)])
def test_transpose(device, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    assert np.array_equal(run(device, L.transpose, x), x.T)


def test_transpose_bf16_and_ints():
    x = RNG.standard_normal((5, 9)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(L.transpose(x), x.T)
    y = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert np.array_equal(L.transpose(y), y.T)


def test_library_on_ember_tensors():
    import ember
    x = ember.randn(4, 50)
    s = L.softmax_rows(x)
    assert isinstance(s, ember.Tensor) and s.shape == (4, 50)
    np.testing.assert_allclose(s.numpy(), ember.softmax(x, dim=1).numpy(), rtol=1e-5, atol=1e-7)
    m = L.matmul(x, x.t().contiguous())
    np.testing.assert_allclose(m.numpy(), (x @ x.t()).numpy(), rtol=1e-4, atol=1e-4)


def test_library_errors():
    with pytest.raises(cube.LaunchError, match="don't multiply"):
        L.matmul(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    with pytest.raises(cube.LaunchError, match="1-d"):
        L.cumsum(np.zeros((2, 2), np.int32))


def test_matmul_a4_path(device):
    """a's tile through 4 x 4 register transposes (the WGSL default), on every target."""
    a = RNG.standard_normal((70, 36)).astype(np.float32)
    b = RNG.standard_normal((36, 44)).astype(np.float32)
    c = np.zeros((70, 44), np.float32)
    testing.run(device, L.matmul_kernel[(2, 3), (8, 8)], a, b, c, 32, 32, 16, 4, 4, True, True)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
