"""Movement ops of the numpy backend: views share the input's memory, as in PyTorch."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def _reshape(x, shape):
    return x.reshape(shape)  # the method: np.reshape's dispatch wrapper costs a microsecond an op


def _permute(x, dims):
    return np.transpose(x, dims)


def _expand(x, shape):
    # read-only in numpy; the frontend refuses writes into expanded tensors before they get here
    return np.broadcast_to(x, shape)


def _slice(x, index):
    return x[tuple([slice(a, b, c) for a, b, c in index])]


def _root(x):
    base = x
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _strided_view(x, shape, strides, offset, head):
    """A view of x's memory with byte ``strides`` starting ``offset`` bytes after x's first element
    (``head``: a view of x whose first element is that start, for the fallback).

    Built on the root buffer with np.ndarray rather than numpy's as_strided, whose result hangs
    off a helper object: ``.base`` then leads to the root and storage offsets stay exact."""
    root = _root(x)
    start = x.__array_interface__["data"][0] - root.__array_interface__["data"][0] + offset
    try:
        out = np.ndarray(shape, x.dtype, buffer=root, offset=start, strides=strides)
    except (TypeError, ValueError):  # a root without a plain buffer (e.g. imported through DLPack)
        return as_strided(head(), shape=shape, strides=strides, writeable=x.flags.writeable)
    if not x.flags.writeable:  # views of broadcast (expanded) arrays stay read-only
        out.flags.writeable = False
    return out


def _diagonal(x, offset, dim1, dim2):
    # np.diagonal returns a read-only view; PyTorch's diagonal is writable, so build it by strides
    n1, n2 = x.shape[dim1], x.shape[dim2]
    length = max(0, min(n1, n2 - offset)) if offset >= 0 else max(0, min(n1 + offset, n2))
    keep = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    shape = tuple(x.shape[d] for d in keep) + (length,)
    strides = tuple(x.strides[d] for d in keep) + (x.strides[dim1] + x.strides[dim2],)
    if length == 0 or 0 in shape:
        return np.empty(shape, x.dtype)
    # the first diagonal element sits `offset` steps along dim2 (or -offset along dim1)
    d, k = (dim2, offset) if offset >= 0 else (dim1, -offset)
    key = tuple(slice(k, None) if i == d else slice(None) for i in range(x.ndim))
    return _strided_view(x, shape, strides, k * x.strides[d], lambda: x[key])


def _as_strided(x, size, stride, storage_offset):
    root = _root(x)
    if not root.flags.c_contiguous:
        raise RuntimeError("as_strided: the tensor's storage is not a contiguous buffer")
    if root.dtype != x.dtype:  # x is a dtype view of its buffer (e.g. bytes read from a file): index in x's units
        if root.nbytes % x.itemsize:
            raise RuntimeError(f"as_strided: the storage holds {root.nbytes} bytes, not a whole number of "
                               f"{x.dtype} elements")
        root = root.reshape(-1).view(x.dtype)
    item = x.itemsize
    return _strided_view(root, tuple(size), tuple(st * item for st in stride), storage_offset * item,
                         lambda: root.reshape(-1)[storage_offset:])


def _contiguous(x):
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _copy(x):
    return np.array(x, copy=True, order="C")


def _flip(x, dims):
    return np.flip(x, dims).copy()


def _roll(x, shifts, dims):
    if not dims:
        return np.roll(x.reshape(-1), shifts).reshape(x.shape)
    return np.roll(x, shifts, axis=dims)


def _cat(*xs, dim):
    return np.concatenate(xs, axis=dim)


def _stack(*xs, dim):
    return np.stack(xs, axis=dim)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad(x, pad, mode, value):
    if mode == "constant":
        return np.pad(x, pad, mode="constant", constant_values=value)
    return np.pad(x, pad, mode=_PAD_MODES[mode])


def _tril(x, diagonal):
    return np.tril(x, diagonal)


def _triu(x, diagonal):
    return np.triu(x, diagonal)


def _repeat_interleave(x, repeats, dim, output_size=None):
    return np.repeat(x, repeats, axis=dim)


def _tile(x, reps):
    return np.tile(x, reps)


OPS = {
    "reshape": _reshape, "permute": _permute, "expand": _expand, "slice": _slice,
    "diagonal": _diagonal, "as_strided": _as_strided, "contiguous": _contiguous, "copy": _copy,
    "flip": _flip, "roll": _roll, "cat": _cat, "stack": _stack, "pad": _pad, "tril": _tril,
    "triu": _triu, "repeat_interleave": _repeat_interleave, "tile": _tile,
}
