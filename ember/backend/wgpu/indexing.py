"""Indexing ops of the Wgpu backend: gathers (index_select, gather, take, advanced indexing) run as
kernels that read through an index tensor; scatters with accumulation run on the host."""

from __future__ import annotations

import numpy as np

from ... import _dtype as D
from .handle import WH


def iota_last2(be, shape) -> WH:
    """(col - row) over the last two dims of ``shape``, as an int32 handle broadcastable to it."""
    r, c = shape[-2], shape[-1]
    a = (np.arange(c, dtype=np.int32)[None, :] - np.arange(r, dtype=np.int32)[:, None])
    h = be.write(a)
    h.dtype = D.int32
    return h


OPS: dict = {}


_GATHER = """@group(0) @binding(0) var<storage, read_write> out: array<{t}>;
@group(0) @binding(1) var<storage, read> x: array<{t}>;
@group(0) @binding(2) var<storage, read> ix: array<i32>;
@group(0) @binding(3) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let R = mt[2];
  var xo = mt[3];
  var io = mt[4];
  var rem = i;
  for (var d = R - 1; d >= 0; d = d - 1) {{
    let s = mt[7 + d];
    let c = rem % s;
    rem = rem / s;
    xo = xo + c * mt[7 + R + d];
    io = io + c * mt[7 + 2 * R + d];
  }}
  var v = ix[io];
  if (v < 0) {{ v = v + mt[6]; }}
  out[i] = x[xo + v * mt[5]];
}}
"""


def _gather(be, x: WH, idx: WH, shape, xs, ids, dim_stride, dim_size) -> WH:
    from . import dtypes as T
    from .elementwise import _new
    out = _new(be.rt, tuple(shape), x.dtype)
    n = out.numel
    if n == 0:
        return out
    code = _GATHER.format(t=T.st(x.dtype))
    meta = [n, len(shape), x.offset, idx.offset, dim_stride, dim_size, *shape, *xs, *ids]
    be.rt.launch(code, out.st, [x.st, idx.st], meta, n)
    return out


def index_select(be, x: WH, index: WH, dim: int) -> WH:
    if x.ndim == 0:
        return NotImplemented
    shape = list(x.shape)
    shape[dim] = index.shape[0] if index.ndim else 1
    xs = list(x.strides)
    xs[dim] = 0
    ids = [0] * x.ndim
    ids[dim] = index.strides[0] if index.ndim else 0
    out = _gather(be, x, index, shape, xs, ids, x.strides[dim], x.shape[dim])
    return out


def gather(be, x: WH, index: WH, dim: int) -> WH:
    if x.ndim == 0 or index.ndim != x.ndim:
        return NotImplemented
    xs = list(x.strides)
    xs[dim] = 0
    return _gather(be, x, index, index.shape, xs, list(index.strides), x.strides[dim], x.shape[dim])


def take(be, x: WH, index: WH) -> WH:
    flat = be.run("reshape", (x, (x.numel,)), {})
    return _gather(be, flat, index, index.shape, [0] * index.ndim, list(index.strides), flat.strides[0],
                   x.numel)


OPS.update({"index_select": index_select, "gather": gather, "take": take})
