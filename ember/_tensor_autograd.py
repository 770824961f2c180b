"""The autograd side of Tensor: requires_grad, grad, grad_fn, backward, detach, hooks.

The work happens in the device's Autodiff backend; these methods translate between Tensors and
its handles. On a stack without Autodiff, tensors never require grad and asking for it says so.
"""

from __future__ import annotations

from . import _dtype as dt
from ._tensor import Tensor, wrap


def autodiff_backend(t: Tensor):
    """The tensor's backend if its stack includes Autodiff, else None."""
    b = t._device.backend
    return b if hasattr(b, "grad_of") else None


def _no_autodiff(t: Tensor):
    raise RuntimeError(f"device {t._device} runs backend {t._device.backend.name!r} without Autodiff, so its "
                       "tensors can't require gradients; use a device whose stack includes Autodiff "
                       "(the default 'cpu' does)")


def _get_requires_grad(self: Tensor) -> bool:
    b = autodiff_backend(self)
    return b is not None and b.requires_grad(self._h)


def _set_requires_grad(self: Tensor, flag: bool) -> None:
    requires_grad_(self, flag)


def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Mark a leaf tensor for gradient tracking (in place); returns self."""
    b = autodiff_backend(self)
    if b is None:
        if requires_grad:
            _no_autodiff(self)
        return self
    self._h = b.set_requires_grad(self._h, bool(requires_grad))
    return self


def _get_grad(self: Tensor):
    b = autodiff_backend(self)
    if b is None:
        return None
    g = b.grad(self._h)
    return None if g is None else wrap(g, self._shape, self._dtype, self._device)


def _set_grad(self: Tensor, value) -> None:
    b = autodiff_backend(self)
    if b is None:
        if value is not None:
            _no_autodiff(self)
        return
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value._shape != self._shape:
            raise RuntimeError(f"assigned grad has data of a different size: {list(value._shape)} vs the tensor's "
                               f"{list(self._shape)}")
        if value._dtype is not self._dtype:
            raise RuntimeError(f"assigned grad has data of a different type: {value._dtype} vs {self._dtype}")
    self._h = b.set_grad(self._h, None if value is None else value._h)


def _grad_fn(self: Tensor):
    b = autodiff_backend(self)
    return None if b is None else b.grad_fn(self._h)


def _is_leaf(self: Tensor) -> bool:
    b = autodiff_backend(self)
    return True if b is None else b.is_leaf(self._h)


def backward(self: Tensor, gradient: Tensor | None = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs=None) -> None:
    """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (``gradient`` weights a non-scalar)."""
    from .autograd import backward as _backward
    _backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def detach(self: Tensor) -> Tensor:
    """A tensor sharing this one's memory, cut from the graph (never requires grad)."""
    b = autodiff_backend(self)
    h = self._h if b is None else b.detach(self._h)
    return wrap(h, self._shape, self._dtype, self._device, self._base)


def detach_(self: Tensor) -> Tensor:
    b = autodiff_backend(self)
    if b is not None:
        self._h = b.detach(self._h)
    return self


def retain_grad(self: Tensor) -> None:
    """Keep the gradient of a non-leaf tensor in ``.grad`` after backward."""
    b = autodiff_backend(self)
    if b is None:
        _no_autodiff(self)
    b.retain_grad(self._h)


def _retains_grad(self: Tensor) -> bool:
    h = self._h
    return bool(getattr(h, "retains_grad", False))


def register_hook(self: Tensor, hook):
    """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a replacement.
    Returns a handle with ``.remove()``."""
    b = autodiff_backend(self)
    if b is None:
        _no_autodiff(self)
    shape, dtype, device = self._shape, self._dtype, self._device

    def on_grad(gh):
        r = hook(wrap(gh, shape, dtype, device))
        if r is None:
            return None
        if not isinstance(r, Tensor):
            raise TypeError(f"a tensor hook must return a Tensor or None, got {type(r).__name__}")
        return r._h
    return b.register_hook(self._h, on_grad)


def _get_data(self: Tensor) -> Tensor:
    return detach(self)


def _set_data(self: Tensor, value: Tensor) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
    b = autodiff_backend(self)
    raw = value._h if b is None else b.detach(value._h)
    if b is not None and hasattr(self._h, "value"):
        self._h.value = raw
    else:
        self._h = raw
    self._shape, self._dtype = value._shape, value._dtype


Tensor.requires_grad = property(_get_requires_grad, _set_requires_grad)
Tensor.grad = property(_get_grad, _set_grad)
Tensor.grad_fn = property(_grad_fn)
Tensor.is_leaf = property(_is_leaf)
Tensor.retains_grad = property(_retains_grad)
Tensor.data = property(_get_data, _set_data)
Tensor.requires_grad_ = requires_grad_
Tensor.backward = backward
Tensor.detach = detach
Tensor.detach_ = detach_
Tensor.retain_grad = retain_grad
Tensor.register_hook = register_hook
Tensor._is_float_for_grad = property(lambda self: self._dtype in dt.FLOATING)
