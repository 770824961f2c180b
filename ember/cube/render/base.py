"""What every renderer shares, and the C-family printer that C, CUDA and HIP build on.

A renderer turns an :class:`ember.cube.ir.Kernel` into source text for one target. The C-family
printer (:class:`CFamily`) prints expressions and structured statements; a target subclass says
how to name launch geometry (:meth:`special`), how to read and write 16-bit floats, how to do
atomics and collectives, and wraps the body in its entry point. Every expression is fully
parenthesised: generated code is read rarely and must never depend on precedence tables.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ir
from ..errors import CompileError
from ..types import Scalar, bool_, f32, f64, i32, i64, u32

# the C name of each math intrinsic for f64; f32 adds the 'f' suffix
C_MATH = {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf",
    "erfc": "erfc", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "rint", "pow": "pow",
    "atan2": "atan2", "copysign": "copysign", "hypot": "hypot", "fmod": "fmod", "fmin": "fmin", "fmax": "fmax",
    "fma": "fma", "abs": "fabs",
}


def render_error(kernel: ir.Kernel, line: int, message: str) -> CompileError:
    return CompileError(message, kernel.filename, line or None, kernel.source_lines.get(line), kernel.name)


class CFamily:
    """Expression/statement printing in C syntax; targets override the hooks."""

    target = "c"
    INDENT = "    "

    def __init__(self, kernel: ir.Kernel):
        self.k = kernel
        self.helpers: dict = {}  # name -> C source of helper functions the body needs (emitted once, in order)
        self.line = 0

    # ---- hooks ----------------------------------------------------------------------------------
    def type_name(self, t: Scalar) -> str:
        return t.c

    def special(self, e: ir.Special) -> str:
        raise NotImplementedError

    def var(self, name: str) -> str:
        return name

    def dim(self, e: ir.Dim) -> str:
        return f"cb_{e.array}_d{e.axis}"

    def element(self, array: str, index: str) -> str:
        """The lvalue of an element of ``array``."""
        return f"{array}[{index}]"

    def math_name(self, fn: str, t: Scalar) -> str:
        name = C_MATH[fn]
        return name + "f" if t is f32 else name

    # ---- expressions ----------------------------------------------------------------------------
    def expr(self, e: ir.Expr) -> str:
        return getattr(self, "x_" + type(e).__name__)(e)

    def x_Const(self, e: ir.Const) -> str:
        return self.literal(e.value, e.type)

    def literal(self, v, t: Scalar) -> str:
        if t is bool_:
            return "true" if v else "false"
        if t is i32:
            return str(v) if v != -(2 ** 31) else "(-2147483647 - 1)"
        if t is u32:
            return f"{v}u"
        if t is i64:
            return f"{v}LL" if v != -(2 ** 63) else "(-9223372036854775807LL - 1)"
        suffix = "f" if t is f32 else ""
        if math.isnan(v):
            return f"(({self.type_name(t)})NAN)"
        if math.isinf(v):
            return f"(({self.type_name(t)}){'-' if v < 0 else ''}INFINITY)"
        text = str(np.float32(v)) if t is f32 else repr(float(v))  # shortest text that reads back exactly
        if not any(c in text for c in ".en"):
            text += ".0"
        return text + suffix

    def x_Var(self, e: ir.Var) -> str:
        return self.var(e.name)

    def x_Special(self, e: ir.Special) -> str:
        return self.special(e)

    def x_Dim(self, e: ir.Dim) -> str:
        return self.dim(e)

    def x_Unary(self, e: ir.Unary) -> str:
        a = self.expr(e.a)
        return {"neg": f"(-{a})", "not": f"(!{a})", "bitnot": f"(~{a})"}[e.op]

    def x_Compare(self, e: ir.Compare) -> str:
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[e.op]
        return f"({self.expr(e.a)} {sym} {self.expr(e.b)})"

    def x_Binary(self, e: ir.Binary) -> str:
        a, b, t, op = self.expr(e.a), self.expr(e.b), e.type, e.op
        simple = {"add": "+", "sub": "-", "mul": "*", "div": "/", "and": "&&", "or": "||", "bitand": "&",
                  "bitor": "|", "bitxor": "^"}
        if op in simple:
            return f"({a} {simple[op]} {b})"
        if op in ("floordiv", "mod"):
            if t.kind == "u":
                return f"({a} {'/' if op == 'floordiv' else '%'} {b})"
            return f"{self.helper(op, t)}({a}, {b})"
        if op in ("min", "max"):
            return f"{self.helper(op, t)}({a}, {b})"
        if op == "shl":
            if t.kind == "i":  # shifting a negative value left is undefined in C: shift the bits unsigned
                u = "uint32_t" if t is i32 else "uint64_t"
                return f"(({self.type_name(t)})(({u}){a} << {b}))"
            return f"({a} << {b})"
        if op == "shr":
            return f"({a} >> {b})"
        raise NotImplementedError(op)

    def x_Call(self, e: ir.Call) -> str:
        args = [self.expr(a) for a in e.args]
        fn = e.fn
        t = e.args[0].type
        if fn in ("isnan", "isinf", "isfinite"):
            return f"{fn}({args[0]})"
        if fn == "rsqrt":
            return f"({self.literal(1.0, t)} / {self.math_name('sqrt', t)}({args[0]}))"
        if fn == "sigmoid":
            one = self.literal(1.0, t)
            return f"({one} / ({one} + {self.math_name('exp', t)}(-{args[0]})))"
        if fn in ("min", "max"):
            return f"{self.helper(fn, t)}({args[0]}, {args[1]})"
        if fn == "abs" and t.is_int:
            return f"{self.helper('abs', t)}({args[0]})"
        return f"{self.math_name(fn, t)}({', '.join(args)})"

    def x_Cast(self, e: ir.Cast) -> str:
        return f"(({self.type_name(e.type)}){self.expr(e.a)})"

    def x_Select(self, e: ir.Select) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.a)} : {self.expr(e.b)})"

    def x_Load(self, e: ir.Load) -> str:
        d = self.k.arrays[e.array]
        v = self.from_storage(d.elem, self.element(e.array, self.expr(e.index)))
        if e.mask is not None:
            return f"({self.expr(e.mask)} ? {v} : {self.expr(e.other)})"
        return v

    # 16-bit floats: arrays hold bits; targets provide cb_h2f/cb_f2h and cb_b2f/cb_f2b
    def from_storage(self, elem: Scalar, text: str) -> str:
        if elem.name == "f16":
            return f"cb_h2f({text})"
        if elem.name == "bf16":
            return f"cb_b2f({text})"
        return text

    def to_storage(self, elem: Scalar, text: str) -> str:
        if elem.name == "f16":
            return f"cb_f2h({text})"
        if elem.name == "bf16":
            return f"cb_f2b({text})"
        return text

    # ---- helpers (Python semantics for // and %, NaN-propagating min/max) ------------------------------
    def helper(self, op: str, t: Scalar) -> str:
        name = f"cb_{op}_{t.name}"
        if name not in self.helpers:
            self.helpers[name] = self.helper_source(op, t, name)
        return name

    def helper_qualifier(self) -> str:
        return "static inline"

    def helper_source(self, op: str, t: Scalar, name: str) -> str:
        T = self.type_name(t)
        q = self.helper_qualifier()
        if op == "floordiv" and t.is_int:
            return (f"{q} {T} {name}({T} a, {T} b) {{ {T} q = a / b; "
                    f"return q - (((a % b) != 0) & ((a < 0) != (b < 0))); }}")
        if op == "mod" and t.is_int:
            return (f"{q} {T} {name}({T} a, {T} b) {{ {T} r = a % b; "
                    f"return r + ((r != 0) & ((r < 0) != (b < 0))) * b; }}")
        if op in ("floordiv", "mod"):  # Python's float // and %, from fmod as CPython computes them
            fm, fl, cs = (self.math_name(n, t) for n in ("fmod", "floor", "copysign"))
            zero, half, one = (self.literal(x, t) for x in (0.0, 0.5, 1.0))
            if op == "mod":
                return (f"{q} {T} {name}({T} a, {T} b) {{ {T} m = {fm}(a, b); "
                        f"if (m != {zero}) {{ if ((b < {zero}) != (m < {zero})) m += b; }} "
                        f"else m = {cs}({zero}, b); return m; }}")
            return (f"{q} {T} {name}({T} a, {T} b) {{ if (b == {zero}) return a / b; {T} m = {fm}(a, b); "
                    f"{T} d = (a - m) / b; if (m != {zero} && ((b < {zero}) != (m < {zero}))) d -= {one}; "
                    f"if (d == {zero}) return {cs}({zero}, a / b); {T} f = {fl}(d); "
                    f"if (d - f > {half}) f += {one}; return f; }}")
        if op in ("min", "max"):
            cmp = ">" if op == "max" else "<"
            if t.is_float:
                return f"{q} {T} {name}({T} a, {T} b) {{ return (a {cmp} b || a != a) ? a : b; }}"
            return f"{q} {T} {name}({T} a, {T} b) {{ return a {cmp} b ? a : b; }}"
        if op == "abs":
            return f"{q} {T} {name}({T} a) {{ return a < 0 ? -a : a; }}"
        raise NotImplementedError(op)

    # ---- statements -----------------------------------------------------------------------------
    def stmts(self, body: list, depth: int) -> list[str]:
        out = []
        for s in body:
            self.line = getattr(s, "line", 0) or self.line
            out.extend(getattr(self, "s_" + type(s).__name__)(s, depth))
        return out

    def pad(self, depth: int) -> str:
        return self.INDENT * depth

    def s_Assign(self, s: ir.Assign, d: int) -> list[str]:
        return [f"{self.pad(d)}{self.var(s.var.name)} = {self.expr(s.value)};"]

    def s_Store(self, s: ir.Store, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        line = f"{self.element(s.array, self.expr(s.index))} = {self.to_storage(dec.elem, self.expr(s.value))};"
        if s.mask is not None:
            return [f"{self.pad(d)}if ({self.expr(s.mask)}) {line}"]
        return [self.pad(d) + line]

    def s_VecLoad(self, s: ir.VecLoad, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        base = self.expr(s.index)
        out = [f"{self.pad(d)}{{ const int64_t cb_i = (int64_t)({base});"]
        for k, v in enumerate(s.dsts):
            out.append(f"{self.pad(d + 1)}{self.var(v.name)} = "
                       f"{self.from_storage(dec.elem, self.element(s.array, f'cb_i + {k}'))};")
        return out + [self.pad(d) + "}"]

    def s_VecStore(self, s: ir.VecStore, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        out = [f"{self.pad(d)}{{ const int64_t cb_i = (int64_t)({self.expr(s.index)});"]
        for k, v in enumerate(s.values):
            out.append(f"{self.pad(d + 1)}{self.element(s.array, f'cb_i + {k}')} = "
                       f"{self.to_storage(dec.elem, self.expr(v))};")
        return out + [self.pad(d) + "}"]

    def s_If(self, s: ir.If, d: int) -> list[str]:
        out = [f"{self.pad(d)}if ({self.expr(s.cond)}) {{", *self.stmts(s.body, d + 1)]
        if s.orelse:
            out += [f"{self.pad(d)}}} else {{", *self.stmts(s.orelse, d + 1)]
        return out + [self.pad(d) + "}"]

    def loop_cond(self, s: ir.For) -> str:
        v, stop = self.var(s.var.name), self.expr(s.stop)
        if isinstance(s.step, ir.Const) and s.step.value < 0:
            return f"{v} > {stop}"
        return f"{v} < {stop}"

    def s_For(self, s: ir.For, d: int) -> list[str]:
        v = self.var(s.var.name)
        head = f"for ({v} = {self.expr(s.start)}; {self.loop_cond(s)}; {v} += {self.expr(s.step)}) {{"
        return [self.pad(d) + head, *self.stmts(s.body, d + 1), self.pad(d) + "}"]

    def s_While(self, s: ir.While, d: int) -> list[str]:
        return [f"{self.pad(d)}while ({self.expr(s.cond)}) {{", *self.stmts(s.body, d + 1), self.pad(d) + "}"]

    def s_Break(self, s, d: int) -> list[str]:
        return [self.pad(d) + "break;"]

    def s_Continue(self, s, d: int) -> list[str]:
        return [self.pad(d) + "continue;"]

    def check_types(self, allowed: tuple = (bool_, i32, u32, i64, f32, f64)) -> None:
        """Refuse types the target lacks, naming the first line that uses one."""
        for s in ir.walk_stmts(self.k.body):
            for e in ir.stmt_exprs(s):
                for x in ir.walk_expr(e):
                    if x.type not in allowed:
                        raise render_error(self.k, s.line, f"{x.type.name} values are not available on the "
                                                           f"{self.target} target")
