"""Gradient rules of movement ops (views, joins, pads, repeats)."""

from __future__ import annotations

import numpy as np

from ..pieces import SliceGrads
from .base import rule


def _in(n, i=0):
    return n.in_meta[i][0]


@rule("reshape")
def _reshape(F, g, s, n):
    return (F.reshape(g, _in(n)),)


@rule("permute")
def _permute(F, g, s, n):
    dims = n.attrs["dims"]
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return (F.permute(g, inv),)


@rule("expand")
def _expand(F, g, s, n):
    return (F.sum_to(g, _in(n)),)


@rule("slice")
def _slice(F, g, s, n):
    # zeros with g written in, kept as a piece: the engine sums a tensor's pieces once, as one cat where
    # they tile a dim (q, k, v = qkv.unbind(0)), when the gradient is read (autodiff/pieces.py)
    return (SliceGrads.of(n, g),)


@rule("slice_scatter")
def _slice_scatter(F, g, s, n):
    idx = n.attrs["index"]
    return (F.run("slice_scatter", g, 0.0, index=idx), F.run("slice", g, index=idx))


@rule("diagonal")
def _diagonal(F, g, s, n):
    shape, dtype = n.in_meta[0]
    a = n.attrs
    return (F.run("diagonal_scatter", F.zeros(shape, dtype), g, offset=a["offset"], dim1=a["dim1"], dim2=a["dim2"]),)


@rule("diagonal_scatter")
def _diagonal_scatter(F, g, s, n):
    a = n.attrs
    kw = {"offset": a["offset"], "dim1": a["dim1"], "dim2": a["dim2"]}
    return (F.run("diagonal_scatter", g, 0.0, **kw), F.run("diagonal", g, **kw))


def _geometry(n):
    a = n.attrs
    return {"size": a["size"], "stride": a["stride"], "storage_offset": a["storage_offset"]}


@rule("as_strided")
def _as_strided(F, g, s, n):
    # exact when the input is the contiguous storage itself (how ember's in-place-on-view handling uses it)
    shape, dtype = n.in_meta[0]
    return (F.run("as_strided_scatter", F.zeros(shape, dtype), g, **_geometry(n)),)


@rule("as_strided_scatter")
def _as_strided_scatter(F, g, s, n):
    geo = _geometry(n)
    gx = F.run("as_strided_scatter", g, F.zeros(n.in_meta[1][0], F.dtype(g)), **geo)
    return (gx, F.run("copy", F.run("as_strided", g, **geo)))


@rule("flip")
def _flip(F, g, s, n):
    return (F.run("flip", g, dims=n.attrs["dims"]),)


@rule("roll")
def _roll(F, g, s, n):
    shifts = n.attrs["shifts"]
    neg = -shifts if isinstance(shifts, int) else tuple(-x for x in shifts)
    return (F.run("roll", g, shifts=neg, dims=n.attrs["dims"]),)


@rule("cat")
def _cat(F, g, s, n):
    dim = n.attrs["dim"]
    gshape = F.shape(g)
    out, start = [], 0
    for meta in n.in_meta:
        size = meta[0][dim]
        idx = tuple((start, start + size, 1) if d == dim else (0, m, 1) for d, m in enumerate(gshape))
        out.append(F.run("slice", g, index=idx))
        start += size
    return tuple(out)


@rule("stack")
def _stack(F, g, s, n):
    dim = n.attrs["dim"]
    gshape = F.shape(g)
    out = []
    for i, meta in enumerate(n.in_meta):
        idx = tuple((i, i + 1, 1) if d == dim else (0, m, 1) for d, m in enumerate(gshape))
        out.append(F.reshape(F.run("slice", g, index=idx), meta[0]))
    return tuple(out)


@rule("tril")
def _tril(F, g, s, n):
    return (F.run("tril", g, diagonal=n.attrs["diagonal"]),)


@rule("triu")
def _triu(F, g, s, n):
    return (F.run("triu", g, diagonal=n.attrs["diagonal"]),)


def _source_index(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """For each padded position along one dim, the input position it was read from (-1: none)."""
    k = np.arange(-before, n + after)
    if mode == "constant":
        return np.where((k >= 0) & (k < n), k, -1)
    if mode == "reflect":
        period = 2 * (n - 1) if n > 1 else 1
        m = np.abs(k) % period if n > 1 else np.zeros_like(k)
        return np.where(m < n, m, period - m)
    if mode == "replicate":
        return np.clip(k, 0, n - 1)
    return k % n  # circular


@rule("pad")
def _pad(F, g, s, n):
    shape, dtype = n.in_meta[0]
    mode = n.attrs["mode"]
    for d, (before, after) in enumerate(n.attrs["pad"]):
        if before == 0 and after == 0:
            continue
        size = shape[d]
        gshape = F.shape(g)
        if mode == "constant":
            idx = tuple((before, before + size, 1) if i == d else (0, m, 1) for i, m in enumerate(gshape))
            g = F.run("slice", g, index=idx)
            continue
        src = _source_index(mode, size, before, after).astype(np.int64)
        index = F.b.write(src)
        target = tuple(size if i == d else m for i, m in enumerate(gshape))
        g = F.run("index_add", F.zeros(target, dtype), index, g, dim=d, alpha=1)
    return (g,)


@rule("tile")
def _tile(F, g, s, n):
    shape = _in(n)
    reps = n.attrs["reps"]
    inter = []
    for r, m in zip(reps, shape):
        inter += [r, m]
    g = F.reshape(g, inter)
    g = F.sum(g, tuple(range(0, 2 * len(shape), 2)), keepdim=False)
    return (F.reshape(g, shape),)


@rule("repeat_interleave", save=(1,))
def _repeat_interleave(F, g, s, n):
    shape, dtype = n.in_meta[0]
    dim = n.attrs["dim"]
    reps = s[0] if s else None
    meta = n.in_meta[1]
    if meta is None:  # an int repeat count: fold it out and sum
        r = F.shape(g)[dim] // max(shape[dim], 1) if shape[dim] else 0
        folded = F.reshape(g, shape[:dim] + (shape[dim], r) + shape[dim + 1:])
        return (F.sum(folded, (dim + 1,), keepdim=False), None)
    counts = np.asarray(F.b.read(reps)).reshape(-1)
    index = F.b.write(np.repeat(np.arange(shape[dim], dtype=np.int64), counts))
    return (F.run("index_add", F.zeros(shape, dtype), index, g, dim=dim, alpha=1), None)

