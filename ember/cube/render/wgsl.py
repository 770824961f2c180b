"""The WGSL renderer: a kernel as a WebGPU compute shader (run by wgpu-py on Vulkan, Metal, DX12).

WGSL has 32-bit types only (no i64, f64) and no byte or 16-bit storage, so:

* array parameters are storage buffers; arrays of f16, bf16 and bool are bound as ``array<u32>``
  (two halves or four bytes per word). Writes to them, and every access to an array that a
  kernel uses atomically, go through atomic operations on the word, so neighbouring elements
  written by different threads don't race;
* scalar parameters, array extents and the grid go in one uniform buffer (``cb_p``);
* the grid is linearised: the runtime dispatches as many workgroups as the grid has blocks (folded
  into y when more than 65535), and the shader recovers ``block_idx`` from the workgroup's index;
* f16 rounding, erf, expm1, log1p, isnan and the NaN-propagating min/max are written out, so results
  match the other targets where the driver keeps IEEE semantics (lavapipe does; WGSL lets GPUs
  assume there are no NaNs or infinities);
* barriers are ``storageBarrier(); workgroupBarrier();`` (CUDA's ``__syncthreads`` orders global
  memory too).

Warp operations are not supported on this target yet.
"""

from __future__ import annotations

import math
import struct

from .. import ir
from ..types import Scalar, bool_, f32, i32, u32
from .base import CFamily, render_error

_ERFC = (4.32123223e-02, -2.34819719e-01, 4.93882532e-01, -4.55201807e-01, 1.32345902e-01, -5.92899674e-02,
         9.34852292e-02, 1.75312032e-01, 2.46884947e-01, 2.82093738e-01, 2.82094795e-01)
_WGSL_MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
              "tan": "tan", "cosh": "cosh", "acosh": "acosh", "floor": "floor", "ceil": "ceil",
              "trunc": "trunc", "round": "round", "atan2": "atan2", "fma": "fma", "rsqrt": "inverseSqrt"}
_HELPERS = {
    "isnan": "fn cb_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
    "isinf": "fn cb_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }",
    "isfinite": "fn cb_isfinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u; }",
    "expm1": "fn cb_expm1(x: f32) -> f32 { if (abs(x) < 0.5f) { var s = 1.0f / 362880.0f; "
             "s = s * x + 1.0f / 40320.0f; s = s * x + 1.0f / 5040.0f; s = s * x + 1.0f / 720.0f; "
             "s = s * x + 1.0f / 120.0f; s = s * x + 1.0f / 24.0f; s = s * x + 1.0f / 6.0f; s = s * x + 0.5f; "
             "return x + x * x * s; } return exp(x) - 1.0f; }",
    "log1p": "fn cb_log1p(x: f32) -> f32 { if (abs(x) < 0.5f) { let z = x / (2.0f + x); let z2 = z * z; "
             "var s = 1.0f / 13.0f; s = s * z2 + 1.0f / 11.0f; s = s * z2 + 1.0f / 9.0f; s = s * z2 + 1.0f / 7.0f; "
             "s = s * z2 + 0.2f; s = s * z2 + 1.0f / 3.0f; return 2.0f * (z + z * z2 * s); } return log(1.0f + x); }",
    # small arguments by series (drivers' hyperbolic functions lose relative accuracy near 0)
    "sinh": "fn cb_sinh(x: f32) -> f32 { if (abs(x) < 0.5f) { let x2 = x * x; var s = 1.0f / 362880.0f; "
            "s = s * x2 + 1.0f / 5040.0f; s = s * x2 + 1.0f / 120.0f; s = s * x2 + 1.0f / 6.0f; "
            "return x + x * x2 * s; } return sinh(x); }",
    "tanh": "fn cb_tanh(x: f32) -> f32 { if (abs(x) < 0.5f) { let e = cb_expm1(2.0f * x); return e / (e + 2.0f); } "
            "return tanh(x); }",
    "asinh": "fn cb_asinh(x: f32) -> f32 { if (abs(x) < 0.5f) { return cb_log1p(x + x * x / (1.0f + "
             "sqrt(1.0f + x * x))); } return asinh(x); }",
    "atanh": "fn cb_atanh(x: f32) -> f32 { if (abs(x) < 0.5f) { return 0.5f * cb_log1p(2.0f * x / (1.0f - x)); } "
             "return atanh(x); }",
    # atan, asin and acos with f32 accuracy (WGSL allows implementations thousands of ulp)
    "atan": "fn cb_atan(x: f32) -> f32 { var a = abs(x); var base = 0.0f; var inv = false; "
            "if (a > 1.0f) { a = 1.0f / a; inv = true; } "
            "if (a > 0.26794919f) { a = (a * 1.7320508f - 1.0f) / (a + 1.7320508f); base = 0.52359878f; } "
            "let a2 = a * a; var s = -1.0f / 11.0f; s = s * a2 + 1.0f / 9.0f; s = s * a2 - 1.0f / 7.0f; "
            "s = s * a2 + 0.2f; s = s * a2 - 1.0f / 3.0f; var r = base + a + a * a2 * s; "
            "if (inv) { r = 1.5707964f - r; } if (cb_isnan(x)) { return x; } return select(r, -r, x < 0.0f); }",
    "asin": "fn cb_asin(x: f32) -> f32 { return cb_atan(x / sqrt((1.0f - x) * (1.0f + x))); }",
    "acos": "fn cb_acos(x: f32) -> f32 { return 2.0f * cb_atan(sqrt((1.0f - x) / (1.0f + x))); }",
    "log10": "fn cb_log10(x: f32) -> f32 { return log2(x) * 0.30102999566398120f; }",
    "erfc": "fn cb_erfc(x: f32) -> f32 { let a = abs(x); let t = 1.0f / (1.0f + 0.5f * a); var p = 0.0f; "
            + "".join(f"p = p * t + {c!r}f; " for c in _ERFC)
            + "let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u); "
              "if (cb_isnan(x)) { return x; } if (cb_isinf(a)) { return select(2.0f, 0.0f, x > 0.0f); } "
              "let r = p * t * exp(-ah * ah) * exp(-(a - ah) * (a + ah)); return select(2.0f - r, r, x >= 0.0f); }",
    "erf": "fn cb_erf(x: f32) -> f32 { let x2 = x * x; if (abs(x) < 0.5f) { var s = 1.0f / 9360.0f; "
           "s = s * x2 - 1.0f / 1320.0f; s = s * x2 + 1.0f / 216.0f; s = s * x2 - 1.0f / 42.0f; "
           "s = s * x2 + 0.1f; s = s * x2 - 1.0f / 3.0f; s = s * x2 + 1.0f; return 1.1283791670955126f * x * s; } "
           "if (cb_isnan(x)) { return x; } let c = cb_erfc(abs(x)); return select(c - 1.0f, 1.0f - c, x >= 0.0f); }",
    "hypot": "fn cb_hypot(x: f32, y: f32) -> f32 { let a = abs(x); let b = abs(y); if (cb_isinf(a) || cb_isinf(b)) "
             "{ return bitcast<f32>(0x7f800000u); } let m = max(a, b); if (m == 0.0f || cb_isnan(m)) { return a + b; } "
             "let p = a / m; let q = b / m; return m * sqrt(p * p + q * q); }",
    "copysign": "fn cb_copysign(x: f32, y: f32) -> f32 { return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | "
                "(bitcast<u32>(y) & 0x80000000u)); }",
    "fmod": "fn cb_fmod(x: f32, y: f32) -> f32 { if (y == 0.0f || cb_isinf(x)) { return bitcast<f32>(0x7fc00000u); } "
            "if (cb_isinf(y)) { return x; } let r = x - trunc(x / y) * y; return select(r, cb_copysign(0.0f, x), "
            "r == 0.0f); }",
    "fmin": "fn cb_fmin(a: f32, b: f32) -> f32 { if (cb_isnan(a)) { return b; } if (cb_isnan(b)) { return a; } "
            "return select(b, a, a < b); }",
    "fmax": "fn cb_fmax(a: f32, b: f32) -> f32 { if (cb_isnan(a)) { return b; } if (cb_isnan(b)) { return a; } "
            "return select(b, a, a > b); }",
    "pow": "fn cb_pow(x: f32, y: f32) -> f32 { if (y == 0.0f) { return 1.0f; } if (x < 0.0f && trunc(y) == y) { "
           "let r = pow(-x, y); return select(r, -r, (abs(y) % 2.0f) == 1.0f); } if (x == 0.0f) { "
           "return select(0.0f, bitcast<f32>(0x7f800000u), y < 0.0f); } return pow(x, y); }",
    "h2f": "fn cb_h2f(h: u32) -> f32 { return unpack2x16float(h).x; }",
    # f32 -> f16 bits, rounding to nearest even (pack2x16float may round either way)
    "f2h": "fn cb_f2h(x: f32) -> u32 { let b = bitcast<u32>(x); let s = (b >> 16u) & 0x8000u; var a = b & 0x7fffffffu; "
           "if (a > 0x7f800000u) { return s | 0x7e00u | ((a >> 13u) & 0x3ffu); } "
           "if (a >= 0x477ff000u) { return s | 0x7c00u; } "
           "if (a < 0x38800000u) { return s | u32(round(bitcast<f32>(a) * 16777216.0f)); } "
           "a = a + 0xfffu + ((a >> 13u) & 1u); return s | ((a - 0x38000000u) >> 13u); }",
    "b2f": "fn cb_b2f(h: u32) -> f32 { return bitcast<f32>(h << 16u); }",
    "f2b": "fn cb_f2b(x: f32) -> u32 { var b = bitcast<u32>(x); if ((b & 0x7fffffffu) > 0x7f800000u) { "
           "return (b >> 16u) | 0x40u; } b = b + 0x7fffu + ((b >> 16u) & 1u); return b >> 16u; }",
}
_DEPS = {"tanh": ("expm1",), "asinh": ("log1p",), "atanh": ("log1p",), "erfc": ("isnan", "isinf"), "atan": ("isnan",),
         "asin": ("atan",), "acos": ("atan",), "erf": ("erfc", "isnan"),
         "hypot": ("isinf", "isnan"), "fmod": ("isinf", "copysign"), "fmin": ("isnan",), "fmax": ("isnan",)}
_WGSL_TYPE = {"bool": "bool", "i32": "i32", "u32": "u32", "f32": "f32"}


class WgslRenderer(CFamily):
    target = "wgsl"

    def __init__(self, kernel: ir.Kernel, all_writable: bool = False):
        super().__init__(kernel)
        self.used: dict = {}  # helper name -> source, in first-use order
        self.all_writable = all_writable  # for launches that pass one buffer as several arguments

    # ---- types and values -----------------------------------------------------------------------
    def type_name(self, t: Scalar) -> str:
        name = _WGSL_TYPE.get(t.name)
        if name is None:
            raise render_error(self.k, self.line, f"{t.name} values are not available on the wgsl target "
                                                  "(WGSL has 32-bit types only)")
        return name

    def literal(self, v, t: Scalar) -> str:
        if t is bool_:
            return "true" if v else "false"
        if t is i32:
            return f"{v}i" if v != -(2 ** 31) else "(-2147483647i - 1i)"
        if t is u32:
            return f"{v}u"
        if t is f32:
            if math.isnan(v) or math.isinf(v):
                return f"bitcast<f32>(0x{struct.unpack('<I', struct.pack('<f', v))[0]:08x}u)"
            return super().literal(v, t)
        self.type_name(t)  # raises
        return ""

    def use(self, name: str) -> str:
        for dep in _DEPS.get(name, ()):
            self.use(dep)
        if name not in self.used:
            self.used[name] = _HELPERS[name]
        return f"cb_{name}"

    def special(self, e: ir.Special) -> str:
        return {"thread_idx": f"i32(cb_lid.{'xyz'[e.axis]})", "block_idx": f"cb_b{'xyz'[e.axis]}",
                "grid_dim": f"cb_p.cb_g{'xyz'[e.axis]}"}[e.what] if e.what in ("thread_idx", "block_idx", "grid_dim") \
            else self._no_warps()

    def _no_warps(self):
        raise render_error(self.k, self.line, "warp operations are not supported on the wgsl target yet")

    def dim(self, e: ir.Dim) -> str:
        return f"cb_p.cb_{e.array}_d{e.axis}"

    def var(self, name: str) -> str:
        if name in self.scalar_params:
            return f"cb_p.{name}" if self.k_params[name] is not bool_ else f"(cb_p.{name} != 0u)"
        return name

    # ---- expressions ----------------------------------------------------------------------------
    def x_Unary(self, e: ir.Unary) -> str:
        a = self.expr(e.a)
        return {"neg": f"(-{a})", "not": f"(!{a})", "bitnot": f"(~{a})"}[e.op]

    def x_Binary(self, e: ir.Binary) -> str:
        a, b, t, op = self.expr(e.a), self.expr(e.b), e.type, e.op
        simple = {"add": "+", "sub": "-", "mul": "*", "div": "/", "and": "&&", "or": "||", "bitand": "&",
                  "bitor": "|", "bitxor": "^"}
        if op in simple:
            return f"({a} {simple[op]} {b})"
        if op in ("floordiv", "mod", "min", "max"):
            if t.kind == "u" and op in ("floordiv", "mod"):
                return f"({a} {'/' if op == 'floordiv' else '%'} {b})"
            return f"{self.helper(op, t)}({a}, {b})"
        if op in ("shl", "shr"):
            return f"({a} {'<<' if op == 'shl' else '>>'} u32({b}))"
        raise NotImplementedError(op)

    def x_Cast(self, e: ir.Cast) -> str:
        return f"{self.type_name(e.type)}({self.expr(e.a)})"

    def x_Select(self, e: ir.Select) -> str:
        return f"select({self.expr(e.b)}, {self.expr(e.a)}, {self.expr(e.cond)})"

    def x_Call(self, e: ir.Call) -> str:
        args = [self.expr(a) for a in e.args]
        fn, t = e.fn, e.args[0].type
        self.type_name(t)
        if fn in ("min", "max"):
            if t.is_float:
                return f"{self.helper(fn, t)}({args[0]}, {args[1]})"
            return f"{fn}({args[0]}, {args[1]})"
        if fn == "abs":
            return f"abs({args[0]})"
        if fn == "sigmoid":
            return f"(1.0f / (1.0f + exp(-{args[0]})))"
        if fn in _WGSL_MATH:
            return f"{_WGSL_MATH[fn]}({', '.join(args)})"
        return f"{self.use(fn)}({', '.join(args)})"

    def x_Load(self, e: ir.Load) -> str:
        if e.array in self.scalarized:
            v = f"{e.array}_{e.index.value}"
            return f"select({self.expr(e.other)}, {v}, {self.expr(e.mask)})" if e.mask is not None else v
        v = self.load(e.array, self.expr(e.index))
        if e.mask is not None:
            return f"select({self.expr(e.other)}, {v}, {self.expr(e.mask)})"
        return v

    # ---- memory ---------------------------------------------------------------------------------
    def packed(self, dec: ir.ArrayDecl) -> int:
        """Elements per 32-bit word of a global array (1 unless bool/f16/bf16)."""
        if dec.space != "global":
            return 1
        return {"f16": 2, "bf16": 2, "bool": 4}.get(dec.elem.name, 1)

    def is_atomic(self, dec: ir.ArrayDecl) -> bool:
        return dec.atomic or (self.packed(dec) > 1 and dec.written)

    def load(self, name: str, idx: str) -> str:
        dec = self.k.arrays[name]
        per = self.packed(dec)
        if per > 1:
            word = f"{name}[({idx}) >> {per.bit_length() - 1}u]"
            if self.is_atomic(dec):
                word = f"atomicLoad(&{word})"
            bits = 16 if per == 2 else 8
            val = f"(({word} >> ((u32({idx}) & {per - 1}u) * {bits}u)) & 0x{(1 << bits) - 1:x}u)"
            if dec.elem is bool_:
                return f"({val} != 0u)"
            return f"{self.use('h2f' if dec.elem.name == 'f16' else 'b2f')}({val})"
        if dec.space != "global" and dec.elem.is_storage_only:
            return f"{name}[{idx}]"  # shared/local 16-bit arrays hold f32 values already rounded
        if dec.atomic:
            v = f"atomicLoad(&{name}[{idx}])"
            return f"bitcast<f32>({v})" if dec.elem is f32 else v
        return f"{name}[{idx}]"

    def store(self, name: str, idx: str, value: str, d: int) -> list[str]:
        dec = self.k.arrays[name]
        p = self.pad(d)
        per = self.packed(dec)
        if per > 1:
            bits = 16 if per == 2 else 8
            if dec.elem is bool_:
                v = f"select(0u, 1u, {value})"
            else:
                v = f"{self.use('f2h' if dec.elem.name == 'f16' else 'f2b')}({value})"
            return [f"{p}{{ let cb_i = {idx}; let cb_s = (u32(cb_i) & {per - 1}u) * {bits}u; "
                    f"let cb_w = &{name}[cb_i >> {per.bit_length() - 1}u];",
                    f"{p}    atomicAnd(cb_w, ~(0x{(1 << bits) - 1:x}u << cb_s)); atomicOr(cb_w, {v} << cb_s); }}"]
        if dec.elem.is_storage_only:  # a shared/local array: keep the 16-bit rounding of a store
            conv = ("h2f", "f2h") if dec.elem.name == "f16" else ("b2f", "f2b")
            value = f"{self.use(conv[0])}({self.use(conv[1])}({value}))"
        if dec.atomic:
            v = f"bitcast<u32>({value})" if dec.elem is f32 else value
            return [f"{p}atomicStore(&{name}[{idx}], {v});"]
        return [f"{p}{name}[{idx}] = {value};"]

    def s_Store(self, s: ir.Store, d: int) -> list[str]:
        if s.array in self.scalarized:
            lines = [f"{self.pad(d + (s.mask is not None))}{s.array}_{s.index.value} = {self.expr(s.value)};"]
        else:
            lines = self.store(s.array, self.expr(s.index), self.expr(s.value), d + (s.mask is not None))
        if s.mask is not None:
            return [f"{self.pad(d)}if ({self.expr(s.mask)}) {{", *lines, self.pad(d) + "}"]
        return lines

    def s_VecLoad(self, s: ir.VecLoad, d: int) -> list[str]:
        p = self.pad(d)
        if s.array in self.vec_shared:
            out = [f"{p}{{ let cb_v = {s.array}[({self.expr(s.index)}) / 4];"]
            out += [f"{p}    {self.var(v.name)} = cb_v.{'xyzw'[k]};" for k, v in enumerate(s.dsts)]
            return out + [p + "}"]
        out = [f"{p}{{ let cb_i = {self.expr(s.index)};"]
        for k, v in enumerate(s.dsts):
            out.append(f"{p}    {self.var(v.name)} = {self.load(s.array, f'cb_i + {k}')};")
        return out + [p + "}"]

    def s_VecStore(self, s: ir.VecStore, d: int) -> list[str]:
        p = self.pad(d)
        if s.array in self.vec_shared:
            t = self.type_name(self.k.arrays[s.array].elem)
            vals = ", ".join(self.expr(v) for v in s.values)
            return [f"{p}{s.array}[({self.expr(s.index)}) / 4] = vec4<{t}>({vals});"]
        out = [f"{p}{{ let cb_j = {self.expr(s.index)};"]
        for k, v in enumerate(s.values):
            out += self.store(s.array, f"cb_j + {k}", self.expr(v), d + 1)
        return out + [p + "}"]

    def s_Atomic(self, s: ir.Atomic, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        p = self.pad(d)
        ptr = f"&{s.array}[{self.expr(s.index)}]"
        v = self.expr(s.value)
        dst = f"{self.var(s.dst.name)} = " if s.dst is not None else "_ = "
        if dec.elem is not f32:
            fn = {"add": "atomicAdd", "sub": "atomicSub", "max": "atomicMax", "min": "atomicMin", "and": "atomicAnd",
                  "or": "atomicOr", "xor": "atomicXor", "xchg": "atomicExchange"}.get(s.op)
            if fn is not None:
                return [f"{p}{dst}{fn}({ptr}, {v});"]
            return [f"{p}loop {{ let cb_r = atomicCompareExchangeWeak({ptr}, {self.expr(s.compare)}, {v}); "
                    f"if (cb_r.exchanged || cb_r.old_value != {self.expr(s.compare)}) {{ "
                    f"{dst if s.dst is not None else ''}{'cb_r.old_value; ' if s.dst is not None else ''}break; }} }}"]
        if s.op == "xchg":
            return [f"{p}{dst}bitcast<f32>(atomicExchange({ptr}, bitcast<u32>({v})));"]
        if s.op == "cas":
            c = self.expr(s.compare)
            return [f"{p}loop {{ let cb_r = atomicCompareExchangeWeak({ptr}, bitcast<u32>({c}), bitcast<u32>({v})); "
                    f"if (cb_r.exchanged || cb_r.old_value != bitcast<u32>({c})) {{ "
                    f"{dst if s.dst is not None else ''}"
                    f"{'bitcast<f32>(cb_r.old_value); ' if s.dst is not None else ''}break; }} }}"]
        comb = {"add": "cb_o + cb_v", "sub": "cb_o - cb_v", "max": f"{self.helper('max', f32)}(cb_o, cb_v)",
                "min": f"{self.helper('min', f32)}(cb_o, cb_v)"}[s.op]
        return [f"{p}{{ let cb_v = {v}; var cb_old = atomicLoad({ptr});",
                f"{p}    loop {{ let cb_o = bitcast<f32>(cb_old); let cb_r = atomicCompareExchangeWeak({ptr}, cb_old, "
                f"bitcast<u32>({comb})); if (cb_r.exchanged) {{ break; }} cb_old = cb_r.old_value; }}",
                f"{p}    {dst if s.dst is not None else '_ = '}bitcast<f32>(cb_old); }}"]

    # ---- helpers in WGSL syntax -----------------------------------------------------------------
    def helper_source(self, op: str, t: Scalar, name: str) -> str:
        T = self.type_name(t)
        zero, one = self.literal(0, t), self.literal(1, t)
        # the remainder as a - q * b: NVIDIA's Vulkan compiler got i32 % wrong for negative operands
        if op == "floordiv" and t.is_int:
            return (f"fn {name}(a: {T}, b: {T}) -> {T} {{ let q = a / b; let r = a - q * b; "
                    f"return q - select({zero}, {one}, (r != {zero}) && ((r < {zero}) != (b < {zero}))); }}")
        if op == "mod" and t.is_int:
            return (f"fn {name}(a: {T}, b: {T}) -> {T} {{ let r = a - (a / b) * b; "
                    f"return r + select({zero}, b, (r != {zero}) && ((r < {zero}) != (b < {zero}))); }}")
        if op in ("floordiv", "mod"):
            fm = self.use("fmod")
            cs = self.use("copysign")
            if op == "mod":
                return (f"fn {name}(a: f32, b: f32) -> f32 {{ var m = {fm}(a, b); if ({self.use('isnan')}(m)) "
                        f"{{ return m; }} if (m != 0.0f) {{ "
                        f"if ((b < 0.0f) != (m < 0.0f)) {{ m = m + b; }} }} else {{ m = {cs}(0.0f, b); }} return m; }}")
            return (f"fn {name}(a: f32, b: f32) -> f32 {{ if (b == 0.0f) {{ return a / b; }} let m = {fm}(a, b); "
                    f"var d = (a - m) / b; if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) {{ d = d - 1.0f; }} "
                    f"if (d == 0.0f) {{ return {cs}(0.0f, a / b); }} var f = floor(d); "
                    f"if (d - f > 0.5f) {{ f = f + 1.0f; }} return f; }}")
        if op in ("min", "max"):
            cmp = ">" if op == "max" else "<"
            if t.is_float:  # NaN tests by bits: WGSL compilers may treat != as an ordered comparison
                nan = self.use("isnan")
                return f"fn {name}(a: f32, b: f32) -> f32 {{ return select(b, a, a {cmp} b || {nan}(a)); }}"
            return f"fn {name}(a: {T}, b: {T}) -> {T} {{ return {op}(a, b); }}"
        raise NotImplementedError(op)

    # ---- statements -----------------------------------------------------------------------------
    def s_For(self, s: ir.For, d: int) -> list[str]:
        v = self.var(s.var.name)
        head = f"for ({v} = {self.expr(s.start)}; {self.loop_cond(s)}; {v} = {v} + {self.expr(s.step)}) {{"
        return [self.pad(d) + head, *self.stmts(s.body, d + 1), self.pad(d) + "}"]

    def s_Barrier(self, s, d: int) -> list[str]:
        return [self.pad(d) + "storageBarrier(); workgroupBarrier();"]

    def s_Return(self, s, d: int) -> list[str]:
        return [self.pad(d) + "return;"]

    def s_Collective(self, s, d: int) -> list[str]:
        self.line = s.line
        self._no_warps()

    # ---- the whole shader -----------------------------------------------------------------------
    def _plan_arrays(self) -> None:
        """Local arrays indexed only by constants become separate variables (registers for sure); shared
        arrays accessed only as vec4 become arrays of vec4 (one wide load instead of four)."""
        k = self.k
        const_only = {n for n, d in k.arrays.items() if d.space == "local" and math.prod(d.shape) <= 256
                      and not d.elem.is_storage_only}
        vec_only = {n for n, d in k.arrays.items() if d.space == "shared" and not d.atomic and d.elem in (f32, i32, u32)
                    and math.prod(d.shape) % 4 == 0}
        for s in ir.walk_stmts(k.body):
            if isinstance(s, ir.Store | ir.Atomic):
                vec_only.discard(s.array)
                if not isinstance(s.index, ir.Const):
                    const_only.discard(s.array)
            elif isinstance(s, ir.VecLoad | ir.VecStore):
                n = len(s.dsts) if isinstance(s, ir.VecLoad) else len(s.values)
                if n != 4:
                    vec_only.discard(s.array)
            for e in ir.stmt_exprs(s):
                for x in ir.walk_expr(e):
                    if isinstance(x, ir.Load):
                        vec_only.discard(x.array)
                        if not isinstance(x.index, ir.Const):
                            const_only.discard(x.array)
        self.scalarized, self.vec_shared = const_only, vec_only

    def render(self) -> str:
        k = self.k
        self._plan_arrays()
        self.scalar_params = {p.name for p in k.params if p.kind == "scalar"}
        self.k_params = {p.name: p.type for p in k.params}
        for prm in k.params:
            if prm.kind == "scalar":
                self.line = next(iter(k.source_lines), 0)
                self.type_name(prm.type)
        body = self.stmts(k.body, 1)
        lines = []
        fields = []
        binding = 0
        for prm in k.params:
            if prm.kind == "array":
                dec = k.arrays[prm.name]
                if dec.elem.name in ("i64", "f64"):
                    raise render_error(k, 0, f"array '{prm.name}' holds {dec.elem.name}, which the wgsl target lacks")
                if self.packed(dec) > 1:
                    elem = "atomic<u32>" if self.is_atomic(dec) else "u32"
                elif dec.atomic:
                    elem = "atomic<u32>" if dec.elem is f32 else f"atomic<{self.type_name(dec.elem)}>"
                else:
                    elem = self.type_name(dec.elem)
                access = "read_write" if dec.written or self.all_writable else "read"
                lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {prm.name}: array<{elem}>;")
                binding += 1
                fields += [f"cb_{prm.name}_d{ax}: i32" for ax in range(prm.ndim)]
            else:
                fields.append(f"{prm.name}: {'u32' if prm.type is bool_ else self.type_name(prm.type)}")
        fields += ["cb_gx: i32", "cb_gy: i32", "cb_gz: i32", "cb_pad: i32"]
        lines.append("struct CbParams { " + ", ".join(fields) + " }")
        lines.append(f"@group(0) @binding({binding}) var<uniform> cb_p: CbParams;")
        for dec in k.arrays.values():
            if dec.space == "shared":
                elem = self.type_name(dec.elem.compute) if dec.elem.is_storage_only else self.type_name(dec.elem)
                if dec.atomic:
                    elem = f"atomic<{'u32' if dec.elem is f32 else elem}>"
                size = math.prod(dec.shape)
                if dec.name in self.vec_shared:
                    elem, size = f"vec4<{elem}>", size // 4
                lines.append(f"var<workgroup> {dec.name}: array<{elem}, {size}>;")
        decls = []
        for dec in k.arrays.values():
            if dec.space == "local":
                t = self.type_name(dec.elem.compute)
                if dec.name in self.scalarized:
                    decls += [f"    var {dec.name}_{j}: {t};" for j in range(math.prod(dec.shape))]
                else:
                    decls.append(f"    var {dec.name}: array<{t}, {math.prod(dec.shape)}>;")
        for name, t in k.variables.items():
            decls.append(f"    var {name}: {self.type_name(t)} = {self.literal(False if t is bool_ else 0, t)};")
        bx, by, bz = k.block
        entry = [f"@compute @workgroup_size({bx}, {by}, {bz})",
                 "fn main(@builtin(local_invocation_id) cb_lid: vec3<u32>, @builtin(workgroup_id) cb_wid: vec3<u32>, "
                 "@builtin(num_workgroups) cb_nwg: vec3<u32>) {",
                 "    let cb_flat = cb_wid.x + cb_wid.y * cb_nwg.x;",
                 "    let cb_g = vec3<u32>(u32(cb_p.cb_gx), u32(cb_p.cb_gy), u32(cb_p.cb_gz));",
                 "    if (cb_flat >= cb_g.x * cb_g.y * cb_g.z) { return; }",
                 "    let cb_bx = i32(cb_flat % cb_g.x);",
                 "    let cb_by = i32((cb_flat / cb_g.x) % cb_g.y);",
                 "    let cb_bz = i32(cb_flat / (cb_g.x * cb_g.y));",
                 *decls, *body, "}"]
        helpers = list(self.used.values()) + list(self.helpers.values())
        return "\n".join([f"// cube kernel '{k.name}' from {k.filename}, block {k.block}", *lines, *helpers,
                          *entry]) + "\n"


def render(kernel: ir.Kernel, plan=None, all_writable: bool = False) -> str:
    """WGSL source for ``kernel`` (entry point ``main``); ``all_writable`` binds every array read-write
    (WebGPU forbids binding one buffer read-only and read-write in one dispatch)."""
    return WgslRenderer(kernel, all_writable).render()
