"""Linear algebra beyond the registry: properties of decompositions whose factors are unique only up
to signs (qr, svd, eigh), LinAlgError, error messages, operator semantics, einsum fuzzing."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)


def _rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _eye_like(n, batch=()):
    return np.broadcast_to(np.eye(n), batch + (n, n))


# ---- decompositions ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10)])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (0, 3), (3, 0)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_factors(shape, mode, dtype, tol):
    a = _rand(*shape, dtype=dtype)
    Q, R = ember.linalg.qr(ember.tensor(a), mode=mode)
    tQ, tR = torch.linalg.qr(torch.from_numpy(a), mode=mode)
    assert Q.shape == tuple(tQ.shape) and R.shape == tuple(tR.shape)
    r = R.numpy()
    np.testing.assert_allclose(np.triu(r), r)  # upper triangular
    np.testing.assert_allclose(np.abs(r), np.abs(tR.numpy()), atol=tol, rtol=tol)
    if mode == "r":
        return
    q = Q.numpy()
    k = q.shape[-1]
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, _eye_like(k, q.shape[:-2]), atol=tol)
    np.testing.assert_allclose(q @ r, a, atol=tol * 10)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10)])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_factors(shape, full, dtype, tol):
    a = _rand(*shape, dtype=dtype)
    U, S, Vh = ember.linalg.svd(ember.tensor(a), full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(torch.from_numpy(a), full_matrices=full)
    assert (U.shape, S.shape, Vh.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tVh.shape))
    u, s, vh = U.numpy(), S.numpy(), Vh.numpy()
    np.testing.assert_allclose(s, tS.numpy(), atol=tol, rtol=tol)
    assert (s >= 0).all() and (np.diff(s, axis=-1) <= tol).all()  # descending, non-negative
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, _eye_like(u.shape[-1], u.shape[:-2]), atol=tol)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), _eye_like(vh.shape[-2], vh.shape[:-2]), atol=tol)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=tol * 10)
    np.testing.assert_allclose(ember.linalg.svdvals(ember.tensor(a)).numpy(), s, atol=tol)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_factors(uplo, dtype, tol):
    a = _rand(3, 5, 5, dtype=dtype)
    w, V = ember.linalg.eigh(ember.tensor(a), UPLO=uplo)
    tw, _ = torch.linalg.eigh(torch.from_numpy(a), UPLO=uplo)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), atol=tol, rtol=tol)
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    sym = tri + np.swapaxes(tri, -1, -2) - np.eye(5) * np.diagonal(a, axis1=-2, axis2=-1)[..., None, :]
    v, wn = V.numpy(), w.numpy()
    assert (np.diff(wn, axis=-1) >= -tol).all()  # ascending
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, _eye_like(5, (3,)), atol=tol)
    np.testing.assert_allclose(sym @ v, v * wn[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(ember.linalg.eigvalsh(ember.tensor(a), UPLO=uplo).numpy(), wn, atol=tol)


def test_cholesky_factors():
    a = _rand(2, 4, 4)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    L = ember.linalg.cholesky(ember.tensor(spd)).numpy()
    U = ember.linalg.cholesky(ember.tensor(spd), upper=True).numpy()
    np.testing.assert_allclose(L, np.tril(L))
    np.testing.assert_allclose(U, np.triu(U))
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), spd, atol=1e-10)
    np.testing.assert_allclose(np.swapaxes(U, -1, -2) @ U, spd, atol=1e-10)


def test_return_types_are_named_like_torch():
    a = ember.tensor(_rand(3, 3))
    assert type(ember.linalg.qr(a)).__name__ == "linalg_qr" and ember.linalg.qr(a).Q.shape == (3, 3)
    assert ember.linalg.svd(a)._fields == ("U", "S", "Vh")
    assert ember.linalg.eigh(a + a.mT)._fields == ("eigenvalues", "eigenvectors")
    assert ember.linalg.slogdet(a)._fields == ("sign", "logabsdet")
    r = ember.linalg.lstsq(a, a)
    assert r._fields == ("solution", "residuals", "rank", "singular_values")
    assert r.rank.dtype is ember.int64


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda A: ember.linalg.inv(A), lambda A: ember.linalg.solve(A, ember.ones(3, dtype=A.dtype)),
    lambda A: A.inverse(), lambda A: ember.linalg.matrix_power(A, -1),
])
def test_singular_raises_linalg_error(fn):
    A = ember.zeros(3, 3)
    with pytest.raises(ember.linalg.LinAlgError) as err:
        fn(A)
    assert isinstance(err.value, RuntimeError) and "singular" in str(err.value).lower()
    assert ember.LinAlgError is ember.linalg.LinAlgError


def test_not_positive_definite_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match="cholesky"):
        ember.linalg.cholesky(-ember.eye(3))
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.cholesky(ember.stack([ember.eye(2), -ember.eye(2)]))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_precision_lapack_is_refused_with_advice(dtype):
    A = ember.eye(3, dtype=dtype)
    for fn in (ember.linalg.inv, ember.linalg.det, ember.linalg.cholesky, ember.linalg.qr, ember.linalg.svd,
               ember.linalg.eigh, ember.linalg.svdvals):
        with pytest.raises(RuntimeError, match="float|Low precision"):
            fn(A)
    # what PyTorch computes in half precision, ember does too
    assert ember.linalg.matrix_norm(A).dtype is dtype
    assert ember.linalg.vector_norm(A).item() == pytest.approx(3 ** 0.5, rel=1e-2)
    assert (A @ A).dtype is dtype


def test_matmul_errors_name_shapes_and_dtypes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ember.ones(2, 3) @ ember.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"\[7, 2, 3\].*\[4, 5\]"):
        ember.ones(7, 2, 3) @ ember.ones(4, 5)
    with pytest.raises(RuntimeError, match="same dtype.*float32.*int64"):
        ember.ones(2, 3) @ ember.ones(3, 2, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="bool"):
        ember.ones(2, 2, dtype=ember.bool) @ ember.ones(2, 2, dtype=ember.bool)
    with pytest.raises(RuntimeError, match="at least 1D"):
        ember.matmul(ember.tensor(1.0), ember.ones(2))
    with pytest.raises(TypeError):
        ember.ones(2, 2) @ 3
    with pytest.raises(TypeError):
        3 @ ember.ones(2, 2)


# ---- operator semantics ------------------------------------------------------------------------
def test_imatmul_rebinds_like_torch():
    a = ember.ones(2, 3)
    alias = a
    a @= ember.ones(3, 4)
    assert a.shape == (2, 4) and alias.shape == (2, 3)
    np.testing.assert_array_equal(alias.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(a.numpy(), np.full((2, 4), 3.0))


def test_rmatmul_and_methods():
    a, b = _rand(3, 4), _rand(4, 2)
    ea, eb = ember.tensor(a), ember.tensor(b)
    np.testing.assert_allclose(eb.__rmatmul__(ea).numpy(), a @ b)
    np.testing.assert_allclose(ea.mm(eb).numpy(), a @ b)
    np.testing.assert_allclose(ea.matmul(eb).numpy(), a @ b)


@pytest.mark.parametrize("name,args", [
    ("addmm_", ((2, 3), (2, 4), (4, 3))), ("addmv_", ((2,), (2, 4), (4,))),
    ("baddbmm_", ((2, 2, 3), (2, 2, 4), (2, 4, 3))), ("addbmm_", ((2, 3), (2, 2, 4), (2, 4, 3))),
    ("addr_", ((2, 3), (2,), (3,))),
])
def test_inplace_fused_ops_match_torch(name, args):
    arrays = [_rand(*s) for s in args]
    e = [ember.tensor(x) for x in arrays]
    t = [torch.from_numpy(x.copy()) for x in arrays]
    out_e = getattr(e[0], name)(*e[1:], beta=0.5, alpha=2.0)
    getattr(t[0], name)(*t[1:], beta=0.5, alpha=2.0)
    assert out_e is e[0]
    np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-12)


def test_integer_matmul_wraps_like_torch():
    a = RNG.integers(-100, 100, (5, 7)).astype(np.int8)
    b = RNG.integers(-100, 100, (7, 3)).astype(np.int8)
    got = (ember.tensor(a) @ ember.tensor(b)).numpy()
    want = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, want)


def test_large_matmul_matches_blas():
    a, b = _rand(256, 300, dtype=np.float32), _rand(300, 200, dtype=np.float32)
    got = (ember.tensor(a).T.contiguous().T @ ember.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_multi_dot_order_does_not_change_the_result():
    mats = [_rand(2, 30), _rand(30, 3), _rand(3, 40), _rand(40, 2)]
    got = ember.linalg.multi_dot([ember.tensor(m) for m in mats]).numpy()
    np.testing.assert_allclose(got, mats[0] @ mats[1] @ mats[2] @ mats[3], rtol=1e-10)


# ---- einsum fuzz -------------------------------------------------------------------------------
def _random_einsum(rng):
    letters = "abcde"
    sizes = {c: int(rng.integers(1, 4)) for c in letters}
    n_ops = int(rng.integers(1, 4))
    terms, operands = [], []
    for _ in range(n_ops):
        k = int(rng.integers(0, 4))
        term = "".join(rng.choice(list(letters), k))
        terms.append(term)
        operands.append(rng.standard_normal(tuple(sizes[c] for c in term)))
    seen = sorted(set("".join(terms)))
    out = "".join(c for c in seen if rng.random() < 0.5)
    return ",".join(terms) + "->" + out, operands


def test_einsum_fuzz_against_torch():
    rng = np.random.default_rng(99)
    for _ in range(150):
        eq, ops = _random_einsum(rng)
        want = torch.einsum(eq, *[torch.from_numpy(o) for o in ops]).numpy()
        got = ember.einsum(eq, *[ember.tensor(o) for o in ops]).numpy()
        assert got.shape == want.shape, eq
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=eq)


def test_einsum_uses_no_numpy_einsum(monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("np.einsum called")
    monkeypatch.setattr(np, "einsum", forbidden)
    out = ember.einsum("bij,bjk->bik", ember.ones(2, 3, 4), ember.ones(2, 4, 5))
    assert out.shape == (2, 3, 5) and out.numpy()[0, 0, 0] == 4.0


# ---- gradients at exactly repeated (zero) singular values ----------------------------------------
# cuSOLVER returns exact zeros for a rank-deficient matrix where LAPACK often returns 1e-16s; the
# pseudo-inverse drops those values, so its gradient is finite and must not depend on which happened.
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("a", [np.diag([3.0, 0.0, 0.0]), np.pad([[2.0]], ((0, 2), (0, 3))),
                               np.pad([[2.0]], ((0, 3), (0, 2))), np.ones((3, 4))],
                         ids=["diag", "wide", "tall", "ones"])
def test_pinv_gradient_at_exact_rank_deficiency(a, hermitian):
    if hermitian and a.shape[0] != a.shape[1]:
        pytest.skip("hermitian needs a square matrix")
    x = ember.tensor(a, requires_grad=True)
    ember.linalg.pinv(x, hermitian=hermitian).pow(2).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.pinv(t, hermitian=hermitian).pow(2).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("a", [np.zeros((3, 3)), np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0]),
                               np.array([[1.0, 2.0], [2.0, 4.0]]), _rand(3, 3)], ids=["zero", "rank1", "2x2", "full"])
def test_det_second_derivative_is_finite_and_exact(a):
    """det is a polynomial: its Hessian-vector product exists everywhere, singular matrices included.
    Checked against central differences of the first derivative, the cofactor matrix computed from its
    minors (quadratic in the entries for 3x3, so the differences are exact up to rounding)."""
    r = _rand(*a.shape)
    x = ember.tensor(a, requires_grad=True)
    (g,) = ember.autograd.grad(ember.linalg.det(x), [x], create_graph=True)
    (hv,) = ember.autograd.grad((g * ember.tensor(r)).sum(), [x])

    def first(m):  # <cofactor matrix of m, r>, the cofactors from their minors
        n = m.shape[0]
        cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1)) if n > 1 else 1.0
                         for j in range(n)] for i in range(n)])
        return (cof * r).sum()
    h = 1e-3
    fd = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        fd[idx] = (first(a + e) - first(a - e)) / (2 * h)
    assert np.isfinite(hv.numpy()).all()
    np.testing.assert_allclose(hv.numpy(), fd, atol=1e-6)
