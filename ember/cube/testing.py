"""Run one kernel on several targets from numpy data: what the tests use to compare targets.

:func:`run` copies numpy arguments to the device (CuPy arrays for "cuda", WgpuArrays for "wgpu"),
launches, and copies every array back into the numpy arrays, so a test writes a kernel once and
checks the same numbers on each target in :func:`devices`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["devices", "run", "has_cuda", "has_wgpu", "ieee", "to_device", "to_numpy"]


def has_cuda() -> bool:
    """CuPy is installed and sees a GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means no usable CUDA
        return False


def has_wgpu() -> bool:
    """wgpu-py is installed and finds an adapter (lavapipe counts)."""
    try:
        from .runtime.wgpu import adapter
        return adapter() is not None
    except Exception:  # noqa: BLE001
        return False


def ieee(device: str) -> bool:
    """Whether NaN and infinity follow IEEE rules on ``device``: always on "cpu" and "cuda"; on "wgpu" only
    for CPU adapters such as lavapipe (WGSL lets GPU compilers assume values are finite)."""
    if device != "wgpu":
        return True
    a = _adapter_info()
    return a.get("adapter_type", "").upper() == "CPU"


def _adapter_info() -> dict:
    from .runtime.wgpu import adapter
    a = adapter()
    return dict(a.info) if a is not None else {}


def devices() -> list[str]:
    """The devices kernels can run on here: "cpu" (the C target), then "cuda" and "wgpu" when available."""
    out = ["cpu"]
    if has_cuda():
        out.append("cuda")
    if has_wgpu():
        out.append("wgpu")
    return out


def run(device: str, launch, *args) -> None:
    """``launch(*args)`` with numpy arrays moved to ``device`` and copied back afterwards.

    ``launch`` is ``kern[grid, block]``.
    """
    if device == "cpu":
        launch(*args)
        return
    if device == "cuda":
        import cupy
        moved = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        launch(*moved)
        cupy.cuda.get_current_stream().synchronize()
        for a, m in zip(args, moved):
            if isinstance(a, np.ndarray):
                a[...] = cupy.asnumpy(m)
        return
    if device == "wgpu":
        from .runtime.wgpu import WgpuArray
        moved = [WgpuArray.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
        launch(*moved)
        for a, m in zip(args, moved):
            if isinstance(a, np.ndarray):
                a[...] = m.numpy()
        return
    raise ValueError(f"unknown device {device!r}")


def to_device(a: np.ndarray, device: str):
    """A numpy array as an array of ``device`` ("cpu": the array itself)."""
    if device == "cpu":
        return a
    if device == "cuda":
        import cupy
        return cupy.asarray(a)
    if device == "wgpu":
        from .runtime.wgpu import WgpuArray
        return WgpuArray.from_numpy(a)
    raise ValueError(f"unknown device {device!r}")


def to_numpy(a) -> np.ndarray:
    """Any array cube launches on, copied to (or shared as) a numpy array."""
    if isinstance(a, np.ndarray):
        return a
    if type(a).__name__ == "WgpuArray":
        return a.numpy()
    if hasattr(a, "__cuda_array_interface__"):
        import cupy
        return cupy.asnumpy(a)
    return np.asarray(a)
