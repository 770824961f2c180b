"""The standard's elementwise functions, each a thin translation to ember's op of the same meaning.

Binary functions promote with the standard's rules (see ``_helpers.operands``) before calling
ember, so a 0-d array of a wider dtype widens the result as the standard says; the math is
ember's. ember has no complex dtypes, so ``conj``/``real`` return real input unchanged and
``imag`` gives zeros.

>>> import ember.array_api as xp
>>> xp.add(xp.ones(2, dtype=xp.int8), xp.asarray(300, dtype=xp.int16))
tensor([301, 301], dtype=ember.int16)
"""

from __future__ import annotations

import builtins

import ember

from .. import _dtype as dt
from .._elementwise import cast
from .._tensor import Tensor
from ._helpers import check_array, operands

_UNARY = {
    "abs": ember.abs, "acos": ember.acos, "acosh": ember.acosh, "asin": ember.asin, "asinh": ember.asinh,
    "atan": ember.atan, "atanh": ember.atanh, "ceil": ember.ceil, "cos": ember.cos, "cosh": ember.cosh,
    "exp": ember.exp, "expm1": ember.expm1, "floor": ember.floor, "isfinite": ember.isfinite,
    "isinf": ember.isinf, "isnan": ember.isnan, "log": ember.log, "log1p": ember.log1p, "log2": ember.log2,
    "log10": ember.log10, "logical_not": ember.logical_not, "negative": ember.negative,
    "reciprocal": ember.reciprocal, "signbit": ember.signbit, "sin": ember.sin, "sinh": ember.sinh,
    "sqrt": ember.sqrt, "square": ember.square, "tan": ember.tan, "tanh": ember.tanh, "trunc": ember.trunc,
    "bitwise_invert": ember.bitwise_not,
}

# binary functions: name -> ember function (computed in the promoted dtype)
_BINARY = {
    "add": ember.add, "subtract": ember.subtract, "multiply": ember.multiply, "divide": ember.divide,
    "floor_divide": ember.floor_divide, "remainder": ember.remainder, "pow": ember.pow, "atan2": ember.atan2,
    "copysign": ember.copysign, "hypot": ember.hypot, "logaddexp": ember.logaddexp, "maximum": ember.maximum,
    "minimum": ember.minimum, "nextafter": ember.nextafter, "equal": ember.eq, "not_equal": ember.ne,
    "greater": ember.gt, "greater_equal": ember.ge, "less": ember.lt, "less_equal": ember.le,
    "logical_and": ember.logical_and, "logical_or": ember.logical_or, "logical_xor": ember.logical_xor,
    "bitwise_and": ember.bitwise_and, "bitwise_or": ember.bitwise_or, "bitwise_xor": ember.bitwise_xor,
    "bitwise_left_shift": ember.bitwise_left_shift, "bitwise_right_shift": ember.bitwise_right_shift,
}

__all__ = sorted([*_UNARY, *_BINARY, "clip", "conj", "imag", "positive", "real", "round", "sign"])


def _make_unary(name: str, fn):
    def f(x: Tensor, /) -> Tensor:
        return fn(check_array(x, name))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} (ember.{fn.__name__})."
    return f


def _make_binary(name: str, fn):
    def f(x1, x2, /) -> Tensor:
        a, b = operands(name, x1, x2)
        if not isinstance(a, Tensor):  # ember's functions want the tensor first only for some ops
            if name in ("add", "multiply", "equal", "not_equal", "maximum", "minimum", "logical_and",
                        "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"):
                return fn(b, a)
            a = ember.full((), a, dtype=b._dtype, device=b._device)
        elif not isinstance(b, Tensor) and name in ("atan2", "copysign", "hypot", "logaddexp", "nextafter"):
            b = ember.full((), b, dtype=a._dtype, device=a._device)
        return fn(a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"Elementwise {name} with the standard's type promotion (ember.{fn.__name__}); "
                 "x1 or x2 may be a Python scalar.")
    return f


globals().update({n: _make_unary(n, f) for n, f in _UNARY.items()})
globals().update({n: _make_binary(n, f) for n, f in _BINARY.items()})
_floor_divide = globals()["floor_divide"]


def floor_divide(x1, x2, /) -> Tensor:
    """floor(x1 / x2) elementwise, with the standard's IEEE results where an operand is infinite
    (``-1.0 // inf`` is -0.0 here; ember's floor_divide follows Python's -1.0 there)."""
    out = _floor_divide(x1, x2)
    if out._dtype.is_floating_point:
        a, b = (x if isinstance(x, Tensor) else ember.full((), x, dtype=out._dtype, device=out._device)
                for x in operands("floor_divide", x1, x2, out._dtype))
        inf = ember.logical_or(ember.isinf(a), ember.isinf(b))
        if builtins.bool(ember.any(inf)):
            out = ember.where(inf, ember.floor(ember.divide(a, b)), out)
    return out


def positive(x: Tensor, /) -> Tensor:
    """+x: a copy of x."""
    return check_array(x, "positive").clone()


def round(x: Tensor, /) -> Tensor:  # noqa: A001 - the standard's name
    """Round to the nearest integer, halves to even; integer arrays are returned unchanged in value."""
    check_array(x, "round")
    if not x._dtype.is_floating_point:
        return x.clone()
    return ember.round(x)


def sign(x: Tensor, /) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN)."""
    check_array(x, "sign")
    out = ember.sign(x)
    if x._dtype.is_floating_point:  # the standard: sign(NaN) is NaN
        out = ember.where(ember.isnan(x), x, out)
    return out


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate; ember's dtypes are all real, so x itself (as a new array)."""
    return check_array(x, "conj").clone()


def real(x: Tensor, /) -> Tensor:
    """The real part: x for ember's real dtypes."""
    return check_array(x, "real").clone()


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part: zeros for ember's real dtypes."""
    return ember.zeros_like(check_array(x, "imag"))


def clip(x: Tensor, /, min=None, max=None) -> Tensor:  # noqa: A002 - the standard's names
    """x limited to [min, max]; bounds are scalars or arrays broadcasting with x; x's dtype is kept.

    >>> xp.clip(xp.asarray([1, 5, 9]), 2, 6)
    tensor([2, 5, 6])
    """
    check_array(x, "clip")
    d = x._dtype
    out = x
    for bound, pick in ((min, ember.maximum), (max, ember.minimum)):
        if bound is None:
            continue
        if isinstance(bound, Tensor):
            bound = cast(bound, d)
        elif d.category == 1:
            # a bound outside the integer dtype's range limits nothing on that side: saturate it
            info = dt.iinfo(d)
            bound = builtins.min(builtins.max(bound, info.min), info.max)
            bound = ember.full((), builtins.int(bound), dtype=d, device=x._device)
        else:
            bound = ember.full((), bound, dtype=d, device=x._device)
        out = pick(out, bound)
    if out is x:
        out = x.clone()
    return out
