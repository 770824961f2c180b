"""The CUDA backend's GPU versions of the ops that used to run on its host path, against the numpy
reference backend, op by op at the backend level (shapes with batches, empty inputs, the dtypes each
op accepts, NaN and ties). Every test runs on the backend's op code over numpy ("sim") and, where
CuPy and a GPU are present, on ``Cuda(0)`` as well ("gpu"): there the same cases check the branches
that only run on a GPU (cuSOLVER error checks, CuPy's scatter atomics, the im2col kernel, the Philox
kernel's 192-bit counters). Gradients go through the op registry (tests/test_cuda_sim.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import ember
from ember.backend.cuda import Cuda
from ember.backend.numpy import Numpy
from ember.backend.numpy import random as reference

BF16 = np.dtype(bfloat16)
F16 = np.dtype(np.float16)
MOVED = {
    "adaptive_max_pool", "avg_pool", "avg_pool_backward", "bincount", "cholesky", "col2im", "cummax", "cummin",
    "det", "eigh", "eigvalsh", "histc", "im2col", "inv", "logcumsumexp", "multinomial", "poisson", "qr", "randperm",
    "repeat_interleave", "scatter_reduce", "searchsorted", "slogdet", "solve", "svd", "svdvals", "unique",
    "unique_consecutive"}

# NaN and infinities in the inputs: numpy's warnings about them are noise here
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

REF = Numpy()
SIM = Cuda._with_array_module(np)
BACKENDS = [pytest.param(SIM, id="sim")]
if ember.cuda.is_available():  # pragma: no cover - on a GPU machine
    BACKENDS.append(pytest.param(Cuda(0), id="gpu"))


def _host(b, out):
    if isinstance(out, tuple):
        return tuple(_host(b, o) for o in out)
    return np.asarray(b.read(out)) if not isinstance(out, np.ndarray) else out


def run(b, op, inputs, attrs):
    """``op`` on backend b with numpy inputs written to it; results back as numpy arrays."""
    dev = tuple(b.write(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in inputs)
    return _host(b, b.run(op, dev, attrs))


_TOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 2e-5, F16: 2e-3, BF16: 1e-2}


def same(got, want, exact=False):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, exact)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if exact and want.dtype in (F16, BF16):
        # compared as float32: some numpy/ml_dtypes pairs don't see bfloat16 NaNs as NaN when comparing
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    elif exact or want.dtype not in _TOL:
        np.testing.assert_array_equal(got, want)
    else:
        tol = _TOL[want.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                                   equal_nan=True)


def check(b, op, inputs, attrs, exact=False):
    same(run(b, op, inputs, attrs), REF.run(op, tuple(np.array(a) if isinstance(a, np.ndarray) else a
                                                      for a in inputs), attrs), exact)


RNG = np.random.default_rng(0)


def data(shape, dtype, lo=-3, hi=3, nan=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        return RNG.integers(max(lo, np.iinfo(dtype).min), hi, shape).astype(dtype)
    a = RNG.uniform(lo, hi, shape).round(1)  # rounded: ties happen
    if nan and a.size > 2:
        a.reshape(-1)[[1, a.size // 2]] = np.nan
    return a.astype(dtype)


# ---- the host path shrank ---------------------------------------------------------------------------------
def test_host_path_is_empty():
    b = Cuda._with_array_module(np)
    assert MOVED <= set(b._ops), sorted(MOVED - set(b._ops))
    assert b.host_ops() == frozenset()


# ---- scans ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int32, np.int64, np.uint8, np.bool_])
def test_cummax_cummin(b, dtype):
    for shape, dim in (((9,), 0), ((3, 17), 1), ((5, 4, 3), 0), ((4, 0), 1), ((0,), 0), ((1,), 0)):
        x = data(shape, dtype, lo=0, nan=True)
        for op in ("cummax", "cummin"):
            check(b, op, (x,), {"dim": dim}, exact=True)


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16])
def test_logcumsumexp(b, dtype):
    x = data((3, 40), dtype, lo=-30, hi=30)
    x[0, 3], x[1, :5], x[2, 7] = -np.inf, -np.inf, np.nan
    for dim in (0, 1):
        check(b, "logcumsumexp", (x,), {"dim": dim})
    check(b, "logcumsumexp", (np.full((2, 5), np.inf, dtype),), {"dim": 1})
    check(b, "logcumsumexp", (np.zeros((0, 3), dtype),), {"dim": 0})


# ---- searching and counting ------------------------------------------------------------------------------------
@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int64, np.int32])
def test_searchsorted(b, dtype):
    seq = np.sort(data((33,), dtype))
    rows = np.sort(data((4, 9), dtype), axis=1)
    if np.dtype(dtype).kind == "f" or dtype in (F16, BF16):
        seq[-2:] = np.nan
        rows[1, -1] = np.nan
    for right in (False, True):
        for out_int32 in (False, True):
            a = {"right": right, "out_int32": out_int32}
            check(b, "searchsorted", (seq, data((5, 7), dtype, nan=True)), a, exact=True)
            check(b, "searchsorted", (seq, seq), a, exact=True)
            check(b, "searchsorted", (rows, data((4, 6), dtype, nan=True)), a, exact=True)
            check(b, "searchsorted", (seq, np.zeros((0,), dtype)), a, exact=True)
            check(b, "searchsorted", (np.zeros((0,), dtype), data((3,), dtype)), a, exact=True)


@pytest.mark.parametrize("b", BACKENDS)
def test_bincount(b):
    for dtype in (np.int64, np.int32, np.uint8):
        x = data((50,), dtype, lo=0, hi=9)
        check(b, "bincount", (x,), {"minlength": 0, "length": int(x.max()) + 1}, exact=True)
        check(b, "bincount", (x,), {"minlength": 15, "length": 15}, exact=True)
        for wd in (np.float32, np.float64, F16, BF16, np.int64):
            w = data((50,), wd, lo=0)
            check(b, "bincount", (x, w), {"minlength": 0, "length": int(x.max()) + 1})
    check(b, "bincount", (np.zeros((0,), np.int64),), {"minlength": 3, "length": 3}, exact=True)
    check(b, "bincount", (np.zeros((0,), np.int64), np.zeros((0,), np.float32)), {"minlength": 0, "length": 0})


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16])
def test_histc(b, dtype):
    x = data((6, 50), dtype, lo=-4, hi=4, nan=True)
    x[0, :3] = [-2, 2, 1.5]  # both edges and an inner bin edge
    for bins, lo, hi in ((10, -2.0, 2.0), (1, 0.0, 1.0), (7, -3.5, 0.25), (100, -4.0, 4.0)):
        check(b, "histc", (x,), {"bins": bins, "min": lo, "max": hi}, exact=True)
    check(b, "histc", (np.zeros((0,), dtype),), {"bins": 4, "min": 0.0, "max": 1.0}, exact=True)


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, F16, BF16, np.int64, np.uint8, np.bool_])
def test_unique(b, dtype):
    x = data((4, 6), dtype, lo=0, nan=True).reshape(4, 6)
    x[2] = x[0]  # equal rows
    for op in ("unique", "unique_consecutive"):
        base = {"sorted": True} if op == "unique" else {}
        for dim in (None, 0, 1):
            for inv in (False, True):
                for cnt in (False, True):
                    attrs = dict(base, return_inverse=inv, return_counts=cnt, dim=dim)
                    check(b, op, (x,), attrs, exact=True)
        for empty, dim in ((np.zeros((0,), dtype), None), (np.zeros((0, 3), dtype), 0), (np.zeros((3, 0), dtype), 0),
                           (np.zeros((2, 0), dtype), 1)):
            check(b, op, (empty,), dict(base, return_inverse=True, return_counts=True, dim=dim), exact=True)
    rep = np.repeat(data((5,), dtype, lo=0), 3)
    check(b, "unique_consecutive", (rep,), {"return_inverse": True, "return_counts": True, "dim": None}, exact=True)


# ---- scatter reductions and repeat_interleave ---------------------------------------------------------------------
@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int64, np.int32, np.int8, np.bool_])
def test_scatter_reduce(b, dtype):
    x = data((5, 4), dtype, lo=-5, hi=6, nan=True)
    src = data((6, 4), dtype, lo=-5, hi=6, nan=True)
    exact = np.dtype(dtype).kind in "iub"
    for dim, index in ((0, RNG.integers(0, 5, (6, 3))), (1, RNG.integers(0, 4, (4, 4))),
                       (0, np.zeros((0, 4), np.int64))):
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            if reduce == "mean" and dtype == np.bool_:
                continue  # PyTorch refuses a boolean mean
            for include_self in (True, False):
                check(b, "scatter_reduce", (x, index, src),
                      {"dim": dim, "reduce": reduce, "include_self": include_self}, exact)
    for reduce in ("add", "multiply"):
        for inputs, dim in (((x, RNG.integers(0, 5, (6, 4)), src), 0), ((x, RNG.integers(0, 4, (5, 2)), 2), 1)):
            attrs = {"dim": dim, "reduce": reduce}
            if dtype in (F16, BF16):  # the GPU accumulates half precision in float32 and rounds once; the
                # reference's scatter rounds after every step, so compare with it run in float32
                up = tuple(a.astype(np.float32) if a.dtype == dtype else a for a in inputs[:2]) + inputs[2:]
                up = up[:2] + ((up[2].astype(np.float32),) if isinstance(up[2], np.ndarray) else up[2:])
                same(run(b, "scatter", inputs, attrs), REF.run("scatter", up, attrs).astype(dtype))
            else:
                check(b, "scatter", inputs, attrs, exact)


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int64, np.int16, np.uint8, np.bool_, np.float32])
def test_accumulating_writes_without_atomics(b, dtype):
    """Adds of dtypes CuPy has no atomic add for (int64, int16, uint8, bool) reduce sorted runs."""
    exact = np.dtype(dtype).kind in "iub"
    x = data((6, 3), dtype)
    idx = np.array([0, 2, 2, 5, 0, 2])
    check(b, "index_put", (x, data((6, 3), dtype), idx), {"dims": (0,), "accumulate": True}, exact)
    check(b, "index_put", (x, data((6,), dtype), idx, np.array([0, 1, 1, 2, 0, 1])),
          {"dims": (0, 1), "accumulate": True}, exact)
    check(b, "index_add", (x, idx, data((6, 3), dtype)), {"dim": 0, "alpha": 1}, exact)


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int64, np.bool_])
def test_repeat_interleave(b, dtype):
    x = data((3, 4), dtype)
    for dim, reps in ((0, np.array([2, 0, 3])), (1, np.array([1, 1, 0, 4])), (1, 2), (0, 0)):
        n = x.shape[dim]
        total = int(np.sum(reps)) if isinstance(reps, np.ndarray) else n * reps
        check(b, "repeat_interleave", (x, reps), {"dim": dim, "output_size": total}, exact=True)
        if isinstance(reps, np.ndarray):
            check(b, "repeat_interleave", (x, reps), {"dim": dim, "output_size": None}, exact=True)
    check(b, "repeat_interleave", (np.zeros((0, 2), dtype), np.zeros((0,), np.int64)),
          {"dim": 0, "output_size": 0}, exact=True)


# ---- pools, im2col, col2im -----------------------------------------------------------------------------------------
POOLS = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, input shape
    ((3,), (2,), (1,), False, True, None, (2, 3, 11)),
    ((2, 3), (2, 1), (1, 1), True, False, None, (2, 2, 7, 8)),
    ((3, 3), (2, 2), (0, 1), True, True, 5, (1, 3, 9, 6)),
    ((2, 2, 2), (1, 2, 2), (1, 0, 1), False, False, None, (1, 2, 4, 5, 6)),
    ((2, 2), (2, 2), (0, 0), False, True, None, (0, 3, 4, 4)),
]


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int64, np.int32])
def test_avg_pool_and_backward(b, dtype):
    from ember.backend.numpy.conv import _pool_osz
    for k, s, p, ceil, cip, div, shape in POOLS:
        attrs = {"kernel_size": k, "stride": s, "padding": p, "ceil_mode": ceil, "count_include_pad": cip,
                 "divisor_override": div}
        x = data(shape, dtype, lo=-9, hi=10)
        check(b, "avg_pool", (x,), attrs)
        if np.dtype(dtype).kind == "f" or dtype in (F16, BF16):
            g = data(shape[:2] + _pool_osz(shape[2:], k, s, p, ceil), dtype)
            check(b, "avg_pool_backward", (g,), dict(attrs, input_size=shape[2:]))


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int64, np.uint8])
def test_adaptive_max_pool(b, dtype):
    for shape, osz in (((2, 3, 10), (4,)), ((2, 2, 7, 5), (3, 2)), ((1, 2, 3, 4, 5), (2, 3, 2)), ((2, 2, 6), (6,)),
                       ((0, 2, 5, 5), (2, 2)), ((2, 3, 5), (0,))):
        x = data(shape, dtype, lo=0, nan=True)
        check(b, "adaptive_max_pool", (x,), {"output_size": osz}, exact=True)


BLOCKS = [  # kernel, dilation, padding, stride, input shape
    ((2, 3), (1, 1), ((1, 1), (0, 0)), (1, 2), (1, 3, 5, 6)),     # N == 1: the im2col kernel on a GPU
    ((3, 3), (2, 1), ((2, 2), (1, 1)), (2, 1), (2, 2, 7, 6)),
    ((3,), (2,), ((1, 1),), (2,), (2, 3, 9)),
    ((2, 2, 2), (1, 1, 1), ((0, 0), (1, 1), (0, 0)), (1, 1, 2), (1, 2, 3, 4, 5)),
    ((2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (0, 2, 3, 3)),
]


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, F16, BF16, np.int64, np.uint8, np.bool_])
def test_im2col_col2im(b, dtype):
    for k, d, p, s, shape in BLOCKS:
        attrs = {"kernel_size": k, "dilation": d, "padding": p, "stride": s}
        x = data(shape, dtype, lo=0)
        check(b, "im2col", (x,), attrs, exact=True)
        cols = REF.run("im2col", (x,), attrs)
        check(b, "col2im", (data(cols.shape, dtype, lo=0),), dict(attrs, output_size=shape[2:]))


# ---- linear algebra --------------------------------------------------------------------------------------------
def _spd(shape, dtype):
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverses_and_determinants(b, dtype):
    for shape in ((4, 4), (2, 3, 5, 5), (1, 1), (40, 40), (0, 0), (2, 0, 0), (0, 3, 3)):
        a = RNG.standard_normal(shape).astype(dtype)
        for op in ("inv", "det", "slogdet"):
            check(b, op, (a,), {})
    sing = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]], dtype)
    check(b, "det", (sing,), {})
    check(b, "slogdet", (sing,), {})
    with pytest.raises(ember.LinAlgError, match="linalg.inv"):
        run(b, "inv", (sing,), {})
    for left in (True, False):
        a = RNG.standard_normal((2, 1, 4, 4)).astype(dtype)
        rhs = RNG.standard_normal((3, 4, 2) if left else (3, 2, 4)).astype(dtype)  # batch dims broadcast
        check(b, "solve", (a, rhs), {"left": left})
        check(b, "solve", (a[0, 0], np.zeros((4, 0) if left else (0, 4), dtype)), {"left": left})
    with pytest.raises(ember.LinAlgError, match="linalg.solve"):
        run(b, "solve", (sing, np.ones((2, 2, 1), dtype)), {"left": True})


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky(b, dtype):
    for shape in ((5, 5), (3, 2, 4, 4), (0, 0), (2, 0, 0)):
        a = _spd(shape, dtype)
        a_tri = a + np.triu(RNG.standard_normal(shape), 1).astype(dtype)  # only one triangle is read
        check(b, "cholesky", (a,), {"upper": False})
        check(b, "cholesky", (np.swapaxes(a_tri, -1, -2).copy(),), {"upper": True})
    with pytest.raises(ember.LinAlgError, match="linalg.cholesky"):
        run(b, "cholesky", (-np.eye(3, dtype=dtype)[None].repeat(2, 0),), {"upper": False})


def _rtol(dtype):
    return 2e-4 if dtype == np.float32 else 1e-10


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qr_svd_eigh(b, dtype):
    """Factors are unique only up to signs, so these compare what is unique: R's magnitudes, singular
    values, eigenvalues and the reconstructions."""
    tol = _rtol(dtype)
    for shape in ((5, 3), (3, 5), (2, 4, 4), (2, 3, 6, 2), (40, 33), (0, 3), (3, 0), (0, 2, 2)):
        a = RNG.standard_normal(shape).astype(dtype)
        for mode in ("reduced", "complete", "r"):
            q, r = run(b, "qr", (a,), {"mode": mode})
            rq, rr = REF.run("qr", (a,), {"mode": mode})
            assert q.shape == rq.shape and r.shape == rr.shape and r.dtype == rr.dtype
            np.testing.assert_allclose(np.abs(r), np.abs(rr), rtol=tol, atol=tol)
            if mode != "r":
                np.testing.assert_allclose(q @ r, a, rtol=tol, atol=tol)
        for full in (True, False):
            u, s, vh = run(b, "svd", (a,), {"full_matrices": full})
            ru, rs, rvh = REF.run("svd", (a,), {"full_matrices": full})
            assert (u.shape, s.shape, vh.shape) == (ru.shape, rs.shape, rvh.shape)
            np.testing.assert_allclose(s, rs, rtol=tol, atol=tol)
            k = s.shape[-1]
            np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=tol, atol=tol)
        check(b, "svdvals", (a,), {})
    for shape in ((4, 4), (3, 5, 5), (0, 0), (2, 0, 0)):
        a = RNG.standard_normal(shape).astype(dtype)
        for uplo in ("L", "U"):
            tri = np.tril(a) if uplo == "L" else np.triu(a)
            sym = tri + np.swapaxes(tri, -1, -2) - tri * np.eye(shape[-1], dtype=dtype)
            w, v = run(b, "eigh", (a,), {"uplo": uplo})
            rw, _ = REF.run("eigh", (a,), {"uplo": uplo})
            np.testing.assert_allclose(w, rw, rtol=tol, atol=tol)
            np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), sym, rtol=tol, atol=10 * tol)
            check(b, "eigvalsh", (a,), {"uplo": uplo})


# ---- random ops with data-dependent draws --------------------------------------------------------------------------
@pytest.mark.parametrize("b", BACKENDS)
def test_randperm_is_the_argsort_of_its_private_words(b):
    for n, dtype in ((0, ember.int64), (1, ember.int64), (1000, ember.int64), (300, ember.float32),
                     (256, ember.uint8), (2049, ember.float16)):
        got = run(b, "randperm", (), {"n": n, "dtype": dtype, "seed": 99, "offset": 5})
        keys = reference._words(99, (1 << 128) | (5 << 64), n)
        np.testing.assert_array_equal(got, np.argsort(keys, kind="stable").astype(dtype.np))
        assert got.dtype == dtype.np and sorted(got.astype(np.int64).tolist()) == list(range(n))


@pytest.mark.parametrize("b", BACKENDS)
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_draws_are_the_references(b, replacement):
    for shape, k in (((7,), 3), ((4, 50), 6), ((0, 3), 1), ((3, 4), 4)):
        for dtype in (np.float32, np.float64, F16):
            p = RNG.random(shape).astype(dtype)
            if p.size:
                p.reshape(-1, shape[-1])[:, 1] = 0  # a zero-probability category is never drawn
            attrs = {"num_samples": k, "replacement": replacement, "seed": 7, "offset": 11}
            got = run(b, "multinomial", (p,), attrs)
            same(got, REF.run("multinomial", (p,), attrs), exact=True)
            if replacement or k < shape[-1]:
                assert not (got.reshape(-1, k) == 1).any()
            if not replacement and got.size:  # without replacement: distinct categories per row
                assert all(len(set(row)) == k for row in got.reshape(-1, k).tolist())


@pytest.mark.parametrize("b", BACKENDS)
def test_poisson_distribution(b):
    """Exact in distribution (a chi-square-like check of the pmf), reproducible, special rates kept."""
    from scipy.stats import poisson as pmf
    n = 20000
    for lam in (0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1e4):
        x = run(b, "poisson", (np.full(n, lam, np.float64),), {"seed": 3, "offset": 8})
        assert (x >= 0).all() and (x == np.round(x)).all()
        if lam == 0:
            assert (x == 0).all()
            continue
        assert abs(x.mean() - lam) < 5 * np.sqrt(lam / n)
        assert abs(x.var() / lam - 1) < 0.06
        vals, counts = np.unique(x, return_counts=True)
        expect = pmf.pmf(vals, lam) * n
        big = expect > 50
        assert np.all(np.abs(counts[big] - expect[big]) < 5 * np.sqrt(expect[big]) + 5)
    rates = np.array([[0.0, 1.5, 12.0], [3e15, np.inf, 0.5]], np.float64)
    a = run(b, "poisson", (rates,), {"seed": 1, "offset": 2})
    np.testing.assert_array_equal(a, run(b, "poisson", (rates,), {"seed": 1, "offset": 2}))
    assert a[0, 0] == 0 and a[1, 1] == np.inf and abs(a[1, 0] - 3e15) < 1e9
    assert not np.array_equal(a, run(b, "poisson", (rates,), {"seed": 1, "offset": 3}))
    for dtype in (np.float32, F16, BF16):
        r = run(b, "poisson", (np.full((3, 4), 2.5, dtype),), {"seed": 1, "offset": 0})
        assert r.dtype == dtype and r.shape == (3, 4)
    assert run(b, "poisson", (np.zeros((0, 2), np.float32),), {"seed": 1, "offset": 0}).shape == (0, 2)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a CUDA GPU")
def test_poisson_gpu_follows_the_code_on_numpy():  # pragma: no cover - on a GPU machine
    """The GPU draws the sim's words; only ulp-level differences of log/exp/lgamma may flip a decision."""
    rates = np.concatenate([np.full(5000, 2.0), np.full(5000, 55.0)])
    gpu = run(BACKENDS[1].values[0], "poisson", (rates,), {"seed": 5, "offset": 1})
    sim = run(SIM, "poisson", (rates,), {"seed": 5, "offset": 1})
    assert (gpu == sim).mean() > 0.999
