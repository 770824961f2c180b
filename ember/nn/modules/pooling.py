"""Pooling layers (max, average, adaptive, power-average, max-unpool) and Fold/Unfold, as modules
over the functional ops, with torch.nn's arguments and reprs.

>>> ember.nn.MaxPool2d(2)(ember.ones(1, 1, 4, 4)).shape
ember.Size([1, 1, 2, 2])
>>> ember.nn.AdaptiveAvgPool2d((1, 1))(ember.ones(2, 3, 5, 7)).shape
ember.Size([2, 3, 1, 1])
"""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from ..module import Module
from .conv import _ntuple

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Fold", "Unfold"]


# ---- max pooling -------------------------------------------------------------------------------------
class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) or (C, L) input; ``return_indices=True`` also returns
    the flat positions of the maxima (for MaxUnpool1d).

    >>> ember.nn.MaxPool1d(2)(ember.arange(4.0).reshape(1, 1, 4))
    tensor([[[1., 3.]]])
    """

    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) or (C, H, W) input.

    >>> ember.nn.MaxPool2d(3, stride=2, padding=1)(ember.ones(1, 1, 8, 8)).shape
    ember.Size([1, 1, 4, 4])
    """

    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""

    _fn = staticmethod(F.max_pool3d)


# ---- average pooling ---------------------------------------------------------------------------------
class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) or (C, L) input.

    >>> ember.nn.AvgPool1d(2)(ember.arange(4.0).reshape(1, 1, 4))
    tensor([[[0.5000, 2.5000]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1, "stride", "AvgPool1d")
        self.padding = _ntuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, H, W) or (C, H, W) input; ``divisor_override`` replaces
    the window size as the divisor.

    >>> ember.nn.AvgPool2d(2)(ember.ones(1, 1, 4, 4)).shape
    ember.Size([1, 1, 2, 2])
    """

    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, D, H, W) or (C, D, H, W) input."""

    _fn = staticmethod(F.avg_pool3d)


# ---- adaptive pooling --------------------------------------------------------------------------------
class _AdaptiveAvgPoolNd(Module):
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean pooling to a fixed output length, whatever the input length.

    >>> ember.nn.AdaptiveAvgPool1d(2)(ember.arange(6.0).reshape(1, 1, 6))
    tensor([[[1., 4.]]])
    """

    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean pooling to a fixed (H, W); an entry None keeps that input size."""

    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean pooling to a fixed (D, H, W); an entry None keeps that input size."""

    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length (``return_indices`` as for MaxPool1d).

    >>> ember.nn.AdaptiveMaxPool1d(2)(ember.arange(6.0).reshape(1, 1, 6))
    tensor([[[2., 5.]]])
    """

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W); an entry None keeps that input size."""

    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W); an entry None keeps that input size."""

    _fn = staticmethod(F.adaptive_max_pool3d)


# ---- power-average pooling ---------------------------------------------------------------------------
class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """(sum of x**p over each window) ** (1/p): p=1 is sum pooling, p=inf max pooling.

    >>> ember.nn.LPPool1d(2, 2)(ember.tensor([[[3.0, 4.0]]]))
    tensor([[[5.]]])
    """

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (H, W) windows."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (D, H, W) windows."""

    _fn = staticmethod(F.lp_pool3d)


# ---- max unpooling -----------------------------------------------------------------------------------
class _MaxUnpoolNd(Module):
    _fn = None
    _nd = 0

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride if stride is not None else kernel_size, nd, "stride", name)
        self.padding = _ntuple(padding, nd, "padding", name)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: scatter values back to the positions in ``indices``,
    zeros elsewhere.

    >>> x = ember.tensor([[[1.0, 3.0, 2.0, 0.0]]])
    >>> y, i = ember.nn.MaxPool1d(2, return_indices=True)(x)
    >>> ember.nn.MaxUnpool1d(2)(y, i)
    tensor([[[0., 3., 2., 0.]]])
    """

    _nd = 1
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d."""

    _nd = 2
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d."""

    _nd = 3
    _fn = staticmethod(F.max_unpool3d)


# ---- fold / unfold -----------------------------------------------------------------------------------
class Fold(Module):
    """Sum sliding blocks (N, C*prod(k), L) back into a (N, C, *output_size) image (col2im).

    >>> ember.nn.Fold((3, 3), 2)(ember.ones(1, 4, 4)).shape
    ember.Size([1, 1, 3, 3])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding blocks of (N, C, H, W) input as columns (N, C*prod(k), L) (im2col).

    >>> ember.nn.Unfold(2)(ember.ones(1, 1, 3, 3)).shape
    ember.Size([1, 4, 4])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
