"""Row kernels: reductions, and reductions fused with the elementwise values that read them back.

One thread per *row* (an element of the kept dims); each reduction is a serial loop over the row,
later loops may read earlier results (softmax: the sum of ``exp(x - max)``), and an optional last
loop over the same row computes elementwise outputs that read the results broadcast (softmax's
``e / sum``, layer norm's ``(x - mean) * rsqrt(var + eps) * w + b``). The row stays in cache
between the loops, so softmax, log_softmax, layer norm and RMS norm are one kernel and one pass
over memory. A plain reduction is the same kernel with no elementwise loop.

The reduction results are registers of the thread; they are written to memory only when someone
else reads them (autograd saving layer norm's mean and variance, say).
"""

from __future__ import annotations

import math

from ..._shape import contiguous_strides
from .codegen import (
    FLOAT_TYPES,
    GENERATED,
    Kernel,
    _collapse,
    _emit_tree,
    _Gen,
    _grid_stride,
    _strides_in,
    bind_scalars,
    cast,
    compile_source,
    ctype,
    kernel_params,
)


def _column_block(nout: int) -> int:
    """Lanes of a column kernel: wide, so each step of the reduction loop reads a long contiguous piece of a
    row (64 lanes walked a (256, 1024) array's columns 64 at a time, a 4 KB stride the hardware prefetcher
    doesn't follow across pages: 5x slower); the widest that divides the columns (the rest of a row would run
    masked), else the widest that fits."""
    fits = [b for b in (1024, 512, 256, 128, 64) if b <= nout] or [64]
    return next((b for b in fits if nout % b == 0), fits[0])


def rows(reds: list, outputs: list, style=None) -> Kernel:
    """A row kernel. ``reds``: [(reduction node, its Buf, whether to write it)] in dependency order, all
    over the same input shape and dims; ``outputs``: [(Buf, tree)] of that input shape, whose
    loads of the reductions' Bufs read them broadcast over the reduced dims (the scheduler checks
    it). Loads of a reduction's Buf anywhere in the kernel become the thread's register.
    ``style``: the target's generator options (target.py); a GPU target (``row_block``) gets a
    block per row, or per 32 rows when the outputs are adjacent in memory (gpurows.py)."""
    GENERATED[0] += 1
    first = reds[0][0]
    dims = first.attrs[1]
    in_shape = first.args[0].shape
    nd = len(in_shape)
    dims = tuple(range(nd)) if not dims else tuple(dims)
    kept = [d for d in range(nd) if d not in dims]
    order = kept + list(dims)
    from .graph import loads as tree_loads
    rbufs = {}  # id(reduction Buf) -> register name
    for i, (_, buf, _) in enumerate(reds):
        rbufs[id(buf)] = f"r{i}"
    trees = [red.args[0] for red, _, _ in reds] + [tree for _, tree in outputs]
    loads = [ld for ld in tree_loads(*trees) if id(ld.args[0]) not in rbufs]
    pshape = tuple(in_shape[d] for d in order)
    kshape = tuple(in_shape[d] for d in kept)
    kst = contiguous_strides(kshape) + (0,) * len(dims)  # reduction outputs walk kept dims contiguously
    ost = contiguous_strides(in_shape)
    ost = tuple(ost[d] for d in order)  # elementwise outputs: contiguous over the input shape
    acc_st = [kst, ost] + [tuple(ld.attrs[0][d] for d in order) for ld in loads]
    nk = len(kept)
    kgroups, kc = _collapse(pshape[:nk], [s[:nk] for s in acc_st])
    rgroups, rc = _collapse(pshape[nk:], [s[nk:] for s in acc_st])
    rgroups = [[d + nk for d in gr] for gr in rgroups]
    # column mode: outputs adjacent in memory (a sum over the batch of a (batch, features) array):
    # the loops over the reduced elements run once per block with the threads inside each step, so
    # the lanes load neighbouring elements as one vector (a thread per row walks a strided column)
    nout = math.prod(kc)
    adjacent = nout >= 64 and len(kc) == 1 and loads and all(
        _strides_in(kgroups, tuple(ld.attrs[0][d] for d in order))[-1] in (0, 1) for ld in loads)
    gpu = getattr(style, "row_block", 0)
    if gpu:
        from .gpurows import block_rows
        return block_rows(reds, outputs, style, order, kgroups, kc, rgroups, rc, ost, rbufs, column=bool(adjacent))
    column = not outputs and adjacent
    acc64 = getattr(style, "acc64", True)
    g = _Gen(0, style)
    ind = "            "
    g.scalar("i32", ("nout",))
    g.scalar("i32", ("nred",))
    kdim = [g.scalar("i32", ("kdim", k)) for k in range(len(kc))]
    rdim = [g.scalar("i32", ("rdim", k)) for k in range(len(rc))]
    head = ["        r = o"]
    for k in range(len(kc) - 1, 0, -1):
        head += [f"        c{k} = r % {kdim[k]}", f"        r = r // {kdim[k]}"]
    if kc:
        head.append("        c0 = r")
    rhead = [f"{ind}q = k"]
    for k in range(len(rc) - 1, 0, -1):
        rhead += [f"{ind}e{k} = q % {rdim[k]}", f"{ind}q = q // {rdim[k]}"]
    if rc:
        rhead.append(f"{ind}e0 = q")

    def loop(lines: list) -> list:
        """A loop over the row's reduced elements around one step's ``lines``."""
        if column or len(rc) <= 1:
            return ["        for k in range(s1):"] + rhead + lines
        # a thread per row, several reduced dims: counters carried at the end of each step (the
        # lane's own, so no race), not a division and a modulo per element
        def carry(k: int, at: str) -> list:
            out = [f"{at}e{k} = e{k} + 1"]
            if k > 0:
                out += [f"{at}if e{k} == {rdim[k]}:", f"{at}    e{k} = cube.i32(0)"] + carry(k - 1, at + "    ")
            return out
        init = [f"        e{k} = cube.i32(0)" for k in range(len(rc))]
        return init + ["        for k in range(s1):"] + lines + carry(len(rc) - 1, ind)

    pre: list = []
    base, offset_terms = row_addressing(g, pre)
    lcache: dict = {}  # loads in the current loop

    def load_expr(n):
        buf = n.args[0]
        reg = rbufs.get(id(buf))
        if reg is not None:
            return reg
        a = g.array(buf, ctype(n.dtype))
        pst = tuple(n.attrs[0][d] for d in order)
        kst_, rst_ = _strides_in(kgroups, pst), _strides_in(rgroups, pst)
        key = (id(buf), kst_, rst_, n.attrs[1])
        hit = lcache.get(key)
        if hit is not None:
            return hit
        p = base((id(buf), kst_, n.attrs[1]), ("off", n), kst_, n)
        v = f"x{g.nv}"
        g.nv += 1
        g.lines.append(f"{ind}{v} = {g.load(a, ' + '.join([p] + offset_terms(rst_, n)), ctype(n.dtype))}")
        lcache[key] = v
        return v

    def loop_value(tree, acc_t):
        """(lines of one loop iteration, the tree's value as ``acc_t``) with fresh names."""
        g.names = {}
        g.lines = []
        lcache.clear()
        v = _emit_tree(g, tree, load_expr, ind)
        return list(g.lines), cast(v, ctype(tree.dtype), acc_t)

    body: list = []
    red_outs = []
    for i, (red, buf, write) in enumerate(reds):
        op = red.attrs[0]
        tree = red.args[0]
        out_t = ctype(red.dtype)
        acc_t = "f64" if out_t == "f32" and op in ("sum", "mean", "var") and acc64 else out_t
        acc = f"acc{i}"
        zero = "0.0" if acc_t in FLOAT_TYPES else "0"
        body.append(f"        {acc}: cube.{acc_t} = {zero}")
        lines, val = loop_value(tree, acc_t)
        if op in ("sum", "mean"):
            body += loop(lines + [f"{ind}{acc} = {acc} + {val}"])
        elif op == "var":  # two passes over the row: the mean, then the sum of squared deviations
            body += loop(lines + [f"{ind}{acc} = {acc} + {val}"])
            body += [f"        mu{i} = {acc} / cube.{acc_t}(s1)", f"        {acc} = cube.{acc_t}(0.0)"]
            lines, val = loop_value(tree, acc_t)
            body += loop(lines + [f"{ind}dv = {val} - mu{i}", f"{ind}{acc} = {acc} + dv * dv"])
        else:
            fn = "cube.max" if op == "amax" else "cube.min"
            body += loop(lines + [f"{ind}{acc} = cube.where(k == 0, {val}, {fn}({acc}, {val}))"])
        res = acc
        if op == "mean":
            res = f"{acc} / cube.{acc_t}(s1)"
        elif op == "var":  # PyTorch divides by max(0, n - correction)
            res = f"{acc} / cube.{acc_t}(cube.max(s1 - {g.scalar('i32', ('corr', i))}, 0))"
        body.append(f"        r{i} = {cast(res, acc_t, out_t)}")
        if write:
            st, val = g.store_value(f"r{i}", out_t)
            red_outs.append((f"rb{i}", st, buf))
            body.append(f"        rb{i}[o] = {val}")
    outs = []
    if outputs:
        lcache.clear()
        lines, outs = output_lines(g, outputs, load_expr, ind, _strides_in(kgroups, ost), _strides_in(rgroups, ost),
                                   base, offset_terms)
        body += loop(lines)
    nvb = g.scalar("i32", ("nvb",))
    params = kernel_params(g, red_outs + outs)
    # whole blocks of rows run unmasked, the last one masked
    src = ["    o = bx * cube.block_dim.x + cube.thread_idx.x", "    if (bx + 1) * cube.block_dim.x <= s0:"]
    if column:
        # the row's indices are recomputed in each loop step from the thread index (not kept per
        # thread across the block-level loop), so the compiler sees the lanes' loads are contiguous
        prefix = ["        r = bx * cube.block_dim.x + cube.thread_idx.x"] + head[1:] + pre
        src += _columns(body, False, prefix) + ["    else:"] + _columns(body, True, prefix)
    else:
        inner = head + pre + body
        src += inner + ["    else:", "        if o < s0:"] + ["    " + ln for ln in inner]
    src = f"def fused_row({', '.join(params)}):\n" + "\n".join(_grid_stride(src, nvb)) + "\n"
    kern = compile_source(src, "fused_row")
    arrays = [buf for _, _, buf in g.arrays] + [buf for _, _, buf in red_outs + outs]
    scalars = [(t, v) for _, t, v in g.scalars]
    nout, nred = math.prod(kc), math.prod(rc)
    block = _column_block(nout) if column else 32

    def geometry(node, kind, k):
        pst = ost if node == "out" else tuple(node.attrs[0][d] for d in order)
        return _strides_in(kgroups if kind == "kst" else rgroups, pst)[k]

    def bind():
        sizes = {"nout": nout, "nred": nred, "nvb": -(-nout // block), "zero": 0}
        vals = bind_scalars(scalars, sizes, lambda kind, s: row_geometry(kind, s, kc, rc, reds, geometry))
        return (-(-nout // block) if nout else 0), vals

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))


def row_addressing(g, pre: list):
    """A row kernel's address helpers: ``base(key, off, kst, node)`` names the start of the current row
    in a buffer (computed once per row, before the loops: its line goes to ``pre``), and
    ``offset_terms(rst, node)`` are an element's offset terms along the reduced dims (e0, e1, ...)."""
    pcache: dict = {}

    def base(key, off, kst_, node) -> str:
        p = pcache.get(key)
        if p is None:
            p = pcache[key] = f"p{len(pcache)}"
            terms = [g.scalar("i32", off)]
            for k, s in enumerate(kst_):  # a unit stride is written as such: lanes load a vector
                if s == 1:
                    terms.append(f"c{k}")
                elif s != 0:
                    terms.append(f"c{k} * {g.scalar('i32', ('kst', node, k))}")
            pre.append(f"        {p} = {' + '.join(terms)}")
        return p

    def offset_terms(rst_, node) -> list:
        return [f"e{k}" if s == 1 else f"e{k} * {g.scalar('i32', ('rst', node, k))}" for k, s in enumerate(rst_)
                if s != 0]

    return base, offset_terms


def output_lines(g, outputs: list, load_expr, ind: str, okst, orst, base, offset_terms) -> tuple[list, list]:
    """The loop body that computes a row kernel's elementwise outputs (``outputs``: (Buf, tree) pairs)
    and stores each at the row's output offset: (lines, [(param name, stored type, Buf)])."""
    g.names = {}
    g.lines = []
    vals = [_emit_tree(g, tree, load_expr, ind) for _, tree in outputs]
    oidx = " + ".join([base(("out",), ("zero",), okst, "out")] + offset_terms(orst, "out"))
    lines, outs = list(g.lines), []
    for k, ((buf, tree), v) in enumerate(zip(outputs, vals)):
        t, src_t = ctype(buf.dtype), ctype(tree.dtype)
        st, val = g.store_value(cast(v, src_t, t) if src_t != t else v, t)
        outs.append((f"o{k}", st, buf))
        lines.append(f"{ind}o{k}[{oidx}] = {val}")
    return lines, outs


def row_geometry(kind: str, s: tuple, kc, rc, reds, geometry):
    """A row kernel's dims and strides at a flush: kept/reduced dim sizes, a variance's correction, and
    (``("kst" | "rst", node, k)``) a load's stride over the kept or reduced dims."""
    if kind == "kdim":
        return kc[s[1]]
    if kind == "rdim":
        return rc[s[1]]
    if kind == "corr":
        return int(reds[s[1]][0].attrs[3])
    return geometry(s[1], kind, s[2])


def _columns(body: list, masked: bool, prefix: list) -> list:
    """``body`` (thread-per-row code at 8 spaces, loops over the row at 8 with bodies at 12) with
    each row loop made block-level (a barrier ends every step) and ``prefix`` (the row's indices)
    at the start of every step; ``masked`` guards the accesses of threads past the last row."""
    out: list = []
    i = 0
    while i < len(body):
        ln = body[i]
        if ln == "        for k in range(s1):":
            j = i + 1
            while j < len(body) and body[j].startswith("            "):
                j += 1
            out.append(ln)
            step = ["    " + x for x in prefix] + body[i + 1:j]
            if masked:
                out += ["            if o < s0:"] + ["    " + x for x in step]
            else:
                out += step
            out.append("            cube.sync_threads()")
            i = j
            continue
        if masked and "[o] = " in ln:
            out += ["        if o < s0:", "    " + ln]
        else:
            out.append(ln)
        i += 1
    return out


def row_broadcast(ld, in_shape: tuple, dims: tuple) -> bool:
    """Whether load ``ld`` reads a reduction result over ``dims`` of ``in_shape`` as the value of
    each element's row (zero strides on the reduced dims, the result's own layout on the others)."""
    if ld.shape != in_shape or ld.attrs[1] != 0:
        return False
    st = ld.attrs[0]
    kept = [d for d in range(len(in_shape)) if d not in dims]
    kst = contiguous_strides(tuple(in_shape[d] for d in kept))
    return all(st[d] == 0 for d in dims) and all(st[d] == s or in_shape[d] == 1 for d, s in zip(kept, kst))
