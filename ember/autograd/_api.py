"""ember.autograd.grad and ember.autograd.backward."""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor, wrap
from .._tensor_autograd import autodiff_backend


def _seq(x) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _default_grads(outputs: list[Tensor], grad_outputs, create_graph: bool) -> list:
    from .._creation import ones_like
    grads = _seq(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} entries but there are {len(outputs)} outputs")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = ones_like(o)
        elif not isinstance(g, Tensor):
            raise TypeError(f"grad_outputs[{i}] must be a Tensor or None, got {type(g).__name__}")
        elif g._shape != o._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g._shape)} and output[{i}] "
                               f"has a shape of {list(o._shape)}.")
        elif g._dtype is not o._dtype and g._dtype.is_floating_point and o._dtype.is_floating_point:
            g = g.to(o._dtype)  # as PyTorch does: the gradient of an output has the output's dtype
        out.append(g)
    return out


def _backend_of(tensors: Sequence[Tensor]):
    b = None
    for t in tensors:
        tb = autodiff_backend(t)
        if tb is None:
            raise RuntimeError(f"element of tensors on device {t._device} (backend {t._device.backend.name!r}) "
                               "has no Autodiff in its stack")
        if b is None:
            b = tb
        elif tb is not b:
            raise RuntimeError("autograd across tensors of different devices in one call is not supported")
    return b


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    outs = _seq(tensors)
    if not outs:
        raise RuntimeError("backward: no tensors given")
    grads = _default_grads(outs, grad_tensors, create_graph)
    b = _backend_of(outs)
    if retain_graph is None:
        retain_graph = create_graph
    ins = None if inputs is None else [t._h for t in _seq(inputs)]
    for o in outs:
        if not b.requires_grad(o._h):
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    b.backward([o._h for o in outs], [g._h for g in grads], retain_graph=retain_graph, create_graph=create_graph,
               inputs=ins)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs`` (a tuple, one per input).

    >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> ember.autograd.grad((x ** 3).sum(), x)
    (tensor([ 3., 12.]),)
    """
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported; loop over the batch instead")
    outs = _seq(outputs)
    ins = _seq(inputs)
    if not ins:
        raise RuntimeError("grad requires at least one input")
    grads = _default_grads(outs, grad_outputs, create_graph)
    b = _backend_of(outs + ins)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, o in enumerate(outs):
        if not b.requires_grad(o._h):
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    res = b.grad_of([o._h for o in outs], [t._h for t in ins], [g._h for g in grads], retain_graph=retain_graph,
                    create_graph=create_graph, allow_unused=allow_unused)
    out = []
    for t, h in zip(ins, res):
        if h is None:
            if materialize_grads:
                from .._creation import zeros_like
                out.append(zeros_like(t))
            else:
                out.append(None)
        else:
            out.append(wrap(h, t._shape, t._dtype, t._device))
    return tuple(out)
