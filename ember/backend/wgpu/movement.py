"""Views, copies and layout ops of the Wgpu backend: views are new strides over the same storage;
copies, cat, flip, pad, tril/triu are strided map kernels."""

from __future__ import annotations

import math

from ... import _dtype as D
from . import dtypes as T
from .elementwise import HELPERS, _new
from .handle import WH, contiguous_strides
from .kernels import Scalar, ew


def new(be, shape, dtype) -> WH:
    return _new(be.rt, tuple(shape), dtype)


def contiguous(be, x: WH) -> WH:
    return x if x.is_contiguous() else copy(be, x)


def copy(be, x: WH) -> WH:
    return ew(be.rt, "v0", [x], new(be, x.shape, x.dtype))


def _view_strides(shape, strides, new_shape):
    """Strides that show ``shape``/``strides`` as ``new_shape`` without a copy, or None (PyTorch's rule:
    every run of merged dims must be contiguous within itself)."""
    if math.prod(shape) == 0 or len(shape) == 0:
        return contiguous_strides(new_shape)
    out = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1]
    t_numel = v_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        t_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != t_numel * base):
            while view_d >= 0 and (v_numel < t_numel or new_shape[view_d] == 1):
                out[view_d] = v_numel * base
                v_numel *= new_shape[view_d]
                view_d -= 1
            if v_numel != t_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                t_numel = v_numel = 1
    if view_d != -1:
        return None
    return tuple(out)


def reshape(be, x: WH, shape) -> WH:
    shape = tuple(shape)
    if -1 in shape:  # gradient rules may pass an inferred dim
        known = math.prod(n for n in shape if n != -1)
        shape = tuple(x.numel // known if n == -1 and known else (0 if n == -1 else n) for n in shape)
    st = _view_strides(x.shape, x.strides, shape)
    if st is None:
        x = copy(be, x)
        st = contiguous_strides(shape)
    return x.view(shape, st, x.offset)


def permute(be, x: WH, dims) -> WH:
    return x.view(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims), x.offset)


def expand(be, x: WH, shape) -> WH:
    shape = tuple(shape)
    pad = len(shape) - x.ndim
    st = [0] * pad
    for n, s, want in zip(x.shape, x.strides, shape[pad:]):
        st.append(s if n == want else 0)
    return x.view(shape, tuple(st), x.offset)


def slice_(be, x: WH, index) -> WH:
    shape, st, off = [], [], x.offset
    for (a, b, c), n, s in zip(index, x.shape, x.strides):
        r = range(*slice(a, b, c).indices(n))
        shape.append(len(r))
        st.append(s * r.step)
        if len(r):
            off += r.start * s
    k = len(index)
    return x.view(tuple(shape) + x.shape[k:], tuple(st) + x.strides[k:], off)


def diagonal(be, x: WH, offset, dim1, dim2) -> WH:
    n1, n2 = x.shape[dim1], x.shape[dim2]
    length = max(0, min(n1, n2 - offset)) if offset >= 0 else max(0, min(n1 + offset, n2))
    keep = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    shape = tuple(x.shape[d] for d in keep) + (length,)
    st = tuple(x.strides[d] for d in keep) + (x.strides[dim1] + x.strides[dim2],)
    off = x.offset
    if length:
        off += offset * x.strides[dim2] if offset >= 0 else -offset * x.strides[dim1]
    return x.view(shape, st, off)


def as_strided(be, x: WH, size, stride, storage_offset) -> WH:
    size, stride = tuple(size), tuple(stride)
    if math.prod(size):
        end = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if storage_offset < 0 or end >= x.st.nelem:
            raise RuntimeError(f"as_strided: size {size}, stride {stride}, offset {storage_offset} reaches outside the "
                               f"storage of {x.st.nelem} elements")
    return x.view(size, stride, storage_offset)


def check_writable(dst: WH) -> None:
    """Refuse writes into views whose elements share memory (expanded dims), as numpy's read-only
    broadcast arrays do: the frontend turns this ValueError into PyTorch's RuntimeError."""
    if any(s == 0 and n > 1 for n, s in zip(dst.shape, dst.strides)):
        raise ValueError("assignment destination is read-only (an expanded view)")


def index_put_(be, x: WH, value, *idx, **attrs) -> WH:
    new = be.run("index_put", (x, value, *idx), attrs)
    return assign(be, x, new)


def assign(be, dst: WH, src) -> WH:
    """Write ``src`` (a handle broadcast to dst's shape, or a scalar) into dst's memory."""
    check_writable(dst)
    if isinstance(src, WH):
        if src.st is dst.st:
            src = copy(be, src)  # reading and writing one buffer in a launch is not allowed (and overlaps)
        expr = T.convert("v0", src.dtype, dst.dtype) if src.dtype is not dst.dtype else "v0"
        ew(be.rt, expr, [src], dst, HELPERS)
    else:
        t = T.st(dst.dtype)
        ew(be.rt, T.fix(dst.dtype, "v0"), [Scalar(src if t == "f32" else int(src), t)], dst, HELPERS)
    return dst


def full(be, shape, value, dtype) -> WH:
    out = new(be, shape, dtype)
    t = T.st(dtype)
    if dtype is D.bool:
        value = bool(value)
    v = float(value) if t == "f32" else int(value)
    return ew(be.rt, T.fix(dtype, "v0"), [Scalar(v, t)], out, HELPERS)


def empty(be, shape, dtype) -> WH:
    T.st(dtype)
    return new(be, shape, dtype)


def cat(be, *xs, dim) -> WH:
    ref = xs[0]
    shape = list(ref.shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    out = new(be, shape, ref.dtype)
    pos = 0
    for x in xs:
        n = x.shape[dim]
        if n:
            index = tuple((pos, pos + n, 1) if d == dim else (0, shape[d], 1) for d in range(len(shape)))
            assign(be, slice_(be, out, index), x)
        pos += n
    return out


def stack(be, *xs, dim) -> WH:
    return cat(be, *(reshape(be, x, x.shape[:dim] + (1,) + x.shape[dim:]) for x in xs), dim=dim)


def flip(be, x: WH, dims) -> WH:
    st = list(x.strides)
    off = x.offset
    for d in dims:
        if x.shape[d] > 1:
            off += (x.shape[d] - 1) * st[d]
            st[d] = -st[d]
    return copy(be, x.view(x.shape, tuple(st), off))


def roll(be, x: WH, shifts, dims) -> WH:
    if not dims:
        flat = reshape(be, contiguous(be, x), (x.numel,))
        return reshape(be, roll(be, flat, shifts if isinstance(shifts, tuple) else (shifts,), (0,)), x.shape)
    out = x
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        a = slice_(be, out, tuple((n - s, n, 1) if k == d else (0, out.shape[k], 1) for k in range(out.ndim)))
        b = slice_(be, out, tuple((0, n - s, 1) if k == d else (0, out.shape[k], 1) for k in range(out.ndim)))
        out = cat(be, a, b, dim=d)
    return out if out is not x else copy(be, x)


def pad(be, x: WH, pad, mode, value):
    if mode != "constant":
        return NotImplemented
    shape = tuple(n + a + b for n, (a, b) in zip(x.shape, pad))
    out = full(be, shape, value, x.dtype)
    # negative pads crop the input
    src_index, dst_index = [], []
    for n, (a, b) in zip(x.shape, pad):
        s0, s1 = max(0, -a), n - max(0, -b)
        d0 = max(0, a)
        src_index.append((s0, max(s0, s1), 1))
        dst_index.append((d0, d0 + max(0, s1 - s0), 1))
    if math.prod(max(0, e - s) for s, e, _ in src_index):
        assign(be, slice_(be, out, tuple(dst_index)), slice_(be, x, tuple(src_index)))
    return out


def _tri(be, x: WH, diagonal, lower: bool) -> WH:
    # one kernel over the last two dims: keep where (col - row) <= / >= diagonal
    from .indexing import iota_last2
    out = new(be, x.shape, x.dtype)
    if x.numel == 0:
        return out
    cmp = "<=" if lower else ">="
    dd = iota_last2(be, x.shape)  # col - row as int32, broadcastable
    z = T.zero(T.st(x.dtype))
    return ew(be.rt, f"select({z}, v0, v1 {cmp} v2)", [x, dd, Scalar(diagonal, "i32")], out, HELPERS)


def tril(be, x, diagonal):
    return _tri(be, x, diagonal, True)


def triu(be, x, diagonal):
    return _tri(be, x, diagonal, False)


def tile(be, x: WH, reps):
    reps = tuple(reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(be, x, (1,) * (nd - x.ndim) + x.shape)
    # view as (r0, n0, r1, n1, ...) with zero strides on the repeat dims, then copy
    shape, st = [], []
    for r, n, s in zip(reps, x.shape, x.strides):
        shape += [r, n]
        st += [0, s]
    y = copy(be, x.view(tuple(shape), tuple(st), x.offset))
    return reshape(be, y, tuple(r * n for r, n in zip(reps, x.shape)))


OPS = {
    "reshape": reshape, "permute": permute, "expand": expand, "slice": slice_, "diagonal": diagonal,
    "as_strided": as_strided, "contiguous": contiguous, "copy": copy, "assign": assign, "index_put_": index_put_,
    "full": full,
    "empty": empty, "cat": cat, "stack": stack, "flip": flip, "roll": roll, "pad": pad, "tril": tril,
    "triu": triu, "tile": tile,
}
