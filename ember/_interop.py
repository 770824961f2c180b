"""Exchange with other array libraries: DLPack both ways (``Tensor.__dlpack__``, ``from_dlpack``).

On the CPU the exchange shares memory: the numpy backend's handles are numpy arrays, so exporting
delegates to ``numpy.ndarray.__dlpack__`` and importing goes through ``numpy.from_dlpack``.
numpy does not know bfloat16, so bfloat16 crosses as uint16 with the DLPack dtype field
rewritten (to ``kDLBfloat`` on export, from it on import); the bits are the same.

Other devices: a backend that can exchange DLPack itself provides ``dlpack_device(handle)``,
``to_dlpack(handle, **kw)`` and ``from_dlpack(obj) -> (handle, shape, dtype)``; without those
the exchange is refused with an error that says what to do.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, wrap

__all__ = ["from_dlpack"]

# DLPack device type codes (dlpack.h) and the ember device types they correspond to
_DL_CPU, _DL_CUDA_HOST, _DL_ROCM_HOST = 1, 3, 11
_DL_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
             10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu",
             16: "hexagon", 17: "maia"}
_EMBER_TYPES = {"cuda": "cuda", "cuda_managed": "cuda", "rocm": "rocm", "vulkan": "wgpu", "metal": "wgpu",
                "webgpu": "wgpu"}
_HOST_READABLE = (_DL_CPU, _DL_CUDA_HOST, _DL_ROCM_HOST)
_KDL_UINT, _KDL_BFLOAT = 1, 4


# ---- the DLPack structs, just enough to read and patch a capsule's dtype -------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


# DLManagedTensorVersioned: version (2 x uint32), manager_ctx, deleter, flags (uint64), then the tensor
_VERSIONED_TENSOR_OFFSET = 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 8

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype, _capsule_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dltensor(capsule) -> _DLTensor:
    """The DLTensor inside an unconsumed capsule (legacy or versioned)."""
    name = _capsule_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"from_dlpack: the DLPack capsule was already consumed (its name is {name!r}); "
                          "a capsule can be imported only once")
    ptr = _capsule_ptr(capsule, name)
    offset = _VERSIONED_TENSOR_OFFSET if name == b"dltensor_versioned" else 0
    return _DLTensor.from_address(ptr + offset)


class _Capsule:
    """Hands numpy a capsule we already hold (numpy.from_dlpack wants an object with __dlpack__)."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


# ---- export ---------------------------------------------------------------------------------------
def dlpack_device(t: Tensor) -> tuple[int, int]:
    """(DLPack device type, device id) of a tensor: ``(1, 0)`` on the CPU."""
    backend = t._device.backend
    hook = getattr(backend, "dlpack_device", None)
    if hook is not None:
        return tuple(hook(t._h))
    if t._device.type == "cpu":
        return (_DL_CPU, 0)
    raise BufferError(f"__dlpack_device__: ember's {t._device} backend ({backend!r}) does not support DLPack; "
                      f"copy the tensor to the CPU first with .cpu()")


def to_dlpack_capsule(t: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule for ``t`` (what ``t.__dlpack__()`` returns); shares memory on the CPU."""
    backend = t._device.backend
    hook = getattr(backend, "to_dlpack", None)
    if hook is not None:
        return hook(t._h, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    if t._device.type != "cpu":
        raise BufferError(f"__dlpack__: ember's {t._device} backend ({backend!r}) does not export DLPack; "
                          f"copy the tensor to the CPU first with .cpu()")
    t._share_host()
    arr = backend.read(t._h)  # the numpy backend's handle itself: the memory is shared
    if t._dtype is not dt.bfloat16:
        return arr.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    # numpy refuses to export bfloat16: export the same bits as uint16 and relabel them
    capsule = arr.view(np.uint16).__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                             copy=copy)
    _dltensor(capsule).dtype.code = _KDL_BFLOAT
    return capsule


# ---- import ---------------------------------------------------------------------------------------
def _capsule_of(obj):
    """obj's DLPack capsule, asking for the versioned protocol when the producer knows it."""
    try:
        return obj.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0 takes no max_version
        return obj.__dlpack__()


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """An ember tensor from any DLPack producer (torch, numpy, CuPy, JAX, ...) or a DLPack capsule.

    On the CPU no data is copied: writes through either object show in the other.

    >>> import numpy as np
    >>> a = np.zeros(3, dtype=np.float32); t = ember.from_dlpack(a); a[0] = 5
    >>> t
    tensor([5., 0., 0.])
    """
    if isinstance(ext_tensor, Tensor):
        out = wrap(ext_tensor._h, ext_tensor._shape, ext_tensor._dtype, ext_tensor._device,
                   ext_tensor._base if ext_tensor._base is not None else ext_tensor)
    else:
        out = _import(ext_tensor)
    if device is not None:
        out = out.to(device)
    if copy:
        out = out.clone()
    return out


def _import(obj) -> Tensor:
    if _is_capsule(obj):
        capsule = obj
        info = _dltensor(capsule).device
        dev_type, dev_id = info.device_type, info.device_id
    elif hasattr(obj, "__dlpack__"):
        dev_type, dev_id = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (_DL_CPU, 0)
        dev_type, dev_id = int(dev_type), int(dev_id)
        capsule = None
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a tensor or array from another "
                        f"library) or a DLPack capsule, got {type(obj).__name__}")
    if dev_type not in _HOST_READABLE:
        return _import_device(obj, capsule, dev_type, dev_id)
    if capsule is None:
        capsule = _capsule_of(obj)
    info = _dltensor(capsule)
    bf16 = info.dtype.code == _KDL_BFLOAT and info.dtype.bits == 16 and info.dtype.lanes == 1
    if bf16:  # numpy can't import bfloat16: take the bits as uint16 and view them back
        info.dtype.code = _KDL_UINT
    arr = np.from_dlpack(_Capsule(capsule, (dev_type, dev_id)))
    if bf16:
        arr = arr.view(dt.bfloat16.np)
    try:
        d = dt.from_numpy_dtype(arr.dtype)
    except TypeError as e:
        raise TypeError(f"from_dlpack: {e}") from None
    from ._device import device as _device
    dev = _device("cpu")
    return wrap(dev.backend.write(arr), tuple(arr.shape), d, dev)


def _import_device(obj, capsule, dev_type: int, dev_id: int) -> Tensor:
    """A tensor on an accelerator: only a backend that speaks DLPack can take it."""
    name = _DL_NAMES.get(dev_type, f"unknown DLPack device type {dev_type}")
    kind = _EMBER_TYPES.get(name)
    backend = None
    if kind is not None:
        from ._device import device as _device
        try:
            dev = _device(f"{kind}:{dev_id}")
            backend = dev.backend
        except Exception:  # no such backend installed: reported below
            backend = None
    hook = getattr(backend, "from_dlpack", None)
    if hook is None:
        raise RuntimeError(f"from_dlpack: the data lives on {name}:{dev_id} (DLPack device type {dev_type}) and "
                           f"no ember backend that can import it is available; move it to the CPU in the "
                           f"producing library first (e.g. .cpu()), or install ember's backend for that device")
    handle, shape, d = hook(capsule if capsule is not None else obj)
    return wrap(handle, tuple(shape), d, dev)
