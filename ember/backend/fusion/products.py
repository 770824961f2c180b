"""Matrix products in the lazy graph: recorded, run by the inner backend's BLAS at the flush.

A 2-D float ``matmul`` is recorded like a reduction: a pending buffer whose producer is an
``("mm", a, b)`` node, its operands strided loads (of memory, of other pending buffers, or of a
pending value forced into a buffer of its own). Recording it instead of syncing keeps a training
step's window open across its products (the elementwise work between them fuses and no flush is
paid per product), and it lets the flush choose the product's *layout*:

* the gradient of a weight used as ``x @ w.mT`` is ``(x.mT @ g).mT``, which autograd copies into
  ``w.grad`` and the optimizer reads. Computed as written, that copy and the update read a
  transposed array (strided loads, several times slower than the BLAS call itself). When every
  reader of a product reads it transposed and no one holds it, the flush computes ``b.mT @ a.mT``
  instead (BLAS takes transposed operands for free) and those readers read it contiguously.

Views of a product that someone holds stay real views of it, so storage sharing stays exact.
At the flush a product runs through the inner backend's ``matmul_into`` when it has one (CpuC:
BLAS writes a buffer of the target's pool, sparing a fresh result's page faults every step), else
its ``matmul`` op; either way CpuC's BLAS thread policy applies.

>>> import ember
>>> a = ember.ones(2, 3, device="cpu:fused")
>>> (a @ ember.ones(3, 4, device="cpu:fused")).mT.contiguous().shape
ember.Size([4, 2])
"""

from __future__ import annotations

from ..._shape import contiguous_strides
from .graph import FH, Buf, N, Token, load, loads, push_view


def record(fu, a, b):
    """The pending handle of ``a @ b`` for 2-D float32/float64 handles of one dtype, else None
    (the op then runs on the inner backend, which raises any error about its inputs)."""
    if a.__class__ is not FH or b.__class__ is not FH:
        return None
    if len(a.shape) != 2 or len(b.shape) != 2 or a.dtype != b.dtype or a.shape[1] != b.shape[0]:
        return None
    if fu._ctype(a.dtype) not in ("f32", "f64") or 0 in a.shape or 0 in b.shape:
        return None
    la, lb = operand(fu, a), operand(fu, b)
    shape = (a.shape[0], b.shape[1])
    buf = Buf(None, shape, a.dtype, producer=N("mm", (la, lb), shape, a.dtype))
    strides = contiguous_strides(shape)
    fh = FH(shape, a.dtype, strides, node=load(buf, shape, strides, 0, a.dtype), token=Token())
    fh.buf = buf
    return fu._track(fh)


def operand(fu, x: FH) -> N:
    """A strided load reading ``x``'s value (BLAS reads memory, not expressions)."""
    node = fu._leaf(x)
    if node.op == "ld":
        return node
    if x.arr is not None:  # memory with a pending write into it: a buffer holding the written value
        buf = Buf(None, x.shape, x.dtype, producer=node)
        return load(buf, x.shape, contiguous_strides(x.shape), 0, x.dtype)
    if x.view_of is not None:  # a view of a pending value: the view of the base's buffer
        base, op, attrs = x.view_of
        if base.arr is None:
            v = push_view(operand(fu, base), op, attrs, x.shape)
            if v is not None:
                return v
    return fu._force(x)


def choose_layouts(tasks: list, live_ids: set) -> None:
    """Compute transposed each product that no one holds and every reader reads fully transposed
    (see the module docstring); those readers' loads become contiguous."""
    prods = {id(t.buf): t for t in tasks if t.kind == "mm" and id(t.buf) not in live_ids
             and len(t.buf.shape) == 2 and min(t.buf.shape) > 1}
    if not prods:
        return
    readers: dict = {}
    for u in tasks:
        for n in loads(u.tree):
            t = prods.get(id(n.args[0]))
            if t is not None:
                readers.setdefault(id(t.buf), {})[id(n)] = n
    flip = []
    for k, t in prods.items():
        lds = readers.get(k)
        m, n = t.buf.shape
        if lds and all(ld.shape == (n, m) and ld.attrs == ((1, n), 0) for ld in lds.values()):
            flip.append(t)
    # first every reader of a flipped product reads it contiguously, then the flipped products take
    # their operands from those loads (a product may read another flipped one)
    for t in flip:
        m, n = t.buf.shape
        for ld in readers[id(t.buf)].values():
            ld.attrs = ((m, 1), 0)
    for t in flip:
        m, n = t.buf.shape
        a, b = t.tree.args
        t.tree = N("mm", (_transposed(b), _transposed(a)), (n, m), t.tree.dtype)
        t.buf.shape = (n, m)
        t.buf.producer = t.tree
        t.loads = [x for x in t.tree.args if x.args[0].arr is not None]


def _transposed(ld: N) -> N:
    (s0, s1), off = ld.attrs
    return N("ld", ld.args, (ld.shape[1], ld.shape[0]), ld.dtype, ((s1, s0), off))


def geometry(ld: N) -> tuple:
    """(shape, element strides, element offset) of a product operand's load."""
    return ld.shape, ld.attrs[0], ld.attrs[1]
