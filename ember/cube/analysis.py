"""Barriers and uniformity: which code runs once per block and which once per thread.

On a GPU every thread runs the kernel body. The C target runs a block on one CPU thread and the
threads of the block as loops, so a barrier (``cube.sync_threads()``) or a warp operation splits
the body into *phases* (loop fission): all threads run phase 1, then all threads run phase 2...

:func:`plan` classifies the statements of a kernel:

* **block-level** statements run once per block: barriers and collectives, and every loop or ``if``
  containing one, together with the assignments of the variables their headers read (a loop
  counter, a tree-reduction stride). Those variables must have the same value in every thread of
  the block; a barrier under a condition that depends on ``cube.thread_idx`` is refused with a
  :class:`~ember.cube.errors.CompileError` naming the line;
* runs of the other statements become :class:`ThreadLoop` phases.

Every target calls :func:`plan` (a kernel accepted on one target is accepted on all); the C
renderer also uses the phases and the variable classes (:class:`Plan`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ir
from .errors import CompileError


@dataclass(slots=True, eq=False)
class ThreadLoop(ir.Stmt):
    """A phase: ``body`` runs once for every thread of the block."""
    body: list
    id: int
    in_loop: bool  # inside a block-level loop (its variables may carry values between iterations)
    line: int = 0


@dataclass
class Plan:
    items: list  # block-level statements and ThreadLoops
    block_vars: set  # uniform scalars, one per block
    spilled: set  # per-thread scalars live across phases: one slot per thread
    remat: dict  # name -> Assign: recomputed at the start of each phase that uses it
    spilled_arrays: set  # cube.local arrays live across phases
    loops: list = field(default_factory=list)  # every ThreadLoop
    has_sync: bool = False
    thread_return: bool = False  # some thread may return early (needs a per-thread 'done' flag across phases)


def _err(kernel: ir.Kernel, line: int, message: str) -> CompileError:
    return CompileError(message, kernel.filename, line or None, kernel.source_lines.get(line), kernel.name)


def _is_sync(s) -> bool:
    return isinstance(s, ir.Barrier | ir.Collective)


def _thread_dependent(e: ir.Expr) -> bool:
    return any(isinstance(x, ir.Special) and x.what in ("thread_idx", "lane") for x in ir.walk_expr(e))


def plan(kernel: ir.Kernel) -> Plan:
    body = kernel.body
    has_sync = any(_is_sync(s) for s in ir.walk_stmts(body))
    block_vars: set = set()
    bl: set = set()  # ids of block-level statements

    def mark(stmts, bl_loop: bool) -> bool:
        """Mark block-level statements in ``stmts``; ``bl_loop``: the innermost enclosing loop is block-level.
        Returns whether a break/continue/return in ``stmts`` escapes to a block-level construct."""
        escapes = False
        for s in stmts:
            is_loop = isinstance(s, ir.For | ir.While)
            inner_esc = False
            for b in ir.sub_bodies(s):
                if mark(b, bl_loop if not is_loop else id(s) in bl):
                    inner_esc = True
            if is_loop and id(s) not in bl:
                inner_esc = False  # breaks inside a thread-level loop stay in it
            jump = isinstance(s, ir.Break | ir.Continue) and bl_loop
            if (_is_sync(s) or set(ir.assigned_vars(s)) & block_vars or inner_esc or jump
                    or any(id(c) in bl for b in ir.sub_bodies(s) for c in b)):
                bl.add(id(s))
            escapes = escapes or jump or (inner_esc and not is_loop)
        return escapes

    changed = True
    while changed and has_sync:
        before = (len(bl), len(block_vars))
        mark(body, False)
        for s in ir.walk_stmts(body):
            if id(s) not in bl:
                continue
            if isinstance(s, ir.If | ir.While | ir.For):
                for e in ir.stmt_exprs(s):
                    block_vars |= ir.expr_vars(e)
                if isinstance(s, ir.For):
                    block_vars.add(s.var.name)
            elif isinstance(s, ir.Assign | ir.VecLoad):
                for e in ir.stmt_exprs(s):
                    block_vars |= ir.expr_vars(e)
        changed = (len(bl), len(block_vars)) != before

    # uniformity: block-level headers and the assignments of block variables must not depend on the thread
    varying = _thread_varying(body)
    for s in ir.walk_stmts(body):
        if id(s) in bl and isinstance(s, ir.If | ir.While | ir.For):
            for e in ir.stmt_exprs(s):
                through = sorted(ir.expr_vars(e) & varying)
                if _thread_dependent(e) or through:
                    what = "this condition depends" if not isinstance(s, ir.For) else "this loop's bounds depend"
                    via = f" (through '{through[0]}')" if through and not _thread_dependent(e) else ""
                    raise _err(kernel, s.line, f"{what} on the thread index{via}, but it controls code that contains "
                                               "cube.sync_threads() or a warp operation, which every thread of the "
                                               "block must reach together")
    for s in ir.walk_stmts(body):
        if id(s) not in bl:
            continue
        if isinstance(s, ir.Assign | ir.VecLoad | ir.Atomic | ir.Collective) and \
                (set(ir.assigned_vars(s)) & varying) & block_vars:
            name = sorted((set(ir.assigned_vars(s)) & varying) & block_vars)[0]
            raise _err(kernel, s.line, f"'{name}' must be the same in every thread of the block (it controls code "
                                       "that contains cube.sync_threads() or a warp operation), but this value "
                                       "depends on the thread index")

    counter = iter(range(1, 1 << 30))
    loops: list = []
    thread_return = False

    def build(stmts, in_loop: bool) -> list:
        nonlocal thread_return
        items, run = [], []

        def flush():
            if run:
                tl = ThreadLoop(list(run), next(counter), in_loop, run[0].line)
                loops.append(tl)
                items.append(tl)
                run.clear()

        for s in stmts:
            if id(s) not in bl:
                run.append(s)
                continue
            flush()
            if isinstance(s, ir.Barrier):
                continue
            if isinstance(s, ir.If):
                items.append(ir.If(s.cond, build(s.body, in_loop), build(s.orelse, in_loop), s.line))
            elif isinstance(s, ir.For):
                items.append(ir.For(s.var, s.start, s.stop, s.step, build(s.body, True), s.line))
            elif isinstance(s, ir.While):
                items.append(ir.While(s.cond, build(s.body, True), s.line))
            else:
                items.append(s)
        flush()
        return items

    if has_sync:
        items = build(body, False)
    else:
        items = [ThreadLoop(list(body), 1, False, body[0].line if body else 0)] if body else []
        loops = list(items)
    for tl in loops:
        if any(isinstance(s, ir.Return) for s in ir.walk_stmts(tl.body)):
            thread_return = True
    _check_jumps(kernel, loops)

    # which phases use each thread variable
    users: dict = {}
    for tl in loops:
        for name in _vars_in(tl.body):
            users.setdefault(name, set()).add(tl.id)
    at_block: set = set()
    for s in _walk_items(items):
        if isinstance(s, ir.Collective):
            at_block |= {s.dst.name, s.value.name} | (ir.expr_vars(s.arg) if s.arg is not None else set())
    remat = _remat_candidates(kernel, block_vars)
    spilled, kept_remat = set(), {}
    by_id = {tl.id: tl for tl in loops}
    for name, ids in users.items():
        if name in block_vars or name not in kernel.variables or name in at_block:
            continue
        if len(ids) == 1 and not by_id[next(iter(ids))].in_loop:
            continue  # one phase, run once per thread: an ordinary local
        if all(_first_access(by_id[i].body, name) != "use" for i in ids):
            continue  # every phase writes it before reading it: a local of each phase
        if name in remat:
            kept_remat[name] = remat[name]
        else:
            spilled.add(name)
    spilled |= {name for name in at_block if name in kernel.variables and name not in block_vars}
    # a rematerialised variable needs its inputs in every phase that uses it
    changed = True
    while changed:
        changed = False
        for s in list(kept_remat.values()):
            for dep in ir.expr_vars(s.value):
                if dep in remat and dep not in kept_remat and dep not in block_vars:
                    kept_remat[dep] = remat[dep]
                    spilled.discard(dep)
                    changed = True
    spilled_arrays = set()
    array_users: dict = {}
    for tl in loops:
        for name in _arrays_in(tl.body):
            array_users.setdefault(name, set()).add(tl.id)
    for name, ids in array_users.items():
        d = kernel.arrays[name]
        if d.space == "local" and (len(ids) > 1 or by_id[next(iter(ids))].in_loop):
            spilled_arrays.add(name)
    return Plan(items, block_vars, spilled, kept_remat, spilled_arrays, loops, has_sync, thread_return)


def _check_jumps(kernel, loops) -> None:
    """break/continue in a phase must stay inside a loop of that phase."""
    def walk(stmts, depth):
        for s in stmts:
            if isinstance(s, ir.Break | ir.Continue) and depth == 0:
                raise _err(kernel, s.line, f"{type(s).__name__.lower()} leaves a loop that contains "
                                           "cube.sync_threads(): every thread of the block must take it together, "
                                           "so its condition must not depend on the thread index")
            for b in ir.sub_bodies(s):
                walk(b, depth + isinstance(s, ir.For | ir.While))
    for tl in loops:
        walk(tl.body, 0)


def _thread_varying(body) -> set:
    """Variables whose value may differ between the threads of a block."""
    varying: set = set()
    changed = True
    while changed:
        changed = False

        def visit(stmts, cond_varies: bool):
            nonlocal changed
            for s in stmts:
                exprs = ir.stmt_exprs(s)
                dep = cond_varies or any(_thread_dependent(e) or ir.expr_vars(e) & varying for e in exprs)
                if isinstance(s, ir.Atomic | ir.Collective):
                    dep = True
                for v in ir.assigned_vars(s):
                    if dep and v not in varying:
                        varying.add(v)
                        changed = True
                if isinstance(s, ir.If | ir.While | ir.For):
                    for b in ir.sub_bodies(s):
                        visit(b, dep)
        visit(body, False)
    return varying


def _walk_items(items):
    for s in items:
        yield s
        if isinstance(s, ThreadLoop):
            continue
        for b in ir.sub_bodies(s):
            yield from _walk_items(b)


def _vars_in(stmts) -> set:
    names = set()
    for s in ir.walk_stmts(stmts):
        names.update(ir.assigned_vars(s))
        for e in ir.stmt_exprs(s):
            names |= ir.expr_vars(e)
    return names


def _arrays_in(stmts) -> set:
    names = set()
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ir.Store | ir.VecLoad | ir.VecStore | ir.Atomic):
            names.add(s.array)
        for e in ir.stmt_exprs(s):
            names |= {x.array for x in ir.walk_expr(e) if isinstance(x, ir.Load)}
    return names


def _reads(s, name: str) -> bool:
    return any(name in ir.expr_vars(e) for e in ir.stmt_exprs(s)) or \
        any(_reads(c, name) for b in ir.sub_bodies(s) for c in b)


def _first_access(stmts, name: str):
    """'def' when every path through ``stmts`` writes ``name`` before reading it, 'use' when some path may read
    it first, None when ``stmts`` leave it untouched or only maybe written."""
    for s in stmts:
        if isinstance(s, ir.If):
            if name in ir.expr_vars(s.cond):
                return "use"
            a, b = _first_access(s.body, name), _first_access(s.orelse, name)
            if "use" in (a, b):
                return "use"
            if a == b == "def":
                return "def"
        elif isinstance(s, ir.For | ir.While):
            if any(name in ir.expr_vars(e) for e in ir.stmt_exprs(s)):
                return "use"
            if isinstance(s, ir.For) and s.var.name == name:
                return "def"  # the loop header writes its variable first
            if _first_access(s.body, name) == "use":
                return "use"
        else:
            if any(name in ir.expr_vars(e) for e in ir.stmt_exprs(s)):
                return "use"
            if name in ir.assigned_vars(s):
                return "def"
    return None


def _remat_candidates(kernel, block_vars) -> dict:
    """Variables assigned once, at the top level of the kernel, from a cheap pure expression of stable values."""
    counts: dict = {}
    for s in ir.walk_stmts(kernel.body):
        for v in ir.assigned_vars(s):
            counts[v] = counts.get(v, 0) + 1
    out: dict = {}
    for s in kernel.body:
        if not isinstance(s, ir.Assign) or counts.get(s.var.name) != 1:
            continue
        if any(isinstance(x, ir.Load | ir.Call) for x in ir.walk_expr(s.value)):
            continue
        deps = ir.expr_vars(s.value)
        if all(d not in kernel.variables or d in out or (d in block_vars and counts.get(d) == 1) for d in deps):
            out[s.var.name] = s
    return out
