"""ONNX operators: shape, indexing and data-movement ops (see _registry.py for the conventions).

Every op is written with ember Tensor operations so that imported models stay differentiable;
shape-like inputs (``shape``, ``axes``, ``starts``...) are read as Python ints, which is what
ONNX means by them. Example::

    >>> import ember
    >>> from ember.onnx import ops
    >>> ops.reshape(ember.arange(6), ember.tensor([2, -1])).shape
    ember.Size([2, 3])
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor

from ._registry import OnnxOpError, op, upgrader

__all__ = [
    "reshape", "flatten", "transpose", "squeeze", "unsqueeze", "concat", "split", "slice_",
    "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "pad", "tile",
    "expand", "shape", "size", "range_", "constant_of_shape", "eye_like", "one_hot", "non_zero",
    "unique", "top_k", "compress", "depth_to_space", "space_to_depth", "trilu", "reverse_sequence",
    "scatter", "tensor_scatter", "center_crop_pad", "onnx_dtype",
]

# ONNX TensorProto.DataType codes -> ember dtypes (codes ember has no dtype for are refused).
_ONNX_DTYPES = {1: ember.float32, 2: ember.uint8, 3: ember.int8, 5: ember.int16, 6: ember.int32,
                7: ember.int64, 9: ember.bool, 10: ember.float16, 11: ember.float64, 16: ember.bfloat16}
_ONNX_DTYPE_NAMES = {4: "uint16", 8: "string", 12: "uint32", 13: "uint64", 14: "complex64",
                     15: "complex128", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
                     20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
                     24: "float8e8m0", 25: "uint2", 26: "int2"}


def onnx_dtype(code: int, opname: str) -> ember.dtype:
    """The ember dtype for an ONNX ``TensorProto.DataType`` code, or OnnxOpError."""
    try:
        return _ONNX_DTYPES[int(code)]
    except KeyError:
        name = _ONNX_DTYPE_NAMES.get(int(code), f"code {code}")
        raise OnnxOpError(f"ONNX {opname}: data type {name} is not supported by ember "
                          f"(supported: {', '.join(str(d) for d in _ONNX_DTYPES.values())})") from None


def _ints(t: Tensor | None) -> list[int] | None:
    """A shape-like input (1-D or scalar int tensor) as Python ints; None stays None."""
    if t is None:
        return None
    v = t.tolist()
    return [int(i) for i in v] if isinstance(v, list) else [int(v)]


def _scalar(t: Tensor | None, default=None):
    if t is None or t.numel() == 0:
        return default
    return t.reshape(-1)[0].item()


def _axis(a: int, rank: int, opname: str) -> int:
    if not -rank <= a < max(rank, 1):
        raise OnnxOpError(f"ONNX {opname}: axis {a} is out of range for a tensor of rank {rank}")
    return a + rank if a < 0 else a


def _itensor(values, like: Tensor) -> Tensor:
    """An int64 index tensor on ``like``'s device."""
    return ember.tensor(np.asarray(values, dtype=np.int64), device=like.device)


def _norm_index(idx: Tensor, dim: int) -> Tensor:
    """ONNX allows negative indices (counting from the end): map them to [0, dim)."""
    idx = idx.to(ember.int64)
    return ember.where(idx < 0, idx + dim, idx)


def _const_input(node: dict, name: str, value: np.ndarray) -> str:
    """Add a constant input to an upgraded node; returns its name."""
    cname = f"{node['outputs'][0]}__{name}"
    node.setdefault("new_constants", {})[cname] = value
    return cname


def _attr_to_input(node: dict, attr: str, pos: int, dtype=np.int64, rename: str | None = None) -> dict:
    """Move attribute ``attr`` (if present) into input slot ``pos`` as a constant."""
    attrs = node["attrs"]
    inputs = list(node["inputs"])
    if attr in attrs:
        name = _const_input(node, rename or attr, np.asarray(attrs.pop(attr), dtype=dtype))
        inputs = inputs[:pos] + [""] * (pos - len(inputs)) + [name] + inputs[pos + 1:]
    node["inputs"] = inputs
    return node


# --------------------------------------------------------------------------- reshaping


@op("Reshape", since=1)
def reshape(data: Tensor, shape: Tensor, *, allowzero: int = 0) -> Tensor:
    """ONNX Reshape: 0 copies the input dim (unless ``allowzero``), -1 is inferred.

    >>> reshape(ember.zeros(2, 3, 4), ember.tensor([0, -1])).shape
    ember.Size([2, 12])
    """
    dims = _ints(shape)
    out = []
    for i, d in enumerate(dims):
        if d == 0 and not allowzero:
            if i >= data.ndim:
                raise OnnxOpError(f"ONNX Reshape: shape {dims} copies dim {i} of a rank-{data.ndim} input")
            d = data.shape[i]
        out.append(d)
    if out.count(-1) > 1:
        raise OnnxOpError(f"ONNX Reshape: shape {dims} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0:
            if data.numel() != 0:
                raise OnnxOpError(f"ONNX Reshape: cannot infer -1 in {dims} for input {tuple(data.shape)}")
            out[out.index(-1)] = 0
        else:
            out[out.index(-1)] = data.numel() // known
    if math.prod(out) != data.numel():
        raise OnnxOpError(f"ONNX Reshape: cannot reshape {tuple(data.shape)} to {dims}")
    return data.reshape(out)


@upgrader("Reshape", below=5)
def _reshape_v1(node: dict) -> dict:
    return _attr_to_input(node, "shape", 1)


@op("Flatten")
def flatten(input: Tensor, *, axis: int = 1) -> Tensor:
    """ONNX Flatten: a 2-D tensor (prod(dims[:axis]), prod(dims[axis:]))."""
    r = input.ndim
    if not -r <= axis <= r:
        raise OnnxOpError(f"ONNX Flatten: axis {axis} out of range for rank {r}")
    axis = axis + r if axis < 0 else axis
    return input.reshape(math.prod(input.shape[:axis]), math.prod(input.shape[axis:]))


@op("Transpose")
def transpose(data: Tensor, *, perm: tuple[int, ...] | None = None) -> Tensor:
    """ONNX Transpose (default: reverse the dims)."""
    if perm is None:
        perm = tuple(range(data.ndim - 1, -1, -1))
    return data.permute(*perm)


@op("Squeeze")
def squeeze(data: Tensor, axes: Tensor | None = None) -> Tensor:
    """ONNX Squeeze: drop the listed size-1 dims (all size-1 dims without ``axes``)."""
    ax = _ints(axes)
    if not ax:      # no axes (or an empty list, as onnxruntime reads it): every size-1 dim
        return data.reshape([d for d in data.shape if d != 1])
    ax = {_axis(a, data.ndim, "Squeeze") for a in ax}
    for a in ax:
        if data.shape[a] != 1:
            raise OnnxOpError(f"ONNX Squeeze: dim {a} of shape {tuple(data.shape)} is not 1")
    return data.reshape([d for i, d in enumerate(data.shape) if i not in ax])


@upgrader("Squeeze", below=13)
def _squeeze_v1(node: dict) -> dict:
    return _attr_to_input(node, "axes", 1)


@op("Unsqueeze")
def unsqueeze(data: Tensor, axes: Tensor) -> Tensor:
    """ONNX Unsqueeze: insert size-1 dims at ``axes`` (positions in the output)."""
    ax = _ints(axes)
    r = data.ndim + len(ax)
    ax = sorted(_axis(a, r, "Unsqueeze") for a in ax)
    if len(set(ax)) != len(ax):
        raise OnnxOpError(f"ONNX Unsqueeze: repeated axes {ax}")
    shape = list(data.shape)
    for a in ax:
        shape.insert(a, 1)
    return data.reshape(shape)


@upgrader("Unsqueeze", below=13)
def _unsqueeze_v1(node: dict) -> dict:
    return _attr_to_input(node, "axes", 1)


@op("Concat")
def concat(*inputs: Tensor, axis: int) -> Tensor:
    """ONNX Concat along ``axis``."""
    if not inputs:
        raise OnnxOpError("ONNX Concat: no inputs")
    return ember.cat(list(inputs), dim=_axis(axis, inputs[0].ndim, "Concat"))


@upgrader("Concat", below=4)
def _concat_v1(node: dict) -> dict:
    node["attrs"].setdefault("axis", 1)     # Concat-1's axis was optional, defaulting to 1
    return node


@op("Split")
def split(input: Tensor, split: Tensor | None = None, *, axis: int = 0, num_outputs: int | None = None,
          n_outputs: int | None = None) -> tuple[Tensor, ...]:
    """ONNX Split: explicit ``split`` sizes, else ``num_outputs`` (or the node's output count)
    parts of ceil(dim / n), the last one smaller."""
    axis = _axis(axis, input.ndim, "Split")
    dim = input.shape[axis]
    sizes = _ints(split) if split is not None and split.numel() > 0 else None
    if sizes is None:
        n = num_outputs or n_outputs
        if not n:
            raise OnnxOpError("ONNX Split: needs 'split', 'num_outputs' or the output count")
        step = -(-dim // n)
        sizes = [max(0, min(step, dim - i * step)) for i in range(n)]
    if sum(sizes) != dim or any(s < 0 for s in sizes):
        raise OnnxOpError(f"ONNX Split: sizes {sizes} do not add up to dim {axis} of {tuple(input.shape)}")
    outs, start = [], 0
    for s in sizes:
        outs.append(input.narrow(axis, start, s))
        start += s
    return tuple(outs)


@upgrader("Split", below=13)
def _split_v2(node: dict) -> dict:
    return _attr_to_input(node, "split", 1)


@op("Slice")
def slice_(data: Tensor, starts: Tensor, ends: Tensor, axes: Tensor | None = None,
           steps: Tensor | None = None) -> Tensor:
    """ONNX Slice with clamped bounds and any (also negative) steps."""
    st, en = _ints(starts), _ints(ends)
    ax = _ints(axes) if axes is not None else list(range(len(st)))
    sp = _ints(steps) if steps is not None else [1] * len(st)
    out = data
    for s, e, a, k in zip(st, en, ax, sp):
        a = _axis(a, data.ndim, "Slice")
        n = data.shape[a]
        if k == 0:
            raise OnnxOpError("ONNX Slice: step 0")
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if k > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
        idx = range(s, e, k)
        if k == 1:
            out = out.narrow(a, s, max(e - s, 0))
        else:
            out = out.index_select(a, _itensor(list(idx), data))
    return out


@upgrader("Slice", below=10)
def _slice_v1(node: dict) -> dict:
    attrs = node["attrs"]
    ins = [node["inputs"][0]]
    ins.append(_const_input(node, "starts", np.asarray(attrs.pop("starts"), np.int64)))
    ins.append(_const_input(node, "ends", np.asarray(attrs.pop("ends"), np.int64)))
    if "axes" in attrs:
        ins.append(_const_input(node, "axes", np.asarray(attrs.pop("axes"), np.int64)))
    node["inputs"] = ins
    return node


# --------------------------------------------------------------------------- gather / scatter


@op("Gather")
def gather(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """ONNX Gather: take slices of ``data`` along ``axis`` (numpy ``take``)."""
    axis = _axis(axis, data.ndim, "Gather")
    idx = _norm_index(indices, data.shape[axis])
    out = data.index_select(axis, idx.reshape(-1))
    return out.reshape(tuple(data.shape[:axis]) + tuple(indices.shape) + tuple(data.shape[axis + 1:]))


@op("GatherElements")
def gather_elements(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """ONNX GatherElements (``torch.gather``)."""
    axis = _axis(axis, data.ndim, "GatherElements")
    return ember.gather(data, axis, _norm_index(indices, data.shape[axis]))


def _linear_nd_index(data_shape, indices: Tensor, opname: str) -> tuple[Tensor, int]:
    """Flat row numbers for the last-dim index tuples of ``indices`` over ``data_shape[:k]``."""
    k = indices.shape[-1]
    if k > len(data_shape):
        raise OnnxOpError(f"ONNX {opname}: index tuples of length {k} for data of rank {len(data_shape)}")
    idx = indices.to(ember.int64)
    lin = None
    for j in range(k):
        n = data_shape[j]
        c = idx[..., j]
        c = ember.where(c < 0, c + n, c)
        lin = c if lin is None else lin * n + c
    if lin is None:
        lin = ember.zeros(tuple(indices.shape[:-1]), dtype=ember.int64, device=indices.device)
    return lin, k


@op("GatherND")
def gather_nd(data: Tensor, indices: Tensor, *, batch_dims: int = 0) -> Tensor:
    """ONNX GatherND: index tuples in the last dim of ``indices`` pick slices of ``data``."""
    b = batch_dims
    bshape = tuple(data.shape[:b])
    B = math.prod(bshape)
    lin, k = _linear_nd_index(tuple(data.shape[b:]), indices.reshape((B,) + tuple(indices.shape[b:])), "GatherND")
    rest = tuple(data.shape[b + k:])
    R = math.prod(rest)
    d = data.reshape(B, math.prod(data.shape[b:b + k]), R)
    lin = lin.reshape(B, -1)
    q = lin.shape[1]
    out = ember.gather(d, 1, lin.unsqueeze(-1).expand(B, q, R))
    return out.reshape(bshape + tuple(indices.shape[b:-1]) + rest)


_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@op("ScatterElements")
def scatter_elements(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0,
                     reduction: str = "none") -> Tensor:
    """ONNX ScatterElements (``torch.scatter`` / ``scatter_reduce`` with the input included)."""
    axis = _axis(axis, data.ndim, "ScatterElements")
    idx = _norm_index(indices, data.shape[axis])
    if reduction == "none":
        return ember.scatter(data, axis, idx, updates)
    if reduction not in _REDUCE:
        raise OnnxOpError(f"ONNX ScatterElements: unknown reduction {reduction!r}")
    return ember.scatter_reduce(data, axis, idx, updates, _REDUCE[reduction], include_self=True)


@op("Scatter")
def scatter(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0) -> Tensor:
    """ONNX Scatter (opsets 9-10; ScatterElements without reduction)."""
    return scatter_elements(data, indices, updates, axis=axis)


@upgrader("Scatter", below=11)
def _scatter_to_elements(node: dict) -> dict:
    node["op_type"] = "ScatterElements"     # Scatter-9 was renamed ScatterElements in opset 11
    return node


@op("ScatterND")
def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, *, reduction: str = "none") -> Tensor:
    """ONNX ScatterND: write (or reduce) ``updates`` slices at the index tuples of ``indices``."""
    lin, k = _linear_nd_index(tuple(data.shape), indices, "ScatterND")
    rest = tuple(data.shape[k:])
    R = math.prod(rest)
    d = data.reshape(math.prod(data.shape[:k]), R)
    lin = lin.reshape(-1)
    u = updates.reshape(lin.shape[0], R)
    if reduction == "none":
        out = d.index_copy(0, lin, u)
    elif reduction in _REDUCE:
        out = ember.scatter_reduce(d, 0, lin.unsqueeze(1).expand(lin.shape[0], R), u,
                                   _REDUCE[reduction], include_self=True)
    else:
        raise OnnxOpError(f"ONNX ScatterND: unknown reduction {reduction!r}")
    return out.reshape(data.shape)


@op("TensorScatter")
def tensor_scatter(past_cache: Tensor, update: Tensor, write_indices: Tensor | None = None, *, axis: int = -2,
                   mode: str = "linear") -> Tensor:
    """ONNX TensorScatter (KV-cache update): ``update`` written into ``past_cache`` along ``axis``
    starting at each batch entry's ``write_indices`` (modulo the cache length when circular)."""
    axis = _axis(axis, past_cache.ndim, "TensorScatter")
    if axis == 0:
        raise OnnxOpError("ONNX TensorScatter: axis cannot be the batch dim 0")
    if mode not in ("linear", "circular"):
        raise OnnxOpError(f"ONNX TensorScatter: unknown mode {mode!r}")
    B, L, S = past_cache.shape[0], past_cache.shape[axis], update.shape[axis]
    starts = np.asarray(_ints(write_indices) if write_indices is not None else [0] * B, dtype=np.int64)
    pos = starts[:, None] + np.arange(S)[None, :]          # (batch, sequence)
    if mode == "circular":
        pos = np.mod(pos, L)
    elif (pos >= L).any():
        raise OnnxOpError(f"ONNX TensorScatter: writes past the cache length {L} (write_indices {starts.tolist()})")
    shp = [1] * past_cache.ndim
    shp[0], shp[axis] = B, S
    idx = _itensor(pos.reshape(shp), past_cache).expand(*update.shape)
    return ember.scatter(past_cache, axis, idx, update)


# --------------------------------------------------------------------------- padding / tiling


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index of every padded position along one axis (edge/reflect/wrap)."""
    i = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return np.mod(i, n)
    if n == 1:
        return np.zeros_like(i)
    period = 2 * (n - 1)
    m = np.mod(i, period)
    return np.where(m < n, m, period - m)


@op("Pad")
def pad(data: Tensor, pads: Tensor, constant_value: Tensor | None = None, axes: Tensor | None = None,
        *, mode: str = "constant") -> Tensor:
    """ONNX Pad (constant / reflect / edge / wrap; negative pads crop).

    >>> pad(ember.ones(2), ember.tensor([1, 2])).tolist()
    [0.0, 1.0, 1.0, 0.0, 0.0]
    """
    p = _ints(pads)
    r = data.ndim
    ax = [_axis(a, r, "Pad") for a in _ints(axes)] if axes is not None else list(range(r))
    if len(p) != 2 * len(ax):
        raise OnnxOpError(f"ONNX Pad: {len(p)} pads for {len(ax)} axes")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise OnnxOpError(f"ONNX Pad: unknown mode {mode!r}")
    value = _scalar(constant_value, 0)
    out = data
    for j, a in enumerate(ax):
        before, after = p[j], p[j + len(ax)]
        # Negative pads crop first, then the positive amounts are added.
        if before < 0 or after < 0:
            n = out.shape[a]
            s, e = max(-before, 0), n - max(-after, 0)
            out = out.narrow(a, s, max(e - s, 0))
            before, after = max(before, 0), max(after, 0)
        if before == 0 and after == 0:
            continue
        n = out.shape[a]
        if mode == "constant" or n == 0:
            parts = []
            for amount in (before, None, after):
                if amount is None:
                    parts.append(out)
                elif amount:
                    shp = list(out.shape)
                    shp[a] = amount
                    parts.append(ember.full(shp, value, dtype=out.dtype, device=out.device))
            out = ember.cat(parts, dim=a)
        else:
            out = out.index_select(a, _itensor(_pad_index(n, before, after, mode), out))
    return out


@upgrader("Pad", below=11)
def _pad_v2(node: dict) -> dict:
    attrs = node["attrs"]
    p = attrs.pop("pads", attrs.pop("paddings", None))
    ins = [node["inputs"][0], _const_input(node, "pads", np.asarray(p, np.int64))]
    if "value" in attrs:
        ins.append(_const_input(node, "value", np.asarray(attrs.pop("value"), np.float32)))
    node["inputs"] = ins
    return node


@op("Tile")
def tile(input: Tensor, repeats: Tensor) -> Tensor:
    """ONNX Tile."""
    reps = _ints(repeats)
    if len(reps) != input.ndim:
        raise OnnxOpError(f"ONNX Tile: {len(reps)} repeats for a rank-{input.ndim} input")
    return ember.tile(input, reps)


@upgrader("Tile", below=6)
def _tile_v1(node: dict) -> dict:
    # Tile-1 took (input, tiles, axis) scalars; the repeats vector needs the input's rank.
    raise OnnxOpError(f"ONNX Tile-{node['opset']} (node {node.get('name') or node['outputs'][0]!r}): the opset-1 "
                      "form (tiles, axis inputs) is not supported; convert the model to opset 6 or newer")


@op("Expand")
def expand(input: Tensor, shape: Tensor) -> Tensor:
    """ONNX Expand: broadcast ``input`` and ``shape`` together (either may be larger)."""
    dims = _ints(shape)
    try:
        out = ember.broadcast_shapes(tuple(input.shape), tuple(dims))
    except RuntimeError as e:
        raise OnnxOpError(f"ONNX Expand: {tuple(input.shape)} does not broadcast with {dims}: {e}") from None
    return input.expand(*out)


@op("CenterCropPad")
def center_crop_pad(input_data: Tensor, shape: Tensor, *, axes: tuple[int, ...] | None = None) -> Tensor:
    """ONNX CenterCropPad: crop or zero-pad each listed axis around its centre."""
    dims = _ints(shape)
    r = input_data.ndim
    ax = [_axis(a, r, "CenterCropPad") for a in axes] if axes is not None else list(range(r))
    out = input_data
    for a, want in zip(ax, dims):
        n = out.shape[a]
        if want < n:
            out = out.narrow(a, (n - want) // 2, want)
        elif want > n:
            before = (want - n) // 2
            shp = list(out.shape)
            parts = []
            for amount in (before, want - n - before):
                shp[a] = amount
                parts.append(ember.zeros(shp, dtype=out.dtype, device=out.device))
            out = ember.cat([parts[0], out, parts[1]], dim=a)
    return out


# --------------------------------------------------------------------------- shapes / creation


@op("Shape")
def shape(data: Tensor, *, start: int = 0, end: int | None = None) -> Tensor:
    """ONNX Shape: the (sliced) shape as an int64 tensor."""
    return ember.tensor(list(data.shape)[start:end], dtype=ember.int64, device=data.device)


@op("Size")
def size(data: Tensor) -> Tensor:
    """ONNX Size: the element count as an int64 scalar."""
    return ember.tensor(data.numel(), dtype=ember.int64, device=data.device)


@op("Range")
def range_(start: Tensor, limit: Tensor, delta: Tensor, *, stash_type: int = 1) -> Tensor:
    """ONNX Range: ``start + i * delta`` for i < max(ceil((limit - start) / delta), 0)."""
    dt = start.dtype
    s, lim, d = start.item(), limit.item(), delta.item()
    if d == 0:
        raise OnnxOpError("ONNX Range: delta is 0")
    n = max(math.ceil((lim - s) / d), 0)
    if dt.is_floating_point:
        work = ember.float32 if dt in (ember.float16, ember.bfloat16) and stash_type == 1 else dt
        if dt == ember.float64:
            work = dt
        i = ember.arange(n, dtype=work, device=start.device)
        return (i * ember.tensor(d, dtype=work, device=start.device) + s).to(dt)
    return ember.arange(n, dtype=ember.int64, device=start.device).mul(int(d)).add(int(s)).to(dt)


@op("ConstantOfShape")
def constant_of_shape(input: Tensor, *, value: Tensor | None = None) -> Tensor:
    """ONNX ConstantOfShape: a tensor of ``shape`` filled with ``value`` (default float32 0)."""
    dims = _ints(input)
    if value is None:
        return ember.zeros(dims, dtype=ember.float32, device=input.device)
    return ember.full(dims, value.reshape(-1)[0].item(), dtype=value.dtype, device=input.device)


@op("EyeLike")
def eye_like(input: Tensor, *, dtype: int | None = None, k: int = 0) -> Tensor:
    """ONNX EyeLike: ones on the ``k``-th diagonal of a 2-D tensor shaped like ``input``."""
    if input.ndim != 2:
        raise OnnxOpError(f"ONNX EyeLike: input must be 2-D, got {tuple(input.shape)}")
    dt = onnx_dtype(dtype, "EyeLike") if dtype is not None else input.dtype
    n, m = input.shape
    rows = ember.arange(n, device=input.device).unsqueeze(1)
    cols = ember.arange(m, device=input.device).unsqueeze(0)
    return (cols - rows == k).to(dt)


@op("OneHot")
def one_hot(indices: Tensor, depth: Tensor, values: Tensor, *, axis: int = -1) -> Tensor:
    """ONNX OneHot: ``values[1]`` where the class matches, ``values[0]`` elsewhere; negative
    indices count from ``depth``, out-of-range ones give an all-off row."""
    dep = int(_scalar(depth))
    r = indices.ndim + 1
    axis = _axis(axis, r, "OneHot")
    if indices.is_floating_point():
        indices = indices.trunc()
    idx = indices.to(ember.int64)
    idx = ember.where(idx < 0, idx + dep, idx).unsqueeze(axis)
    cshape = [1] * r
    cshape[axis] = dep
    classes = ember.arange(dep, device=indices.device).reshape(cshape)
    vals = values.reshape(-1)
    return ember.where(idx == classes, vals[1], vals[0])


# --------------------------------------------------------------------------- data-dependent


@op("NonZero")
def non_zero(X: Tensor) -> Tensor:
    """ONNX NonZero: the (rank, count) int64 indices of non-zero elements."""
    if X.ndim == 0:
        return ember.zeros((0, int(bool(X.item()))), dtype=ember.int64, device=X.device)
    return ember.nonzero(X).T.contiguous()


@op("Unique")
def unique(X: Tensor, *, axis: int | None = None, sorted: int = 1, n_outputs: int = 4) -> tuple[Tensor, ...]:
    """ONNX Unique: (unique values, first-occurrence indices, inverse indices, counts); without
    ``sorted`` the values keep their first-occurrence order."""
    a = (X.detach().to(ember.float64) if X.is_floating_point() else X.detach()).cpu().numpy()
    if axis is None:
        _, first, inv, counts = np.unique(a.reshape(-1), return_index=True, return_inverse=True,
                                          return_counts=True)
    else:
        axis = _axis(axis, X.ndim, "Unique")
        _, first, inv, counts = np.unique(a, axis=axis, return_index=True, return_inverse=True,
                                          return_counts=True)
    inv = inv.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, counts, inv = first[order], counts[order], rank[inv]
    # Y is taken from X by index so that it stays differentiable.
    src = X.reshape(-1) if axis is None else X
    y = src.index_select(0 if axis is None else axis, _itensor(first, X))
    outs = (y, _itensor(first, X), _itensor(inv, X), _itensor(counts, X))
    return outs[:n_outputs]


@op("TopK")
def top_k(X: Tensor, K: Tensor, *, axis: int = -1, largest: int = 1, sorted: int = 1) -> tuple[Tensor, Tensor]:
    """ONNX TopK: (values, int64 indices) of the K largest (or smallest) along ``axis``; ties
    go to the lower index."""
    k = int(_scalar(K))
    axis = _axis(axis, X.ndim, "TopK")
    n = X.shape[axis]
    if not 0 <= k <= n:
        raise OnnxOpError(f"ONNX TopK: K={k} for a dim of size {n}")
    # A stable sort keeps equal values in index order, which ONNX requires.
    # Largest-first sorts an order-reversed key: -x for floats, ~x for ints and bools (no
    # overflow at the int minimum, and exact for uint8).
    key = X if not largest else X.neg() if X.is_floating_point() else X.bitwise_not()
    order = ember.argsort(key, dim=axis, stable=True).narrow(axis, 0, k)
    return ember.gather(X, axis, order), order


@upgrader("TopK", below=10)
def _topk_v1(node: dict) -> dict:
    attrs = node["attrs"]
    k = _const_input(node, "K", np.asarray([attrs.pop("k")], np.int64))
    node["inputs"] = [node["inputs"][0], k]
    return node


@op("Compress")
def compress(input: Tensor, condition: Tensor, *, axis: int | None = None) -> Tensor:
    """ONNX Compress: keep the slices along ``axis`` (or the flat elements) where ``condition``."""
    cond = np.asarray(condition.detach().cpu().numpy(), dtype=bool).reshape(-1)
    if axis is None:
        src, a = input.reshape(-1), 0
    else:
        src, a = input, _axis(axis, input.ndim, "Compress")
    n = src.shape[a]
    if len(cond) > n:
        raise OnnxOpError(f"ONNX Compress: condition of length {len(cond)} for a dim of size {n}")
    return src.index_select(a, _itensor(np.nonzero(cond)[0], input))


@op("DepthToSpace")
def depth_to_space(input: Tensor, *, blocksize: int, mode: str = "DCR") -> Tensor:
    """ONNX DepthToSpace (DCR or CRD order) for (N, C, H, W) inputs."""
    N, C, H, W = input.shape
    b = blocksize
    if C % (b * b):
        raise OnnxOpError(f"ONNX DepthToSpace: channels {C} not divisible by blocksize² {b * b}")
    c = C // (b * b)
    if mode == "DCR":
        t = input.reshape(N, b, b, c, H, W).permute(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        t = input.reshape(N, c, b, b, H, W).permute(0, 1, 4, 2, 5, 3)
    else:
        raise OnnxOpError(f"ONNX DepthToSpace: unknown mode {mode!r}")
    return t.reshape(N, c, H * b, W * b)


@op("SpaceToDepth")
def space_to_depth(input: Tensor, *, blocksize: int, mode: str = "DCR") -> Tensor:
    """ONNX SpaceToDepth (the inverse of DepthToSpace with the same mode)."""
    N, C, H, W = input.shape
    b = blocksize
    if H % b or W % b:
        raise OnnxOpError(f"ONNX SpaceToDepth: spatial dims {H}x{W} not divisible by blocksize {b}")
    t = input.reshape(N, C, H // b, b, W // b, b)
    if mode == "DCR":
        t = t.permute(0, 3, 5, 1, 2, 4)
    elif mode == "CRD":
        t = t.permute(0, 1, 3, 5, 2, 4)
    else:
        raise OnnxOpError(f"ONNX SpaceToDepth: unknown mode {mode!r}")
    return t.reshape(N, C * b * b, H // b, W // b)


@op("Trilu")
def trilu(input: Tensor, k: Tensor | None = None, *, upper: int = 1) -> Tensor:
    """ONNX Trilu: the upper (or lower) triangle of the last two dims above diagonal ``k``."""
    kk = int(_scalar(k, 0))
    return ember.triu(input, kk) if upper else ember.tril(input, kk)


@op("ReverseSequence")
def reverse_sequence(input: Tensor, sequence_lens: Tensor, *, batch_axis: int = 1, time_axis: int = 0) -> Tensor:
    """ONNX ReverseSequence: reverse the first ``sequence_lens[b]`` steps of every batch entry."""
    lens = np.asarray(_ints(sequence_lens))
    T = input.shape[time_axis]
    t = np.arange(T)[None, :]
    src = np.where(t < lens[:, None], lens[:, None] - 1 - t, t)  # (batch, time)
    if time_axis < batch_axis:
        src = src.T
    shp = [1] * input.ndim
    shp[batch_axis], shp[time_axis] = input.shape[batch_axis], T
    idx = _itensor(src.reshape(shp), input).expand(*input.shape)
    return ember.gather(input, time_axis, idx)


from .tensor2 import *  # noqa: E402,F401,F403
from .tensor2 import __all__ as _all2  # noqa: E402

__all__ += _all2
