"""Elementwise behaviour the op registry does not reach: the scipy-free special functions, 0-d
results that must stay writable, in-place writes through views, half-precision math done in
float32, and error types."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backend.numpy import special

torch = pytest.importorskip("torch")
scipy_special = pytest.importorskip("scipy.special")


@pytest.fixture
def no_scipy(monkeypatch):
    """Force the vectorized fallbacks of ember.backend.numpy.special."""
    monkeypatch.setattr(special, "_sp", None)


def _mp(fn_name, xs):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    fn = getattr(mpmath, fn_name)
    return np.array([float(fn(mpmath.mpf(float(v)))) for v in xs])


def _rel_err(got, want):
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    return np.max(np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), 1e-300))


RNG = np.random.default_rng(1234)
ERF_X = np.concatenate([RNG.uniform(-6, 6, 2000), RNG.uniform(-1e-3, 1e-3, 50), RNG.uniform(-27, 27, 500),
                        [0.0, -0.0, 1.0, 2.0, 3.0, -3.0, 26.5]])


def test_fallback_erf_erfc_against_scipy(no_scipy):
    # scipy's own erfc is good to ~6e-14 relative for large x, so compare loosely here...
    np.testing.assert_allclose(special.erf(ERF_X), scipy_special.erf(ERF_X), rtol=1e-14, atol=0)
    # (atol: erfc near 27 is subnormal, where relative precision is gone for everyone)
    np.testing.assert_allclose(special.erfc(ERF_X), scipy_special.erfc(ERF_X), rtol=1e-13, atol=1e-300)


def test_fallback_erf_erfc_to_1e_14_against_mpmath(no_scipy):
    xs = ERF_X[::10]
    assert _rel_err(special.erf(xs), _mp("erf", xs)) < 1e-14
    assert _rel_err(special.erfc(xs), _mp("erfc", xs)) < 1e-14


def test_fallback_erfinv(no_scipy):
    ps = np.concatenate([RNG.uniform(-1, 1, 2000), 1 - 10.0 ** -RNG.uniform(1, 15.9, 200),
                         -(1 - 10.0 ** -RNG.uniform(1, 15.9, 200)), RNG.uniform(-1e-6, 1e-6, 20)])
    got = special.erfinv(ps)
    np.testing.assert_allclose(got, scipy_special.erfinv(ps), rtol=1e-12, atol=0)
    # and it inverts erf
    np.testing.assert_allclose(scipy_special.erf(got[np.abs(ps) < 0.999]), ps[np.abs(ps) < 0.999], rtol=1e-14,
                               atol=1e-16)


def test_fallback_lgamma_digamma(no_scipy):
    xs = np.concatenate([RNG.uniform(0, 20, 2000), RNG.uniform(-20, 0, 1000), 10 ** RNG.uniform(-300, 300, 200),
                         -(10 ** RNG.uniform(-5, 5, 200)), RNG.uniform(0.9, 2.1, 300)])
    xs = xs[xs != np.floor(xs)]  # poles are tested below
    np.testing.assert_allclose(special.lgamma(xs), scipy_special.gammaln(xs), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(special.digamma(xs), scipy_special.psi(xs), rtol=1e-12, atol=1e-14)
    # near the zeros of lgamma (1 and 2) and digamma (1.4616...) the error stays absolute-small
    near = np.array([1.0 + 1e-9, 2.0 - 1e-12, 1.46163214496836, 0.9999, 2.0001])
    np.testing.assert_allclose(special.lgamma(near), _mp("loggamma", near), rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(special.digamma(near), _mp("digamma", near), rtol=1e-11, atol=1e-16)


def test_fallback_edge_values_match_torch(no_scipy):
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, 1.0, 2.0, 5e-324, 1.5, -1.5])
    t = torch.from_numpy(edge)
    for ours, theirs in ((special.erf, torch.erf), (special.erfc, torch.erfc), (special.erfinv, torch.erfinv),
                         (special.lgamma, torch.lgamma), (special.digamma, torch.digamma)):
        np.testing.assert_allclose(ours(edge), theirs(t).numpy(), rtol=1e-13, equal_nan=True,
                                   err_msg=ours.__name__)
        assert np.array_equal(np.signbit(ours(edge)[:2]), np.signbit(theirs(t).numpy()[:2])), ours.__name__


def test_fallback_keeps_dtype_and_0d(no_scipy):
    for fn in (special.erf, special.erfc, special.erfinv, special.lgamma, special.digamma):
        r = fn(np.array([0.25, 0.5], dtype=np.float32))
        assert r.dtype == np.float32, fn.__name__
        r0 = fn(np.array(0.5))
        assert isinstance(r0, np.ndarray) and r0.shape == (), fn.__name__


@pytest.mark.parametrize("op", ["erf", "erfc", "erfinv", "lgamma", "digamma"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_ember_special_ops_without_scipy_match_torch(no_scipy, op, dtype):
    x = RNG.uniform(-0.99, 0.99, 64) if op == "erfinv" else RNG.uniform(-4, 6, 64)
    x = x.astype(dtype)
    got = getattr(ember, op)(ember.tensor(x)).numpy()
    want = getattr(torch, op)(torch.from_numpy(x)).numpy()
    rtol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol)


def test_half_precision_math_is_float32_rounded_once():
    x = np.linspace(-4, 4, 1001).astype(np.float16)
    for op, ref in (("exp", np.exp), ("sin", np.sin), ("tanh", np.tanh), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))):
        got = getattr(ember, op)(ember.tensor(x)).numpy()
        want = ref(x.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(got, want, err_msg=op)
    # bfloat16 too
    xb = ember.tensor(x).to(ember.bfloat16)
    got = ember.exp(xb).float().numpy()
    want = torch.exp(torch.from_numpy(x).to(torch.bfloat16)).float().numpy()
    np.testing.assert_allclose(got, want, rtol=8e-3)


def test_zero_d_results_stay_writable():
    """0-d results of elementwise ops are real 0-d arrays on the numpy backend, so in-place ops work."""
    a, b = ember.tensor(1.5), ember.tensor(2.0)
    results = [a + b, a * b, a - 2, -a, ember.exp(a), ember.sqrt(b), a < b, ember.where(a > 0, a, b),
               ember.clamp(a, 0, 1), ember.pow(a, 2), ember.tensor(7) // 2, ember.erf(a), ember.sign(a)]
    for r in results:
        before = r.clone()
        r.add_(1) if r.dtype is not ember.bool else r.logical_not_()
        assert not ember.equal(r, before), r
    total = ember.tensor(0.0) + ember.tensor(0.0)
    for v in (1.0, 2.0, 3.0):
        total += v
    assert total.item() == 6.0


def test_inplace_ops_write_through_views():
    base = ember.zeros(3, 4)
    col = base[:, 1]
    col.add_(ember.tensor([1.0, 2.0, 3.0]))
    base.T[0].sub_(5)
    base[2].exp_()
    tb = torch.zeros(3, 4)
    tb[:, 1].add_(torch.tensor([1.0, 2.0, 3.0]))
    tb.T[0].sub_(5)
    tb[2].exp_()
    np.testing.assert_allclose(base.numpy(), tb.numpy(), rtol=1e-6)


def test_inplace_returns_self_and_keeps_dtype():
    x = ember.tensor([1, 2, 3], dtype=ember.int16)
    assert x.add_(2) is x and x.dtype is ember.int16
    assert x.eq_(3) is x and x.tolist() == [1, 0, 0]  # comparisons write 0/1 in self's dtype
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(1.5)
    y = ember.ones(3, 1)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        y.mul_(ember.ones(1, 4))


def test_integer_division_by_zero_raises_runtime_error():
    x = ember.tensor([1, 2, 3])
    for fn in (lambda: x // 0, lambda: x % ember.tensor([1, 0, 1]), lambda: ember.fmod(x, 0),
               lambda: ember.div(x, 0, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError") as info:
            fn()
        assert isinstance(info.value, ZeroDivisionError)
    assert ember.div(x, 0).tolist() == [float("inf")] * 3  # true division is fine


def test_python_int_out_of_range_raises_overflow_error():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(OverflowError):
        x + 2 ** 70
    with pytest.raises(OverflowError):
        torch.tensor([1, 2, 3]) + 2 ** 70
    assert (x + 2 ** 63).tolist() == (torch.tensor([1, 2, 3]) + 2 ** 63).tolist()  # wraps, like torch


def test_comparison_with_non_numbers_is_not_elementwise():
    x = ember.tensor([1.0, 2.0])
    assert (x == None) is False and (x != None) is True  # noqa: E711 - the point of the test
    assert x not in [None, "a"]


def test_error_messages_name_the_op_and_dtype():
    with pytest.raises(NotImplementedError, match=r"bitwise_and.*float32"):
        ember.ones(2) & ember.ones(2)
    with pytest.raises(NotImplementedError, match=r"hypot.*int64"):
        ember.hypot(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[3, 2\]"):
        ember.ones(2, 3) + ember.ones(3, 2)
    with pytest.raises(RuntimeError, match="Subtraction"):
        ember.ones(2, dtype=ember.bool) - ember.ones(2, dtype=ember.bool)


def test_fast_path_results_are_fresh_tensors():
    a, b = ember.ones(4), ember.full((4,), 2.0)
    c = a + b
    assert c is not a and c.dtype is ember.float32 and c.shape == (4,)
    c.add_(1)
    assert a.tolist() == [1.0] * 4 and b.tolist() == [2.0] * 4


def test_lerp_is_exact_at_the_ends_like_torch():
    s, e = np.array([1e-8, 3.0, -7.5], np.float32), np.array([1.0, 1e8, 0.1], np.float32)
    for w in (0.0, 1.0, 0.5, 0.25, 0.75):
        got = ember.lerp(ember.tensor(s), ember.tensor(e), w).numpy()
        want = torch.lerp(torch.from_numpy(s), torch.from_numpy(e), w).numpy()
        np.testing.assert_array_equal(got, want, err_msg=str(w))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_composites_match_torch_without_backend_kernels(monkeypatch, dtype):
    """lerp and logaddexp are backend ops on numpy; backends without them get the frontend compositions."""
    from ember.backend import numpy as numpy_backend
    monkeypatch.delitem(numpy_backend._OPS, "lerp")
    monkeypatch.delitem(numpy_backend._OPS, "logaddexp")
    rng = np.random.default_rng(5)
    a, b, w = (rng.uniform(-3, 3, (3, 4)).astype(dtype) for _ in range(3))
    a[0, :3] = [np.inf, -np.inf, np.nan]
    b[0, :3] = [np.inf, -np.inf, 1.0]
    ea, eb, ew = (ember.tensor(v) for v in (a, b, w))
    ta, tb, tw = (torch.from_numpy(v) for v in (a, b, w))
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}[dtype]
    pairs = ((ember.lerp(ea, eb, ew), torch.lerp(ta, tb, tw)), (ember.lerp(ea, eb, 0.3), torch.lerp(ta, tb, 0.3)),
             (ember.logaddexp(ea, eb), torch.logaddexp(ta, tb)))
    for got, want in pairs:
        assert got.dtype.name == dtype
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True)


def test_nextafter_half_on_the_cuda_code_steps_bit_patterns():
    """Every float16 value towards ±inf, ±0 and 1 (the CUDA op code on numpy): numpy's float16
    nextafter is the reference; CuPy's went from the largest finite value to NaN instead of inf."""
    import scipy.special

    from ember.backend.cuda.elementwise import build
    nextafter = build(np, scipy.special)["nextafter"]
    values = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        for target in (np.inf, -np.inf, 1.0, np.nan):
            y = np.full_like(values, target)
            got, want = nextafter(values, y), np.nextafter(values, y)
            assert got.dtype == np.float16
            same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
            assert same.all(), values[~same][:5]
        assert nextafter(np.float16(65504.0)[None], np.float16(np.inf)[None])[0] == np.inf
