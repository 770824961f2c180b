"""Indexing, gather/scatter and their functional forms on the CUDA backend (array module ``xp``).

Index arrays arrive as int64 and range-checked by the frontend. Duplicate indices in a plain
(non-accumulating) scatter write one of the values, unspecified which, as PyTorch on CUDA does.
Accumulating writes use ``ufunc.at`` (atomics on the GPU); dtypes without atomic adds there, and
``scatter_reduce``, take the host path by raising :class:`HostPath` before touching any data.
"""

from __future__ import annotations

import numpy as np

from ..numpy.indexing import _fit, _key  # pure key arithmetic: any array module
from ._util import LOW


class HostPath(Exception):
    """Raised by a native op, before it changes anything, to ask for the host implementation."""


# dtypes CuPy's scatter_add (atomicAdd) handles on the GPU
_ATOMIC_ADD = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint32, np.uint64, np.float16)}


def build(xp, movement_ops: dict) -> dict:
    gpu = xp is not np

    def _add_at(out, key, value):
        if gpu and out.dtype not in _ATOMIC_ADD and out.dtype not in LOW:
            raise HostPath
        if out.dtype in LOW:  # accumulate in float32 and round once
            work = out.astype(np.float32)
            v = value.astype(np.float32) if isinstance(value, xp.ndarray) else value
            xp.add.at(work, key, v)
            out[...] = work.astype(out.dtype)
        else:
            xp.add.at(out, key, value)

    def _index(x, *idx, dims):
        return x[_key(x.ndim, dims, idx)]

    def _index_put_(x, value, *idx, dims, accumulate):
        key = _key(x.ndim, dims, idx)
        if accumulate:
            _add_at(x, key, value)
        else:
            x[key] = value
        return x

    def _grid(index, dim):
        key = []
        for d, n in enumerate(index.shape):
            if d == dim:
                key.append(index)
            else:
                shape = [1] * index.ndim
                shape[d] = n
                key.append(xp.arange(n).reshape(shape))
        return tuple(key)

    def _gather(x, index, dim):
        shape = list(index.shape)
        shape[dim] = x.shape[dim]
        return xp.take_along_axis(_fit(x, shape), index, axis=dim)

    def _scatter(x, index, src, dim, reduce=None):
        if reduce not in (None, "add", "sum"):
            raise HostPath
        out = x.copy()
        if index.size == 0:
            return out
        key = _grid(index, dim)
        vals = _fit(src, index.shape) if isinstance(src, xp.ndarray) else src
        if reduce is None:
            out[key] = vals
        else:
            _add_at(out, key, vals if isinstance(vals, xp.ndarray) else xp.full(index.shape, vals, out.dtype))
        return out

    def _index_select(x, index, dim):
        return xp.take(x, index, axis=dim)

    def _index_add(x, index, src, dim, alpha):
        out = x.copy()
        key = [slice(None)] * x.ndim
        key[dim] = index
        _add_at(out, tuple(key), src if alpha == 1 else (src * alpha).astype(src.dtype))
        return out

    def _masked_fill(x, mask, value):
        v = value.astype(x.dtype) if isinstance(value, xp.ndarray) else xp.asarray(value, dtype=x.dtype)
        return xp.where(mask, v, x)

    def _take(x, index):
        return xp.take(x.reshape(-1), index)

    def _assign(dst, src):
        xp.copyto(dst, src, casting="unsafe")
        return dst

    def _nonzero(x):
        return xp.argwhere(x).astype(np.int64, copy=False)

    def _masked_select(x, mask):
        return x[mask]

    def _slice_scatter(x, src, index):
        out = x.copy()
        out[tuple(slice(a, b, c) for a, b, c in index)] = src
        return out

    def _diagonal_scatter(x, src, offset, dim1, dim2):
        out = xp.array(x, copy=True, order="C")
        view = movement_ops["diagonal"](out, offset, dim1, dim2)
        view[...] = src
        return out

    def _as_strided_scatter(x, src, size, stride, storage_offset):
        out = xp.array(x, copy=True, order="C")
        view = movement_ops["as_strided"](out, size, stride, storage_offset)
        view[...] = src
        return out

    def _index_put(x, value, *idx, dims, accumulate):
        out = x.copy()
        return _index_put_(out, value, *idx, dims=dims, accumulate=accumulate)

    return {
        "index": _index, "index_put_": _index_put_, "gather": _gather, "scatter": _scatter,
        "index_select": _index_select, "index_add": _index_add, "masked_fill": _masked_fill, "take": _take,
        "assign": _assign, "nonzero": _nonzero, "masked_select": _masked_select,
        "slice_scatter": _slice_scatter, "diagonal_scatter": _diagonal_scatter,
        "as_strided_scatter": _as_strided_scatter, "index_put": _index_put,
    }
