"""The standard's manipulation functions on top of ember's movement ops.

Translations: ``concat``/``stack`` promote with the standard's rules and ``concat(axis=None)``
flattens; ``expand_dims`` takes a tuple of axes; ``squeeze`` refuses an axis whose size is not
1 (PyTorch ignores it); ``reshape`` has ``copy``; ``repeat`` is ``repeat_interleave``;
``unstack`` is ``unbind``; ``permute_dims`` is ``permute``; ``moveaxis`` is ``movedim``.

>>> import ember.array_api as xp
>>> xp.expand_dims(xp.ones((2, 3)), axis=(0, -1)).shape
ember.Size([1, 2, 3, 1])
"""

from __future__ import annotations

import builtins

import numpy as np

import ember

from .. import _dtype as dt
from .._elementwise import cast
from .._shape import broadcast_shapes as _broadcast_shapes
from .._tensor import Tensor
from ._helpers import axis_tuple, check_array, norm_axis, promote

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
           "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"]


def broadcast_arrays(*arrays: Tensor) -> tuple[Tensor, ...]:
    """The arrays broadcast against each other (views)."""
    for a in arrays:
        check_array(a, "broadcast_arrays", "arrays")
    return tuple(ember.broadcast_tensors(*arrays)) if arrays else ()


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to (a ValueError when they don't); None is an unknown size.

    >>> xp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        return ()
    ndim = builtins.max(len(s) for s in shapes)
    out = []
    for i in range(-ndim, 0):
        sizes = [s[i] for s in shapes if len(s) >= -i]
        known = {n for n in sizes if n is not None and n != 1}
        if len(known) > 1:
            raise ValueError(f"broadcast_shapes: shapes {', '.join(str(tuple(s)) for s in shapes)} can't be "
                             f"broadcast together (axis {i})")
        if known:
            out.append(known.pop())
        elif builtins.any(n is None for n in sizes):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def broadcast_to(x: Tensor, /, shape) -> Tensor:
    """x broadcast to ``shape`` (a view); a ValueError if it can't be."""
    check_array(x, "broadcast_to")
    shape = tuple(shape)
    try:
        if _broadcast_shapes(x._shape, shape) != shape:
            raise RuntimeError("")
    except RuntimeError:
        raise ValueError(f"broadcast_to: can't broadcast shape {tuple(x._shape)} to {shape}") from None
    return ember.broadcast_to(x, shape)


def _promoted(arrays, op: str) -> list[Tensor]:
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{op}: needs at least one array")
    for a in arrays:
        check_array(a, op, "arrays")
    d = promote(op, *arrays)
    return [cast(a, d) for a in arrays]


def concat(arrays, /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along an existing ``axis`` (flattened first when axis is None)."""
    arrays = _promoted(arrays, "concat")
    if axis is None:
        return ember.cat([a.reshape(-1) for a in arrays], 0)
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("concat: zero-dimensional arrays can't be concatenated; use axis=None or stack")
    return ember.cat(arrays, norm_axis(axis, nd, "concat"))


def stack(arrays, /, *, axis: int = 0) -> Tensor:
    """The arrays (of one shape) joined along a new ``axis``."""
    arrays = _promoted(arrays, "stack")
    return ember.stack(arrays, norm_axis(axis, arrays[0].ndim + 1, "stack"))


def expand_dims(x: Tensor, /, axis=0) -> Tensor:
    """x with new size-1 axes at ``axis`` (an int or a tuple, positions in the result)."""
    check_array(x, "expand_dims")
    axes = (axis,) if isinstance(axis, (builtins.int, np.integer)) else tuple(axis)
    n = x.ndim + len(axes)
    pos = sorted(norm_axis(a, n, "expand_dims") for a in axes)
    if len(set(pos)) != len(pos):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    shape = list(x._shape)
    for p in pos:
        shape.insert(p, 1)
    return x.reshape(tuple(shape))


def flip(x: Tensor, /, *, axis=None) -> Tensor:
    """x with the order of elements reversed along ``axis`` (every axis when None)."""
    check_array(x, "flip")
    axes = axis_tuple(axis, x.ndim, "flip")
    if axes is None:
        axes = tuple(range(x.ndim))
    return ember.flip(x, axes) if axes and x.ndim else x.clone()


def moveaxis(x: Tensor, source, destination, /) -> Tensor:
    """x with axes moved from ``source`` to ``destination`` (ints or tuples of equal length)."""
    check_array(x, "moveaxis")
    src = (source,) if isinstance(source, builtins.int) else tuple(source)
    dst = (destination,) if isinstance(destination, builtins.int) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    src = tuple(norm_axis(a, x.ndim, "moveaxis") for a in src)
    dst = tuple(norm_axis(a, x.ndim, "moveaxis") for a in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    return ember.movedim(x, src, dst)


def permute_dims(x: Tensor, /, axes) -> Tensor:
    """x with its axes reordered as ``axes`` (a permutation of range(ndim))."""
    check_array(x, "permute_dims")
    axes = tuple(axes)
    if sorted(a % builtins.max(x.ndim, 1) for a in axes) != list(range(x.ndim)) or len(axes) != x.ndim:
        raise ValueError(f"permute_dims: {axes} is not a permutation of the {x.ndim} axes")
    return ember.permute(x, axes)


def repeat(x: Tensor, repeats, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (x flattened first when None).

    >>> xp.repeat(xp.asarray([1, 2]), xp.asarray([2, 1]))
    tensor([1, 1, 2])
    """
    check_array(x, "repeat")
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = norm_axis(axis, builtins.max(x.ndim, 1), "repeat")
    if isinstance(repeats, Tensor):
        if repeats._dtype.category != 1:
            raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats._dtype}")
        repeats = cast(repeats, dt.int64)
        if repeats.ndim == 0:
            repeats = builtins.int(repeats)
    elif builtins.int(repeats) < 0:
        raise ValueError("repeat: repeats must be non-negative")
    return ember.repeat_interleave(x, repeats, a)


def reshape(x: Tensor, /, shape, *, copy: builtins.bool | None = None) -> Tensor:
    """x with a new shape (one size may be -1); ``copy=False`` raises when that needs a copy."""
    check_array(x, "reshape")
    shape = tuple(shape)
    if copy is False:
        try:
            return x.view(shape)
        except RuntimeError as e:
            raise ValueError(f"reshape: copy=False but the reshape needs a copy ({e})") from None
    out = x.reshape(shape)
    return out.clone() if copy else out


def roll(x: Tensor, /, shift, *, axis=None) -> Tensor:
    """Elements shifted by ``shift`` along ``axis`` (of the flattened array when None), wrapping around."""
    check_array(x, "roll")
    if axis is None:
        if not isinstance(shift, (builtins.int, np.integer)):
            shift = builtins.sum(shift)
        return ember.roll(x.reshape(-1), builtins.int(shift), 0).reshape(x._shape)
    return ember.roll(x, shift, axis)


def squeeze(x: Tensor, /, axis) -> Tensor:
    """x without the size-1 ``axis`` (an int or tuple); a ValueError if one of them is not size 1."""
    check_array(x, "squeeze")
    axes = axis_tuple(axis, x.ndim, "squeeze")
    for a in axes:
        if x._shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x._shape[a]}, not 1 (shape {tuple(x._shape)})")
    return x.reshape(tuple(n for i, n in enumerate(x._shape) if i not in axes))


def tile(x: Tensor, repetitions, /) -> Tensor:
    """x repeated ``repetitions[i]`` times along each axis (numpy.tile)."""
    return ember.tile(check_array(x, "tile"), tuple(repetitions))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of x along ``axis``, as a tuple of views."""
    check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: zero-dimensional arrays can't be unstacked")
    return tuple(ember.unbind(x, norm_axis(axis, x.ndim, "unstack")))
