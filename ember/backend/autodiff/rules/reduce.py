"""Gradient rules of reductions, scans and the softmax family."""

from __future__ import annotations

import math

import numpy as np

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


def _any_zero(F, x) -> bool:
    """Whether x has a zero anywhere (a sync point, as in PyTorch, which picks the formula the same way)."""
    z = F.run("any", F.cmp("eq", x, 0.0), dim=None, keepdim=False)
    return bool(F.b.read(z))


@rule("prod", save=(0, "o0"))
def _prod(F, g, s, n):
    x, y = s
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape, d_in = n.in_meta[0]
    d_out = F.dtype(y)
    if not shape:  # a 0-d input is its own product
        return (F.cast(g, d_in),)
    x = F.cast(x, d_out)  # prod(x, dtype=d) differentiates like prod(x.to(d))
    gx = F.unreduce(g, shape, dims, keep)
    if F.numel(shape) == 0:
        return (F.cast(gx, d_in),)
    if not _any_zero(F, x):
        # PyTorch's formula without zeros: g * prod / x (so NaN and inf spread as they do there)
        return (F.cast(F.mul(gx, F.div(F.unreduce(y, shape, dims, keep), x)), d_in),)
    # with zeros: the product of all other elements, from exclusive cumprods (no division)
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
    return (F.cast(F.mul(gx, others), d_in),)


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
    """Gradient of amax/amin (PyTorch's scale_grad_by_count): shared evenly among the elements equal
    to the result; a NaN result matches nothing, so its slice gets NaN (0 / 0), as in PyTorch."""
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


@rule("even_select", save=(0, 1))
def _even_select(F, g, s, n):
    # PyTorch's evenly_distribute_backward (max(), min(), median() of all elements, the inf-norm):
    # the elements equal to the value share the gradient, NaN counting as equal to NaN
    x, v = s
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    vb = F.unreduce(v, shape, dims, keep)
    mask = F.run("logical_or", F.cmp("eq", x, vb), F.run("logical_and", F.un("isnan", x), F.un("isnan", vb)))
    count = F.sum(F.cast(mask, F.dtype(g)), dims if dims is not None else tuple(range(len(shape))), keepdim=True)
    gb = F.div(F.unreduce(g, shape, dims, keep), count)
    return (F.where(mask, gb, 0.0), None)


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
    count = _count(n)
    mean = F.div(F.sum(x, axes, keepdim=True), float(max(count, 1)))
    dof = count - n.attrs["correction"]
    gb = F.unreduce(g, shape, dims, keep)
    if dims is None or not shape:
        if dof <= 0:  # PyTorch: inf, times 0 (NaN) where x equals the mean
            return (F.mul(gb, F.cast(F.where(F.cmp("eq", x, mean), math.nan, math.inf), F.dtype(gb))),)
        return (F.mul(gb, F.mul(F.sub(x, mean), 2.0 / dof)),)
    # over given dims PyTorch takes 2 / (N - correction) as is (negative when correction > N)
    scale = 2.0 / dof if dof != 0 else math.inf
    return (F.mul(gb, F.mul(F.sub(x, mean), scale)),)


@rule("cumsum")
def _cumsum(F, g, s, n):
    dim = n.attrs["dim"]
    g = F.cast(g, n.in_meta[0][1])
    return (F.run("flip", F.run("cumsum", F.run("flip", g, dims=(dim,)), dim=dim, dtype=F.dtype(g)), dims=(dim,)),)


@rule("cumprod", save=(0, "o0"))
def _cumprod(F, g, s, n):
    x, y = s
    dim = n.attrs["dim"]
    shape, d_in = n.in_meta[0]
    m = shape[dim] if shape else 1
    if m <= 1:
        return (F.cast(g, d_in),)
    x = F.cast(x, F.dtype(y))  # cumprod(x, dtype=d) differentiates like cumprod(x.to(d))
    if not _any_zero(F, x):
        # PyTorch's formula without zeros: reversed cumsum of y * g, divided by x
        w = F.mul(y, g)
        rev = F.run("flip", F.run("cumsum", F.run("flip", w, dims=(dim,)), dim=dim, dtype=F.dtype(w)), dims=(dim,))
        return (F.cast(F.div(rev, x), d_in),)
    # with zeros: d y_j / d x_i = prod_{k <= j, k != i} x_k for j >= i, one cumprod per i (zero-safe)
    out = []
    for i in range(m):
        idx_i = tuple((i, i + 1, 1) if d == dim else (0, k, 1) for d, k in enumerate(shape))
        ones_i = F.full(tuple(1 if d == dim else k for d, k in enumerate(shape)), 1, F.dtype(x))
        xi_removed = F.run("slice_scatter", x, ones_i, index=idx_i)
        c = F.run("cumprod", xi_removed, dim=dim, dtype=F.dtype(x))
        tail = tuple((i, m, 1) if d == dim else (0, k, 1) for d, k in enumerate(shape))
        contrib = F.sum(F.mul(F.run("slice", c, index=tail), F.run("slice", g, index=tail)), (dim,), keepdim=True)
        out.append(contrib)
    return (F.cast(F.run("cat", *out, dim=dim), d_in),)


@rule("cummax", "cummin", save=("o1",), multi=True)
def _cummax(F, gs, s, n):
    g = gs[0]
    if g is None:
        return (None,)
    shape, dtype = n.in_meta[0]
    return (F.run("scatter", F.zeros(shape, dtype), s[0], g, dim=n.attrs["dim"], reduce="add"),)


@rule("logcumsumexp", save=(0, "o0"))
def _logcumsumexp(F, g, s, n):
    # grad_i = sum_{j >= i} g_j exp(x_i - y_j), summed in log space separately for the positive and
    # negative parts of g. As in PyTorch, log|g| is replaced by the lowest float (not -inf) where a
    # part is empty, so second-order gradients stay finite.
    x, y = s
    dim = n.attrs["dim"]
    if not F.shape(g) or F.numel(F.shape(g)) == 0:
        return (g,)
    lowest = float(np.finfo(F.dtype(g).np).min)
    log_abs = F.un("log", F.un("abs", g))
    out = None
    for cmp in ("gt", "lt"):
        part = F.where(F.cmp(cmp, g, 0.0), log_abs, lowest)
        rev = F.run("flip", F.run("logcumsumexp", F.run("flip", F.sub(part, y), dims=(dim,)), dim=dim), dims=(dim,))
        term = F.un("exp", F.add(rev, x))
        out = term if out is None else F.sub(out, term)
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
    if F.b.supports("log_softmax_backward"):  # one pass (first-order only): cross-entropy over a vocabulary
        return (F.run("log_softmax_backward", y, g, dim=dim),)
    return (F.sub(g, F.mul(F.un("exp", y), F.sum(g, (dim,), keepdim=True))),)


@rule("logsumexp", save=(0, "o0"))
def _logsumexp(F, g, s, n):
    x, y = s
    dims, keep = _dims(n), n.attrs["keepdim"]
    shape = _in(n)
    return (F.mul(F.unreduce(g, shape, dims, keep), F.un("exp", F.sub(x, F.unreduce(y, shape, dims, keep)))),)


NONDIFF_REDUCE = {"all", "any", "argmax", "argmin"}
