"""Elementwise ops of the numpy backend."""

from __future__ import annotations

import numpy as np

from . import special
from ._util import LOW_PRECISION, upcast


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """Integer floor_divide/remainder/fmod by zero: PyTorch raises RuntimeError("ZeroDivisionError")."""


def _int_div_check(y):
    # the values are only known here, so this check can't live in the frontend
    if isinstance(y, np.ndarray):
        if y.dtype.kind in "iub" and not y.all():
            raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")
    elif y == 0:
        raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")


def _is_int(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "iub"


def _floor_divide(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.floor_divide(x, y, out=...)


def _remainder(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.remainder(x, y, out=...)


def _fmod(x, y):
    if _is_int(x):
        _int_div_check(y)
    return np.fmod(x, y, out=...)


def _pow(x, y):
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        # only bool ** Python bool reaches here: x ** True is x, x ** False is all True
        return x.copy() if y else np.ones_like(x)
    if _is_int(y) and y.dtype.kind == "i" and (y < 0).any():
        # PyTorch's integer pow with negative exponents: 1 ** n = 1, (-1) ** n = ±1, else 0
        # (numpy refuses negative integer powers)
        neg = y < 0
        r = np.power(x, np.where(neg, 0, y), out=...)
        odd = (y % 2) != 0
        special = np.where(np.equal(x, 1), 1, np.where(np.equal(x, -1), np.where(odd, -1, 1), 0))
        return np.where(neg, special, r).astype(r.dtype, copy=False)
    return np.power(x, y, out=...)


def _sign(x):
    if x.dtype == np.bool_:
        return x.copy()
    r = np.sign(x, out=...)
    if x.dtype.kind not in "iu":  # PyTorch: sign(NaN) is 0
        np.copyto(r, 0, where=np.isnan(r))
    return r


def _sigmoid(x):
    # exp(-|x|) never overflows; the two branches join at x = 0
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))).astype(x.dtype, copy=False)


def _rsqrt(x):
    return np.divide(1.0, np.sqrt(x), out=...)


def _round_decimals(x, decimals):
    # PyTorch scales by 10**decimals, rounds half to even, scales back: as np.round does
    return np.asarray(np.round(x, decimals))


def _lerp(start, end, weight):
    # PyTorch's formula: exact at weight 0 and 1, and monotone in weight
    diff = end - start
    if isinstance(weight, np.ndarray):
        return np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
    return np.asarray(start + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight))


def _cast(x, dtype):
    target = dtype.np
    if x.dtype == target:
        return x.copy()
    if target.kind in "iu" and x.dtype.kind == "f":
        # C semantics (truncate); NaN/inf are undefined in C and in PyTorch: map them like torch
        # on x86 does for int64 (min value) instead of letting numpy warn.
        return x.astype(target)
    if target == np.bool_:
        return np.not_equal(x, 0, out=...)
    return x.astype(target)


_SELECT_MIN = 1 << 14
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _where(cond, x, y):
    # a weak Python scalar takes the tensor operand's dtype (numpy would promote bfloat16 to float32)
    if not isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        x = np.asarray(x, dtype=y.dtype)
    elif not isinstance(y, np.ndarray) and isinstance(x, np.ndarray):
        y = np.asarray(y, dtype=x.dtype)
    # np.where branches per element, so a random condition (a ReLU mask) costs it ~4x a plain
    # arithmetic pass. For big arrays select on the bits instead: y ^ ((x ^ y) & -cond), exact for
    # every value including NaN and -0.0; selecting a zero (the common gradient mask) is y & (cond - 1).
    if max(np.size(cond), np.size(x), np.size(y)) < _SELECT_MIN:  # small: np.where, no extra work per call
        return np.where(cond, x, y)
    out_dt = np.result_type(x, y)
    bits = _BITS.get(out_dt.itemsize)
    if bits is None or out_dt.kind not in "fiub":
        return np.where(cond, x, y)
    cond = np.asarray(cond)
    shape = np.broadcast_shapes(cond.shape, np.shape(x), np.shape(y))
    mask = cond.astype(bits)  # 1 where cond, else 0
    if cond.shape == shape and np.ndim(x) == 0 and x == 0 and not np.signbit(x):
        mask -= 1  # all ones where not cond
        return np.bitwise_and(mask, np.asarray(y, out_dt).view(bits), out=mask).view(out_dt)
    xb = np.asarray(x, out_dt).view(bits)
    yb = np.asarray(y, out_dt).view(bits)
    np.negative(mask, out=mask)  # all ones where cond
    r = np.bitwise_xor(xb, yb)
    if r.shape != shape:
        r = np.broadcast_to(r, shape).copy()
    r &= mask
    r ^= yb
    return r.view(out_dt)


def _clamp(x, lo, hi):
    # torch.clamp: max wins when lo > hi; NaN in x propagates
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return np.asarray(x)


def _xlogy(x, y):
    # x * log(y), 0 where x == 0 unless y is NaN (PyTorch's xlogy)
    with np.errstate(all="ignore"):
        r = np.multiply(x, np.log(y), out=...)
    return np.where((x == 0) & ~np.isnan(y), np.zeros((), r.dtype), r)


def _nan_to_num(x, nan, posinf, neginf):
    out = x.copy()  # np.nan_to_num leaves bfloat16 untouched, so replace explicitly
    np.copyto(out, np.asarray(nan).astype(x.dtype), where=np.isnan(x))
    np.copyto(out, np.asarray(posinf).astype(x.dtype), where=np.isposinf(x))
    np.copyto(out, np.asarray(neginf).astype(x.dtype), where=np.isneginf(x))
    return out


def _u(ufunc):
    """A unary ufunc that returns a 0-d array (not a numpy scalar) for 0-d input: handles must
    stay writable, or in-place ops on 0-d tensors would fail."""
    def run(x):
        return ufunc(x, out=...)
    run.__name__ = ufunc.__name__
    return run


def _b(ufunc):
    """The binary counterpart of :func:`_u`. A 16-bit float array with a Python number keeps its dtype:
    ml_dtypes before 0.7 answers float32 there (``bfloat16_array * 1.5``), which would leave float32 data
    behind a bfloat16 tensor; the float32 result rounds once, as PyTorch computes a 16-bit tensor with a
    scalar (comparisons answer bool, which stays)."""
    def run(x, y):
        r = ufunc(x, y, out=...)
        if r.dtype.kind == "f" and r.itemsize == 4:
            if y.__class__ in _PY_SCALARS and x.dtype in LOW_PRECISION:
                return r.astype(x.dtype)
            if x.__class__ in _PY_SCALARS and y.dtype in LOW_PRECISION:
                return r.astype(y.dtype)
        return r
    run.__name__ = ufunc.__name__
    return run


_PY_SCALARS = (int, float, bool)

_UNARY_MATH = {
    "exp": _u(np.exp), "exp2": _u(np.exp2), "expm1": _u(np.expm1), "log": _u(np.log),
    "log1p": _u(np.log1p), "log2": _u(np.log2), "log10": _u(np.log10), "sqrt": _u(np.sqrt),
    "rsqrt": _rsqrt, "sin": _u(np.sin), "cos": _u(np.cos), "tan": _u(np.tan), "asin": _u(np.arcsin),
    "acos": _u(np.arccos), "atan": _u(np.arctan), "sinh": _u(np.sinh), "cosh": _u(np.cosh),
    "tanh": _u(np.tanh), "asinh": _u(np.arcsinh), "acosh": _u(np.arccosh), "atanh": _u(np.arctanh),
    "erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv, "sigmoid": _sigmoid,
    "lgamma": special.lgamma, "digamma": special.digamma, "reciprocal": _u(np.reciprocal),
}

# float16/bfloat16 math runs in float32 and rounds once, as PyTorch's CPU kernels do
OPS = {name: upcast(fn) for name, fn in _UNARY_MATH.items()}
OPS.update({
    "neg": _u(np.negative), "abs": _u(np.abs), "sign": _sign, "square": _u(np.square),
    "floor": _u(np.floor), "ceil": _u(np.ceil), "trunc": _u(np.trunc), "round": _u(np.rint),
    "isnan": _u(np.isnan), "isinf": _u(np.isinf), "isfinite": _u(np.isfinite), "signbit": _u(np.signbit),
    "logical_not": _u(np.logical_not), "bitwise_not": _u(np.invert),
    "add": _b(np.add), "sub": _b(np.subtract), "mul": _b(np.multiply), "div": _b(np.true_divide),
    "floor_divide": _floor_divide, "remainder": _remainder, "fmod": _fmod, "pow": _pow,
    "maximum": _b(np.maximum), "minimum": _b(np.minimum), "fmax": _b(np.fmax), "fmin": _b(np.fmin),
    "atan2": upcast(_b(np.arctan2)), "hypot": upcast(_b(np.hypot)), "copysign": _b(np.copysign),
    "nextafter": _b(np.nextafter),
    "eq": _b(np.equal), "ne": _b(np.not_equal), "lt": _b(np.less), "le": _b(np.less_equal),
    "gt": _b(np.greater), "ge": _b(np.greater_equal),
    "logical_and": _b(np.logical_and), "logical_or": _b(np.logical_or), "logical_xor": _b(np.logical_xor),
    "bitwise_and": _b(np.bitwise_and), "bitwise_or": _b(np.bitwise_or), "bitwise_xor": _b(np.bitwise_xor),
    "bitwise_left_shift": _b(np.left_shift), "bitwise_right_shift": _b(np.right_shift),
    "round_decimals": upcast(_round_decimals), "cast": _cast, "where": _where, "clamp": _clamp,
    "nan_to_num": _nan_to_num, "lerp": upcast(_lerp), "logaddexp": upcast(_b(np.logaddexp)),
    "polygamma": upcast(special.polygamma), "xlogy": upcast(_xlogy),
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
