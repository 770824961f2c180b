"""Flatten parameters into one vector and back (torch.nn.utils.parameters_to_vector).

>>> ps = [ember.nn.Parameter(ember.ones(2, 2)), ember.nn.Parameter(ember.zeros(3))]
>>> v = ember.nn.utils.parameters_to_vector(ps)
>>> v.shape
ember.Size([7])
>>> ember.nn.utils.vector_to_parameters(v * 2, ps); ps[1]
Parameter containing:
tensor([0., 0., 0.], requires_grad=True)
"""

from __future__ import annotations

from collections.abc import Iterable

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _same_device(params: list[Tensor]) -> None:
    for p in params[1:]:
        if p.device != params[0].device:
            raise TypeError(f"Found two parameters on different devices ({params[0].device} and {p.device}), "
                            "this is currently not supported.")


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-d tensor (differentiable)."""
    from ..._movement import cat
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    if not params:
        raise RuntimeError("parameters_to_vector: expected at least one parameter")
    _same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Point each parameter's data at its slice of ``vec`` (the parameters then share vec's memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    if params:
        _same_device(params)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-d vector of {total} elements (the parameters' "
                           f"total), got shape {list(vec.shape)}")
    at = 0
    for p in params:
        n = p.numel()
        p.data = vec[at:at + n].view_as(p).detach()
        at += n
