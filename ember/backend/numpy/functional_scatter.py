"""Out-of-place "write into a copy" ops of the numpy backend: the functional forms of writing
through a view or an index (used by gradients of views and indexing, and by autodiff for
in-place writes)."""

from __future__ import annotations

import numpy as np

from .indexing import OPS as _INDEXING
from .movement import OPS as _MOVEMENT


def _slice_scatter(x, src, index):
    out = np.array(x, copy=True)
    out[tuple(slice(a, b, c) for a, b, c in index)] = src
    return out


def _diagonal_scatter(x, src, offset, dim1, dim2):
    out = np.array(x, copy=True)
    view = _MOVEMENT["diagonal"](out, offset, dim1, dim2)
    view[...] = src
    return out


def _as_strided_scatter(x, src, size, stride, storage_offset):
    """A C-contiguous copy of x with the strided window (offsets counted from x's first element)
    replaced by src."""
    out = np.array(x, copy=True, order="C")
    view = _MOVEMENT["as_strided"](out, size, stride, storage_offset)
    view[...] = src
    return out


def _index_put(x, value, *idx, dims, accumulate):
    out = np.array(x, copy=True)
    return _INDEXING["index_put_"](out, value, *idx, dims=dims, accumulate=accumulate)


OPS = {"as_strided_scatter": _as_strided_scatter, "slice_scatter": _slice_scatter,
       "diagonal_scatter": _diagonal_scatter, "index_put": _index_put}
