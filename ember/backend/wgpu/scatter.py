"""Scatters of the Wgpu backend: one kernel that writes (or atomically adds) every element of a source
at a position taken from an index tensor. It serves scatter, scatter_add / scatter_reduce('sum'),
index_add and max_pool's backward.

Float adds are compare-and-swap loops on the bits (WGSL has integer atomics only), so sums over
duplicate indices are exact per add but their order, and so the last bits, may vary between runs,
as with PyTorch's CUDA scatter_add. Plain scatter with duplicate indices keeps one of the values.
"""

from __future__ import annotations

from ... import _dtype as D
from . import dtypes as T
from .elementwise import _new
from .handle import WH
from .kernels import ew

_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{otype}>;
@group(0) @binding(1) var<storage, read> src: array<{t}>;
@group(0) @binding(2) var<storage, read> ix: array<i32>;
@group(0) @binding(3) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let R = mt[2];
  var oo = mt[3];
  var so = mt[4];
  var io = mt[5];
  var rem = i;
  for (var d = R - 1; d >= 0; d = d - 1) {{
    let s = mt[9 + d];
    let c = rem % s;
    rem = rem / s;
    oo = oo + c * mt[9 + R + d];
    so = so + c * mt[9 + 2 * R + d];
    io = io + c * mt[9 + 3 * R + d];
  }}
  var k = ix[io];
  if (k < 0) {{ k = k + mt[7]; }}
  oo = oo + k * mt[8];
  let v = src[so];
  {write}
}}
"""
_WRITE = {
    "store": "out[oo] = v;",
    "add_f32": """var old = atomicLoad(&out[oo]);
  loop {
    let r = atomicCompareExchangeWeak(&out[oo], old, bitcast<u32>(bitcast<f32>(old) + v));
    if (r.exchanged) { break; }
    old = r.old_value;
  }""",
    "add_int": "atomicAdd(&out[oo], v);",
}


def _scatter_into(be, out: WH, src: WH, index: WH, shape, dim: int, index_strides, mode: str) -> None:
    """out[..., index[p], ...] (=|+=) src[p] over the positions p of ``shape`` (dims of out, src and the
    index line up; out's stride along ``dim`` is replaced by the index value times that stride)."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return
    t = T.st(out.dtype)
    if mode == "add":
        mode = "add_f32" if t == "f32" else "add_int"
    otype = t if mode == "store" else ("atomic<u32>" if t == "f32" else f"atomic<{t}>")
    nd = len(shape)
    ost = list(out.strides[:nd]) + [0] * (nd - out.ndim)
    dim_stride = ost[dim]
    ost[dim] = 0
    sst = list(src.strides) if src.ndim == nd else [0] * nd
    code = _SRC.format(otype=otype, t=t, write=_WRITE[mode])
    meta = [n, nd, out.offset, src.offset, index.offset, dim, out.shape[dim], dim_stride, *shape, *ost, *sst,
            *index_strides]
    be.rt.launch(code, out.st, [src.st, index.st], meta, n)


def _fixed(be, out: WH) -> WH:
    """Round a scatter-add result to its dtype (half floats, narrow ints): adds ran in 32 bits."""
    if out.dtype in (D.float16, D.bfloat16, D.int8, D.int16, D.uint8):
        return ew(be.rt, T.fix(out.dtype, "v0"), [out], _new(be.rt, out.shape, out.dtype))
    return out


def _src_handle(be, src, like: WH, shape) -> WH:
    if isinstance(src, WH):
        return src if src.dtype is like.dtype else be.run("cast", (src, like.dtype), {})
    h = be.run("full", (), {"shape": (), "value": src, "dtype": like.dtype})
    return h.view(tuple(shape), (0,) * len(shape), h.offset)


def scatter(be, x: WH, index: WH, src, dim: int, reduce=None):
    if reduce not in (None, "add") or x.dtype is D.bool and reduce == "add" or index.ndim != x.ndim:
        return NotImplemented
    out = be.run("copy", (x,), {})
    s = _src_handle(be, src, x, index.shape)
    _scatter_into(be, out, s, index, index.shape, dim, list(index.strides), "store" if reduce is None else "add")
    return _fixed(be, out) if reduce == "add" else out


def scatter_reduce(be, x: WH, index: WH, src: WH, dim: int, reduce: str, include_self: bool):
    if reduce != "sum" or not include_self or x.dtype is D.bool or index.ndim != x.ndim:
        return NotImplemented
    return scatter(be, x, index, src, dim, "add")


def index_add(be, x: WH, index: WH, src: WH, dim: int, alpha=1):
    if x.dtype is D.bool or x.ndim == 0:
        return NotImplemented
    out = be.run("copy", (x,), {})
    if alpha != 1:
        src = be.run("mul", (src, alpha), {})
    src = _src_handle(be, src, x, src.shape)
    ist = [0] * x.ndim
    ist[dim] = index.strides[0] if index.ndim else 0
    _scatter_into(be, out, src, index, src.shape, dim, ist, "add")
    return _fixed(be, out)


def max_pool_backward(be, g: WH, indices: WH, input_size, disjoint=False):
    if T.st(g.dtype) != "f32":
        return NotImplemented
    N, C = g.shape[:2]
    P = 1
    for s in input_size:
        P *= s
    out = be.run("full", (), {"shape": (N, C) + tuple(input_size), "value": 0, "dtype": g.dtype})
    L = g.numel // max(1, N * C)
    g3 = be.run("reshape", (g, (N, C, L)), {})
    i3 = be.run("reshape", (indices, (N, C, L)), {})
    flat = out.view((N, C, P), (C * P, P, 1), out.offset)
    _scatter_into(be, flat, g3, i3, (N, C, L), 2, list(i3.strides), "store" if disjoint else "add")
    return out if disjoint else _fixed(be, out)


OPS = {"scatter": scatter, "scatter_reduce": scatter_reduce, "index_add": index_add,
       "max_pool_backward": max_pool_backward}
