"""Max pooling of the Wgpu backend: one invocation per output element loops over its window (any
number of spatial dims) with PyTorch's CPU rules: padding is never chosen, ties keep the first max,
the last NaN wins. Values and int64 per-plane indices are two launches of the same kernel."""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .conv import _out_size
from .elementwise import _new
from .handle import WH
from .kernels import used_helpers

_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{tout}>;
@group(0) @binding(1) var<storage, read> x: array<{t}>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let S = mt[2]; let OL = mt[3]; let KP = mt[4]; let C = mt[6];
  let plane = i / OL;
  let l0 = i % OL;
  let base = mt[5] + (plane / C) * mt[7] + (plane % C) * mt[8];
  var best: {t} = {lowest};
  var bidx = -1;
  for (var kk = 0; kk < KP; kk = kk + 1) {{
    var l = l0; var k = kk; var off = base; var flat = 0; var inside = true; var inner = 1;
    for (var d = S - 1; d >= 0; d = d - 1) {{
      let p = 9 + 7 * d;
      let od = l % mt[p + 1]; l = l / mt[p + 1];
      let kd = k % mt[p + 2]; k = k / mt[p + 2];
      let pos = od * mt[p + 3] - mt[p + 4] + kd * mt[p + 5];
      if (pos < 0 || pos >= mt[p]) {{ inside = false; }}
      off = off + pos * mt[p + 6];
      flat = flat + pos * inner;
      inner = inner * mt[p];
    }}
    if (inside) {{
      if (bidx < 0) {{ bidx = flat; }}
      let v = x[off];
      if ({better}) {{ best = v; bidx = flat; }}
    }}
  }}
  out[i] = {result};
}}
"""


def _launch(be, x: WH, kernel_size, stride, padding, dilation, want_index: bool) -> WH:
    N, C = x.shape[:2]
    isz = x.shape[2:]
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(isz, padding, kernel_size, stride, dilation))
    out = _new(be.rt, (N, C) + osz, D.int64 if want_index else x.dtype)
    total = out.numel
    if total == 0:
        return out
    t = T.st(x.dtype)
    lowest = {"f32": "bitcast<f32>(0xff800000u)", "i32": "i32(-2147483647 - 1)", "u32": "0u"}[t]
    better = "v > best || _isnan(v)" if t == "f32" else "v > best"
    code = _SRC.format(tout="i32" if want_index else t, t=t, lowest=lowest, better=better,
                       result="bidx" if want_index else "best")
    code = code.replace("{helpers}", "")
    from .elementwise import HELPERS
    code = used_helpers(HELPERS, code) + code
    meta = [total, len(isz), math.prod(osz), math.prod(kernel_size), x.offset, C, x.strides[0], x.strides[1]]
    for d in range(len(isz)):
        meta += [isz[d], osz[d], kernel_size[d], stride[d], padding[d][0], dilation[d], x.strides[2 + d]]
    be.rt.launch(code, out.st, [x.st], meta, total)
    return out


def max_pool(be, x, kernel_size, stride, padding, dilation):
    if x.dtype is D.bool:
        return NotImplemented
    return (_launch(be, x, kernel_size, stride, padding, dilation, False),
            _launch(be, x, kernel_size, stride, padding, dilation, True))


def max_pool_values(be, x, kernel_size, stride, padding, dilation):
    if x.dtype is D.bool:
        return NotImplemented
    return _launch(be, x, kernel_size, stride, padding, dilation, False)


OPS = {"max_pool": max_pool, "max_pool_values": max_pool_values}


# ---- average pooling (floats; integer inputs take the host path) -----------------------------------
_AVG_DIV = """
fn _avg_div(o_flat: i32) -> f32 {
  // the divisor of output position o: its window clipped to the padded input (or to the input)
  if (mt[4] != 0) { return f32(mt[4]); }
  var o = o_flat; var div = 1;
  for (var d = mt[2] - 1; d >= 0; d = d - 1) {
    let p = 7 + 5 * d;
    let od = o % mt[p + 1]; o = o / mt[p + 1];
    let start = od * mt[p + 3] - mt[p + 4];
    let end = min(start + mt[p + 2], mt[p] + mt[p + 4]);
    var n = end - start;
    if (mt[3] == 0) { n = min(end, mt[p]) - max(start, 0); }
    div = div * max(n, 1);
  }
  return f32(div);
}
"""
# mt: [row, n, S, count_include_pad, divisor_override (0: none; PyTorch refuses 0), x_off, OL,
#      per dim (I, O, k, s, p)]
_AVG = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
""" + _AVG_DIV + """
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) { return; }
  let S = mt[2]; let OL = mt[6];
  let plane = i / OL;
  let l0 = i % OL;
  var IL = 1; var KP = 1;
  for (var d = 0; d < S; d = d + 1) { IL = IL * mt[7 + 5 * d]; KP = KP * mt[9 + 5 * d]; }
  let base = mt[5] + plane * IL;
  var acc = 0.0;
  for (var kk = 0; kk < KP; kk = kk + 1) {
    var l = l0; var k = kk; var off = 0; var inside = true; var inner = 1;
    for (var d = S - 1; d >= 0; d = d - 1) {
      let p = 7 + 5 * d;
      let od = l % mt[p + 1]; l = l / mt[p + 1];
      let kd = k % mt[p + 2]; k = k / mt[p + 2];
      let pos = od * mt[p + 3] - mt[p + 4] + kd;
      if (pos < 0 || pos >= mt[p]) { inside = false; }
      off = off + pos * inner;
      inner = inner * mt[p];
    }
    if (inside) { acc = acc + x[base + off]; }
  }
  out[i] = FIX;
}
"""
# backward: one invocation per input element gathers g / divisor of every window holding it
_AVG_BW = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
""" + _AVG_DIV + """
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) { return; }
  let S = mt[2]; let OL = mt[6];
  var IL = 1; var KP = 1;
  for (var d = 0; d < S; d = d + 1) { IL = IL * mt[7 + 5 * d]; KP = KP * mt[9 + 5 * d]; }
  let plane = i / IL;
  let i0 = i % IL;
  var acc = 0.0;
  for (var kk = 0; kk < KP; kk = kk + 1) {
    var r = i0; var k = kk; var o = 0; var hit = true; var inner = 1;
    for (var d = S - 1; d >= 0; d = d - 1) {
      let p = 7 + 5 * d;
      let id = r % mt[p]; r = r / mt[p];
      let kd = k % mt[p + 2]; k = k / mt[p + 2];
      let t = id + mt[p + 4] - kd;
      let s = mt[p + 3];
      if (t < 0 || t % s != 0 || t / s >= mt[p + 1]) { hit = false; }
      o = o + (t / s) * inner;
      inner = inner * mt[p + 1];
    }
    if (hit) { acc = acc + x[mt[5] + plane * OL + o] / _avg_div(o); }
  }
  out[i] = FIX;
}
"""


def _pool_osz(isz, kernel_size, stride, padding, ceil_mode):
    osz = []
    for n, k, s, p in zip(isz, kernel_size, stride, padding):
        o = (n + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        osz.append(o)
    return tuple(osz)


def _avg_meta(total, isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override, off):
    meta = [total, len(isz), int(bool(count_include_pad)), int(divisor_override or 0), off, math.prod(osz)]
    for d in range(len(isz)):
        meta += [isz[d], osz[d], kernel_size[d], stride[d], padding[d]]
    return meta


def avg_pool(be, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if T.st(x.dtype) != "f32":
        return NotImplemented
    x = be.run("contiguous", (x,), {})
    isz = x.shape[2:]
    osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
    out = _new(be.rt, x.shape[:2] + osz, x.dtype)
    if out.numel == 0:
        return out
    if math.prod(isz) == 0:
        return NotImplemented
    code = _AVG.replace("FIX", T.fix(x.dtype, "acc / _avg_div(l0)"))
    meta = _avg_meta(out.numel, isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override,
                     x.offset)
    be.rt.launch(used_helpers(T.HELPERS, code) + code, out.st, [x.st], meta, out.numel)
    return out


def avg_pool_backward(be, g, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override):
    if T.st(g.dtype) != "f32":
        return NotImplemented
    g = be.run("contiguous", (g,), {})
    isz = tuple(input_size)
    osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
    out = _new(be.rt, g.shape[:2] + isz, g.dtype)
    if out.numel == 0:
        return out
    if g.numel == 0:
        return be.run("full", (), {"shape": out.shape, "value": 0, "dtype": g.dtype})
    code = _AVG_BW.replace("FIX", T.fix(g.dtype, "acc"))
    meta = _avg_meta(out.numel, isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override,
                     g.offset)
    be.rt.launch(used_helpers(T.HELPERS, code) + code, out.st, [g.st], meta, out.numel)
    return out


OPS.update({"avg_pool": avg_pool, "avg_pool_backward": avg_pool_backward})
