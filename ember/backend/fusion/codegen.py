"""Fused kernels as ember.cube source: one generator for every target.

A kernel is generated from a group of expression trees (graph.N) and compiled by cube; nothing in
here knows the target. Shapes, strides, offsets and scalar values are runtime arguments, so one
compiled kernel serves every shape with the same structure (op graph, dtypes, ranks after
collapsing dims, and the inner-stride class of each load: contiguous, broadcast or strided).

Two kernel kinds:

* **elementwise**: outputs of one shape; blocks cover (row, chunk of the innermost dim); each thread
  computes one element of every output, loads shared by the trees are read once.
* **reduction** and **row** kernels (rowgen.py): one thread per output element loops over the
  reduced elements; the reduced input is any elementwise tree (the prologue), and elementwise
  outputs that read the results back (softmax, norms) can follow in the same kernel.
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
# kernel sources generated in this process (a replayed flush plan generates none: tests pin it)
GENERATED = [0]


def ctype(dtype) -> str | None:
    """The cube type name of an ember dtype (None: not fusible)."""
    return CUBE_TYPE.get(getattr(dtype, "np", None))


def compile_source(src: str, name: str, eviction_policy: str | None = None):
    """The cube.Kernel for generated source (made once per distinct source in a process); ``eviction_policy``
    is cube.kernel's cache hint for its vector loads."""
    k = _KERNELS.get(src)
    if k is not None and k.eviction_policy == eviction_policy:  # (a source's generator always asks the same)
        return k
    _counter[0] += 1
    filename = f"<ember-fusion-{_counter[0]}>"
    # cube parses kernels with inspect, which finds generated source through linecache
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    g = {"cube": cube, "_sigmoid": cubefuncs._sigmoid}
    exec(compile(src, filename, "exec"), g)  # noqa: S102 - our own generated kernel source
    # contract: on the GPU, a * b + c may compile to one FMA, as in PyTorch's kernels (nvcc's default):
    # fewer instructions in math-heavy chains, results within an ulp of the unfused ops'
    k = cube.kernel(g[name], contract=True, eviction_policy=eviction_policy)
    _KERNELS[src] = k
    return k


def lit(t: str, v):
    """A scalar argument's value, converted to what cube's launch takes for cube type ``t``."""
    return bool(v) if t == "bool_" else float(v) if t in FLOAT_TYPES else int(v)


class Slot:
    """A kernel scalar argument bound at each flush from the window's scalar ``slot`` (its value
    now is ``value``); the flush plan records where each goes."""

    __slots__ = ("slot", "t", "value")

    def __init__(self, slot, t: str, value):
        self.slot, self.t, self.value = slot, t, value


def bind_scalars(scalars: list, sizes: dict, geometry) -> list:
    """A kernel's scalar arguments for one flush, in parameter order: a window scalar (``("val", slot,
    value)``) as its Slot, a size the generator named in ``sizes`` ("n", "nb", ...), a load's element
    offset (``("off", node)``), and anything else (dims, strides) from ``geometry(kind, spec)``."""
    vals = []
    for t, s in scalars:
        kind = s[0]
        if kind == "val":
            vals.append(Slot(s[1], t, s[2]))
        elif kind in sizes:
            vals.append(sizes[kind])
        elif kind == "off":
            vals.append(s[1].attrs[1])
        else:
            vals.append(geometry(kind, s))
    return vals


def kernel_params(g, outputs: list) -> list:
    """A generated kernel's parameters: the input arrays, the output arrays, then the scalars."""
    params = [f"{n}: cube.Array[cube.{t}]" for n, t, _ in g.arrays]
    params += [f"{n}: cube.Array[cube.{t}]" for n, t, _ in outputs]
    return params + [f"{n}: cube.{t}" for n, t, _ in g.scalars]


class _Gen:
    """Shared bookkeeping: parameters, loads and node variables of one kernel."""

    def __init__(self, ndim: int, style=None):
        self.storage = getattr(style, "storage", None) or {}  # cube type -> the type arrays of it hold
        self.arrays: list = []  # (param name, stored cube type, Buf)
        self.array_ix: dict = {}  # id(Buf) -> param name
        self.scalars: list = []  # (param name, cube type, value or ("geom", key))
        self.lines: list = []
        self.names: dict = {}  # id(node) -> expression variable
        self.loads: list = []  # (N, strides) in order, for geometry binding
        self.ndim = ndim
        self.nv = 0  # node variables emitted: names stay unique across loops of one kernel

    def array(self, buf, t: str) -> str:
        name = self.array_ix.get(id(buf))
        if name is None:
            name = f"a{len(self.arrays)}"
            self.arrays.append((name, self.storage.get(t, t), buf))
            self.array_ix[id(buf)] = name
        return name

    def load(self, a: str, index: str, t: str) -> str:
        """The expression loading element ``index`` of array ``a`` holding values of cube type ``t``."""
        st = self.storage.get(t, t)
        return f"{a}[{index}]" if st == t else stored_load(f"{a}[{index}]", t, st)

    def store_value(self, v: str, t: str) -> tuple:
        """(stored type, value expression) of a store of ``v`` (cube type ``t``)."""
        st = self.storage.get(t, t)
        return st, (v if st == t else stored_value(v, t, st))

    def scalar(self, t: str, value) -> str:
        name = f"s{len(self.scalars)}"
        self.scalars.append((name, t, value))
        return name


def stored_load(expr: str, t: str, st: str) -> str:
    """A value of type ``t`` from an array element of the type ``st`` it is stored as."""
    if t == "bool_":
        return f"({expr} != cube.{st}(0))"
    return f"cube.{t}({expr})"


def stored_value(v: str, t: str, st: str) -> str:
    """A value of type ``t`` converted to the type ``st`` it is stored as (bools: 0 or 1)."""
    if t == "bool_":
        return f"cube.where({v}, cube.{st}(1), cube.{st}(0))"
    return f"cube.{st}({v})"


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

    __slots__ = ("kern", "source", "block", "bind", "rows")

    def __init__(self, kern, source, block, bind, rows: bool = False):
        self.kern, self.source, self.block, self.bind = kern, source, block, bind
        self.rows = rows  # a block per row (gpurows): the GPU targets launch a block for every row


def _grid_stride(body: list, nvb: str, barrier: bool = True) -> list:
    """Wrap a kernel body in a loop over virtual blocks ``bx``, so a launch may use fewer blocks than
    the work has (the target picks the grid: one block for small work on the CPU, where waking
    threads costs more than it saves). The barrier makes the loop a block-level one, with the
    threads (SIMD lanes on the C target) inside each iteration. GPU kernels that share nothing
    between threads need no barrier (``barrier=False``)."""
    return [f"    for bx in range(cube.block_idx.x, {nvb}, cube.grid_dim.x):"] + ["    " + b for b in body] + (
        ["        cube.sync_threads()"] if barrier else [])


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
        if n.op == "sc":  # a runtime argument bound from the window's scalar slot (None: a constant)
            t = ctype(n.dtype)
            g.names[id(n)] = g.scalar(t, ("val", n.args[0] if n.args else None, n.attrs))
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
        v = f"v{g.nv}"
        g.nv += 1
        g.lines.append(f"{indent}{v} = {expr}")
        g.names[id(n)] = v
    return g.names[id(node)]


def elementwise(shape: tuple, outputs: list, style=None) -> Kernel:
    """A kernel computing ``outputs`` = [(Buf to write, value tree of ``shape``)], all contiguous.
    ``style``: the target's generator options (target.py; None: the CPU's)."""
    GENERATED[0] += 1
    from .graph import loads as tree_loads
    # every load's strides over shape (plus the outputs' contiguous strides) decide the collapse
    loads = tree_loads(*(tree for _, tree in outputs))
    out_st = contiguous_strides(shape)
    groups, cshape = _collapse(shape, [out_st] + [ld.attrs[0] for ld in loads])
    r = len(cshape)
    inner = cshape[-1] if r else 1
    outer = cshape[:-1]
    gpu = bool(getattr(style, "row_block", 0))
    if gpu and getattr(style, "vec4", False):
        from .gpugen import elementwise_vec4
        k = elementwise_vec4(shape, outputs, style, loads, groups, cshape)
        if k is not None:
            return k
    g = _Gen(r, style)
    ind = "        "
    geom = []  # how to compute the runtime geometry arguments: filled as scalars
    # geometry scalars come first: inner size, blocks per row, outer dims
    g.scalar("i32", ("n",))
    g.scalar("i32", ("nb",))
    for k in range(len(outer)):
        g.scalar("i32", ("dim", k))
    head = []
    if outer:  # single assignments: these are uniform over the lanes, kept as one shared value
        head.append(f"{ind}r{len(outer) - 1} = row")
        for k in range(len(outer) - 1, 0, -1):
            head.append(f"{ind}c{k} = r{k} % s{2 + k}")
            head.append(f"{ind}r{k - 1} = r{k} // s{2 + k}")
        head.append(f"{ind}c0 = r0")
    lcache: dict = {}
    strided: list = []  # the stride class of each load's innermost dim
    uniform: list = []  # loads whose address does not depend on the lane

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
        strided.append(cls)
        if cls == "c":
            terms.append("j")
        elif cls == "s":
            terms.append(f"j * {g.scalar('i32', ('st', n, r - 1))}")
        v = f"x{li}"
        # a load the same for every lane (a per-channel statistic) is made before the branch on the
        # chunk: its address is valid for the whole row, and GCC can't vectorise a loop holding a
        # masked load of one address (the batch norm kernel then ran scalar, 20 ns an element)
        (uniform if cls == "b" else g.lines).append(f"{ind}{v} = {g.load(a, ' + '.join(terms), t)}")
        lcache[key] = v
        geom.append((n, st))
        return v

    results = [_emit_tree(g, tree, load_expr, ind) for _, tree in outputs]
    outs = []
    for k, ((buf, tree), v) in enumerate(zip(outputs, results)):
        name = f"o{k}"
        t = ctype(buf.dtype)
        src_t = ctype(tree.dtype)
        val = cast(v, src_t, t) if src_t != t else v
        st, val = g.store_value(val, t)
        outs.append((name, st, buf))
        g.lines.append(f"{ind}{name}[{'row * s0 + j' if outer else 'j'}] = {val}")
    # a strided input (a transpose): walk the rows of one chunk before the next chunk, so the
    # cache lines a chunk's gathers touch are reused by the next rows, not evicted by the row
    # (on the CPU: a GPU hides the latency with other warps instead)
    chunk_major = bool(outer) and "s" in strided and not gpu
    nrows = g.scalar("i32", ("rows",)) if chunk_major else None
    nvb = g.scalar("i32", ("nvb",))
    params = kernel_params(g, outs)
    if chunk_major:
        body = [f"    jb = bx // {nrows}", f"    row = bx - jb * {nrows}"]
    elif outer:
        body = ["    row = bx // s1", "    jb = bx - row * s1"]
    else:
        body = ["    jb = bx"]
    body.append("    j = jb * cube.block_dim.x + cube.thread_idx.x")
    # a whole chunk needs no mask: its loads and stores are plain vector accesses, and its math
    # calls can use the unmasked SIMD variants; only the last chunk of a row checks j < n
    # the row's indices come first, unconditionally: they are the same for every lane, and a division
    # executed on every path is hoisted out of the lanes' loop (inside the branch it is not, and a
    # per-lane integer division cost ~20 ns an element in a batch norm)
    body += ["    " + ln[8:] for ln in head + uniform]
    body += ["    if (jb + 1) * cube.block_dim.x <= s0:"] + g.lines
    body += ["    else:", "        if j < s0:"] + ["    " + ln for ln in g.lines]
    body = _grid_stride(body, nvb, barrier=not gpu)
    src = f"def fused_ew({', '.join(params)}):\n" + "\n".join(body) + "\n"
    kern = compile_source(src, "fused_ew")
    arrays = [buf for _, _, buf in g.arrays] + [buf for _, _, buf in outs]
    scalars = [(t, v) for _, t, v in g.scalars]
    # a strided input: 16-lane chunks (measured best), so the pages its gathers touch stay in the
    # TLB while the next rows reuse them (256 lanes over a transpose span 128 pages: a miss a load)
    block = 16 if chunk_major else 32 if inner < 256 else 256
    if gpu:  # whole warps; a row shorter than a block leaves lanes idle, so small rows take small blocks
        block = 256 if inner >= 256 else 64 if inner > 32 else 32

    rows = math.prod(outer)

    def geometry(kind, s):
        if kind == "dim":
            return outer[s[1]]
        return _strides_in(groups, s[1].attrs[0])[s[2]]  # ("st", node, k)

    def bind():
        nb = -(-inner // block)
        sizes = {"n": inner, "nb": nb, "nvb": nb * rows, "rows": rows}
        return (nb * rows if inner else 0), bind_scalars(scalars, sizes, geometry)

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))


def reduction(red, out_buf, style=None) -> Kernel:
    """A kernel for the reduction node ``red`` (attrs: op, dims, keepdim) into ``out_buf``: one
    thread per output element, a serial loop over the reduced elements, the input tree inlined
    (a row kernel with no elementwise outputs, see rowgen.py)."""
    from .rowgen import rows
    return rows([(red, out_buf, True)], [], style)
