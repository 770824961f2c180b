"""nn activations of the Wgpu backend as single elementwise kernels (the frontend would otherwise build
them from several ops). float32/float16/bfloat16 only; integer inputs take the host path, float64
too, like every float64 op."""

from __future__ import annotations

from . import dtypes as T
from .elementwise import HELPERS as _EH
from .elementwise import _new
from .kernels import Scalar, ew

HELPERS = _EH + """
fn _erfc_pos(a: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.5 * a);
  return t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
}
fn _phi(x: f32) -> f32 {
  let z = x * 0.7071067811865476;
  if (abs(z) < 0.5) { return 0.5 + 0.5 * _erf(z); }
  if (z > 0.0) { return 1.0 - 0.5 * _erfc_pos(z); }
  return 0.5 * _erfc_pos(-z);
}
fn _softplus0(x: f32) -> f32 {
  if (_isnan(x)) { return x; }
  return max(x, 0.0) + _log1p(exp(-abs(x)));
}
"""

_EXPR = {
    "leaky_relu": ("select(v0 * v1, v0, v0 > 0.0)", ("negative_slope",)),
    "elu": ("select(v1 * v2 * _expm1(select(0.0, v0, v0 <= 0.0 || _isnan(v0)) * v3), v0 * v2, v0 > 0.0)",
            ("alpha", "scale", "input_scale")),
    "silu": ("(v0 * _sigmoid(v0))", ()),
    "mish": ("(v0 * _tanh(_softplus0(v0)))", ()),
    "softplus": ("select(_softplus0(v0 * v1) / v1, v0, v0 * v1 > v2)", ("beta", "threshold")),
    "hardsigmoid": ("(_min(_max(v0 + 3.0, 0.0), 6.0) / 6.0)", ()),
    "hardswish": ("(v0 * _min(_max(v0 + 3.0, 0.0), 6.0) / 6.0)", ()),
    "logsigmoid": ("(_min(v0, 0.0) - _log1p(exp(-abs(v0))))", ()),
}


def _act(op):
    expr, names = _EXPR[op]

    def run(be, x, **attrs):
        if T.st(x.dtype) != "f32":
            return NotImplemented
        ops = [x] + [Scalar(float(attrs[n]), "f32") for n in names]
        return ew(be.rt, T.fix(x.dtype, expr), ops, _new(be.rt, x.shape, x.dtype), HELPERS)
    run.__name__ = op
    return run


def gelu(be, x, approximate):
    if T.st(x.dtype) != "f32":
        return NotImplemented
    if approximate == "tanh":
        expr = "(0.5 * v0 * (1.0 + _tanh(0.7978845608028654 * (v0 + 0.044715 * v0 * v0 * v0))))"
    else:
        expr = "(v0 * _phi(v0))"
    return ew(be.rt, T.fix(x.dtype, expr), [x], _new(be.rt, x.shape, x.dtype), HELPERS)


def logaddexp(be, x, y):
    from .elementwise import run_binary  # noqa: F401 - same operand handling as the binary ops
    hs = [v for v in (x, y) if hasattr(v, "dtype")]
    if not hs or T.st(hs[0].dtype) != "f32" or any(h.dtype is not hs[0].dtype for h in hs):
        return NotImplemented
    dtype = hs[0].dtype
    from .elementwise import _bshape
    ops = [v if hasattr(v, "dtype") else Scalar(float(v), "f32") for v in (x, y)]
    expr = ("select(select(max(v0, v1) + _log1p(exp(-abs(v0 - v1))), v0, v0 == v1 && _isinf(v0)), "
            "v0 + v1, _isnan(v0) || _isnan(v1))")
    shape = _bshape(*(h.shape for h in hs))
    return ew(be.rt, T.fix(dtype, expr), ops, _new(be.rt, shape, dtype), HELPERS)


OPS = {op: _act(op) for op in _EXPR}
OPS.update({"gelu": gelu, "logaddexp": logaddexp})


def norm_affine(be, x, weight, bias, dim, eps):
    """Layer/group/batch norm's forward in float32 (half inputs too: their statistics would lose
    the digits that matter in half precision), from the reduction and elementwise kernels."""
    from ... import _dtype as D
    if T.st(x.dtype) != "f32":
        return NotImplemented
    dims = tuple(dim)
    stat_shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    if x.numel == 0:
        nan = be.run("full", (), {"shape": stat_shape, "value": float("nan"), "dtype": x.dtype})
        return _new(be.rt, x.shape, x.dtype), nan, be.run("copy", (nan,), {})
    f32 = D.float32

    def up(h):
        return h if h is None or h.dtype is f32 else be.run("cast", (h, f32), {})

    xf = up(x)
    mean = be.run("mean", (xf,), {"dim": dims, "keepdim": True, "dtype": f32})
    d = be.run("sub", (xf, mean), {})
    var = be.run("mean", (be.run("mul", (d, d), {}),), {"dim": dims, "keepdim": True, "dtype": f32})
    y = be.run("mul", (d, be.run("rsqrt", (be.run("add", (var, float(eps)), {}),), {})), {})
    if weight is not None:
        y = be.run("mul", (y, up(weight)), {})
    if bias is not None:
        y = be.run("add", (y, up(bias)), {})
    if x.dtype is not f32:
        return tuple(be.run("cast", (h, x.dtype), {}) for h in (y, mean, var))
    return y, mean, var


OPS["norm_affine"] = norm_affine
