"""Fusion: the backend decorator that records ops lazily and runs them as fused ember.cube kernels.

``Fusion(inner)`` wraps a backend whose handles cube can launch on (numpy arrays for the C target,
CuPy arrays for CUDA, the Wgpu backend's storages for WGSL). The ``"cpu:fused"`` device is
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

__all__ = ["Fusion", "enabled", "is_enabled", "make_cpu_stack", "make_cuda_stack", "make_wgpu_stack", "kernel_count"]


def _cpu_inner():
    """CpuC when it imports and a C compiler works, else the numpy backend."""
    try:
        from ...cube.runtime.c import compiler
        from ..cpuc import CpuC
        compiler()
        return CpuC()
    except Exception:  # noqa: BLE001 - any failure (no module, no compiler) means the numpy backend
        from ..numpy import Numpy
        return Numpy()


def make_cpu_stack(index=None):
    """The ``cpu:fused`` backend stack: ``Autodiff(Fusion(inner))`` (``index`` is unused)."""
    from ..autodiff import Autodiff
    return Autodiff(Fusion(_cpu_inner()))


_GPU_STACKS: dict = {}


def make_cuda_stack(index=None):
    """The ``cuda:fused`` backend stack: ``Autodiff(Fusion(Cuda(index or 0)))``, one per device
    index. Raises BackendUnavailable (as ``"cuda"`` does) without CuPy or a GPU."""
    from ..autodiff import Autodiff
    from ..cuda import make_stack
    i = 0 if index is None else int(index)
    stack = _GPU_STACKS.get(("cuda", i))
    if stack is None:
        # the unfused stack's backend: one Cuda object per device (its memory pool, its op table)
        stack = _GPU_STACKS[("cuda", i)] = Autodiff(Fusion(make_stack(i).inner))
    return stack


def make_wgpu_stack(index=None):
    """The ``wgpu:fused`` backend stack: ``Autodiff(Fusion(Wgpu(index)))`` (the adapter wgpu prefers
    when ``index`` is None). Raises BackendUnavailable (as ``"wgpu"`` does) without wgpu or an adapter."""
    from ..autodiff import Autodiff
    from ..wgpu import Wgpu
    key = ("wgpu", index)
    stack = _GPU_STACKS.get(key)
    if stack is None:
        stack = _GPU_STACKS[key] = Autodiff(Fusion(Wgpu(index)))
    return stack


def kernel_count(device="cpu:fused") -> dict:
    """The Fusion layer's counters on a device: fused kernels launched, ops run on the inner
    backend, flushes. Tests pin fusion decisions with them."""
    import ember
    be = ember.device(device).backend
    while not isinstance(be, Fusion):
        be = be.inner
    return be.stats
