"""Fusion: the backend decorator that records ops lazily and runs them as fused ember.cube kernels.

``Fusion(inner)`` wraps a backend whose handles cube can launch on (numpy arrays for the C target,
CuPy arrays for CUDA, the Wgpu backend's storages for WGSL). The ``"cpu"`` device is
``Autodiff(Fusion(CpuC()))`` with the target's cost model (ops on small tensors in memory run at once)
when a C compiler works, else the numpy stack (``EMBER_DEFAULT_FUSION=0``: the numpy stack); with
``EMBER_DEFAULT_FUSION=1``, ``"cuda"`` and ``"wgpu"`` are fused the same way. The ``"cpu:fused"`` device, which
fuses every op it can, is
``Autodiff(Fusion(CpuC()))`` when the compiled CPU backend and a C compiler are available, else
``Autodiff(Fusion(Numpy()))``; ``"cuda:fused"`` is ``Autodiff(Fusion(Cuda(0)))`` and
``"wgpu:fused"`` ``Autodiff(Fusion(Wgpu()))``. The guide is docs/fusion.md.

>>> import ember
>>> x = ember.ones(4, device="cpu:fused")
>>> print(((x * 2).exp() + 1).sum().item() > 0)
True
"""

from __future__ import annotations

from .backend import Fusion, enabled, is_enabled
from .replay import replaying

__all__ = ["Fusion", "enabled", "is_enabled", "replaying", "make_cpu_stack", "make_default_cpu_stack",
           "make_cuda_stack", "make_default_cuda_stack", "make_wgpu_stack", "make_default_wgpu_stack", "kernel_count"]


def _c_compiler_works() -> bool:
    try:
        from ...cube.runtime.c import compiler
        compiler()
        return True
    except Exception:  # noqa: BLE001 - any failure (no module, no compiler) means no compiled CPU backend
        return False


def _cpu_inner():
    """CpuC when it imports and a C compiler works, else the numpy backend."""
    if _c_compiler_works():
        from ..cpuc import CpuC
        return CpuC()
    from ..numpy import Numpy
    return Numpy()


def make_cpu_stack(index=None):
    """The ``cpu:fused`` backend stack: ``Autodiff(Fusion(inner))``, fusing every op it can
    (``index`` is unused)."""
    from ..autodiff import Autodiff
    return Autodiff(Fusion(_cpu_inner()))


def make_default_cpu_stack(index=None):
    """The ``cpu`` stack (unless EMBER_DEFAULT_FUSION=0): ``Autodiff(Fusion(CpuC()))`` with the CPU target's
    cost model when a C compiler works; else the numpy stack, with a warning (fused kernels are C)."""
    from ..autodiff import Autodiff
    if _c_compiler_works():
        from ..cpuc import CpuC
        return Autodiff(Fusion(CpuC(load=False), min_elements=None))
    import warnings
    warnings.warn("ember: no working C compiler (set $CC or install gcc/clang): device 'cpu' runs on the "
                  "numpy backend, without kernel fusion", RuntimeWarning, stacklevel=2)
    from ..numpy import make_stack
    return make_stack()


_GPU_STACKS: dict = {}


def _cuda_stack(index, min_elements: int):
    from ..autodiff import Autodiff
    from ..cuda import make_stack
    i = 0 if index is None else int(index)
    key = ("cuda", i, min_elements)
    stack = _GPU_STACKS.get(key)
    if stack is None:
        # the unfused stack's backend: one Cuda object per device (its memory pool, its op table)
        stack = _GPU_STACKS[key] = Autodiff(Fusion(make_stack(i).inner, min_elements))
    return stack


def make_cuda_stack(index=None):
    """The ``cuda:fused`` backend stack: ``Autodiff(Fusion(Cuda(index or 0)))`` recording every op it
    can, one per device index. Raises BackendUnavailable (as ``"cuda"`` does) without CuPy or a GPU."""
    return _cuda_stack(index, 0)


def make_default_cuda_stack(index=None):
    """The ``cuda``/``cuda:N`` stack under EMBER_DEFAULT_FUSION=1: ``Autodiff(Fusion(Cuda(N)))`` with the
    CUDA target's cost model (ops on tensors in memory under 2^24 elements launch at once)."""
    return _cuda_stack(index, None)  # None: the target's eager_below


def _wgpu_stack(index, min_elements: int):
    from ..autodiff import Autodiff
    from ..wgpu import Wgpu
    key = ("wgpu", index, min_elements)
    stack = _GPU_STACKS.get(key)
    if stack is None:
        inner = _GPU_STACKS.get(("wgpu-inner", index))
        if inner is None:  # one Wgpu object per adapter, shared by the stacks on it
            inner = _GPU_STACKS[("wgpu-inner", index)] = Wgpu(index)
        stack = _GPU_STACKS[key] = Autodiff(Fusion(inner, min_elements))
    return stack


def make_wgpu_stack(index=None):
    """The ``wgpu:fused`` backend stack: ``Autodiff(Fusion(Wgpu(index)))`` recording every op it can
    (the adapter wgpu prefers when ``index`` is None). Raises BackendUnavailable (as ``"wgpu"`` does)
    without wgpu or an adapter."""
    return _wgpu_stack(index, 0)


def make_default_wgpu_stack(index=None):
    """The ``wgpu``/``wgpu:N`` stack under EMBER_DEFAULT_FUSION=1: ``Autodiff(Fusion(Wgpu(N)))`` with the
    WebGPU target's cost model."""
    return _wgpu_stack(index, None)  # None: the target's eager_below


def kernel_count(device="cpu:fused") -> dict:
    """The Fusion layer's counters on a device: fused kernels launched, ops run on the inner
    backend, flushes. Tests pin fusion decisions with them."""
    import ember
    be = ember.device(device).backend
    while not isinstance(be, Fusion):
        be = be.inner
    return be.stats
