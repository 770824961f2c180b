"""Sorting and counting beyond the registry: stability on large inputs, invariants where PyTorch's
index choice is unspecified, NaN placement fuzzing (searchsorted, unique), histc bin edges."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _e(a):
    return ember.tensor(a)


def _t(a):
    return torch.from_numpy(np.array(a))


@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_keeps_input_order_of_ties(descending):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, (3, 2000))
    v, i = ember.sort(_e(x), descending=descending, stable=True)
    key = -x if descending else x
    want = np.argsort(key, axis=-1, kind="stable")
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, want, -1))
    tv, ti = torch.sort(_t(x), descending=descending, stable=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_nan_order_like_torch():
    x = np.array([2.0, np.nan, -np.inf, 1.0, np.nan, np.inf, -0.0, 0.0], np.float32)
    for desc in (False, True):
        v, i = ember.sort(_e(x), descending=desc, stable=True)
        tv, ti = torch.sort(_t(x), descending=desc, stable=True)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("op", ["kthvalue", "median", "mode", "topk"])
def test_indices_point_at_their_values_with_ties(op):
    """Where PyTorch's index among ties is unspecified, ember's index still holds the value."""
    x = np.random.default_rng(1).integers(0, 3, (6, 9))
    t = _e(x)
    if op == "kthvalue":
        v, i = ember.kthvalue(t, 4, dim=1)
        tv = torch.kthvalue(_t(x), 4, dim=1).values
    elif op == "median":
        v, i = ember.median(t, 1)
        tv = torch.median(_t(x), 1).values
    elif op == "mode":
        v, i = ember.mode(t, 1)
        tv = torch.mode(_t(x), 1).values
    else:
        v, i = ember.topk(t, 3, dim=1)
        tv = torch.topk(_t(x), 3, dim=1).values
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    idx = i.numpy().reshape(x.shape[0], -1)
    np.testing.assert_array_equal(np.take_along_axis(x, idx, 1).reshape(v.shape), v.numpy())


def test_topk_unsorted_selects_the_same_set():
    x = np.random.default_rng(2).standard_normal((4, 50)).astype(np.float32)
    v = ember.topk(_e(x), 7, sorted=False).values.numpy()
    tv = torch.topk(_t(x), 7, sorted=False).values.numpy()
    np.testing.assert_array_equal(np.sort(v, -1), np.sort(tv, -1))


def test_searchsorted_nan_fuzz_against_torch():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, m = int(rng.integers(0, 30)), int(rng.integers(1, 20))
        s = np.sort(rng.integers(-5, 5, n).astype(np.float32))
        if n and rng.random() < 0.6:
            s[rng.integers(0, n, rng.integers(1, 4))] = np.nan  # NaN anywhere, even mid-sequence
        v = rng.integers(-6, 6, m).astype(np.float32)
        v[rng.random(m) < 0.2] = np.nan
        for right in (False, True):
            got = ember.searchsorted(_e(s), _e(v), right=right).numpy()
            want = torch.searchsorted(_t(s), _t(v), right=right).numpy()
            np.testing.assert_array_equal(got, want)


def test_searchsorted_batched_matches_numpy_rows():
    rng = np.random.default_rng(4)
    s = np.sort(rng.standard_normal((4, 3, 100)), axis=-1)
    v = rng.standard_normal((4, 3, 25))
    got = ember.searchsorted(_e(s), _e(v), side="right").numpy()
    for idx in np.ndindex(4, 3):
        np.testing.assert_array_equal(got[idx], np.searchsorted(s[idx], v[idx], side="right"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_histc_fuzz_against_torch(dtype):
    rng = np.random.default_rng(5)
    for _ in range(40):
        x = rng.uniform(-2, 2, int(rng.integers(0, 300))).astype(np.float32)
        lo, hi = sorted(rng.uniform(-2, 2, 2))
        bins = int(rng.integers(1, 40))
        got = ember.histc(_e(x).to(getattr(ember, dtype)), bins=bins, min=float(lo), max=float(hi))
        want = torch.histc(_t(x).to(getattr(torch, dtype)), bins=bins, min=float(lo), max=float(hi))
        assert got.dtype is getattr(ember, dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_unique_fuzz_against_torch():
    rng = np.random.default_rng(6)
    for _ in range(60):
        x = rng.integers(0, 4, (int(rng.integers(1, 8)), 3)).astype(np.float32)
        for dim in (None, 0, 1):
            got = ember.unique(_e(x), dim=dim, return_inverse=True, return_counts=True)
            want = torch.unique(_t(x), dim=dim, return_inverse=True, return_counts=True)
            for g, w in zip(got, want):
                assert g.shape == tuple(w.shape)
                np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_unique_keeps_every_nan():
    x = _e(np.array([np.nan, 1.0, np.nan, 1.0], np.float32))
    values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(counts.numpy(), [2, 1, 1])
    # each NaN maps to a NaN slot of its own (which one is unspecified, as in PyTorch)
    inv = inverse.numpy()
    assert inv[1] == inv[3] == 0 and {inv[0], inv[2]} == {1, 2}


def test_return_types():
    x = _e(np.array([[3.0, 1.0, 2.0]]))
    s = ember.sort(x)
    assert type(s).__name__ == "sort" and s.values.shape == (1, 3) and s.indices.dtype is ember.int64
    assert ember.nanmedian(x, 1)._fields == ("values", "indices")
    assert type(ember.mode(x)).__name__ == "mode"
    assert ember.kthvalue(x, 1).values.item() == 1.0


def test_bincount_output_dtypes_follow_torch():
    x = _e(np.array([0, 2, 2]))
    for wd, want in [(ember.float32, ember.float32), (ember.float64, ember.float64), (ember.int32, ember.float64),
                     (ember.float16, ember.float64)]:
        out = ember.bincount(x, ember.ones(3, dtype=wd))
        assert out.dtype is want and out.tolist() == [1.0, 0.0, 2.0]
    assert ember.bincount(x).dtype is ember.int64


def test_quantile_random_against_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 33))
    x[rng.random(x.shape) < 0.1] = np.nan
    q = rng.uniform(0, 1, 9)
    for mode in ("linear", "lower", "higher", "midpoint", "nearest"):
        for fn in ("quantile", "nanquantile"):
            got = getattr(ember, fn)(_e(x), _e(q), dim=1, interpolation=mode).numpy()
            want = getattr(torch, fn)(_t(x), _t(q), dim=1, interpolation=mode).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
