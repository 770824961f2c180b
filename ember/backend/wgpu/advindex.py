"""Advanced indexing of the Wgpu backend: ``x[..., i0, i1, ...]`` with index tensors at some dims
(``index``), and its write forms (``index_put``, also with ``accumulate``), as numpy lays them out: the
broadcast index shape replaces the indexed dims in place when they are adjacent, and goes first
otherwise. One kernel per number of index tensors; each invocation handles one element of the
result (or of the written region)."""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .elementwise import _bshape, _new
from .handle import WH
from .scatter import _WRITE, _fixed


def _layout(x: WH, idx, dims):
    """(result shape, per result dim: x stride, per index tensor: strides over the result dims)."""
    b = _bshape(*(i.shape for i in idx)) if idx else ()
    rest = [d for d in range(x.ndim) if d not in dims]
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    if adjacent:
        before = [d for d in rest if d < dims[0]]
        after = [d for d in rest if d > dims[0]]
    else:
        before, after = [], rest
    shape = tuple(x.shape[d] for d in before) + b + tuple(x.shape[d] for d in after)
    xst = [x.strides[d] for d in before] + [0] * len(b) + [x.strides[d] for d in after]
    ist = []
    for i in idx:
        pad = len(b) - i.ndim
        s = [0] * pad + [0 if n == 1 and want != 1 else st for n, st, want in zip(i.shape, i.strides, b[pad:])]
        ist.append([0] * len(before) + s + [0] * len(after))
    return shape, xst, ist


def _source(k: int, t: str, mode: str) -> str:
    decl = [f"@group(0) @binding(0) var<storage, read_write> out: array<{t if mode != 'add' else _atomic(t)}>;",
            f"@group(0) @binding(1) var<storage, read> x: array<{t}>;"]
    for j in range(k):
        decl.append(f"@group(0) @binding({j + 2}) var<storage, read> ix{j}: array<i32>;")
    decl.append(f"@group(0) @binding({k + 2}) var<storage, read> mt: array<i32>;")
    # mt: [row, n, R, shape(R), x_off, v_off, x strides(R), v strides(R), per index: off, size, xstride, strides(R)]
    body = ["  let R = mt[2];", "  var xo = mt[3 + R];", "  var vo = mt[4 + R];"]
    for j in range(k):
        body.append(f"  var o{j} = mt[5 + 3 * R + {j} * (R + 3)];")
    body.append("  var rem = i;")
    body.append("  for (var d = R - 1; d >= 0; d = d - 1) {")
    body.append("    let s = mt[3 + d]; let c = rem % s; rem = rem / s;")
    body.append("    xo = xo + c * mt[5 + R + d];")
    body.append("    vo = vo + c * mt[5 + 2 * R + d];")
    for j in range(k):
        body.append(f"    o{j} = o{j} + c * mt[5 + 3 * R + {j} * (R + 3) + 3 + d];")
    body.append("  }")
    for j in range(k):
        base = f"5 + 3 * R + {j} * (R + 3)"
        body.append(f"  var k{j} = ix{j}[o{j}];")
        body.append(f"  if (k{j} < 0) {{ k{j} = k{j} + mt[{base} + 1]; }}")
        body.append(f"  xo = xo + k{j} * mt[{base} + 2];")
    if mode == "gather":
        body.append("  out[i] = x[xo];")
    else:  # x is the value tensor, out the written copy: oo is the indexed position
        body.append("  let oo = xo;")
        body.append("  let v = x[vo];")
        body.append("  " + _WRITE["store" if mode == "store" else ("add_f32" if t == "f32" else "add_int")])
    head = "\n@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
    return ("\n".join(decl) + head +
            "  let i = i32(gid.x) + i32(gid.y) * mt[0];\n  if (i >= mt[1]) { return; }\n" + "\n".join(body) + "\n}\n")


def _atomic(t: str) -> str:
    return "atomic<u32>" if t == "f32" else f"atomic<{t}>"


def _launch(be, dst: WH, src: WH, x_like: WH, idx, dims, shape, xst, ist, vst, mode):
    n = math.prod(shape)
    if n == 0:
        return
    R = len(shape)
    meta = [n, R, *shape, x_like.offset, src.offset if mode != "gather" else 0, *xst, *vst]
    for i, d, s in zip(idx, dims, ist):
        meta += [i.offset, x_like.shape[d], x_like.strides[d], *s]
    code = _source(len(idx), T.st(x_like.dtype), mode)
    be.rt.launch(code, dst.st, [src.st] + [i.st for i in idx], meta, n)


def index(be, x: WH, *idx, dims):
    if not idx or len(idx) != len(dims) or any(i.dtype is D.bool for i in idx):
        return NotImplemented
    shape, xst, ist = _layout(x, idx, dims)
    out = _new(be.rt, shape, x.dtype)
    _launch(be, out, x, x, idx, dims, shape, xst, ist, [0] * len(shape), "gather")
    return out


def index_put(be, x: WH, value, *idx, dims, accumulate):
    if not idx or len(idx) != len(dims) or any(i.dtype is D.bool for i in idx):
        return NotImplemented
    if accumulate and x.dtype is D.bool:
        return NotImplemented
    out = be.run("copy", (x,), {})
    shape, xst, ist = _layout(out, idx, dims)
    if isinstance(value, WH):
        v = value if value.dtype is x.dtype else be.run("cast", (value, x.dtype), {})
        pad = len(shape) - v.ndim
        vst = [0] * pad + [0 if n == 1 and want != 1 else s for n, s, want in zip(v.shape, v.strides, shape[pad:])]
    else:
        v = be.run("full", (), {"shape": (), "value": value, "dtype": x.dtype})
        vst = [0] * len(shape)
    # destination offsets are computed against `out`, a contiguous copy of x; with duplicate indices a
    # plain put keeps one of the values (PyTorch: the last on the CPU, an arbitrary one on CUDA)
    _launch(be, out, v, out, idx, dims, shape, xst, ist, vst, "add" if accumulate else "store")
    return _fixed(be, out) if accumulate else out


OPS = {"index": index, "index_put": index_put}
