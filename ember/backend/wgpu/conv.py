"""Convolution of the Wgpu backend as im2col plus the tiled matmul, for any number of spatial dims.

``im2col`` is one gather kernel (zero outside the padded input); ``conv`` multiplies the weight by the
columns per group with one batched matmul; ``conv_weight`` (the weight gradient) multiplies the output
gradient by the transposed columns and sums over the batch; ``conv_transpose`` (also conv's input
gradient) multiplies the transposed weight by the input into columns and folds them with ``col2im``,
a gather kernel (each output element sums the column entries that land on it: no atomics).
"""

from __future__ import annotations

import math

from ..meta import conv_out_size
from . import dtypes as T
from .elementwise import _new
from .handle import WH
from .kernels import used_helpers

_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{t}>;
@group(0) @binding(1) var<storage, read> x: array<{t}>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let S = mt[2]; let C = mt[3]; let KP = mt[4]; let L = mt[5];
  var l = i % L;
  var rest = i / L;
  var kk = rest % KP;
  rest = rest / KP;
  let c = rest % C;
  let n = rest / C;
  var o = mt[6] + n * mt[7] + c * mt[8];
  var inside = true;
  for (var d = S - 1; d >= 0; d = d - 1) {{
    let p = 9 + 7 * d;
    let od = l % mt[p + 1];
    l = l / mt[p + 1];
    let kd = kk % mt[p + 2];
    kk = kk / mt[p + 2];
    let pos = od * mt[p + 3] - mt[p + 4] + kd * mt[p + 5];
    if (pos < 0 || pos >= mt[p]) {{ inside = false; }}
    o = o + pos * mt[p + 6];
  }}
  if (inside) {{ out[i] = x[o]; }} else {{ out[i] = {zero}; }}
}}
"""


_out_size = conv_out_size


def im2col(be, x: WH, kernel_size, dilation, padding, stride) -> WH:
    N, C = x.shape[:2]
    sp = x.shape[2:]
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(sp, padding, kernel_size, stride, dilation))
    kp, L = math.prod(kernel_size), math.prod(osz)
    out = _new(be.rt, (N, C * kp, L), x.dtype)
    total = N * C * kp * L
    if total == 0:
        return out
    t = T.st(x.dtype)
    meta = [total, len(sp), C, kp, L, x.offset, x.strides[0], x.strides[1]]
    for d in range(len(sp)):
        meta += [sp[d], osz[d], kernel_size[d], stride[d], padding[d][0], dilation[d], x.strides[2 + d]]
    code = _SRC.format(t=t, zero=T.zero(t))
    be.rt.launch(code + used_helpers(T.HELPERS, code), out.st, [x.st], meta, total)
    return out


def conv(be, x: WH, w: WH, b=None, *, stride, padding, dilation, groups):
    if x.dtype is not w.dtype or T.st(x.dtype) != "f32":
        return NotImplemented
    N, C = x.shape[:2]
    O = w.shape[0]
    k = w.shape[2:]
    sp = x.shape[2:]
    osz = tuple(_out_size(n, lo, hi, kk, s, d) for n, (lo, hi), kk, s, d in zip(sp, padding, k, stride, dilation))
    L, kp, g = math.prod(osz), math.prod(k), groups
    if N * O * L == 0 or C * kp == 0:
        out = be.run("full", (), {"shape": (N, O) + osz, "value": 0, "dtype": x.dtype})
        return out if b is None else be.run("add", (out, be.run("reshape", (b, (1, O) + (1,) * len(osz)), {})), {})
    cols = im2col(be, x, k, dilation, padding, stride)               # (N, C*kp, L)
    cols = be.run("reshape", (cols, (N, g, (C // g) * kp, L)), {})
    wm = be.run("reshape", (w, (1, g, O // g, (C // g) * kp)), {})
    y = be.run("matmul", (wm, cols), {})                             # (N, g, O/g, L)
    y = be.run("reshape", (y, (N, O) + osz), {})
    if b is not None:
        y = be.run("add", (y, be.run("reshape", (b, (1, O) + (1,) * len(osz)), {})), {})
    return y


def conv_weight(be, x: WH, g: WH, *, kernel_size, stride, padding, dilation, groups):
    if x.dtype is not g.dtype or T.st(x.dtype) != "f32":
        return NotImplemented
    N, C = x.shape[:2]
    O = g.shape[1]
    kp, G = math.prod(kernel_size), groups
    L = math.prod(g.shape[2:])
    if N * L == 0 or C * kp * O == 0:
        return be.run("full", (), {"shape": (O, C // G) + tuple(kernel_size), "value": 0, "dtype": x.dtype})
    cols = im2col(be, x, kernel_size, dilation, padding, stride)     # (N, C*kp, L)
    cols = be.run("reshape", (cols, (N, G, (C // G) * kp, L)), {})
    cols_t = be.run("permute", (cols, (0, 1, 3, 2)), {})            # (N, G, L, C/G*kp), a view
    gm = be.run("reshape", (g, (N, G, O // G, L)), {})
    part = be.run("matmul", (gm, cols_t), {})                        # (N, G, O/G, C/G*kp)
    tot = be.run("sum", (part,), {"dim": (0,), "keepdim": False, "dtype": x.dtype})
    return be.run("reshape", (tot, (O, C // G) + tuple(kernel_size)), {})


_COL2IM = """@group(0) @binding(0) var<storage, read_write> out: array<{t}>;
@group(0) @binding(1) var<storage, read> cols: array<{t}>;
@group(0) @binding(2) var<storage, read> mt: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let S = mt[2]; let C = mt[3]; let KP = mt[4]; let L = mt[5]; let OL = mt[6];
  let plane = i / OL;
  let o0 = i % OL;
  let c = plane % C;
  let n = plane / C;
  var acc: {t} = {zero};
  for (var kk = 0; kk < KP; kk = kk + 1) {{
    var o = o0; var k = kk; var l = 0; var inner = 1; var hit = true;
    for (var d = S - 1; d >= 0; d = d - 1) {{
      let p = 7 + 6 * d;
      let od = o % mt[p]; o = o / mt[p];
      let kd = k % mt[p + 2]; k = k / mt[p + 2];
      let b = od + mt[p + 4] - kd * mt[p + 5];
      let s = mt[p + 3];
      if (b < 0 || b % s != 0 || b / s >= mt[p + 1]) {{ hit = false; }}
      l = l + (b / s) * inner;
      inner = inner * mt[p + 1];
    }}
    if (hit) {{ acc = acc + cols[((n * C + c) * KP + kk) * L + l]; }}
  }}
  out[i] = {fin};
}}
"""


def _col2im(be, cols: WH, C, output_size, blocks, kernel_size, dilation, lo, stride) -> WH:
    """(N, C*kp, L) columns -> (N, C, *output_size); block b at kernel offset k lands on b*s + k*d - lo."""
    N = cols.shape[0]
    out = _new(be.rt, (N, C) + tuple(output_size), cols.dtype)
    total = out.numel
    if total == 0:
        return out
    cols = be.run("contiguous", (cols,), {})
    t = T.st(cols.dtype)
    code = _COL2IM.format(t=t, zero=T.zero(t), fin=T.fix(cols.dtype, "acc"))
    meta = [total, len(output_size), C, math.prod(kernel_size), math.prod(blocks), math.prod(output_size)]
    for d in range(len(output_size)):
        meta += [output_size[d], blocks[d], kernel_size[d], stride[d], lo[d], dilation[d]]
    be.rt.launch(used_helpers(T.HELPERS, code) + code, out.st, [cols.st], meta, total)
    return out


def col2im(be, cols: WH, output_size, kernel_size, dilation, padding, stride):
    if T.st(cols.dtype) == "u32":
        return NotImplemented
    kp = math.prod(kernel_size)
    C = cols.shape[1] // kp if kp else 0
    blocks = tuple(_out_size(n, lo, hi, k, s, d)
                   for n, (lo, hi), k, s, d in zip(output_size, padding, kernel_size, stride, dilation))
    if kp == 0 or math.prod(blocks) != cols.shape[2]:
        return NotImplemented
    return _col2im(be, cols, C, tuple(output_size), blocks, tuple(kernel_size), tuple(dilation),
                   tuple(p[0] for p in padding), tuple(stride))


def conv_transpose(be, x: WH, w: WH, b=None, *, stride, padding, dilation, groups):
    if x.dtype is not w.dtype or T.st(x.dtype) != "f32":
        return NotImplemented
    N, Cin = x.shape[:2]
    G = groups
    Ci, Co = Cin // G, w.shape[1]
    k = tuple(w.shape[2:])
    kp = math.prod(k)
    isz = x.shape[2:]
    L = math.prod(isz)
    osz = tuple((n - 1) * s + d * (kk - 1) + 1 - lo - hi
                for n, (lo, hi), kk, s, d in zip(isz, padding, k, stride, dilation))
    if N * G * Co * math.prod(osz) == 0 or Ci * kp * L == 0:
        out = be.run("full", (), {"shape": (N, G * Co) + osz, "value": 0, "dtype": x.dtype})
    else:
        wt = be.run("permute", (be.run("reshape", (w, (1, G, Ci, Co * kp)), {}), (0, 1, 3, 2)), {})
        xm = be.run("reshape", (x, (N, G, Ci, L)), {})
        cols = be.run("matmul", (wt, xm), {})                         # (N, G, Co*kp, L)
        cols = be.run("reshape", (cols, (N, G * Co * kp, L)), {})
        out = _col2im(be, cols, G * Co, osz, tuple(isz), k, tuple(dilation), tuple(p[0] for p in padding),
                      tuple(stride))
    if b is not None:
        out = be.run("add", (out, be.run("reshape", (b, (1, G * Co) + (1,) * len(osz)), {})), {})
    return out


OPS = {"im2col": im2col, "conv": conv, "conv_weight": conv_weight, "col2im": col2im,
       "conv_transpose": conv_transpose}
