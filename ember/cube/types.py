"""The types of the kernel language: scalars, arrays and compile-time constants.

Scalars are interned objects (``cube.f32 is cube.f32``) that double as casts inside a kernel
(``cube.f32(i)``) and as numpy scalar constructors outside one. ``f16`` and ``bf16`` are *storage*
types: an array of them holds 16-bit values, a load gives an ``f32`` and a store rounds to nearest
even, so arithmetic is done in f32 on every target and results agree across targets.
"""

from __future__ import annotations

import numpy as np

try:
    from ml_dtypes import bfloat16 as _np_bf16
except ImportError:  # pragma: no cover - ml_dtypes is a dependency of ember
    _np_bf16 = None

__all__ = ["Scalar", "bool_", "i32", "u32", "i64", "f16", "bf16", "f32", "f64", "SCALARS", "Array", "Const", "Any",
           "ArrayType", "ConstType", "scalar_of", "from_numpy"]


class Scalar:
    """A scalar type: ``kind`` is 'b' (bool), 'i' (signed), 'u' (unsigned) or 'f' (float)."""

    __slots__ = ("name", "kind", "bits", "np", "c")

    def __init__(self, name: str, kind: str, bits: int, npdtype, c: str):
        self.name, self.kind, self.bits, self.c = name, kind, bits, c
        self.np = np.dtype(npdtype) if npdtype is not None else None

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_storage_only(self) -> bool:
        """f16 and bf16: arrays hold them, values are computed as f32."""
        return self.name in ("f16", "bf16")

    @property
    def compute(self) -> Scalar:
        """The type a loaded value has (f32 for the 16-bit floats)."""
        return f32 if self.is_storage_only else self

    @property
    def itemsize(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    def __repr__(self) -> str:
        return f"cube.{self.name}"

    def __reduce__(self):  # pickle by name: the interned object comes back
        return (scalar_of, (self.name,))

    def __call__(self, value):
        """Outside a kernel: the numpy scalar of this type (inside a kernel: a cast)."""
        return self.np.type(value)


bool_ = Scalar("bool", "b", 8, np.bool_, "bool")
i32 = Scalar("i32", "i", 32, np.int32, "int32_t")
u32 = Scalar("u32", "u", 32, np.uint32, "uint32_t")
i64 = Scalar("i64", "i", 64, np.int64, "int64_t")
f16 = Scalar("f16", "f", 16, np.float16, "uint16_t")
bf16 = Scalar("bf16", "f", 16, _np_bf16, "uint16_t")
f32 = Scalar("f32", "f", 32, np.float32, "float")
f64 = Scalar("f64", "f", 64, np.float64, "double")
SCALARS = {t.name: t for t in (bool_, i32, u32, i64, f16, bf16, f32, f64)}
_BY_NP = {t.np: t for t in SCALARS.values() if t.np is not None}


def scalar_of(name: str) -> Scalar:
    return SCALARS[name]


def from_numpy(dtype) -> Scalar | None:
    """The cube scalar type of a numpy dtype, or None when cube has no such type."""
    return _BY_NP.get(np.dtype(dtype))


class _AnyType:
    """``cube.Any``: an array element type taken from the argument (one compiled variant per dtype)."""

    def __repr__(self) -> str:
        return "cube.Any"


Any = _AnyType()


class ArrayType:
    """``cube.Array[elem, ndim]``: a C-contiguous array argument.

    ``elem`` is a :class:`Scalar` or ``cube.Any``; ``ndim`` None means any rank (flat indexing).
    """

    __slots__ = ("elem", "ndim")

    def __init__(self, elem, ndim: int | None):
        self.elem, self.ndim = elem, ndim

    def __repr__(self) -> str:
        if self.ndim is None:
            return f"cube.Array[{self.elem!r}]"
        return f"cube.Array[{self.elem!r}, {self.ndim}]"

    def __eq__(self, other) -> bool:
        return isinstance(other, ArrayType) and (self.elem, self.ndim) == (other.elem, other.ndim)

    def __hash__(self) -> int:
        return hash(("array", id(self.elem), self.ndim))


class _ArrayFactory:
    """``cube.Array``: any dtype, any rank. ``cube.Array[cube.f32]``, ``cube.Array[cube.f32, 2]``."""

    def __getitem__(self, spec) -> ArrayType:
        if isinstance(spec, tuple):
            if len(spec) != 2:
                raise TypeError(f"cube.Array[elem, ndim] takes two parameters, got {len(spec)}")
            elem, ndim = spec
        else:
            elem, ndim = spec, None
        if elem is None:
            elem = Any
        if not isinstance(elem, Scalar) and elem is not Any:
            raise TypeError(f"cube.Array element type must be a cube scalar type (cube.f32, ...), got {elem!r}")
        if ndim is not None and (not isinstance(ndim, int) or isinstance(ndim, bool) or not 1 <= ndim <= 8):
            raise TypeError(f"cube.Array rank must be an int from 1 to 8, got {ndim!r}")
        return ArrayType(elem, ndim)

    def __repr__(self) -> str:
        return "cube.Array"


Array = _ArrayFactory()
ANY_ARRAY = ArrayType(Any, None)


class ConstType:
    """``cube.Const[int]``: an argument whose value is compiled into the kernel (one variant per value)."""

    __slots__ = ("py",)

    def __init__(self, py):
        self.py = py

    def __repr__(self) -> str:
        return f"cube.Const[{getattr(self.py, '__name__', self.py)}]"


class _ConstFactory:
    def __getitem__(self, py) -> ConstType:
        return ConstType(py)

    def __repr__(self) -> str:
        return "cube.Const"


Const = _ConstFactory()
