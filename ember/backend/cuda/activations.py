"""Activation functions on the CUDA backend (array module ``xp``), with the reference's formulas so
results and autodiff's rules (which are written for these ops) match the CPU. 16-bit floats compute
in float32 and round once."""

from __future__ import annotations

import math

import numpy as np

from . import casts, kernels
from ._util import LOW

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def build(xp, special) -> dict:
    def act(fn):
        def run(x, **attrs):
            if x.dtype in LOW:
                return fn(x.astype(np.float32), **attrs).astype(x.dtype)
            return fn(x, **attrs)
        return run

    def c(v, x):
        return x.dtype.type(v)

    def _zero(x):
        # a scalar argument of the kernel, not a 0-d array (whose allocation and fill is one more launch)
        return xp.zeros((), x.dtype) if x.dtype in LOW else x.dtype.type(0)

    gpu = xp is not np

    def _relu(x):
        return xp.maximum(x, _zero(x))

    def _relu_(x):
        xp.maximum(x, _zero(x), out=x)
        return x

    def _relu_backward(y, g):
        kern = kernels.elementwise("relu_backward") if gpu and y.dtype in (np.float32, np.float64) else None
        if kern is not None and g.dtype == y.dtype:
            return kern(y, g)
        return xp.where(y <= _zero(y), _zero(g), g)

    def _leaky_relu(x, negative_slope):
        y = x * c(negative_slope, x)
        if 0.0 <= negative_slope <= 1.0:  # the larger of x and slope * x (NaN propagates)
            return xp.maximum(x, y)
        return xp.where(x > 0, x, y)

    def _hardtanh(x, min_val, max_val):
        # clamp semantics in x's dtype: NaN propagates, the max wins when min_val > max_val
        return xp.minimum(xp.maximum(x, c(min_val, x)), c(max_val, x))

    def _hardtanh_(x, min_val, max_val):
        xp.maximum(x, c(min_val, x), out=x)
        xp.minimum(x, c(max_val, x), out=x)
        return x

    def _elu(x, alpha, scale, input_scale):
        zero = xp.zeros((), x.dtype)
        neg = xp.expm1(xp.minimum(x, zero) * c(input_scale, x)) * (c(alpha, x) * c(scale, x))
        return neg + xp.maximum(x, zero) * c(scale, x)

    def _one_pass(which, *arrays):
        """``which``'s ElementwiseKernel on ``arrays`` (float math for 16-bit and float32 inputs, double
        for float64), or None where it can't run (the caller takes the ufunc path)."""
        dt = arrays[0].dtype
        if not gpu or (dt not in LOW and dt not in (np.float32, np.float64)) or any(a.dtype != dt for a in arrays):
            return None
        if dt in LOW:  # 16 bytes a thread where the layout allows
            r = casts.map16(which, kernels.spec(which), *arrays)
            if r is not None:
                return r
        return kernels.try_elementwise(which, *arrays, acc="double" if dt == np.float64 else "float")

    def _gelu_fast(x, approximate):
        y = _one_pass("gelu_tanh" if approximate == "tanh" else "gelu_erf", x)
        return y if y is not None else act(_gelu)(x, approximate=approximate)

    def _gelu_backward(x, g, approximate):
        """grad * gelu'(x) in one pass (the autodiff rule's composite otherwise: ~16 launches)."""
        o = _one_pass("gelu_tanh_backward" if approximate == "tanh" else "gelu_erf_backward", x, g)
        if o is not None:
            return o
        dt = np.result_type(x.dtype, g.dtype)
        v = x.astype(np.float64 if dt == np.float64 else np.float32)
        if approximate == "tanh":
            t = xp.tanh(c(_GELU_BETA, v) * (v + c(_GELU_KAPPA, v) * v * v * v))
            d = c(0.5, v) * (c(1.0, v) + t) + c(0.5 * _GELU_BETA, v) * v * (c(1.0, v) - t * t) * \
                (c(1.0, v) + c(3.0 * _GELU_KAPPA, v) * v * v)
        else:
            d = c(0.5, v) * special.erfc(-v * c(_SQRT1_2, v)) + v * xp.exp(c(-0.5, v) * v * v) * c(_INV_SQRT_2PI, v)
        return (g.astype(v.dtype, copy=False) * d).astype(dt, copy=False)

    def _gelu(x, approximate):
        if approximate == "tanh":
            inner = (x + x * x * x * c(_GELU_KAPPA, x)) * c(_GELU_BETA, x)
            return x * c(0.5, x) * (xp.tanh(inner) + c(1.0, x))
        # x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, accurate in the lower tail too
        return x * (special.erfc(-x * c(_SQRT1_2, x)) * c(0.5, x)).astype(x.dtype, copy=False)

    def _silu(x):
        return x / (xp.exp(-x) + c(1.0, x))

    def _mish(x):
        return x * xp.tanh(xp.log1p(xp.exp(x)))

    def _softplus(x, beta, threshold):
        xb = x * c(beta, x)
        soft = xp.log1p(xp.exp(xb)) / c(beta, x)
        return xp.where(xb > c(threshold, x), x, soft)

    def _hardsigmoid(x):
        return xp.minimum(xp.maximum(x + c(3.0, x), c(0.0, x)), c(6.0, x)) / c(6.0, x)

    def _hardswish(x):
        return xp.minimum(xp.maximum(x + c(3.0, x), c(0.0, x)), c(6.0, x)) * x / c(6.0, x)

    def _logsigmoid(x):
        return xp.minimum(x, c(0.0, x)) - xp.log1p(xp.exp(-xp.abs(x)))

    ops = {"relu": _relu, "relu_": _relu_, "relu_backward": _relu_backward, "hardtanh": act(_hardtanh),
           "gelu_backward": _gelu_backward,
           "hardtanh_": _hardtanh_,
           "leaky_relu": act(_leaky_relu), "elu": act(_elu), "gelu": _gelu_fast, "silu": act(_silu),
           "mish": act(_mish), "softplus": act(_softplus), "hardsigmoid": act(_hardsigmoid),
           "hardswish": act(_hardswish), "logsigmoid": act(_logsigmoid)}

    def into(fn):
        def run(x, **attrs):
            xp.copyto(x, fn(x, **attrs))
            return x
        return run

    for name in ("leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid"):
        ops[name + "_"] = into(ops[name])
    return ops
