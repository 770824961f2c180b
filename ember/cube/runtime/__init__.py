"""Runtimes: where a kernel's compiled code runs, and how array arguments reach it.

A runtime has ``key`` (part of the variant key), ``frontend_target`` (what the frontend must
know), ``render(ir, plan) -> source``, ``compile(ir, plan, source) -> object`` and
``launch(object, grid, block, values)``. ``values`` holds, per non-constant parameter, an
:class:`~ember.cube.launch.ArrayArg` or a Python scalar.
"""

from __future__ import annotations

import numpy as np

from ..types import SCALARS, from_numpy

__all__ = ["adapt_array", "numpy_arg"]

_SUPPORTED = ", ".join(t.np.name for t in SCALARS.values() if t.np is not None)


def numpy_arg(a: np.ndarray, tensor=None):
    """An ArrayArg for a host numpy array (the C target), or an error message."""
    from ..launch import ArrayArg
    elem = from_numpy(a.dtype)
    if elem is None:
        return f"dtype {a.dtype} is not supported by cube ({_SUPPORTED})"
    if not a.flags.c_contiguous:
        hint = "x.contiguous()" if tensor is not None else "np.ascontiguousarray(x)"
        return (f"the array is not C-contiguous (shape {a.shape}, strides {a.strides}): kernels index memory "
                f"densely; pass {hint} and copy results back")
    return ArrayArg("cpu", a, elem, a.shape, tensor, bool(a.flags.writeable))


def _tensor_arg(t):
    dev = t._device
    if dev.type == "cpu":
        backend = dev.backend
        while hasattr(backend, "inner"):
            backend = backend.inner
        from ...backend.numpy import Numpy
        if not isinstance(backend, Numpy):
            return (f"tensors on the CPU backend {type(backend).__name__} are not supported by cube yet "
                    "(only the numpy backend's memory is reachable)")
        share = getattr(dev.backend, "share", None)
        if share is not None:  # a lazy layer (Fusion): its pending work on this memory runs first, and
            share(t._h)        # its ops on it run in program order with the kernel from now on
        a = dev.backend.read(t._h)  # the numpy backends' read is the memory itself
        if not isinstance(a, np.ndarray):
            return f"unexpected handle type {type(a).__name__}"
        return numpy_arg(a, t)
    if dev.type == "cuda":
        from .cuda import cuda_arg
        share = getattr(dev.backend, "share", None)
        # a lazy layer (Fusion): its pending work on this memory runs first; it answers the array itself
        h = share(t._h) if share is not None else t._h
        return cuda_arg(getattr(h, "value", h), t)
    return f"tensors on device {dev} are not supported by cube"


def adapt_array(a):
    """An ArrayArg for a supported array, an error message string, or None for a non-array."""
    if isinstance(a, np.ndarray):
        return numpy_arg(a)
    cls = type(a)
    if cls.__name__ == "Tensor" and cls.__module__.startswith("ember"):
        return _tensor_arg(a)
    if hasattr(a, "__cuda_array_interface__"):
        from .cuda import cuda_arg
        return cuda_arg(a)
    if cls.__name__ == "WgpuArray":
        return a.as_arg()
    return None
