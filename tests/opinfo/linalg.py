"""Registry entries: matmul and its family, einsum, and ember.linalg (norms, solvers, decompositions).

Decompositions whose factors are unique only up to signs (qr, svd, eigh) are compared through
invariants here (reconstructions, |R|, singular values, eigenvalues); tests/test_linalg_extra.py
checks the factors' properties. LAPACK-backed ops accept float32/float64 only, as PyTorch's CPU
does: their float16/bfloat16 entries hold the error samples. LinAlgError is a RuntimeError in both
libraries, so singular / not positive-definite inputs are ``raises=RuntimeError`` samples here.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from .core import FLOATS, INTS, OpInfo, Sample, T, make

MM = ("bool",) + INTS + FLOATS          # matmul family: ints and floats; bool only in error samples
LAPACK = FLOATS                          # float16/bfloat16 only in error samples
F32_64 = ("float32", "float64")
LOW = ("float16", "bfloat16")
# float32 LAPACK (and BLAS with long sums) differs from PyTorch's in the last bits
LA_TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9)}
MM_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10)}
INF = math.inf


def S(*args, name: str = "", raises=None, **kwargs) -> Sample:
    return Sample(args, kwargs, name, raises)


class Maker:
    """Builds tensor arguments of the sample dtype: random, well-conditioned, SPD, symmetric."""

    def __init__(self, dtype: str, rng: np.random.Generator):
        self.dtype, self.rng = dtype, rng
        self.np = make((), dtype, rng).dtype

    def __call__(self, shape, layout="contiguous", low=-3.0, high=3.0, special=False) -> T:
        return T(make(shape, self.dtype, self.rng, low, high, special), layout)

    def _f(self, a, layout):
        return T(np.asarray(a).astype(self.np), layout)

    def wc(self, shape, layout="contiguous") -> T:
        """Square, well-conditioned: random plus a dominant diagonal."""
        a = self.rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])
        return self._f(a, layout)

    def spd(self, shape, layout="contiguous") -> T:
        a = self.rng.uniform(-1, 1, shape)
        return self._f(a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]), layout)

    def sym(self, shape, layout="contiguous") -> T:
        a = self.rng.uniform(-2, 2, shape)
        return self._f(a + np.swapaxes(a, -1, -2), layout)

    def const(self, values, layout="contiguous") -> T:
        return self._f(values, layout)

    def ints(self, shape, high: int, layout="contiguous") -> T:
        """Integer values 0..high in the sample dtype: ties for sorting and counting."""
        return self._f(self.rng.integers(0, high + 1, shape), layout)

    def other(self, shape) -> T:
        """A tensor of a different dtype (for dtype-mismatch errors)."""
        d = "float64" if self.dtype != "float64" else "float32"
        return T(make(shape, d, self.rng))


def gen(build, low_errors=None):
    """A sample generator from ``build(m)``; for float16/bfloat16 only ``low_errors(m)`` when given."""
    def samples(dtype, rng):
        m = Maker(dtype, rng)
        items = low_errors(m) if (low_errors is not None and dtype in LOW) else build(m)
        for i, s in enumerate(items):
            s.name = s.name or f"#{i}"
            yield s
    return samples


def _bool_errors(build):
    """For bool only the error sample (PyTorch has no bool matmul); the full list otherwise."""
    def b(m):
        if m.dtype == "bool":
            return [S(m((2, 3)), m((3, 2)), raises=RuntimeError, name="bool")]
        return build(m)
    return b


# ---- matmul family -----------------------------------------------------------------------------
def _matmul(m):
    out = [
        S(m((3, 4)), m((4, 5))), S(m((4,)), m((4,))), S(m((4,)), m((4, 2))), S(m((3, 4)), m((4,))),
        S(m((2, 3, 4)), m((4,))), S(m((4,)), m((2, 4, 3))), S(m((2, 1, 3, 4)), m((5, 4, 2))),
        S(m((3, 4)), m((2, 4, 5))), S(m((2, 3, 4)), m((4, 5))), S(m((1, 1)), m((1, 1))),
        S(m((0, 3)), m((3, 2))), S(m((3, 0)), m((0, 2))), S(m((2, 0, 3)), m((3, 4))), S(m((0,)), m((0,))),
        S(m((3, 4), "transposed"), m((4, 5), "strided")), S(m((3, 4), "expanded"), m((4, 5), "transposed")),
        S(m((2, 3, 4), "transposed"), m((4, 2), "transposed")),
        S(m((2, 3)), m((4, 5)), raises=RuntimeError, name="mismatch"),
        S(m((3,)), m((4,)), raises=RuntimeError, name="vec-mismatch"),
        S(m((2, 3, 4)), m((3, 4, 5)), raises=RuntimeError, name="batch-mismatch"),
        S(m(()), m((3,)), raises=RuntimeError, name="0d"),
        S(m((2, 3)), m.other((3, 2)), raises=RuntimeError, name="dtype-mismatch"),
    ]
    if m.dtype in FLOATS:
        out.append(S(m((3, 6), special=True), m((6, 2), special=True), name="nan-inf"))
    return out


def _mm(m):
    return [S(m((3, 4)), m((4, 5))), S(m((0, 4)), m((4, 2))), S(m((4, 3), "transposed"), m((3, 2), "strided")),
            S(m((3,)), m((3, 3)), raises=RuntimeError, name="1d"),
            S(m((2, 3)), m((4, 3)), raises=RuntimeError, name="mismatch")]


def _bmm(m):
    return [S(m((2, 3, 4)), m((2, 4, 5))), S(m((0, 3, 4)), m((0, 4, 5))), S(m((2, 0, 4)), m((2, 4, 1))),
            S(m((2, 3, 4), "transposed"), m((2, 4, 2))),
            S(m((2, 3, 4)), m((3, 4, 5)), raises=RuntimeError, name="batch"),
            S(m((3, 4)), m((2, 4, 5)), raises=RuntimeError, name="2d")]


def _mv(m):
    return [S(m((3, 4)), m((4,))), S(m((0, 4)), m((4,))), S(m((3, 0)), m((0,))), S(m((4, 3), "transposed"), m((3,))),
            S(m((3, 4)), m((5,)), raises=RuntimeError, name="mismatch"),
            S(m((3, 4)), m((4, 1)), raises=RuntimeError, name="2d-vec")]


def _dot(m):
    return [S(m((5,))), S(m((0,))), S(m((6,), "strided")), S(m((1,), "expanded"))]


def _dot2(m):
    return [S(m((5,)), m((5,))), S(m((0,)), m((0,))), S(m((4,), "strided"), m((4,))),
            S(m((2,)), m((3,)), raises=RuntimeError, name="size"),
            S(m((2, 2)), m((2, 2)), raises=RuntimeError, name="2d"),
            S(m((3,)), m.other((3,)), raises=RuntimeError, name="dtype")]


def _inner(m):
    return [S(m((2, 3)), m((4, 3))), S(m((3,)), m((3,))), S(m((2, 1, 3)), m((3,))), S(m(()), m((4, 2))),
            S(m((2, 0)), m((4, 0))), S(m((3, 2), "transposed"), m((2,), "strided")),
            S(m((2, 3)), m((4, 2)), raises=RuntimeError, name="mismatch")]


def _outer(m):
    return [S(m((3,)), m((4,))), S(m((0,)), m((4,))), S(m((3,), "strided"), m((2,), "expanded")),
            S(m((3,)), T(make((2,), "int32", m.rng))), S(m((2, 2)), m((3,)), raises=RuntimeError, name="2d"),
            S(m(()), m((3,)), raises=RuntimeError, name="0d")]


def _tensordot(m):
    return [S(m((2, 3, 4)), m((3, 4, 5))), S(m((2, 3, 4)), m((3, 4, 5)), dims=2),
            S(m((2, 3, 4)), m((4, 3, 5)), dims=([1, 2], [1, 0])), S(m((2, 3)), m((2,)), dims=0),
            S(m((2, 3, 4)), m((4, 5)), dims=1), S(m((4, 3, 2), "transposed"), m((3, 4), "strided"), dims=([1], [0])),
            S(m((2, 0)), m((0, 3)), dims=1),
            S(m((2, 3)), m((4, 4)), dims=1, raises=RuntimeError, name="mismatch"),
            S(m((2, 3)), m((3, 4)), dims=-1, raises=RuntimeError, name="negative")]


def _kron(m):
    return [S(m((2, 3)), m((2, 2))), S(m((2, 3)), m((2, 2, 2))), S(m(()), m((2,))), S(m((0, 3)), m((2, 2))),
            S(m((2, 2)), m((3,), "strided")),  # torch.kron fails on a transposed first argument
            S(m((2,)), T(make((2,), "int64", m.rng)))]


def _trace(m):
    return [S(m((3, 3))), S(m((3, 5))), S(m((5, 2))), S(m((0, 3))), S(m((4, 3), "transposed")),
            S(m((2, 3, 3)), raises=RuntimeError, name="3d"), S(m((3,)), raises=RuntimeError, name="1d")]


def _addmm(m):
    s = 2 if m.dtype in INTS else 0.5
    out = [S(m((3,)), m((2, 4)), m((4, 3))), S(m((2, 3)), m((2, 4)), m((4, 3)), beta=s, alpha=2),
           S(m((1, 3)), m((2, 4)), m((4, 3)), beta=0), S(m(()), m((2, 4)), m((4, 3)), alpha=0),
           S(m((2, 3)), m((2, 0)), m((0, 3))), S(m((2, 3), "transposed"), m((2, 4), "strided"), m((4, 3))),
           S(m((2, 2)), m((2, 4)), m((4, 3)), raises=RuntimeError, name="input-shape"),
           S(m.other((2, 3)), m((2, 4)), m((4, 3)), raises=RuntimeError, name="input-dtype")]
    if m.dtype in F32_64:  # PyTorch's half kernels let NaN through a zero alpha/beta
        out.append(S(m.const(np.full((2, 3), np.nan)), m((2, 4)), m((4, 3)), beta=0, name="beta0-nan"))
        out.append(S(m((2, 3)), m.const(np.full((2, 4), np.nan)), m((4, 3)), alpha=0, name="alpha0-nan"))
    return out


def _addmv(m):
    return [S(m((2,)), m((2, 4)), m((4,))), S(m(()), m((2, 4)), m((4,)), beta=2, alpha=3),
            S(m((2,)), m((2, 0)), m((0,))), S(m((1,)), m((2, 4), "transposed"), m((4,)), beta=0),
            S(m((3,)), m((2, 4)), m((4,)), raises=RuntimeError, name="input-shape")]


def _baddbmm(m):
    return [S(m((3,)), m((2, 2, 4)), m((2, 4, 3))), S(m((2, 2, 3)), m((2, 2, 4)), m((2, 4, 3)), beta=2, alpha=3),
            S(m((2, 1, 3)), m((2, 2, 0)), m((2, 0, 3)), beta=0),
            S(m((2, 2)), m((2, 2, 4)), m((2, 4, 3)), raises=RuntimeError, name="input-shape")]


def _addbmm(m):
    return [S(m((3,)), m((2, 2, 4)), m((2, 4, 3))), S(m((2, 3)), m((2, 2, 4)), m((2, 4, 3)), beta=2, alpha=3),
            S(m((2, 3)), m((0, 2, 4)), m((0, 4, 3))), S(m((2, 3)), m((2, 2, 2), "transposed"), m((2, 2, 3))),
            S(m((2, 3)), m((2, 2, 4)), m((3, 4, 3)), raises=RuntimeError, name="batch")]


def _addr(m):
    return [S(m((2, 3)), m((2,)), m((3,))), S(m((3,)), m((2,)), m((3,)), beta=2, alpha=3),
            S(m((0, 3)), m((0,)), m((3,)))]


def _cross(m):
    return [S(m((3,)), m((3,))), S(m((4, 3)), m((4, 3))), S(m((2, 3)), m((1, 3))), S(m((3, 2)), m((3, 2))),
            S(m((3, 3)), m((3, 3))), S(m((0, 3)), m((0, 3))), S(m((3, 4), "transposed"), m((3, 4), "strided")),
            S(m((2, 3)), m((2, 3)), dim=-1), S(m((3, 2, 3)), m((3, 2, 3)), dim=0),
            S(m((2, 3)), m((2, 3)), dim=0, raises=RuntimeError, name="dim-size"),
            S(m((2, 4)), m((2, 4)), raises=RuntimeError, name="no-3"),
            S(m((2, 3)), m.other((2, 3)), raises=RuntimeError, name="dtype")]


def _lcross(m):
    return [S(m((3,)), m((3,))), S(m((4, 3)), m((4, 3))), S(m((2, 3)), m((1, 3))), S(m((3, 3)), m((3, 3))),
            S(m((3, 2)), m((3, 2)), dim=0), S(m((0, 3)), m((0, 3))),
            S(m((3, 2)), m((3, 2)), raises=RuntimeError, name="dim-size"),
            S(m((2, 3)), m((3,)), raises=RuntimeError, name="ndim")]


def _multi_dot(m):
    return [S([m((3, 4)), m((4, 5))]), S([m((3,)), m((3, 7)), m((7, 2)), m((2,))]),
            S([m((2, 7)), m((7, 10)), m((10, 3)), m((3, 1))]), S([m((4,)), m((4,))]),
            S([m((3, 0)), m((0, 2)), m((2, 2))]), S([m((4, 3), "transposed"), m((3,))]),
            S([m((3, 3))], raises=RuntimeError, name="one"),
            S([m((3, 3)), m((2, 3, 3))], raises=RuntimeError, name="3d"),
            S([m((3, 3)), m((4, 3))], raises=RuntimeError, name="mismatch")]


def _chain(m):
    return [S(m((3, 4)), m((4, 5))), S(m((2, 7)), m((7, 10)), m((10, 3))), S(m((2, 3))),
            S(m((3, 4)), m((5, 5)), raises=RuntimeError, name="mismatch")]


def _vecdot(m):
    return [S(m((2, 3)), m((3,))), S(m((2, 3)), m((2, 1)), dim=0), S(m((0, 3)), m((0, 3))),
            S(m((3, 4), "transposed"), m((3, 4))),
            S(m((2, 3)), m((4,)), raises=RuntimeError, name="shape")]


def _einsum(m):
    a, b = m((2, 3)), m((3, 4))
    out = [
        S("ij,jk->ik", a, b), S("ij,jk", a, b), S("ij->ji", a), S("ij->", a), S("ij->j", a), S("ii", m((3, 3))),
        S("ii->i", m((3, 3))), S("bij,bjk->bik", m((2, 3, 4)), m((2, 4, 5))), S("...ij,...jk", m((2, 3, 4)), m((4, 5))),
        S("i,j", m((3,)), m((4,))), S("i,i->", m((4,)), m((4,))), S("i,i->i", m((4,)), m((4,))),
        S("ij,jk,kl->il", m((2, 3)), m((3, 4)), m((4, 5))), S("...i,...i->...", m((4, 1, 3)), m((5, 3))),
        S("iji->j", m((2, 3, 2))), S("ijk,ikl->", m((2, 3, 4)), m((2, 4, 5))), S("bZa", m((2, 3, 4))),
        S("ij,jk->ik", m((2, 1)), m((3, 4))), S("i...->...", m((2, 3, 4))), S("ba,b...", m((2, 3)), m((2, 5, 6))),
        S("i j , j k -> i k", a, b), S("ij,kl->ijkl", a, b), S("ij,ij->ij", a, m((2, 3))),
        S("ij,ij->i", a, m((2, 3))), S("i,i->", m((0,)), m((0,))), S("Ab,bC->AC", a, b),
        S("ij,jk->ik", m((2, 3), "transposed"), m((3, 4), "strided")), S("ii->", m((3, 3), "expanded")),
        S("ij,jk->ik", [a, b], name="list"), S("i...j,j...k", m((2, 7, 3)), m((3, 7, 4))),
        S("ij,jk->ik", a, m((4, 4)), raises=RuntimeError, name="size"),
        S("ij,jk->ik", a, raises=RuntimeError, name="few-operands"),
        S("ij", a, b, raises=RuntimeError, name="many-operands"),
        S("i", a, raises=RuntimeError, name="ndim"), S("i1", a, raises=RuntimeError, name="bad-char"),
        S("ij->ii", a, raises=RuntimeError, name="repeat-out"), S("ij->k", a, raises=RuntimeError, name="unknown-out"),
        S("ij,jk->ik", a, m.other((3, 4)), raises=RuntimeError, name="dtype"),
    ]
    return out


def _einsum_sublist(lib, *args):
    return lib.einsum(*args)


def _einsum_sub(m):
    return [S(m((2, 3)), [0, 1], m((3, 4)), [1, 2], [0, 2]), S(m((2, 3)), [0, 1], m((3, 4)), [1, 2]),
            S(m((2, 3)), [Ellipsis, 1], m((3, 4)), [1, 2])]


# ---- ember.linalg ------------------------------------------------------------------------------
def _low(build):
    """PyTorch's CPU has no half-precision LAPACK: the first sample must fail for float16/bfloat16."""
    def errors(m):
        s = build(m)[0]
        return [Sample(s.args, s.kwargs, "half", RuntimeError)]
    return errors


def _square(m, extra=()):
    return [S(m.wc((3, 3))), S(m.wc((2, 4, 4))), S(m.wc((1, 1))), S(m.wc((0, 0))), S(m.wc((2, 0, 0))),
            S(m.wc((3, 3), "transposed")), S(m.wc((2, 3, 3), "transposed")),
            S(m((2, 3)), raises=RuntimeError, name="non-square"), S(m((3,)), raises=RuntimeError, name="1d"),
            S(T(np.eye(3, dtype=np.int64)), raises=RuntimeError, name="int"), *extra]


# NaN inputs: which entries of inv/slogdet turn NaN depends on the LAPACK build; det is NaN in all
def _inv(m):
    return _square(m, [S(m.const(np.zeros((3, 3))), raises=RuntimeError, name="singular"),
                       S(m.const(np.stack([np.eye(2), np.ones((2, 2))])), raises=RuntimeError, name="singular-batch")])


def _slogdet(m):
    return _square(m, [S(m.const(np.zeros((3, 3)))), S(m.const([[1.0, 2.0], [2.0, 4.0]])), S(m((2, 3, 3)))])


def _det(m):
    return _slogdet(m) + [S(m.const([[np.nan, 1.0], [2.0, 3.0]]), name="nan")]


def _solve(m):
    A, A2 = m.wc((3, 3)), m.wc((2, 3, 3))
    return [
        S(A, m((3,))), S(A, m((3, 2))), S(A2, m((3,))), S(A2, m((2, 3))), S(A2, m((3, 3))), S(A2, m((5, 1, 3, 2))),
        S(A2, m((4, 3)), left=False), S(A, m((2, 3)), left=False), S(m.wc((0, 0)), m((0, 2))),
        S(m.wc((3, 3), "transposed"), m((3, 2), "transposed")),
        S(A2, m((4, 3)), raises=RuntimeError, name="rows"), S(A, m((4,)), raises=RuntimeError, name="vec-size"),
        S(A, m((3, 4)), left=False, raises=RuntimeError, name="right-cols"),
        S(m((2, 3)), m((3,)), raises=RuntimeError, name="non-square"),
        S(A, m.other((3,)), raises=RuntimeError, name="dtype"),
        S(m.const(np.zeros((3, 3))), m((3,)), raises=RuntimeError, name="singular"),
    ]


def _cholesky(m):
    return [S(m.spd((3, 3))), S(m.spd((2, 4, 4))), S(m.spd((3, 3)), upper=True), S(m.spd((2, 3, 3)), upper=True),
            S(m.spd((0, 0))), S(m.spd((3, 3), "transposed")),
            S(m.const([[4.0, 2.0], [9.0, 3.0]]), upper=True, name="reads-upper"),
            S(m.const(-np.eye(3)), raises=RuntimeError, name="not-pd"),
            S(m.const([[4.0, 2.0], [9.0, 3.0]]), raises=RuntimeError, name="not-pd-lower"),
            S(m((2, 3)), raises=RuntimeError, name="non-square")]


def _qr(m):
    shapes = [(4, 3), (3, 4), (3, 3), (2, 4, 3), (0, 3), (3, 0)]
    out = [S(m(s), mode=md) for s in shapes for md in ("reduced", "complete", "r")]
    out += [S(m((4, 3), "transposed")), S(m((3, 3)), mode="bad", raises=RuntimeError, name="mode")]
    return out


def _qr_fn(lib, A, mode="reduced"):
    Q, R = lib.linalg.qr(A, mode=mode)
    if mode == "r":
        return Q.shape, R.abs()  # R is unique up to the sign of each row
    return Q @ R, R.abs(), Q.shape


def _svd(m):
    return [S(m(s), full_matrices=f) for s in [(4, 3), (3, 4), (2, 3, 3), (0, 3), (2, 0, 4)] for f in (True, False)] + \
        [S(m((4, 3), "transposed")), S(m((3, 3)), driver="gesvd", raises=RuntimeError, name="driver")]


def _svd_fn(lib, A, full_matrices=True, driver=None):
    U, Sv, Vh = lib.linalg.svd(A, full_matrices=full_matrices, driver=driver)
    k = Sv.shape[-1]
    return Sv, (U[..., :k] * Sv.unsqueeze(-2)) @ Vh[..., :k, :], U.shape, Vh.shape


def _svdvals(m):
    return [S(m((4, 3))), S(m((3, 4))), S(m((2, 3, 3))), S(m((0, 3))), S(m((4, 3), "transposed")),
            S(m.const(np.ones((3, 4))))]


def _eigh(m):
    return [S(m.sym((3, 3))), S(m.sym((2, 4, 4))), S(m.sym((0, 0))), S(m((3, 3)), UPLO="U"), S(m((3, 3)), UPLO="L"),
            S(m.sym((3, 3), "transposed")), S(m((3, 3)), UPLO="X", raises=RuntimeError, name="uplo"),
            S(m((3, 4)), raises=RuntimeError, name="non-square")]


def _eigh_fn(lib, A, UPLO="L"):  # noqa: N803
    w, V = lib.linalg.eigh(A, UPLO=UPLO)
    return w, (V * w.unsqueeze(-2)) @ V.mT


def _pinv(m):
    return [S(m((4, 3))), S(m((3, 4))), S(m((2, 3, 4))), S(m.const(np.ones((3, 4))), name="rank1"),
            S(m((0, 3))), S(m.spd((3, 3)), hermitian=True), S(m.sym((2, 3, 3)), hermitian=True),
            S(m((3, 4)), rtol=0.5), S(m((3, 4)), atol=0.5, rtol=0.1), S(m((3, 4)), rcond=0.3),
            S(m((2, 3, 4)), atol=m.const([0.1, 5.0])), S(m((4, 3), "transposed")),
            S(m((3,)), raises=RuntimeError, name="1d")]


def _rank(m):
    return [S(m((4, 3))), S(m((2, 3, 4))), S(m.const(np.ones((3, 4))), name="rank1"), S(m((0, 3))),
            S(m((3, 4)), atol=1.0), S(m((3, 4)), tol=1.0), S(m((2, 3, 4)), rtol=0.5), S(m.spd((3, 3)), hermitian=True),
            S(m((2, 3, 4)), atol=m.const([0.1, 5.0])), S(m.const(np.zeros((3, 3))), name="zero"),
            S(m((4, 3)), hermitian=True, raises=RuntimeError, name="herm-non-square")]


def _lstsq(m):
    out = [S(m((5, 3)), m((5, 2))), S(m((5, 3)), m((5,))), S(m((2, 5, 3)), m((2, 5))), S(m((3, 5)), m((3, 2))),
           S(m((2, 5, 3)), m((2, 5, 2))), S(m((1, 5, 3)), m((2, 5, 2))),
           S(m.const(np.ones((4, 3))), m((4, 2)), name="deficient"),
           S(m((0, 3)), m((0, 2))), S(m((3, 0)), m((3, 2))), S(m((5, 3), "transposed"), m((5, 2), "strided")),
           S(m((5, 3)), m((4, 2)), raises=RuntimeError, name="rows"),
           S(m((5, 3)), m.other((5, 2)), raises=RuntimeError, name="dtype"),
           S(m((5, 3)), m((5, 2)), driver="bad", raises=RuntimeError, name="driver")]
    for drv in ("gelsy", "gelsd", "gelss", "gels"):
        out += [S(m((5, 3)), m((5, 2)), driver=drv), S(m((2, 5, 3)), m((2, 5)), driver=drv)]
    out += [S(m((5, 3)), m((5, 2)), rcond=0.5, driver="gelsd", name="rcond"),
            S(m.const(np.ones((4, 3))), m((4, 2)), driver="gelsd", name="deficient-gelsd")]
    return out


def _lstsq_fn(lib, A, B, **kw):
    r = lib.linalg.lstsq(A, B, **kw)
    return tuple(r)


def _matrix_power(m):
    if m.dtype == "bool":
        return [S(m((2, 2)), 2, raises=RuntimeError, name="bool")]
    out = [S(m((3, 3)), 0), S(m((3, 3)), 1), S(m((3, 3)), 2), S(m((2, 3, 3)), 5), S(m((0, 0)), 3),
           S(m((3, 3), "transposed"), 3), S(m((2, 3)), 2, raises=RuntimeError, name="non-square")]
    if m.dtype in F32_64:
        out += [S(m.wc((3, 3)), -1), S(m.wc((2, 3, 3)), -2), S(m.wc((0, 0)), -2)]
    elif m.dtype in INTS:
        out += [S(m((3, 3)), -1, raises=RuntimeError, name="int-negative")]
    return out


def _mp_fn(lib, A, n):
    return lib.linalg.matrix_power(A, n)


def _vector_norm(m):
    out = []
    for o in (2, 1, 0, INF, -INF, 3.5, 0.5, -1):
        out += [S(m((2, 5)), o), S(m((2, 5)), o, dim=1), S(m((2, 3, 4)), o, dim=(0, 2), keepdim=True)]
    out += [S(m(())), S(m(()), 2, dim=0), S(m((0,))), S(m((2, 0)), 1, dim=0), S(m((2, 3)), 2, dim=()),
            S(m((4, 3), "transposed"), 2, dim=0), S(m((3, 4), "strided"), INF, dim=-1), S(m((3, 4), "expanded"), 3),
            S(m((2, 3)), dtype=ember.float64), S(m((6,), special=True), 2), S(m((6,), special=True), INF),
            S(m((0,)), INF, raises=RuntimeError, name="empty-inf"),
            S(m((2, 0)), -INF, dim=1, raises=RuntimeError, name="empty-dim-inf"),
            S(m((3,)), "fro", raises=TypeError, name="str-ord")]
    return out


def _vn_fn(lib, x, *args, **kw):
    return lib.linalg.vector_norm(x, *args, **kw)


MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, INF, -INF)


def _matrix_norm(m):
    out = []
    for o in MATRIX_ORDS:
        out += [S(m((3, 4)), o), S(m((2, 3, 4)), o, dim=(2, 0), keepdim=True), S(m((2, 3, 4)), o, dim=(0, 1))]
        for shape in ((0, 3), (3, 0), (2, 0, 0)):
            neg_fail = o in (-2,) or (o == -1 and shape != (0, 3)) or (o == -INF and shape != (3, 0))
            out.append(S(m(shape), o, raises=IndexError if neg_fail else None, name=f"{o}{shape}"))
    out += [S(m((4, 3), "transposed"), "fro"), S(m((4, 3), "transposed"), 2), S(m((3, 4), "strided"), 1),
            S(m((3, 4)), 3, raises=RuntimeError, name="ord3"), S(m((3,)), raises=RuntimeError, name="1d"),
            S(m((3, 4)), "fro", dim=(0, 0), raises=RuntimeError, name="same-dims")]
    return out


def _matrix_norm_low(m):
    return [S(m((3, 4)), "fro"), S(m((3, 4)), 1), S(m((3, 4)), -INF),
            S(m((3, 4)), "nuc", raises=RuntimeError, name="nuc"),
            S(m((3, 4)), 2, raises=RuntimeError, name="2")]


def _norm(m):
    return [S(m((2, 3, 4))), S(m((3, 4)), "fro"), S(m((3, 4)), "nuc"), S(m((3, 4)), INF), S(m((3, 4)), -1),
            S(m((5,)), 3), S(m((5,)), INF), S(m((2, 3, 4)), dim=(0, 2)), S(m((2, 3, 4)), 1, dim=1, keepdim=True),
            S(m((2, 3, 4)), "nuc", dim=(0, 2)), S(m((2, 3, 4)), 2, dim=(1, 2)), S(m(())),
            S(m((2, 3, 4)), 2, raises=RuntimeError, name="3d-ord"),
            S(m((2, 3, 4)), dim=(0, 1, 2), raises=RuntimeError, name="3-dims"),
            S(m((3,)), "fro", raises=RuntimeError, name="fro-1d")]


def _linalg(name, fn, build, dtypes=LAPACK, tol=LA_TOL, **kw):
    return OpInfo(name, fn, gen(build, _low(build)), dtypes, tol=tol, **kw)


def _mmop(name, fn, build, dtypes=MM, **kw):
    return OpInfo(name, fn, gen(_bool_errors(build)), dtypes, tol=MM_TOL, **kw)


OPS = [
    _mmop("matmul", lambda lib, a, b: lib.matmul(a, b), _matmul),
    _mmop("__matmul__", lambda lib, a, b: a @ b, _matmul),
    _mmop("Tensor.matmul", lambda lib, a, b: a.matmul(b), lambda m: _matmul(m)[:6]),
    _mmop("mm", lambda lib, a, b: lib.mm(a, b), _mm),
    _mmop("bmm", lambda lib, a, b: lib.bmm(a, b), _bmm),
    _mmop("mv", lambda lib, a, b: lib.mv(a, b), _mv),
    _mmop("dot", lambda lib, a, b: lib.dot(a, b), _dot2),
    _mmop("vdot", lambda lib, a, b: lib.vdot(a, b), lambda m: _dot2(m)[:3]),
    OpInfo("dot_self", lambda lib, a: a.dot(a), gen(_dot), INTS + FLOATS, tol=MM_TOL),
    _mmop("inner", lambda lib, a, b: lib.inner(a, b), _inner, dtypes=INTS + FLOATS),
    OpInfo("outer", lambda lib, a, b: lib.outer(a, b), gen(_outer), MM),
    OpInfo("ger", lambda lib, a, b: a.ger(b), gen(lambda m: _outer(m)[:3]), INTS + FLOATS),
    _mmop("tensordot", lambda lib, a, b, **kw: lib.tensordot(a, b, **kw), _tensordot, dtypes=INTS + FLOATS),
    OpInfo("kron", lambda lib, a, b: lib.kron(a, b), gen(_kron), INTS + FLOATS),
    OpInfo("trace", lambda lib, a: lib.trace(a), gen(_trace), INTS + FLOATS),
    _mmop("addmm", lambda lib, *a, **kw: lib.addmm(*a, **kw), _addmm, dtypes=INTS + FLOATS),
    _mmop("addmv", lambda lib, *a, **kw: lib.addmv(*a, **kw), _addmv, dtypes=("int64",) + FLOATS),
    _mmop("baddbmm", lambda lib, *a, **kw: lib.baddbmm(*a, **kw), _baddbmm, dtypes=("int64",) + FLOATS),
    # PyTorch's half addbmm rounds after each batch; ember sums the batch in float32 and rounds once
    OpInfo("addbmm", lambda lib, *a, **kw: lib.addbmm(*a, **kw), gen(_addbmm), ("int64",) + FLOATS,
           tol={**MM_TOL, "float16": (2e-3, 0.1), "bfloat16": (2e-2, 0.5)}),
    _mmop("addr", lambda lib, *a, **kw: lib.addr(*a, **kw), _addr, dtypes=("int64",) + FLOATS),
    OpInfo("cross", lambda lib, a, b, **kw: lib.cross(a, b, **kw), gen(_cross), ("int64",) + FLOATS),
    OpInfo("linalg.cross", lambda lib, a, b, **kw: lib.linalg.cross(a, b, **kw), gen(_lcross), ("int32",) + FLOATS),
    _mmop("linalg.multi_dot", lambda lib, ts: lib.linalg.multi_dot(ts), _multi_dot, dtypes=("int64",) + FLOATS),
    _mmop("chain_matmul", lambda lib, *ts: lib.chain_matmul(*ts), _chain, dtypes=("int64",) + F32_64),
    OpInfo("linalg.vecdot", lambda lib, a, b, **kw: lib.linalg.vecdot(a, b, **kw), gen(_vecdot), FLOATS),
    OpInfo("einsum", lambda lib, eq, *ops: lib.einsum(eq, *ops), gen(_einsum), ("int64",) + FLOATS, tol=MM_TOL),
    OpInfo("einsum_sublist", _einsum_sublist, gen(_einsum_sub), F32_64),
    _linalg("linalg.inv", lambda lib, a: lib.linalg.inv(a), _inv),
    _linalg("inverse", lambda lib, a: a.inverse(), lambda m: _square(m)[:5]),
    _linalg("linalg.det", lambda lib, a: lib.linalg.det(a), _det),
    _linalg("det", lambda lib, a: a.det(), lambda m: _square(m)[:4]),
    _linalg("linalg.slogdet", lambda lib, a: tuple(lib.linalg.slogdet(a)), _slogdet),
    _linalg("slogdet", lambda lib, a: tuple(lib.slogdet(a)), lambda m: _square(m)[:4]),
    _linalg("logdet", lambda lib, a: lib.logdet(a), lambda m: _det(m)[:2] + [S(m.const([[0.0, 1.0], [1.0, 0.0]]))]),
    _linalg("linalg.solve", lambda lib, a, b, **kw: lib.linalg.solve(a, b, **kw), _solve),
    _linalg("linalg.cholesky", lambda lib, a, **kw: lib.linalg.cholesky(a, **kw), _cholesky),
    _linalg("linalg.qr", _qr_fn, _qr),
    _linalg("linalg.svd", _svd_fn, _svd),
    _linalg("linalg.svdvals", lambda lib, a: lib.linalg.svdvals(a), _svdvals),
    _linalg("linalg.eigh", _eigh_fn, _eigh),
    _linalg("linalg.eigvalsh", lambda lib, a, **kw: lib.linalg.eigvalsh(a, **kw), _eigh),
    _linalg("linalg.pinv", lambda lib, a, *args, **kw: lib.linalg.pinv(a, *args, **kw), _pinv),
    _linalg("pinverse", lambda lib, a: a.pinverse(), lambda m: _pinv(m)[:3]),
    _linalg("linalg.matrix_rank", lambda lib, a, **kw: lib.linalg.matrix_rank(a, **kw), _rank, differentiable=False),
    _linalg("linalg.lstsq", _lstsq_fn, _lstsq),
    OpInfo("linalg.matrix_power", _mp_fn, gen(_matrix_power), ("bool", "int64") + F32_64, tol=LA_TOL),
    OpInfo("linalg.vector_norm", _vn_fn, gen(_vector_norm), FLOATS, tol=MM_TOL),
    OpInfo("linalg.matrix_norm", lambda lib, a, *args, **kw: lib.linalg.matrix_norm(a, *args, **kw),
           gen(_matrix_norm, _matrix_norm_low), FLOATS, tol=LA_TOL),
    OpInfo("linalg.norm", lambda lib, a, *args, **kw: lib.linalg.norm(a, *args, **kw), gen(_norm), F32_64,
           tol=LA_TOL),
    OpInfo("linalg.diagonal", lambda lib, a, **kw: lib.linalg.diagonal(a, **kw),
           gen(lambda m: [S(m((2, 3, 4))), S(m((2, 3, 4)), offset=1, dim1=0, dim2=2), S(m((0, 3)))]), FLOATS),
]
