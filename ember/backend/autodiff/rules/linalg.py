"""Gradient rules of matmul and linear-algebra routines."""

from __future__ import annotations

import numpy as np

from ...._errors import LinAlgError
from .base import rule
from .reduce import _prod_others


def _mT(F, a):
    return F.transpose(a)


@rule("matmul", save=(0, 1))
def _matmul(F, g, s, n):
    a, b = s
    sa, sb = n.in_meta[0][0], n.in_meta[1][0]
    a2 = a if len(sa) > 1 else F.reshape(a, (1, sa[0]))
    b2 = b if len(sb) > 1 else F.reshape(b, (sb[0], 1))
    gshape = F.shape(g)
    if len(sa) == 1 and len(sb) == 1:
        g2 = F.reshape(g, (1, 1))
    elif len(sa) == 1:
        g2 = F.reshape(g, gshape[:-1] + (1, gshape[-1]))
    elif len(sb) == 1:
        g2 = F.reshape(g, gshape + (1,))
    else:
        g2 = g
    # skip the product for an input that needs no gradient (e.g. the data in x @ w)
    ga = F.reshape(F.sum_to(F.matmul(g2, _mT(F, b2)), F.shape(a2)), sa) if n.edges[0] is not None else None
    # b stored column by column (a transposed view: attention's kᵀ, linear's w.mT) gets its gradient as
    # the transpose of gᵀ a, in b's own layout: the transpose back to k (or w) is then contiguous
    by_cols = n.edges[1] is not None and _column_major(F, b2)
    if n.edges[1] is None:
        gb = None
    elif len(sb) == 2 and len(sa) > 2:
        # a weight shared by a batch of rows (x @ w): one GEMM over every row, (K, rows) @ (rows, N),
        # not a product per batch entry summed afterwards
        rows = F.numel(sa[:-1])
        a_rows, g_rows = F.reshape(a, (rows, sa[-1])), F.reshape(g, (rows, sb[1]))
        gb = _mT(F, F.matmul(_mT(F, g_rows), a_rows)) if by_cols else F.matmul(_mT(F, a_rows), g_rows)
    elif by_cols and F.shape(b2)[:-2] == F.shape(g2)[:-2] and F.shape(a2)[:-2] == F.shape(g2)[:-2]:
        gb = F.reshape(_mT(F, F.matmul(_mT(F, g2), a2)), sb)
    else:
        gb = F.reshape(F.sum_to(F.matmul(_mT(F, a2), g2), F.shape(b2)), sb)
    return (ga, gb)


def _column_major(F, h) -> bool:
    """Whether h's matrices are stored column by column (unit stride down a column, not along a row)."""
    shape = F.shape(h)
    if len(shape) < 2 or shape[-1] < 2 or shape[-2] < 2:
        return False
    strides = F.b.strides(h)
    return strides[-2] == 1 and strides[-1] != 1


@rule("inv", save=("o0",))
def _inv(F, g, s, n):
    yT = _mT(F, s[0])
    return (F.neg(F.matmul(F.matmul(yT, g), yT)),)


def _unsq2(F, g):
    return F.reshape(g, F.shape(g) + (1, 1))


def _inv_or_none(F, a):
    """inv(a), or None when a matrix of the batch is exactly singular (LAPACK finds a zero pivot)."""
    try:
        return F.run("inv", a)
    except LinAlgError:
        return None


def _eye(F, m, dtype):
    return F.run("eye", n=m, m=m, dtype=dtype)


@rule("det", save=(0, "o0"))
def _det(F, g, s, n):
    a, d = s
    if n.in_meta[0][0][-1] == 0:  # 0x0 matrices: det is 1 whatever the (no) entries
        return (F.zeros_like(a),)
    inv = _inv_or_none(F, a)
    if inv is not None:  # d det / dA = det(A) A^-T
        return (F.mul(_unsq2(F, F.mul(g, d)), _mT(F, inv)),)
    # a singular matrix in the batch: the cofactor matrix from the SVD, which needs no inverse:
    # det(U) det(Vh) U diag(prod_{j != i} s_j) Vh (zero-safe exclusive products)
    U, S, Vh = F.run("svd", a, full_matrices=False)
    sign = F.mul(F.run("det", U), F.run("det", Vh))
    others = _prod_others(F, S, len(F.shape(S)) - 1)
    cof = F.matmul(F.mul(U, F.reshape(others, F.shape(others)[:-1] + (1, F.shape(others)[-1]))), Vh)
    return (F.mul(_unsq2(F, F.mul(g, sign)), cof),)


@rule("slogdet", save=(0,), multi=True)
def _slogdet(F, gs, s, n):
    g = gs[1]
    if g is None:
        return (None,)
    a = s[0]
    if n.in_meta[0][0][-1] == 0:
        return (F.zeros_like(a),)
    inv = _inv_or_none(F, a)
    if inv is None:
        # an exactly singular matrix in the batch (log|det| = -inf): A^-T = U S^-1 Vh with its zero
        # singular values (those within rounding of zero) made exact, so the gradient is infinite
        # there, as in PyTorch (which gives inf/NaN too)
        U, S, Vh = F.run("svd", a, full_matrices=False)
        m = F.shape(S)[-1]
        tol = F.mul(F.run("amax", S, dim=(len(F.shape(S)) - 1,), keepdim=True), float(np.finfo(F.dtype(S).np).eps) * m)
        S = F.where(F.cmp("le", S, tol), 0.0, S)
        inv = _mT(F, F.matmul(F.div(U, _row(F, S)), Vh))
    return (F.mul(_unsq2(F, g), _mT(F, inv)),)


@rule("solve", save=(0, "o0"))
def _solve(F, g, s, n):
    a, x = s
    left = n.attrs.get("left", True)
    sb = n.in_meta[1][0]
    vec = len(sb) == 1
    if vec:
        g = F.reshape(g, F.shape(g) + (1,))
        x = F.reshape(x, F.shape(x) + (1,))
    if left:
        gb = F.run("solve", _mT(F, a), g, left=True)
        ga = F.neg(F.matmul(gb, _mT(F, x)))
    else:
        gb = F.run("solve", _mT(F, a), g, left=False)
        ga = F.neg(F.matmul(_mT(F, x), gb))
    ga = F.sum_to(ga, n.in_meta[0][0])
    gb = F.reshape(gb, sb) if vec else F.sum_to(gb, sb)
    return (ga, gb)


@rule("cholesky", save=("o0",))
def _cholesky(F, g, s, n):
    # A = L Lᵀ; with Φ(X) = tril(X) with the diagonal halved:
    # S = L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹, dA = (S + Sᵀ) / 2
    L = s[0]
    upper = n.attrs.get("upper", False)
    if upper:  # the rule below is for the lower factor
        L, g = _mT(F, L), _mT(F, g)
    P = F.matmul(_mT(F, L), g)
    P = F.sub(F.run("tril", P, diagonal=0), F.mul(F.run("tril", F.run("triu", P, diagonal=0), diagonal=0), 0.5))
    Linv = F.run("inv", L)
    S = F.matmul(F.matmul(_mT(F, Linv), P), Linv)
    return (F.mul(F.add(S, _mT(F, S)), 0.5),)


@rule("eigh", save=("o0", "o1"), multi=True)
def _eigh(F, gs, s, n):
    w, V = s
    gw, gV = gs
    shape = F.shape(V)
    m = shape[-1]
    inner = None
    if gV is not None:
        VtgV = F.matmul(_mT(F, V), gV)
        wi = F.reshape(w, F.shape(w) + (1,))
        wj = F.reshape(w, F.shape(w)[:-1] + (1, m))
        diff = F.sub(wj, wi)                       # E[i, j] = w_j - w_i
        eye = F.run("eye", n=m, m=m, dtype=F.dtype(V))
        safe = F.add(diff, eye)                    # avoid 0/0 on the diagonal
        skew = F.mul(F.mul(F.sub(VtgV, _mT(F, VtgV)), 0.5), F.sub(1.0, eye))
        inner = _div_where_used(F, skew, safe)     # repeated eigenvalues: 0/0 only where no gradient
    if gw is not None:
        d = F.run("diagonal_scatter", F.zeros(shape, F.dtype(V)), gw, offset=0, dim1=len(shape) - 2,
                  dim2=len(shape) - 1)
        inner = d if inner is None else F.add(inner, d)
    ga = F.matmul(F.matmul(V, inner), _mT(F, V))
    return (ga,)


@rule("eigvalsh", save=(0,))
def _eigvalsh(F, g, s, n):
    w, V = F.run("eigh", s[0], uplo=n.attrs.get("uplo", "L"))
    shape = F.shape(V)
    d = F.run("diagonal_scatter", F.zeros(shape, F.dtype(V)), g, offset=0, dim1=len(shape) - 2, dim2=len(shape) - 1)
    return (F.matmul(F.matmul(V, d), _mT(F, V)),)


# ---- SVD and QR ---------------------------------------------------------------------------------
def _row(F, v):
    """(..., k) -> (..., 1, k): scales the columns of a matrix it multiplies."""
    sh = F.shape(v)
    return F.reshape(v, sh[:-1] + (1, sh[-1]))


def _col(F, v):
    """(..., k) -> (..., k, 1): scales the rows."""
    return F.reshape(v, F.shape(v) + (1,))


def _narrow(F, x, axis, k):
    """The first k entries of x along axis (-1 or -2)."""
    sh = F.shape(x)
    ax = len(sh) + axis
    if sh[ax] == k:
        return x
    return F.run("slice", x, index=tuple((0, k, 1) if i == ax else (0, m, 1) for i, m in enumerate(sh)))


def _div_where_used(F, num, den):
    """num / den, and 0 where num is exactly 0: a pair of equal (e.g. zero) singular values whose vectors
    receive no gradient (a pseudo-inverse dropping both) contributes nothing rather than 0/0."""
    return F.where(F.cmp("eq", num, 0.0), 0.0, F.div(num, den))


def _svd_backward(F, gU, gS, gVh, U, S, Vh, m, n):
    """Gradient of A = U diag(S) Vh (reduced factors, k = min(m, n)) for real A:
    U [(skew(Uᵀ gU) / E) S + S (skew(Vᵀ gV) / E) + diag(gS)] Vh
      + (I - U Uᵀ) gU S⁻¹ Vh + U S⁻¹ gVᵀ (I - V Vᵀ),   E_ij = s_j² - s_i² (1 on the diagonal).
    Repeated singular values make E zero off the diagonal: the gradient of the singular vectors is
    then undefined (inf/NaN), as in PyTorch, unless their skew term is exactly zero (no gradient reaches
    those vectors): that pair contributes 0, and so do zero singular values in the S⁻¹ terms."""
    k = F.shape(S)[-1]
    inner = None
    if gS is not None:
        inner = F.mul(_eye(F, k, F.dtype(S)), _col(F, gS))
    if gU is not None or gVh is not None:
        s2 = F.mul(S, S)
        eye = _eye(F, k, F.dtype(S))
        E = F.add(F.sub(_row(F, s2), _col(F, s2)), eye)
        if gU is not None:
            UtgU = F.matmul(_mT(F, U), gU)
            term = F.mul(_div_where_used(F, F.sub(UtgU, _mT(F, UtgU)), E), _row(F, S))
            inner = term if inner is None else F.add(inner, term)
        if gVh is not None:
            VhgVt = F.matmul(Vh, _mT(F, gVh))  # Vᵀ gV, with V = Vhᵀ and gV = gVhᵀ
            term = F.mul(_col(F, S), _div_where_used(F, F.sub(VhgVt, _mT(F, VhgVt)), E))
            inner = term if inner is None else F.add(inner, term)
    gA = F.matmul(F.matmul(U, inner), Vh)
    if gU is not None and m > k:
        proj = F.sub(gU, F.matmul(U, F.matmul(_mT(F, U), gU)))
        gA = F.add(gA, F.matmul(_div_where_used(F, proj, _row(F, S)), Vh))
    if gVh is not None and n > k:
        proj = F.sub(gVh, F.matmul(F.matmul(gVh, _mT(F, Vh)), Vh))  # gVᵀ (I - V Vᵀ)
        gA = F.add(gA, F.matmul(U, _div_where_used(F, proj, _col(F, S))))
    return gA


@rule("svd", save=("o0", "o1", "o2"), multi=True)
def _svd(F, gs, s, n):
    U, S, Vh = s
    gU, gS, gVh = gs
    shape = n.in_meta[0][0]
    m, ncols = shape[-2:]
    k = min(m, ncols)
    if k == 0:
        return (F.zeros(shape, n.in_meta[0][1]),)
    if n.attrs.get("full_matrices", True):
        # like PyTorch: only the first k singular vectors are determined by A, so the gradient
        # flows through those (the completion of the basis gets none)
        U, Vh = _narrow(F, U, -1, k), _narrow(F, Vh, -2, k)
        gU = None if gU is None else _narrow(F, gU, -1, k)
        gVh = None if gVh is None else _narrow(F, gVh, -2, k)
    return (_svd_backward(F, gU, gS, gVh, U, S, Vh, m, ncols),)


@rule("svdvals", save=(0,))
def _svdvals(F, g, s, n):
    shape = n.in_meta[0][0]
    if min(shape[-2:]) == 0:
        return (F.zeros(shape, n.in_meta[0][1]),)
    U, _, Vh = F.run("svd", s[0], full_matrices=False)
    return (F.matmul(F.mul(U, _row(F, g)), Vh),)


def _copyltu(F, M):
    """The symmetric matrix with M's lower triangle: tril(M) + tril(M, -1)ᵀ."""
    return F.add(F.run("tril", M, diagonal=0), _mT(F, F.run("tril", M, diagonal=-1)))


def _qr_backward_tall(F, gQ, gR, Q, R):
    """A = QR with m >= n (Q m x n, R n x n upper): gA = [gQ + Q copyltu(M)] R⁻ᵀ, M = R gRᵀ - gQᵀ Q."""
    M = None
    if gR is not None:
        M = F.matmul(R, _mT(F, gR))
    if gQ is not None:
        QtgQ = F.matmul(_mT(F, gQ), Q)
        M = F.neg(QtgQ) if M is None else F.sub(M, QtgQ)
    b = F.matmul(Q, _copyltu(F, M))
    if gQ is not None:
        b = F.add(b, gQ)
    return F.run("solve", _mT(F, R), b, left=False)  # b R⁻ᵀ: solve X Rᵀ = b


@rule("qr", save=(0, "o0", "o1"), multi=True)
def _qr(F, gs, s, n):
    A, Q, R = s
    gQ, gR = gs
    mode = n.attrs.get("mode", "reduced")
    shape, dtype = n.in_meta[0]
    m, ncols = shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > ncols:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if min(m, ncols) == 0:
        return (F.zeros(shape, dtype),)
    if m >= ncols:
        return (_qr_backward_tall(F, gQ, gR, Q, R),)
    # m < n: A = [X | Y] with X = Q U square and Y = Q V, R = [U | V]
    U = _narrow(F, R, -1, m)
    sl = tuple((0, d, 1) for d in shape[:-1]) + ((m, ncols, 1),)
    gU = None if gR is None else _narrow(F, gR, -1, m)
    gV = None if gR is None else F.run("slice", gR, index=sl)
    gQx = gQ
    gY = None
    if gV is not None:
        Y = F.run("slice", A, index=sl)
        YgVt = F.matmul(Y, _mT(F, gV))
        gQx = YgVt if gQx is None else F.add(gQx, YgVt)
        gY = F.matmul(Q, gV)
    gX = _qr_backward_tall(F, gQx, gU, Q, U)
    if gY is None:
        gY = F.zeros(F.shape(gX)[:-1] + (ncols - m,), dtype)
    return (F.run("cat", gX, gY, dim=len(shape) - 1),)
