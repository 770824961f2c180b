"""Gradient rules of indexing, gather/scatter and value-selecting ops (sort, topk)."""

from __future__ import annotations

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
    x, index, src, y = s
    dim, how, incl = n.attrs["dim"], n.attrs["reduce"], n.attrs["include_self"]
    if how == "sum":
        gx = g if incl else F.run("scatter", g, index, 0.0, dim=dim, reduce=None)
        return (gx, None, _gather_src_grad(F, g, index, n))
    if how == "mean":
        ones = F.full(F.shape(index), 1.0, F.dtype(g))
        count = F.run("scatter", F.full(n.in_meta[0][0], 1.0 if incl else 0.0, F.dtype(g)), index, ones,
                      dim=dim, reduce="add")
        count = F.run("maximum", count, 1.0)
        gn = F.div(g, count)
        gx = gn if incl else F.run("scatter", gn, index, 0.0, dim=dim, reduce=None)
        return (gx, None, _gather_src_grad(F, gn, index, n))
    if how in ("amax", "amin"):
        value = F.run("gather", y, index, dim=dim)
        src_hit = F.cast(F.cmp("eq", src, value), F.dtype(g))
        self_hit = F.cast(F.cmp("eq", x, y), F.dtype(g)) if incl else F.zeros(n.in_meta[0][0], F.dtype(g))
        count = F.run("scatter", self_hit, index, src_hit, dim=dim, reduce="add")
        count = F.run("maximum", count, 1.0)
        gn = F.div(g, count)
        gx = F.mul(gn, self_hit)
        gsrc = F.mul(F.run("gather", gn, index, dim=dim), src_hit)
        return (gx, None, gsrc)
    raise RuntimeError(f"the derivative of scatter_reduce with reduce={how!r} is not implemented")


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
    pos = F.reshape(F.run("nonzero", flat_mask), (-1,)) if numel else F.zeros((0,), None)
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
    return (None, F.sum_to(g, n.in_meta[1][0]) if n.in_meta[1] is not None else None)


NONDIFF_INDEXING = {"nonzero", "unique", "unique_consecutive", "argsort", "searchsorted", "bincount", "histc",
                    "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm",
                    "bernoulli", "multinomial", "matrix_rank"}
