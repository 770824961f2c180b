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
from .rowgen import output_lines, row_addressing, row_geometry

MAX_PER = 32  # elements a thread keeps in registers per cached load
# the elements of a row a thread takes when the row is longer than a block's threads: 16 measured best on the
# H200 for (32768, 4096) rows (layer norm 3,680 -> 3,810-3,850 GB/s, softmax 3,460-3,600 -> 3,880-3,900
# against 8; tmp_dev-style sweeps in bench/results/2026-12-04-session9.md)
ROW_ELEMS = 16


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


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
        block = min(style.row_block, max(32, _pow2(-(-nred // ROW_ELEMS))))
        stride, start = block, "t"
    per = _pow2(max(1, -(-nred // stride)))
    cached = per <= MAX_PER
    exact = cached and per * stride == nred  # every (thread, step) has an element: no bounds test
    ragged = column and nout % 32 != 0  # the last block's lanes past the last row
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
        if cached:
            return [f"        for u in cube.static_range({per}):", f"            k = {start} + u * {stride}"] + (
                test + rhead + lines)
        return [f"        for k in range({start}, s1, {stride}):"] + test + rhead + lines

    pre: list = []
    base, offset_terms = row_addressing(g, pre)
    lcache: dict = {}
    filled: dict = {}  # load key -> register array holding the row's elements (after its first loop)
    fresh: dict = {}  # loads first made in the current loop

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

    decls: list = []
    final = [False]  # the last loop (the outputs): nothing after it reads a cache

    def loop_value(tree, acc_t):
        g.names = {}
        g.lines = []
        lcache.clear()
        v = _emit_tree(g, tree, load_expr, ind)
        return list(g.lines), cast(v, ctype(tree.dtype), acc_t)

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
        lines, val = loop_value(tree, acc_t)
        rop = "sum" if op in ("sum", "mean", "var") else op
        body += loop(lines + [f"{ind}{acc} = {combine(rop, acc, val)}"])
        end_loop()
        body += block_reduce(acc, rop, acc_t, ident)
        if op == "var":  # the mean, then the sum of squared deviations (from registers when cached)
            body += [f"        mu{i} = {acc} / cube.{acc_t}(s1)", f"        {acc} = cube.{acc_t}(0.0)"]
            lines, val = loop_value(tree, acc_t)
            body += loop(lines + [f"{ind}dv = {val} - mu{i}", f"{ind}{acc} = {acc} + dv * dv"])
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
        lines, outs = output_lines(g, outputs, load_expr, ind, _strides_in(kgroups, ost), _strides_in(rgroups, ost),
                                   base, offset_terms)
        body += loop(lines)
        fresh.clear()
    nvb = g.scalar("i32", ("nvb",))
    params = kernel_params(g, red_outs + outs)
    # the barrier at the end of a row keeps the next row's shared-memory writes after this row's reads
    src = top + decls + [f"    for bx in range(cube.block_idx.x, {nvb}, cube.grid_dim.x):"] + head + pre + body + [
        "        cube.sync_threads()"]
    src = f"def fused_rows({', '.join(params)}):\n" + "\n".join(src) + "\n"
    kern = compile_source(src, "fused_rows")
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

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))


def _identity(op: str, t: str):
    """The start value of a max/min: -inf/+inf for floats, the type's extreme for integers."""
    if t in FLOAT_TYPES:
        return float("-inf") if op == "amax" else float("inf")
    bits = 64 if t == "i64" else 32
    return -(2 ** (bits - 1)) if op == "amax" else 2 ** (bits - 1) - 1
