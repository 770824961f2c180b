"""Result metadata of backend ops without running them: shape, dtype and layout.

Lazy backends (Fusion records ops and runs them later; Remote sends them to a server and does not
wait) must answer ``shape``, ``dtype`` and ``strides`` for handles whose ops have not run. The
frontend computes result shapes for the ops it issues, but the Autodiff decorator issues backward
ops straight to its inner backend, so the rules live here, at the protocol level.

:func:`infer` covers the ops a training step issues (creation, elementwise, reductions, scans,
movement and views, gather/scatter, matmul, conv/pool, norms, softmax); for any other op, and for
ops whose result shape depends on the data, it returns None and the caller treats the op as a sync
point (run it, then read the metadata off the real result).

>>> from ember.backend.meta import Meta, infer
>>> import ember
>>> x = Meta((2, 3), ember.float32, (3, 1))
>>> infer("sum", (x,), {"dim": (1,), "keepdim": False, "dtype": ember.float32})
(Meta(shape=(2,), dtype=ember.float32, strides=(1,)),)
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .. import _dtype as dt
from .._shape import broadcast_shapes, contiguous_strides, infer_size, reduced_shape, view_strides
from .base import BINARY, UNARY

__all__ = ["Meta", "infer", "contiguous_strides", "is_contiguous", "conv_out_size", "is_view_op", "VIEW_OPS",
           "INPLACE_OPS"]


class Meta(NamedTuple):
    """A tensor's metadata: ``shape``, ember ``dtype``, element ``strides``."""

    shape: tuple
    dtype: object
    strides: tuple


# ops whose result shares its first input's storage
VIEW_OPS = frozenset({"reshape", "permute", "expand", "slice", "diagonal", "as_strided", "contiguous"})
# ops that write their first input's storage and return it (backends may also offer in-place
# elementwise forms, "add_", "mul_", ...: infer and is_inplace_op know every "<elementwise op>_")
INPLACE_OPS = frozenset({"assign", "index_put_", "relu_", "hardtanh_", "running_update_"} | {
    op + "_" for op in ("leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish",
                        "logsigmoid")} | {op + "_" for op in UNARY + BINARY})


def is_view_op(op: str, inputs: tuple = (), attrs: dict | None = None) -> bool:
    """True when ``op`` returns a view of its first input (reshape and contiguous only sometimes:
    with ``inputs``' metadata given, the answer is exact)."""
    if op not in VIEW_OPS:
        return False
    if op in ("reshape", "contiguous") and inputs:
        x = inputs[0]
        if op == "contiguous":
            return is_contiguous(x)
        return _reshape_strides(x, tuple(attrs["shape"])) is not None
    return True


def is_contiguous(x: Meta) -> bool:
    """C-contiguous as numpy and PyTorch judge it: strides of size-1 dims don't matter, and a tensor
    without elements always is."""
    cs = contiguous_strides(x.shape)
    if x.strides == cs or 0 in x.shape:
        return True
    return all(s == c for s, c, n in zip(x.strides, cs, x.shape) if n != 1)


def conv_out_size(n: int, lo: int, hi: int, k: int, s: int, d: int) -> int:
    """Output length of a window op (conv, pool, im2col) over ``n`` with padding ``lo``/``hi``,
    kernel ``k``, stride ``s`` and dilation ``d``: every backend's conv family sizes with this."""
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _new(shape, dtype) -> tuple:
    shape = tuple(int(n) for n in shape)
    return (Meta(shape, dtype, contiguous_strides(shape)),)


def _broadcast(*shapes) -> tuple:
    return broadcast_shapes(*shapes)


_BOOL_UNARY = frozenset({"isnan", "isinf", "isfinite", "logical_not", "signbit"})
_BOOL_BINARY = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})


def _tensors(inputs) -> list:
    return [x for x in inputs if isinstance(x, Meta)]


def _elementwise(op, inputs, attrs):
    ts = _tensors(inputs)
    if not ts:
        return None
    shape = _broadcast(*(t.shape for t in ts))
    if op in _BOOL_UNARY or op in _BOOL_BINARY:
        return _new(shape, dt.bool)
    if op == "where":  # the condition is bool; the values carry the dtype
        vals = [x for x in inputs[1:] if isinstance(x, Meta)]
        return _new(shape, vals[0].dtype if vals else None) if vals else None
    return _new(shape, ts[0].dtype)


def _reduced(x: Meta, dim, keepdim) -> tuple:
    dims = None if dim == () else (dim,) if isinstance(dim, int) else dim
    return reduced_shape(x.shape, dims, keepdim)


def _reduction(op, inputs, attrs):
    x = inputs[0]
    shape = _reduced(x, attrs.get("dim"), attrs.get("keepdim", False))
    if op in ("all", "any"):
        return _new(shape, dt.bool)
    if op in ("argmax", "argmin"):
        return _new(shape, dt.int64)
    if op in ("max_dim", "min_dim"):
        return _new(shape, x.dtype) + _new(shape, dt.int64)
    dtype = attrs.get("dtype")
    return _new(shape, dtype if dtype is not None else x.dtype)


def _scan(op, inputs, attrs):
    x = inputs[0]
    if op in ("cummax", "cummin"):
        return _new(x.shape, x.dtype) + _new(x.shape, dt.int64)
    dtype = attrs.get("dtype")
    return _new(x.shape, dtype if dtype is not None else x.dtype)


def _reshape_strides(x: Meta, shape: tuple):
    """The strides of ``x`` viewed as ``shape`` without a copy, or None when a copy is needed."""
    if math.prod(shape) == 0 or is_contiguous(x):
        return contiguous_strides(shape)
    return view_strides(x.shape, x.strides, shape)


def _movement(op, inputs, attrs):
    x = inputs[0]
    if op == "reshape":
        shape = infer_size(attrs["shape"], math.prod(x.shape))
        st = _reshape_strides(x, shape)
        return (Meta(shape, x.dtype, st if st is not None else contiguous_strides(shape)),)
    if op == "permute":
        dims = attrs["dims"]
        return (Meta(tuple(x.shape[d] for d in dims), x.dtype, tuple(x.strides[d] for d in dims)),)
    if op == "expand":
        shape = tuple(attrs["shape"])
        lead = len(shape) - len(x.shape)
        st = [0] * lead + [0 if (n == 1 and m != 1) else s
                           for n, m, s in zip(x.shape, shape[lead:], x.strides)]
        return (Meta(shape, x.dtype, tuple(st)),)
    if op == "slice":
        shape, st = [], []
        for (a, b, c), s in zip(attrs["index"], x.strides):
            shape.append(max(0, -(-(b - a) // c)) if c > 0 else 0)
            st.append(s * c)
        return (Meta(tuple(shape), x.dtype, tuple(st)),)
    if op == "diagonal":
        off, d1, d2 = attrs["offset"], attrs["dim1"], attrs["dim2"]
        n1, n2 = x.shape[d1], x.shape[d2]
        length = max(0, min(n1, n2 - off)) if off >= 0 else max(0, min(n1 + off, n2))
        keep = [d for d in range(len(x.shape)) if d not in (d1, d2)]
        return (Meta(tuple(x.shape[d] for d in keep) + (length,), x.dtype,
                     tuple(x.strides[d] for d in keep) + (x.strides[d1] + x.strides[d2],)),)
    if op == "as_strided":
        return (Meta(tuple(attrs["size"]), x.dtype, tuple(attrs["stride"])),)
    if op == "contiguous":
        return (x if is_contiguous(x) else Meta(x.shape, x.dtype, contiguous_strides(x.shape)),)
    if op in ("copy", "flip", "roll", "tril", "triu"):
        return _new(x.shape, x.dtype)
    if op in ("cat", "stack"):
        d = attrs["dim"]
        if op == "stack":
            shape = list(x.shape)
            shape.insert(d, len(inputs))
        else:
            parts = [t for t in inputs if t.shape != (0,) or len(x.shape) == 1]  # legacy empty 1-d tensors
            base = parts[0] if parts else x
            shape = list(base.shape)
            shape[d] = sum(t.shape[d] for t in parts)
        return _new(shape, x.dtype)
    if op == "pad":
        return _new(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, attrs["pad"])), x.dtype)
    if op == "tile":
        reps = tuple(attrs["reps"])
        nd = max(len(reps), len(x.shape))
        reps = (1,) * (nd - len(reps)) + reps
        shape = (1,) * (nd - len(x.shape)) + tuple(x.shape)
        return _new(tuple(a * b for a, b in zip(shape, reps)), x.dtype)
    return None


def _indexing(op, inputs, attrs):
    x = inputs[0]
    if op in ("assign", "index_put_"):
        return (x,)
    if op in ("scatter", "scatter_reduce", "index_add", "index_put", "slice_scatter", "diagonal_scatter",
              "masked_fill"):
        return _new(x.shape, x.dtype)
    if op == "as_strided_scatter":
        return _new(x.shape, x.dtype)
    if op == "gather":
        return _new(inputs[1].shape, x.dtype)
    if op == "gather_backward":
        return _new(tuple(attrs["shape"]), x.dtype)
    if op == "take":
        return _new(inputs[1].shape, x.dtype)
    if op == "index_select":
        shape = list(x.shape)
        shape[attrs["dim"]] = inputs[1].shape[0] if inputs[1].shape else 1
        if not inputs[1].shape:
            del shape[attrs["dim"]]
        return _new(shape, x.dtype)
    if op == "index":
        dims = tuple(attrs["dims"])
        idx = inputs[1:]
        if any(i.dtype is dt.bool for i in idx):
            return None  # boolean masks: the result's size depends on the data
        bshape = _broadcast(*(i.shape for i in idx))
        # numpy's rule: adjacent advanced indices keep their place, separated ones go first
        adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims))) if dims else True
        rest = [n for d, n in enumerate(x.shape) if d not in dims]
        if adjacent and dims:
            shape = list(x.shape[:dims[0]]) + list(bshape) + [n for d, n in enumerate(x.shape)
                                                                 if d > dims[-1] and d not in dims]
        else:
            shape = list(bshape) + rest
        return _new(shape, x.dtype)
    return None


def _matmul(inputs):
    a, b = inputs
    if len(a.shape) == 1 and len(b.shape) == 1:
        return _new((), a.dtype)
    if len(a.shape) == 1:
        return _new(tuple(b.shape[:-2]) + (b.shape[-1],), a.dtype)
    if len(b.shape) == 1:
        return _new(tuple(a.shape[:-1]), a.dtype)
    batch = _broadcast(a.shape[:-2], b.shape[:-2])
    return _new(batch + (a.shape[-2], b.shape[-1]), a.dtype)


def _conv_family(op, inputs, attrs):
    x = inputs[0]
    if op == "conv":
        w = inputs[1]
        k = w.shape[2:]
        sp = tuple(conv_out_size(n, lo, hi, kk, s, d) for n, (lo, hi), kk, s, d in
                   zip(x.shape[2:], attrs["padding"], k, attrs["stride"], attrs["dilation"]))
        return _new((x.shape[0], w.shape[0]) + sp, x.dtype)
    if op == "conv_transpose":
        w = inputs[1]
        k = w.shape[2:]
        sp = tuple((n - 1) * s + d * (kk - 1) + 1 - lo - hi for n, (lo, hi), kk, s, d in
                   zip(x.shape[2:], attrs["padding"], k, attrs["stride"], attrs["dilation"]))
        return _new((x.shape[0], w.shape[1] * attrs["groups"]) + sp, x.dtype)
    if op == "conv_weight":
        g = inputs[1]
        return _new((g.shape[1], x.shape[1] // attrs["groups"]) + tuple(attrs["kernel_size"]), x.dtype)
    if op == "im2col":
        k = attrs["kernel_size"]
        L = math.prod(conv_out_size(n, lo, hi, kk, s, d) for n, (lo, hi), kk, s, d in
                      zip(x.shape[2:], attrs["padding"], k, attrs["stride"], attrs["dilation"]))
        return _new((x.shape[0], x.shape[1] * math.prod(k), L), x.dtype)
    if op == "col2im":
        K = math.prod(attrs["kernel_size"])
        return _new((x.shape[0], x.shape[1] // K if K else 0) + tuple(attrs["output_size"]), x.dtype)
    if op in ("max_pool", "max_pool_values"):
        sp = tuple(conv_out_size(n, lo, hi, kk, s, d) for n, (lo, hi), kk, s, d in
                   zip(x.shape[2:], attrs["padding"], attrs["kernel_size"], attrs["stride"], attrs["dilation"]))
        shape = tuple(x.shape[:2]) + sp
        return _new(shape, x.dtype) + (_new(shape, dt.int64) if op == "max_pool" else ())
    if op == "max_pool_backward":
        return _new(tuple(x.shape[:2]) + tuple(attrs["input_size"]), x.dtype)
    return None


def _nn(op, inputs, attrs):
    x = inputs[0]
    if op == "norm_affine":
        stat = tuple(1 if d in attrs["dim"] else n for d, n in enumerate(x.shape))
        return _new(x.shape, x.dtype) + _new(stat, x.dtype) + _new(stat, x.dtype)
    if op == "norm_affine_backward":
        # optional gradients keep their places: None where there is no weight or bias
        w, bias_shape = inputs[1], attrs.get("bias_shape")
        return (_new(x.shape, x.dtype) + (_new(w.shape, w.dtype) if w is not None else (None,))
                + (_new(tuple(bias_shape), x.dtype) if bias_shape is not None else (None,)))
    if op == "rms_norm_backward":
        w = inputs[1]
        return _new(x.shape, x.dtype) + (_new(w.shape, w.dtype) if w is not None else (None,))
    if op == "batch_norm":
        c = (x.shape[1],)
        return _new(x.shape, x.dtype) + _new(c, x.dtype) + _new(c, x.dtype)
    if op == "batch_norm_backward":
        c = (x.shape[1],)
        return (_new(x.shape, x.dtype) + (_new(c, inputs[1].dtype) if inputs[1] is not None else (None,))
                + (_new(c, x.dtype) if attrs.get("has_bias") else (None,)))
    if op in ("relu_backward", "gelu_backward", "log_softmax_backward"):
        return _new(x.shape, x.dtype)
    if op == "dropout":
        return _new(x.shape, x.dtype) + _new(x.shape, x.dtype)
    if op in ("softmax", "log_softmax", "rms_norm", "lerp", "logaddexp", "xlogy"):
        ts = _tensors(inputs)
        return _new(_broadcast(*(t.shape for t in ts)), x.dtype)
    if op == "logsumexp":
        return _new(_reduced(x, attrs.get("dim"), attrs.get("keepdim", False)), x.dtype)
    return None


_ACTIVATIONS = frozenset({"relu", "leaky_relu", "hardtanh", "elu", "gelu", "silu", "mish", "softplus",
                          "hardsigmoid", "hardswish", "logsigmoid", "round_decimals", "polygamma",
                          "nan_to_num"})
_REDUCTIONS = frozenset({"sum", "prod", "mean", "amax", "amin", "all", "any", "argmax", "argmin", "var",
                         "nansum", "max_dim", "min_dim"})
_SCANS = frozenset({"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"})
_MOVEMENT = frozenset({"reshape", "permute", "expand", "slice", "diagonal", "as_strided", "contiguous", "copy",
                       "flip", "roll", "cat", "stack", "pad", "tril", "triu", "tile"})
_INDEXING = frozenset({"assign", "index_put_", "scatter", "scatter_reduce", "index_add", "index_put",
                       "slice_scatter", "diagonal_scatter", "as_strided_scatter", "masked_fill", "gather",
                       "gather_backward", "take",
                       "index_select", "index"})
_CONV = frozenset({"conv", "conv_transpose", "conv_weight", "im2col", "col2im", "max_pool", "max_pool_values",
                   "max_pool_backward"})
_NN = frozenset({"norm_affine", "norm_affine_backward", "batch_norm", "batch_norm_backward", "rms_norm_backward",
                 "relu_backward", "gelu_backward", "log_softmax_backward", "dropout", "softmax", "log_softmax",
                 "rms_norm", "lerp", "logaddexp", "xlogy", "logsumexp"})
_ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | {"where", "clamp"}


def infer(op: str, inputs: tuple, attrs: dict) -> tuple | None:
    """The metadata of ``op``'s results: a tuple with one :class:`Meta` per output (None for an
    optional output the op won't produce), or None when it cannot be known without running the op.
    ``inputs`` holds a :class:`Meta` for each tensor input (scalars and None as they are)."""
    try:
        if op in _ELEMENTWISE:
            return _elementwise(op, inputs, attrs)
        if op in _ACTIVATIONS or op in INPLACE_OPS and op not in ("assign", "index_put_"):
            x = inputs[0]
            return (x,) if op in INPLACE_OPS else _new(x.shape, x.dtype)
        if op == "cast":
            return _new(inputs[0].shape, attrs["dtype"])
        if op in _REDUCTIONS:
            return _reduction(op, inputs, attrs)
        if op in _SCANS:
            return _scan(op, inputs, attrs)
        if op in _MOVEMENT:
            return _movement(op, inputs, attrs)
        if op in _INDEXING:
            return _indexing(op, inputs, attrs)
        if op == "matmul":
            return _matmul(inputs)
        if op in _CONV:
            return _conv_family(op, inputs, attrs)
        if op in _NN:
            return _nn(op, inputs, attrs)
        if op in ("full", "empty", "rand", "randn", "randint"):
            return _new(attrs["shape"], attrs["dtype"])
        if op == "arange":
            start, end, step = attrs["start"], attrs["end"], attrs["step"]
            return _new((max(0, math.ceil((end - start) / step)),), attrs["dtype"])
        if op == "linspace":
            return _new((attrs["steps"],), attrs["dtype"])
        if op == "eye":
            return _new((attrs["n"], attrs["m"]), attrs["dtype"])
        if op in ("bernoulli", "poisson"):
            return _new(inputs[0].shape, inputs[0].dtype)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        return None  # attributes this module doesn't understand: the caller runs the op to find out
    return None
