"""ember.array_api, the Array API standard namespace: a fast in-repo check against numpy's
namespace (numpy 2 implements the standard in its main namespace). The full conformance run is
scripts/array_api_tests.sh with the standard's own suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.array_api as xp


def _np(t) -> np.ndarray:
    return np.asarray(t.numpy(force=True))


def _same(out, ref, *, dtype: bool = True):
    ref = np.asarray(ref)
    got = _np(out)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if dtype:
        assert out.dtype.name == ref.dtype.name, (out.dtype, ref.dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=1e-6, atol=1e-6,
                               equal_nan=True)


def test_namespace_of_a_tensor():
    x = ember.ones(3)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2025.12"
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")
    assert x.to_device("cpu").device == x.device
    assert ember.ones(2, 3).mT.shape == (3, 2)


def test_info_reports_only_real_dtypes():
    info = xp.__array_namespace_info__()
    names = set(info.dtypes())
    assert names == {"bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"}
    assert info.dtypes(kind="complex floating") == {}
    assert info.dtypes(kind="unsigned integer") == {"uint8": xp.uint8}
    assert info.default_dtypes()["indexing"] is xp.int64
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_device() in info.devices()
    assert not hasattr(xp, "complex64") and not hasattr(xp, "uint16")


def test_promotion_counts_zero_d_arrays():
    a = xp.ones(3, dtype=xp.int8)
    b = xp.asarray(300, dtype=xp.int16)
    out = xp.add(a, b)
    _same(out, np.add(np.ones(3, np.int8), np.asarray(300, np.int16)))
    assert xp.result_type(b, a) is xp.int16
    assert xp.result_type(xp.uint8, xp.int8) is xp.int16
    assert xp.multiply(a, 2).dtype is xp.int8  # a Python scalar takes the array's dtype
    assert xp.equal(xp.asarray([1000], dtype=xp.int64), xp.asarray(1000, dtype=xp.int64)).tolist() == [True]
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.int16, xp.int8)
    assert not xp.can_cast(xp.int64, xp.float64)


def test_creation():
    _same(xp.arange(5, 0, -2), np.arange(5, 0, -2))
    assert xp.arange(3, 1).shape == (0,)
    _same(xp.linspace(0.0, 1.0, 4, endpoint=False, dtype=xp.float64), np.linspace(0, 1, 4, endpoint=False))
    _same(xp.eye(3, 4, k=-1, dtype=xp.int32), np.eye(3, 4, k=-1, dtype=np.int32))
    x = xp.asarray([1.0, 2.0])
    assert xp.asarray(x) is x and xp.asarray(x, copy=True) is not x
    with pytest.raises(ValueError):
        xp.asarray(x, dtype=xp.float64, copy=False)
    a = np.arange(3.0)
    shared = xp.asarray(a, copy=False)
    a[0] = 7.0
    assert shared.tolist()[0] == 7.0
    assert xp.asarray([True, False]).dtype is xp.bool and xp.asarray([1, 2]).dtype is xp.int64
    g = xp.meshgrid(xp.arange(2), xp.arange(3))
    assert isinstance(g, tuple) and g[0].shape == (3, 2)  # 'xy' indexing by default


def test_statistics_and_reductions():
    data = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 11.0]])
    x = xp.asarray(data, dtype=xp.float64)
    _same(xp.std(x, axis=1, correction=1.5), np.std(data, axis=1, ddof=1.5))
    _same(xp.var(x, axis=(0, 1), keepdims=True), np.var(data, axis=(0, 1), keepdims=True))
    _same(xp.sum(x, axis=()), np.sum(data, axis=()))
    _same(xp.max(x, axis=0, keepdims=True), np.max(data, axis=0, keepdims=True))
    _same(xp.argmax(x, keepdims=True), np.argmax(data, keepdims=True))
    _same(xp.cumulative_sum(x, axis=1, include_initial=True), np.cumulative_sum(data, axis=1, include_initial=True))
    _same(xp.count_nonzero(xp.asarray([[0, 1], [2, 0]]), axis=0), np.count_nonzero([[0, 1], [2, 0]], axis=0))
    _same(xp.diff(xp.asarray([1, 4, 9, 16]), n=2, prepend=xp.asarray([0])), np.diff([1, 4, 9, 16], n=2, prepend=[0]))
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int8)).dtype is xp.int64


def test_unique_treats_each_nan_as_distinct():
    data = np.array([3.0, np.nan, 1.0, 3.0, np.nan, 1.0])
    got, ref = xp.unique_all(xp.asarray(data)), np.unique_all(data)
    for g, r in zip(got, ref):
        _same(g, r, dtype=False)
    assert got.indices.dtype is xp.int64
    inv = xp.unique_inverse(xp.asarray([[2, 1], [1, 2]]))
    _same(inv.inverse_indices, np.unique_inverse(np.array([[2, 1], [1, 2]])).inverse_indices, dtype=False)
    _same(xp.unique_values(xp.asarray([], dtype=xp.float32)), np.zeros(0, np.float32))
    _same(xp.isin(xp.asarray([1, 2, 5]), xp.asarray([5, 1]), invert=True), np.isin([1, 2, 5], [5, 1], invert=True))


def test_manipulation_and_indexing():
    data = np.arange(24).reshape(2, 3, 4)
    x = xp.asarray(data)
    _same(xp.expand_dims(x, axis=(0, -1)), np.expand_dims(data, axis=(0, -1)))
    _same(xp.concat([x, x], axis=None), np.concat([data, data], axis=None))
    _same(xp.permute_dims(x, (2, 0, 1)), np.permute_dims(data, (2, 0, 1)))
    _same(xp.moveaxis(x, 0, -1), np.moveaxis(data, 0, -1))
    _same(xp.repeat(xp.asarray([1, 2]), xp.asarray([2, 3])), np.repeat([1, 2], [2, 3]))
    _same(xp.roll(x, 5), np.roll(data, 5))
    _same(xp.take(x, xp.asarray([2, 0, -1]), axis=1), np.take(data, [2, 0, -1], axis=1))
    idx = np.argsort(data, axis=-1)[..., ::-1].copy()
    _same(xp.take_along_axis(x, xp.asarray(idx), axis=-1), np.take_along_axis(data, idx, axis=-1))
    _same(xp.tile(xp.asarray([1, 2]), (2, 2)), np.tile([1, 2], (2, 2)))
    assert len(xp.unstack(x, axis=1)) == 3
    with pytest.raises(ValueError):
        xp.squeeze(x, axis=0)  # size 2: the standard refuses, PyTorch would ignore it
    with pytest.raises(ValueError):
        xp.reshape(x.mT, (-1,), copy=False)
    _same(xp.flip(x, axis=(0, 2)), np.flip(data, axis=(0, 2)))
    assert xp.broadcast_shapes((2, 1), (3,)) == (2, 3)


def test_sorting_and_searching():
    data = np.array([3, 1, 2, 1, 3])
    x = xp.asarray(data)
    _same(xp.argsort(x, descending=True), np.array([0, 4, 2, 1, 3]))  # stable: ties keep their order
    _same(xp.sort(x), np.sort(data))
    _same(xp.searchsorted(xp.asarray([1.0, 3.0, 5.0]), xp.asarray([3.0, 6.0]), side="right"),
          np.searchsorted([1.0, 3.0, 5.0], [3.0, 6.0], side="right"))
    _same(xp.where(x > 1, x, 0), np.where(data > 1, data, 0))
    nz = xp.nonzero(xp.asarray([[0, 1], [1, 1]]))
    assert isinstance(nz, tuple) and [t.tolist() for t in nz] == [[0, 1, 1], [1, 0, 1]]


def test_elementwise_translations():
    inf = float("inf")
    a = xp.asarray([-1.0, 1.0, inf, 7.0], dtype=xp.float64)
    b = xp.asarray([inf, -inf, 2.0, 2.0], dtype=xp.float64)
    _same(xp.floor_divide(a, b), np.array([-0.0, -0.0, inf, 3.0]))
    assert np.signbit(_np(xp.floor_divide(a, b))[0])
    _same(xp.clip(xp.asarray([1, 5, 9], dtype=xp.int8), 2, 1000), np.array([2, 5, 9], np.int8))
    _same(xp.sign(xp.asarray([-2.0, 0.0, float("nan")], dtype=xp.float64)), np.sign([-2.0, 0.0, np.nan]))
    _same(xp.bitwise_invert(xp.asarray([0, 5], dtype=xp.uint8)), np.bitwise_invert(np.array([0, 5], np.uint8)))
    _same(xp.imag(a), np.zeros(4))


def test_linear_algebra():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((2, 3, 3))
    spd = m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)
    x = xp.asarray(spd)
    _same(xp.linalg.cholesky(x, upper=True), np.linalg.cholesky(spd, upper=True))
    _same(xp.linalg.trace(x, offset=1), np.linalg.trace(spd, offset=1))
    _same(xp.linalg.matrix_rank(x), np.linalg.matrix_rank(spd))
    _same(xp.linalg.vector_norm(x, axis=(1, 2), ord=3), np.linalg.vector_norm(spd, axis=(1, 2), ord=3))
    _same(xp.linalg.slogdet(x).logabsdet, np.linalg.slogdet(spd).logabsdet)
    _same(xp.vecdot(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 1])), np.vecdot([[1, 2], [3, 4]], [1, 1]))
    _same(xp.tensordot(x, x, axes=([1, 2], [1, 2])), np.tensordot(spd, spd, axes=([1, 2], [1, 2])))
    _same(xp.linalg.cross(xp.asarray([1.0, 0.0, 0.0]), xp.asarray([[0.0, 1.0, 0.0]])),
          np.cross([1.0, 0.0, 0.0], [[0.0, 1.0, 0.0]]).astype(np.float32))
    assert xp.matrix_transpose(x).shape == (2, 3, 3)


def test_scipy_accepts_ember_tensors():
    """scipy's array-API mode (SCIPY_ARRAY_API=1, read at import, hence a fresh process) finds the
    namespace through array_api_compat's conventions (``x.__array_namespace__()``) and returns
    ember tensors."""
    pytest.importorskip("scipy")
    code = textwrap.dedent("""
        import numpy as np, scipy.special, scipy.stats, ember
        x = ember.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
        try:  # the standalone package, when installed (scipy carries its own copy)
            import array_api_compat
        except ImportError:
            pass
        else:
            assert array_api_compat.array_namespace(x) is ember.array_api
        r = scipy.special.logsumexp(x, axis=1)
        assert isinstance(r, ember.Tensor), type(r)
        np.testing.assert_allclose(r.numpy(), np.log(np.exp(x.numpy()).sum(1)), rtol=1e-5)
        z = scipy.stats.zscore(x, axis=1)
        assert isinstance(z, ember.Tensor), type(z)
        np.testing.assert_allclose(z.numpy(), scipy.stats.zscore(x.numpy(), axis=1), rtol=1e-5)
        print("ok")
    """)
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
