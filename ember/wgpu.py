"""``ember.wgpu``: the WebGPU backend's adapters and state.

Tensors go to WebGPU with ``device="wgpu"`` (adapter 0) or ``"wgpu:N"``; the backend needs
``pip install ember[wgpu]`` and a Vulkan, Metal or DX12 driver (lavapipe serves CPU-only Linux).

>>> import ember
>>> ember.wgpu.is_available() in (True, False)
True
"""

from __future__ import annotations

__all__ = ["adapters", "is_available", "device_count", "host_ops", "synchronize", "empty_cache"]


def adapters() -> list[dict]:
    """One dict per adapter index: ``name``, ``vendor``, ``backend_type`` (Vulkan, Metal, D3D12...)
    and ``device_type`` (DiscreteGPU, IntegratedGPU, CPU...). Empty without wgpu or a driver.

    >>> isinstance(ember.wgpu.adapters(), list)
    True
    """
    try:
        from .backend.wgpu.runtime import adapters as _adapters
        found = _adapters()
    except Exception:  # noqa: BLE001 - wgpu missing: no adapters
        return []
    out = []
    for a in found:
        info = a.info
        out.append({"name": info.get("device", ""), "vendor": info.get("vendor", ""),
                    "backend_type": info.get("backend_type", ""), "device_type": info.get("adapter_type", "")})
    return out


def is_available() -> bool:
    """True when wgpu is installed and finds at least one adapter."""
    return bool(adapters())


def device_count() -> int:
    """The number of adapters (valid indices for ``"wgpu:N"``)."""
    return len(adapters())


def host_ops() -> dict:
    """{op: times run} for ops that ran through the host path (numpy) instead of a WGSL kernel in
    this process: float64 ops, and the ops listed in docs/wgpu.md that have no kernel yet."""
    try:
        from .backend.wgpu import host_ops as _host_ops
    except ImportError:
        return {}
    return _host_ops()


def synchronize(device=None) -> None:
    """Wait for every kernel launched on the wgpu device (adapter 0 unless given)."""
    from ._device import device as _device
    d = _device(device or "wgpu")
    be = d.backend
    while hasattr(be, "inner"):
        be = be.inner
    be.synchronize()


def empty_cache() -> None:
    """Release the buffers the wgpu backends keep for reuse."""
    from .backend.wgpu.runtime import _RUNTIMES
    for rt in _RUNTIMES.values():
        rt.empty_cache()
