"""Dropout layers: Dropout, Dropout1d/2d/3d (whole channels), AlphaDropout and FeatureAlphaDropout.
They act only in training mode (``module.train()``); in eval mode they return the input.

>>> d = ember.nn.Dropout(0.5).eval()
>>> d(ember.ones(3))
tensor([1., 1., 1.])
"""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from ..module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` and scale the survivors by 1/(1-p) (training only).

    >>> ember.nn.Dropout(p=0.2)
    Dropout(p=0.2, inplace=False)
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p`` (training only)."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability ``p`` (training only)."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """SELU's dropout: dropped elements take SELU's negative saturation value and an affine map keeps
    the mean and variance of the input (training only)."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels (training only)."""

    _fn = staticmethod(F.feature_alpha_dropout)
