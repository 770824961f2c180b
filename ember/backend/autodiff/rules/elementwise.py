"""Gradient rules of elementwise ops."""

from __future__ import annotations

import math

from .base import reduce_to_inputs, rule

LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _x(s):
    return s[0]


@rule("neg")
def _neg(F, g, s, n):
    return (F.neg(g),)


@rule("abs", save=(0,))
def _abs(F, g, s, n):
    return (F.mul(g, F.un("sign", s[0])),)


@rule("sign", "floor", "ceil", "trunc", "round", "round_decimals")
def _zero(F, g, s, n):
    # PyTorch gives zeros (not g * 0, which would turn an inf or NaN gradient into NaN)
    return (F.zeros_like(g),)


@rule("exp", save=("o0",))
def _exp(F, g, s, n):
    return (F.mul(g, s[0]),)


@rule("exp2", save=("o0",))
def _exp2(F, g, s, n):
    return (F.mul(g, F.mul(s[0], LN2)),)


@rule("expm1", save=("o0",))
def _expm1(F, g, s, n):
    return (F.mul(g, F.add(s[0], 1.0)),)


@rule("log", save=(0,))
def _log(F, g, s, n):
    return (F.div(g, s[0]),)


@rule("log1p", save=(0,))
def _log1p(F, g, s, n):
    return (F.div(g, F.add(s[0], 1.0)),)


@rule("log2", save=(0,))
def _log2(F, g, s, n):
    return (F.div(g, F.mul(s[0], LN2)),)


@rule("log10", save=(0,))
def _log10(F, g, s, n):
    return (F.div(g, F.mul(s[0], LN10)),)


@rule("sqrt", save=("o0",))
def _sqrt(F, g, s, n):
    return (F.div(g, F.mul(s[0], 2.0)),)


@rule("rsqrt", save=("o0",))
def _rsqrt(F, g, s, n):
    y = s[0]
    return (F.mul(g, F.mul(F.mul(F.mul(y, y), y), -0.5)),)


@rule("reciprocal", save=("o0",))
def _reciprocal(F, g, s, n):
    y = s[0]
    return (F.neg(F.mul(g, F.mul(y, y))),)


@rule("square", save=(0,))
def _square(F, g, s, n):
    return (F.mul(g, F.mul(s[0], 2.0)),)


@rule("sin", save=(0,))
def _sin(F, g, s, n):
    return (F.mul(g, F.un("cos", s[0])),)


@rule("cos", save=(0,))
def _cos(F, g, s, n):
    return (F.neg(F.mul(g, F.un("sin", s[0]))),)


@rule("tan", save=("o0",))
def _tan(F, g, s, n):
    y = s[0]
    return (F.mul(g, F.add(F.mul(y, y), 1.0)),)


def _inv_sqrt_of(F, expr):
    return F.un("rsqrt", expr)


@rule("asin", save=(0,))
def _asin(F, g, s, n):
    x = s[0]
    return (F.mul(g, _inv_sqrt_of(F, F.sub(1.0, F.mul(x, x)))),)


@rule("acos", save=(0,))
def _acos(F, g, s, n):
    x = s[0]
    return (F.neg(F.mul(g, _inv_sqrt_of(F, F.sub(1.0, F.mul(x, x))))),)


@rule("atan", save=(0,))
def _atan(F, g, s, n):
    x = s[0]
    return (F.div(g, F.add(F.mul(x, x), 1.0)),)


@rule("sinh", save=(0,))
def _sinh(F, g, s, n):
    return (F.mul(g, F.un("cosh", s[0])),)


@rule("cosh", save=(0,))
def _cosh(F, g, s, n):
    return (F.mul(g, F.un("sinh", s[0])),)


@rule("tanh", save=("o0",))
def _tanh(F, g, s, n):
    y = s[0]
    return (F.mul(g, F.sub(1.0, F.mul(y, y))),)


@rule("asinh", save=(0,))
def _asinh(F, g, s, n):
    x = s[0]
    return (F.mul(g, _inv_sqrt_of(F, F.add(F.mul(x, x), 1.0))),)


@rule("acosh", save=(0,))
def _acosh(F, g, s, n):
    x = s[0]
    return (F.mul(g, _inv_sqrt_of(F, F.sub(F.mul(x, x), 1.0))),)


@rule("atanh", save=(0,))
def _atanh(F, g, s, n):
    x = s[0]
    return (F.div(g, F.sub(1.0, F.mul(x, x))),)


@rule("erf", save=(0,))
def _erf(F, g, s, n):
    x = s[0]
    return (F.mul(g, F.mul(F.un("exp", F.neg(F.mul(x, x))), TWO_OVER_SQRT_PI)),)


@rule("erfc", save=(0,))
def _erfc(F, g, s, n):
    x = s[0]
    return (F.mul(g, F.mul(F.un("exp", F.neg(F.mul(x, x))), -TWO_OVER_SQRT_PI)),)


@rule("erfinv", save=("o0",))
def _erfinv(F, g, s, n):
    y = s[0]
    return (F.mul(g, F.mul(F.un("exp", F.mul(y, y)), math.sqrt(math.pi) / 2.0)),)


@rule("sigmoid", save=("o0",))
def _sigmoid(F, g, s, n):
    y = s[0]
    return (F.mul(g, F.mul(y, F.sub(1.0, y))),)


@rule("lgamma", save=(0,))
def _lgamma(F, g, s, n):
    return (F.mul(g, F.un("digamma", s[0])),)


@rule("digamma", save=(0,))
def _digamma(F, g, s, n):
    return (F.mul(g, F.run("polygamma", s[0], n=1)),)


@rule("polygamma", save=(0,))
def _polygamma(F, g, s, n):
    return (F.mul(g, F.run("polygamma", s[0], n=n.attrs["n"] + 1)),)


@rule("cast", save=())
def _cast(F, g, s, n):
    d_in = n.in_meta[0][1]
    return (F.cast(g, d_in) if d_in.is_floating_point else None,)


@rule("copy", "contiguous")
def _identity(F, g, s, n):
    return (g,)


@rule("nan_to_num", save=(0,))
def _nan_to_num(F, g, s, n):
    return (F.mul(g, F.cast(F.un("isfinite", s[0]), F.dtype(g))),)


# ---- binary ----------------------------------------------------------------------------------
@rule("add")
def _add(F, g, s, n):
    return reduce_to_inputs(F, n, g, g)


@rule("sub")
def _sub(F, g, s, n):
    return reduce_to_inputs(F, n, g, F.neg(g) if n.in_meta[1] is not None else None)


@rule("mul", save=(0, 1))
def _mul(F, g, s, n):
    a, b = s
    return reduce_to_inputs(F, n, F.mul(g, b) if n.in_meta[0] else None, F.mul(g, a) if n.in_meta[1] else None)


@rule("div", save=(0, 1))
def _div(F, g, s, n):
    a, b = s
    ga = F.div(g, b) if n.in_meta[0] else None
    gb = F.neg(F.div(F.mul(g, a), F.mul(b, b))) if n.in_meta[1] else None
    return reduce_to_inputs(F, n, ga, gb)


@rule("pow", save=(0, 1, "o0"))
def _pow(F, g, s, n):
    a, b, y = s
    ga = gb = None
    if n.in_meta[0] is not None:
        if n.in_meta[1] is None:  # scalar exponent
            ga = F.mul(g, 0.0) if b == 0 else F.mul(g, F.mul(F.run("pow", a, b - 1), b))
        else:
            ga = F.mul(g, F.mul(b, F.run("pow", a, F.sub(b, 1.0))))
            ga = F.where(F.cmp("eq", b, 0.0), 0.0, ga)
    if n.in_meta[1] is not None:
        if n.in_meta[0] is not None:
            gb = F.mul(g, F.mul(y, F.un("log", a)))
            gb = F.where(F.run("logical_and", F.cmp("eq", a, 0.0), F.cmp("ge", b, 0.0)), 0.0, gb)
        else:  # scalar base
            log_a = math.log(a) if a > 0 else (0.0 if a == 0 else math.nan)
            gb = F.mul(g, F.mul(y, log_a))
    return reduce_to_inputs(F, n, ga, gb)


def _minmax(F, g, s, n, loses):
    # PyTorch's convention: ties share the gradient evenly; an input gets it unless it lost the
    # comparison, so where either input is NaN (no comparison holds) both get the whole gradient
    a, b = s
    half = F.where(F.cmp("eq", a, b), F.mul(g, 0.5), g)
    ga = F.where(F.cmp(loses, a, b), 0.0, half) if n.in_meta[0] else None
    gb = F.where(F.cmp(loses, b, a), 0.0, half) if n.in_meta[1] else None
    return reduce_to_inputs(F, n, ga, gb)


@rule("maximum", save=(0, 1))
def _maximum(F, g, s, n):
    return _minmax(F, g, s, n, "lt")


@rule("minimum", save=(0, 1))
def _minimum(F, g, s, n):
    return _minmax(F, g, s, n, "gt")


@rule("fmax", save=(0, 1, "o0"))
def _fmax(F, g, s, n):
    return _fminmax(F, g, s, n)


@rule("fmin", save=(0, 1, "o0"))
def _fmin(F, g, s, n):
    return _fminmax(F, g, s, n)


def _fminmax(F, g, s, n):
    # the gradient goes to whichever input the result came from (a on ties, like PyTorch)
    a, b, y = s
    from_a = F.run("logical_or", F.cmp("eq", a, y), F.un("isnan", y)) if n.in_meta[0] else None
    ga = F.where(from_a, g, 0.0) if from_a is not None else None
    gb = None
    if n.in_meta[1] is not None:
        gb = F.where(from_a, 0.0, g) if from_a is not None else F.where(F.cmp("eq", b, y), g, 0.0)
    return reduce_to_inputs(F, n, ga, gb)


@rule("atan2", save=(0, 1))
def _atan2(F, g, s, n):
    # PyTorch takes 1 / (a² + b²) as 0 at the origin, so atan2(0, 0) has a zero gradient
    a, b = s
    denom = F.add(F.mul(a, a), F.mul(b, b))
    recip = F.where(F.cmp("eq", denom, 0.0), 0.0, F.div(1.0, denom))
    ga = F.mul(F.mul(g, b), recip) if n.in_meta[0] else None
    gb = F.neg(F.mul(F.mul(g, a), recip)) if n.in_meta[1] else None
    return reduce_to_inputs(F, n, ga, gb)


@rule("xlogy", save=(0, 1))
def _xlogy(F, g, s, n):
    # PyTorch's: x gets g log(y), except 0 where x == 0 and y <= 0 (x log y is 0 there whatever y);
    # y gets g x / y
    a, b = s
    ga = gb = None
    if n.in_meta[0] is not None:
        skip = F.run("logical_and", F.cmp("eq", a, 0.0), F.cmp("le", b, 0.0))
        ga = F.where(skip, 0.0, F.run("xlogy", g, b))
    if n.in_meta[1] is not None:
        gb = F.div(F.mul(g, a), b)
    return reduce_to_inputs(F, n, ga, gb)


@rule("hypot", save=(0, 1, "o0"))
def _hypot(F, g, s, n):
    a, b, y = s
    ga = F.mul(g, F.div(a, y)) if n.in_meta[0] else None
    gb = F.mul(g, F.div(b, y)) if n.in_meta[1] else None
    return reduce_to_inputs(F, n, ga, gb)


@rule("copysign", save=(0, "o0"))
def _copysign(F, g, s, n):
    a, y = s
    ratio = F.where(F.cmp("eq", a, 0.0), 0.0, F.div(y, F.where(F.cmp("eq", a, 0.0), 1.0, a)))
    gb = F.zeros(n.in_meta[1][0], n.in_meta[1][1]) if n.in_meta[1] else None  # the sign's source: zeros
    return reduce_to_inputs(F, n, F.mul(g, ratio), gb)


@rule("remainder", save=(0, 1))
def _remainder(F, g, s, n):
    a, b = s
    # the quotient is piecewise constant: a constant of the gradient graph (so second order never
    # differentiates through the rounding, whose zero would turn into NaN through the division)
    gb = F.neg(F.mul(g, F.run("floor_divide", F.detach(a), F.detach(b)))) if n.in_meta[1] else None
    return reduce_to_inputs(F, n, g, gb)


@rule("fmod", save=(0, 1))
def _fmod(F, g, s, n):
    a, b = s
    gb = F.neg(F.mul(g, F.un("trunc", F.div(F.detach(a), F.detach(b))))) if n.in_meta[1] else None  # see remainder
    return reduce_to_inputs(F, n, g, gb)


@rule("floor_divide", "nextafter")
def _zero_binary(F, g, s, n):
    return tuple(F.zeros(m[0], m[1]) if m is not None else None for m in n.in_meta[:2])


@rule("where", save=(0,))
def _where(F, g, s, n):
    c = s[0]
    gx = F.where(c, g, 0.0) if n.in_meta[1] else None
    gy = F.where(c, 0.0, g) if n.in_meta[2] else None
    return reduce_to_inputs(F, n, None, gx, gy)


@rule("clamp", save=(0, 1, 2))
def _clamp(F, g, s, n):
    # clamp(x, lo, hi) = min(max(x, lo), hi): x gets the gradient where lo <= x <= hi (so not
    # where x is NaN), lo where x < lo < hi, and hi where x > hi or where lo > hi (hi wins then)
    x, lo, hi = s
    keep = None
    if lo is not None:
        keep = F.cmp("ge", x, lo)
    if hi is not None:
        le = F.cmp("le", x, hi)
        keep = le if keep is None else F.run("logical_and", keep, le)
    gx = F.where(keep, g, 0.0) if n.in_meta[0] is not None else None
    glo = ghi = None
    if n.in_meta[1] is not None:
        below = F.cmp("lt", x, lo)
        if hi is not None:
            below = F.run("logical_and", below, F.cmp("lt", lo, hi))
        glo = F.where(below, g, 0.0)
    if n.in_meta[2] is not None:
        above = F.cmp("gt", x, hi)
        if lo is not None:
            above = F.run("logical_or", above, F.cmp("lt", hi, lo))
        ghi = F.where(above, g, 0.0)
    return reduce_to_inputs(F, n, gx, glo, ghi)


@rule("lerp", save=(0, 1, 2))
def _lerp(F, g, s, n):
    a, b, w = s
    one_minus_w = 1.0 - w if n.in_meta[2] is None else F.sub(1.0, w)  # a Python weight stays weak
    ga = F.mul(g, one_minus_w) if n.in_meta[0] is not None else None
    gb = F.mul(g, w) if n.in_meta[1] is not None else None
    gw = F.mul(g, F.sub(b, a)) if n.in_meta[2] is not None else None
    return reduce_to_inputs(F, n, ga, gb, gw)


@rule("logaddexp", save=(0, 1))
def _logaddexp(F, g, s, n):
    # PyTorch's formula: g / (1 + exp(b - a)) for a, and symmetrically for b
    a, b = s
    ga = F.div(g, F.add(F.un("exp", F.sub(b, a)), 1.0)) if n.in_meta[0] is not None else None
    gb = F.div(g, F.add(F.un("exp", F.sub(a, b)), 1.0)) if n.in_meta[1] is not None else None
    return reduce_to_inputs(F, n, ga, gb)


@rule("poisson")
def _poisson(F, g, s, n):
    return (F.zeros_like(g),)  # sampling is not differentiable; PyTorch gives zeros too


NONDIFF_ELEMENTWISE = {
    "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift",
}
