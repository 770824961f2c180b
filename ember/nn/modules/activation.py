"""Activation functions as modules (ReLU, GELU, SiLU, ..., Softmax, PReLU), with torch.nn's
arguments and reprs; each forwards to ``ember.nn.functional``. MultiheadAttention, which torch
keeps in the same file, lives in ``transformer.py``; SwiGLU (not in torch) in ``misc.py``.

>>> ember.nn.GELU(approximate="tanh")
GELU(approximate='tanh')
>>> ember.nn.ReLU()(ember.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""

from __future__ import annotations

import warnings

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["ReLU", "ReLU6", "RReLU", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
           "Hardtanh", "Hardsigmoid", "Hardswish", "Hardshrink", "Softshrink", "Tanhshrink", "Threshold",
           "Softplus", "Softsign", "LogSigmoid", "Sigmoid", "Tanh", "GLU", "Softmax", "Softmin", "LogSoftmax",
           "Softmax2d"]


def _inplace_str(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class _Stateless(Module):
    """An activation whose only setting is ``inplace`` (repr ``Name(inplace=True)`` or ``Name()``)."""

    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation without settings."""

    _fn = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class ReLU(_Stateless):
    """max(x, 0).

    >>> ember.nn.ReLU(inplace=True)
    ReLU(inplace=True)
    """

    _fn = staticmethod(F.relu)


class SiLU(_Stateless):
    """x * sigmoid(x) (swish)."""

    _fn = staticmethod(F.silu)


class Mish(_Stateless):
    """x * tanh(softplus(x))."""

    _fn = staticmethod(F.mish)


class SELU(_Stateless):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))) with SELU's fixed alpha and scale."""

    _fn = staticmethod(F.selu)


class Hardsigmoid(_Stateless):
    """relu6(x + 3) / 6 (no repr settings, as in PyTorch)."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Stateless):
    """x * relu6(x + 3) / 6 (no repr settings, as in PyTorch)."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Hardtanh(Module):
    """clamp(x, min_val, max_val).

    >>> ember.nn.Hardtanh(-2, 2)
    Hardtanh(min_val=-2, max_val=2)
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        # min_value / max_value: PyTorch's deprecated spellings, still accepted there
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6).

    >>> ember.nn.ReLU6()(ember.tensor([-1.0, 8.0]))
    tensor([0., 6.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x below.

    >>> ember.nn.LeakyReLU(0.2)
    LeakyReLU(negative_slope=0.2)
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class RReLU(Module):
    """Randomised leaky ReLU: in training each negative element gets a slope drawn from
    U(lower, upper); in eval the slope is (lower + upper) / 2."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learnt slope: ``num_parameters`` is 1 (shared) or the channel count (dim 1
    of the input); the slopes start at ``init``.

    >>> p = ember.nn.PReLU(3)
    >>> p.weight.shape
    ember.Size([3])
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = int(num_parameters)
        self.init = init
        self.weight = Parameter(empty(self.num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _AlphaUnit(Module):
    _fn = None

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class ELU(_AlphaUnit):
    """x for x > 0, alpha * (exp(x) - 1) below."""

    _fn = staticmethod(F.elu)


class CELU(_AlphaUnit):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    _fn = staticmethod(F.celu)


class GELU(Module):
    """x * Phi(x); ``approximate='tanh'`` uses the tanh approximation.

    >>> ember.nn.GELU()
    GELU(approximate='none')
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0."""

    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""

    _fn = staticmethod(F.softshrink)


class Tanhshrink(_Plain):
    """x - tanh(x)."""

    _fn = staticmethod(F.tanhshrink)


class Threshold(Module):
    """x where x > threshold, else value.

    >>> ember.nn.Threshold(0.1, 20.0)(ember.tensor([0.0, 1.0]))
    tensor([20.,  1.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (in beta * x) for stability."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(_Plain):
    """x / (1 + |x|)."""

    _fn = staticmethod(F.softsign)


class LogSigmoid(_Plain):
    """log(sigmoid(x)), computed stably."""

    _fn = staticmethod(F.logsigmoid)


class Sigmoid(_Plain):
    """1 / (1 + exp(-x))."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    """Hyperbolic tangent."""

    _fn = staticmethod(F.tanh)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b) with a, b the two halves of the input along ``dim``.

    >>> ember.nn.GLU()(ember.ones(2, 4)).shape
    ember.Size([2, 2])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def _legacy_dim(ndim: int, name: str) -> int:
    """PyTorch's implicit softmax dim for modules built without one (deprecated there too)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def _dim(self, input: Tensor, name: str) -> int:
        return self.dim if self.dim is not None else _legacy_dim(input.dim(), name)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along ``dim``.

    >>> ember.nn.Softmax(dim=-1)(ember.zeros(2))
    tensor([0.5000, 0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self._dim(input, "softmax"))


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self._dim(input, "softmin"))


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim``, computed stably."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self._dim(input, "log_softmax"))


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)
