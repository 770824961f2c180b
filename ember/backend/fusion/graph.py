"""The lazy graph: expression nodes, buffers and the handles Fusion gives the frontend.

* :class:`Buf` is memory: an inner-backend array now (``arr``), or later, once its ``producer``
  (an elementwise tree or a reduction node) has run at a flush.
* :class:`N` is an expression node. Elementwise nodes have children of exactly their own shape
  (broadcasting is pushed down to the leaves when an op is recorded), so a fused kernel iterates
  one shape and every leaf is a strided load ``("ld", buf, strides, offset)`` over it.
* :class:`FH` is a handle: the frontend holds it; its ``node`` is its value as an expression.

Views of pending values are pushed down to the leaves (a permute/expand/slice/reshape of
``exp(x)`` is ``exp`` of the permuted leaf), so a consumer reads through strides and nothing is
written to memory; the handle remembers ``view_of`` to rebuild the real view if it is synced.
"""

from __future__ import annotations

from ..meta import Meta, infer, is_view_op

__all__ = ["Buf", "N", "FH", "load", "loads", "push_view", "broadcast_to"]


class Buf:
    """Memory: ``arr`` (an inner array, C-contiguous, flat-indexable) or a pending ``producer``."""

    __slots__ = ("arr", "shape", "dtype", "producer", "out", "sid", "keep", "win", "__weakref__")

    def __init__(self, arr, shape, dtype, producer=None):
        self.arr = arr
        self.shape = shape
        self.dtype = dtype
        self.producer = producer  # an N (elementwise tree or "red" node) computing the contents
        self.out = None  # the shaped array written at the flush (``arr`` is its flat view)
        self.sid = id(self)  # storage identity, for ordering writes after reads of the same memory
        self.keep = None  # keeps the storage object whose id is ``sid`` alive
        self.win = None  # (window serial, leaf slot) once a recording window has registered it


class N:
    """An expression node. ``op``: "ld" (load), "sc" (a scalar argument: ``args`` = (window scalar
    slot,), ``attrs`` = its value), an elementwise op name, or "red" (a reduction; ``attrs`` =
    (op, dims, keepdim, out dtype))."""

    __slots__ = ("op", "args", "shape", "dtype", "attrs", "src", "depth")

    def __init__(self, op, args, shape, dtype, attrs=None):
        self.src = None  # (op, inputs, attrs) as recorded, when every input was in memory
        # longest path to a leaf: a bound keeps recursive rewrites (views) and kernels small
        d = 0
        for a in args:  # a loop, not max() over a list: nodes are made a few hundred times a step
            if a.__class__ is N and a.depth >= d:
                d = a.depth + 1
        self.depth = d
        self.op = op
        self.args = args
        self.shape = shape
        self.dtype = dtype
        self.attrs = attrs


def load(buf: Buf, shape: tuple, strides: tuple, offset: int, dtype) -> N:
    """A strided read of ``buf`` over ``shape``."""
    return N("ld", (buf,), shape, dtype, (tuple(strides), offset))


class FH:
    """A Fusion handle. ``arr`` is set once the value is in memory; before that ``node`` is pending.

    ``token`` identifies the storage (what ``storage()`` answers, stable across materialisation);
    ``write`` is the destination Buf of a pending in-place write; ``view_of`` = (base FH, op, attrs)
    for a pending view.
    """

    __slots__ = ("arr", "node", "shape", "dtype", "strides", "token", "write", "view_of", "buf", "viewed",
                 "idx", "__weakref__")

    def __init__(self, shape, dtype, strides, node=None, arr=None, token=None):
        self.arr = arr
        self.node = node
        self.shape = shape
        self.dtype = dtype
        self.strides = strides
        self.token = token
        self.write = None
        self.view_of = None
        self.buf = None
        self.viewed = False  # a pending view of this pending value exists
        self.idx = -1  # position in the recording window (structural references to it use this)

    def __repr__(self) -> str:
        state = "ready" if self.arr is not None else "pending"
        return f"FH({state}, shape={self.shape}, dtype={self.dtype})"


class Token:
    """The storage identity of a pending result (weak-referenceable, as ``storage()`` promises)."""

    __slots__ = ("__weakref__",)


# ---- pushing views down to the leaves ------------------------------------------------------------
def _view_leaf(strides: tuple, offset: int, shape: tuple, op: str, attrs: dict):
    """(new shape, strides, offset) of a strided access viewed through ``op``, or None if the view
    cannot be expressed as strides of that access (a reshape that would need a copy)."""
    m = Meta(shape, None, strides)
    if op == "reshape" and not is_view_op("reshape", (m,), attrs):
        return None
    if op in ("contiguous", "as_strided"):
        return None
    r = infer(op, (m,), attrs)
    if r is None:
        return None
    out = r[0]
    if op == "slice":
        offset += sum(a * s for (a, _, _), s in zip(attrs["index"], strides))
    elif op == "diagonal":
        off, d1, d2 = attrs["offset"], attrs["dim1"], attrs["dim2"]
        offset += off * strides[d2] if off >= 0 else -off * strides[d1]
    return out.shape, out.strides, offset


def push_view(node: N, op: str, attrs: dict, shape: tuple, memo: dict | None = None):
    """``node`` viewed through ``op`` (result ``shape``), with the view pushed into every leaf; None
    when some leaf can't take it (the caller then materialises ``node``)."""
    if memo is None:
        memo = {}
    key = id(node)
    hit = memo.get(key)
    if hit is not None:
        return hit
    if node.op == "ld":
        strides, offset = node.attrs
        r = _view_leaf(strides, offset, node.shape, op, attrs)
        if r is None:
            return None
        new = N("ld", node.args, tuple(r[0]), node.dtype, (tuple(r[1]), r[2]))
    elif node.op == "sc":
        new = N("sc", node.args, shape, node.dtype, node.attrs)
    elif node.op == "red":
        return None
    else:
        kids = []
        for a in node.args:
            if a is None:
                kids.append(None)
                continue
            k = push_view(a, op, attrs, shape, memo)
            if k is None:
                return None
            kids.append(k)
        new = N(node.op, tuple(kids), shape, node.dtype, node.attrs)
    memo[key] = new
    return new


def broadcast_to(node: N, shape: tuple, memo: dict | None = None) -> N:
    """``node`` expanded to ``shape`` (always possible: expand is strides on every leaf). The caller has
    checked that the shapes broadcast; a leaf gets stride 0 on the dims it is broadcast along (written
    out, not as a reshape and an expand through push_view: a layer norm broadcasts two values a call)."""
    if node.shape == shape:
        return node
    if node.op == "sc":
        return N("sc", node.args, shape, node.dtype, node.attrs)
    if memo is None:
        memo = {}
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    if node.op == "ld":
        strides, offset = node.attrs
        lead = len(shape) - len(node.shape)
        st = [0] * lead
        for n, s, t in zip(node.shape, strides, shape[lead:]):
            st.append(s if n == t else 0)
        new = N("ld", node.args, shape, node.dtype, (tuple(st), offset))
    elif node.op == "red":
        raise ValueError("a reduction node is read through its buffer, not broadcast")
    else:
        new = N(node.op, tuple([None if a is None else broadcast_to(a, shape, memo) for a in node.args]), shape,
                node.dtype, node.attrs)
    memo[id(node)] = new
    return new


def loads(*trees) -> list:
    """The load nodes (``ld``) of expression trees, each once: what a kernel reads from memory."""
    out, seen, stack = [], set(), list(trees)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op == "ld":
            out.append(n)
        elif n.op != "sc":
            stack.extend(a for a in n.args if a is not None)
    return out
