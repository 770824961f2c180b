"""ember.Tensor: the user-facing tensor, and the dispatch path from Tensor ops to the backend.

A Tensor holds a backend handle plus metadata the frontend computed (shape, dtype, device). Op
modules (``_elementwise``, ``_reduction``, ...) add their methods to the class with
:func:`method`, so this file holds only what every op needs.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt
from ._shape import Size, contiguous_strides

__all__ = ["Tensor", "method", "wrap", "run", "is_tensor"]


class Tensor:
    """A multi-dimensional array on a device, with PyTorch's API.

    >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x.T).sum()
    tensor(54.)
    """

    __slots__ = ("_h", "_shape", "_dtype", "_device", "_base", "__weakref__")
    # numpy defers binary operators to us (np_array + tensor calls Tensor.__radd__ and gives a Tensor)
    __array_ufunc__ = None

    # the constructor is for ``ember.Tensor(data)``-style use; ops build tensors with ``wrap``
    def __new__(cls, *args, **kwargs):
        if cls is Tensor and not args and not kwargs:
            return object.__new__(cls)
        from ._creation import tensor
        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=kwargs.get("dtype", dt.float32 if not isinstance(args[0], Tensor) else None),
                          device=kwargs.get("device"))
        from ._creation import empty
        return empty(*args, **kwargs)

    # ---- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dim: ``x.size(-1)``."""
        if dim is None:
            return Size(self._shape)
        from ._shape import norm_dim
        return self._shape[norm_dim(dim, len(self._shape), "size")]

    @property
    def dtype(self) -> dt.dtype:
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        return math.prod(self._shape)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_floating_point_(self) -> bool:  # pragma: no cover - alias kept private
        return self._dtype.is_floating_point

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    def stride(self, dim: int | None = None):
        """Element strides of the layout (asks the backend, which owns the memory)."""
        s = tuple(self._device.backend.strides(self._h))
        if dim is None:
            return s
        from ._shape import norm_dim
        return s[norm_dim(dim, len(self._shape), "stride")]

    def is_contiguous(self, memory_format=None) -> bool:
        shape, strides = self._shape, self._device.backend.strides(self._h)
        if 0 in shape:  # PyTorch: a tensor without elements is contiguous whatever its strides
            return True
        expected = contiguous_strides(shape)
        return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected))

    def storage_offset(self) -> int:
        return self._device.backend.storage_offset(self._h)

    def data_ptr(self) -> int:
        return self._device.backend.data_ptr(self._h)

    def untyped_storage_size(self) -> int:  # pragma: no cover - rarely used
        return self._device.backend.nbytes(self._h)

    @property
    def _version_base(self):
        return self if self._base is None else self._base

    # ---- sync points: data to the host -----------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array (shares memory on the numpy CPU backend, like torch)."""
        if not force and self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self._device} tensor to numpy: use .cpu() first, "
                            "or .numpy(force=True) to copy")
        self._share_host()
        return self._device.backend.read(self._h)

    def _share_host(self) -> None:
        """Tell a lazy backend that the program now holds a host array on this memory (its ops on it
        must then run in program order with the program's reads and writes of that array)."""
        share = getattr(self._device.backend, "share", None)
        if share is not None:
            share(self._h)

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if not copy:
            self._share_host()
        a = self._device.backend.read(self._h)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        if copy:
            a = a.copy()
        return a

    def tolist(self):
        """Nested Python lists (a Python number for a 0-d tensor)."""
        a = self._device.backend.read(self._h)
        if self._dtype is dt.bfloat16:
            a = a.astype(np.float32)
        return a.tolist()

    def item(self):
        """The single value as a Python number."""
        if math.prod(self._shape) != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        a = self._device.backend.read(self._h)
        v = a.reshape(()).item() if a.ndim else a.item()
        if self._dtype is dt.bfloat16 or self._dtype is dt.float16:
            v = float(v)
        return v

    def __bool__(self) -> bool:
        if math.prod(self._shape) != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no' if self.numel() == 0 else 'more than one'} "
                               "value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self._shape:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ._printing import tensor_repr
        return tensor_repr(self)

    def __str__(self) -> str:
        return self.__repr__()

    def __format__(self, spec: str) -> str:
        if not self._shape:  # a 0-d tensor formats as its Python number, as in PyTorch: f"{t:.3f}", f"{t}"
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return self.__repr__()

    def __reduce_ex__(self, protocol):
        from ._creation import _rebuild
        return (_rebuild, (self.numpy(force=True).copy(), self._dtype.name, str(self._device)))

    def __deepcopy__(self, memo):
        out = self.clone()
        memo[id(self)] = out
        return out

    def __copy__(self):
        return self.clone()

    # DLPack and the Array API live in _interop; here only the protocol hooks
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from ._interop import to_dlpack_capsule
        return to_dlpack_capsule(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from ._interop import dlpack_device
        return dlpack_device(self)


_new = object.__new__


def wrap(h, shape: tuple, dtype: dt.dtype, device, base: Tensor | None = None) -> Tensor:
    """A Tensor around a backend handle whose shape and dtype the frontend computed."""
    t = _new(Tensor)
    t._h = h
    t._shape = shape
    t._dtype = dtype
    t._device = device
    t._base = base
    return t


def run(op: str, inputs: tuple, attrs: dict, shape: tuple, dtype: dt.dtype, device=None) -> Tensor:
    """Dispatch ``op`` on the inputs' device and wrap the single result."""
    if device is None:
        device = inputs[0]._device
    # subclasses (nn.Parameter) are tensors too: the exact-class test is only the fast path
    h = device.backend.run(op, tuple(x._h if x.__class__ is Tensor or isinstance(x, Tensor) else x
                                     for x in inputs), attrs)
    return wrap(h, shape, dtype, device)


def same_device(op: str, *tensors: Tensor):
    """The device shared by ``tensors``; a clear error when they differ."""
    dev = tensors[0]._device
    for t in tensors[1:]:
        if t._device is not dev and t._device != dev:
            a, b = str(dev), str(t._device)
            if a == b:  # same name, different stacks (e.g. a custom Device): say which
                a, b = f"{a} ({dev.backend!r})", f"{b} ({t._device.backend!r})"
            raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found at least "
                               f"two devices, {a} and {b}; move them with .to(device)")
    return dev


def method(fn=None, *, name: str | None = None):
    """Decorator: also expose an op function as a Tensor method (``x.fn(...)``)."""
    def register(f):
        setattr(Tensor, name or f.__name__, f)
        return f
    return register(fn) if fn is not None else register


def is_tensor(obj) -> bool:
    """True for ember tensors (torch.is_tensor)."""
    return isinstance(obj, Tensor)
