"""Elementwise ops of the CUDA backend, written against an array module ``xp`` (CuPy on the GPU).

``build(xp, special)`` returns the op table; ``special`` is the module with erf/erfinv/gammaln/digamma
(``cupyx.scipy.special`` on the GPU, ``scipy.special`` when the tests run this code on numpy).
Half-precision transcendental math runs in float32 and rounds once, as the numpy reference does.
"""

from __future__ import annotations

import math

import numpy as np

from . import casts, kernels
from ._util import LOW


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """Integer floor_divide/remainder/fmod by zero (checked on the host: a sync point, integers only)."""


def build(xp, special) -> dict:
    def upcast(fn):
        def run(x, *a, **k):
            if x.dtype in LOW:
                r = fn(x.astype(np.float32), *a, **k)
                return r.astype(x.dtype) if r.dtype == np.float32 else r
            return fn(x, *a, **k)
        return run

    def _int_check(y):
        if isinstance(y, xp.ndarray):
            if y.dtype.kind in "iub" and not bool(y.all()):
                raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")
        elif y == 0:
            raise IntegerDivisionByZero("ZeroDivisionError: integer division by zero")

    def _int_div(uf):
        def run(x, y):
            if isinstance(x, xp.ndarray) and x.dtype.kind in "iub":
                _int_check(y)
            return _keep(uf(x, y), x, y)
        return run

    _bool = np.dtype(np.bool_)

    def _keep(r, x, y):
        """Python scalars are weak: the result keeps the tensor operand's dtype."""
        want = x.dtype if hasattr(x, "dtype") else y.dtype
        got = r.dtype
        # identity first: dtype objects are shared, and this runs on every binary op (per-op overhead)
        if got is want or got is _bool or got == want or got == _bool:
            return r
        return r.astype(want)

    def _b(uf):
        def run(x, y):
            return _keep(uf(x, y), x, y)
        return run

    _scalars = (int, float, bool)  # Python scalars (bool is checked by class, not as an int)

    def _arith(name, uf):
        """add/sub/mul/div: a 16-bit float tensor with a Python scalar takes one kernel (see
        kernels._SCALAR); everything else the ufunc (written out, not through _b: this is the per-op
        path of a + b, where a Python frame is a measurable part of the cost)."""
        if xp is np:
            return _b(uf)

        vector_arith = name if name in casts.ARITH_OPS else None

        def low_scalar(which, arr, s, x, y):
            r = kernels.try_elementwise(which, arr, np.float32(s))
            return r if r is not None else _keep(uf(x, y), x, y)

        def run(x, y):
            if y.__class__ in _scalars:
                if x.dtype in LOW:
                    return low_scalar("scalar_" + name, x, y, x, y)
                want = x.dtype
            elif x.__class__ in _scalars:
                if y.dtype in LOW:
                    return low_scalar("rscalar_" + name, y, x, x, y)
                want = y.dtype
            else:
                want = x.dtype
                if x.itemsize == 2 and vector_arith is not None and y.__class__ is x.__class__:  # 16 B a thread
                    r = casts.arith(xp, vector_arith, x, y)
                    if r is not None:
                        return r
            r = uf(x, y)
            got = r.dtype  # _keep, inlined
            if got is want or got is _bool or got == want or got == _bool:
                return r
            return r.astype(want)
        return run

    def _cmp(uf):
        return lambda x, y: uf(x, y)

    def _nextafter(x, y):
        """nextafter; 2-byte floats step on their bit patterns (CuPy's float16 nextafter works in float32
        and turns the step past the largest finite value into NaN instead of inf)."""
        dt = (x if hasattr(x, "dtype") else y).dtype
        if dt.itemsize != 2:
            return _keep(xp.nextafter(x, y), x, y)
        x, y = xp.broadcast_arrays(xp.asarray(x, dtype=dt), xp.asarray(y, dtype=dt))
        bits = xp.ascontiguousarray(x).view(np.uint16)
        grows = (y > x) != (x < 0)  # the step moves away from zero
        step = xp.where(grows, bits + np.uint16(1), bits - np.uint16(1))
        tiny = xp.where(y > 0, np.uint16(1), np.uint16(0x8001))  # from ±0: the smallest subnormal
        step = xp.where(x == 0, tiny, step).view(dt)
        # equal operands give y; a NaN operand gives NaN (x + y)
        r = xp.where(x == y, y, xp.where(xp.isnan(x) | xp.isnan(y), x + y, step))
        return r.astype(dt, copy=False)  # CuPy's where answers float32 for bfloat16

    def _pow(x, y):
        if isinstance(x, xp.ndarray) and x.dtype == np.bool_:
            return x.copy() if y else xp.ones_like(x)
        if isinstance(y, xp.ndarray) and y.dtype.kind == "i":
            neg = y < 0
            if bool(neg.any()):  # PyTorch's integer pow with negative exponents (numpy refuses them)
                r = xp.power(x, xp.where(neg, 0, y))
                odd = (y % 2) != 0
                sp = xp.where(x == 1, 1, xp.where(x == -1, xp.where(odd, -1, 1), 0))
                return xp.where(neg, sp, r).astype(r.dtype)
        return _keep(xp.power(x, y), x, y)

    def _sign(x):
        if x.dtype == np.bool_:
            return x.copy()
        r = xp.sign(x)
        if x.dtype.kind == "f" or x.dtype in LOW:  # PyTorch: sign(NaN) is 0
            r = xp.where(xp.isnan(x), xp.zeros((), r.dtype), r)
        return r.astype(x.dtype, copy=False)  # CuPy's where (and sign) answer float32 for bfloat16

    def _sigmoid(x):
        if xp is not np and x.dtype in (np.float32, np.float64):
            y = kernels.try_elementwise("sigmoid", x)  # one pass instead of nine ufunc launches
            if y is not None:
                return y
        e = xp.exp(-xp.abs(x))  # never overflows; the two branches join at x = 0
        return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype)

    vector_casts = xp is not np

    def _cast(x, dtype):
        target = dtype.np
        if x.dtype == target:
            return x.copy()
        if target == np.bool_:
            return x != 0
        if vector_casts:  # float32 <-> 16-bit, contiguous: 8 elements a thread (autocast's casts)
            r = casts.cast(xp, x, target)
            if r is not None:
                return r
        return x.astype(target)

    def _where(cond, x, y):
        r = xp.where(cond, x, y)
        ref = x if isinstance(x, xp.ndarray) else y if isinstance(y, xp.ndarray) else None
        if ref is not None and r.dtype != ref.dtype:
            r = r.astype(ref.dtype)
        return r

    def _clamp(x, lo, hi):
        if lo is not None:
            x = _keep(xp.maximum(x, lo), x, lo)
        if hi is not None:
            x = _keep(xp.minimum(x, hi), x, hi)
        return x if (lo is not None or hi is not None) else x.copy()

    def _nan_to_num(x, nan, posinf, neginf):
        out = xp.where(xp.isnan(x), xp.asarray(nan, x.dtype), x)
        out = xp.where(xp.isposinf(x), xp.asarray(posinf, x.dtype), out)
        return xp.where(xp.isneginf(x), xp.asarray(neginf, x.dtype), out).astype(x.dtype, copy=False)

    def _round_decimals(x, decimals):
        return xp.round(x, decimals)

    def _lerp(start, end, weight):
        diff = end - start
        if isinstance(weight, xp.ndarray):
            return xp.where(xp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
        return start + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)

    def _xlogy(x, y):
        r = x * xp.log(y)
        return xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), r.dtype), r)

    def _polygamma(x, n):
        # n >= 1: (-1)^(n+1) n! zeta(n+1, x), the Hurwitz zeta (CuPy's polygamma trips on 0-d inputs)
        r = (special.zeta(float(n + 1), x) * ((-1.0) ** (n + 1) * math.factorial(n))).astype(x.dtype)
        return xp.where(xp.isneginf(x), xp.asarray(np.nan, x.dtype), r)  # no limit at -inf (PyTorch: NaN)

    def _rsqrt(x):
        return 1.0 / xp.sqrt(x)

    def _lgamma(x):
        return xp.where(xp.isneginf(x), xp.asarray(np.inf, x.dtype), special.gammaln(x))  # PyTorch: +inf at -inf

    def _erfinv(x):
        return special.erfinv(x)

    def _u(uf):
        return lambda x: uf(x)

    math_ops = {
        "exp": xp.exp, "exp2": xp.exp2, "expm1": xp.expm1, "log": xp.log, "log1p": xp.log1p, "log2": xp.log2,
        "log10": xp.log10, "sqrt": xp.sqrt, "rsqrt": _rsqrt, "sin": xp.sin, "cos": xp.cos, "tan": xp.tan,
        "asin": xp.arcsin, "acos": xp.arccos, "atan": xp.arctan, "sinh": xp.sinh, "cosh": xp.cosh,
        "tanh": xp.tanh, "asinh": xp.arcsinh, "acosh": xp.arccosh, "atanh": xp.arctanh,
        "erf": special.erf, "erfc": special.erfc, "erfinv": _erfinv, "sigmoid": _sigmoid,
        "lgamma": _lgamma, "digamma": special.digamma, "reciprocal": xp.reciprocal,
    }
    ops = {name: upcast(_u(fn)) for name, fn in math_ops.items()}
    ops.update({
        "neg": _u(xp.negative), "abs": _u(xp.abs), "sign": _sign, "square": _u(xp.square),
        "floor": _u(xp.floor), "ceil": _u(xp.ceil), "trunc": _u(xp.trunc), "round": _u(xp.rint),
        "isnan": _u(xp.isnan), "isinf": _u(xp.isinf), "isfinite": _u(xp.isfinite), "signbit": _u(xp.signbit),
        "logical_not": _u(xp.logical_not), "bitwise_not": _u(xp.invert),
        "add": _arith("add", xp.add), "sub": _arith("sub", xp.subtract), "mul": _arith("mul", xp.multiply),
        "div": _arith("div", xp.true_divide),
        "floor_divide": _int_div(xp.floor_divide), "remainder": _int_div(xp.remainder),
        "fmod": _int_div(xp.fmod), "pow": _pow,
        "maximum": _b(xp.maximum), "minimum": _b(xp.minimum), "fmax": _b(xp.fmax), "fmin": _b(xp.fmin),
        "atan2": upcast(_b(xp.arctan2)), "hypot": upcast(_b(xp.hypot)), "copysign": _b(xp.copysign),
        "nextafter": _nextafter,
        "eq": _cmp(xp.equal), "ne": _cmp(xp.not_equal), "lt": _cmp(xp.less), "le": _cmp(xp.less_equal),
        "gt": _cmp(xp.greater), "ge": _cmp(xp.greater_equal),
        "logical_and": _cmp(xp.logical_and), "logical_or": _cmp(xp.logical_or),
        "logical_xor": _cmp(xp.logical_xor),
        "bitwise_and": _b(xp.bitwise_and), "bitwise_or": _b(xp.bitwise_or), "bitwise_xor": _b(xp.bitwise_xor),
        "bitwise_left_shift": _b(xp.left_shift), "bitwise_right_shift": _b(xp.right_shift),
        "round_decimals": upcast(_round_decimals), "cast": _cast, "where": _where, "clamp": _clamp,
        "nan_to_num": _nan_to_num, "lerp": upcast(_lerp), "logaddexp": upcast(_b(xp.logaddexp)),
        "polygamma": upcast(_polygamma), "xlogy": upcast(_xlogy),
    })

    def _inplace(uf):
        def run(x, *rest):
            uf(x, *rest, out=x, casting="unsafe")
            return x
        return run

    for name, uf in (("add", xp.add), ("sub", xp.subtract), ("mul", xp.multiply), ("div", xp.true_divide),
                     ("maximum", xp.maximum), ("minimum", xp.minimum), ("neg", xp.negative), ("abs", xp.abs),
                     ("exp", xp.exp), ("sqrt", xp.sqrt), ("bitwise_and", xp.bitwise_and),
                     ("bitwise_or", xp.bitwise_or), ("bitwise_xor", xp.bitwise_xor),
                     ("logical_and", xp.logical_and), ("logical_or", xp.logical_or)):
        ops[name + "_"] = _inplace(uf)
    return ops
