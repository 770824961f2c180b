"""CUDA graph capture for the CUDA backend, on CuPy's stream capture.

A capture runs on its own stream with a private memory pool: blocks the captured work allocates stay
reserved for the graph (later replays write into them), so nothing outside the graph can be handed
the same memory. The capture mode is "relaxed", which lets the pool call cudaMalloc while capturing. CuPy refuses
cuBLAS calls during a capture, so ``cupy.matmul`` is ember's own cuBLAS call (cublas.py) meanwhile.
"""

from __future__ import annotations

from .. import capture
from . import cublas, random

__all__ = ["Capture"]


class Capture:
    """One open capture: ``begin()`` then ``end()`` -> a CuPy graph that ``launch()`` replays."""

    def __init__(self, device_index: int, pool=None):
        import cupy
        self.cupy = cupy
        self.device = cupy.cuda.Device(device_index)
        self.pool = pool if pool is not None else cupy.cuda.MemoryPool()
        self.stream = None
        self._contexts: list = []

    def begin(self) -> None:
        cp = self.cupy
        self.device.synchronize()  # work queued before the capture must not land inside it
        with self.device:  # cuBLAS handle and workspace for the capture's matmuls, allocated beforehand
            own_matmul = cublas.prepare(self.device.id)
            self.random_ok = random.prepare_graphs()  # the Philox kernels, built and checked before capturing
        self._contexts = [self.device, cp.cuda.using_allocator(self.pool.malloc)]
        for c in self._contexts:
            c.__enter__()
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.stream.__enter__()
        self._contexts.append(self.stream)
        # CuPy refuses cuBLAS calls while capturing: matmul goes to ember's own cuBLAS call meanwhile
        self._matmul = None
        if own_matmul:
            self._matmul = cublas._state["cupy_matmul"] = cp.matmul
            cp.matmul = cublas.matmul
        self.stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
        capture.enter()

    def end(self, keep: bool = True):
        """Close the capture; the CuPy graph (None when ``keep`` is False, after an error)."""
        try:
            graph = self.stream.end_capture()
        finally:
            capture.leave()
            if self._matmul is not None:
                self.cupy.matmul = self._matmul
                self._matmul = None
            for c in reversed(self._contexts):
                c.__exit__(None, None, None)
            self._contexts = []
        return graph if keep else None
