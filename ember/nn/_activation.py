"""Activation functions of ember.nn.functional (relu, gelu, silu, elu, ...), with torch's names.

The common activations are backend ops (``ember/backend/ops_nn.py``) so a backend can run each in
one fused pass; a backend without one gets the decomposition written here with primitive ember
ops (which autodiff differentiates for free). The rest (softsign, glu, prelu, the shrinks, ...)
are always decompositions: they are cheap enough that a fused op would not pay for itself.

>>> import ember.nn.functional as F
>>> F.relu(ember.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._elementwise import _write, assign_, tracks_grad
from .._tensor import Tensor, method, wrap

__all__ = [
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
    "hardtanh", "hardtanh_", "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid",
    "softsign", "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_", "glu", "prelu", "rrelu",
    "rrelu_", "sigmoid", "tanh", "softmin",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# ---- helpers ------------------------------------------------------------------------------------
def check_tensor(x, op: str, name: str = "input") -> Tensor:
    """Refuse non-tensors with torch's TypeError."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _float_input(x, op: str) -> Tensor:
    check_tensor(x, op)
    if not x._dtype.is_floating_point:
        raise dt.unsupported(op, x._dtype, "pass a floating tensor (e.g. x.float())")
    return x


def _no_bool(x, op: str) -> Tensor:
    check_tensor(x, op)
    if x._dtype is dt.bool:
        raise RuntimeError(f"{op}: Boolean inputs not supported; convert with x.float() or x.long()")
    return x


def _unary(op: str, x: Tensor, attrs: dict, composite) -> Tensor:
    """Run ``op`` on the backend when it has it, else its decomposition ``composite(x, **attrs)``."""
    b = x._device.backend
    if b.supports(op):
        return wrap(b.run(op, (x._h,), attrs), x._shape, x._dtype, x._device)
    return composite(x, **attrs)


def _source(x: Tensor) -> Tensor:
    """What an in-place activation reads: x itself, or a copy when autograd records the op and
    would otherwise find the input it saved overwritten."""
    return x.clone() if tracks_grad(x) else x


def _write_back(op: str, x: Tensor, attrs: dict, composite) -> Tensor:
    """The in-place form of backend activation ``op``: the backend's ``op_`` when it has one (autodiff
    keeps what the gradient needs), else compute out of place and assign (which autodiff records)."""
    b = x._device.backend
    if b.supports(op + "_") and not (x._base is not None and tracks_grad(x, x._base)):
        x._h = _write(b, op + "_", (x._h,), attrs)
    else:
        assign_(x, _unary(op, _source(x), attrs, composite))
    return x


def _inplace(x: Tensor, fn) -> Tensor:
    """Write ``fn(x)`` into x (the ``inplace=True`` form of a decomposed activation)."""
    assign_(x, fn(_source(x)))
    return x


# ---- decompositions (for backends without the fused op) -----------------------------------------
def _relu_c(x):
    return x.clamp_min(0)


def _leaky_c(x, negative_slope):
    return x.where(x > 0, x * negative_slope)


def _hardtanh_c(x, min_val, max_val):
    return x.clamp(min_val, max_val)


def _elu_c(x, alpha, scale, input_scale):
    neg = (x.clamp_max(0) * input_scale).expm1() * (alpha * scale)
    return (x * scale).where(x > 0, neg)


def _gelu_c(x, approximate):
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1)
    return x * 0.5 * ((x * math.sqrt(0.5)).erf() + 1)


def _silu_c(x):
    return x * x.sigmoid()


def _softplus_c(x, beta, threshold):
    xb = x * beta
    soft = (xb.clamp_max(threshold).exp()).log1p() / beta  # the clamp keeps the unused branch finite
    return x.where(xb > threshold, soft)


def _mish_c(x):
    return x * _softplus_c(x, 1.0, 20.0).tanh()


def _hardsigmoid_c(x):
    return (x + 3).clamp(0, 6) / 6


def _hardswish_c(x):
    return x * (x + 3).clamp(0, 6) / 6


def _logsigmoid_c(x):
    return x.clamp_max(0) - (-x.abs()).exp().log1p()


# ---- the relu family ------------------------------------------------------------------------------
@method
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0) elementwise (integers too).

    >>> ember.nn.functional.relu(ember.tensor([-2, 3]))
    tensor([0, 3])
    """
    if inplace:
        return relu_(input)
    x = _no_bool(input, "relu")
    return _unary("relu", x, {}, _relu_c)


@method
def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    x = _no_bool(input, "relu_")
    return _write_back("relu", x, {}, _relu_c)


def _hardtanh_args(x: Tensor, min_val, max_val, op: str) -> dict:
    if x._dtype is dt.bool:
        raise RuntimeError(f"{op}: Bool inputs not supported")
    min_val, max_val = float(min_val), float(max_val)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if x._dtype is dt.uint8 and min_val < 0:
        raise RuntimeError(f"{op}: cannot do hardtanh on an unsigned type with negative lower bound")
    return {"min_val": min_val, "max_val": max_val}


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val).

    >>> ember.nn.functional.hardtanh(ember.tensor([-3.0, 0.5, 3.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    if inplace:
        return hardtanh_(input, min_val, max_val)
    x = check_tensor(input, "hardtanh")
    return _unary("hardtanh", x, _hardtanh_args(x, min_val, max_val, "hardtanh"), _hardtanh_c)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place hardtanh."""
    x = check_tensor(input, "hardtanh_")
    return _write_back("hardtanh", x, _hardtanh_args(x, min_val, max_val, "hardtanh_"), _hardtanh_c)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x if x > 0 else negative_slope * x."""
    x = _float_input(input, "leaky_relu")
    attrs = {"negative_slope": float(negative_slope)}
    return (_write_back if inplace else _unary)("leaky_relu", x, attrs, _leaky_c)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, inplace=True)


def _rrelu_bounds(lower, upper) -> tuple[float, float]:
    lower, upper = float(lower), float(upper)
    if lower > upper:
        raise RuntimeError(f"rrelu: Lower bound should be less than or equal to the upper bound "
                           f"(lower={lower}, upper={upper})")
    return lower, upper


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky relu: negative inputs scaled by a slope drawn uniformly from [lower, upper]
    per element in training, by (lower + upper) / 2 otherwise. Draws use ember's generator."""
    x = _float_input(input, "rrelu")
    lower, upper = _rrelu_bounds(lower, upper)
    if inplace:
        return _inplace(x, lambda src: rrelu(src, lower, upper, training))
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    from .._random import _compute, _rand
    slope = (_rand(x._shape, _compute(x._dtype), x._device, None) * (upper - lower) + lower).to(x._dtype)
    return x.where(x >= 0, x * slope)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place rrelu."""
    return rrelu(input, lower, upper, training, inplace=True)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value.

    >>> ember.nn.functional.threshold(ember.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    x = check_tensor(input, "threshold")
    if x._dtype is dt.bool:
        raise dt.unsupported("threshold", x._dtype)
    if inplace:
        return _inplace(x, lambda src: _threshold(src, threshold, value))
    th, val = float(threshold), float(value)
    if not x._dtype.is_floating_point:  # integer tensors compare and fill with the numbers made integral
        th, val = math.trunc(th) if math.isfinite(th) else th, int(val)
    return x.masked_fill(x <= th, val)


_threshold = threshold


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold."""
    return _threshold(input, threshold, value, inplace=True)


# ---- the elu family --------------------------------------------------------------------------------
def _elu(x: Tensor, alpha: float, scale: float, input_scale: float, inplace: bool, op: str) -> Tensor:
    x = _float_input(x, op)
    attrs = {"alpha": float(alpha), "scale": float(scale), "input_scale": float(input_scale)}
    return (_write_back if inplace else _unary)("elu", x, attrs, _elu_c)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x if x > 0 else alpha * (exp(x) - 1)."""
    return _elu(input, alpha, 1.0, 1.0, inplace, "elu")


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place elu."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "selu")


def selu_(input: Tensor) -> Tensor:
    """In-place selu."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    alpha = float(alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(input, alpha, 1.0, 1.0 / alpha, inplace, "celu")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place celu."""
    return celu(input, alpha, inplace=True)


# ---- smooth activations ------------------------------------------------------------------------------
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Φ(x) (Φ the standard normal CDF), or its tanh approximation with ``approximate='tanh'``.

    >>> ember.nn.functional.gelu(ember.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = _float_input(input, "gelu")
    return _unary("gelu", x, {"approximate": approximate}, _gelu_c)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    x = _float_input(input, "silu")
    return (_write_back if inplace else _unary)("silu", x, {}, _silu_c)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    x = _float_input(input, "mish")
    return (_write_back if inplace else _unary)("mish", x, {}, _mish_c)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear (x) where beta x > threshold."""
    x = _float_input(input, "softplus")
    return _unary("softplus", x, {"beta": float(beta), "threshold": float(threshold)}, _softplus_c)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1), as clamp(x + 3, 0, 6) / 6."""
    x = _float_input(input, "hardsigmoid")
    return (_write_back if inplace else _unary)("hardsigmoid", x, {}, _hardsigmoid_c)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * hardsigmoid(x)."""
    x = _float_input(input, "hardswish")
    return (_write_back if inplace else _unary)("hardswish", x, {}, _hardswish_c)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), without overflow for large |x|."""
    x = _float_input(input, "logsigmoid")
    return _unary("logsigmoid", x, {}, _logsigmoid_c)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) (integers give the default float dtype)."""
    x = check_tensor(input, "softsign")
    if x._dtype is dt.bool:
        raise dt.unsupported("softsign", x._dtype)
    return x / (x.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    x = check_tensor(input, "tanhshrink")
    if x._dtype is dt.bool:
        raise RuntimeError("tanhshrink: subtraction with a bool tensor is not supported; use x.float()")
    return x - x.tanh()


def _lambd(x: Tensor, lambd, op: str) -> float:
    lambd = float(lambd)
    if not lambd >= 0:
        raise RuntimeError(f"{op}: lambda must be in range [0, {dt.finfo(x._dtype).max}] for input dtype "
                           f"{x._dtype.name}, but found {lambd}")
    return lambd


@method
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where |x| <= lambd, else x."""
    x = _float_input(input, "hardshrink")
    lambd = float(lambd)
    return x.masked_fill((x >= -lambd).logical_and(x <= lambd), 0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    x = _float_input(input, "softshrink")
    lambd = _lambd(x, lambd, "softshrink")
    return x - x.clamp(-lambd, lambd)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) where a, b are the halves of ``input`` along ``dim``.

    >>> ember.nn.functional.glu(ember.tensor([1.0, 0.0])).tolist()
    [0.5]
    """
    from .._shape import norm_dim
    x = _float_input(input, "glu")
    if not x.ndim:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = norm_dim(dim, x.ndim, "glu")
    n = x._shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = x.narrow(d, 0, n // 2), x.narrow(d, n // 2, n // 2)
    return a * b.sigmoid()


@method
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x if x > 0 else weight * x, weight per channel (dim 1) or a single value."""
    x = _float_input(input, "prelu")
    check_tensor(weight, "prelu", "weight")
    if weight._dtype is not x._dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {x._dtype.name} and {weight._dtype.name}")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    channels = x._shape[1] if x.ndim >= 2 else 1
    n = weight.numel()
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                           f"and channel size = {channels}.")
    # per-channel weights line up with dim 1; a single weight broadcasts as a 0-d tensor
    w = weight.reshape((n,) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and n != 1 else weight.reshape(())
    return x.where(x > 0, w * x)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return check_tensor(input, "sigmoid").sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return check_tensor(input, "tanh").tanh()


def _implicit_dim(ndim: int, op: str) -> int:
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along dim."""
    x = check_tensor(input, "softmin")
    if dim is None:
        dim = _implicit_dim(x.ndim, "softmin")
    if dtype is not None:
        x = x.to(dt.as_dtype(dtype))
    return (-x).softmax(dim)
