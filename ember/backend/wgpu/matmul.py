"""Batched matmul of the Wgpu backend: a 16x16-tiled kernel in workgroup memory that reads both
operands through their strides (transposed and broadcast operands need no copy) and accumulates in
float32 (int32 for integers)."""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .elementwise import _bshape, _new
from .handle import WH
from .kernels import used_helpers

_TILE = 16
_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{t}>;
@group(0) @binding(1) var<storage, read> a: array<{t}>;
@group(0) @binding(2) var<storage, read> b: array<{t}>;
@group(0) @binding(3) var<storage, read> mt: array<i32>;
var<workgroup> As: array<{t}, 256>;
var<workgroup> Bs: array<{t}, 256>;
{helpers}
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {{
  let M = mt[1]; let N = mt[2]; let K = mt[3]; let RB = mt[4];
  let col = i32(gid.x); let row = i32(gid.y); let bi = i32(wid.z);
  let lx = i32(lid.x); let ly = i32(lid.y);
  var ao = mt[5 + RB]; var bo = mt[8 + 2 * RB];
  var rem = bi;
  for (var d = RB - 1; d >= 0; d = d - 1) {{
    let s = mt[5 + d];
    let c = rem % s;
    rem = rem / s;
    ao = ao + c * mt[6 + RB + d];
    bo = bo + c * mt[9 + 2 * RB + d];
  }}
  let asm_ = mt[6 + 2 * RB]; let ask = mt[7 + 2 * RB];
  let bsk = mt[9 + 3 * RB]; let bsn = mt[10 + 3 * RB];
  var acc: {t} = {zero};
  let tiles = (K + 15) / 16;
  for (var t = 0; t < tiles; t = t + 1) {{
    let ka = t * 16 + lx;
    let kb = t * 16 + ly;
    As[ly * 16 + lx] = select({zero}, a[ao + row * asm_ + ka * ask], row < M && ka < K);
    Bs[ly * 16 + lx] = select({zero}, b[bo + kb * bsk + col * bsn], col < N && kb < K);
    workgroupBarrier();
    for (var k = 0; k < 16; k = k + 1) {{
      acc = acc + As[ly * 16 + k] * Bs[k * 16 + lx];
    }}
    workgroupBarrier();
  }}
  if (row < M && col < N) {{
    out[bi * M * N + row * N + col] = {fin};
  }}
}}
"""


def matmul(be, a: WH, b: WH):
    if a.dtype is not b.dtype or a.dtype is D.bool:
        return NotImplemented
    t = T.st(a.dtype)
    a2 = a.view((1,) + a.shape, (0,) + a.strides, a.offset) if a.ndim == 1 else a
    b2 = b.view(b.shape + (1,), b.strides + (0,), b.offset) if b.ndim == 1 else b
    M, K = a2.shape[-2:]
    N = b2.shape[-1]
    batch = _bshape(a2.shape[:-2], b2.shape[:-2]) if (a2.ndim > 2 or b2.ndim > 2) else ()
    shape = batch + (M, N)
    if a.ndim == 1 and b.ndim == 1:
        final = ()
    elif a.ndim == 1:
        final = batch + (N,)
    elif b.ndim == 1:
        final = batch + (M,)
    else:
        final = shape
    out = _new(be.rt, shape, a.dtype)
    nb = math.prod(batch)
    if M * N * nb == 0 or K == 0:
        return be.run("full", (), {"shape": final, "value": 0, "dtype": a.dtype})

    def bstrides(h):
        pad = len(batch) - (h.ndim - 2)
        st = [0] * pad
        for n, s, want in zip(h.shape[:-2], h.strides[:-2], batch[pad:]):
            st.append(0 if n == 1 and want != 1 else s)
        return st

    zero = T.zero(t)
    code = _SRC.format(t=t, zero=zero, fin=T.fix(a.dtype, "acc"), helpers="{helpers}")
    code = code.replace("{helpers}", used_helpers(T.HELPERS, code))
    meta = [M, N, K, len(batch), *batch, a2.offset, *bstrides(a2), a2.strides[-2], a2.strides[-1],
            b2.offset, *bstrides(b2), b2.strides[-2], b2.strides[-1]]
    groups = (-(-N // _TILE), -(-M // _TILE), nb)
    be.rt.launch(code, out.st, [a2.st, b2.st], meta, M * N * nb, groups=groups)
    if final != shape:
        return be.run("reshape", (out, final), {})
    return out


OPS = {"matmul": matmul}
