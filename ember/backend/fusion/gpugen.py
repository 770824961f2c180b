"""GPU forms of fused elementwise kernels (codegen.py calls these when the target asks for them).

``elementwise_vec4``: a float32 kernel whose outputs and inputs run contiguously along the last
dim (after merging dims) loads and stores four elements at a time, one 16-byte access each (a
memory-bound chain then reaches the GPU's copy bandwidth), computing the four lanes with scalar
code. Virtual blocks cover (row, chunk of the row's vectors), as in the one-element form. Inputs
broadcast along the row (a bias per row, a 0-d tensor) are loaded once per row. A 1-d kernel may
have any length (block 0 finishes the last ``n % 4`` elements); with several dims the rows must be
whole vectors and every access aligned (offsets and row strides multiples of 4). Anything else
(a transposed input, other dtypes) takes the one-element-per-thread form.
"""

from __future__ import annotations

import math

from .codegen import (
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

BLOCK = 256


def _applies(outputs: list, loads: list, groups: list, cshape: tuple) -> bool:
    r = len(cshape)
    if r == 0 or math.prod(cshape) < 4 * BLOCK or (r > 1 and cshape[-1] % 4):
        return False
    for buf, tree in outputs:
        if ctype(buf.dtype) != "f32" or ctype(tree.dtype) != "f32":
            return False
    for ld in loads:
        st = _strides_in(groups, ld.attrs[0])
        if ctype(ld.dtype) != "f32" or st[-1] not in (0, 1):
            return False
        if st[-1] == 1 and (ld.attrs[1] % 4 or any(s % 4 for s in st[:-1])):
            return False
    return True


def elementwise_vec4(shape: tuple, outputs: list, style, loads: list, groups: list, cshape: tuple):
    """The vec4 kernel for ``outputs`` (see codegen.elementwise), or None when it doesn't apply."""
    if not _applies(outputs, loads, groups, cshape):
        return None
    GENERATED[0] += 1
    r = len(cshape)
    n = cshape[-1]
    outer = cshape[:-1]
    g = _Gen(r, style)
    g.scalar("i32", ("n",))   # s0: elements of a row
    g.scalar("i32", ("nv",))  # s1: whole vectors of a row
    g.scalar("i32", ("nb",))  # s2: virtual blocks per row
    dims = [g.scalar("i32", ("dim", k)) for k in range(len(outer))]
    head = []  # the row's indices c0.. from the virtual block's row
    if outer:
        head.append(f"        q{len(outer) - 1} = row")
        for k in range(len(outer) - 1, 0, -1):
            head += [f"        c{k} = q{k} % {dims[k]}", f"        q{k - 1} = q{k} // {dims[k]}"]
        head.append("        c0 = q0")
    per_row: list = []  # row bases and broadcast loads: the same for every lane of the row
    vloads: dict = {}
    ind = "            "
    lane = [0]
    tail = [False]

    def row_base(nd, vec: bool) -> str:
        """The start of ``nd``'s row (in vectors when ``vec``), as an expression of the row indices."""
        st = _strides_in(groups, nd.attrs[0])
        terms = [g.scalar("i32", ("off4" if vec else "off", nd))]
        for k in range(len(outer)):
            if st[k]:
                terms.append(f"c{k} * {g.scalar('i32', ('st4' if vec else 'st', nd, k))}")
        return " + ".join(terms)

    def load_expr(nd):
        buf = nd.args[0]
        a = g.array(buf, "f32")
        inner_st = _strides_in(groups, nd.attrs[0])[-1]
        if inner_st == 0:  # the same element for the whole row
            key = ("u", id(buf), nd.attrs)
            v = vloads.get(key)
            if v is None:
                v = vloads[key] = f"u{len(vloads)}"
                per_row.append(f"        {v} = {a}[{row_base(nd, False)}]")
            return v
        if tail[0]:
            key = ("t", id(buf), nd.attrs)
            v = vloads.get(key)
            if v is None:
                v = vloads[key] = f"w{len(vloads)}"
                g.lines.append(f"{ind}{v} = {a}[{row_base(nd, False)} + j]")
            return v
        key = ("v", id(buf), nd.attrs)
        v = vloads.get(key)
        if v is None:
            v = vloads[key] = f"q_{len(vloads)}"
            b = f"b{len(vloads)}"
            per_row.append(f"        {b} = {row_base(nd, True)}")
            g.lines.append(f"{ind}{v} = {a}.vec4[{b} + j]")
        return f"{v}.{'xyzw'[lane[0]]}"

    def keep_shared():  # per lane: scalar arguments and per-row loads stay, the rest is recomputed
        g.names = {k: v for k, v in g.names.items() if v[0] in "su"}

    results = []
    for lane[0] in range(4):
        keep_shared()
        vals = []
        for _, tree in outputs:
            v = _emit_tree(g, tree, load_expr, ind)
            vals.append(cast(v, ctype(tree.dtype), "f32"))
        results.append(vals)
    body_vec = list(g.lines)
    outs = [(f"o{k}", "f32", buf) for k, (buf, _) in enumerate(outputs)]
    out_ix = "row * s1 + j" if outer else "j"
    for k in range(len(outputs)):
        body_vec.append(f"{ind}o{k}.vec4[{out_ix}] = cube.vec4({', '.join(results[m][k] for m in range(4))})")
    nvb = g.scalar("i32", ("nvb",))
    src = [f"    for bx in range(cube.block_idx.x, {nvb}, cube.grid_dim.x):"]
    src += ["        row = bx // s2", "        jb = bx - row * s2"] if outer else ["        jb = bx"]
    src += head + per_row
    src += ["        j = jb * cube.block_dim.x + cube.thread_idx.x", "        if j < s1:"] + body_vec
    if not outer:  # a 1-d kernel of any length: block 0 computes the last n % 4 elements
        g.lines = []
        tail[0] = True
        keep_shared()
        tvals = [_emit_tree(g, tree, load_expr, ind) for _, tree in outputs]
        tail_rows = [ln for ln in per_row if ln.lstrip().startswith("u")]  # broadcast loads again
        src += ["    if cube.block_idx.x == 0:"] + tail_rows
        src += ["        j = s1 * 4 + cube.thread_idx.x", "        if j < s0:"] + g.lines
        src += [f"{ind}o{k}[j] = {v}" for k, v in enumerate(tvals)]
    params = kernel_params(g, outs)
    src = f"def fused_ew4({', '.join(params)}):\n" + "\n".join(src) + "\n"
    kern = compile_source(src, "fused_ew4")
    arrays = [buf for _, _, buf in g.arrays] + [buf for _, _, buf in outs]
    scalars = [(t, v) for _, t, v in g.scalars]
    nv = n // 4
    # short rows take smaller blocks (whole warps): a block's lanes past its row's vectors idle
    block = BLOCK if nv >= BLOCK or not outer else max(32, 1 << (nv - 1).bit_length())
    nb = -(-nv // block)
    nvblocks = nb * math.prod(outer)

    def geometry(kind, s):
        if kind == "dim":
            return outer[s[1]]
        if kind == "off4":  # a multiple of 4 (checked in _applies)
            return s[1].attrs[1] // 4
        st = _strides_in(groups, s[1].attrs[0])[s[2]]
        return st if kind == "st" else st // 4  # "st" | "st4"

    def bind():
        return nvblocks, bind_scalars(scalars, {"n": n, "nv": nv, "nb": nb, "nvb": nvblocks}, geometry)

    return Kernel(kern, src, block, (arrays, bind, len(g.arrays)))
