"""The C renderer: a kernel as a C function that runs a whole grid on the CPU.

Blocks are the iterations of one ``#pragma omp parallel for`` loop (each block on one CPU thread);
the threads of a block are loops over ``cube.thread_idx`` (``#pragma omp simd``, so the compiler
vectorises across threads). Barriers split the body into phases (see :mod:`ember.cube.analysis`):

.. code-block:: c

    for (block = 0; block < blocks; block++) {      // omp parallel for
        shared arrays, uniform (block) variables, per-thread slots of variables live across phases
        for (thread ...) { phase 1 }                 // omp simd
        block-level code (a loop containing a barrier, a warp reduction...)
        for (thread ...) { phase 2 }
    }

Warp operations are emulated at block level over groups of 32 consecutive threads. Atomics on
global memory are GCC ``__atomic`` builtins (compare-and-swap loops for floats, max and min);
shared arrays belong to one CPU thread, so their atomics are plain read-modify-writes.

The entry point is ``void cb_entry(const int64_t *args)``: for each parameter, an array's data
address then its extents, or a scalar's bits; then the grid (x, y, z).
"""

from __future__ import annotations

from .. import ir
from ..analysis import Plan, ThreadLoop
from ..analysis import _arrays_in as _arrays_of
from ..analysis import _vars_in as _vars_of
from ..types import Scalar, bool_, f32, f64, i32, i64, u32
from ..uniform import unswitch
from .base import C_MATH, CFamily

# libm functions that glibc's libmvec provides vector versions of (x86-64 and aarch64, glibc >= 2.35)
LIBMVEC = frozenset("sin cos exp log pow acos acosh asin asinh atan atan2 atanh cosh erf erfc exp2 expm1 hypot "
                    "log10 log1p log2 sinh tan tanh".split())
WARP = 32

_F16 = r"""
#if defined(__FLT16_MAX__) && !defined(CB_NO_FLOAT16)
static inline float cb_h2f(uint16_t h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }
static inline uint16_t cb_f2h(float x) { _Float16 f = (_Float16)x; uint16_t h; memcpy(&h, &f, 2); return h; }
#else
static inline float cb_h2f(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, b;
    float f;
    if (e == 0x1fu) b = s | 0x7f800000u | (m << 13);
    else if (e) b = s | ((e + 112u) << 23) | (m << 13);
    else { f = (float)m * 5.9604644775390625e-8f; memcpy(&b, &f, 4); b |= s; }
    memcpy(&f, &b, 4);
    return f;
}
static inline uint16_t cb_f2h(float x) {
    uint32_t b, a, s;
    memcpy(&b, &x, 4);
    s = (b >> 16) & 0x8000u;
    a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
    if (a < 0x38800000u) { float f; memcpy(&f, &a, 4); return (uint16_t)(s | (uint32_t)rintf(f * 16777216.0f)); }
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(s | ((a - 0x38000000u) >> 13));
}
#endif
"""
_BF16 = r"""
static inline float cb_b2f(uint16_t h) { uint32_t b = (uint32_t)h << 16; float f; memcpy(&f, &b, 4); return f; }
static inline uint16_t cb_f2b(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}
"""


class CRenderer(CFamily):
    target = "c"

    def __init__(self, kernel: ir.Kernel, plan: Plan, *, simd_math: bool = True):
        super().__init__(kernel)
        # uniform code leaves the simd thread loops (a uniform branch inside one became gathers)
        self.plan = unswitch(kernel, plan)
        self.simd_math = simd_math
        bx, by, bz = kernel.block
        self.nt = bx * by * bz
        self.in_thread = False
        self.loop_id = 0
        self.used_math: set = set()
        self.atomics: dict = {}

    # ---- names ----------------------------------------------------------------------------------
    def var(self, name: str) -> str:
        if name in self.plan.spilled:
            if not self.in_thread:
                raise AssertionError(f"per-thread variable {name} used at block level")
            return f"{name}[cb_tid]"
        return name

    def special(self, e: ir.Special) -> str:
        if e.what == "thread_idx":
            return "cb_t" + "xyz"[e.axis]
        if e.what == "block_idx":
            return "cb_b" + "xyz"[e.axis]
        if e.what == "grid_dim":
            return "cb_g" + "xyz"[e.axis]
        if e.what == "lane":
            return f"(cb_tid % {WARP})"
        if e.what == "warp_size":
            return str(WARP)
        raise NotImplementedError(e.what)

    def element(self, array: str, index: str) -> str:
        if array in self.plan.spilled_arrays:
            return f"{array}[({index}) * {self.nt} + cb_tid]"
        return f"{array}[{index}]"

    # bool arrays are bytes: GCC vectorises no loop that loads a C ``bool`` next to floats ("no vectype"),
    # and a fused ``where(mask, 0, x)`` over 65,536 elements ran 0.3 ms as a scalar loop, 0.02 vectorised
    @staticmethod
    def elem_c(t: Scalar) -> str:
        return "uint8_t" if t is bool_ else t.c

    def from_storage(self, elem: Scalar, text: str) -> str:
        return f"({text} != 0)" if elem is bool_ else super().from_storage(elem, text)

    def to_storage(self, elem: Scalar, text: str) -> str:
        return f"(uint8_t)({text})" if elem is bool_ else super().to_storage(elem, text)

    def math_name(self, fn: str, t: Scalar) -> str:
        name = super().math_name(fn, t)
        if C_MATH.get(fn) in LIBMVEC:
            self.used_math.add((name, t))
        return name

    # ---- atomics --------------------------------------------------------------------------------
    def s_Atomic(self, s: ir.Atomic, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        ptr = f"&{self.element(s.array, self.expr(s.index))}"
        args = [ptr] + ([self.expr(s.compare)] if s.compare is not None else []) + [self.expr(s.value)]
        call = f"{self.atomic_helper(s.op, dec.elem, dec.space == 'shared')}({', '.join(args)})"
        if s.dst is not None:
            return [f"{self.pad(d)}{self.var(s.dst.name)} = {call};"]
        return [f"{self.pad(d)}(void){call};"]

    def atomic_helper(self, op: str, t: Scalar, plain: bool) -> str:
        name = f"cb_atomic_{op}_{t.name}" + ("_plain" if plain else "")
        if name in self.helpers:
            return name
        T = t.c
        combine = {"add": "o + v", "sub": "o - v", "and": "o & v", "or": "o | v", "xor": "o ^ v", "xchg": "v",
                   "max": f"{self.helper('max', t)}(o, v)", "min": f"{self.helper('min', t)}(o, v)"}
        if plain:  # a shared array belongs to one CPU thread: no other thread can touch it
            if op == "cas":
                body = f"{T} o = *p; if (o == c) *p = v; return o;"
                self.helpers[name] = f"static inline {T} {name}({T} *p, {T} c, {T} v) {{ {body} }}"
            else:
                self.helpers[name] = f"static inline {T} {name}({T} *p, {T} v) {{ {T} o = *p; *p = {combine[op]}; " \
                                     "return o; }"
            return name
        builtin = {"add": "__atomic_fetch_add", "sub": "__atomic_fetch_sub", "and": "__atomic_fetch_and",
                   "or": "__atomic_fetch_or", "xor": "__atomic_fetch_xor"}
        if t.is_int and op in builtin:
            src = f"static inline {T} {name}({T} *p, {T} v) {{ return {builtin[op]}(p, v, __ATOMIC_RELAXED); }}"
        elif t.is_int and op == "xchg":
            src = f"static inline {T} {name}({T} *p, {T} v) {{ return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }}"
        elif t.is_int and op == "cas":
            src = (f"static inline {T} {name}({T} *p, {T} c, {T} v) {{ __atomic_compare_exchange_n(p, &c, v, 0, "
                   "__ATOMIC_RELAXED, __ATOMIC_RELAXED); return c; }")
        else:  # a compare-and-swap loop on the bits
            U = "uint32_t" if t.bits == 32 else "uint64_t"
            n = t.bits // 8
            if op == "cas":
                src = (f"static inline {T} {name}({T} *p, {T} c, {T} v) {{ {U} cu, vu; memcpy(&cu, &c, {n}); "
                       f"memcpy(&vu, &v, {n}); __atomic_compare_exchange_n(({U} *)p, &cu, vu, 0, __ATOMIC_RELAXED, "
                       f"__ATOMIC_RELAXED); {T} o; memcpy(&o, &cu, {n}); return o; }}")
            else:
                src = (f"static inline {T} {name}({T} *p, {T} v) {{ {U} *q = ({U} *)p; "
                       f"{U} ou = __atomic_load_n(q, __ATOMIC_RELAXED), nu; {T} o, r; "
                       f"do {{ memcpy(&o, &ou, {n}); r = {combine[op]}; memcpy(&nu, &r, {n}); }} "
                       f"while (!__atomic_compare_exchange_n(q, &ou, nu, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); "
                       "return o; }")
        self.helpers[name] = src
        return name

    # ---- statements that depend on the phase structure ------------------------------------------
    def s_Assign(self, s: ir.Assign, d: int) -> list[str]:
        if s.var.name in self.plan.remat:  # computed at the top of every phase that uses it
            return []
        return super().s_Assign(s, d)

    def s_Return(self, s, d: int) -> list[str]:
        out = []
        if self.plan.thread_return and len(self.plan.loops) > 1:
            out.append(f"{self.pad(d)}cb_done[cb_tid] = 1;")
        return out + [f"{self.pad(d)}goto cb_next_{self.loop_id};"]

    def s_Barrier(self, s, d: int) -> list[str]:  # never reached: the plan removed barriers
        raise AssertionError("barrier inside a phase")

    def s_ThreadLoop(self, tl: ThreadLoop, d: int) -> list[str]:
        bx, by, bz = self.k.block
        self.loop_id = tl.id
        self.in_thread = True
        body_vars = _vars_of(tl.body)
        locals_ = sorted(v for v in body_vars if v in self.k.variables and v not in self.plan.block_vars
                         and v not in self.plan.spilled and v not in self.plan.remat)
        out = []
        depth = d
        if bz > 1:
            out.append(f"{self.pad(depth)}for (int32_t cb_tz = 0; cb_tz < {bz}; cb_tz++)")
        if by > 1:
            out.append(f"{self.pad(depth)}for (int32_t cb_ty = 0; cb_ty < {by}; cb_ty++)")
        vectorize = not any(isinstance(s, ir.Atomic) for s in ir.walk_stmts(tl.body))
        if vectorize:
            out.append(f"{self.pad(depth)}#pragma omp simd")
        out.append(f"{self.pad(depth)}for (int32_t cb_tx = 0; cb_tx < {bx}; cb_tx++) {{")
        p = self.pad(depth + 1)
        tid = "cb_tx"
        if by > 1:
            tid = f"cb_ty * {bx} + cb_tx"
        if bz > 1:
            tid = f"(cb_tz * {by} + {'cb_ty' if by > 1 else '0'}) * {bx} + cb_tx"
        out.append(f"{p}const int32_t cb_tid = {tid}; (void)cb_tid;")
        if self.plan.thread_return and len(self.plan.loops) > 1:
            out.append(f"{p}if (cb_done[cb_tid]) continue;")
        for name, assign in self._remat_for(body_vars):
            out.append(f"{p}const {self.type_name(assign.var.type)} {name} = {self.expr(assign.value)};")
        for name in locals_:
            t = self.k.variables[name]
            out.append(f"{p}{self.type_name(t)} {name} = {self.literal(False if t is bool_ else 0, t)};")
        for name in sorted(_arrays_of(tl.body)):
            dec = self.k.arrays[name]
            if dec.space == "local" and name not in self.plan.spilled_arrays:
                out.append(f"{p}{self.elem_c(dec.elem)} {name}[{_size(dec)}];")
        out += self.stmts(tl.body, depth + 1)
        if any(isinstance(s, ir.Return) for s in ir.walk_stmts(tl.body)):
            out.append(f"{p}cb_next_{tl.id}: ;")
        out.append(self.pad(depth) + "}")
        self.in_thread = False
        return out

    def _remat_for(self, used: set) -> list:
        """The rematerialised variables a phase needs, in definition order."""
        need, stack = set(), [v for v in used if v in self.plan.remat]
        while stack:
            v = stack.pop()
            if v in need:
                continue
            need.add(v)
            stack += [x for x in ir.expr_vars(self.plan.remat[v].value) if x in self.plan.remat]
        return [(s.var.name, s) for s in self.k.body if isinstance(s, ir.Assign) and s.var.name in need]

    def s_Collective(self, s: ir.Collective, d: int) -> list[str]:
        """A warp operation, emulated at block level over each group of 32 threads."""
        t = s.value.type
        T = self.type_name(t)
        nt = self.nt
        p, q, r = self.pad(d), self.pad(d + 1), self.pad(d + 2)
        v, dst = s.value.name, s.dst.name
        out = [f"{p}for (int32_t cb_w = 0; cb_w < {nt}; cb_w += {WARP}) {{",
               f"{q}const int32_t cb_n = {nt} - cb_w < {WARP} ? {nt} - cb_w : {WARP};"]
        if s.op in ("sum", "max", "min"):
            comb = "cb_acc + {x}" if s.op == "sum" else f"{self.helper(s.op, t)}(cb_acc, {{x}})"
            out += [f"{q}{T} cb_acc = {v}[cb_w];",
                    f"{q}for (int32_t cb_l = 1; cb_l < cb_n; cb_l++) cb_acc = {comb.format(x=f'{v}[cb_w + cb_l]')};",
                    f"{q}for (int32_t cb_l = 0; cb_l < cb_n; cb_l++) {dst}[cb_w + cb_l] = cb_acc;"]
        else:
            if isinstance(s.arg, ir.Const):
                arg = self.expr(s.arg)
            elif s.arg.name in self.plan.spilled:
                arg = f"{s.arg.name}[cb_w + cb_l]"
            else:
                arg = s.arg.name
            src = {"shfl": f"({arg}) & {WARP - 1}", "shfl_down": f"cb_l + ({arg})", "shfl_up": f"cb_l - ({arg})",
                   "shfl_xor": f"cb_l ^ ({arg})"}[s.op]
            out += [f"{q}for (int32_t cb_l = 0; cb_l < cb_n; cb_l++) {{",
                    f"{r}const int32_t cb_s = {src};",
                    f"{r}{dst}[cb_w + cb_l] = (cb_s >= 0 && cb_s < cb_n) ? {v}[cb_w + cb_s] : {v}[cb_w + cb_l];",
                    f"{q}}}"]
        return out + [p + "}"]

    # ---- the whole source -----------------------------------------------------------------------
    def render(self) -> str:
        self.check_types()
        k = self.k
        body = self._body()
        head = ["#include <stdint.h>", "#include <stdbool.h>", "#include <string.h>", "#include <math.h>", ""]
        if self.simd_math and self.used_math:
            head.append("/* vector versions of these come from libmvec; no -ffast-math: IEEE NaN/inf are kept */")
            for name, t in sorted(self.used_math, key=lambda x: (x[0], x[1].name)):
                nargs = 2 if name.rstrip("f") in ("pow", "atan2", "hypot") else 1
                T = self.type_name(t)
                head += ["#pragma omp declare simd notinbranch",
                         f"extern {T} {name}({', '.join([T] * nargs)});"]
            head.append("")
        elems = {d.elem.name for d in k.arrays.values()}
        if "f16" in elems:
            head.append(_F16)
        if "bf16" in elems:
            head.append(_BF16)
        head += list(self.helpers.values())
        return "\n".join(head + [""] + body) + "\n"

    def _body(self) -> list[str]:
        k, plan = self.k, self.plan
        lines = [f"/* cube kernel '{k.name}' from {k.filename}, block {k.block} */",
                 "void cb_entry(const int64_t *cb_a) {"]
        p1, p2 = self.pad(1), self.pad(2)
        slot = 0
        for prm in k.params:
            if prm.kind == "array":
                dec = k.arrays[prm.name]
                const = "" if dec.written else "const "
                c = self.elem_c(prm.type)
                lines.append(f"{p1}{const}{c} *{prm.name} = ({const}{c} *)(intptr_t)cb_a[{slot}];")
                slot += 1
                for ax in range(prm.ndim):
                    lines.append(f"{p1}const int32_t cb_{prm.name}_d{ax} = (int32_t)cb_a[{slot}];")
                    slot += 1
            else:
                t = prm.type
                if t is bool_:
                    lines.append(f"{p1}const bool {prm.name} = cb_a[{slot}] != 0;")
                elif t in (i32, u32, i64):
                    lines.append(f"{p1}const {t.c} {prm.name} = ({t.c})cb_a[{slot}];")
                elif t is f32:
                    lines.append(f"{p1}float {prm.name}; {{ const uint32_t cb_u = (uint32_t)cb_a[{slot}]; "
                                 f"memcpy(&{prm.name}, &cb_u, 4); }}")
                elif t is f64:
                    lines.append(f"{p1}double {prm.name}; memcpy(&{prm.name}, &cb_a[{slot}], 8);")
                slot += 1
        lines += [f"{p1}const int32_t cb_gx = (int32_t)cb_a[{slot}], cb_gy = (int32_t)cb_a[{slot + 1}], "
                  f"cb_gz = (int32_t)cb_a[{slot + 2}];",
                  f"{p1}const int64_t cb_blocks = (int64_t)cb_gx * cb_gy * cb_gz;",
                  f"{p1}#pragma omp parallel for schedule(static) if (cb_blocks > 1)",
                  f"{p1}for (int64_t cb_b = 0; cb_b < cb_blocks; cb_b++) {{",
                  f"{p2}const int32_t cb_bx = (int32_t)(cb_b % cb_gx);",
                  f"{p2}const int32_t cb_by = (int32_t)((cb_b / cb_gx) % cb_gy);",
                  f"{p2}const int32_t cb_bz = (int32_t)(cb_b / ((int64_t)cb_gx * cb_gy));",
                  f"{p2}(void)cb_bx; (void)cb_by; (void)cb_bz;"]
        for dec in k.arrays.values():
            if dec.space == "shared":
                lines.append(f"{p2}{self.elem_c(dec.elem)} {dec.name}[{_size(dec)}];")
            elif dec.name in plan.spilled_arrays:
                lines.append(f"{p2}{self.elem_c(dec.elem)} {dec.name}[{_size(dec) * self.nt}];")
        for name in sorted(plan.block_vars & set(k.variables)):
            t = k.variables[name]
            lines.append(f"{p2}{self.type_name(t)} {name} = {self.literal(False if t is bool_ else 0, t)};")
        for name in sorted(plan.spilled):
            lines.append(f"{p2}{self.type_name(k.variables[name])} {name}[{self.nt}];")
        if plan.thread_return and len(plan.loops) > 1:
            lines.append(f"{p2}unsigned char cb_done[{self.nt}]; memset(cb_done, 0, sizeof cb_done);")
        lines += self.stmts(plan.items, 2)
        lines += [f"{p1}}}", "}"]
        return lines


def _size(dec: ir.ArrayDecl) -> int:
    n = 1
    for s in dec.shape:
        n *= s
    return n




def render(kernel: ir.Kernel, plan: Plan, *, simd_math: bool = True) -> str:
    """C source for ``kernel`` (entry point ``cb_entry``)."""
    return CRenderer(kernel, plan, simd_math=simd_math).render()


__all__ = ["render", "CRenderer"]
