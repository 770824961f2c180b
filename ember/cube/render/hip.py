"""The HIP renderer (AMD GPUs through ROCm): CUDA C with AMD's differences.

* 16-bit floats convert through clang's ``_Float16`` (no PTX);
* warps are 64 lanes wide on CDNA GPUs (MI100-MI300); shuffles are ``__shfl_xor`` and friends, without
  masks; ``cube.warp_size`` is 64 and lane ids count to 63.

No runtime ships with ember for HIP yet (hiprtc through a Python binding would be the route), and
no HIP compiler was available where this was written: the output is checked against the CUDA
path's host-compiler stubs in the tests but has not run on an AMD GPU.
"""

from __future__ import annotations

from .. import ir
from .cuda import PRELUDE, CudaRenderer

WARP = 64
F16 = r"""__device__ __forceinline__ float cb_h2f(uint16_t h) {
    _Float16 f; __builtin_memcpy(&f, &h, 2); return (float)f; }
__device__ __forceinline__ uint16_t cb_f2h(float x) {
    _Float16 f = (_Float16)x; uint16_t h; __builtin_memcpy(&h, &f, 2); return h; }
"""


class HipRenderer(CudaRenderer):
    target = "hip"

    def special(self, e: ir.Special) -> str:
        if e.what == "lane":
            return f"({self.linear_tid()} & {WARP - 1})"
        if e.what == "warp_size":
            return str(WARP)
        return super().special(e)

    def hinted_load(self, dec, n: int) -> None:
        return None  # the eviction hints are PTX: AMD's loads stay plain

    def s_Atomic(self, s: ir.Atomic, d: int) -> list[str]:
        dec = self.k.arrays[s.array]
        if dec.elem.name == "i64" and s.op in ("max", "min"):  # HIP has no signed 64-bit atomicMax/Min
            call = f"{self.atomic_loop(s.op, dec.elem)}(&{s.array}[{self.expr(s.index)}], {self.expr(s.value)})"
            dst = f"{self.var(s.dst.name)} = " if s.dst is not None else ""
            return [f"{self.pad(d)}{dst}{call};"]
        return super().s_Atomic(s, d)

    def s_Collective(self, s: ir.Collective, d: int) -> list[str]:
        p = self.pad(d)
        v, dst = self.var(s.value.name), self.var(s.dst.name)
        t = s.value.type
        T = self.type_name(t)
        if s.op in ("sum", "max", "min"):
            comb = "cb_r + cb_o" if s.op == "sum" else f"{self.helper(s.op, t)}(cb_r, cb_o)"
            return [f"{p}{{ {T} cb_r = {v};",
                    f"{p}    for (int cb_k = {WARP // 2}; cb_k > 0; cb_k >>= 1) {{ {T} cb_o = __shfl_xor(cb_r, cb_k); "
                    f"cb_r = {comb}; }}",
                    f"{p}    {dst} = cb_r; }}"]
        fn = {"shfl": "__shfl", "shfl_down": "__shfl_down", "shfl_up": "__shfl_up", "shfl_xor": "__shfl_xor"}[s.op]
        cast = "(int)" if t.name == "bool" else ""
        return [f"{p}{dst} = ({T}){fn}({cast}{v}, {self.expr(s.arg)});"]

    def render(self) -> str:
        src = super().render()
        # hipcc and hiprtc both provide this header (fixed-width types, __forceinline__, built-ins)
        return src.replace(_cuda_f16(), F16).replace(PRELUDE, "#include <hip/hip_runtime.h>\n", 1)


def _cuda_f16() -> str:
    from .cuda import F16 as CUDA_F16
    return CUDA_F16


def render(kernel: ir.Kernel, plan=None) -> str:
    """HIP C++ source for ``kernel`` (entry point ``cb_kernel``)."""
    return HipRenderer(kernel).render()

