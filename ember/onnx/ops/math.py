"""ONNX operators: elementwise math, logic, comparisons, casts and activations.

See ``_registry.py`` for the conventions. Every function is written with ember Tensor ops, so an
imported model stays differentiable. ONNX never promotes between its inputs (both sides of ``Add``
share one type), but ember follows PyTorch's promotion, so ops whose ember counterpart changes the
dtype (integer ``Div``, ``Pow`` with a float exponent, integer sums...) cast back to the ONNX result
type explicitly.

Example::

    >>> from ember.onnx import ops
    >>> ops.hard_sigmoid(ember.tensor([-5.0, 0.0, 5.0]), alpha=0.2, beta=0.5)
    tensor([0.0000, 0.5000, 1.0000])

Some function names shadow Python builtins (``abs``, ``max``, ``min``, ``sum``, ``pow``, ``round``)
so that generated code reads like the ONNX graph; this module refers to the builtins through
``builtins.`` wherever it needs them.
"""

from __future__ import annotations

import builtins

import numpy as np

import ember
import ember.nn.functional as F
from ember import Tensor

from ._registry import OnnxOpError, from_host, op, to_host, upgrader

# ONNX TensorProto.DataType codes -> ember dtypes (None: a type ember has no dtype for).
_ONNX_TYPES: dict[int, tuple[str, object]] = {
    1: ("FLOAT", ember.float32), 2: ("UINT8", ember.uint8), 3: ("INT8", ember.int8),
    4: ("UINT16", None), 5: ("INT16", ember.int16), 6: ("INT32", ember.int32),
    7: ("INT64", ember.int64), 8: ("STRING", None), 9: ("BOOL", ember.bool),
    10: ("FLOAT16", ember.float16), 11: ("DOUBLE", ember.float64), 12: ("UINT32", None),
    13: ("UINT64", None), 14: ("COMPLEX64", None), 15: ("COMPLEX128", None),
    16: ("BFLOAT16", ember.bfloat16), 17: ("FLOAT8E4M3FN", None), 18: ("FLOAT8E4M3FNUZ", None),
    19: ("FLOAT8E5M2", None), 20: ("FLOAT8E5M2FNUZ", None), 21: ("UINT4", None), 22: ("INT4", None),
    23: ("FLOAT4E2M1", None), 24: ("FLOAT8E8M0", None), 25: ("UINT2", None), 26: ("INT2", None),
}
_TYPE_CODES = {name: code for code, (name, _) in _ONNX_TYPES.items()}


def onnx_dtype(code: int, op_name: str = "Cast") -> ember.dtype:
    """The ember dtype for an ONNX ``TensorProto.DataType`` code, or OnnxOpError naming the op.

    >>> onnx_dtype(1)
    ember.float32
    """
    name, dt = _ONNX_TYPES.get(int(code), (f"type code {code}", None))
    if dt is None:
        raise OnnxOpError(f"{op_name}: ONNX data type {name} is not supported by ember "
                          f"(ember has bool, uint8, int8/16/32/64, float16, bfloat16, float32, float64)")
    return dt


def _need_float(op_name: str, *xs: Tensor) -> None:
    for x in xs:
        if x is not None and not x.dtype.is_floating_point:
            raise OnnxOpError(f"{op_name}: input of type {x.dtype.name} is not supported (floating types only)")


def _need_int(op_name: str, *xs: Tensor) -> None:
    for x in xs:
        if x.dtype.is_floating_point or x.dtype is ember.bool:
            raise OnnxOpError(f"{op_name}: input of type {x.dtype.name} is not supported (integer types only)")


def _as(t: Tensor, dtype) -> Tensor:
    return t if t.dtype is dtype else t.to(dtype)


def _scalar(value, like: Tensor) -> Tensor:
    return ember.tensor(value, dtype=like.dtype, device=like.device)


# ---------------------------------------------------------------- binary arithmetic

@op("Add")
def add(a: Tensor, b: Tensor) -> Tensor:
    """A + B with numpy broadcasting."""
    return _as(a + b, a.dtype)


@op("Sub")
def sub(a: Tensor, b: Tensor) -> Tensor:
    """A - B with numpy broadcasting."""
    return _as(a - b, a.dtype)


@op("Mul")
def mul(a: Tensor, b: Tensor) -> Tensor:
    """A * B with numpy broadcasting."""
    return _as(a * b, a.dtype)


@op("Div")
def div(a: Tensor, b: Tensor) -> Tensor:
    """A / B; integer division truncates toward zero (C semantics), like ONNX Runtime."""
    if a.dtype.is_floating_point:
        return _as(a / b, a.dtype)
    if a.dtype is ember.bool:
        raise OnnxOpError("Div: bool inputs are not supported")
    return _as(ember.div(a, b, rounding_mode="trunc"), a.dtype)


@op("Pow")
def pow(a: Tensor, b: Tensor) -> Tensor:  # noqa: A001 - the ONNX name
    """A ** B; the result has A's type whatever B's type is (Pow-15)."""
    if a.dtype is ember.bool:
        raise OnnxOpError("Pow: bool base is not supported")
    if not a.dtype.is_floating_point and b.dtype.is_floating_point:
        # an integer base with a float exponent: ONNX computes in float and casts back
        return ember.pow(a.to(ember.float64), b.to(ember.float64)).to(a.dtype)
    if a.dtype.is_floating_point and not b.dtype.is_floating_point:
        return ember.pow(a, b.to(a.dtype))
    return _as(ember.pow(a, b), a.dtype)


@op("Mod")
def mod(a: Tensor, b: Tensor, *, fmod: int = 0) -> Tensor:
    """Remainder: ``fmod=0`` takes the divisor's sign (Python ``%``), ``fmod=1`` the dividend's (C)."""
    if a.dtype is ember.bool:
        raise OnnxOpError("Mod: bool inputs are not supported")
    r = ember.fmod(a, b) if fmod else ember.remainder(a, b)
    return _as(r, a.dtype)


@op("BitShift")
def bit_shift(x: Tensor, y: Tensor, *, direction: str) -> Tensor:
    """X shifted by Y bits; shifts of ``< 0`` or ``>= bit width`` give 0 (or -1 right-shifting a negative)."""
    _need_int("BitShift", x, y)
    bits = x.dtype.itemsize * 8
    y = _as(y, x.dtype)
    out_of_range = (y < 0) | (y >= bits)
    safe = ember.where(out_of_range, ember.zeros_like(y), y)
    if direction == "LEFT":
        r = ember.bitwise_left_shift(x, safe)
        fill = ember.zeros_like(r)
    elif direction == "RIGHT":
        r = ember.bitwise_right_shift(x, safe)
        fill = ember.where(x < 0, _scalar(-1, r), _scalar(0, r)) if x.dtype.is_signed else ember.zeros_like(r)
    else:
        raise OnnxOpError(f"BitShift: direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    return ember.where(out_of_range, fill, r)


# ---------------------------------------------------------------- variadic

def _variadic(name: str, fn, xs: tuple[Tensor, ...]) -> Tensor:
    if not xs:
        raise OnnxOpError(f"{name}: needs at least one input")
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    if len(xs) == 1:  # a fresh tensor, never the input itself
        out = out + ember.zeros((), dtype=out.dtype, device=out.device)
    return _as(out, xs[0].dtype)


@op("Max")
def max(*xs: Tensor) -> Tensor:  # noqa: A001 - the ONNX name
    """Elementwise maximum of any number of broadcastable inputs (NaN propagates)."""
    return _variadic("Max", ember.maximum, xs)


@op("Min")
def min(*xs: Tensor) -> Tensor:  # noqa: A001 - the ONNX name
    """Elementwise minimum of any number of broadcastable inputs (NaN propagates)."""
    return _variadic("Min", ember.minimum, xs)


@op("Sum")
def sum(*xs: Tensor) -> Tensor:  # noqa: A001 - the ONNX name
    """Elementwise sum of any number of broadcastable inputs."""
    return _variadic("Sum", ember.add, xs)


@op("Mean")
def mean(*xs: Tensor) -> Tensor:
    """Elementwise mean of any number of broadcastable inputs."""
    _need_float("Mean", *xs)
    return _variadic("Mean", ember.add, xs) / builtins.float(len(xs))


# ---------------------------------------------------------------- unary math

def _unary(onnx_name: str, fn, floats_only: bool = True, doc: str = ""):
    def f(x: Tensor) -> Tensor:
        if floats_only:
            _need_float(onnx_name, x)
        elif x.dtype is ember.bool:
            raise OnnxOpError(f"{onnx_name}: bool input is not supported")
        return _as(fn(x), x.dtype)
    f.__doc__ = doc or f"ONNX {onnx_name}, elementwise."
    return f


abs = op("Abs")(_unary("Abs", ember.abs, False))  # noqa: A001
abs.__name__ = abs.__qualname__ = "abs"
neg = op("Neg")(_unary("Neg", ember.neg, False))
sign = op("Sign")(_unary("Sign", ember.sign, False))
ceil = op("Ceil")(_unary("Ceil", ember.ceil))
floor = op("Floor")(_unary("Floor", ember.floor))
round = op("Round")(_unary("Round", ember.round, doc="Round half to even."))  # noqa: A001
reciprocal = op("Reciprocal")(_unary("Reciprocal", ember.reciprocal))
sqrt = op("Sqrt")(_unary("Sqrt", ember.sqrt))
exp = op("Exp")(_unary("Exp", ember.exp))
log = op("Log")(_unary("Log", ember.log))
erf = op("Erf")(_unary("Erf", ember.erf))
sin = op("Sin")(_unary("Sin", ember.sin))
cos = op("Cos")(_unary("Cos", ember.cos))
tan = op("Tan")(_unary("Tan", ember.tan))
asin = op("Asin")(_unary("Asin", ember.asin))
acos = op("Acos")(_unary("Acos", ember.acos))
atan = op("Atan")(_unary("Atan", ember.atan))
sinh = op("Sinh")(_unary("Sinh", ember.sinh))
cosh = op("Cosh")(_unary("Cosh", ember.cosh))
asinh = op("Asinh")(_unary("Asinh", ember.asinh))
acosh = op("Acosh")(_unary("Acosh", ember.acosh))
atanh = op("Atanh")(_unary("Atanh", ember.atanh))
sigmoid = op("Sigmoid")(_unary("Sigmoid", ember.sigmoid))
tanh = op("Tanh")(_unary("Tanh", ember.tanh))
for _name, _f in list(globals().items()):
    if getattr(_f, "__qualname__", "").startswith("_unary."):
        _f.__name__ = _f.__qualname__ = _name


@op("IsNaN")
def is_nan(x: Tensor) -> Tensor:
    """True where X is NaN."""
    return ember.isnan(x)


@op("IsInf")
def is_inf(x: Tensor, *, detect_negative: int = 1, detect_positive: int = 1) -> Tensor:
    """True where X is +inf (``detect_positive``) or -inf (``detect_negative``)."""
    inf = ember.isinf(x)
    if detect_negative and detect_positive:
        return inf
    if detect_negative:
        return inf & (x < 0)
    if detect_positive:
        return inf & (x > 0)
    return ember.zeros(x.shape, dtype=ember.bool, device=x.device)


# ---------------------------------------------------------------- logic, comparisons, bitwise

def _need_bool(op_name: str, *xs: Tensor) -> None:
    for x in xs:
        if x.dtype is not ember.bool:
            raise OnnxOpError(f"{op_name}: input of type {x.dtype.name} is not supported (bool only)")


@op("And")
def and_(a: Tensor, b: Tensor) -> Tensor:
    """Logical A and B."""
    _need_bool("And", a, b)
    return ember.logical_and(a, b)


@op("Or")
def or_(a: Tensor, b: Tensor) -> Tensor:
    """Logical A or B."""
    _need_bool("Or", a, b)
    return ember.logical_or(a, b)


@op("Xor")
def xor(a: Tensor, b: Tensor) -> Tensor:
    """Logical A xor B."""
    _need_bool("Xor", a, b)
    return ember.logical_xor(a, b)


@op("Not")
def not_(x: Tensor) -> Tensor:
    """Logical not X."""
    _need_bool("Not", x)
    return ember.logical_not(x)


@op("BitwiseAnd")
def bitwise_and(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise A & B of integers."""
    _need_int("BitwiseAnd", a, b)
    return ember.bitwise_and(a, b)


@op("BitwiseOr")
def bitwise_or(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise A | B of integers."""
    _need_int("BitwiseOr", a, b)
    return ember.bitwise_or(a, b)


@op("BitwiseXor")
def bitwise_xor(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise A ^ B of integers."""
    _need_int("BitwiseXor", a, b)
    return ember.bitwise_xor(a, b)


@op("BitwiseNot")
def bitwise_not(x: Tensor) -> Tensor:
    """Bitwise ~X of integers."""
    _need_int("BitwiseNot", x)
    return ember.bitwise_not(x)


@op("Equal")
def equal(a: Tensor, b: Tensor) -> Tensor:
    """A == B."""
    return ember.eq(a, b)


@op("Greater")
def greater(a: Tensor, b: Tensor) -> Tensor:
    """A > B."""
    return ember.gt(a, b)


@op("GreaterOrEqual")
def greater_or_equal(a: Tensor, b: Tensor) -> Tensor:
    """A >= B."""
    return ember.ge(a, b)


@op("Less")
def less(a: Tensor, b: Tensor) -> Tensor:
    """A < B."""
    return ember.lt(a, b)


@op("LessOrEqual")
def less_or_equal(a: Tensor, b: Tensor) -> Tensor:
    """A <= B."""
    return ember.le(a, b)


@op("Where")
def where(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """X where condition else Y (all three broadcast)."""
    return _as(ember.where(_as(condition, ember.bool), x, y), x.dtype)


# ---------------------------------------------------------------- casts

@op("Cast")
def cast(x: Tensor, *, to: int, saturate: int = 1, round_mode: str = "up") -> Tensor:
    """X converted to ONNX type ``to``. ``saturate`` and ``round_mode`` only concern float8/float4
    targets, which ember lacks (refused with OnnxOpError)."""
    return _as(x, onnx_dtype(to, "Cast"))


@upgrader("Cast", below=6)
def _cast_string_to(node: dict) -> dict:
    # Cast-1 named the target type with a string ("FLOAT"); later opsets use the enum code
    to = node["attrs"].get("to")
    if isinstance(to, (str, bytes)):
        to = to.decode() if isinstance(to, bytes) else to
        if to.upper() not in _TYPE_CODES:
            raise OnnxOpError(f"Cast: unknown target type {to!r}")
        node["attrs"]["to"] = _TYPE_CODES[to.upper()]
    return node


@op("CastLike")
def cast_like(x: Tensor, target_type: Tensor, *, saturate: int = 1, round_mode: str = "up") -> Tensor:
    """X converted to the type of ``target_type``."""
    return _as(x, target_type.dtype)


@op("BitCast", since=26)
def bit_cast(x: Tensor, *, to: int) -> Tensor:
    """X's bits reinterpreted as type ``to`` of the same width (not differentiable)."""
    dt = onnx_dtype(to, "BitCast")
    if dt.itemsize != x.dtype.itemsize:
        raise OnnxOpError(f"BitCast: {x.dtype.name} and {dt.name} differ in bit width")
    # a host round trip: bit patterns are not differentiable (np.array keeps 0-d shapes, unlike
    # np.ascontiguousarray)
    arr = np.array(to_host(x), copy=True, order="C").view(dt.np)
    if dt is ember.bool:
        arr = arr != 0  # any nonzero byte reads as true
    return from_host(arr, x)


# ---------------------------------------------------------------- activations

@op("Relu")
def relu(x: Tensor) -> Tensor:
    """max(X, 0)."""
    if x.dtype is ember.bool:
        raise OnnxOpError("Relu: bool input is not supported")
    return F.relu(x)


@op("LeakyRelu")
def leaky_relu(x: Tensor, *, alpha: float = 0.01) -> Tensor:
    """X if X >= 0 else alpha * X."""
    _need_float("LeakyRelu", x)
    return F.leaky_relu(x, alpha)


@op("PRelu")
def prelu(x: Tensor, slope: Tensor) -> Tensor:
    """X if X >= 0 else slope * X; slope broadcasts to X."""
    return _as(ember.where(x < 0, x * slope, x), x.dtype)


@op("ThresholdedRelu")
def thresholded_relu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """X if X > alpha else 0."""
    _need_float("ThresholdedRelu", x)
    return ember.where(x > alpha, x, ember.zeros_like(x))


def _neg_expm1(x: Tensor) -> Tensor:
    # exp(x) - 1 on the negative side only: clamping first keeps the unselected branch of a
    # where() finite, so its (masked) gradient is 0, not 0 * inf = nan
    return ember.expm1(ember.clamp(x, max=0.0))


@op("Elu")
def elu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """X if X > 0 else alpha * (exp(X) - 1)."""
    _need_float("Elu", x)
    return ember.where(x > 0, x, _neg_expm1(x) * alpha)


@op("Selu")
def selu(x: Tensor, *, alpha: float = 1.67326319217681884765625,
         gamma: float = 1.05070102214813232421875) -> Tensor:
    """gamma * (X if X > 0 else alpha * (exp(X) - 1))."""
    _need_float("Selu", x)
    return ember.where(x > 0, x, _neg_expm1(x) * alpha) * gamma


@op("Celu")
def celu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """max(0, X) + min(0, alpha * (exp(X / alpha) - 1))."""
    _need_float("Celu", x)
    return ember.where(x > 0, x, _neg_expm1(x / alpha) * alpha)


@op("Gelu")
def gelu(x: Tensor, *, approximate: str = "none") -> Tensor:
    """X * Phi(X); ``approximate='tanh'`` uses the tanh formula."""
    _need_float("Gelu", x)
    if approximate not in ("none", "tanh"):
        raise OnnxOpError(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return F.gelu(x, approximate=approximate)


@op("HardSigmoid")
def hard_sigmoid(x: Tensor, *, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """clamp(alpha * X + beta, 0, 1)."""
    _need_float("HardSigmoid", x)
    return ember.clamp(x * alpha + beta, 0.0, 1.0)


@op("HardSwish")
def hard_swish(x: Tensor) -> Tensor:
    """X * HardSigmoid(X) with alpha 1/6, beta 0.5."""
    _need_float("HardSwish", x)
    return x * ember.clamp(x * (1.0 / 6.0) + 0.5, 0.0, 1.0)


@op("Mish")
def mish(x: Tensor) -> Tensor:
    """X * tanh(softplus(X))."""
    _need_float("Mish", x)
    return x * ember.tanh(softplus(x))


@op("Softplus")
def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(X)), computed stably as max(X, 0) + log1p(exp(-|X|))."""
    _need_float("Softplus", x)
    return F.relu(x) + ember.log1p(ember.exp(-ember.abs(x)))


@op("Softsign")
def softsign(x: Tensor) -> Tensor:
    """X / (1 + |X|)."""
    _need_float("Softsign", x)
    return x / (ember.abs(x) + 1.0)


@op("Swish", since=24)
def swish(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """X * sigmoid(alpha * X)."""
    _need_float("Swish", x)
    return x * ember.sigmoid(x * alpha)


@op("SwiGLU", since=28)
def swiglu(a: Tensor, b: Tensor, *, alpha: float = 1.0) -> Tensor:
    """Swish_alpha(A) * B (A and B of one shape)."""
    _need_float("SwiGLU", a, b)
    if tuple(a.shape) != tuple(b.shape):
        raise OnnxOpError(f"SwiGLU: A and B must have one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return a * ember.sigmoid(a * alpha) * b


@op("Shrink")
def shrink(x: Tensor, *, bias: float = 0.0, lambd: float = 0.5) -> Tensor:
    """X + bias if X < -lambd, X - bias if X > lambd, else 0."""
    if x.dtype is ember.bool:
        raise OnnxOpError("Shrink: bool input is not supported")
    if x.dtype.is_floating_point:
        lo, hi = x + bias, x - bias
    else:  # integer inputs: compute in float64 so a fractional bias rounds like the reference
        xf = x.to(ember.float64)
        lo, hi = (xf + bias).to(x.dtype), (xf - bias).to(x.dtype)
    zero = ember.zeros_like(x)
    return _as(ember.where(x < -lambd, lo, ember.where(x > lambd, hi, zero)), x.dtype)


@op("Clip")
def clip(x: Tensor, min: Tensor | None = None, max: Tensor | None = None) -> Tensor:  # noqa: A002
    """X limited to [min, max] (either bound may be omitted); bounds are cast to X's type.
    Where min > max every element becomes max."""
    if x.dtype is ember.bool:
        raise OnnxOpError("Clip: bool input is not supported")
    if min is None and max is None:
        return x + ember.zeros((), dtype=x.dtype, device=x.device)  # a fresh tensor, never X itself
    # ember.clamp (not maximum/minimum) so gradients at the bounds match PyTorch's clamp
    lo = None if min is None else _as(min, x.dtype).reshape(())
    hi = None if max is None else _as(max, x.dtype).reshape(())
    return ember.clamp(x, min=lo, max=hi)


@upgrader("Clip", below=11)
def _clip_attrs_to_inputs(node: dict) -> dict:
    # Clip-6 bounds were float attributes (defaults: float's lowest / highest); Clip-11 takes inputs
    attrs = node["attrs"]
    new = node.setdefault("new_constants", {})
    inputs = [node["inputs"][0], "", ""]
    for i, key in ((1, "min"), (2, "max")):
        if key in attrs:
            name = f"{node['outputs'][0]}__clip_{key}"
            new[name] = np.array(attrs.pop(key), dtype=np.float32)
            inputs[i] = name
    while inputs[-1] == "":
        inputs.pop()
    node["inputs"] = inputs
    return node


def _legacy_binary(onnx_name: str) -> None:
    # opsets < 7 had explicit "broadcast"/"axis" attributes; trailing-aligned broadcasting is what
    # numpy broadcasting does, so only an explicit axis needs a rewrite ember does not make
    def up(node: dict) -> dict:
        attrs = node["attrs"]
        attrs.pop("consumed_inputs", None)
        if attrs.pop("broadcast", 0) and "axis" in attrs:
            raise OnnxOpError(f"{onnx_name}-{node.get('opset')}: legacy broadcasting with an 'axis' "
                              "attribute is not supported; re-export the model with opset >= 7")
        attrs.pop("axis", None)
        return node
    upgrader(onnx_name, below=7)(up)


for _n in ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"):
    _legacy_binary(_n)


def _drop_consumed_inputs(node: dict) -> dict:
    node["attrs"].pop("consumed_inputs", None)  # an opset-1 memory hint with no meaning now
    return node


for _n in ("Abs", "Neg", "Ceil", "Floor", "Reciprocal", "Sqrt", "Exp", "Log", "Sigmoid", "Tanh",
           "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "HardSigmoid", "Max", "Min", "Sum", "Mean"):
    upgrader(_n, below=6)(_drop_consumed_inputs)


from .math2 import *  # noqa: E402,F401,F403
from .math2 import __all__ as _all2  # noqa: E402

__all__ = sorted(
    [n for n, v in list(globals().items())
     if callable(v) and getattr(v, "__module__", None) == __name__ and not n.startswith("_")
     and n != "onnx_dtype"] + list(_all2))  # onnx_dtype: reach it as ops.math.onnx_dtype
