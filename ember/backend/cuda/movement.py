"""Movement ops of the CUDA backend: views share the input's memory, as in PyTorch.

CuPy's ``as_strided`` returns arrays without a ``base``, so strided views are registered in
``STRIDED_ROOTS`` (id -> (weakref to the view, root array)); ``Cuda.storage`` consults it, which keeps
storage identity (autodiff's version counters, aliasing checks) exact for diagonal/as_strided views.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..capture import capturing
from ..numpy.movement import _PAD_MODES
from . import casts

STRIDED_ROOTS: dict[int, tuple] = {}
_LIMIT = [65536]


def root_of(x):
    """The array that owns x's memory."""
    base = x
    while True:
        entry = STRIDED_ROOTS.get(id(base))
        if entry is not None and entry[0]() is base:
            base = entry[1]
            continue
        nxt = getattr(base, "base", None)
        if nxt is None or not hasattr(nxt, "dtype"):
            return base
        base = nxt


def view_strides(shape: tuple, strides: tuple, new_shape: tuple) -> tuple | None:
    """The strides that show an array of ``shape``/``strides`` as ``new_shape`` without copying (numpy's
    rule: each group of old dims merged or split must be one run in memory), or None when it takes a copy.

    >>> view_strides((4, 3), (8, 32), (12,)) is None   # a transposed (3, 4) float64 array: no flat view
    True
    >>> view_strides((2, 3, 4), (96, 32, 8), (6, 4))
    (32, 8)
    """
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    new = list(new_shape)
    if 0 in new or 0 in shape:
        return None
    out = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(old):
        n_new, n_old = new[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while n_new != n_old:  # grow whichever side is smaller until both cover the same elements
            if n_new < n_old:
                n_new *= new[nj]
                nj += 1
            else:
                n_old *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    last = out[ni - 1] if ni else 0
    for k in range(ni, len(new)):  # trailing size-1 dims
        out[k] = last
    return tuple(out)


def build(xp) -> dict:
    gpu = xp is not np

    def _strided(x, shape, byte_strides, byte_offset):
        """A view of x's memory (offset in bytes from x's first element), tied to x's root."""
        root = root_of(x)
        if xp is np:
            ptr0 = x.__array_interface__["data"][0]
            rptr = root.__array_interface__["data"][0]
            v = np.ndarray(shape, x.dtype, buffer=root, offset=ptr0 - rptr + byte_offset, strides=byte_strides)
        else:
            v = xp.ndarray(shape, x.dtype, memptr=x.data + byte_offset, strides=byte_strides)
        if len(STRIDED_ROOTS) > _LIMIT[0]:  # drop entries of dead views; grow when most are alive
            for k in [k for k, e in STRIDED_ROOTS.items() if e[0]() is None]:
                del STRIDED_ROOTS[k]
            _LIMIT[0] = max(_LIMIT[0], 2 * len(STRIDED_ROOTS))
        STRIDED_ROOTS[id(v)] = (weakref.ref(v), root)
        return v

    def _reshape(x, shape):
        # an array that no view can show in the new shape is copied: CuPy's copy moves one element a thread,
        # a 16-byte gather ~10x faster (attention's heads merged back: (B, H, T, D) -> (B, T, H * D))
        if gpu and not x.flags.c_contiguous and view_strides(x.shape, x.strides, tuple(shape)) is None:
            x = casts.contiguous(xp, x)
        return x.reshape(shape)

    def _permute(x, dims):
        return x.transpose(dims)

    def _expand(x, shape):
        return xp.broadcast_to(x, shape)

    def _slice(x, index):
        return x[tuple([slice(a, b, c) for a, b, c in index])]

    def _diagonal(x, offset, dim1, dim2):
        n1, n2 = x.shape[dim1], x.shape[dim2]
        length = max(0, min(n1, n2 - offset)) if offset >= 0 else max(0, min(n1 + offset, n2))
        keep = [d for d in range(x.ndim) if d not in (dim1, dim2)]
        shape = tuple(x.shape[d] for d in keep) + (length,)
        strides = tuple(x.strides[d] for d in keep) + (x.strides[dim1] + x.strides[dim2],)
        if length == 0 or 0 in shape:
            return xp.empty(shape, x.dtype)
        d, k = (dim2, offset) if offset >= 0 else (dim1, -offset)
        return _strided(x, shape, strides, k * x.strides[d])

    def _as_strided(x, size, stride, storage_offset):
        root = root_of(x)
        if not root.flags.c_contiguous:
            raise RuntimeError("as_strided: the tensor's storage is not a contiguous buffer")
        if root.dtype != x.dtype:
            root = root.reshape(-1).view(x.dtype)
        item = x.itemsize
        return _strided(root, tuple(size), tuple(s * item for s in stride), storage_offset * item)

    def _contiguous(x):
        if gpu:  # 16-byte pieces a thread (permuted attention heads): CuPy's copy moves an element a thread
            return casts.contiguous(xp, x)
        return x if x.flags.c_contiguous else xp.ascontiguousarray(x)

    def _copy(x):
        return xp.array(x, copy=True, order="C")

    def _flip(x, dims):
        return xp.ascontiguousarray(xp.flip(x, dims))

    def _roll(x, shifts, dims):
        if not dims:
            return xp.roll(x.reshape(-1), shifts).reshape(x.shape)
        return xp.roll(x, shifts, axis=dims)

    def _cat(*xs, dim):
        if capturing():
            return _cat_by_copies(xs, dim)
        return xp.concatenate(xs, axis=dim)

    def _cat_by_copies(xs, dim):
        """One copy per piece into the output: CuPy's one-kernel concatenate uploads a table of the
        pieces' pointers from the host, which a CUDA graph capture refuses."""
        dim = dim % xs[0].ndim
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        out = xp.empty(tuple(shape), xp.result_type(*xs))
        at = 0
        for x in xs:
            n = x.shape[dim]
            out[(slice(None),) * dim + (slice(at, at + n),)] = x
            at += n
        return out

    def _stack(*xs, dim):
        if capturing():
            dim = dim % (xs[0].ndim + 1)
            return _cat_by_copies(tuple(xp.expand_dims(x, dim) for x in xs), dim)
        return xp.stack(xs, axis=dim)

    def _pad(x, pad, mode, value):
        if mode == "constant":
            out = xp.full(tuple(n + a + b for n, (a, b) in zip(x.shape, pad)), value, x.dtype)
            out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pad))] = x
            return out
        return xp.pad(x, pad, mode=_PAD_MODES[mode])

    def _tril(x, diagonal):  # batched: the mask broadcasts over leading dims
        keep = xp.tri(x.shape[-2], x.shape[-1], diagonal, dtype=bool)
        # CuPy's where answers float32 for bfloat16 operands: the result keeps x's dtype
        return xp.where(keep, x, xp.zeros((), x.dtype)).astype(x.dtype, copy=False)

    def _triu(x, diagonal):
        keep = ~xp.tri(x.shape[-2], x.shape[-1], diagonal - 1, dtype=bool)
        return xp.where(keep, x, xp.zeros((), x.dtype)).astype(x.dtype, copy=False)

    def _tile(x, reps):
        return xp.tile(x, reps)

    return {
        "reshape": _reshape, "permute": _permute, "expand": _expand, "slice": _slice, "diagonal": _diagonal,
        "as_strided": _as_strided, "contiguous": _contiguous, "copy": _copy, "flip": _flip, "roll": _roll,
        "cat": _cat, "stack": _stack, "pad": _pad, "tril": _tril, "triu": _triu, "tile": _tile,
    }
