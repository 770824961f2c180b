"""Elementwise ops of the numpy backend."""

from __future__ import annotations

import numpy as np

from . import special
from ._util import LOW_PRECISION, upcast


def _int_div_check(y):
    if isinstance(y, np.ndarray):
        if y.dtype.kind in "iub" and not y.all():
            raise ZeroDivisionError("integer division by zero")
    elif y == 0:
        raise ZeroDivisionError("integer division by zero")


def _is_int(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "iub"


def _floor_divide(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.floor_divide(x, y)


def _remainder(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.remainder(x, y)


def _fmod(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.fmod(x, y)


def _div(x, y):
    return np.true_divide(x, y)


def _pow(x, y):
    return np.power(x, y)


def _sign(x):
    if x.dtype == np.bool_:
        return x.copy()
    return np.sign(x)


def _sigmoid(x):
    # exp(-|x|) never overflows; the two branches join at x = 0
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _round_decimals(x, decimals):
    return np.round(x, decimals)


def _cast(x, dtype):
    target = dtype.np
    if x.dtype == target:
        return x.copy()
    if target.kind in "iu" and x.dtype.kind == "f":
        # C semantics (truncate); NaN/inf are undefined in C and in PyTorch: map them like torch
        # on x86 does for int64 (min value) instead of letting numpy warn.
        return x.astype(target)
    if target == np.bool_:
        return x != 0
    return x.astype(target)


def _where(cond, x, y):
    return np.where(cond, x, y)


def _clamp(x, lo, hi):
    # torch.clamp: max wins when lo > hi; NaN in x propagates
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return np.asarray(x)


def _nan_to_num(x, nan, posinf, neginf):
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


def _bitwise_right_shift(x, y):
    return np.right_shift(x, y)


def _bitwise_left_shift(x, y):
    return np.left_shift(x, y)


def _math(fn):
    """A float math function, computed in float32 for float16/bfloat16 inputs."""
    return upcast(fn)


_UNARY_MATH = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "rsqrt": _rsqrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv,
    "sigmoid": _sigmoid, "lgamma": special.lgamma, "digamma": special.digamma,
    "reciprocal": np.reciprocal,
}

OPS = {name: _math(fn) for name, fn in _UNARY_MATH.items()}
OPS.update({
    "neg": np.negative, "abs": np.abs, "sign": _sign, "square": np.square,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "logical_not": np.logical_not, "bitwise_not": np.invert,
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div,
    "floor_divide": _floor_divide, "remainder": _remainder, "fmod": _fmod, "pow": _pow,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "atan2": upcast(np.arctan2), "hypot": upcast(np.hypot), "copysign": np.copysign,
    "nextafter": np.nextafter,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": _bitwise_left_shift, "bitwise_right_shift": _bitwise_right_shift,
    "round_decimals": _round_decimals, "cast": _cast, "where": _where, "clamp": _clamp,
    "nan_to_num": _nan_to_num,
})


# In-place variants ("add_" etc.): compute into the first input's storage with out=, one pass.
def _inplace(ufunc):
    def run(x, *rest):
        ufunc(x, *rest, out=x, casting="unsafe")
        return x
    return run


for _name, _uf in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("div", np.true_divide), ("maximum", np.maximum), ("minimum", np.minimum),
                   ("neg", np.negative), ("abs", np.abs), ("exp", np.exp), ("sqrt", np.sqrt),
                   ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor), ("logical_and", np.logical_and),
                   ("logical_or", np.logical_or)):
    OPS[_name + "_"] = _inplace(_uf)
