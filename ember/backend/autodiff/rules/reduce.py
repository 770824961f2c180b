"""Gradient rules of reductions, scans and the softmax family."""

from __future__ import annotations

import math

from .base import rule


def _in(n):
    return n.in_meta[0][0]


def _dims(n):
    d = n.attrs.get("dim")
    return None if d is None else tuple(d) if isinstance(d, (tuple, list)) else (d,)


def _count(n) -> int:
    shape, dims = _in(n), _dims(n)
    return math.prod(shape) if dims is None else math.prod(shape[d] for d in dims)


@rule("sum")
def _sum(F, g, s, n):
    g = F.cast(g, n.in_meta[0][1]) if n.in_meta[0][1].is_floating_point else g
    return (F.unreduce(g, _in(n), _dims(n), n.attrs["keepdim"]),)


@rule("nansum", save=(0,))
def _nansum(F, g, s, n):
    x = s[0]
    full = F.unreduce(F.cast(g, n.in_meta[0][1]), _in(n), _dims(n), n.attrs["keepdim"])
    return (F.where(F.un("isnan", x), 0.0, full),)


@rule("mean")
def _mean(F, g, s, n):
    g = F.cast(g, n.in_meta[0][1])
    return (F.div(F.unreduce(g, _in(n), _dims(n), n.attrs["keepdim"]), float(max(_count(n), 1))),)


@rule("prod", save=(0, "o0"))
def _prod(F, g, s, n):
    x, y = s
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    gx = F.unreduce(F.cast(g, n.in_meta[0][1]), shape, dims, keep)
    # product of all other elements, without dividing by x (zeros are common)
    if dims is None:
        flat = F.reshape(x, (math.prod(shape),))
        others = F.reshape(_prod_others(F, flat, 0), shape)
    elif len(dims) == 1:
        others = _prod_others(F, x, dims[0])
    else:  # several dims: move them to the end, flatten, and do it along one dim
        keepd = [d for d in range(len(shape)) if d not in dims]
        perm = keepd + list(dims)
        moved = F.reshape(F.permute(x, perm), tuple(shape[d] for d in keepd) + (math.prod(shape[d] for d in dims),))
        o = _prod_others(F, moved, len(keepd))
        o = F.reshape(o, tuple(shape[d] for d in perm))
        inv = [perm.index(i) for i in range(len(shape))]
        others = F.permute(o, inv)
    return (F.mul(gx, others),)


def _prod_others(F, x, dim):
    """prod over dim of every element but x[i] (exclusive cumprods from both sides)."""
    shape = F.shape(x)
    n = shape[dim]
    if n == 0:
        return x
    ones = F.full(tuple(1 if i == dim else m for i, m in enumerate(shape)), 1, F.dtype(x))
    idx = tuple((0, m, 1) if i != dim else (0, n - 1, 1) for i, m in enumerate(shape))
    left = F.run("cat", ones, F.run("cumprod", F.run("slice", x, index=idx), dim=dim, dtype=F.dtype(x)), dim=dim)
    flipped = F.run("flip", x, dims=(dim,))
    right = F.run("cat", ones, F.run("cumprod", F.run("slice", flipped, index=idx), dim=dim, dtype=F.dtype(x)),
                  dim=dim)
    return F.mul(left, F.run("flip", right, dims=(dim,)))


def _spread(F, g, x, y, n):
    """Gradient of a max/min-type reduction: shared evenly among the elements equal to the result."""
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    yb = F.unreduce(y, shape, dims, keep)
    mask = F.cast(F.cmp("eq", x, yb), F.dtype(g))
    count = F.sum(mask, dims if dims is not None else tuple(range(len(shape))), keepdim=True)
    gb = F.unreduce(g, shape, dims, keep)
    return F.div(F.mul(gb, mask), count)


@rule("amax", "amin", save=(0, "o0"))
def _amax(F, g, s, n):
    x, y = s
    return (_spread(F, g, x, y, n),)


def _select_back(F, g, idx, n, dim_attr="dim", keepdim=None):
    """Gradient of an op that picked input[idx] along dim: scatter g back into zeros."""
    shape, dtype = n.in_meta[0]
    dim = n.attrs[dim_attr]
    keep = n.attrs.get("keepdim", True) if keepdim is None else keepdim
    if dim is None:
        return F.reshape(g, shape)
    if not keep:
        kshape = tuple(1 if i == dim else m for i, m in enumerate(shape))
        g = F.reshape(g, kshape)
        idx = F.reshape(idx, kshape)
    z = F.zeros(shape, dtype)
    return F.run("scatter", z, idx, g, dim=dim, reduce="add")


@rule("max_dim", "min_dim", "kthvalue", save=("o1",), multi=True)
def _max_dim(F, gs, s, n):
    g = gs[0]
    if g is None:
        return (None,)
    return (_select_back(F, g, s[0], n),)


@rule("var", save=(0,))
def _var(F, g, s, n):
    x = s[0]
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    axes = dims if dims is not None else tuple(range(len(shape)))
    mean = F.div(F.sum(x, axes, keepdim=True), float(max(_count(n), 1)))
    scale = 2.0 / max(_count(n) - n.attrs["correction"], 0) if _count(n) - n.attrs["correction"] > 0 else math.nan
    gb = F.unreduce(g, shape, dims, keep)
    return (F.mul(gb, F.mul(F.sub(x, mean), scale)),)


@rule("cumsum")
def _cumsum(F, g, s, n):
    dim = n.attrs["dim"]
    g = F.cast(g, n.in_meta[0][1])
    return (F.run("flip", F.run("cumsum", F.run("flip", g, dims=(dim,)), dim=dim, dtype=F.dtype(g)), dims=(dim,)),)


@rule("cumprod", save=(0,))
def _cumprod(F, g, s, n):
    x = s[0]
    dim = n.attrs["dim"]
    shape = _in(n)
    g = F.cast(g, n.in_meta[0][1])
    m = shape[dim]
    # d y_j / d x_i = prod_{k <= j, k != i} x_k for j >= i: build it with one cumprod per i (zero-safe)
    out = []
    for i in range(m):
        idx_i = tuple((i, i + 1, 1) if d == dim else (0, k, 1) for d, k in enumerate(shape))
        ones_i = F.full(tuple(1 if d == dim else k for d, k in enumerate(shape)), 1, F.dtype(x))
        xi_removed = F.run("slice_scatter", x, ones_i, index=idx_i)
        c = F.run("cumprod", xi_removed, dim=dim, dtype=F.dtype(x))
        tail = tuple((i, m, 1) if d == dim else (0, k, 1) for d, k in enumerate(shape))
        contrib = F.sum(F.mul(F.run("slice", c, index=tail), F.run("slice", g, index=tail)), (dim,), keepdim=True)
        out.append(contrib)
    if not out:
        return (g,)
    return (F.run("cat", *out, dim=dim),)


@rule("cummax", "cummin", save=("o1",), multi=True)
def _cummax(F, gs, s, n):
    g = gs[0]
    if g is None:
        return (None,)
    shape, dtype = n.in_meta[0]
    return (F.run("scatter", F.zeros(shape, dtype), s[0], g, dim=n.attrs["dim"], reduce="add"),)


@rule("logcumsumexp", save=(0, "o0"))
def _logcumsumexp(F, g, s, n):
    x, y = s
    dim = n.attrs["dim"]
    # grad_i = sum_{j >= i} g_j exp(x_i - y_j), split by the sign of g to stay in log space
    out = None
    for sign in (1.0, -1.0):
        part = F.run("maximum", F.mul(g, sign), 0.0)
        logp = F.sub(F.un("log", part), y)
        rev = F.run("flip", F.run("logcumsumexp", F.run("flip", logp, dims=(dim,)), dim=dim), dims=(dim,))
        term = F.mul(F.un("exp", F.add(rev, x)), sign)
        out = term if out is None else F.add(out, term)
    return (out,)


# ---- composites the numpy backend runs natively ---------------------------------------------
@rule("softmax", save=("o0",))
def _softmax(F, g, s, n):
    y = s[0]
    dim = n.attrs["dim"]
    dot = F.sum(F.mul(g, y), (dim,), keepdim=True)
    return (F.mul(y, F.sub(g, dot)),)


@rule("log_softmax", save=("o0",))
def _log_softmax(F, g, s, n):
    y = s[0]
    dim = n.attrs["dim"]
    return (F.sub(g, F.mul(F.un("exp", y), F.sum(g, (dim,), keepdim=True))),)


@rule("logsumexp", save=(0, "o0"))
def _logsumexp(F, g, s, n):
    x, y = s
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    return (F.mul(F.unreduce(g, shape, dims, keep), F.un("exp", F.sub(x, F.unreduce(y, shape, dims, keep)))),)


NONDIFF_REDUCE = {"all", "any", "argmax", "argmin"}
