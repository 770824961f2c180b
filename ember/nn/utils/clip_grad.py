"""Gradient clipping: rescale gradients to a maximum total norm, or clamp them elementwise.

>>> p = ember.nn.Parameter(ember.zeros(2))
>>> p.grad = ember.tensor([3.0, 4.0])
>>> ember.nn.utils.clip_grad_norm_([p], max_norm=1.0)
tensor(5.)
>>> p.grad
tensor([0.6000, 0.8000])
"""

from __future__ import annotations

from collections.abc import Iterable

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

_TensorOrTensors = Tensor | Iterable[Tensor]


def _as_list(tensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters) -> list[tuple[Tensor, Tensor]]:
    """(parameter, gradient) for every parameter that has a gradient."""
    out = []
    for p in _as_list(parameters):
        g = p.grad
        if g is not None:
            out.append((p, g))
    return out


def get_total_norm(tensors: _TensorOrTensors, norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all tensors together (as if concatenated into one vector).

    ``norm_type`` may be ``inf`` (or the string ``"inf"``). ``foreach`` is accepted and ignored.
    """
    from ... import linalg
    from ..._creation import tensor
    from ..._movement import stack
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        dev = tensors[0].device
        norms = [linalg.vector_norm(t, norm_type).to(dev) for t in tensors]
        total = linalg.vector_norm(stack(norms), norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                               "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
                               "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: _TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale every gradient by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    pairs = _grads(parameters)
    if not pairs:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for p, g in pairs:
            c = coef.to(device=g.device, dtype=g.dtype)
            # write back through the setter too: a backend may return a fresh handle from mul_
            p.grad = g.mul_(c)


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float | str = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale the gradients of ``parameters`` in place so their total ``norm_type``-norm is at most
    ``max_norm``; returns the total norm before clipping (a 0-d tensor).

    ``error_if_nonfinite=True`` raises when the norm is NaN or inf instead of scaling by it.
    ``foreach`` is accepted and ignored.
    """
    parameters = _as_list(parameters)
    grads = [g for _, g in _grads(parameters)]
    if not grads:
        from ..._creation import tensor
        return tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient elementwise into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p, g in _grads(parameters):
            p.grad = g.clamp_(min=-clip_value, max=clip_value)
