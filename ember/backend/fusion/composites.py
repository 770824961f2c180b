"""Composite ops (softmax, layer norm, activations) recorded as fusible primitives.

The frontend asks the backend for these ops whole; Fusion keeps claiming them (so Autodiff
records them with their own gradient rules, exactly as on the unfused stack) and computes their
forward values from recorded primitives, which then fuse with their neighbours. Only float32 and
float64 inputs take this path: other dtypes run on the inner backend's implementation.
"""

from __future__ import annotations

import math

from .codegen import ctype
from .graph import FH

_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715
_SQRT1_2 = math.sqrt(0.5)


def _float(x) -> bool:
    return x.__class__ is FH and ctype(x.dtype) in ("f32", "f64")


def forward(fu, op: str, inputs: tuple, attrs: dict):
    """The handle(s) of composite ``op`` built from recorded primitives, or None (not covered)."""
    fn = _TABLE.get(op)
    if fn is None or not _float(inputs[0]):
        return None
    return fn(fu, inputs, attrs)


def _e(fu, op, *args, **attrs):
    r = fu._elementwise(op, args, attrs)
    if r is None:
        raise _Unfusible
    return r


def _red(fu, op, x, **attrs):
    r = fu._reduce(op, (x,), attrs)
    if r is None:
        raise _Unfusible
    return r


class _Unfusible(Exception):
    pass


def _relu(fu, inputs, attrs):
    return _e(fu, "maximum", inputs[0], 0.0)  # NaN propagates, as torch.relu


def _silu(fu, inputs, attrs):
    x = inputs[0]
    return _e(fu, "mul", x, _e(fu, "sigmoid", x))


def _gelu(fu, inputs, attrs):
    x = inputs[0]
    if attrs.get("approximate", "none") == "tanh":
        inner = _e(fu, "mul", _e(fu, "add", x, _e(fu, "mul", _e(fu, "mul", _e(fu, "mul", x, x), x), _GELU_KAPPA)),
                   _GELU_BETA)
        return _e(fu, "mul", _e(fu, "mul", x, 0.5), _e(fu, "add", _e(fu, "tanh", inner), 1.0))
    return _e(fu, "mul", _e(fu, "mul", x, 0.5), _e(fu, "add", _e(fu, "erf", _e(fu, "mul", x, _SQRT1_2)), 1.0))


def _dims(attrs, x):
    d = attrs["dim"]
    return (d % len(x.shape),) if isinstance(d, int) else tuple(d)


def _shifted(fu, x, dims):
    """x - max over dims, the max of an all -inf row replaced by 0 (its result is then NaN as in
    PyTorch, not a NaN-producing inf - inf for the rows that have a finite max)."""
    m = _red(fu, "amax", x, dim=dims, keepdim=True)
    m = _e(fu, "where", _e(fu, "eq", m, float("-inf")), 0.0, m)
    return _e(fu, "sub", x, m)


def _softmax(fu, inputs, attrs):
    x = inputs[0]
    if not x.shape:
        return None
    dims = _dims(attrs, x)
    e = _e(fu, "exp", _shifted(fu, x, dims))
    return _e(fu, "div", e, _red(fu, "sum", e, dim=dims, keepdim=True, dtype=x.dtype))


def _log_softmax(fu, inputs, attrs):
    x = inputs[0]
    if not x.shape:
        return None
    dims = _dims(attrs, x)
    s = _shifted(fu, x, dims)
    lse = _e(fu, "log", _red(fu, "sum", _e(fu, "exp", s), dim=dims, keepdim=True, dtype=x.dtype))
    return _e(fu, "sub", s, lse)


def _norm_affine(fu, inputs, attrs):
    """(y, mean, var) of layer/group norm: biased var over ``dim`` (kept)."""
    x, w, b = inputs
    dims, eps = tuple(attrs["dim"]), float(attrs["eps"])
    mean = _red(fu, "mean", x, dim=dims, keepdim=True, dtype=x.dtype)
    # the biased variance from this mean (what var(correction=0) computes, two-pass): a var reduction
    # would find its own mean again, a third block-wide reduction in the row kernel
    dev = _e(fu, "sub", x, mean)
    var = _red(fu, "mean", _e(fu, "mul", dev, dev), dim=dims, keepdim=True, dtype=x.dtype)
    y = _e(fu, "mul", dev, _e(fu, "rsqrt", _e(fu, "add", var, eps)))
    if w is not None:
        y = _e(fu, "mul", y, w)
    if b is not None:
        y = _e(fu, "add", y, b)
    return y, mean, var


def _rms_norm(fu, inputs, attrs):
    x, w = inputs
    dims, eps = tuple(attrs["dim"]), float(attrs["eps"])
    ms = _red(fu, "mean", _e(fu, "mul", x, x), dim=dims, keepdim=True, dtype=x.dtype)
    y = _e(fu, "mul", x, _e(fu, "rsqrt", _e(fu, "add", ms, eps)))
    return y if w is None else _e(fu, "mul", y, w)


def _lerp(fu, inputs, attrs):
    """PyTorch's formula: exact at weight 0 and 1, monotone in weight."""
    start, end, w = inputs
    diff = _e(fu, "sub", end, start)
    if w.__class__ is FH:
        lo = _e(fu, "add", start, _e(fu, "mul", w, diff))
        hi = _e(fu, "sub", end, _e(fu, "mul", diff, _e(fu, "sub", 1.0, w)))
        return _e(fu, "where", _e(fu, "lt", _e(fu, "abs", w), 0.5), lo, hi)
    near_start = abs(w) < 0.5
    fu._note(("lerp", near_start))  # the formula depends on the weight's value: part of the structure
    if near_start:
        return _e(fu, "add", start, _e(fu, "mul", diff, w))
    return _e(fu, "sub", end, _e(fu, "mul", diff, 1.0 - w))


_TABLE = {"lerp": _lerp, "relu": _relu, "silu": _silu, "gelu": _gelu, "softmax": _softmax, "log_softmax": _log_softmax,
          "norm_affine": _norm_affine, "rms_norm": _rms_norm}
COVERED = frozenset(_TABLE)


def run(fu, op, inputs, attrs):
    """:func:`forward`, with any unfusible step (a dtype mix, say) reported as None."""
    try:
        return forward(fu, op, inputs, attrs)
    except _Unfusible:
        return None
