"""Reductions of the Wgpu backend: one kernel family, one invocation per output element, looping over
the reduced elements through the input's strides (any dims, any layout, no copies).

Half-precision inputs accumulate in float32 and round once, as PyTorch's CPU reductions do.
``var`` is built from mean, sub, mul and sum kernels.
"""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .elementwise import HELPERS, _new
from .handle import WH
from .kernels import collapse, used_helpers  # noqa: F401

_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{tout}>;
@group(0) @binding(1) var<storage, read> x: array<{tin}>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
{helpers}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let t = i32(gid.x) + i32(gid.y) * mt[0];
  let q = 4 + 2 * mt[2];
  let P = mt[q + 2 + 2 * mt[q + 1]];
  if (t >= mt[1] * P) {{ return; }}
  let i = t / P;
  let part = t % P;
  let RK = mt[2];
  var base = mt[3 + RK];
  var rem = i;
  for (var d = RK - 1; d >= 0; d = d - 1) {{
    let s = mt[3 + d];
    base = base + (rem % s) * mt[4 + RK + d];
    rem = rem / s;
  }}
  let M = mt[q];
  let RR = mt[q + 1];
  let chunk = mt[q + 3 + 2 * RR];
  let j0 = part * chunk;
  let j1 = min(M, j0 + chunk);
  var acc: {tacc} = {init};
  var idx = 0;
  for (var j = j0; j < j1; j = j + 1) {{
    var r = j;
    var o = base;
    for (var d = RR - 1; d >= 0; d = d - 1) {{
      let s = mt[q + 2 + d];
      o = o + (r % s) * mt[q + 2 + RR + d];
      r = r / s;
    }}
    let v = {load};
    {step}
  }}
  out[t] = {fin};
}}
"""


# A reduction with few outputs and many elements each runs in two passes: P partial results per output
# (one invocation each), then a reduction of the partials, so that the work spreads over the device.
_SPLIT_MIN = 4096   # reduced elements per output from which to split
_PART = 1024        # elements per partial


def _reduce(be, x: WH, dims, keepdim: bool, out_dtype, tacc: str, init: str, load: str, step: str, fin: str,
            split: bool = True, count: int | None = None, parts_out: bool = False) -> WH:
    nd = x.ndim
    dims = tuple(range(nd)) if dims is None else tuple(sorted(d % nd for d in dims)) if nd else ()
    keep = [d for d in range(nd) if d not in dims]
    out_shape = tuple(1 if d in dims else x.shape[d] for d in range(nd)) if keepdim else \
        tuple(x.shape[d] for d in keep)
    out = _new(be.rt, out_shape, out_dtype)
    n = math.prod(x.shape[d] for d in keep)
    if n == 0:
        return out
    kshape, (kst,) = collapse(tuple(x.shape[d] for d in keep), [tuple(x.strides[d] for d in keep)])
    rshape, (rst,) = collapse(tuple(x.shape[d] for d in dims), [tuple(x.strides[d] for d in dims)])
    m = math.prod(x.shape[d] for d in dims)
    # long loops also fail on some drivers (lavapipe stops a loop past ~2**14 iterations): never loop
    # over more than _PART * 4 elements in one invocation
    parts = -(-m // _PART) if split and m >= _SPLIT_MIN else 1
    if parts > 1:
        # pass 1: partial accumulators (stored type of the accumulator, no rounding); pass 2: combine them
        pdtype = {"f32": D.float32, "i32": D.int32, "u32": D.bool if out_dtype is D.bool else D.uint8}[tacc]
        partial = _new(be.rt, (n, parts), pdtype)
        _launch(be, partial, x, kshape, kst, m, rshape, rst, parts, tacc, init, load, step, "acc", m)
        out2 = _reduce(be, partial, (1,), False, out_dtype, tacc, init, "x[o]", step, fin, count=m)
        return out2.view(out_shape, out.strides, 0)
    _launch(be, out, x, kshape, kst, m, rshape, rst, 1, tacc, init, load, step, fin, m if count is None else count)
    return out


def _launch(be, out, x, kshape, kst, m, rshape, rst, parts, tacc, init, load, step, fin, count):
    code = _SRC.format(tout=T.st(out.dtype), tin=T.st(x.dtype), tacc=tacc, init=init, load=load, step=step,
                       fin=fin.replace("CNT", "f32(mt[q + 4 + 2 * RR])"), helpers="{helpers}")
    code = code.replace("{helpers}", used_helpers(T.HELPERS + HELPERS, code))
    n = math.prod(kshape)
    chunk = -(-m // parts)
    meta = [n, len(kshape), *kshape, x.offset, *kst, m, len(rshape), *rshape, *rst, parts, chunk, count]
    be.rt.launch(code, out.st, [x.st], meta, n * parts)


def _acc_load(x: WH, out_dtype) -> tuple:
    """(accumulator WGSL type, expression loading x[o] into it) for a sum-like reduction."""
    ta, tin = T.st(out_dtype), T.st(x.dtype)
    load = "x[o]"
    if ta != tin:
        if tin == "f32":  # float elements summed as integers: each truncates first, as C casts do
            load = "_f2i(x[o])" if ta == "i32" else "bitcast<u32>(_f2i(x[o]))"
        else:
            load = f"{ta}(x[o])"
    return ta, load


def sum_(be, x, dim, keepdim, dtype, _nan=False):
    ta, load = _acc_load(x, dtype)
    step = "acc = acc + v;"
    if _nan and ta == "f32":
        step = "if (!_isnan(v)) { acc = acc + v; }"
    if dtype is D.bool:
        return NotImplemented
    return _reduce(be, x, dim, keepdim, dtype, ta, T.zero(ta), load, step, T.fix(dtype, "acc"))


def nansum(be, x, dim, keepdim, dtype):
    return sum_(be, x, dim, keepdim, dtype, _nan=True)


def prod(be, x, dim, keepdim, dtype):
    if dtype is D.bool:
        return NotImplemented
    ta, load = _acc_load(x, dtype)
    one = {"f32": "1.0", "i32": "1i", "u32": "1u"}[ta]
    return _reduce(be, x, dim, keepdim, dtype, ta, one, load, "acc = acc * v;", T.fix(dtype, "acc"))


def mean(be, x, dim, keepdim, dtype):
    if T.st(dtype) != "f32":
        return NotImplemented
    ta, load = _acc_load(x, dtype)
    return _reduce(be, x, dim, keepdim, dtype, "f32", "0.0", load, "acc = acc + v;",
                   T.fix(dtype, "acc / CNT"))


def _extreme(be, x, dim, keepdim, fn):
    t = T.st(x.dtype)
    op = f"_{fn}(acc, v)" if t == "f32" else f"{fn}(acc, v)"
    return _reduce(be, x, dim, keepdim, x.dtype, t, T.zero(t), "x[o]",
                   f"if (j == j0) {{ acc = v; }} else {{ acc = {op}; }}", "acc")


def amax(be, x, dim, keepdim):
    return _extreme(be, x, dim, keepdim, "max")


def amin(be, x, dim, keepdim):
    return _extreme(be, x, dim, keepdim, "min")


def _logic(be, x, dim, keepdim, is_all: bool):
    t = T.st(x.dtype)
    truth = f"select(1u, 0u, x[o] == {T.zero(t)})"
    step = "acc = acc & v;" if is_all else "acc = acc | v;"
    return _reduce(be, x, dim, keepdim, D.bool, "u32", "1u" if is_all else "0u", truth, step, "acc")


def all_(be, x, dim, keepdim):
    return _logic(be, x, dim, keepdim, True)


def any_(be, x, dim, keepdim):
    return _logic(be, x, dim, keepdim, False)


def _arg(be, x, dim, keepdim, cmp: str):
    t = T.st(x.dtype)
    if dim is None:
        x = be.run("reshape", (x, (x.numel,)), {}) if x.ndim != 1 else x
        dims, keepdim_ = (0,), False
    else:
        dims, keepdim_ = (dim,), keepdim
    better = f"v {cmp} acc"
    if t == "f32":  # NaN wins, and the first NaN stays
        better = f"!_isnan(acc) && (_isnan(v) || v {cmp} acc)"
    step = f"if (j == j0 || ({better})) {{ acc = v; idx = j; }}"
    m = math.prod(x.shape[d] for d in dims)
    if m < _SPLIT_MIN:
        return _reduce(be, x, dims, keepdim_, D.int64, t, T.zero(t), "x[o]", step, "idx", split=False)
    # chunked: per chunk its extreme value and the (global) index of it; the first best chunk wins, which
    # keeps PyTorch's first-max and first-NaN rules
    nd = x.ndim
    perm = tuple(d for d in range(nd) if d not in dims) + tuple(dims)
    xp = be.run("permute", (x, perm), {})
    keep_shape = xp.shape[:nd - len(dims)]
    x2 = be.run("reshape", (xp, keep_shape + (m,)), {})
    parts = -(-m // _PART)
    n = math.prod(keep_shape)
    kshape, (kst,) = collapse(keep_shape, [x2.strides[:-1]])
    idx = _new(be.rt, (n, parts), D.int32)
    _launch(be, idx, x2, kshape, kst, m, (m,), (x2.strides[-1],), parts, t, T.zero(t), "x[o]", step, "idx", m)
    vals = _new(be.rt, (n, parts), x.dtype)
    fn = "max" if cmp == ">" else "min"
    op = f"_{fn}(acc, v)" if t == "f32" else f"{fn}(acc, v)"
    _launch(be, vals, x2, kshape, kst, m, (m,), (x2.strides[-1],), parts, t, T.zero(t), "x[o]",
            f"if (j == j0) {{ acc = v; }} else {{ acc = {op}; }}", "acc", m)
    best = _arg(be, vals, 1, True, cmp)                                  # (n, 1): the chunk
    r = be.run("gather", (idx, best), {"dim": 1})                       # (n, 1)
    out_shape = tuple(1 if d in dims else x.shape[d] for d in range(nd)) if keepdim_ else keep_shape
    r = be.run("reshape", (r, out_shape), {})
    r.dtype = D.int64
    return r


def argmax(be, x, dim, keepdim):
    return _arg(be, x, dim, keepdim, ">")


def argmin(be, x, dim, keepdim):
    return _arg(be, x, dim, keepdim, "<")


def max_dim(be, x, dim, keepdim):
    return amax(be, x, (dim,), keepdim), argmax(be, x, dim, keepdim)


def min_dim(be, x, dim, keepdim):
    return amin(be, x, (dim,), keepdim), argmin(be, x, dim, keepdim)


def var(be, x, dim, correction, keepdim):
    if T.st(x.dtype) != "f32":
        return NotImplemented
    low = x.dtype is not D.float32
    xf = be.run("cast", (x, D.float32), {}) if low else x
    m = mean(be, xf, dim, True, D.float32)
    d = be.run("sub", (xf, m), {})
    s = sum_(be, be.run("mul", (d, d), {}), dim, keepdim, D.float32)
    nd = x.ndim
    dims = range(nd) if dim is None else dim
    n = math.prod(x.shape[k] for k in dims)
    r = be.run("div", (s, float(max(0, n - correction))), {})
    return be.run("cast", (r, x.dtype), {}) if low else r


OPS = {"sum": sum_, "nansum": nansum, "prod": prod, "mean": mean, "amax": amax, "amin": amin, "all": all_,
       "any": any_, "argmax": argmax, "argmin": argmin, "max_dim": max_dim, "min_dim": min_dim, "var": var}
