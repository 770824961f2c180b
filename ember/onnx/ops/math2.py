"""ONNX operators: reductions, ArgMax/ArgMin, CumSum/CumProd, Softmax family, MatMul, Gemm,
MatMulInteger, Einsum, Det (see _registry.py for the conventions).

Reductions follow Reduce*-18 (ReduceSum-13): ``axes`` is an optional int64 input, an empty or
omitted ``axes`` reduces everything unless ``noop_with_empty_axes=1`` (then the op's elementwise
part alone is applied: ``ReduceSumSquare`` squares, ``ReduceLogSum`` takes the log), and reducing
an empty axis gives the reduction's identity (0 for sums, 1 for products, -inf for max...).

Softmax, LogSoftmax and Hardmax before opset 13 flattened the input to 2-D around ``axis``
(default 1) and normalised over the whole second half. An upgrader cannot express that as an
attribute of the newer op, so it sets the private keyword ``_coerce_2d=1`` on the node, which these
functions accept: the generated code then reads ``ops.softmax(x, axis=1, _coerce_2d=1)``.

Example::

    >>> ops.reduce_sum(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor([1]), keepdims=0)
    tensor([3., 7.])
"""

from __future__ import annotations

import builtins
import math as _math

import numpy as np

import ember
from ember import Tensor

from ._registry import OnnxOpError, op, upgrader

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1", "reduce_l2",
    "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "argmax", "argmin", "cumsum",
    "cumprod", "softmax", "log_softmax", "hardmax", "matmul", "matmul_integer", "gemm", "einsum", "det",
]


def _as(t: Tensor, dtype) -> Tensor:
    return t if t.dtype is dtype else t.to(dtype)


def _ints(t: Tensor | None, what: str, op_name: str) -> list[int] | None:
    """An int64 tensor input (axes, axis) as Python ints: a host read, as these are shape data."""
    if t is None:
        return None
    if t.dtype.is_floating_point or t.dtype is ember.bool:
        raise OnnxOpError(f"{op_name}: '{what}' must be an integer tensor, got {t.dtype.name}")
    v = t.tolist()
    return [int(v)] if not isinstance(v, list) else [int(a) for a in v]


def _norm_axis(a: int, ndim: int, op_name: str) -> int:
    if not -ndim <= a < builtins.max(ndim, 1):
        raise OnnxOpError(f"{op_name}: axis {a} is out of range for a tensor of rank {ndim}")
    return a % ndim if ndim else 0


# ---------------------------------------------------------------- reductions

def _identity(kind: str, dtype) -> float | int | bool:
    if kind in ("max", "min"):
        lowest = kind == "max"
        if dtype is ember.bool:
            return not lowest
        if dtype.is_floating_point:
            return -_math.inf if lowest else _math.inf
        info = ember.iinfo(dtype)
        return info.min if lowest else info.max
    return {"sum": 0, "sumsq": 0, "l1": 0, "l2": 0, "prod": 1, "mean": _math.nan,
            "logsum": -_math.inf, "logsumexp": -_math.inf}[kind]


def _reduce_core(kind: str, x: Tensor, dims: tuple[int, ...], keep: bool) -> Tensor:
    """Reduce non-empty ``dims`` (all of size > 0) of ``x``."""
    dt = x.dtype
    if kind in ("max", "min"):
        if dt is ember.bool:  # ember has no max of bools: any/all are the same thing
            r = x
            for d in sorted(dims, reverse=True):
                r = (ember.any if kind == "max" else ember.all)(r, dim=d, keepdim=keep)
            return r
        return (ember.amax if kind == "max" else ember.amin)(x, dim=dims, keepdim=keep)
    if dt is ember.bool:
        raise OnnxOpError(f"Reduce ({kind}): bool input is not supported")
    if kind == "sum":
        return _as(ember.sum(x, dim=dims, keepdim=keep), dt)
    if kind == "sumsq":
        return _as(ember.sum(x * x, dim=dims, keepdim=keep), dt)
    if kind == "l1":
        return _as(ember.sum(ember.abs(x), dim=dims, keepdim=keep), dt)
    if kind == "prod":
        r = x
        for d in sorted(dims, reverse=True):  # ember.prod takes one dim at a time
            r = ember.prod(r, dim=d, keepdim=keep)
        return _as(r, dt)
    xf = x if dt.is_floating_point else x.to(ember.float64)  # integer inputs: float math, cast back
    if kind == "mean":
        r = ember.mean(xf, dim=dims, keepdim=keep)
    elif kind == "l2":
        r = ember.sqrt(ember.sum(xf * xf, dim=dims, keepdim=keep))
    elif kind == "logsum":
        r = ember.log(ember.sum(xf, dim=dims, keepdim=keep))
    elif kind == "logsumexp":
        r = ember.logsumexp(xf, dim=dims, keepdim=keep)
    else:  # pragma: no cover - the kinds are fixed below
        raise AssertionError(kind)
    return _as(r, dt)


def _reduce(op_name: str, kind: str, data: Tensor, axes: Tensor | None, keepdims: int,
            noop_with_empty_axes: int) -> Tensor:
    nd = data.ndim
    ax = _ints(axes, "axes", op_name)
    keep = bool(keepdims)
    if not ax:
        if noop_with_empty_axes:
            # only the elementwise part of the op: reduce a new trailing axis of size 1
            return _reduce_core(kind, data.unsqueeze(-1), (nd,), False)
        dims = tuple(range(nd))
    else:
        dims = tuple(sorted({_norm_axis(a, nd, op_name) for a in ax}))
    if not dims:  # a 0-d input reduced over "all" of its no dims: the elementwise part
        return _reduce_core(kind, data.unsqueeze(-1), (0,), False)
    if any(data.shape[d] == 0 for d in dims):
        shape = [1 if d in dims else n for d, n in enumerate(data.shape)] if keep else \
            [n for d, n in enumerate(data.shape) if d not in dims]
        return ember.full(tuple(shape), _identity(kind, data.dtype), dtype=data.dtype, device=data.device)
    return _reduce_core(kind, data, dims, keep)


def _reducer(onnx_name: str, kind: str, doc: str):
    def f(data: Tensor, axes: Tensor | None = None, *, keepdims: int = 1,
          noop_with_empty_axes: int = 0) -> Tensor:
        return _reduce(onnx_name, kind, data, axes, keepdims, noop_with_empty_axes)
    f.__doc__ = doc
    return f


reduce_sum = op("ReduceSum")(_reducer("ReduceSum", "sum", "Sum over ``axes``."))
reduce_mean = op("ReduceMean")(_reducer("ReduceMean", "mean", "Mean over ``axes``."))
reduce_max = op("ReduceMax")(_reducer("ReduceMax", "max", "Maximum over ``axes`` (-inf when empty)."))
reduce_min = op("ReduceMin")(_reducer("ReduceMin", "min", "Minimum over ``axes`` (+inf when empty)."))
reduce_prod = op("ReduceProd")(_reducer("ReduceProd", "prod", "Product over ``axes``."))
reduce_l1 = op("ReduceL1")(_reducer("ReduceL1", "l1", "Sum of absolute values over ``axes``."))
reduce_l2 = op("ReduceL2")(_reducer("ReduceL2", "l2", "Euclidean norm over ``axes``."))
reduce_log_sum = op("ReduceLogSum")(_reducer("ReduceLogSum", "logsum", "log(sum) over ``axes``."))
reduce_log_sum_exp = op("ReduceLogSumExp")(_reducer("ReduceLogSumExp", "logsumexp",
                                                    "log(sum(exp)) over ``axes``, computed stably."))
reduce_sum_square = op("ReduceSumSquare")(_reducer("ReduceSumSquare", "sumsq", "Sum of squares over ``axes``."))
for _name in __all__[:10]:
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name


def _axes_attr_to_input(node: dict) -> dict:
    # before ReduceSum-13 / Reduce*-18, axes was an attribute; now it is an optional int64 input
    axes = node["attrs"].pop("axes", None)
    if axes is not None:
        name = f"{node['outputs'][0]}__axes"
        node.setdefault("new_constants", {})[name] = np.asarray(list(axes), dtype=np.int64)
        node["inputs"] = [node["inputs"][0], name]
    return node


upgrader("ReduceSum", below=13)(_axes_attr_to_input)
for _n in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"):
    upgrader(_n, below=18)(_axes_attr_to_input)


def _arg(op_name: str, fn, data: Tensor, axis: int, keepdims: int, select_last_index: int) -> Tensor:
    a = _norm_axis(axis, data.ndim, op_name)
    if data.ndim == 0:
        data = data.reshape(1)
    if data.shape[a] == 0:
        raise OnnxOpError(f"{op_name}: axis {axis} of shape {tuple(data.shape)} is empty")
    x = data.to(ember.uint8) if data.dtype is ember.bool else data
    if select_last_index:  # the last of equal extremes: search the reversed axis
        r = (x.shape[a] - 1) - fn(ember.flip(x, (a,)), dim=a, keepdim=bool(keepdims))
    else:
        r = fn(x, dim=a, keepdim=bool(keepdims))
    return _as(r, ember.int64)


@op("ArgMax")
def argmax(data: Tensor, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> Tensor:
    """Index (int64) of the largest element along ``axis``; ties give the first (or last) index."""
    return _arg("ArgMax", ember.argmax, data, axis, keepdims, select_last_index)


@op("ArgMin")
def argmin(data: Tensor, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> Tensor:
    """Index (int64) of the smallest element along ``axis``; ties give the first (or last) index."""
    return _arg("ArgMin", ember.argmin, data, axis, keepdims, select_last_index)


# ---------------------------------------------------------------- cumulative

def _cum(op_name: str, fn, ident: int, x: Tensor, axis: Tensor, exclusive: int, reverse: int) -> Tensor:
    ax = _ints(axis, "axis", op_name)
    if ax is None or len(ax) != 1:
        raise OnnxOpError(f"{op_name}: 'axis' must hold one value")
    if x.dtype is ember.bool:
        raise OnnxOpError(f"{op_name}: bool input is not supported")
    if x.ndim == 0:
        raise OnnxOpError(f"{op_name}: input must have rank >= 1")
    a = _norm_axis(ax[0], x.ndim, op_name)
    y = ember.flip(x, (a,)) if reverse else x
    if exclusive:  # shift by one along the axis, filling with the identity (exact, unlike c - x)
        n = y.shape[a]
        pad_shape = list(y.shape)
        pad_shape[a] = 1
        fill = ember.full(tuple(pad_shape), ident, dtype=y.dtype, device=y.device)
        y = ember.cat([fill, ember.narrow(y, a, 0, builtins.max(n - 1, 0))], dim=a)
    r = _as(fn(y, a), x.dtype)
    return ember.flip(r, (a,)) if reverse else r


@op("CumSum")
def cumsum(x: Tensor, axis: Tensor, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """Running sum along ``axis`` (a 0-d or 1-element int tensor)."""
    return _cum("CumSum", ember.cumsum, 0, x, axis, exclusive, reverse)


@op("CumProd", since=26)
def cumprod(x: Tensor, axis: Tensor, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """Running product along ``axis`` (a 0-d or 1-element int tensor)."""
    return _cum("CumProd", ember.cumprod, 1, x, axis, exclusive, reverse)


# ---------------------------------------------------------------- softmax family

def _softmax_like(op_name: str, fn, x: Tensor, axis: int, coerce_2d: int) -> Tensor:
    if not x.dtype.is_floating_point:
        raise OnnxOpError(f"{op_name}: input of type {x.dtype.name} is not supported (floating types only)")
    if x.ndim == 0:
        raise OnnxOpError(f"{op_name}: input must have rank >= 1")
    a = _norm_axis(axis, x.ndim, op_name)
    if coerce_2d and a != x.ndim - 1:
        # opset < 13: normalise over the flattened trailing block [axis:] as one row
        lead = tuple(x.shape[:a])
        flat = x.reshape(lead + (-1,)) if x.numel() else x.reshape(lead + (_math.prod(x.shape[a:]),))
        return fn(flat, a).reshape(tuple(x.shape))
    return fn(x, a)


def _hardmax_fn(x: Tensor, a: int) -> Tensor:
    if x.numel() == 0:
        return x + 0
    idx = ember.argmax(x, dim=a, keepdim=True)
    return ember.zeros_like(x).scatter(a, idx, 1.0)


def _softmax_fn(x: Tensor, a: int) -> Tensor:
    if x.dtype.itemsize == 2 and x.numel():
        # float16/bfloat16: round after each step like ONNX's reference (ember's fused softmax
        # keeps float32 internally, which lands one half-precision ulp away from the node suite)
        e = ember.exp(x - ember.amax(x, dim=a, keepdim=True))
        return e / ember.sum(e, dim=a, keepdim=True)
    return ember.softmax(x, a)


def _log_softmax_fn(x: Tensor, a: int) -> Tensor:
    if x.dtype.itemsize == 2 and x.numel():  # see _softmax_fn
        s = x - ember.amax(x, dim=a, keepdim=True)
        return s - ember.log(ember.sum(ember.exp(s), dim=a, keepdim=True))
    return ember.log_softmax(x, a)


@op("Softmax")
def softmax(x: Tensor, *, axis: int = -1, _coerce_2d: int = 0) -> Tensor:
    """exp(X) / sum(exp(X)) along ``axis`` (``_coerce_2d``: the opset < 13 semantics, see module doc)."""
    return _softmax_like("Softmax", _softmax_fn, x, axis, _coerce_2d)


@op("LogSoftmax")
def log_softmax(x: Tensor, *, axis: int = -1, _coerce_2d: int = 0) -> Tensor:
    """log(Softmax(X)) along ``axis``, computed stably."""
    return _softmax_like("LogSoftmax", _log_softmax_fn, x, axis, _coerce_2d)


@op("Hardmax")
def hardmax(x: Tensor, *, axis: int = -1, _coerce_2d: int = 0) -> Tensor:
    """1 at the first maximum along ``axis``, 0 elsewhere (not differentiable)."""
    return _softmax_like("Hardmax", _hardmax_fn, x, axis, _coerce_2d)


def _legacy_softmax(node: dict) -> dict:
    # opset < 13: default axis 1 and coerce-to-2D semantics (see the module docstring)
    node["attrs"].setdefault("axis", 1)
    node["attrs"]["_coerce_2d"] = 1
    return node


for _n in ("Softmax", "LogSoftmax", "Hardmax"):
    upgrader(_n, below=13)(_legacy_softmax)


# ---------------------------------------------------------------- matrix products

@op("MatMul")
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with numpy.matmul semantics (1-D operands, batch broadcasting)."""
    if a.dtype is ember.bool:
        raise OnnxOpError("MatMul: bool inputs are not supported")
    return _as(ember.matmul(a, b), a.dtype)


@op("MatMulInteger", since=10)
def matmul_integer(a: Tensor, b: Tensor, a_zero_point: Tensor | None = None,
                   b_zero_point: Tensor | None = None) -> Tensor:
    """(A - a_zero_point) @ (B - b_zero_point) of 8-bit integers, as int32 (not differentiable).
    ``a_zero_point`` is a scalar or one per row of A; ``b_zero_point`` a scalar or one per column of B."""
    for name, t in (("A", a), ("B", b)):
        if t.dtype not in (ember.uint8, ember.int8):
            raise OnnxOpError(f"MatMulInteger: {name} of type {t.dtype.name} is not supported (uint8/int8)")
    a32, b32 = a.to(ember.int32), b.to(ember.int32)
    if a_zero_point is not None:
        zp = a_zero_point.to(ember.int32)
        if zp.numel() > 1:  # per row: broadcast along the rows of A's last two dims
            zp = zp.reshape(tuple(zp.shape) + (1,))
        a32 = a32 - zp
    if b_zero_point is not None:
        b32 = b32 - b_zero_point.to(ember.int32)
    return _as(ember.matmul(a32, b32), ember.int32)


@op("Gemm")
def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, *, alpha: float = 1.0, beta: float = 1.0,
         transA: int = 0, transB: int = 0) -> Tensor:  # noqa: N803 - ONNX attribute names
    """alpha * A' @ B' + beta * C, where A' and B' are optionally transposed and C broadcasts."""
    if a.ndim != 2 or b.ndim != 2:
        raise OnnxOpError(f"Gemm: A and B must be 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype is ember.bool:
        raise OnnxOpError("Gemm: bool inputs are not supported")
    aa = a.T if transA else a
    bb = b.T if transB else b
    y = ember.matmul(aa, bb)
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        y = y + (c * beta if beta != 1.0 else c)
    return _as(y, a.dtype)


@upgrader("Gemm", below=7)
def _gemm_drop_broadcast(node: dict) -> dict:
    node["attrs"].pop("broadcast", None)  # Gemm-6's explicit switch; C always broadcasts now
    return node


@op("Einsum", since=12)
def einsum(*inputs: Tensor, equation: str) -> Tensor:
    """Einstein summation over ``inputs`` given by ``equation`` (numpy's notation, ``...`` allowed)."""
    if not inputs:
        raise OnnxOpError("Einsum: needs at least one input")
    eq = equation.replace(" ", "")
    r = ember.einsum(eq, *inputs)
    return _as(r, inputs[0].dtype)


@op("Det", since=11)
def det(x: Tensor) -> Tensor:
    """Determinant of the square matrices in the last two dims of X."""
    if not x.dtype.is_floating_point:
        raise OnnxOpError(f"Det: input of type {x.dtype.name} is not supported (floating types only)")
    return ember.det(x)
