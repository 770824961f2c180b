"""The generic strided elementwise kernel every map-like op of the Wgpu backend is built on.

``ew(rt, expr, operands, out)`` writes ``expr`` (WGSL over ``v0, v1, ...``) into every element of the
view ``out``; each operand is a handle (read through its strides, broadcast to ``out``'s shape) or a
scalar (a :class:`Scalar`, passed in the metadata so that a new value never means a new shader).
Dims that are contiguous for every operand are merged on the host first, so the common cases index
with one division per element.
"""

from __future__ import annotations

import functools
import re

from . import dtypes as T
from .handle import WH


class Scalar:
    """A scalar operand: a Python value and the WGSL type it is used as."""

    __slots__ = ("value", "t")

    def __init__(self, value, t: str):
        self.value, self.t = value, t


def broadcast_strides(h: WH, shape: tuple) -> tuple:
    """``h``'s strides aligned to ``shape`` (0 for broadcast and missing leading dims)."""
    pad = len(shape) - h.ndim
    out = [0] * pad
    for n, s, want in zip(h.shape, h.strides, shape[pad:]):
        out.append(0 if n == 1 and want != 1 else s)
    return tuple(out)


def collapse(shape: tuple, stride_sets: list) -> tuple:
    """Drop size-1 dims and merge neighbours that are contiguous for every stride set."""
    dims = [d for d, n in enumerate(shape) if n != 1]
    shp = [shape[d] for d in dims]
    sts = [[s[d] for d in dims] for s in stride_sets]
    k = len(shp) - 1
    while k > 0:
        if all(s[k - 1] == s[k] * shp[k] for s in sts):
            shp[k - 1] *= shp[k]
            del shp[k]
            for s in sts:
                s[k - 1] = s[k]
                del s[k]
        k -= 1
    return tuple(shp), [tuple(s) for s in sts]


@functools.lru_cache(maxsize=4096)
def used_helpers(helpers: str, code: str) -> str:
    """The helper functions ``code`` calls, directly or through other helpers (fewer functions, faster
    compiles)."""
    chunks = {}
    for part in re.split(r"\n(?=fn )", helpers):
        m = re.match(r"\s*fn (\w+)", part)
        if m:
            chunks[m.group(1)] = part.strip()
    keep, todo = [], [code]
    while todo:
        text = todo.pop()
        for name, part in chunks.items():
            if name not in keep and re.search(r"\b" + name + r"\(", text):
                keep.append(name)
                todo.append(part)
    return "\n".join(chunks[n] for n in chunks if n in keep) + "\n"


_HEAD = """@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = i32(gid.x) + i32(gid.y) * mt[0];
"""


@functools.lru_cache(maxsize=4096)
def source(expr: str, tins: tuple, tout: str, stypes: tuple, helpers: str = "") -> str:
    """WGSL of the strided map kernel. ``tins``: per operand the WGSL type, or None for a scalar."""
    arrays = [k for k, t in enumerate(tins) if t is not None]
    decl = [f"@group(0) @binding(0) var<storage, read_write> out: array<{tout}>;"]
    for j, k in enumerate(arrays):
        decl.append(f"@group(0) @binding({j + 1}) var<storage, read> in{k}: array<{tins[k]}>;")
    decl.append(f"@group(0) @binding({len(arrays) + 1}) var<storage, read> mt: array<i32>;")
    nscal = len(stypes)
    base = 2 + nscal  # meta: [row, n, scalars..., R, shape..., out (off, strides), per array (off, strides)]
    body = ["  if (i >= mt[1]) { return; }", f"  let R = mt[{base}];", "  var rem = i;",
            f"  var oo = mt[{base} + 1 + R];"]
    for j, k in enumerate(arrays):
        body.append(f"  var o{k} = mt[{base} + 1 + R + {j + 1} * (R + 1)];")
    body.append("  for (var d = R - 1; d >= 0; d = d - 1) {")
    body.append(f"    let s = mt[{base} + 1 + d];")
    body.append("    let c = rem % s;")
    body.append("    rem = rem / s;")
    body.append(f"    oo = oo + c * mt[{base} + 2 + R + d];")
    for j, k in enumerate(arrays):
        body.append(f"    o{k} = o{k} + c * mt[{base} + 2 + R + {j + 1} * (R + 1) + d];")
    body.append("  }")
    for k, t in enumerate(tins):
        if t is None:
            continue
        body.append(f"  let v{k} = in{k}[o{k}];")
    scal = [k for k, t in enumerate(tins) if t is None]
    for j, k in enumerate(scal):
        body.append(f"  let v{k} = SCAL_T{j};")
    body.append(f"  out[oo] = {expr};")
    main = _HEAD + "\n".join(body) + "\n}\n"
    src = "\n".join(decl) + "\n" + used_helpers(T.HELPERS + helpers, main) + "\n" + main
    for j, t in enumerate(stypes):
        src = src.replace(f"SCAL_T{j}", T.read_scalar(t, str(2 + j)))
    return src


def ew(rt, expr: str, operands: list, out: WH, helpers: str = "") -> WH:
    """Run ``out[...] = expr`` over every element of ``out`` (see the module docstring)."""
    n = out.numel
    if n == 0:
        return out
    shape = out.shape
    handles = [o for o in operands if isinstance(o, WH)]
    sets = [out.strides] + [broadcast_strides(h, shape) for h in handles]
    cshape, csets = collapse(shape, sets)
    tins = tuple(None if isinstance(o, Scalar) else T.st(o.dtype) for o in operands)
    scal = [o for o in operands if isinstance(o, Scalar)]
    src = source(expr, tins, T.st(out.dtype), tuple(sc.t for sc in scal), helpers)
    meta = [n] + [T.scalar_bits(sc.value, sc.t) for sc in scal] + [len(cshape)] + list(cshape)
    meta += [out.offset] + list(csets[0])
    for h, s in zip(handles, csets[1:]):
        meta += [h.offset] + list(s)
    rt.launch(src, out.st, [h.st for h in handles], meta, n)
    return out
