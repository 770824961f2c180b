"""Gradient rules of indexing, gather/scatter and value-selecting ops (sort, topk)."""

from __future__ import annotations

from .... import _dtype as dt
from .base import rule


@rule("index", save=tuple(range(1, 9)))
def _index(F, g, s, n):
    shape, dtype = n.in_meta[0]
    idx = [h for h in s if h is not None][: len(n.in_meta) - 1]
    z = F.zeros(shape, dtype)
    return (F.run("index_put", z, g, *idx, dims=n.attrs["dims"], accumulate=True),) + (None,) * len(idx)


@rule("index_put", save=tuple(range(2, 10)))
def _index_put(F, g, s, n):
    idx = [h for h in s if h is not None][: len(n.in_meta) - 2]
    dims, acc = n.attrs["dims"], n.attrs["accumulate"]
    gx = g if acc else F.run("index_put", g, 0.0, *idx, dims=dims, accumulate=False)
    gv = None
    if n.in_meta[1] is not None:
        picked = F.run("index", g, *idx, dims=dims)
        gv = F.sum_to(picked, n.in_meta[1][0])
    return (gx, gv) + (None,) * len(idx)


@rule("gather", save=(1,))
def _gather(F, g, s, n):
    shape, dtype = n.in_meta[0]
    if F.b.supports("gather_backward") and F.dtype(g) is dtype:  # one op, no copy of the zeros (first-order)
        return (F.run("gather_backward", g, s[0], shape=tuple(shape), dim=n.attrs["dim"]), None)
    return (F.run("scatter", F.zeros(shape, dtype), s[0], g, dim=n.attrs["dim"], reduce="add"), None)


def _gather_src_grad(F, g, index, n):
    dim = n.attrs["dim"]
    picked = F.run("gather", g, index, dim=dim)
    src_shape = n.in_meta[2][0]
    if F.shape(picked) == tuple(src_shape):
        return picked
    idx = tuple((0, m, 1) for m in F.shape(picked))
    return F.run("slice_scatter", F.zeros(src_shape, n.in_meta[2][1]), picked, index=idx)


@rule("scatter", save=(1,))
def _scatter(F, g, s, n):
    index = s[0]
    reduce = n.attrs.get("reduce")
    dim = n.attrs["dim"]
    if reduce == "multiply":
        raise RuntimeError("the derivative of scatter with reduce='multiply' is not implemented")
    gx = g if reduce == "add" else F.run("scatter", g, index, 0.0, dim=dim, reduce=None)
    gsrc = _gather_src_grad(F, g, index, n) if n.in_meta[2] is not None else None
    return (gx, None, gsrc)


@rule("scatter_reduce", save=(0, 1, 2, "o0"))
def _scatter_reduce(F, g, s, n):
    # PyTorch's formulas (scatter_reduce_backward), including where they make NaN
    x, index, src, y = s
    dim, how, incl = n.attrs["dim"], n.attrs["reduce"], n.attrs["include_self"]
    dtype = F.dtype(g)
    if how == "sum":
        gx, gsrc = g, _gather_src_grad(F, g, index, n)
    elif how == "mean":
        ones = F.full(F.shape(index), 1.0, dtype)
        count = F.run("scatter", F.full(n.in_meta[0][0], 1.0 if incl else 0.0, dtype), index, ones,
                      dim=dim, reduce="add")
        count = F.where(F.cmp("eq", count, 0.0), 1.0, count)
        gx = F.div(g, count)
        gsrc = _gather_src_grad(F, gx, index, n)
    elif how in ("amax", "amin"):
        # ties share the gradient evenly (self counts as a candidate even when not included, as in
        # PyTorch, which then zeroes the gradient of the positions written to)
        value = F.run("gather", y, index, dim=dim)
        self_hit = F.cast(F.cmp("eq", x, y), dtype)
        src_hit = F.cast(F.cmp("eq", src_part(F, src, index), value), dtype)
        count = F.run("scatter", self_hit, index, src_hit, dim=dim, reduce="add")
        gn = F.div(g, count)
        gx = F.mul(self_hit, gn)
        gsrc = _embed_src(F, F.mul(src_hit, F.run("gather", gn, index, dim=dim)), n)
    elif how == "prod":
        gx, gsrc = _scatter_prod_grads(F, g, x, index, src, y, n)
    else:
        raise RuntimeError(f"the derivative of scatter_reduce with reduce={how!r} is not implemented")
    if not incl:  # positions written to did not use self
        gx = F.run("scatter", gx, index, 0.0, dim=dim, reduce=None)
    return (gx, None, gsrc)


def src_part(F, src, index):
    """The part of src that scatter reads: its leading slice of index's shape."""
    if F.shape(src) == F.shape(index):
        return src
    return F.run("slice", src, index=tuple((0, m, 1) for m in F.shape(index)))


def _embed_src(F, part, n):
    """A gradient for the part of src that was read, zero-padded to src's shape."""
    src_shape = tuple(n.in_meta[2][0])
    if F.shape(part) == src_shape:
        return part
    idx = tuple((0, m, 1) for m in F.shape(part))
    return F.run("slice_scatter", F.zeros(src_shape, n.in_meta[2][1]), part, index=idx)


def _scatter_prod_grads(F, g, x, index, src, y, n):
    dim, incl = n.attrs["dim"], n.attrs["include_self"]
    dtype = F.dtype(g)
    # self: g * (the product with self's zeros replaced by 1) / (self with zeros replaced by 1)
    x_zero = F.cmp("eq", x, 0.0)
    masked_x = F.where(x_zero, 1.0, x)
    masked_y = F.run("scatter_reduce", masked_x, index, src, dim=dim, reduce="prod", include_self=incl)
    gx = F.div(F.mul(g, masked_y), masked_x)
    # src: g * y / src, except for a src zero that is the only zero scattered to its position, whose
    # gradient is the product of the others
    sp = src_part(F, src, index)
    src_zero = F.cmp("eq", sp, 0.0)
    zeros_at = F.run("scatter", F.zeros(n.in_meta[0][0], dtype), index, F.cast(src_zero, dtype), dim=dim,
                     reduce="add")
    single = F.run("logical_and", src_zero, F.cmp("eq", F.run("gather", zeros_at, index, dim=dim), 1.0))
    masked_src = F.where(single, 1.0, sp)
    others = F.run("scatter_reduce", x, index, masked_src, dim=dim, reduce="prod", include_self=incl)
    lone = F.run("gather", F.mul(g, others), index, dim=dim)
    plain = F.div(F.run("gather", F.mul(g, y), index, dim=dim), F.where(src_zero, 1.0, sp))
    return gx, _embed_src(F, F.where(single, lone, plain), n)


@rule("index_select", save=(1,))
def _index_select(F, g, s, n):
    shape, dtype = n.in_meta[0]
    return (F.run("index_add", F.zeros(shape, dtype), s[0], g, dim=n.attrs["dim"], alpha=1), None)


@rule("index_add", save=(1,))
def _index_add(F, g, s, n):
    gsrc = F.run("index_select", g, s[0], dim=n.attrs["dim"])
    alpha = n.attrs["alpha"]
    return (g, None, gsrc if alpha == 1 else F.mul(gsrc, alpha))


@rule("masked_fill", save=(1,))
def _masked_fill(F, g, s, n):
    return (F.where(s[0], 0.0, g), None, None)


@rule("take", save=(1,))
def _take(F, g, s, n):
    shape, dtype = n.in_meta[0]
    numel = 1
    for m in shape:
        numel *= m
    flat = F.zeros((numel,), dtype)
    idx = F.reshape(s[0], (F.numel(F.shape(s[0])),))
    out = F.run("index_put", flat, F.reshape(g, (F.numel(F.shape(g)),)), idx, dims=(0,), accumulate=True)
    return (F.reshape(out, shape), None)


@rule("masked_select", save=(1,))
def _masked_select(F, g, s, n):
    shape, dtype = n.in_meta[0]
    numel = F.numel(shape)
    flat_mask = F.reshape(s[0], (numel,))
    pos = F.reshape(F.run("nonzero", flat_mask), (-1,)) if numel else F.zeros((0,), dt.int64)
    out = F.run("index_put", F.zeros((numel,), dtype), g, pos, dims=(0,), accumulate=True)
    return (F.reshape(out, shape), None)


@rule("sort", "topk", save=("o1",), multi=True)
def _sort(F, gs, s, n):
    g = gs[0]
    if g is None:
        return (None,)
    shape, dtype = n.in_meta[0]
    return (F.run("scatter", F.zeros(shape, dtype), s[0], g, dim=n.attrs["dim"], reduce="add"),)


@rule("_assign")
def _assign(F, g, s, n):
    # every element of dst is overwritten: it gets zeros (PyTorch's copy_), built only when needed
    gdst = F.zeros_like(g) if n.edges[0] is not None else None
    return (gdst, F.sum_to(g, n.in_meta[1][0]) if n.in_meta[1] is not None else None)


NONDIFF_INDEXING = {"nonzero", "unique", "unique_consecutive", "argsort", "searchsorted", "bincount", "histc",
                    "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm",
                    "bernoulli", "multinomial", "matrix_rank"}
