"""Affine layers: Linear and Bilinear, with torch.nn's arguments, parameter names and initialisation.

>>> layer = ember.nn.Linear(3, 2)
>>> layer(ember.ones(4, 3)).shape
ember.Size([4, 2])
>>> [k for k in layer.state_dict()]
['weight', 'bias']
"""

from __future__ import annotations

import math

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]


def _features(value, name: str, layer: str) -> int:
    """Feature counts are non-negative ints (torch accepts numpy ints, refuses floats and bools)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{layer}: {name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < 0:
        raise RuntimeError(f"{layer}: {name} must be non-negative, got {value}")
    return value


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last dim.

    ``weight`` is (out_features, in_features) and ``bias`` (out_features,); both start as
    PyTorch's: ``kaiming_uniform_(weight, a=sqrt(5))`` (U(-1/sqrt(in), 1/sqrt(in))) and the bias
    uniform in the same bound.

    >>> ember.nn.Linear(5, 3, bias=False)
    Linear(in_features=5, out_features=3, bias=False)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = _features(in_features, "in_features", "Linear")
        self.out_features = _features(out_features, "out_features", "Linear")
        self.weight = Parameter(empty(self.out_features, self.in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(self.out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default scheme."""
        # a=sqrt(5) makes kaiming's bound gain*sqrt(3/fan_in) equal to 1/sqrt(fan_in)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the class name that MultiheadAttention's ``out_proj`` has in PyTorch (so
    reprs match); it behaves exactly like Linear."""


class Bilinear(Module):
    """``y[..., o] = x1 @ weight[o] @ x2 + bias[o]``: weight (out, in1, in2), bias (out,), both
    initialised U(-1/sqrt(in1), 1/sqrt(in1)) as in PyTorch.

    >>> ember.nn.Bilinear(3, 4, 2)(ember.ones(5, 3), ember.ones(5, 4)).shape
    ember.Size([5, 2])
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = _features(in1_features, "in1_features", "Bilinear")
        self.in2_features = _features(in2_features, "in2_features", "Bilinear")
        self.out_features = _features(out_features, "out_features", "Bilinear")
        self.weight = Parameter(empty(self.out_features, self.in1_features, self.in2_features,
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(self.out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
