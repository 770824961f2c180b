"""The standard's linear algebra functions of the main namespace: matmul, matrix_transpose,
tensordot, vecdot (``ember.matmul``, ``.mT``, ``ember.tensordot``, ``ember.linalg.vecdot``),
with the standard's type promotion of the two operands.

>>> import ember.array_api as xp
>>> xp.vecdot(xp.asarray([[1.0, 2.0], [3.0, 4.0]]), xp.asarray([1.0, 1.0]))
tensor([3., 7.])
"""

from __future__ import annotations

import builtins

import ember

from .._tensor import Tensor
from ._helpers import check_array, operands

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def _pair(op: str, x1, x2) -> tuple[Tensor, Tensor]:
    check_array(x1, op, "x1"), check_array(x2, op, "x2")
    return operands(op, x1, x2)


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Matrix product with batch broadcasting (1-d operands act as vectors); 0-d operands are an error."""
    a, b = _pair("matmul", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: zero-dimensional arrays are not allowed (use multiply)")
    return ember.matmul(a, b)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """The transpose of the last two axes (a view)."""
    check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got shape {tuple(x._shape)}")
    return x.mT


def tensordot(x1: Tensor, x2: Tensor, /, *, axes=2) -> Tensor:
    """Sum of products over the last ``axes`` axes of x1 and the first of x2, or over the given pairs."""
    a, b = _pair("tensordot", x1, x2)
    if isinstance(axes, builtins.int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        return ember.tensordot(a, b, axes)
    ax1, ax2 = axes
    return ember.tensordot(a, b, (list(ax1), list(ax2)))


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot product of vectors along ``axis`` of the broadcast operands."""
    a, b = _pair("vecdot", x1, x2)
    n = builtins.min(a.ndim, b.ndim)
    if n == 0 or not -n <= axis < n:
        raise ValueError(f"vecdot: axis {axis} is out of range for shapes {tuple(a._shape)} and {tuple(b._shape)}")
    if a._shape[axis] != b._shape[axis]:
        raise ValueError(f"vecdot: the sizes along axis {axis} differ ({a._shape[axis]} and {b._shape[axis]})")
    a, b = ember.broadcast_tensors(a, b)
    if a._dtype.is_floating_point:
        return ember.linalg.vecdot(a, b, dim=axis)
    # ember.linalg.vecdot is for floats (as torch's); integer vectors keep their dtype here
    return ember.sum(ember.mul(a, b), axis, dtype=a._dtype)
