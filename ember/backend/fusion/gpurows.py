"""The GPU form of row kernels: a block per row, the reductions as block-level reductions.

rowgen.py's CPU form runs a thread per row with serial loops: on a GPU a row of 4,096 elements
would then be one thread's work and the loads of a warp would be 4,096 elements apart. Here a
block of up to ``style.row_block`` threads takes a row (a grid-stride loop over rows): thread ``t``
handles elements ``t, t + B, t + 2B, ...`` (neighbouring threads load neighbouring elements), each
reduction is a per-thread partial combined across the block (warp shuffles and one shared slot per
warp on CUDA, a tree in shared memory on WGSL, which has no warp operations), and every thread
gets the row's result, so later loops (softmax's sum of exponentials, the normalising loop) read
it from a register. No atomics: each row's result is written once by thread 0.

When the row fits in ``B * PER`` elements (PER <= 32), the loops are unrolled ``PER`` times with
``cube.static_range`` and each input element read along the row is kept in a register array after
its first load: softmax and layer norm then read their row from memory once, however many loops
(max, sum, normalise; mean, variance, output) run over it.

On targets with 16-byte accesses (CUDA), a row whose thread shares are whole vectors of four float32
elements, read and written contiguously from 16-byte boundaries, is read and written a vector at a time:
thread ``t`` takes vectors ``t, t + B, ...``, each expression is emitted per vector element (what doesn't
depend on the element, a row's mean or its rsqrt, once), and outputs are stored as vectors
(H200, (32768, 4096): layer norm 3,620-3,760 -> 3,785-3,805 GB/s, softmax 3,690-3,700 -> 3,770-3,830).
"""

from __future__ import annotations

import math

from .codegen import (
    FLOAT_TYPES,
    GENERATED,
    Kernel,
    _emit_tree,
    _Gen,
    _strides_in,
    bind_scalars,
    cast,
    compile_source,
    ctype,
    kernel_params,
)
from .graph import loads as tree_loads
from .rowgen import output_lines, row_addressing, row_geometry

MAX_PER = 32  # elements a thread keeps in registers per cached load
# the elements of a row a thread takes when the row is longer than a block's threads: 16 measured best on the
# H200 for (32768, 4096) rows (layer norm 3,680 -> 3,810-3,850 GB/s, softmax 3,460-3,600 -> 3,880-3,900
# against 8; the sweeps are in bench/results/2026-12-04-session9.md)
ROW_ELEMS = 16
# rows of 4,096 elements or more whose reductions are all sums or means (layer and RMS norms) take 8 a thread
# (twice the threads): H200 (32768, 4096) layer norm kernel 4,261-4,294 -> 4,298-4,332 GB/s (Triton's
# 4,295-4,331); softmax (a max, then a sum) runs 4,280 GB/s at 16 but 3,321 at 8 (Triton's, 512 threads:
# 3,366), so it keeps 16 (bench/results/2026-12-04-session11.md)
SUM_ROW_ELEMS = 8


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _row_block(style, reds: list, nred: int) -> int:
    """Threads of a block that takes a row of ``nred`` elements (see ROW_ELEMS and SUM_ROW_ELEMS)."""
    block = min(style.row_block, max(32, _pow2(-(-nred // ROW_ELEMS))))
    if nred >= 4096 and all(red.attrs[0] in ("sum", "mean") for red, _, _ in reds):
        wide = min(style.row_block, max(32, _pow2(-(-nred // SUM_ROW_ELEMS))))
        if nred % (4 * wide) == 0:  # whole vectors of four for every thread, as with 16
            return wide
    return block


def block_rows(reds: list, outputs: list, style, order: list, kgroups: list, kc: tuple, rgroups: list, rc: tuple,
               ost: tuple, rbufs: dict, column: bool = False) -> Kernel:
    """The block-per-row kernel of rowgen.rows (same arguments, already analysed there).

    ``column``: the rows' outputs are adjacent in memory (a sum over the batch): a block then takes
    32 neighbouring rows, a warp reading 32 neighbouring elements, and splits each row's elements
    over its ``block / 32`` warps, combined by a tree in shared memory (a thread per row would give
    a (batch, 768) bias gradient only 768 threads)."""
    GENERATED[0] += 1
    nout, nred = math.prod(kc), math.prod(rc)
    if column:
        groups = min(style.row_block // 32, max(1, _pow2(-(-nred // 256))))  # warps sharing a row
        block, stride, start = 32 * groups, groups, "rg"
    else:
        block = _row_block(style, reds, nred)
        stride, start = block, "t"
    # elements of a row a thread takes (not rounded up to a power of two: a row of 768 is 64 threads x 12,
    # whole vectors with no bounds test, where 64 x 16 left a quarter of the steps masked)
    per = max(1, -(-nred // stride))
    cached = per <= MAX_PER
    exact = cached and per * stride == nred  # every (thread, step) has an element: no bounds test
    ragged = column and nout % 32 != 0  # the last block's lanes past the last row
    vec = not column and exact and per % 4 == 0 and \
        _vec_rows(style, reds, outputs, order, kgroups, rgroups, rc, ost, rbufs)
    lanes = 4 if vec else 1
    warp = bool(style.warp) and not column
    acc64 = style.acc64
    g = _Gen(0, style)
    g.scalar("i32", ("nout",))
    g.scalar("i32", ("nred",))
    kdim = [g.scalar("i32", ("kdim", k)) for k in range(len(kc))]
    rdim = [g.scalar("i32", ("rdim", k)) for k in range(len(rc))]
    top = ["    t = cube.thread_idx.x"] + (["    lane = cube.lane_id()"] if warp and block > 32 else [])
    if column:
        top += ["    cl = t % 32", "    rg = t // 32"]
    head = ["        o = bx * 32 + cl" if column else "        o = bx", "        r = o"]
    for k in range(len(kc) - 1, 0, -1):
        head += [f"        c{k} = r % {kdim[k]}", f"        r = r // {kdim[k]}"]
    if kc:
        head.append("        c0 = r")
    guard = [] if exact else ["k < s1"] if cached else []
    guard += ["o < s0"] if ragged else []
    ind = "                " if guard else "            "
    rhead = [f"{ind}q = k"]
    for k in range(len(rc) - 1, 0, -1):
        rhead += [f"{ind}e{k} = q % {rdim[k]}", f"{ind}q = q // {rdim[k]}"]
    if rc:
        rhead.append(f"{ind}e0 = q")

    def loop(lines: list) -> list:
        test = [f"            if {' and '.join(guard)}:"] if guard else []
        if vec:  # vector v of the row (elements 4v .. 4v + 3) in step u
            return [f"        for u in cube.static_range({per // 4}):", f"            v = t + u * {stride}"] + lines
        if cached:
            return [f"        for u in cube.static_range({per}):", f"            k = {start} + u * {stride}"] + (
                test + rhead + lines)
        return [f"        for k in range({start}, s1, {stride}):"] + test + rhead + lines

    pre: list = []
    base, offset_terms = row_addressing(g, pre)
    lcache: dict = {}
    filled: dict = {}  # load key -> register array holding the row's elements (after its first loop)
    fresh: dict = {}  # loads first made in the current loop
    lane = [0]  # the vector form: the element of the vector being emitted

    def load_expr(n):
        buf = n.args[0]
        reg = rbufs.get(id(buf))
        if reg is not None:
            return reg
        t = ctype(n.dtype)
        a = g.array(buf, t)
        pst = tuple(n.attrs[0][d] for d in order)
        kst_, rst_ = _strides_in(kgroups, pst), _strides_in(rgroups, pst)
        key = (id(buf), kst_, rst_, n.attrs[1])
        if vec and any(rst_):  # along the row: one 16-byte load a vector, its four lanes read as .x .. .w
            return vec_load(key, a, kst_, n)
        hit = lcache.get(key)
        if hit is not None:
            return hit
        v = f"x{g.nv}"
        g.nv += 1
        arr = filled.get(key)
        if arr is not None:
            g.lines.append(f"{ind}{v} = {arr}[u]")
        else:
            p = base((id(buf), kst_, n.attrs[1]), ("off", n), kst_, n)
            g.lines.append(f"{ind}{v} = {g.load(a, ' + '.join([p] + offset_terms(rst_, n)), t)}")
            if cached and not final[0] and any(rst_):  # along the row: keep it for the later loops
                arr = f"cache{len(filled) + len(fresh)}"
                fresh[key] = (arr, t)
                g.lines.append(f"{ind}{arr}[u] = {v}")
        lcache[key] = v
        return v

    def vec_load(key, a, kst_, n):
        arr = filled.get(key)
        if arr is not None:
            return f"{arr}[u * 4 + {lane[0]}]"
        q = lcache.get(key)
        if q is None:
            q = lcache[key] = f"x{g.nv}"
            g.nv += 1
            p = base((id(n.args[0]), kst_, n.attrs[1]), ("off", n), kst_, n)
            g.lines.append(f"{ind}{q} = {a}.vec4[{p} // 4 + v]")
            if not final[0]:  # along the row: keep it for the later loops
                arr = f"cache{len(filled) + len(fresh)}"
                fresh[key] = (arr, "f32")
                g.lines += [f"{ind}{arr}[u * 4 + {j}] = {q}.{'xyzw'[j]}" for j in range(4)]
        return f"{q}.{'xyzw'[lane[0]]}"

    decls: list = []
    final = [False]  # the last loop (the outputs): nothing after it reads a cache

    def along(n) -> bool:
        """Whether load ``n`` reads along the row (a different element for every lane)."""
        if id(n.args[0]) in rbufs:
            return False
        return any(_strides_in(rgroups, tuple(n.attrs[0][d] for d in order)))

    def per_lane(trees, emit) -> list:
        """``emit()`` once per lane (the values of ``trees`` for each of a vector's elements); what doesn't
        depend on the lane (scalars, a row's mean, its rsqrt) is computed once, by lane 0."""
        out = []
        shared: dict = {}
        for lane[0] in range(lanes):
            g.names = dict(shared)
            out.append(emit())
            if lane[0] == 0 and lanes > 1:
                free = _lane_free(trees, along)
                shared = {k: v for k, v in g.names.items() if k in free}
        return out

    def loop_value(tree, acc_t):
        """(lines, values): the loop body computing ``tree`` for each of the thread's ``lanes`` elements."""
        g.lines = []
        lcache.clear()
        vals = per_lane([tree], lambda: cast(_emit_tree(g, tree, load_expr, ind), ctype(tree.dtype), acc_t))
        return list(g.lines), vals

    def end_loop():
        for key, (arr, t) in fresh.items():
            decls.append(f"    {arr} = cube.local(cube.{t}, {per})")
            filled[key] = arr
        fresh.clear()

    nsh = [0]

    def combine(op: str, a: str, b: str) -> str:
        return f"({a} + {b})" if op == "sum" else f"cube.max({a}, {b})" if op == "amax" else f"cube.min({a}, {b})"

    def block_reduce(acc: str, op: str, acc_t: str, ident: str) -> list:
        """Lines combining every thread's ``acc`` into the row's value, left in ``acc`` of each thread."""
        sh = f"sh{nsh[0]}"
        nsh[0] += 1
        if column:  # a tree over the warps sharing each row: slot rg * 32 + cl
            if block == 32:
                return []
            decls.append(f"    {sh} = cube.shared(cube.{acc_t}, {block})")
            out = [f"        {sh}[t] = {acc}", "        cube.sync_threads()"]
            s = block // 64
            while s >= 1:
                both = combine(op, f"{sh}[t]", f"{sh}[t + {32 * s}]")
                out += [f"        if rg < {s}:", f"            {sh}[t] = {both}", "        cube.sync_threads()"]
                s //= 2
            return out + [f"        {acc} = {sh}[cl]"]
        if warp:
            fn = {"sum": "cube.warp_sum", "amax": "cube.warp_max", "amin": "cube.warp_min"}[op]
            out = [f"        {acc} = {fn}({acc})"]
            if block > 32:
                decls.append(f"    {sh} = cube.shared(cube.{acc_t}, 32)")
                out += ["        if lane == 0:", f"            {sh}[t // 32] = {acc}", "        cube.sync_threads()",
                        f"        {acc} = {fn}(cube.where(lane < {block // 32}, {sh}[lane], {ident}))"]
            return out
        decls.append(f"    {sh} = cube.shared(cube.{acc_t}, {block})")
        out = [f"        {sh}[t] = {acc}", "        cube.sync_threads()"]
        s = block // 2
        while s >= 1:
            out += [f"        if t < {s}:", f"            {sh}[t] = {combine(op, f'{sh}[t]', f'{sh}[t + {s}]')}",
                    "        cube.sync_threads()"]
            s //= 2
        return out + [f"        {acc} = {sh}[0]"]

    def vec_outputs():
        """The vector form's output loop: each output's four lanes, stored as one 16-byte vector."""
        g.lines = []
        trees = [tree for _, tree in outputs]
        vals = per_lane(trees, lambda: [cast(_emit_tree(g, tree, load_expr, ind), ctype(tree.dtype), "f32")
                                        for tree in trees])
        pout = base(("out",), ("zero",), _strides_in(kgroups, ost), "out")
        lines, outs = list(g.lines), []
        for k, (buf, _) in enumerate(outputs):
            outs.append((f"o{k}", "f32", buf))
            lines.append(f"{ind}o{k}.vec4[{pout} // 4 + v] = cube.vec4({', '.join(vals[j][k] for j in range(4))})")
        return lines, outs

    body: list = []
    red_outs = []
    for i, (red, buf, write) in enumerate(reds):
        op = red.attrs[0]
        tree = red.args[0]
        out_t = ctype(red.dtype)
        acc_t = "f64" if out_t == "f32" and op in ("sum", "mean", "var") and acc64 else out_t
        acc = f"acc{i}"
        if op in ("amax", "amin"):
            ident = g.scalar(acc_t, ("ident", op, acc_t))
            body.append(f"        {acc} = {ident}")
        else:
            ident = f"cube.{acc_t}(0)"
            body.append(f"        {acc}: cube.{acc_t} = {'0.0' if acc_t in FLOAT_TYPES else '0'}")
        lines, vals = loop_value(tree, acc_t)
        rop = "sum" if op in ("sum", "mean", "var") else op
        body += loop(lines + [f"{ind}{acc} = {combine(rop, acc, val)}" for val in vals])
        end_loop()
        body += block_reduce(acc, rop, acc_t, ident)
        if op == "var":  # the mean, then the sum of squared deviations (from registers when cached)
            body += [f"        mu{i} = {acc} / cube.{acc_t}(s1)", f"        {acc} = cube.{acc_t}(0.0)"]
            lines, vals = loop_value(tree, acc_t)
            for j, val in enumerate(vals):
                lines += [f"{ind}dv{j} = {val} - mu{i}", f"{ind}{acc} = {acc} + dv{j} * dv{j}"]
            body += loop(lines)
            end_loop()
            body += block_reduce(acc, "sum", acc_t, ident)
        res = acc
        if op == "mean":
            res = f"{acc} / cube.{acc_t}(s1)"
        elif op == "var":
            res = f"{acc} / cube.{acc_t}(cube.max(s1 - {g.scalar('i32', ('corr', i))}, 0))"
        body.append(f"        r{i} = {cast(res, acc_t, out_t)}")
        if write:
            st, v = g.store_value(f"r{i}", out_t)
            red_outs.append((f"rb{i}", st, buf))
            first = "rg == 0 and o < s0" if ragged else "rg == 0" if column else "t == 0"
            body += [f"        if {first}:", f"            rb{i}[o] = {v}"]
    outs = []
    if outputs:
        final[0] = True
        lcache.clear()
        if vec:
            lines, outs = vec_outputs()
        else:
            lines, outs = output_lines(g, outputs, load_expr, ind, _strides_in(kgroups, ost),
                                       _strides_in(rgroups, ost), base, offset_terms)
        body += loop(lines)
        fresh.clear()
    nvb = g.scalar("i32", ("nvb",))
    params = kernel_params(g, red_outs + outs)
    # the barrier at the end of a row keeps the next row's shared-memory writes after this row's reads
    src = top + decls + [f"    for bx in range(cube.block_idx.x, {nvb}, cube.grid_dim.x):"] + head + pre + body + [
        "        cube.sync_threads()"]
    src = f"def fused_rows({', '.join(params)}):\n" + "\n".join(src) + "\n"
    # the rows' loads ask L2 to keep their lines ("evict_last", as Triton's layer norm does): on the H200 a
    # (32768, 4096) layer norm kernel 4,170 -> 4,320 GB/s (bench/results/2026-12-04-session10.md)
    kern = compile_source(src, "fused_rows", eviction_policy="evict_last")
    arrays = [buf for _, _, buf in g.arrays] + [buf for _, _, buf in red_outs + outs]
    scalars = [(t, v) for _, t, v in g.scalars]
    nvblocks = -(-nout // 32) if column else nout

    def geometry(node, kind, k):
        pst = ost if node == "out" else tuple(node.attrs[0][d] for d in order)
        return _strides_in(kgroups if kind == "kst" else rgroups, pst)[k]

    def dims(kind, s):
        if kind == "ident":
            return _identity(s[1], s[2])
        return row_geometry(kind, s, kc, rc, reds, geometry)

    def bind():
        sizes = {"nout": nout, "nred": nred, "nvb": nvblocks, "zero": 0}
        return nvblocks, bind_scalars(scalars, sizes, dims)

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)), rows=not column)


def _vec_rows(style, reds: list, outputs: list, order: list, kgroups: list, rgroups: list, rc: tuple, ost: tuple,
              rbufs: dict) -> bool:
    """Whether a row kernel can read and write its rows four float32 elements at a time: a target with
    16-byte accesses, one reduced dim, every load along the row contiguous (or the same for the whole
    row) with a row start on a 16-byte boundary, float32 throughout (the caller checks that each thread's
    share of a row is whole vectors)."""
    if not getattr(style, "vec4", False) or len(rc) != 1:
        return False
    trees = [red.args[0] for red, _, _ in reds] + [tree for _, tree in outputs]
    for buf, tree in outputs:
        if ctype(buf.dtype) != "f32" or ctype(tree.dtype) != "f32":
            return False
    if outputs and (_strides_in(rgroups, ost) != (1,) or any(s % 4 for s in _strides_in(kgroups, ost))):
        return False
    for n in tree_loads(*trees):
        if id(n.args[0]) in rbufs:
            continue
        pst = tuple(n.attrs[0][d] for d in order)
        rst_ = _strides_in(rgroups, pst)
        if rst_ == (0,):
            continue
        if ctype(n.dtype) != "f32" or rst_ != (1,) or n.attrs[1] % 4 or any(s % 4 for s in _strides_in(kgroups, pst)):
            return False
    return True


def _lane_free(trees: list, along) -> set:
    """The ids of the nodes of ``trees`` whose value is the same for every element of a row (no load along
    the row, ``along(load)``, below them)."""
    dep: dict = {}
    stack = [(t, False) for t in trees]
    while stack:
        n, ready = stack.pop()
        if id(n) in dep:
            continue
        if n.op == "ld":
            dep[id(n)] = along(n)
        elif n.op == "sc":
            dep[id(n)] = False
        elif not ready:
            stack.append((n, True))
            stack.extend((a, False) for a in n.args if a is not None and id(a) not in dep)
        else:
            dep[id(n)] = any(dep[id(a)] for a in n.args if a is not None)
    return {k for k, d in dep.items() if not d}


def _identity(op: str, t: str):
    """The start value of a max/min: -inf/+inf for floats, the type's extreme for integers."""
    if t in FLOAT_TYPES:
        return float("-inf") if op == "amax" else float("inf")
    bits = 64 if t == "i64" else 32
    return -(2 ** (bits - 1)) if op == "amax" else 2 ** (bits - 1) - 1
