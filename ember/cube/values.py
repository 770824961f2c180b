"""What an expression of a kernel evaluates to in the frontend, and the typing rules of the language.

* :class:`Py`: a compile-time Python value (literals, ``cube.Const`` arguments, globals, the block
  shape, modules, functions). Arithmetic on two ``Py`` values happens in Python, so ``TILE * 2`` or
  ``MODE == "sum"`` is folded before any code is generated.
* :class:`Val`: a typed IR expression (a value computed by the kernel).
* :class:`Vec`: a vector of ``Val`` lanes (``x.vec4[i]``, ``cube.vec4(...)``).
* :class:`ArrRef`: an array (parameter, shared or local); :class:`VecView` is its ``.vec2``/``.vec4``.

Typing is strict: the operands of a binary operator must have the same type, except that a Python
number literal takes the type of the other operand (an int literal may become a float; a float
literal with an integer operand is an error).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .types import Scalar, bool_, f32, i32, i64, u32

_INT_RANGE = {"i32": (-(2 ** 31), 2 ** 31 - 1), "u32": (0, 2 ** 32 - 1), "i64": (-(2 ** 63), 2 ** 63 - 1)}


class Py:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"Py({self.value!r})"


@dataclass(frozen=True, slots=True)
class Val:
    expr: ir.Expr

    @property
    def type(self) -> Scalar:
        return self.expr.type


@dataclass(frozen=True, slots=True)
class Vec:
    lanes: tuple  # of Val

    @property
    def type(self) -> Scalar:
        return self.lanes[0].type


@dataclass(frozen=True, slots=True)
class ArrRef:
    decl: ir.ArrayDecl
    ndim: int | None  # None: a flat parameter array (any rank, one index)


@dataclass(frozen=True, slots=True)
class VecView:
    arr: ArrRef
    n: int


class TypeErr(Exception):
    """A typing problem; the frontend turns it into a CompileError at the current line."""


def is_number(v) -> bool:
    return isinstance(v, Py) and isinstance(v.value, bool | int | float) and not isinstance(v.value, Scalar)


def default_type(value) -> Scalar:
    """The type a lone Python number gets: bool, i32 or f32."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return i64 if not _INT_RANGE["i32"][0] <= value <= _INT_RANGE["i32"][1] else i32
    return f32


def const(value, t: Scalar) -> Val:
    """A Python number as a constant of type ``t`` (checked: no float into an int, ints in range)."""
    if t is bool_:
        if not isinstance(value, bool):
            raise TypeErr(f"{value!r} can't be used as a bool; compare explicitly")
        return Val(ir.Const(value, t))
    if isinstance(value, bool):
        raise TypeErr(f"the bool {value!r} can't be used as {t.name}; convert with cube.{t.name}()")
    if t.is_int:
        if isinstance(value, float):
            raise TypeErr(f"the float literal {value!r} can't be combined with {t.name}; "
                          f"convert the {t.name} operand with cube.f32() or use an int literal")
        lo, hi = _INT_RANGE[t.name]
        if not lo <= value <= hi:
            raise TypeErr(f"the literal {value} does not fit in {t.name}")
        return Val(ir.Const(int(value), t))
    return Val(ir.Const(float(value), t.compute))


def to_val(v, like: Scalar | None = None) -> Val:
    """A Py number (typed like ``like``, or by default) or a Val as a Val."""
    if isinstance(v, Val):
        return v
    if is_number(v):
        return const(v.value, like if like is not None else default_type(v.value))
    raise TypeErr(f"expected a number, got {describe(v)}")


def unify(a, b) -> tuple[Val, Val]:
    """Two operands as Vals of one type (literals adopt the other side's type)."""
    if isinstance(a, Val) and isinstance(b, Val):
        if a.type is not b.type:
            raise TypeErr(f"mismatched types {a.type.name} and {b.type.name}; convert one side with "
                          f"cube.{b.type.name}() or cube.{a.type.name}()")
        return a, b
    if isinstance(a, Val):
        return a, to_val(b, a.type)
    if isinstance(b, Val):
        return to_val(a, b.type), b
    ta = default_type(a.value)
    tb = default_type(b.value)
    t = f32 if (ta is f32 or tb is f32) else (i64 if i64 in (ta, tb) else ta)
    return to_val(a, t), to_val(b, t)


def describe(v) -> str:
    if isinstance(v, Val):
        return f"a {v.type.name} value"
    if isinstance(v, Vec):
        return f"a vector of {len(v.lanes)} {v.type.name}"
    if isinstance(v, ArrRef):
        return f"the array '{v.decl.name}'"
    if isinstance(v, VecView):
        return f"a vec{v.n} view of '{v.arr.decl.name}'"
    if isinstance(v, Py):
        return f"the Python value {v.value!r}"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)} values"
    return repr(v)


# ---- constant folding on IR ---------------------------------------------------------------------
def wrap_int(value: int, t: Scalar) -> int:
    """``value`` wrapped to the range of integer type ``t`` (two's complement)."""
    bits = t.bits
    value &= (1 << bits) - 1
    if t.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def fold_int(op: str, a: int, b: int, t: Scalar):
    """``a op b`` for two integer constants of type ``t``, or None when not folded (division by zero...)."""
    if op == "add":
        r = a + b
    elif op == "sub":
        r = a - b
    elif op == "mul":
        r = a * b
    elif op in ("floordiv", "mod"):
        if b == 0:
            return None
        r = a // b if op == "floordiv" else a % b
    elif op == "bitand":
        r = a & b
    elif op == "bitor":
        r = a | b
    elif op == "bitxor":
        r = a ^ b
    elif op == "min":
        r = min(a, b)
    elif op == "max":
        r = max(a, b)
    else:
        return None
    return wrap_int(r, t)


INT_TYPES = (i32, u32, i64)
