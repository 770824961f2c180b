"""The flush: turn the pending graph into fused kernels, run them, and materialise live handles.

1. *What must be written*: every pending write (into existing memory), every live pending handle
   (a weakref to it still resolves: the frontend or autograd may read it), and every buffer those
   read (reduction results, values forced into memory by a view). Anything else is an
   intermediate that lives only in registers of the kernels that inline it.
2. *Tasks* are those buffers with their expression trees; a task depends on the buffers it loads.
   Tasks at the same depth with the same shape share one elementwise kernel (several outputs);
   each reduction is a kernel of its own.
3. *Hazards*: all memory reads recorded in a window expect the memory as it was when the window
   opened (later reads of written storage were forwarded the written value). A write kernel runs
   after every kernel that reads its storage at its depth; a reader placed after it, or one in the
   same kernel reading other elements, gets a snapshot taken first.
"""

from __future__ import annotations

import os
import sys
import time
import weakref

from ..._shape import contiguous_strides
from . import codegen
from .graph import FH, Buf, loads


class Task:
    __slots__ = ("kind", "buf", "tree", "write", "deps", "loads", "level")

    def __init__(self, kind, buf, tree, write=False):
        self.kind, self.buf, self.tree, self.write = kind, buf, tree, write
        self.deps: list = []
        self.loads: list = []
        self.level = -1


def _debug() -> bool:
    v = os.environ.get("EMBER_DEBUG", "")
    return v not in ("", "0")


def flush(fu) -> None:
    pend, writes = fu._pending, fu._writes
    fu._pending = []
    fu._writes = {}
    fu.stats["flushes"] += 1
    live = []
    for r in pend:
        fh = r()
        if fh is not None and fh.arr is None:
            live.append(fh)
    tasks: list = []
    by_buf: dict = {}

    def need(buf):
        if buf.arr is not None:
            return None
        t = by_buf.get(id(buf))
        if t is None:
            prod = buf.producer
            t = Task("red" if prod.op == "red" else "ew", buf, prod)
            by_buf[id(buf)] = t
            tasks.append(t)
        return t

    for dbuf, value, _ in writes.values():
        tasks.append(Task("ew", dbuf, value, write=True))
    for fh in live:
        if fh.write is not None or fh.view_of is not None:
            continue
        if fh.buf is None:
            fh.buf = Buf(None, fh.shape, fh.dtype, producer=fh.node)
        need(fh.buf)
    k = 0
    while k < len(tasks):  # discover loads and dependencies (tasks grows as buffers are found)
        t = tasks[k]
        k += 1
        for n in loads(t.tree.args[0] if t.kind == "red" else t.tree):
            b = n.args[0]
            if b.arr is None:
                d = need(b)
                if d is not t and d not in t.deps:
                    t.deps.append(d)
            else:
                t.loads.append(n)
    for t in tasks:
        _level(t)
    # groups: (level, kind, shape) for elementwise, one per reduction; writes last within a level
    groups: dict = {}
    for t in tasks:
        key = (t.level, "ew", t.buf.shape) if t.kind == "ew" else (t.level, "red", id(t))
        groups.setdefault(key, []).append(t)
    order = sorted(groups.values(), key=lambda g: (g[0].level, any(t.write for t in g)))
    snaps = _hazards(fu, order)
    dbg = _debug()
    for g in order:
        t0 = time.perf_counter() if dbg else 0.0
        subst = snaps.get(id(g))
        if len(g) == 1 and g[0].tree.src is not None and subst is None and not g[0].write:
            _run_inner(fu, g[0])  # one op on memory: nothing to fuse, the inner backend runs it
            continue
        if g[0].kind == "red":
            t = g[0]
            _alloc(fu, t.buf)
            kern = codegen.reduction(t.tree, t.buf)
        else:
            for t in g:
                if not t.write:
                    _alloc(fu, t.buf)
            kern = codegen.elementwise(g[0].buf.shape, [(t.buf, t.tree) for t in g])
        arrays, bind, n_in = kern.bind
        grid, scalars = bind()
        arrs = [b.arr for b in arrays]
        if subst is not None:  # inputs that must see the memory as it was before this flush's writes
            for i in range(n_in):
                snap = subst.get(arrays[i].sid)
                if snap is not None:
                    arrs[i] = snap
        fu.target.launch(kern.kern, fu.target.grid(grid, kern.block), kern.block, arrs, scalars)
        fu.stats["kernels"] += 1
        if dbg:
            ms = (time.perf_counter() - t0) * 1e3
            print(f"[ember.fusion] kernel {fu.stats['kernels']}: {len(g)} output(s) {g[0].buf.shape}, "
                  f"grid {grid}x{kern.block}, {ms:.3f} ms\n{kern.source}", file=sys.stderr, flush=True)
    inner = fu.inner
    alias = fu._alias
    for fh in live:
        if fh.write is not None:
            fh.arr = fh.write[1]
        elif fh.view_of is not None:
            base, op, attrs = fh.view_of
            fh.arr = inner.run(op, (base.arr,), attrs)
        else:
            fh.arr = fh.buf.out
            alias[id(fh.arr)] = (weakref.ref(fh.arr), fh.token)
        fh.node = None
        fh.buf = None
        fh.write = None
        fh.view_of = None
    for t in tasks:
        t.buf.producer = None
    if len(alias) > 4096:
        for key in [key for key, e in alias.items() if e[0]() is None]:
            del alias[key]


def _level(t: Task) -> int:
    if t.level >= 0:
        return t.level
    stack = [t]
    while stack:  # iterative: dependency chains can be long
        cur = stack[-1]
        pending = [d for d in cur.deps if d.level < 0]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        cur.level = 1 + max((d.level for d in cur.deps), default=-1)
    return t.level


def _run_inner(fu, t: Task) -> None:
    op, inputs, attrs = t.tree.src
    vals = tuple([x.arr if x.__class__ is FH else x for x in inputs])
    out = fu.inner.run(op, vals, attrs)
    if tuple(fu.inner.strides(out)) != contiguous_strides(t.buf.shape) or fu.inner.storage(out) is not out:
        out = fu.inner.run("copy", (out,), {})  # results are promised C-contiguous and fresh
    fu.stats["inner_ops"] += 1
    t.buf.out = out
    t.buf.arr = fu.target.flat(out, out)[0]


def _alloc(fu, buf: Buf) -> None:
    buf.out = fu.target.alloc(buf.shape, buf.dtype.np)
    buf.arr = buf.out.reshape(-1)


def _hazards(fu, order: list) -> dict:
    """Snapshots for readers that would otherwise see a write made earlier in this flush:
    {id(group): {storage id: snapshot array}}."""
    written = {}
    for pos, g in enumerate(order):
        for t in g:
            if t.write:
                written[t.buf.sid] = (pos, t)
    if not written:
        return {}
    snaps: dict = {}
    copies: dict = {}
    for pos, g in enumerate(order):
        for t in g:
            for ld in t.loads:
                sid = ld.args[0].sid
                w = written.get(sid)
                if w is None:
                    continue
                wpos, wt = w
                if pos < wpos:
                    continue
                if pos == wpos and ld.attrs == (contiguous_strides(ld.shape), 0) and ld.shape == wt.buf.shape:
                    continue  # the same element in the same thread: read before the write
                snap = copies.get(sid)
                if snap is None:
                    snap = copies[sid] = fu.target.copy(ld.args[0].arr)
                snaps.setdefault(id(g), {})[sid] = snap
    return snaps
