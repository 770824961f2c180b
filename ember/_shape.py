"""Shape arithmetic done by the frontend before dispatch: broadcasting, dim normalisation."""

from __future__ import annotations

import math


class Size(tuple):
    """A tensor's shape: a tuple with ``numel()``, printed as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The broadcast of several shapes (torch.broadcast_shapes); raises naming every shape."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            cur = out[off + i]
            if n != cur:
                if cur == 1:
                    out[off + i] = n
                elif n != 1:
                    raise RuntimeError(
                        "shapes " + " and ".join(str(list(x)) for x in shapes)
                        + f" cannot be broadcast together (size {cur} vs {n} at dimension {off + i - ndim})")
    return tuple(out)


def norm_dim(dim: int, ndim: int, op: str = "") -> int:
    """A dim in [-ndim, ndim) made non-negative; 0-d tensors accept dims 0 and -1."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        where = f"{op}: " if op else ""
        raise IndexError(f"{where}Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def norm_dims(dim, ndim: int, op: str = "") -> tuple[int, ...] | None:
    """None (all dims), an int, or a sequence of ints → sorted unique non-negative dims or None."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return (norm_dim(dim, ndim, op),) if ndim else ()
    dims = tuple(norm_dim(d, ndim, op) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: dim {list(dim)} appears multiple times in the list of dims")
    if not dims:
        return None  # PyTorch: an empty dim list reduces over every dim
    return tuple(sorted(d for d in dims)) if ndim else ()


def reduced_shape(shape, dims, keepdim: bool) -> tuple[int, ...]:
    """The shape left after reducing ``dims`` (kept as size 1 with keepdim)."""
    if dims is None:
        return (1,) * len(shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


_STRIDES: dict = {}


def contiguous_strides(shape) -> tuple[int, ...]:
    """Element strides of a C-contiguous layout of ``shape`` (memoised: a training step asks for the
    same few shapes thousands of times, from the frontend, the metadata and the lazy layers)."""
    try:
        return _STRIDES[shape]
    except KeyError:
        pass
    except TypeError:  # an unhashable shape (a list)
        shape = tuple(shape)
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    st = tuple(reversed(strides))
    if len(_STRIDES) > 4096:
        _STRIDES.clear()
    _STRIDES[tuple(shape)] = st
    return st


def infer_size(shape, numel: int, op: str = "view") -> tuple[int, ...]:
    """Resolve a single -1 in ``shape`` for view/reshape, with PyTorch's error text."""
    shape = tuple(int(s) for s in shape)
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape  # the common cases first, because every reshape pays for them
    if shape.count(-1) == 1 and min(shape) == -1:
        known = -math.prod(shape)
        if known > 0 and numel % known == 0:
            i = shape.index(-1)
            return shape[:i] + (numel // known,) + shape[i + 1:]
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        i = neg[0]
        return shape[:i] + (numel // known,) + shape[i + 1:]
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view_strides(shape, strides, new_shape):
    """Strides for viewing (shape, strides) as new_shape without a copy, or None if impossible
    (PyTorch's computeStride: dims are merged only across contiguous chunks)."""
    numel = math.prod(shape)
    if numel == 0 or not shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = strides[-1] if strides else 1
    tensor_numel = 1
    view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
