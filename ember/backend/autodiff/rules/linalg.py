"""Gradient rules of matmul and linear-algebra routines."""

from __future__ import annotations

from .base import rule


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
    ga = F.reshape(F.sum_to(F.matmul(g2, _mT(F, b2)), F.shape(a2)), sa)
    gb = F.reshape(F.sum_to(F.matmul(_mT(F, a2), g2), F.shape(b2)), sb)
    return (ga, gb)


@rule("inv", save=("o0",))
def _inv(F, g, s, n):
    yT = _mT(F, s[0])
    return (F.neg(F.matmul(F.matmul(yT, g), yT)),)


def _unsq2(F, g):
    return F.reshape(g, F.shape(g) + (1, 1))


@rule("det", save=(0, "o0"))
def _det(F, g, s, n):
    a, d = s
    invT = _mT(F, F.run("inv", a))
    return (F.mul(_unsq2(F, F.mul(g, d)), invT),)


@rule("slogdet", save=(0,), multi=True)
def _slogdet(F, gs, s, n):
    g = gs[1]
    if g is None:
        return (None,)
    invT = _mT(F, F.run("inv", s[0]))
    return (F.mul(_unsq2(F, g), invT),)


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
        Fm = F.mul(F.div(1.0, safe), F.sub(1.0, eye))
        inner = F.mul(Fm, F.mul(F.sub(VtgV, _mT(F, VtgV)), 0.5))
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
