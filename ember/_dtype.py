"""ember's dtypes and PyTorch's type-promotion rules.

A dtype is an interned object (``ember.float32 is ember.float32``) that names a numpy dtype
for host transfers. Promotion follows PyTorch: categories bool < integer < floating; within a
category the wider type wins; mixing uint8 with a signed int widens to a signed type; float16
with bfloat16 gives float32. Python scalars and 0-d tensors only raise the category, never the
width (see :func:`result_type`).
"""

from __future__ import annotations

import numpy as np

try:  # bfloat16 for numpy comes from ml_dtypes (a declared dependency)
    from ml_dtypes import bfloat16 as _np_bfloat16
except ImportError:  # pragma: no cover - only without the dependency
    _np_bfloat16 = None

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "get_default_dtype", "set_default_dtype", "promote_types",
    "result_type", "can_cast", "finfo", "iinfo", "UnsupportedDtypeError",
]

_BOOL, _INT, _FLOAT = 0, 1, 2


class UnsupportedDtypeError(TypeError, NotImplementedError):
    """An op has no implementation for a dtype (``abs`` of bool, bitwise ops of floats...).

    A TypeError (the argument has the wrong type) that is also a NotImplementedError, which is
    what PyTorch raises for these ("not implemented for 'Bool'"), so code written for either
    library catches it.
    """


def unsupported(op: str, d, hint: str = "") -> UnsupportedDtypeError:
    """The error for ``op`` applied to dtype ``d``."""
    return UnsupportedDtypeError(f"{op}: not implemented for {d.name} tensors{'; ' + hint if hint else ''}")


class dtype:
    """A tensor element type. Compare with ``is`` or ``==``; ``str(ember.float32) == 'ember.float32'``."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "_rank")

    def __init__(self, name: str, npdtype, category: int, is_signed: bool, rank: int):
        self.name = name
        self.np = np.dtype(npdtype) if npdtype is not None else None
        self.itemsize = self.np.itemsize if self.np is not None else 2
        self.category = category
        self.is_signed = is_signed
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self.category == _FLOAT

    @property
    def is_complex(self) -> bool:
        return False

    def to_complex(self):
        raise TypeError(f"ember has no complex dtypes (asked for the complex counterpart of {self})")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):  # pickles as the interned singleton
        return (_by_name, (self.name,))


bool = dtype("bool", np.bool_, _BOOL, False, 0)  # noqa: A001 - mirrors torch.bool
uint8 = dtype("uint8", np.uint8, _INT, False, 1)
int8 = dtype("int8", np.int8, _INT, True, 1)
int16 = dtype("int16", np.int16, _INT, True, 2)
int32 = dtype("int32", np.int32, _INT, True, 3)
int64 = dtype("int64", np.int64, _INT, True, 4)
float16 = dtype("float16", np.float16, _FLOAT, True, 1)
bfloat16 = dtype("bfloat16", _np_bfloat16, _FLOAT, True, 1)
float32 = dtype("float32", np.float32, _FLOAT, True, 2)
float64 = dtype("float64", np.float64, _FLOAT, True, 3)

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOATING = (float16, bfloat16, float32, float64)
INTEGRAL = (uint8, int8, int16, int32, int64)

# PyTorch-compatible aliases
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001

_NAMES = {d.name: d for d in ALL}
_NAMES.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
_FROM_NP = {d.np: d for d in ALL if d.np is not None}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_numpy_dtype(npd) -> dtype:
    """The ember dtype for a numpy dtype; raises TypeError for types ember lacks (complex, str...)."""
    d = _FROM_NP.get(np.dtype(npd))
    if d is None:
        raise TypeError(f"numpy dtype {np.dtype(npd)} has no ember counterpart; "
                        f"supported: {', '.join(x.name for x in ALL)}")
    return d


import builtins as _builtins  # noqa: E402

_pyfloat, _pyint, _pybool = _builtins.float, _builtins.int, _builtins.bool


def as_dtype(x) -> dtype:
    """Accept an ember dtype, a name ('float32'), a numpy dtype or a Python type (float, int, bool)."""
    if x.__class__ is dtype:
        return x
    if isinstance(x, str):
        d = _NAMES.get(x.removeprefix("ember.").removeprefix("torch."))
        if d is None:
            raise TypeError(f"unknown dtype name {x!r}")
        return d
    if x is _pyfloat:
        return _default_float
    if x is _pyint:
        return int64
    if x is _pybool:
        return bool
    try:
        return from_numpy_dtype(x)
    except TypeError:
        raise TypeError(f"cannot interpret {x!r} as an ember dtype") from None


_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d) -> None:
    """Set the default floating dtype (float16, bfloat16, float32 or float64), as torch does.

    >>> ember.set_default_dtype(ember.float64); ember.tensor([1.0]).dtype
    ember.float64
    """
    global _default_float
    d = as_dtype(d)
    if d.category != _FLOAT:
        raise TypeError(f"set_default_dtype needs a floating dtype, got {d}")
    _default_float = d


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _INT:
        if a is uint8 or b is uint8:  # uint8 with a signed int: the signed type, at least int16
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    if a.category == _FLOAT:
        if a._rank == b._rank:  # float16 with bfloat16
            return float32
        return a if a._rank > b._rank else b
    return a


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL for b in ALL}


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (torch.promote_types)."""
    return _PROMOTE[(as_dtype(a), as_dtype(b))]


def _scalar_category(x) -> int:
    if isinstance(x, _pybool):
        return _BOOL
    if isinstance(x, _pyint):
        return _INT
    if isinstance(x, _pyfloat):
        return _FLOAT
    if isinstance(x, np.generic):
        return from_numpy_dtype(x.dtype).category
    raise TypeError(f"unsupported scalar type {type(x).__name__}")


def result_type(*args) -> dtype:
    """PyTorch's result type for tensors and Python scalars.

    Dimensioned tensors decide first; 0-d tensors count only when their category is higher;
    Python scalars count only when their category is higher still, and then give the default
    dtype of that category (int64, or the default float).

    >>> ember.result_type(ember.ones(2, dtype=ember.int32), 2.5)
    ember.float32
    """
    dim_t = zero_t = None
    scalar_cat = -1
    for x in args:
        d = getattr(x, "_dtype", None)
        if d is not None:
            if x._shape:
                dim_t = d if dim_t is None else _PROMOTE[(dim_t, d)]
            else:
                zero_t = d if zero_t is None else _PROMOTE[(zero_t, d)]
        elif isinstance(x, dtype):
            dim_t = x if dim_t is None else _PROMOTE[(dim_t, x)]
        else:
            scalar_cat = max(scalar_cat, _scalar_category(x))
    out = dim_t
    if zero_t is not None:
        if out is None or zero_t.category > out.category:
            out = zero_t
    if scalar_cat >= 0 and (out is None or scalar_cat > out.category):
        out = (bool, int64, _default_float)[scalar_cat]
    if out is None:
        raise TypeError("result_type needs at least one argument")
    return out


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: casting does not lower the category (float → int, int → bool)."""
    return as_dtype(from_).category <= as_dtype(to).category


class finfo:
    """Machine limits of a floating dtype (torch.finfo): bits, eps, max, min, tiny, resolution."""

    def __init__(self, d=None):
        d = _default_float if d is None else as_dtype(d)
        if d.category != _FLOAT:
            raise TypeError(f"finfo needs a floating dtype, got {d}; use ember.iinfo for integer dtypes")
        info = _np_finfo(d)
        self.dtype = d.name  # a string, as in torch.finfo
        self.bits = d.itemsize * 8
        self.eps = _pyfloat(info.eps)
        self.max = _pyfloat(info.max)
        self.min = _pyfloat(info.min)
        self.tiny = self.smallest_normal = _pyfloat(info.tiny)
        # torch: 10 ** -(decimal digits of precision), so bfloat16 gets 0.01 (ml_dtypes says 0.0100098)
        self.resolution = 10.0 ** -_builtins.int(-np.log10(self.eps))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"smallest_normal={self.smallest_normal}, tiny={self.tiny}, dtype={self.dtype})")


def _np_finfo(d: dtype):
    if d is bfloat16:
        import ml_dtypes

        return ml_dtypes.finfo(d.np)
    return np.finfo(d.np)


class iinfo:
    """Limits of an integer dtype (torch.iinfo): bits, min, max.

    >>> ember.iinfo(ember.int8).min
    -128
    """

    def __init__(self, d):
        d = as_dtype(d)
        if d.category != _INT:  # torch.iinfo refuses bool too
            raise TypeError(f"iinfo needs an integer dtype, got {d}; use ember.finfo for floating dtypes")
        self.dtype = d.name
        info = np.iinfo(d.np)
        self.bits, self.min, self.max = info.bits, _pyint(info.min), _pyint(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
