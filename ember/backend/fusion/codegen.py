"""Fused kernels as ember.cube source: one generator for every target.

A kernel is generated from a group of expression trees (graph.N) and compiled by cube; nothing in
here knows the target. Shapes, strides, offsets and scalar values are runtime arguments, so one
compiled kernel serves every shape with the same structure (op graph, dtypes, ranks after
collapsing dims, and the inner-stride class of each load: contiguous, broadcast or strided).

Two kernel kinds:

* **elementwise**: outputs of one shape; blocks cover (row, chunk of the innermost dim); each thread
  computes one element of every output, loads shared by the trees are read once.
* **reduction**: one thread per output element loops over the reduced elements; the reduced
  input is any elementwise tree (the prologue), and the result may be scaled (mean).
"""

from __future__ import annotations

import linecache
import math

from ... import cube
from ..._shape import contiguous_strides
from . import cubefuncs
from .ops import CUBE_TYPE, FLOAT_TYPES, cast, formula

_KERNELS: dict = {}  # source -> cube.Kernel (compiled variants live inside it, and on disk)
_counter = [0]


def ctype(dtype) -> str | None:
    """The cube type name of an ember dtype (None: not fusible)."""
    return CUBE_TYPE.get(getattr(dtype, "np", None))


def compile_source(src: str, name: str):
    """The cube.Kernel for generated source (made once per distinct source in a process)."""
    k = _KERNELS.get(src)
    if k is not None:
        return k
    _counter[0] += 1
    filename = f"<ember-fusion-{_counter[0]}>"
    # cube parses kernels with inspect, which finds generated source through linecache
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    g = {"cube": cube, "_sigmoid": cubefuncs._sigmoid}
    exec(compile(src, filename, "exec"), g)  # noqa: S102 - our own generated kernel source
    k = cube.kernel(g[name])
    _KERNELS[src] = k
    return k


class _Lit:
    """A scalar argument's value, converted to what cube's launch takes for its type."""

    __slots__ = ("value",)

    def __init__(self, t: str, v):
        self.value = bool(v) if t == "bool_" else float(v) if t in FLOAT_TYPES else int(v)


class _Gen:
    """Shared bookkeeping: parameters, loads and node variables of one kernel."""

    def __init__(self, ndim: int):
        self.arrays: list = []  # (param name, cube type, Buf)
        self.array_ix: dict = {}  # id(Buf) -> param name
        self.scalars: list = []  # (param name, cube type, value or ("geom", key))
        self.lines: list = []
        self.names: dict = {}  # id(node) -> expression variable
        self.loads: list = []  # (N, strides) in order, for geometry binding
        self.ndim = ndim

    def array(self, buf, t: str) -> str:
        name = self.array_ix.get(id(buf))
        if name is None:
            name = f"a{len(self.arrays)}"
            self.arrays.append((name, t, buf))
            self.array_ix[id(buf)] = name
        return name

    def scalar(self, t: str, value) -> str:
        name = f"s{len(self.scalars)}"
        self.scalars.append((name, t, value))
        return name


def _collapse(shape: tuple, accesses: list) -> tuple:
    """Drop size-1 dims and merge neighbours that every access walks contiguously: (groups of
    original dims, new shape). ``accesses`` are stride tuples over ``shape``."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    groups: list = []
    for d in dims:
        if groups:
            prev = groups[-1][-1]
            if all(st[prev] == st[d] * shape[d] for st in accesses):
                groups[-1].append(d)
                continue
        groups.append([d])
    return groups, tuple(math.prod(shape[d] for d in g) for g in groups)


def _strides_in(groups: list, strides: tuple) -> tuple:
    return tuple(strides[g[-1]] for g in groups)


def _stride_class(s: int) -> str:
    return "c" if s == 1 else "b" if s == 0 else "s"


class Kernel:
    """A generated kernel ready to launch: the cube kernel, and how to bind its arguments."""

    __slots__ = ("kern", "source", "block", "bind")

    def __init__(self, kern, source, block, bind):
        self.kern, self.source, self.block, self.bind = kern, source, block, bind


def _grid_stride(body: list, nvb: str) -> list:
    """Wrap a kernel body in a loop over virtual blocks ``bx``, so a launch may use fewer blocks than
    the work has (the target picks the grid: one block for small work on the CPU, where waking
    threads costs more than it saves). The barrier makes the loop a block-level one, with the
    threads (SIMD lanes on the C target) inside each iteration."""
    return [f"    for bx in range(cube.block_idx.x, {nvb}, cube.grid_dim.x):"] + ["    " + b for b in body] + [
        "        cube.sync_threads()"]


def _emit_tree(g: _Gen, node, load_expr, indent: str) -> str:
    """Emit assignments for ``node``'s tree (post-order, each node once); returns its variable."""
    stack = [(node, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in g.names:
            continue
        if n.op == "ld":
            g.names[id(n)] = load_expr(n)
            continue
        if n.op == "sc":
            t = ctype(n.dtype)
            g.names[id(n)] = g.scalar(t, n.attrs)
            continue
        if not ready:
            stack.append((n, True))
            for a in n.args:
                if a is not None and id(a) not in g.names:
                    stack.append((a, False))
            continue
        args = [None if a is None else g.names[id(a)] for a in n.args]
        types = [None if a is None else ctype(a.dtype) for a in n.args]
        out_t = ctype(n.dtype)
        if n.op == "cast":
            expr = cast(args[0], types[0], out_t)
        else:
            expr = formula(n.op, args, types, out_t)
        v = f"v{len(g.names)}"
        g.lines.append(f"{indent}{v} = {expr}")
        g.names[id(n)] = v
    return g.names[id(node)]


def elementwise(shape: tuple, outputs: list) -> Kernel:
    """A kernel computing ``outputs`` = [(Buf to write, value tree of ``shape``)], all contiguous."""
    from .graph import loads as tree_loads
    # every load's strides over shape (plus the outputs' contiguous strides) decide the collapse
    loads = tree_loads(*(tree for _, tree in outputs))
    out_st = contiguous_strides(shape)
    groups, cshape = _collapse(shape, [out_st] + [ld.attrs[0] for ld in loads])
    r = len(cshape)
    inner = cshape[-1] if r else 1
    outer = cshape[:-1]
    g = _Gen(r)
    ind = "        "
    geom = []  # how to compute the runtime geometry arguments: filled as scalars
    # geometry scalars come first: inner size, blocks per row, outer dims
    g.scalar("i32", ("n",))
    g.scalar("i32", ("nb",))
    for k in range(len(outer)):
        g.scalar("i32", ("dim", k))
    head = []
    if outer:
        head.append(f"{ind}r = row")
        for k in range(len(outer) - 1, 0, -1):
            head.append(f"{ind}c{k} = r % s{2 + k}")
            head.append(f"{ind}r = r // s{2 + k}")
        head.append(f"{ind}c0 = r")
    lcache: dict = {}

    def load_expr(n):
        buf = n.args[0]
        t = ctype(n.dtype)
        a = g.array(buf, t)
        st = _strides_in(groups, n.attrs[0]) if r else ()
        key = (id(buf), st, n.attrs[1])
        hit = lcache.get(key)
        if hit is not None:
            return hit
        li = len(lcache)
        off = g.scalar("i32", ("off", n))
        terms = [off]
        for k in range(len(outer)):
            if st[k] != 0:
                terms.append(f"c{k} * {g.scalar('i32', ('st', n, k))}")
        cls = _stride_class(st[-1]) if r else "b"
        if cls == "c":
            terms.append("j")
        elif cls == "s":
            terms.append(f"j * {g.scalar('i32', ('st', n, r - 1))}")
        v = f"x{li}"
        g.lines.append(f"{ind}{v} = {a}[{' + '.join(terms)}]")
        lcache[key] = v
        geom.append((n, st))
        return v

    results = [_emit_tree(g, tree, load_expr, ind) for _, tree in outputs]
    outs = []
    for k, ((buf, tree), v) in enumerate(zip(outputs, results)):
        name = f"o{k}"
        t = ctype(buf.dtype)
        outs.append((name, t, buf))
        src_t = ctype(tree.dtype)
        val = cast(v, src_t, t) if src_t != t else v
        g.lines.append(f"{ind}{name}[{'row * s0 + j' if outer else 'j'}] = {val}")
    nvb = g.scalar("i32", ("nvb",))
    params = [f"{n}: cube.Array[cube.{t}]" for n, t, _ in g.arrays]
    params += [f"{n}: cube.Array[cube.{t}]" for n, t, _ in outs]
    params += [f"{n}: cube.{t}" for n, t, _ in g.scalars]
    body = ["    row = bx // s1", "    jb = bx - row * s1"] if outer else ["    jb = bx"]
    body.append("    j = jb * cube.block_dim.x + cube.thread_idx.x")
    # a whole chunk needs no mask: its loads and stores are plain vector accesses, and its math
    # calls can use the unmasked SIMD variants; only the last chunk of a row checks j < n
    body += ["    if (jb + 1) * cube.block_dim.x <= s0:"] + head + g.lines
    body += ["    else:", "        if j < s0:"] + ["    " + ln for ln in head + g.lines]
    body = _grid_stride(body, nvb)
    src = f"def fused_ew({', '.join(params)}):\n" + "\n".join(body) + "\n"
    kern = compile_source(src, "fused_ew")
    arrays = [buf for _, _, buf in g.arrays] + [buf for _, _, buf in outs]
    scalars = [v if v.__class__ is tuple else _Lit(t, v) for _, t, v in g.scalars]
    block = 256 if inner >= 256 else 32

    rows = math.prod(outer)

    def bind():
        nb = -(-inner // block)
        vals = []
        for s in scalars:
            if s.__class__ is tuple:
                kind = s[0]
                if kind == "n":
                    vals.append(inner)
                elif kind == "nb":
                    vals.append(nb)
                elif kind == "nvb":
                    vals.append(nb * rows)
                elif kind == "dim":
                    vals.append(outer[s[1]])
                elif kind == "off":
                    vals.append(s[1].attrs[1])
                else:  # ("st", node, k)
                    vals.append(_strides_in(groups, s[1].attrs[0])[s[2]])
            else:
                vals.append(s.value)
        return (nb * rows if inner else 0), vals

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))


def reduction(red, out_buf) -> Kernel:
    """A kernel for the reduction node ``red`` (attrs: op, dims, keepdim) into ``out_buf``: one
    thread per output element, a serial loop over the reduced elements, the input tree inlined."""
    op, dims = red.attrs[0], red.attrs[1]
    tree = red.args[0]
    in_shape = tree.shape
    nd = len(in_shape)
    dims = tuple(range(nd)) if not dims else tuple(dims)
    kept = [d for d in range(nd) if d not in dims]
    order = kept + list(dims)
    from .graph import loads as tree_loads
    loads = tree_loads(tree)
    pshape = tuple(in_shape[d] for d in order)
    kshape = tuple(in_shape[d] for d in kept)
    kst = contiguous_strides(kshape) + (0,) * len(dims)  # the output walks kept dims contiguously
    acc_st = [kst] + [tuple(ld.attrs[0][d] for d in order) for ld in loads]
    nk = len(kept)
    kgroups, kc = _collapse(pshape[:nk], [s[:nk] for s in acc_st])
    rgroups, rc = _collapse(pshape[nk:], [s[nk:] for s in acc_st])
    rgroups = [[d + nk for d in gr] for gr in rgroups]
    g = _Gen(0)
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
    pre: list = []
    lcache: dict = {}
    geom_keys = []

    def load_expr(n):
        buf = n.args[0]
        t = ctype(n.dtype)
        a = g.array(buf, t)
        pst = tuple(n.attrs[0][d] for d in order)
        kst_ = _strides_in(kgroups, pst)
        rst_ = _strides_in(rgroups, pst)
        key = (id(buf), kst_, rst_, n.attrs[1])
        hit = lcache.get(key)
        if hit is not None:
            return hit
        li = len(lcache)
        base = [g.scalar("i32", ("off", n))]
        for k, s in enumerate(kst_):
            if s != 0:
                base.append(f"c{k} * {g.scalar('i32', ('kst', n, k))}")
        pre.append(f"        p{li} = {' + '.join(base)}")
        terms = [f"p{li}"]
        for k, s in enumerate(rst_):
            if s != 0:
                terms.append(f"e{k} * {g.scalar('i32', ('rst', n, k))}")
        v = f"x{li}"
        g.lines.append(f"{ind}{v} = {a}[{' + '.join(terms)}]")
        lcache[key] = v
        geom_keys.append(n)
        return v

    val = _emit_tree(g, tree, load_expr, ind)
    out_t = ctype(out_buf.dtype)
    in_t = ctype(tree.dtype)
    acc_t = "f64" if out_t == "f32" and op in ("sum", "mean", "var") else out_t
    val = cast(val, in_t, acc_t)
    zero = "0.0" if acc_t in FLOAT_TYPES else "0"
    init = [f"        acc: cube.{acc_t} = {zero}"]
    loop = rhead + g.lines
    if op in ("sum", "mean"):
        step = f"{ind}acc = acc + {val}"
    elif op == "var":
        # two passes over the inlined input: the mean, then the sum of squared deviations
        first = loop + [f"{ind}acc = acc + {val}"]
        g.names = {}
        lcache.clear()
        g.lines = []
        val2 = cast(_emit_tree(g, tree, load_expr, ind), in_t, acc_t)
        init += ["        for k in range(s1):"] + first + [
            f"        mu = acc / cube.{acc_t}(s1)", f"        acc = cube.{acc_t}(0.0)"]
        loop = rhead + g.lines + [f"{ind}dv = {val2} - mu"]
        step = f"{ind}acc = acc + dv * dv"
    else:
        fn = "cube.max" if op == "amax" else "cube.min"
        step = f"{ind}acc = cube.where(k == 0, {val}, {fn}(acc, {val}))"
    res = "acc"
    if op == "mean":
        res = f"acc / cube.{acc_t}(s1)"
    elif op == "var":  # PyTorch divides by max(0, n - correction)
        res = f"acc / cube.{acc_t}(cube.max(s1 - {g.scalar('i32', ('corr',))}, 0))"
    res = cast(res, acc_t, out_t)
    nvb = g.scalar("i32", ("nvb",))
    params = [f"{n}: cube.Array[cube.{t}]" for n, t, _ in g.arrays]
    params.append(f"out: cube.Array[cube.{out_t}]")
    params += [f"{n}: cube.{t}" for n, t, _ in g.scalars]
    inner = head + pre + init + ["        for k in range(s1):"] + loop + [step, f"        out[o] = {res}"]
    # whole blocks of outputs run unmasked (plain vector loads across threads), the last one masked
    body = ["    o = bx * cube.block_dim.x + cube.thread_idx.x", "    if (bx + 1) * cube.block_dim.x <= s0:"]
    body += inner + ["    else:", "        if o < s0:"] + ["    " + ln for ln in inner]
    body = _grid_stride(body, nvb)
    src = f"def fused_red({', '.join(params)}):\n" + "\n".join(body) + "\n"
    kern = compile_source(src, "fused_red")
    arrays = [buf for _, _, buf in g.arrays] + [out_buf]
    scalars = [v if v.__class__ is tuple else _Lit(t, v) for _, t, v in g.scalars]
    nout = math.prod(kc)
    nred = math.prod(rc)
    block = 32

    def bind():
        vals = []
        for s in scalars:
            if s.__class__ is tuple:
                kind = s[0]
                if kind == "nout":
                    vals.append(nout)
                elif kind == "nred":
                    vals.append(nred)
                elif kind == "kdim":
                    vals.append(kc[s[1]])
                elif kind == "nvb":
                    vals.append(-(-nout // block))
                elif kind == "corr":
                    vals.append(int(red.attrs[3]))
                elif kind == "rdim":
                    vals.append(rc[s[1]])
                elif kind == "off":
                    vals.append(s[1].attrs[1])
                else:
                    pst = tuple(s[1].attrs[0][d] for d in order)
                    grp = kgroups if kind == "kst" else rgroups
                    vals.append(_strides_in(grp, pst)[s[2]])
            else:
                vals.append(s.value)
        return (-(-nout // block) if nout else 0), vals

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))
