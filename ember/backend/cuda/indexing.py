"""Indexing, gather/scatter and their functional forms on the CUDA backend (array module ``xp``).

Index arrays arrive as int64 and range-checked by the frontend. Duplicate indices in a plain
(non-accumulating) scatter write one of the values, unspecified which, as PyTorch on CUDA does.
Accumulating adds use ``add.at`` (atomics on the GPU) for the dtypes CuPy has atomic adds for.
The other reductions (``scatter_reduce``, ``scatter``'s multiply/amax/amin, adds of int64, int8/16,
uint8 and bool) sort the (target, value) pairs by target and reduce each run with a segmented scan
(reduce.py): no atomics, deterministic, any dtype. :class:`HostPath` is what an op raises, before it
changes anything, to ask for the numpy reference instead.
"""

from __future__ import annotations

import numpy as np

from ..numpy.indexing import _fit, _key  # pure key arithmetic: any array module
from ._util import LOW
from .reduce import segmented_scan


class HostPath(Exception):
    """Raised by a native op, before it changes anything, to ask for the host implementation."""


# dtypes CuPy's scatter_add (atomicAdd) handles on the GPU
_ATOMIC_ADD = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint32, np.uint64, np.float16)}


_UFUNC = {"add": "add", "sum": "add", "mean": "add", "multiply": "multiply", "prod": "multiply",
          "amax": "maximum", "amin": "minimum"}


def build(xp, movement_ops: dict) -> dict:
    def _reduce_runs(size, targets, vals, ufunc, dtype, counts=False):
        """(total, touched, count) over the flat positions 0..size-1: the ufunc-reduction of the values
        sent to each position, whether any was, and how many (None unless ``counts``). The pairs are
        sorted by target (stably, so each run keeps the values' order) and each run reduced by a
        segmented scan; the last element of a run writes its total, the others write into a spare slot."""
        t = targets.reshape(-1)
        order = xp.argsort(t, kind="stable")
        ts = t[order]
        vs = xp.broadcast_to(vals, targets.shape).reshape(-1)[order].astype(dtype, copy=False)
        last = xp.ones(ts.shape, bool)
        last[:-1] = ts[1:] != ts[:-1]
        slot = xp.where(last, ts, size)
        total = xp.zeros(size + 1, dtype)
        total[slot] = segmented_scan(xp, ufunc, vs, ts)
        touched = xp.zeros(size, bool)
        touched[ts] = True
        if not counts:
            return total[:size], touched, None
        count = xp.zeros(size + 1, np.int64)
        count[slot] = segmented_scan(xp, xp.add, xp.ones(ts.shape, np.int64), ts)
        return total[:size], touched, count[:size]

    def _combine_at(out, key, value, ufunc):
        """``ufunc.at(out, key, value)`` for any key (slices included) and dtype, without atomics."""
        targets = xp.arange(out.size).reshape(out.shape)[key]
        if targets.size == 0:
            return
        v = value if isinstance(value, xp.ndarray) else xp.asarray(value, dtype=out.dtype)
        total, touched, _ = _reduce_runs(out.size, targets, v, ufunc, out.dtype)
        flat = out.reshape(-1)
        out[...] = xp.where(touched, ufunc(flat, total), flat).reshape(out.shape)

    def _add_at(out, key, value):
        if out.dtype not in _ATOMIC_ADD and out.dtype not in LOW:  # no atomic add on the GPU
            _combine_at(out, key, value, xp.add)
            return
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

    def _scatter_reduce(x, index, src, dim, reduce, include_self):
        """PyTorch's scatter_reduce (sum, prod, mean, amax, amin), the reference's arithmetic: half
        precision in float32; without include_self a touched slot starts from the reduction's identity
        (so it gets the reduction of its values); integer means round toward negative infinity."""
        work = x.astype(np.float32) if x.dtype in LOW else x.copy()
        if index.size == 0:
            return work.astype(x.dtype, copy=False)
        ufunc = getattr(xp, _UFUNC[reduce])
        key = _grid(index, dim)
        targets = sum(k * int(np.prod(x.shape[d + 1:])) for d, k in enumerate(key))
        vals = _fit(src, index.shape) if isinstance(src, xp.ndarray) else xp.asarray(src, dtype=work.dtype)
        total, touched, count = _reduce_runs(x.size, targets, vals, ufunc, work.dtype, reduce == "mean")
        flat = work.reshape(-1)
        if reduce == "mean":
            s = flat + total if include_self else total
            c = xp.maximum(count + int(bool(include_self)), 1)
            r = s / c if work.dtype.kind == "f" else xp.floor_divide(s, c)
        else:
            r = ufunc(flat, total) if include_self else total
        return xp.where(touched, r, flat).astype(x.dtype, copy=False).reshape(x.shape)

    def _scatter(x, index, src, dim, reduce=None):
        if reduce not in (None, "add", "sum"):  # multiply/amax/amin: scatter_reduce including self
            return _scatter_reduce(x, index, src, dim, reduce, True)
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

    def _gather_backward(grad, index, shape, dim):
        """scatter(zeros(shape), index, grad, reduce="add") without the copy of the zeros that scatter makes:
        cross-entropy's gradient over a vocabulary is a (tokens, vocabulary) array."""
        out = xp.zeros(tuple(shape), grad.dtype)
        if index.size:
            _add_at(out, _grid(index, dim), grad)
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
        r = xp.where(mask, v, x)
        # CuPy's where has no bfloat16 loop and answers in float32: the result keeps x's dtype
        return r if r.dtype == x.dtype else r.astype(x.dtype)

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

    def _repeat_interleave(x, repeats, dim, output_size=None):
        """Each slice along ``dim`` repeated ``repeats`` times (an int, or int64 counts per slice). With
        counts, output position j takes slice searchsorted(cumsum(counts), j, "right"): one gather. The
        frontend passes the output length it computed (its own sync, as PyTorch without output_size);
        without it this reads the total from the device."""
        if not isinstance(repeats, xp.ndarray):
            return xp.repeat(x, repeats, axis=dim)
        ends = xp.cumsum(repeats.reshape(-1))
        total = int(ends[-1]) if output_size is None and ends.size else int(output_size or 0)
        src = xp.searchsorted(ends, xp.arange(total, dtype=ends.dtype), side="right")
        return xp.take(x, src, axis=dim)

    def _index_put(x, value, *idx, dims, accumulate):
        out = x.copy()
        return _index_put_(out, value, *idx, dims=dims, accumulate=accumulate)

    return {
        "index": _index, "index_put_": _index_put_, "gather": _gather, "gather_backward": _gather_backward,
        "scatter": _scatter,
        "scatter_reduce": _scatter_reduce, "repeat_interleave": _repeat_interleave,
        "index_select": _index_select, "index_add": _index_add, "masked_fill": _masked_fill, "take": _take,
        "assign": _assign, "nonzero": _nonzero, "masked_select": _masked_select,
        "slice_scatter": _slice_scatter, "diagonal_scatter": _diagonal_scatter,
        "as_strided_scatter": _as_strided_scatter, "index_put": _index_put,
    }
