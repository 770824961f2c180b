"""Scans of the Wgpu backend (cumsum, cumprod): one invocation per row, a sequential loop along the
scanned dim, accumulating in float32 (int32 for integers) and rounding each output to the dtype, as
the numpy backend does. Rows longer than ``_MAX_LEN`` take the host path (long loops in one
invocation are slow, and some drivers stop them)."""

from __future__ import annotations

from ... import _dtype as D
from . import dtypes as T
from .elementwise import _new
from .handle import WH
from .kernels import collapse, used_helpers

_MAX_LEN = 8192
_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{tout}>;
@group(0) @binding(1) var<storage, read> x: array<{tin}>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let RK = mt[2];
  var xo = mt[3 + RK];
  var oo = 0;
  var rem = i;
  for (var d = RK - 1; d >= 0; d = d - 1) {{
    let s = mt[3 + d];
    let c = rem % s;
    rem = rem / s;
    xo = xo + c * mt[4 + RK + d];
    oo = oo + c * mt[4 + 2 * RK + d];
  }}
  let L = mt[4 + 3 * RK];
  let xs = mt[5 + 3 * RK];
  let os = mt[6 + 3 * RK];
  var acc: {tacc} = {init};
  for (var j = 0; j < L; j = j + 1) {{
    acc = acc {op} {load};
    out[oo + j * os] = {fin};
  }}
}}
"""


def _scan(be, x: WH, dim: int, dtype, op: str, init: str):
    if x.ndim == 0:
        x = x.view((1,), (1,), x.offset)
        dim = 0
    L = x.shape[dim]
    if L > _MAX_LEN or dtype is D.bool:
        return NotImplemented
    out = _new(be.rt, x.shape, dtype)
    rows = x.numel // max(L, 1)
    if out.numel == 0:
        return out.view(out.shape if x.ndim else (), out.strides if x.ndim else (), 0) if x.ndim else out
    keep = [d for d in range(x.ndim) if d != dim]
    kshape, (kst, ost) = collapse(tuple(x.shape[d] for d in keep),
                                  [tuple(x.strides[d] for d in keep), tuple(out.strides[d] for d in keep)])
    ta, tin = T.st(dtype), T.st(x.dtype)
    load = "x[xo + j * xs]"
    if ta != tin:
        if tin == "f32":
            load = f"_f2i({load})" if ta == "i32" else f"bitcast<u32>(_f2i({load}))"
        else:
            load = f"{ta}({load})"
    code = _SRC.format(tout=ta, tin=tin, tacc=ta, init=init, op=op, load=load, fin=T.fix(dtype, "acc"))
    meta = [rows, len(kshape), *kshape, x.offset, *kst, *ost, L, x.strides[dim], out.strides[dim]]
    be.rt.launch(used_helpers(T.HELPERS, code) + code, out.st, [x.st], meta, rows)
    return out


def cumsum(be, x, dim, dtype):
    out = _scan(be, x, dim, dtype, "+", T.zero(T.st(dtype)) if dtype is not D.bool else "0u")
    if out is not NotImplemented and x.ndim == 0:
        return out.view((), (), 0)
    return out


def cumprod(be, x, dim, dtype):
    one = {"f32": "1.0", "i32": "1i", "u32": "1u"}[T.st(dtype)]
    out = _scan(be, x, dim, dtype, "*", one)
    if out is not NotImplemented and x.ndim == 0:
        return out.view((), (), 0)
    return out


OPS = {"cumsum": cumsum, "cumprod": cumprod}
