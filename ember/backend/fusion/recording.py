"""How Fusion records each kind of op into its pending graph (the methods of :class:`Recorder`, which
:class:`~.backend.Fusion` inherits): elementwise ops and casts, masked_fill, reductions, views of
pending values, and in-place writes into whole buffers. Each returns the pending handle, or None when
the op can't be recorded (then it runs on the inner backend as a sync point)."""

from __future__ import annotations

import functools
import math

from ..._shape import contiguous_strides
from ..meta import Meta, infer, is_view_op
from .graph import FH, Buf, N, Token, broadcast_to, load, push_view
from .ops import elementwise_types

_SCALARS = frozenset({bool, int, float})
MAX_DEPTH = 200  # expression depth at which a value is written to memory (chains of thousands of ops)
_TYPES: dict = {}  # memo of ops.elementwise_types: (op, cast dtype, input dtypes or scalar types) -> answer
_BOOL = None
_F64 = None


class Recorder:
    """Fusion's recording methods (a mixin: they use the Fusion object's window, target and inner)."""

    def _elementwise(self, op, inputs, attrs):
        if op in self._unfused:
            if op != "pow" or inputs[0].__class__ is not FH or inputs[1].__class__ not in (int, float) or \
                    inputs[1] != 2:
                return None
            # x ** 2 is x * x exactly (the target's pow is not trusted): the exponent becomes structure
            self._note(("pow", 2))
            op, inputs = "mul", (inputs[0], inputs[0])
        hs = [x for x in inputs if x.__class__ is FH]
        if not hs or (attrs and op != "cast"):
            return None
        shape = hs[0].shape
        for h in hs:
            if h.shape != shape:
                try:
                    shape = _broadcast(shape, h.shape)
                except ValueError:
                    return None
        # the dtype analysis depends only on the op and the inputs' dtypes (scalars: their types):
        # memoised, since a training step asks the same few questions a hundred times
        tkey = (op, attrs.get("dtype") if attrs else None,
                tuple([x.dtype if x.__class__ is FH else x.__class__ for x in inputs]))
        types = _TYPES.get(tkey)
        if types is None:
            types = _TYPES[tkey] = elementwise_types(op, inputs, attrs, _BOOL)
        if types is False:
            return None
        comp, out = types
        if self._types is not None and (self._ctype(comp) is None or self._ctype(out) is None or
                                        any(self._ctype(h.dtype) is None for h in hs)):
            return None
        kids = []
        for k, x in enumerate(inputs):
            if x.__class__ is FH:
                kids.append(broadcast_to(self._leaf(x), shape))
            elif x is None:
                if op != "clamp":
                    return None
                kids.append(None)
            elif x.__class__ in _SCALARS:
                if op == "where" and k == 0:
                    return None
                kids.append(self._scalar(x, shape, comp))
            else:
                return None
        attrs_t = attrs.get("dtype") if op == "cast" else None
        node = N(op, tuple(kids), shape, out, attrs_t)
        if all(k is None or k.op == "ld" or k.op == "sc" for k in kids) and all(h.arr is not None for h in hs):
            self._src(node, op, inputs, attrs)  # alone in a kernel, it runs on the inner backend instead
        fh = FH(shape, out, contiguous_strides(shape), node=node, token=Token())
        if node.depth > MAX_DEPTH:  # a very long chain: write this value, later ops read it
            fh.buf = Buf(None, shape, out, producer=node)
            fh.node = load(fh.buf, shape, fh.strides, 0, out)
        return self._track(fh)

    def _masked_fill(self, x, mask, value):
        """masked_fill(x, mask, value) is where(mask, value, x), the value cast to x's dtype."""
        if x.__class__ is not FH or mask.__class__ is not FH or self._ctype(mask.dtype) != "bool_":
            return None
        if value.__class__ is FH:
            if value.shape != () or self._ctype(value.dtype) is None:
                return None
            if value.dtype != x.dtype:
                value = self._elementwise("cast", (value,), {"dtype": x.dtype})
                if value is None:
                    return None
        elif value.__class__ not in _SCALARS:
            return None
        return self._elementwise("where", (mask, value, x), {})

    def _reduce(self, op, inputs, attrs):
        x = inputs[0]
        if x.__class__ is not FH:
            return None
        out = attrs.get("dtype") or x.dtype
        it, ot = self._ctype(x.dtype), self._ctype(out)
        if it is None or ot is None or it == "bool_" and op in ("amax", "amin", "mean"):
            return None
        if op in ("mean", "var") and ot not in ("f32", "f64"):
            return None
        dims = tuple(attrs.get("dim") or ())
        keep = attrs.get("keepdim", False)
        nd = len(x.shape)
        rd = set(range(nd)) if not dims else set(dims)
        if op in ("amax", "amin") and any(x.shape[d] == 0 for d in rd):
            return None  # the inner backend raises the error
        shape = tuple((1 if d in rd else n) for d, n in enumerate(x.shape)) if keep else \
            tuple(n for d, n in enumerate(x.shape) if d not in rd)
        if op == "var":
            corr = attrs.get("correction", 1)
            if ot not in ("f32", "f64") or int(corr) != corr:
                return None
            red_attrs = (op, tuple(sorted(rd)), keep, int(corr))
        else:
            red_attrs = (op, tuple(sorted(rd)), keep)
            if self._split_min and op != "var" and math.prod(shape) == 1 and math.prod(x.shape) >= self._split_min:
                r = self._split_reduce(op, x, shape, out)
                if r is not None:
                    return r
        red = N("red", (self._leaf(x),), shape, out, red_attrs)
        if x.arr is not None and red.args[0].op == "ld" and op != "var":  # numpy's var: 4 passes, temporaries
            self._src(red, op, inputs, attrs)
        return self._reduced(red, shape, out)

    def _reduced(self, red, shape, out):
        """The pending handle of reduction node ``red``: its result is a buffer the kernel writes."""
        buf = Buf(None, shape, out, producer=red)
        strides = contiguous_strides(shape)
        fh = FH(shape, out, strides, node=load(buf, shape, strides, 0, out), token=Token())
        fh.buf = buf
        return self._track(fh)

    def _split_reduce(self, op, x, shape, out):
        """A reduction of all of ``x`` to one value in two stages: L partial results, then their reduction to
        ``shape``. On the CPU the elements are viewed as (n / L, L) and reduced over the first dim (the L lanes
        read neighbouring elements: a vectorised column kernel); on a GPU as (L, n / L) and reduced over the
        last (L rows, a block of threads each, reading contiguous memory: one block for all n elements
        leaves the GPU idle). Partial sums and means are float64 for float results where the target has
        float64 (a float32 sum accumulates in float64 anyway). None when no L from 64 to 1024 divides the size or the
        expression can't be viewed so (then the one-stage reduction runs)."""
        n = math.prod(x.shape)
        block = self.target.row_block
        counts = _split_counts(n)
        if not counts:
            return None
        lanes = next((k for k in counts if n // k >= block), counts[-1]) if block else counts[0]
        view, dim = ((lanes, n // lanes), 1) if block else ((n // lanes, lanes), 0)
        node = push_view(self._leaf(x), "reshape", {"shape": view}, view)
        if node is None:
            return None
        part_t = out
        if op in ("sum", "mean") and self._ctype(out) in ("f32", "f64") and self._ctype(_F64) is not None:
            part_t = _F64
        part = Buf(None, (lanes,), part_t, producer=N("red", (node,), (lanes,), part_t, (op, (dim,), False)))
        nd = len(shape)
        partials = load(part, shape + (lanes,), (0,) * nd + (1,), 0, part_t)
        red = N("red", (partials,), shape, out, (op, (nd,), False))
        return self._reduced(red, shape, out)

    def _view(self, op, inputs, attrs):
        x = inputs[0]
        if x.__class__ is not FH:
            return None
        if x.arr is not None:
            return None  # a view of real memory: the inner backend makes it (a sync point costs nothing)
        if op == "contiguous":
            if x.strides == contiguous_strides(x.shape):
                return x
            node = N("copy", (x.node,), x.shape, x.dtype)
            return self._track(FH(x.shape, x.dtype, contiguous_strides(x.shape), node=node, token=Token()))
        m = Meta(x.shape, x.dtype, x.strides)
        r = infer(op, (m,), attrs)
        if r is None:
            return None
        out = r[0]
        view = is_view_op(op, (m,), attrs)
        node = push_view(x.node, op, attrs, out.shape)
        if node is None:  # the view can't be expressed on the leaves: x gets a buffer of its own
            node = push_view(self._force(x), op, attrs, out.shape)
            if node is None:
                return None
        if view:
            fh = FH(out.shape, x.dtype, out.strides, node=node, token=x.token)
            fh.view_of = (x, op, attrs)
            x.viewed = True
        else:
            fh = FH(out.shape, x.dtype, contiguous_strides(out.shape), node=node, token=Token())
        return self._track(fh)

    def _force(self, x: FH) -> N:
        """A load of ``x``'s value from a buffer of its own (``x`` pending; made at the flush)."""
        if x.buf is None:
            x.buf = Buf(None, x.shape, x.dtype, producer=x.node)
        return load(x.buf, x.shape, contiguous_strides(x.shape), 0, x.dtype)

    def _inplace(self, dst, src):
        """``dst`` gets ``src``'s value (the frontend rebinds its tensor to the handle returned)."""
        if dst.__class__ is not FH:
            return None
        if dst.arr is not None or dst.write is not None:
            return self._assign(dst, src)
        if dst.view_of is not None or dst.viewed or self._ctype(dst.dtype) is None:
            return None  # other handles read this pending memory through views: run it for real
        value = self._value_for(dst, src)
        if value is None:
            return None
        # a pending value nobody views: the handle itself takes the new value (same storage token)
        dst.node = value
        dst.buf = None
        return dst

    def _value_for(self, dst, src):
        """``src`` (a handle or a Python scalar) as an expression of ``dst``'s shape and dtype, or
        None when it can't be recorded (then the write runs on the inner backend)."""
        if src.__class__ is FH:
            if self._ctype(src.dtype) is None:
                return None
            value = broadcast_to(self._leaf(src), dst.shape)
        elif src.__class__ in _SCALARS:
            value = self._scalar(src, dst.shape, dst.dtype)
        else:
            return None
        if value.dtype != dst.dtype:
            value = N("cast", (value,), dst.shape, dst.dtype, dst.dtype)
        return value

    def _assign(self, dst, src):
        if dst.arr is None:  # a pending write: write its destination again
            dst = self._lift(dst.write[1])
        arr = dst.arr
        dt = self._ctype(dst.dtype)
        if dt is not None and self.target.contiguous(arr):
            self._register(dst)
        if dt is None or not self.target.whole(arr, self.inner.storage(arr)):
            return None  # a write into part of a buffer (or a dtype not fused): run it on the inner backend
        value = self._value_for(dst, src)
        if value is None:
            return None
        self._register(dst)
        # a later write through this write's handle lifts the same array: it finds this handle, one leaf
        self._lifted.setdefault(id(arr), dst)
        dbuf = dst.buf
        self._writes[dbuf.sid] = (dbuf, value, arr)
        if self._tape is not None:
            self._tape.wrote(arr)
        fh = FH(dst.shape, dst.dtype, dst.strides, node=value, token=self._storage_of(arr))
        fh.write = (dbuf, arr)
        return self._track(fh)


@functools.lru_cache(maxsize=1024)
def _split_counts(n: int) -> tuple:
    """The partial counts a two-stage reduction of ``n`` elements may use: n's divisors from 1024 down to 64
    (any size with one: a (1001, 1003) sum used to be one stage, 27x slower than numpy on the CPU)."""
    return tuple(k for k in range(1024, 63, -1) if n % k == 0)


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError("shapes do not broadcast")
    return tuple(out)


def _init():
    global _BOOL, _F64
    from ... import _dtype
    _BOOL, _F64 = _dtype.bool, _dtype.float64


_init()
