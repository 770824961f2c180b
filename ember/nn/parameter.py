"""nn.Parameter: a tensor that a Module registers as a learnable parameter.

A Parameter *is* an :class:`ember.Tensor` (a subclass), so every op accepts it and
``isinstance(p, ember.Tensor)`` holds; ops on it return plain Tensors, as in PyTorch. It shares
memory with the tensor it was made from and requires grad by default. Unlike Tensor it has a
``__dict__``, so code can tag parameters (``p.no_weight_decay = True``).
"""

from __future__ import annotations

from .._tensor import Tensor

__all__ = ["Parameter", "is_parameter"]


class Parameter(Tensor):
    """A learnable tensor: ``Parameter(data, requires_grad=True)``.

    Assigning one to a Module attribute registers it (it shows up in ``parameters()`` and
    ``state_dict()``).

    >>> p = ember.nn.Parameter(ember.zeros(2))
    >>> p.requires_grad, isinstance(p, ember.Tensor)
    (True, True)
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be an ember.Tensor, got {type(data).__name__}")
        src = data.detach()  # the leaf shares data's memory but none of its history
        p = object.__new__(cls)
        p._h, p._shape, p._dtype, p._device, p._base = src._h, src._shape, src._dtype, src._device, None
        if requires_grad:
            p.requires_grad_(True)  # refuses integer dtypes with the autodiff error
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # __new__ did the work; this only swallows the constructor arguments

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        out.__dict__.update(self.__dict__)
        memo[id(self)] = out
        return out

    def __copy__(self):
        return self.__deepcopy__({})

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad, dict(self.__dict__)))


def _rebuild_parameter(data: Tensor, requires_grad: bool, attrs: dict) -> Parameter:
    p = Parameter(data, requires_grad)
    p.__dict__.update(attrs)
    return p


def is_parameter(obj) -> bool:
    """True for nn.Parameter instances."""
    return isinstance(obj, Parameter)
