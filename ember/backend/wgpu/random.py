"""Counter-based random numbers of the Wgpu backend: the numpy backend's stream, bit for bit.

Word ``j`` of an op is lane ``j % 4`` of Philox4x64-10 keyed by ``seed`` at counter
``offset + 1 + j // 4`` (see ``ember/backend/numpy/random.py``); WGSL has no 64-bit integers, so the
64-bit multiplies run on pairs of u32. Uniforms take the top bits of a word's halves as the numpy
backend does, so ``rand`` gives identical values on both backends for the same ``manual_seed``;
``randn`` uses the same Box-Muller pairs, through the device's log/cos/sin (a few ulps apart).
Ops that read 53-bit uniforms or a data-dependent number of words (bernoulli, randint, randperm,
multinomial, poisson) and float64 run on the host.
"""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .elementwise import _new

_SIG = {D.float32: 24, D.float16: 11, D.bfloat16: 8}

PHILOX = """
fn _mul32(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xFFFFu; let a1 = a >> 16u; let b0 = b & 0xFFFFu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);
  return vec2<u32>((p00 & 0xFFFFu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn _add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
// (lo, hi) 64-bit halves of the 128-bit product a * b, as vec4(lo.x, lo.y, hi.x, hi.y)
fn _mulhilo(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
  let p00 = _mul32(a.x, b.x); let p01 = _mul32(a.x, b.y); let p10 = _mul32(a.y, b.x); let p11 = _mul32(a.y, b.y);
  let s1 = p00.y + p01.x; let c1 = select(0u, 1u, s1 < p00.y);
  let w1 = s1 + p10.x; let c1b = select(0u, 1u, w1 < s1);
  let s2 = p01.y + p10.y; let c2 = select(0u, 1u, s2 < p01.y);
  let s2b = s2 + p11.x; let c2b = select(0u, 1u, s2b < s2);
  let w2 = s2b + c1 + c1b; let c2c = select(0u, 1u, w2 < s2b);
  return vec4<u32>(p00.x, w1, w2, p11.y + c2 + c2b + c2c);
}
fn _philox(ctr_in: array<vec2<u32>, 4>, key_in: vec2<u32>) -> array<vec2<u32>, 4> {
  var c = ctr_in;
  var k0 = key_in;
  var k1 = vec2<u32>(0u, 0u);
  for (var r = 0; r < 10; r = r + 1) {
    if (r > 0) {
      k0 = _add64(k0, vec2<u32>(0x7F4A7C15u, 0x9E3779B9u));
      k1 = _add64(k1, vec2<u32>(0x84CAA73Bu, 0xBB67AE85u));
    }
    let m0 = _mulhilo(vec2<u32>(0xE14C6C93u, 0xD2E7470Eu), c[0]);
    let m1 = _mulhilo(vec2<u32>(0x95121157u, 0xCA5A8263u), c[2]);
    c = array<vec2<u32>, 4>(m1.zw ^ c[1] ^ k0, m1.xy, m0.zw ^ c[3] ^ k1, m0.xy);
  }
  return c;
}
// word j of the stream of (seed, offset): mt[2..4) seed, mt[4..6) offset (lo, hi)
fn _word(j: u32) -> vec2<u32> {
  let off = vec2<u32>(bitcast<u32>(mt[4]), bitcast<u32>(mt[5]));
  let ctr = _add64(_add64(off, vec2<u32>(1u, 0u)), vec2<u32>(j >> 2u, 0u));
  let key = vec2<u32>(bitcast<u32>(mt[2]), bitcast<u32>(mt[3]));
  let r = _philox(array<vec2<u32>, 4>(ctr, vec2<u32>(0u, 0u), vec2<u32>(0u, 0u), vec2<u32>(0u, 0u)), key);
  return r[j & 3u];
}
"""

_SRC = """@group(0) @binding(0) var<storage, read_write> out: array<{t}>;
@group(0) @binding(1) var<storage, read> mt: array<i32>;
PHILOX
fn _halfbits(e: u32) -> u32 {{
  let w = _word(e >> 1u);
  return select(w.x, w.y, (e & 1u) == 1u);
}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let i = i32(gid.x) + i32(gid.y) * mt[0];
  if (i >= mt[1]) {{ return; }}
  let e = u32(i);
  {body}
}}
"""


def _split64(v: int) -> list:
    v &= (1 << 64) - 1
    lo, hi = v & 0xFFFFFFFF, v >> 32
    return [lo - (1 << 32) if lo >= 1 << 31 else lo, hi - (1 << 32) if hi >= 1 << 31 else hi]


def _run(be, shape, dtype, seed, offset, body):
    out = _new(be.rt, tuple(shape), dtype)
    n = out.numel
    if n:
        code = _SRC.format(t=T.st(dtype), body=body).replace("PHILOX", PHILOX)
        # the random kernels bind no input array: binding 1 is the metadata
        be.rt.launch(T.HELPERS + code, out.st, [], [n, *_split64(seed), *_split64(offset)], n)
    return out


def rand(be, shape, dtype, seed, offset):
    m = _SIG.get(dtype)
    if m is None or math.prod(shape) >= 2**31:
        return NotImplemented
    body = f"out[i] = f32(_halfbits(e) >> {32 - m}u) * {2.0 ** -m!r};"
    return _run(be, shape, dtype, seed, offset, body)


def randn(be, shape, dtype, seed, offset):
    if dtype not in _SIG or math.prod(shape) >= 2**31:
        return NotImplemented
    # pair p = e / 2 uses the two halves of word p: u0 from the low half, u1 from the high half
    body = T.fix(dtype, "v").join(["""let w = _word(e >> 1u);
  let u0 = f32(w.x >> 8u) * 5.960464477539063e-08;
  let u1 = f32(w.y >> 8u) * 5.960464477539063e-08;
  let r = sqrt(-2.0 * log(1.0 - u0));
  let th = u1 * 6.283185307179586;
  let v = select(r * cos(th), r * sin(th), (e & 1u) == 1u);
  out[i] = """, ";"])
    return _run(be, shape, dtype, seed, offset, body)


OPS = {"rand": rand, "randn": randn}
