"""Indexing, gather/scatter and data-dependent-shape ops of the numpy backend.

Index handles arrive as int64 arrays already checked against the indexed sizes by the frontend.
"""

from __future__ import annotations

import numpy as np

from ._util import LOW_PRECISION


def _key(ndim, dims, idx):
    key = [slice(None)] * ndim
    for d, i in zip(dims, idx):
        key[d] = i
    return tuple(key)


def _index(x, *idx, dims):
    return np.asarray(x[_key(x.ndim, dims, idx)])


def _index_put_(x, value, *idx, dims, accumulate):
    key = _key(x.ndim, dims, idx)
    if accumulate:
        np.add.at(x, key, value)
    else:
        x[key] = value
    return x


def _grid(index, dim):
    """Full index tuple for ufunc.at: ``index`` along ``dim``, broadcast aranges elsewhere."""
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(np.arange(n).reshape(shape))
    return tuple(key)


def _fit(src, shape):
    """PyTorch lets index be smaller than input/src outside ``dim``: use the leading block."""
    if src.shape == tuple(shape):
        return src
    return src[tuple(slice(0, n) for n in shape)]


def _gather(x, index, dim):
    shape = list(index.shape)
    shape[dim] = x.shape[dim]
    return np.take_along_axis(_fit(x, shape), index, axis=dim)


_AT = {"add": np.add, "sum": np.add, "multiply": np.multiply, "prod": np.multiply,
       "amax": np.maximum, "amin": np.minimum}


def _scatter(x, index, src, dim, reduce=None):
    out = x.copy()
    if index.size == 0:
        return out
    key = _grid(index, dim)
    vals = _fit(src, index.shape) if isinstance(src, np.ndarray) else src
    if reduce is None:
        out[key] = vals
    else:
        _AT[reduce].at(out, key, vals)
    return out


def _gather_backward(grad, index, shape, dim):
    """scatter(zeros(shape), index, grad, reduce="add") without copying the zeros (gather's gradient)."""
    out = np.zeros(shape, grad.dtype)
    if index.size:
        np.add.at(out, _grid(index, dim), grad)
    return out


def _scatter_reduce(x, index, src, dim, reduce, include_self):
    work = x.astype(np.float32) if x.dtype in LOW_PRECISION else x.copy()
    if index.size == 0:
        return work.astype(x.dtype, copy=False)
    key = _grid(index, dim)
    vals = _fit(src, index.shape).astype(work.dtype, copy=False)
    touched = np.zeros(x.shape, bool)
    touched[key] = True
    if not include_self:  # touched slots start from the reduction's identity
        kind = work.dtype.kind
        if kind == "b":
            lo, hi = False, True
        elif kind == "f":
            lo, hi = -np.inf, np.inf
        else:
            lo, hi = np.iinfo(work.dtype).min, np.iinfo(work.dtype).max
        work[touched] = {"sum": 0, "mean": 0, "prod": 1, "amax": lo, "amin": hi}[reduce]
    if reduce == "mean":
        count = np.zeros(x.shape, np.int64)
        np.add.at(count, key, 1)
        np.add.at(work, key, vals)
        if include_self:
            count += 1
        count = np.maximum(count, 1)
        if work.dtype.kind == "f":
            work = np.where(touched, work / count, work)
        else:  # integer mean rounds toward negative infinity in PyTorch
            work = np.where(touched, np.floor_divide(work, count), work)
    else:
        _AT[reduce].at(work, key, vals)
    return work.astype(x.dtype, copy=False)


def _index_select(x, index, dim):
    return np.take(x, index, axis=dim)


def _index_add(x, index, src, dim, alpha):
    out = x.copy()
    key = [slice(None)] * x.ndim
    key[dim] = index
    np.add.at(out, tuple(key), src if alpha == 1 else src * alpha)
    return out


def _masked_fill(x, mask, value):
    v = value if not isinstance(value, np.ndarray) else value.astype(x.dtype)
    return np.where(mask, np.asarray(v, dtype=x.dtype), x)


def _take(x, index):
    return np.take(x.reshape(-1), index)


def _assign(dst, src):
    np.copyto(dst, src, casting="unsafe")
    return dst


def _nonzero(x):
    return np.argwhere(x).astype(np.int64, copy=False)


def _masked_select(x, mask):
    return x[mask]


OPS = {
    "index": _index, "index_put_": _index_put_, "gather": _gather, "gather_backward": _gather_backward,
    "scatter": _scatter,
    "scatter_reduce": _scatter_reduce, "index_select": _index_select, "index_add": _index_add,
    "masked_fill": _masked_fill, "take": _take, "assign": _assign, "nonzero": _nonzero,
    "masked_select": _masked_select,
}
