"""Shared pieces of the Array API namespace: the standard's type promotion and axis arguments.

The standard and PyTorch promote the same pairs of dtypes, but they differ in two places that
every binary function of the namespace has to translate:

* 0-d arrays take full part in promotion (``int8 (3,) + int16 ()`` is int16); PyTorch lets a
  0-d tensor raise only the category.
* A Python scalar takes the dtype of the array it meets (the same as PyTorch within a
  category); mixing kinds (an int array with a float scalar) is implementation-defined, and
  there ember keeps PyTorch's answer (the default float).
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype as dt
from .._elementwise import cast
from .._tensor import Tensor

_SCALARS = (builtins.bool, builtins.int, builtins.float)


def is_array(x) -> builtins.bool:
    return isinstance(x, Tensor)


def check_array(x, op: str, name: str = "x") -> Tensor:
    """``x`` itself when it is an ember array; a TypeError naming the op otherwise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected an array for {name}, got {type(x).__name__}")
    return x


def _scalar_kind(s) -> int:
    if isinstance(s, (builtins.bool, np.bool_)):
        return 0
    if isinstance(s, (builtins.int, np.integer)):
        return 1
    if isinstance(s, (builtins.float, np.floating)):
        return 2
    if isinstance(s, complex):
        raise TypeError("ember has no complex dtypes, so complex Python scalars are not supported")
    raise TypeError(f"expected an array or a Python scalar, got {type(s).__name__}")


def promote(op: str, *args) -> dt.dtype:
    """The standard's result dtype for arrays and Python scalars (at least one array)."""
    out = None
    kind = -1
    for a in args:
        if isinstance(a, Tensor):
            out = a._dtype if out is None else dt.promote_types(out, a._dtype)
        else:
            kind = max(kind, _scalar_kind(a))
    if out is None:
        raise TypeError(f"{op}: at least one argument must be an array, got only Python scalars")
    if kind > out.category:  # mixed kinds: implementation-defined; PyTorch's default dtype of the kind
        out = (dt.bool, dt.int64, dt.get_default_dtype())[kind]
    return out


def operands(op: str, x1, x2, d: dt.dtype | None = None) -> tuple:
    """x1 and x2 converted for an op computed in the promoted dtype (scalars stay scalars).

    Casting 0-d arrays explicitly is what makes PyTorch's promotion give the standard's answer.
    """
    if d is None:
        d = promote(op, x1, x2)
    return tuple(cast(x, d) if isinstance(x, Tensor) else _scalar(x, d) for x in (x1, x2))


def _scalar(s, d: dt.dtype):
    """A Python scalar as a value of dtype ``d`` (the standard: as if ``asarray(s, dtype=d)``)."""
    if isinstance(s, np.generic):
        s = s.item()
    if d is dt.bool:
        return builtins.bool(s)
    if d.category == 1 and not isinstance(s, builtins.float):
        return builtins.int(s)
    if d.category == 2:
        return builtins.float(s)
    return s


def axis_tuple(axis, ndim: int, op: str) -> tuple[int, ...] | None:
    """None, an int or a sequence of ints as sorted non-negative axes (None: every axis)."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (builtins.int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = builtins.int(a)
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise IndexError(f"{op}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def norm_axis(axis: int, ndim: int, op: str) -> int:
    """One axis in [-ndim, ndim) as a non-negative int."""
    if not isinstance(axis, (builtins.int, np.integer)) or isinstance(axis, builtins.bool):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise IndexError(f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return builtins.int(axis) % ndim
