"""The CUDA C renderer: one ``__global__`` function per kernel variant, compiled by NVRTC.

The IR maps directly: ``cube.thread_idx`` is ``threadIdx``, shared arrays are ``__shared__``,
barriers ``__syncthreads()``, warp operations ``__shfl_*_sync`` over the active lanes (reductions
are butterflies, so every lane gets the same value). No headers are included (NVRTC has none by
default): fixed-width types are typedefs and 16-bit floats convert through PTX ``cvt``
instructions (f16) or bit operations (bf16). Vector loads and stores are single ``float4``-style
accesses, so their arrays must be aligned (the runtime checks).

Kernels compile with ``-fmad=false``: ``a * b + c`` rounds twice, as on the C target and in numpy;
``cube.fma`` gives the fused instruction explicitly, and a kernel made with
``cube.kernel(contract=True)`` (Fusion's) lets NVRTC contract products and sums as nvcc does.
"""

from __future__ import annotations

import math
import struct

from .. import ir
from ..types import Scalar, bool_, f32, i64
from .base import CFamily

PRELUDE = r"""typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned short uint16_t;
"""
F16 = r"""__device__ __forceinline__ float cb_h2f(uint16_t h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ uint16_t cb_f2h(float f) {
    uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
"""
BF16 = r"""__device__ __forceinline__ float cb_b2f(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }
__device__ __forceinline__ uint16_t cb_f2b(float x) {
    uint32_t b = __float_as_uint(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}
"""
# the CUDA vector type holding n elements of a storage type, and how to take lane k out of it
_VEC = {("f32", 2): "float2", ("f32", 4): "float4", ("f64", 2): "double2", ("f64", 4): "double4",
        ("i32", 2): "int2", ("i32", 4): "int4", ("u32", 2): "uint2", ("u32", 4): "uint4",
        ("i64", 2): "longlong2", ("i64", 4): "longlong4", ("f16", 2): "uint32_t", ("f16", 4): "uint2",
        ("bf16", 2): "uint32_t", ("bf16", 4): "uint2", ("bool", 2): "uchar2", ("bool", 4): "uchar4"}
# 32-bit element types a hinted load reads: (inline-asm register constraint, PTX type)
_HINT_REG = {"f32": ("f", "f32"), "i32": ("r", "b32"), "u32": ("r", "b32")}
_ATOMIC_NATIVE = {
    ("add", "i32"), ("add", "u32"), ("add", "f32"), ("add", "f64"), ("sub", "i32"), ("sub", "u32"),
    ("max", "i32"), ("max", "u32"), ("min", "i32"), ("min", "u32"), ("and", "i32"), ("and", "u32"),
    ("or", "i32"), ("or", "u32"), ("xor", "i32"), ("xor", "u32"), ("xchg", "i32"), ("xchg", "u32"),
    ("xchg", "f32"), ("cas", "i32"), ("cas", "u32"),
}
_ATOMIC_FN = {"add": "atomicAdd", "sub": "atomicSub", "max": "atomicMax", "min": "atomicMin", "and": "atomicAnd",
              "or": "atomicOr", "xor": "atomicXor", "xchg": "atomicExch", "cas": "atomicCAS"}


class CudaRenderer(CFamily):
    target = "cuda"
    ENTRY = "cb_kernel"

    def helper_qualifier(self) -> str:
        return "__device__ __forceinline__"

    def special(self, e: ir.Special) -> str:
        if e.what in ("thread_idx", "block_idx", "grid_dim"):
            base = {"thread_idx": "threadIdx", "block_idx": "blockIdx", "grid_dim": "gridDim"}[e.what]
            return f"((int32_t){base}.{'xyz'[e.axis]})"
        if e.what == "lane":
            return f"({self.linear_tid()} & 31)"
        if e.what == "warp_size":
            return "32"
        raise NotImplementedError(e.what)

    def linear_tid(self) -> str:
        bx, by, bz = self.k.block
        tid = "(int32_t)threadIdx.x"
        if by > 1:
            tid = f"((int32_t)threadIdx.y * {bx} + {tid})"
        if bz > 1:
            tid = f"((int32_t)threadIdx.z * {bx * by} + {tid})"
        return tid

    def literal(self, v, t: Scalar) -> str:
        if t.is_float and (math.isnan(v) or math.isinf(v)):
            if t is f32:
                bits = struct.unpack("<I", struct.pack("<f", v))[0]
                return f"__int_as_float(0x{bits:08x})"
            bits = struct.unpack("<q", struct.pack("<d", v))[0]
            return f"__longlong_as_double({bits}LL)"
        return super().literal(v, t)

    def x_Call(self, e: ir.Call) -> str:
        if e.fn in ("isnan", "isinf", "isfinite"):
            a = self.expr(e.args[0])
            t = e.args[0].type
            inf = self.literal(math.inf, t)
            absf = "fabsf" if t is f32 else "fabs"
            return {"isnan": f"({a} != {a})", "isinf": f"({absf}({a}) == {inf})",
                    "isfinite": f"({absf}({a}) < {inf})"}[e.fn]
        return super().x_Call(e)

    # ---- memory ---------------------------------------------------------------------------------
    def hinted_load(self, dec, n: int) -> str | None:
        """The helper reading a vector of ``n`` elements of array ``dec`` with the kernel's eviction hint
        (PTX: an L1 priority and an L2 cache policy), or None for a plain load: no hint, an array the kernel
        writes (an asm load is not ordered after the kernel's own stores), not in global memory, or not
        32-bit elements. Only vector loads take it: each is one statement, so one load (a scalar load is an
        expression the renderer may repeat, which an asm load would make several loads)."""
        policy = self.k.eviction
        if not policy or dec.written or dec.space != "global" or dec.elem.name not in _HINT_REG:
            return None
        reg, ptx = _HINT_REG[dec.elem.name]
        ct = _VEC[(dec.elem.name, n)]
        name = f"cb_ld_{policy}_{dec.elem.name}x{n}"
        if name not in self.helpers:
            lanes = [f"v.{c}" for c in "xyzw"[:n]]
            dst = "{" + ", ".join(f"%{k}" for k in range(n)) + "}"
            outs = ", ".join(f'"={reg}"({v})' for v in lanes)
            self.helpers[name] = (
                f"__device__ __forceinline__ {ct} {name}(const {dec.elem.c} *p) {{\n"
                f"    {ct} v; uint64_t pol;\n"
                f'    asm volatile("createpolicy.fractional.L2::{policy}.b64 %0, 1.0;" : "=l"(pol));\n'
                f'    asm volatile("ld.global.L1::{policy}.L2::cache_hint.v{n}.{ptx} {dst}, [%{n}], %{n + 1};"'
                f' : {outs} : "l"(p), "l"(pol));\n'
                f"    return v;\n}}\n")
        return name

    def s_VecLoad(self, s: ir.VecLoad, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        n = len(s.dsts)
        vt = _VEC[(dec.elem.name, n)]
        p = self.pad(d)
        fn = self.hinted_load(dec, n)
        if fn is not None:
            out = [f"{p}{{ const {vt} cb_v = {fn}(&{s.array}[{self.expr(s.index)}]);"]
        else:
            out = [f"{p}{{ const {vt} cb_v = *reinterpret_cast<const {vt} *>(&{s.array}[{self.expr(s.index)}]);"]
        for k, v in enumerate(s.dsts):
            lane = self.from_storage(dec.elem, self._lane("cb_v", dec.elem, n, k))
            out.append(f"{p}    {self.var(v.name)} = {lane};")
        return out + [p + "}"]

    def _lane(self, v: str, elem: Scalar, n: int, k: int) -> str:
        if elem.bits == 16:  # halves packed in 32-bit words
            word = v if n == 2 else f"{v}.{'xy'[k // 2]}"
            return f"(uint16_t)({word} >> {16 * (k % 2)})" if k % 2 else f"(uint16_t)({word} & 0xffffu)"
        return f"{v}.{'xyzw'[k]}"

    def s_VecStore(self, s: ir.VecStore, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        n = len(s.values)
        vt = _VEC[(dec.elem.name, n)]
        vals = [self.to_storage(dec.elem, self.expr(v)) for v in s.values]
        if dec.elem.bits == 16:
            words = [f"((uint32_t){vals[k]} | ((uint32_t){vals[k + 1]} << 16))" for k in range(0, n, 2)]
            init = words[0] if n == 2 else f"make_uint2({words[0]}, {words[1]})"
        else:
            init = f"make_{vt}({', '.join(vals)})"
        return [f"{self.pad(d)}*reinterpret_cast<{vt} *>(&{s.array}[{self.expr(s.index)}]) = {init};"]

    def s_Atomic(self, s: ir.Atomic, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        t = dec.elem
        ptr = f"&{s.array}[{self.expr(s.index)}]"
        v = self.expr(s.value)
        op = s.op
        if (op, t.name) in _ATOMIC_NATIVE:
            args = [ptr] + ([self.expr(s.compare)] if op == "cas" else []) + [v]
            call = f"{_ATOMIC_FN[op]}({', '.join(args)})"
        elif t is i64 and op in ("add", "sub", "and", "or", "xor", "xchg", "cas", "max", "min"):
            if op in ("max", "min"):
                call = f"(int64_t){_ATOMIC_FN[op]}((long long *){ptr}, (long long){v})"
            else:
                u = "(unsigned long long)"
                val = f"{u}(-({v}))" if op == "sub" else f"{u}({v})"
                fn = "atomicAdd" if op == "sub" else _ATOMIC_FN[op]
                args = [f"(unsigned long long *){ptr}"] + ([f"{u}({self.expr(s.compare)})"] if op == "cas" else [])
                call = f"(int64_t){fn}({', '.join(args + [val])})"
        elif t.is_float and op == "sub":
            call = f"atomicAdd({ptr}, -({v}))"
        else:
            call = f"{self.atomic_loop(op, t)}({ptr}, " + (f"{self.expr(s.compare)}, " if op == "cas" else "") + f"{v})"
        if s.dst is not None:
            return [f"{self.pad(d)}{self.var(s.dst.name)} = {call};"]
        return [f"{self.pad(d)}{call};"]

    def atomic_loop(self, op: str, t: Scalar) -> str:
        """A compare-and-swap loop for float max/min/cas/xchg of f64."""
        name = f"cb_atomic_{op}_{t.name}"
        if name in self.helpers:
            return name
        T = t.c
        U = "int" if t is f32 else "unsigned long long"
        to_u = {"f32": "__float_as_int", "f64": "(unsigned long long)__double_as_longlong",
                "i64": "(unsigned long long)"}[t.name]
        from_u = {"f32": "__int_as_float", "f64": "__longlong_as_double", "i64": "(int64_t)"}[t.name]
        if op == "cas":
            body = (f"return {from_u}(atomicCAS(({U} *)p, {to_u}(c), {to_u}(v)));")
            self.helpers[name] = f"__device__ __forceinline__ {T} {name}({T} *p, {T} c, {T} v) {{ {body} }}"
            return name
        if op == "xchg":
            body = f"return {from_u}(atomicExch(({U} *)p, {to_u}(v)));"
        else:
            comb = f"{self.helper(op, t)}(o, v)"
            body = (f"{U} *q = ({U} *)p; {U} ou = *q, as; do {{ as = ou; {T} o = {from_u}(as); "
                    f"ou = atomicCAS(q, as, {to_u}({comb})); }} while (ou != as); return {from_u}(ou);")
        self.helpers[name] = f"__device__ __forceinline__ {T} {name}({T} *p, {T} v) {{ {body} }}"
        return name

    # ---- control --------------------------------------------------------------------------------
    def s_Barrier(self, s, d: int) -> list[str]:
        return [self.pad(d) + "__syncthreads();"]

    def s_Return(self, s, d: int) -> list[str]:
        return [self.pad(d) + "return;"]

    def s_Collective(self, s: ir.Collective, d: int) -> list[str]:
        p = self.pad(d)
        v, dst = self.var(s.value.name), self.var(s.dst.name)
        t = s.value.type
        cast = "(int)" if t is bool_ else ""
        out = [f"{p}{{ const unsigned cb_m = __activemask();"]
        if s.op in ("sum", "max", "min"):
            comb = "cb_r + cb_o" if s.op == "sum" else f"{self.helper(s.op, t)}(cb_r, cb_o)"
            out += [f"{p}    {self.type_name(t)} cb_r = {v};",
                    f"{p}    for (int cb_k = 16; cb_k > 0; cb_k >>= 1) {{ {self.type_name(t)} cb_o = "
                    f"__shfl_xor_sync(cb_m, cb_r, cb_k); cb_r = {comb}; }}",
                    f"{p}    {dst} = cb_r;"]
        else:
            fn = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync", "shfl_up": "__shfl_up_sync",
                  "shfl_xor": "__shfl_xor_sync"}[s.op]
            out.append(f"{p}    {dst} = ({self.type_name(t)}){fn}(cb_m, {cast}{v}, {self.expr(s.arg)});")
        return out + [p + "}"]

    # ---- the whole source -----------------------------------------------------------------------
    def render(self) -> str:
        k = self.k
        body = self.stmts(k.body, 1)
        params = []
        for prm in k.params:
            if prm.kind == "array":
                dec = k.arrays[prm.name]
                const = "" if dec.written else "const "
                params.append(f"{const}{prm.type.c} *{prm.name}")
                params += [f"int32_t cb_{prm.name}_d{ax}" for ax in range(prm.ndim)]
            else:
                params.append(f"{self.type_name(prm.type)} {prm.name}")
        decls = []
        for dec in k.arrays.values():
            if dec.space == "global":
                continue
            size = math.prod(dec.shape)
            if dec.space == "shared":
                decls.append(f"    __shared__ {dec.elem.c} {dec.name}[{size}];")
            elif dec.space == "local":
                decls.append(f"    {dec.elem.c} {dec.name}[{size}];")
        for name, t in k.variables.items():
            decls.append(f"    {self.type_name(t)} {name} = {self.literal(False if t is bool_ else 0, t)};")
        nt = math.prod(k.block)
        head = [PRELUDE]
        elems = {d.elem.name for d in k.arrays.values()}
        if "f16" in elems:
            head.append(F16)
        if "bf16" in elems:
            head.append(BF16)
        head += list(self.helpers.values())
        sig = f'extern "C" __global__ void __launch_bounds__({nt}) {self.ENTRY}({", ".join(params)})'
        return "\n".join(head + [f"/* cube kernel '{k.name}' from {k.filename}, block {k.block} */", sig + " {",
                                 *decls, *body, "}"]) + "\n"

    def type_name(self, t: Scalar) -> str:
        return "bool" if t is bool_ else t.c


def render(kernel: ir.Kernel, plan=None) -> str:
    """CUDA C source for ``kernel`` (entry point ``cb_kernel``)."""
    return CudaRenderer(kernel).render()

