"""Devices: a name for a backend stack, e.g. ``ember.device("cpu")``.

A device type maps to a factory that builds the backend stack for an index. Devices are interned,
so ``a.device is b.device`` is the cheap same-device test the dispatch path uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ._errors import BackendUnavailable

__all__ = ["Device", "device", "register_device", "get_default_device", "set_default_device"]

_FACTORIES: dict[str, Callable[[int | None], object]] = {}
_HINTS: dict[str, str] = {
    "cuda": "install the CUDA backend with `pip install ember[cuda]` on a machine with an NVIDIA GPU",
    "wgpu": "install the WebGPU backend with `pip install ember[wgpu]`",
}
# What the plain names mean (docs/fusion.md, "The default stacks"): "cpu", "cuda" and "wgpu" are Fusion stacks
# over the compiled backends, each with its target's cost model; EMBER_DEFAULT_FUSION=0 makes them the unfused
# stacks ("cpu:numpy", "cuda:unfused", "wgpu:unfused" name those either way).
_FUSION_ENV = os.environ.get("EMBER_DEFAULT_FUSION", "").strip().lower()
FUSED_DEFAULTS = _FUSION_ENV not in ("0", "off", "false")
# Backends that live in optional packages register lazily: the module is imported the first time
# the device is asked for, so `import ember` never needs CuPy or wgpu. Keys are device types, or a
# full device string for named variants ("cpu:compiled").
_LAZY: dict[str, str] = {
    "cuda": "ember.backend.fusion:make_default_cuda_stack" if FUSED_DEFAULTS else "ember.backend.cuda:make_stack",
    "wgpu": "ember.backend.fusion:make_default_wgpu_stack" if FUSED_DEFAULTS else "ember.backend.wgpu:make_stack",
    "cuda:unfused": "ember.backend.cuda:make_stack",
    "wgpu:unfused": "ember.backend.wgpu:make_stack",
    "cpu:compiled": "ember.backend.cpuc:make_stack",
    "cpu:numpy": "ember.backend.numpy:make_stack",
    "cpu:fused": "ember.backend.fusion:make_cpu_stack",
    "cuda:fused": "ember.backend.fusion:make_cuda_stack",
    "wgpu:fused": "ember.backend.fusion:make_wgpu_stack",
    "remote": "ember.remote.client:make_stack",
}
_CACHE: dict[str, Device] = {}
_ON_NEW: list = []  # callables(device) told of each device interned (ember.compile guards devices made in fn)


class Device:
    """A device: ``type`` ('cpu', 'cuda', ...), ``index`` (int or None) and the backend stack.

    Compares equal to its string form: ``ember.device("cpu") == "cpu"``.
    A custom stack is wrapped directly: ``ember.Device(backend=MyBackend())``.
    """

    __slots__ = ("type", "index", "backend", "_str")

    def __init__(self, type: str = "cpu", index: int | None = None, backend=None):  # noqa: A002
        self.type = type
        self.index = index
        self._str = type if index is None else f"{type}:{index}"
        if backend is None:
            factory = _FACTORIES.get(type) or _lazy_factory(type)
            if factory is None:
                hint = _HINTS.get(type)
                known = ", ".join(sorted(_FACTORIES))
                raise BackendUnavailable(
                    f"no backend for device type {type!r}" + (f": {hint}" if hint else f" (known: {known})"))
            backend = factory(index)
        self.backend = backend

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self is other or (self._str == other._str and self.backend is other.backend)
        if isinstance(other, str):
            return self._str == other or (other == self.type and self.index in (None, 0))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._str)


def _lazy_factory(key: str):
    """Import the module behind a lazily registered device, or None when there is none."""
    target = _LAZY.get(key)
    if target is None:
        return None
    import importlib
    module, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("ember"):
            return None  # the backend itself is not part of this install
        hint = _HINTS.get(key.split(":")[0])
        raise BackendUnavailable(f"device {key!r} needs the missing package {e.name!r}"
                                 + (f": {hint}" if hint else "")) from e
    return getattr(mod, attr)


def register_device(type: str, factory: Callable[[int | None], object]) -> None:  # noqa: A002
    """Register a backend stack factory for a device type (``factory(index) -> backend``)."""
    _FACTORIES[type] = factory
    for key in [k for k, d in _CACHE.items() if d.type == type]:
        del _CACHE[key]


def device(spec="cpu", index: int | None = None) -> Device:
    """The interned :class:`Device` for a string like ``"cpu"``, ``"cuda:0"``, or a Device.

    >>> ember.device("cpu")
    device(type='cpu')
    """
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string or ember.Device, got {type(spec).__name__}")
    key = spec if index is None else f"{spec}:{index}"
    dev = _CACHE.get(key)
    if dev is not None:
        return dev
    kind, _, idx = key.partition(":")
    if "://" in spec:  # URL-style devices (remote://host:port) keep the whole address as index
        kind, idx = spec.split("://", 1)[0], spec.split("://", 1)[1]
        factory = _FACTORIES.get(kind) or _lazy_factory(kind)
        dev = Device(kind, None, factory(idx) if factory is not None else None)
        dev._str = spec
    elif idx and not idx.isdigit() and (key in _FACTORIES or key in _LAZY):
        # a named variant of a device type, e.g. "cpu:compiled": type "cpu", its own stack
        factory = _FACTORIES.get(key) or _lazy_factory(key)
        if factory is None:
            raise BackendUnavailable(f"device {key!r} is not available in this install")
        dev = Device(kind, None, factory(None))
        dev._str = key
    else:
        if idx and not idx.isdigit():
            raise ValueError(f"invalid device string {spec!r}: the index after ':' must be an integer")
        dev = Device(kind, int(idx) if idx else None)
    _CACHE[key] = dev
    for hook in _ON_NEW:
        hook(dev)
    return dev


_default: Device | None = None


def get_default_device() -> Device:
    """The device new tensors go to when none is given (``cpu`` unless changed)."""
    global _default
    if _default is None:
        _default = device("cpu")
    return _default


def set_default_device(spec) -> None:
    """Set the device for new tensors: ``ember.set_default_device("cuda")``."""
    global _default
    _default = device(spec)


def _cpu_stack(index):
    """The default CPU stack: Autodiff over Fusion over the compiled CPU backend when a C compiler works, else
    the numpy stack (ember.backend.fusion.make_default_cpu_stack); with EMBER_DEFAULT_FUSION=0, the numpy stack."""
    if FUSED_DEFAULTS:
        from .backend.fusion import make_default_cpu_stack
        return make_default_cpu_stack(index)
    from .backend.numpy import make_stack
    return make_stack(index)


register_device("cpu", _cpu_stack)
