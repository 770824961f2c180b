"""Elementwise ops: arithmetic, comparison, logical and bitwise operators, and math functions.

Binary ops follow PyTorch's type promotion (``_dtype.result_type``) and broadcasting. The fast
path at the top of each binary op (two tensors, same dtype, shape and device) is the per-op
overhead every user pays, so it avoids everything but one backend call.
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._shape import broadcast_shapes
from ._tensor import Tensor, method, run, same_device, wrap

_EMPTY: dict = {}
ARITH, TRUEDIV, FLOATOP, CMP, LOGICAL, BITWISE = range(6)
_INT_RANGES = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max)) for d in dt.INTEGRAL}


def _scalar_for(x, d: dt.dtype):
    """A Python scalar as the weak operand of an op computed in dtype ``d``."""
    if x.__class__ is bool or isinstance(x, (bool, np.bool_)):
        return bool(x) if d is dt.bool else int(x) if d.category == 1 else float(x)
    if d.category == 1 and isinstance(x, (int, np.integer)):
        lo, hi = _INT_RANGES[d]
        x = int(x)
        if not lo <= x <= hi:  # wrap like a C cast, as PyTorch does
            x = (x - lo) % (hi - lo + 1) + lo
        return x
    if d.category == 2:
        return float(x)
    return x


def _check_scalar(x, op):
    if not isinstance(x, (int, float, bool, np.generic)):
        raise TypeError(f"{op}(): expected a Tensor or a Python number, got {type(x).__name__}")


def cast(x: Tensor, d: dt.dtype) -> Tensor:
    """x converted to dtype ``d`` (x itself when it already has it)."""
    if x._dtype is d:
        return x
    return run("cast", (x,), {"dtype": d}, x._shape, d)


def _binary_slow(op: str, kind: int, a, b):
    ta, tb = a.__class__ is Tensor or isinstance(a, Tensor), b.__class__ is Tensor or isinstance(b, Tensor)
    if not ta:
        if not tb:
            raise TypeError(f"{op}(): at least one argument must be a Tensor, got "
                            f"{type(a).__name__} and {type(b).__name__}")
        _check_scalar(a, op)
    if not tb:
        _check_scalar(b, op)
    if ta and tb:
        device = same_device(op, a, b)
        shape = broadcast_shapes(a._shape, b._shape) if a._shape != b._shape else a._shape
    else:
        t = a if ta else b
        device, shape = t._device, t._shape
    d = dt.result_type(a, b)
    if kind == BITWISE and d.is_floating_point:
        raise TypeError(f"{op}: bitwise ops need integer or bool tensors, got {d}")
    if kind in (TRUEDIV, FLOATOP) and not d.is_floating_point:
        d = dt.get_default_dtype()
    if kind == LOGICAL:
        ins = (a if ta else bool(a), b if tb else bool(b))
        out_dtype = dt.bool
    else:
        ins = (cast(a, d) if ta else _scalar_for(a, d), cast(b, d) if tb else _scalar_for(b, d))
        out_dtype = dt.bool if kind == CMP else d
    if op == "sub" and d is dt.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if op == "pow" and d.category == 1 and not tb and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    h = device.backend.run(op, tuple(x._h if isinstance(x, Tensor) else x for x in ins), _EMPTY)
    return wrap(h, shape, out_dtype, device)


def _make_binary(op: str, kind: int, doc: str):
    if kind == ARITH:
        def fn(input, other):
            if input.__class__ is Tensor and other.__class__ is Tensor:
                d = input._dtype
                if d is other._dtype and input._shape == other._shape and input._device is other._device \
                        and d is not dt.bool:
                    return wrap(input._device.backend.run(op, (input._h, other._h), _EMPTY),
                                input._shape, d, input._device)
            return _binary_slow(op, kind, input, other)
    else:
        def fn(input, other):
            return _binary_slow(op, kind, input, other)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc
    return fn


def _inplace(op: str, kind: int):
    fn_out = _BINARY[op]

    def fn(self: Tensor, other):
        d = dt.result_type(self, other) if kind != LOGICAL else dt.bool
        if kind in (TRUEDIV, FLOATOP) and not d.is_floating_point:
            d = dt.get_default_dtype()
        if not dt.can_cast(d, self._dtype):
            raise RuntimeError(f"{op}_: result type {d.name} can't be cast to the desired output "
                               f"type {self._dtype.name}")
        if isinstance(other, Tensor):
            same_device(op + "_", self, other)
            if broadcast_shapes(self._shape, other._shape) != self._shape:
                raise RuntimeError(f"{op}_: output with shape {list(self._shape)} doesn't match the "
                                   f"broadcast shape {list(broadcast_shapes(self._shape, other._shape))}")
        backend = self._device.backend
        if d is self._dtype and kind == ARITH and backend.supports(op + "_"):
            o = other._h if isinstance(other, Tensor) and other._dtype is d else (
                cast(other, d)._h if isinstance(other, Tensor) else _scalar_for(other, d))
            _write(backend, op + "_", (self._h, o))
        else:
            assign_(self, fn_out(self, other))
        _bump(self)
        return self
    fn.__name__ = op + "_"
    return fn


def _write(backend, op, inputs, attrs=_EMPTY):
    try:
        return backend.run(op, inputs, attrs)
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                               "refers to a single memory location (an expanded tensor). Please clone() "
                               "the tensor before performing the operation.") from None
        raise


def _bump(t: Tensor):
    """Tell autodiff (if present) that ``t`` was modified in place."""
    hook = _INPLACE_HOOKS
    if hook:
        for h in hook:
            h(t)


_INPLACE_HOOKS: list = []


def assign_(dst: Tensor, src) -> Tensor:
    """Write ``src`` (tensor broadcastable to dst, or scalar) into ``dst``'s memory."""
    if isinstance(src, Tensor):
        same_device("copy_", dst, src)
        if src._shape != dst._shape:
            broadcast_shapes(dst._shape, src._shape)
            if broadcast_shapes(dst._shape, src._shape) != dst._shape:
                raise RuntimeError(f"copy_: source of shape {list(src._shape)} can't be broadcast to "
                                   f"destination shape {list(dst._shape)}")
        s = src._h
    else:
        _check_scalar(src, "fill_")
        s = _scalar_for(src, dst._dtype)
    _write(dst._device.backend, "assign", (dst._h, s))
    return dst


_BINARY_SPECS = {
    "add": (ARITH, "a + b, elementwise with broadcasting."),
    "sub": (ARITH, "a - b."), "mul": (ARITH, "a * b."),
    "div": (TRUEDIV, "True division a / b (integers give the default float dtype)."),
    "floor_divide": (ARITH, "a // b, rounded toward negative infinity."),
    "remainder": (ARITH, "Python-style modulus: the result has the sign of the divisor."),
    "fmod": (ARITH, "C-style modulus: the result has the sign of the dividend."),
    "pow": (ARITH, "a ** b."),
    "maximum": (ARITH, "Elementwise max; NaN propagates."), "minimum": (ARITH, "Elementwise min; NaN propagates."),
    "fmax": (ARITH, "Elementwise max ignoring NaN."), "fmin": (ARITH, "Elementwise min ignoring NaN."),
    "atan2": (FLOATOP, "atan(a / b) with the quadrant of (b, a)."),
    "hypot": (FLOATOP, "sqrt(a² + b²) without overflow."),
    "copysign": (FLOATOP, "|a| with the sign of b."),
    "nextafter": (FLOATOP, "The next float after a toward b."),
    "eq": (CMP, "a == b"), "ne": (CMP, "a != b"), "lt": (CMP, "a < b"), "le": (CMP, "a <= b"),
    "gt": (CMP, "a > b"), "ge": (CMP, "a >= b"),
    "logical_and": (LOGICAL, "Logical and (nonzero is true)."),
    "logical_or": (LOGICAL, "Logical or."), "logical_xor": (LOGICAL, "Logical xor."),
    "bitwise_and": (BITWISE, "a & b"), "bitwise_or": (BITWISE, "a | b"), "bitwise_xor": (BITWISE, "a ^ b"),
    "bitwise_left_shift": (BITWISE, "a << b"), "bitwise_right_shift": (BITWISE, "a >> b"),
}
_BINARY = {op: _make_binary(op, kind, doc) for op, (kind, doc) in _BINARY_SPECS.items()}
globals().update(_BINARY)

for _op, (_kind, _doc) in _BINARY_SPECS.items():
    setattr(Tensor, _op, _BINARY[_op])
    setattr(Tensor, _op + "_", _inplace(_op, _kind))


def add(input, other, *, alpha=1):  # noqa: F811 - adds alpha to the generated op
    """input + alpha * other."""
    if alpha != 1:
        other = _BINARY["mul"](other, alpha)
    return _BINARY["add"](input, other)


def sub(input, other, *, alpha=1):  # noqa: F811
    """input - alpha * other."""
    if alpha != 1:
        other = _BINARY["mul"](other, alpha)
    return _BINARY["sub"](input, other)


def div(input, other, *, rounding_mode: str | None = None):  # noqa: F811
    """input / other; rounding_mode None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return _BINARY["div"](input, other)
    if rounding_mode == "floor":
        return _BINARY["floor_divide"](input, other)
    if rounding_mode == "trunc":
        d = dt.result_type(input, other)
        if d.is_floating_point:
            return trunc(_BINARY["div"](input, other))
        q = _BINARY["floor_divide"](input, other)
        r = _BINARY["fmod"](input, other)
        # floor and trunc differ when the signs differ and the division is inexact
        fix = logical_and(ne(r, 0), lt(mul(sign(_as_tensor_like(input, q)), sign(_as_tensor_like(other, q))), 0))
        return where(fix, add(q, 1), q)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


def _as_tensor_like(x, ref: Tensor) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from ._creation import full
    return full((), x, device=ref._device, dtype=dt.result_type(x))


def _add_(self, other, *, alpha=1):
    return _BINARY_INPLACE["add"](self, other if alpha == 1 else _BINARY["mul"](other, alpha))


def _sub_(self, other, *, alpha=1):
    return _BINARY_INPLACE["sub"](self, other if alpha == 1 else _BINARY["mul"](other, alpha))


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _BINARY_INPLACE["div"](self, other)
    return assign_(self, div(self, other, rounding_mode=rounding_mode))


_BINARY_INPLACE = {op: getattr(Tensor, op + "_") for op in _BINARY_SPECS}
Tensor.add, Tensor.sub, Tensor.div = add, sub, div
Tensor.add_, Tensor.sub_, Tensor.div_ = _add_, _sub_, _div_
multiply, subtract, divide, true_divide = mul, sub, div, div  # noqa: F821 - from globals().update
Tensor.multiply, Tensor.subtract, Tensor.divide, Tensor.true_divide = mul, sub, div, div  # noqa: F821
Tensor.mul_, Tensor.multiply_ = Tensor.mul_, Tensor.mul_
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne  # noqa: F821
Tensor.greater, Tensor.greater_equal, Tensor.less, Tensor.less_equal, Tensor.not_equal = gt, ge, lt, le, ne  # noqa: F821


# ---- Python operators -------------------------------------------------------------------------
def _reflect(fn):
    return lambda self, other: fn(other, self)


Tensor.__add__ = _BINARY["add"]
Tensor.__radd__ = _reflect(_BINARY["add"])
Tensor.__sub__ = _BINARY["sub"]
Tensor.__rsub__ = _reflect(_BINARY["sub"])
Tensor.__mul__ = _BINARY["mul"]
Tensor.__rmul__ = _reflect(_BINARY["mul"])
Tensor.__truediv__ = _BINARY["div"]
Tensor.__rtruediv__ = _reflect(_BINARY["div"])
Tensor.__floordiv__ = _BINARY["floor_divide"]
Tensor.__rfloordiv__ = _reflect(_BINARY["floor_divide"])
Tensor.__mod__ = _BINARY["remainder"]
Tensor.__rmod__ = _reflect(_BINARY["remainder"])
Tensor.__pow__ = _BINARY["pow"]
Tensor.__rpow__ = _reflect(_BINARY["pow"])
Tensor.__and__ = _BINARY["bitwise_and"]
Tensor.__rand__ = _reflect(_BINARY["bitwise_and"])
Tensor.__or__ = _BINARY["bitwise_or"]
Tensor.__ror__ = _reflect(_BINARY["bitwise_or"])
Tensor.__xor__ = _BINARY["bitwise_xor"]
Tensor.__rxor__ = _reflect(_BINARY["bitwise_xor"])
Tensor.__lshift__ = _BINARY["bitwise_left_shift"]
Tensor.__rlshift__ = _reflect(_BINARY["bitwise_left_shift"])
Tensor.__rshift__ = _BINARY["bitwise_right_shift"]
Tensor.__rrshift__ = _reflect(_BINARY["bitwise_right_shift"])
Tensor.__eq__ = _BINARY["eq"]
Tensor.__ne__ = _BINARY["ne"]
Tensor.__lt__ = _BINARY["lt"]
Tensor.__le__ = _BINARY["le"]
Tensor.__gt__ = _BINARY["gt"]
Tensor.__ge__ = _BINARY["ge"]
Tensor.__iadd__ = _BINARY_INPLACE["add"]
Tensor.__isub__ = _BINARY_INPLACE["sub"]
Tensor.__imul__ = _BINARY_INPLACE["mul"]
Tensor.__itruediv__ = _BINARY_INPLACE["div"]
Tensor.__ifloordiv__ = _BINARY_INPLACE["floor_divide"]
Tensor.__imod__ = _BINARY_INPLACE["remainder"]
Tensor.__ipow__ = _BINARY_INPLACE["pow"]
Tensor.__iand__ = _BINARY_INPLACE["bitwise_and"]
Tensor.__ior__ = _BINARY_INPLACE["bitwise_or"]
Tensor.__ixor__ = _BINARY_INPLACE["bitwise_xor"]
Tensor.__ilshift__ = _BINARY_INPLACE["bitwise_left_shift"]
Tensor.__irshift__ = _BINARY_INPLACE["bitwise_right_shift"]
Tensor.__hash__ = lambda self: id(self)  # defining __eq__ would otherwise drop hashing


# ---- unary ops --------------------------------------------------------------------------------
FLOAT_UNARY = ("exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin",
               "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
               "atanh", "erf", "erfc", "erfinv", "sigmoid", "lgamma", "digamma", "reciprocal")
SAME_UNARY = ("neg", "abs", "square", "sign")
ROUNDING = ("floor", "ceil", "trunc")
PREDICATES = ("isnan", "isinf", "isfinite", "signbit")


def _make_unary(op: str):
    if op in FLOAT_UNARY:
        def fn(input):
            d = input._dtype
            if not d.is_floating_point:
                input = cast(input, dt.get_default_dtype())
                d = input._dtype
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, d, input._device)
    elif op in ROUNDING:
        def fn(input):
            if not input._dtype.is_floating_point:
                return input.clone()
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, input._dtype, input._device)
    elif op in PREDICATES:
        def fn(input):
            if not input._dtype.is_floating_point:
                from ._creation import full
                return full(input._shape, op in ("isfinite",), dtype=dt.bool, device=input._device)
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, dt.bool, input._device)
    else:
        def fn(input):
            if op == "neg" and input._dtype is dt.bool:
                raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                                   "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, input._dtype, input._device)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op}."
    return fn


def _unary_inplace(op: str):
    out_fn = _UNARY[op]

    def fn(self):
        r = out_fn(self)
        if not dt.can_cast(r._dtype, self._dtype):
            raise RuntimeError(f"{op}_: result type {r._dtype.name} can't be cast to the desired output "
                               f"type {self._dtype.name}")
        assign_(self, r)
        _bump(self)
        return self
    fn.__name__ = op + "_"
    return fn


_UNARY = {op: _make_unary(op) for op in FLOAT_UNARY + SAME_UNARY + ROUNDING + PREDICATES}
globals().update(_UNARY)
for _op in _UNARY:
    setattr(Tensor, _op, _UNARY[_op])
    if _op not in PREDICATES:
        setattr(Tensor, _op + "_", _unary_inplace(_op))
absolute, negative, arcsin, arccos, arctan = abs, neg, asin, acos, atan  # noqa: F821
arcsinh, arccosh, arctanh, arctan2 = asinh, acosh, atanh, atan2  # noqa: F821
Tensor.absolute, Tensor.negative, Tensor.arctan2 = abs, neg, atan2  # noqa: F821
Tensor.__neg__ = neg  # noqa: F821
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = abs  # noqa: F821


@method
def logical_not(input: Tensor) -> Tensor:
    """Elementwise not (nonzero is true); returns bool."""
    return run("logical_not", (input,), _EMPTY, input._shape, dt.bool)


@method
def bitwise_not(input: Tensor) -> Tensor:
    """~x for integer and bool tensors."""
    if input._dtype.is_floating_point:
        raise TypeError(f"bitwise_not needs an integer or bool tensor, got {input._dtype}")
    return run("bitwise_not", (input,), _EMPTY, input._shape, input._dtype)


Tensor.__invert__ = bitwise_not


@method
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even; ``decimals`` rounds to that many decimal places."""
    if not input._dtype.is_floating_point:
        return input.clone()
    if decimals:
        return run("round_decimals", (input,), {"decimals": int(decimals)}, input._shape, input._dtype)
    return run("round", (input,), _EMPTY, input._shape, input._dtype)


@method
def frac(input: Tensor) -> Tensor:
    """x - trunc(x)."""
    return input - trunc(input)  # noqa: F821


@method
def positive(input: Tensor) -> Tensor:
    return input


@method
def sgn(input: Tensor) -> Tensor:
    return sign(input)  # noqa: F821


@method
def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (tensors or numbers); min > max gives max, like PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    d = dt.result_type(*(v for v in (input, min, max) if v is not None))
    shape = broadcast_shapes(*(v._shape for v in (input, min, max) if isinstance(v, Tensor)))
    ins = [cast(input, d)]
    for v in (min, max):
        if v is None:
            ins.append(None)
        elif isinstance(v, Tensor):
            same_device("clamp", input, v)
            ins.append(cast(v, d))
        else:
            ins.append(_scalar_for(v, d))
    return run("clamp", tuple(ins), _EMPTY, shape, d, input._device)


clip = clamp
Tensor.clip = clamp


@method
def clamp_(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    assign_(input, clamp(input, min, max))
    _bump(input)
    return input


Tensor.clip_ = clamp_


@method
def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    return clamp(input, min=min)


@method
def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    return clamp(input, max=max)


def where(condition: Tensor, input=None, other=None) -> Tensor:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (tensors or numbers).
    With only a condition, returns ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        from ._indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): condition must be a bool Tensor")
    if condition._dtype is not dt.bool:
        condition = cast(condition, dt.bool)
    d = dt.result_type(*(v for v in (input, other)))
    tensors = [v for v in (condition, input, other) if isinstance(v, Tensor)]
    device = same_device("where", *tensors)
    shape = broadcast_shapes(*(v._shape for v in tensors))
    ins = (condition,) + tuple(cast(v, d) if isinstance(v, Tensor) else _scalar_for(v, d) for v in (input, other))
    return run("where", ins, _EMPTY, shape, d, device)


Tensor.where = lambda self, condition, other: where(condition, self, other)


@method
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight * (end - input)."""
    return input + weight * (end - input)


@method
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN with ``nan`` and ±inf with the dtype's extremes (or the given values)."""
    if not input._dtype.is_floating_point:
        return input.clone()
    info = dt.finfo(input._dtype)
    attrs = {"nan": float(nan), "posinf": info.max if posinf is None else float(posinf),
             "neginf": info.min if neginf is None else float(neginf)}
    return run("nan_to_num", (input,), attrs, input._shape, input._dtype)


@method
def float_power(input, exponent) -> Tensor:
    """pow computed in float64."""
    a = cast(input, dt.float64) if isinstance(input, Tensor) else float(input)
    b = cast(exponent, dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return _BINARY["pow"](a, b)


@method
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(a) + exp(b)) without overflow."""
    m = _BINARY["maximum"](input, other)
    m = where(isinf(m), 0.0, m) if m._dtype.is_floating_point else m  # noqa: F821
    return m + log(exp(input - m) + exp(other - m))  # noqa: F821


@method
def xlogy(input, other) -> Tensor:
    """x * log(y), 0 where x == 0 (and y is not NaN)."""
    r = _BINARY["mul"](input, log(other if isinstance(other, Tensor) else _as_tensor_like(other, input)))  # noqa: F821
    return where(_BINARY["eq"](input, 0) & ~isnan(_as_tensor_like(other, r)), 0.0, r)  # noqa: F821


@method
def true_divide_(self, other):
    return self.div_(other)
