"""The flush: turn the pending graph into fused kernels, run them, and materialise live handles.

1. *What must be written*: every pending write (into existing memory), every live pending handle
   (a weakref to it still resolves: the frontend or autograd may read it), and every buffer those
   read (reduction results, values forced into memory by a view). Anything else is an
   intermediate that lives only in registers of the kernels that inline it.
2. *Tasks* are those buffers with their expression trees; a task depends on the buffers it loads.
   Tasks at the same depth with the same shape share one elementwise kernel (several outputs);
   each reduction is a kernel of its own, unless only one elementwise group reads it back over its
   rows: then they are one row kernel (softmax, norms; rowgen.py).
3. *Hazards*: all memory reads recorded in a window expect the memory as it was when the window
   opened (later reads of written storage were forwarded the written value). A write kernel runs
   after every kernel that reads its storage at its depth; a reader placed after it, or one in the
   same kernel reading other elements, gets a snapshot taken first.

All of that is a :class:`Plan`: steps (allocate, snapshot, launch a kernel, run one op on the inner
backend) whose arguments are *references* into the recording window (leaf buffer slots, scalar
slots, buffers the plan allocates) plus constants (shapes, strides, grids). The window's structural
signature (every recorded op with its attributes and input references, every leaf's geometry and
aliasing; hashed as it is recorded, see backend.py) and which handles are still alive key a cache of
plans: a repeated flush, like every step of a training loop after the first, replays its plan with
no analysis and no kernel generation; only buffers and scalar values bind anew.
"""

from __future__ import annotations

import os
import sys
import time
import weakref

from ..._shape import contiguous_strides
from . import codegen, products, replay, rowgen
from .graph import FH, Buf, N, load, loads


class Task:
    __slots__ = ("kind", "buf", "tree", "write", "deps", "loads", "level", "fused")

    def __init__(self, kind, buf, tree, write=False):
        self.kind, self.buf, self.tree, self.write = kind, buf, tree, write
        self.deps: list = []
        self.loads: list = []
        self.level = -1
        self.fused = False  # a reduction merged into the row kernel of its consumers


# plan step kinds and argument reference kinds
_ALLOC, _SNAP, _KERNEL, _INNER, _MM = 0, 1, 2, 3, 4
_LEAF, _OWN, _SNAPREF, _DIRECT = 0, 1, 2, 3
MAX_PLANS = 256  # cached plans per Fusion layer (a training loop needs a handful)


class Plan:
    """A finished flush: steps over window references; ``cacheable`` is False when some argument
    could only be referenced directly (then the plan runs once and is not kept)."""

    __slots__ = ("sig", "steps", "live", "n_alloc", "n_snap", "cacheable", "n_kernels", "n_inner")

    def __init__(self):
        self.steps: list = []
        self.live: list = []  # per live handle: (_OWN, j) | ("w",) | ("v",) | (_DIRECT, buf)
        self.n_alloc = 0
        self.n_snap = 0
        self.cacheable = True
        self.n_kernels = 0
        self.n_inner = 0
        self.sig = None


# EMBER_DEBUG (read once, like backend.py's: a flush would otherwise look it up in the environment every time)
_DEBUG = os.environ.get("EMBER_DEBUG", "") not in ("", "0")


def _debug() -> bool:
    return _DEBUG


def flush(fu) -> None:
    sig, h, tainted = fu._sig, fu._h, fu._tainted
    live = []
    for r in fu._pending:
        fh = r()
        if fh is not None and fh.arr is None and fh.node is not None:
            live.append(fh)
    key = (h, tuple([fh.idx for fh in live]))
    plan = None
    if not tainted:
        plan = fu._plans.get(key)
        if plan is not None and plan.sig != sig:
            plan = None
    if plan is None and fu._log:
        replay.materialise(fu)  # replayed ops (replay.py): the plan is built from their recorded graph
    writes, serial = fu._writes, fu._serial
    leaves, scal, srcs = fu._leaves, fu._scal, fu._srcs
    fu._pending = []
    fu._writes = {}
    fu._new_window(fu._busy > 0)
    fu.stats["flushes"] += 1
    if plan is None:
        try:
            plan = _build(fu, writes, live, serial)
        except BaseException:
            _abandon(live)
            raise
        fu.stats["plans"] += 1
        if plan.cacheable and not tainted:
            if len(fu._plans) >= MAX_PLANS:
                fu._plans.clear()
            plan.sig = sig
            fu._plans[key] = plan
    else:
        fu.stats["plan_hits"] += 1
    _execute(fu, plan, live, leaves, scal, srcs)


def _build(fu, writes: dict, live: list, serial: int) -> Plan:
    """Partition the pending graph into kernels (generated now, compiled once per source)."""
    plan = Plan()
    tasks: list = []
    by_buf: dict = {}

    def need(buf):
        if buf.arr is not None:
            return None
        t = by_buf.get(id(buf))
        if t is None:
            prod = buf.producer
            t = Task(prod.op if prod.op in ("red", "mm") else "ew", buf, prod)
            by_buf[id(buf)] = t
            tasks.append(t)
        return t

    for dbuf, value, _ in writes.values():
        tasks.append(Task("ew", dbuf, value, write=True))
    own: dict = {}  # id(Buf) -> index of the array the plan allocates (or gets from the inner backend)
    live_bufs = []
    for fh in live:
        if fh.write is not None or fh.view_of is not None:
            live_bufs.append(None)
            continue
        buf = fh.buf
        if buf is None:
            buf = Buf(None, fh.shape, fh.dtype, producer=fh.node)
        live_bufs.append(buf)
        need(buf)
    def discover():
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

    discover()
    if _materialise_extreme_inputs(tasks, by_buf):
        for t in tasks:
            t.deps, t.loads = [], []
        discover()
    live_ids = {id(b) for b in live_bufs if b is not None}
    products.choose_layouts(tasks, live_ids)
    for t in tasks:
        _level(t)
    # groups: (level, kind, shape) for elementwise, one per reduction or product; writes last within a level
    groups: dict = {}
    for t in tasks:
        key = (t.level, "ew", t.buf.shape) if t.kind == "ew" else (t.level, t.kind, id(t))
        groups.setdefault(key, []).append(t)
    _row_fusion(groups, tasks)
    limit = getattr(fu.target, "max_arrays", None)
    if limit:
        _split_wide(groups, limit)
    order = sorted(groups.values(), key=lambda g: (g[-1].level, any(t.write for t in g)))
    snaps = _hazards(order)

    def ref(buf):
        w = buf.win
        if w is not None and w[0] == serial:
            return (_LEAF, w[1])
        j = own.get(id(buf))
        if j is not None:
            return (_OWN, j)
        plan.cacheable = False
        return (_DIRECT, buf)

    def alloc(buf):
        j = own[id(buf)] = plan.n_alloc
        plan.n_alloc += 1
        plan.steps.append((_ALLOC, j, buf.shape, buf.dtype.np))

    snap_ix: dict = {}

    def snapshot(src):
        """The reference to a copy of ``src`` taken before this flush's writes (one per buffer)."""
        s = snap_ix.get(src.sid)
        if s is None:
            s = snap_ix[src.sid] = plan.n_snap
            plan.n_snap += 1
            # first of all steps: the copy must hold the memory as the window saw it, before any write
            # kernel of this flush ran (appending it here put it after writes ordered before its reader)
            plan.steps.insert(0, (_SNAP, s, ref(src)))
        return (_SNAPREF, s)

    for g in order:
        subst = snaps.get(id(g))
        if len(g) == 1 and g[0].tree.src is not None and subst is None and not g[0].write:
            t = g[0]  # one op on memory: nothing to fuse, the inner backend runs it
            j = own[id(t.buf)] = plan.n_alloc
            plan.n_alloc += 1
            plan.steps.append((_INNER, j, t.tree.src[3], t.buf.shape))
            plan.n_inner += 1
            continue
        if g[0].kind == "mm":  # a matrix product: the inner backend's BLAS, operands as strided views
            t = g[0]
            opnds = []
            for ld in t.tree.args:
                r = ref(ld.args[0])
                src = subst.get(ld.args[0].sid) if subst is not None else None
                if src is not None:
                    r = snapshot(src)
                opnds.append((r, products.geometry(ld)))
            j = own[id(t.buf)] = plan.n_alloc
            plan.n_alloc += 1
            plan.steps.append((_MM, j, opnds[0], opnds[1], t.buf.shape))
            plan.n_inner += 1
            continue
        if g[0].kind == "red" and len(g) > 1:  # reductions and the values that read them back: one kernel
            reds = [(t.tree, t.buf, id(t.buf) in live_ids) for t in g if t.kind == "red"]
            for t in g:
                if t.kind == "ew" or id(t.buf) in live_ids:
                    alloc(t.buf)
            kern = rowgen.rows(reds, [(t.buf, t.tree) for t in g if t.kind == "ew"], fu.target)
        elif g[0].kind == "red":
            t = g[0]
            alloc(t.buf)
            kern = codegen.reduction(t.tree, t.buf, fu.target)
        else:
            for t in g:
                if not t.write:
                    alloc(t.buf)
            kern = codegen.elementwise(g[0].buf.shape, [(t.buf, t.tree) for t in g], fu.target)
        arrays, bind, n_in = kern.bind
        grid, scalars = bind()
        refs = [ref(b) for b in arrays]
        if subst is not None:  # inputs that must see the memory as it was before this flush's writes
            for i in range(n_in):
                src = subst.get(arrays[i].sid)
                if src is not None:
                    refs[i] = snapshot(src)
        template, fill = [], []
        for v in scalars:
            if v.__class__ is codegen.Slot:
                if v.slot is None:
                    template.append(codegen.lit(v.t, v.value))
                    plan.cacheable = False
                    continue
                fill.append((len(template), v.slot, _CONV[v.t]))
                template.append(None)
            else:
                template.append(v)
        ops = sorted({n.op for t in g for n in _nodes(t.tree)} - {"ld", "sc"})
        # the step keeps the compiled kernel and its source, not the generator's binder: that one
        # references this window's nodes and buffers, which a cached plan must not keep alive
        launch_grid = fu.target.grid(grid, kern.block, kern.rows)
        plan.steps.append((_KERNEL, kern.kern, launch_grid, kern.block, refs, template, fill,
                           (len(g), g[0].buf.shape, grid, ", ".join(ops), kern.source)))
        plan.n_kernels += 1
    for fh, buf in zip(live, live_bufs):
        if fh.write is not None:
            plan.live.append(("w",))
        elif fh.view_of is not None:
            plan.live.append(("v",))
        else:
            j = own.get(id(buf))
            if j is None:
                plan.cacheable = False
                plan.live.append((_DIRECT, buf))
            else:
                plan.live.append((_OWN, j))
    for t in tasks:
        t.buf.producer = None
    return plan


_EXTREMES = frozenset({"amax", "amin", "max", "min"})


def _materialise_extreme_inputs(tasks: list, by_buf: dict) -> bool:
    """One computation for the input of a max/min reduction that other kernels of the flush also
    compute (when it involves libm functions): it is written once and every consumer reads it. Two
    kernels computing the same ``tanh`` may differ in the last bit (the C target's vectorised libmvec
    and scalar libm), and amax's gradient selects the elements equal to the maximum: a maximum of one
    kernel's values compared with another's matches nothing, and the gradient is 0/0 (found: ONNX
    Attention with a softcap on cpu:fused). True when trees were rewritten."""
    args = {}
    for t in tasks:
        if t.kind == "red" and t.tree.attrs[0] in _EXTREMES and t.tree.args[0].op not in ("ld", "sc"):
            args[id(t.tree.args[0])] = t.tree.args[0]
    if not args:
        return False
    users: dict = {}  # id(arg) -> tasks whose trees contain it
    for t in tasks:
        if t.kind == "mm":
            continue
        for n in _nodes(t.tree):
            if id(n) in args:
                users.setdefault(id(n), set()).add(id(t))
    shared = {i: n for i, n in args.items() if len(users.get(i, ())) > 1 and _has_libm(n)}
    if not shared:
        return False
    written = {}
    for i, n in shared.items():
        buf = Buf(None, n.shape, n.dtype, producer=n)
        t = Task("ew", buf, n)
        by_buf[id(buf)] = t
        tasks.append(t)
        written[i] = load(buf, n.shape, tuple(contiguous_strides(n.shape)), 0, n.dtype)
    memo: dict = {}
    for t in tasks:
        if t.kind != "mm":
            t.tree = _replaced(t.tree, written, memo, t.tree if t.buf.producer is t.tree else None)
    return True


# ops whose math comes from libm (vector and scalar versions on the CPU can differ in the last bit);
# arithmetic is exact and alike in every kernel (the C target doesn't contract FMAs)
_LIBM = frozenset("exp exp2 expm1 log log2 log10 log1p tanh sinh cosh sin cos tan asin acos atan asinh acosh "
                  "atanh atan2 erf erfc erfinv pow hypot sigmoid logaddexp softplus gelu silu mish logsigmoid "
                  "elu selu celu lgamma digamma".split())


def _has_libm(tree) -> bool:
    return any(n.op in _LIBM for n in _nodes(tree))


def _replaced(tree, loads_of: dict, memo: dict, own):
    """``tree`` with the nodes in ``loads_of`` (other than ``own``, the task's own value) replaced by
    their loads."""
    if tree is not own:
        ld = loads_of.get(id(tree))
        if ld is not None:
            return ld
    if tree.op in ("ld", "sc"):
        return tree
    key = (id(tree), tree is own)
    hit = memo.get(key)
    if hit is not None:
        return hit
    args = tuple(_replaced(a, loads_of, memo, own) if a.__class__ is N else a for a in tree.args)
    out = tree
    if any(a is not b for a, b in zip(args, tree.args)):
        out = N(tree.op, args, tree.shape, tree.dtype, tree.attrs)
        out.src = tree.src
    memo[key] = out
    return out


def _row_fusion(groups: dict, tasks: list) -> None:
    """Merge reductions into the elementwise group that reads them back over their rows (softmax,
    norms): the group's key then holds [reductions in dependency order..., elementwise tasks...].
    A reduction qualifies when it reduces the group's shape, every reader is in the merged group
    and reads it as its row's value (broadcast over the reduced dims)."""
    users: dict = {}
    for t in tasks:
        for d in t.deps:
            users.setdefault(id(d), []).append(t)
    for key, g in list(groups.items()):
        if key[1] != "ew" or any(t.write for t in g):
            continue
        shape = key[2]
        cand: dict = {}
        stack = [d for t in g for d in t.deps if d.kind == "red"]
        while stack:
            r = stack.pop()
            if id(r) in cand or r.fused or r.tree.args[0].shape != shape:
                continue
            cand[id(r)] = r
            stack.extend(d for d in r.deps if d.kind == "red")
        if not cand:
            continue
        nd = len(shape)
        dims_of = {k: tuple(r.tree.attrs[1]) or tuple(range(nd)) for k, r in cand.items()}
        dims = dims_of[next(iter(cand))]
        cand = {k: r for k, r in cand.items() if dims_of[k] == dims}
        members = {id(t) for t in g}
        changed = True
        while changed and cand:
            changed = False
            for k, r in list(cand.items()):
                if not _row_readers_ok(r, users.get(k, ()), members, cand, shape, dims):
                    del cand[k]
                    changed = True
        if not cand:
            continue
        reds = sorted(cand.values(), key=lambda r: r.level)
        for r in reds:
            r.fused = True
            del groups[(r.level, "red", id(r))]
        groups[key] = reds + g


def _split_wide(groups: dict, limit: int) -> None:
    """Split elementwise groups whose kernel would bind more than ``limit`` arrays (WebGPU binds a
    limited number of storage buffers per kernel; an optimizer step over many parameters of one
    shape would otherwise be one kernel). The pieces are ordinary groups: hazards between them are
    found like any others'."""
    for key, g in list(groups.items()):
        if key[1] != "ew" or len(g) < 2 or any(t.kind != "ew" for t in g):
            continue
        chunks, cur, bufs = [], [], set()
        for t in g:
            mine = {id(ld.args[0]) for ld in loads(t.tree)} | {("out", id(t.buf))}  # an output binds apart
            if cur and len(bufs | mine) > limit:
                chunks.append(cur)
                cur, bufs = [], set()
            cur.append(t)
            bufs |= mine
        chunks.append(cur)
        if len(chunks) > 1:
            del groups[key]
            for i, c in enumerate(chunks):
                groups[key + (i,)] = c


def _row_readers_ok(r, readers, members: set, cand: dict, shape: tuple, dims: tuple) -> bool:
    for u in readers:
        if id(u) not in members and id(u) not in cand:
            return False
        for ld in loads(u.tree.args[0] if u.kind == "red" else u.tree):
            if ld.args[0] is r.buf and not rowgen.row_broadcast(ld, shape, dims):
                return False
    return True


_CONV = {"f32": float, "f64": float, "i32": int, "i64": int, "bool_": bool}


def _nodes(tree) -> list:
    out, seen, stack = [], set(), [tree]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        if n.op != "ld" and n.op != "sc":
            stack.extend(a for a in n.args if a is not None)
    return out


def _execute(fu, plan: Plan, live: list, leaves: list, scal: list, srcs: list) -> None:
    """Run a plan's steps with this window's buffers and scalars, then materialise live handles."""
    own = [None] * plan.n_alloc  # (shaped array, flat array)
    snap = [None] * plan.n_snap
    target = fu.target
    dbg = _debug()
    launch = target.launch
    tape = fu._tape  # an ember.compile capture: every piece of work is also recorded (tape.py)
    step = None
    try:
        for step in plan.steps:
            kind = step[0]
            if kind == _KERNEL:
                t0 = time.perf_counter() if dbg else 0.0
                _, kern, grid, block, refs, template, fill, info = step
                arrs = [leaves[i].arr if c == _LEAF else own[i][1] if c == _OWN else snap[i] if c == _SNAPREF
                        else i.arr for c, i in refs]
                vals = list(template)
                for pos, slot, conv in fill:
                    vals[pos] = conv(scal[slot])
                launch(kern, grid, block, arrs, vals)
                if tape is not None:
                    tape.kernel(target, kern, grid, block, arrs, vals)
                fu.stats["kernels"] += 1
                if dbg:
                    ms = (time.perf_counter() - t0) * 1e3
                    print(f"[ember.fusion] kernel {fu.stats['kernels']}: {info[0]} output(s) {info[1]}, grid "
                          f"{info[2]}x{block}, {ms:.3f} ms ({info[3]})\n{info[4]}", file=sys.stderr, flush=True)
            elif kind == _ALLOC:
                out = target.alloc(step[2], step[3])
                own[step[1]] = (out, target.new_flat(out))
                if tape is not None:
                    tape.alloc(out)
            elif kind == _INNER:
                own[step[1]] = _run_inner(fu, srcs[step[2]], step[3])
            elif kind == _MM:
                t0 = time.perf_counter() if dbg else 0.0
                a = target.view(_array(step[2][0], leaves, own, snap), *step[2][1])
                b = target.view(_array(step[3][0], leaves, own, snap), *step[3][1])
                into = getattr(fu.inner, "matmul_into", None)
                if into is not None and a.dtype == b.dtype:  # BLAS writes a pooled buffer (no page faults)
                    out = target.alloc(step[4], a.dtype)
                    into(a, b, out)
                    if tape is not None:
                        tape.alloc(out)
                        tape.matmul(into, a, b, out)
                    own[step[1]] = (out, target.new_flat(out))
                    fu.stats["inner_ops"] += 1
                else:
                    own[step[1]] = _fresh(fu, fu.inner.run("matmul", (a, b), {}), step[4])
                    if tape is not None:
                        fu._tape_inner("matmul", (a, b), {}, own[step[1]][0])
                if dbg:
                    print(f"[ember.fusion] matmul {a.shape} @ {b.shape} on the inner backend, operand strides "
                          f"{step[2][1][1]} and {step[3][1][1]}: {(time.perf_counter() - t0) * 1e3:.3f} ms",
                          file=sys.stderr, flush=True)
            else:
                c, i = step[2]
                arr = leaves[i].arr if c == _LEAF else own[i][1] if c == _OWN else i.arr
                snap[step[1]] = target.copy_flat(arr)
                if tape is not None:
                    tape.copy(snap[step[1]], arr)
    except Exception as e:  # noqa: BLE001 - re-raised, naming the op, with the window left consistent
        _abandon(live)
        raise _named(e, step, srcs) from e
    inner = fu.inner
    alias = fu._alias
    for fh, act in zip(live, plan.live):
        c = act[0]
        if c == _OWN:
            fh.arr = arr = own[act[1]][0]
            st = inner.storage(arr)  # a pooled output's storage is the pool's buffer (target.py)
            alias[id(st)] = (weakref.ref(st), fh.token)
        elif c == "w":
            fh.arr = fh.write[1]
        elif c == "v":
            base, op, attrs = fh.view_of
            fh.arr = inner.run(op, (base.arr,), attrs)
            if tape is not None:
                fu._tape_inner(op, (base.arr,), attrs, fh.arr)
        else:
            fh.arr = arr = act[1].out
            st = inner.storage(arr)
            alias[id(st)] = (weakref.ref(st), fh.token)
        fh.node = None
        fh.buf = None
        fh.write = None
        fh.view_of = None
    if len(alias) > 4096:
        for key in [key for key, e in alias.items() if e[0]() is None]:
            del alias[key]


def _abandon(live: list) -> None:
    """After a failed flush: the live handles it was computing are marked failed (reading one
    raises), the window is already closed, later ops record and run normally."""
    for fh in live:
        if fh.arr is None:
            fh.node = None
            fh.buf = None
            fh.write = None
            fh.view_of = None


def _named(e: Exception, step, srcs) -> Exception:
    if step is None:
        return e
    if step[0] == _KERNEL:
        what = f"the fused kernel computing {step[7][3] or 'a copy'} (shape {step[7][1]})"
    elif step[0] == _INNER:
        what = f"op '{srcs[step[2]][0]}' on the inner backend"
    elif step[0] == _MM:
        what = f"op 'matmul' on the inner backend (result shape {step[4]})"
    else:
        what = "a buffer for the fused kernels"
    msg = f"fusion: {what} failed at a flush: {type(e).__name__}: {e}"
    try:
        new = type(e)(msg)
    except Exception:  # noqa: BLE001 - an exception type with another constructor
        new = RuntimeError(msg)
    return new


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


def _array(r, leaves, own, snap):
    """The flat array a plan reference names."""
    c, i = r
    return leaves[i].arr if c == _LEAF else own[i][1] if c == _OWN else snap[i] if c == _SNAPREF else i.arr


def _run_inner(fu, src, shape) -> tuple:
    op, inputs, attrs, _ = src
    vals = tuple([x.arr if x.__class__ is FH else x for x in inputs])
    r = _fresh(fu, fu.inner.run(op, vals, attrs), shape)
    if fu._tape is not None:
        fu._tape_inner(op, vals, attrs, r[0])
    return r


def _fresh(fu, out, shape) -> tuple:
    """(array, flat view) of an inner result, copied when it is not a fresh C-contiguous array."""
    if tuple(fu.inner.strides(out)) != contiguous_strides(shape) or not fu.target.fresh(fu.inner, out):
        out = fu.inner.run("copy", (out,), {})  # results are promised C-contiguous and fresh
    fu.stats["inner_ops"] += 1
    return out, fu.target.new_flat(out)


def _hazards(order: list) -> dict:
    """Snapshots for readers that would otherwise see a write made earlier in this flush:
    {id(group): {storage id: the leaf Buf to copy}}."""
    written = {}
    for pos, g in enumerate(order):
        for t in g:
            if t.write:
                written[t.buf.sid] = (pos, t)
    if not written:
        return {}
    snaps: dict = {}
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
                snaps.setdefault(id(g), {}).setdefault(sid, ld.args[0])
    return snaps
