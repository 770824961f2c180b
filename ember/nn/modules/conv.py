"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with torch.nn's arguments,
parameter shapes, default initialisation and padding modes.

>>> conv = ember.nn.Conv2d(3, 8, 3, padding=1)
>>> conv(ember.ones(2, 3, 5, 5)).shape
ember.Size([2, 8, 5, 5])
>>> conv.weight.shape
ember.Size([8, 3, 3, 3])
"""

from __future__ import annotations

import math

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n: int, name: str, layer: str) -> tuple[int, ...]:
    """An int or a length-n sequence of ints as an n-tuple (torch's _single/_pair/_triple)."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{layer}: {name} must be an int or a tuple of {n} ints, got {tuple(value)}")
        items = tuple(value)
    else:
        items = (value,) * n
    for v in items:
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"{layer}: {name} must contain ints, got {value!r}")
    return tuple(int(v) for v in items)


class _ConvNd(Module):
    """Shared constructor of the convolution layers: validates the geometry, allocates weight
    ((out, in/groups, *k), or (in, out/groups, *k) when transposed) and bias, and draws them as
    PyTorch does (kaiming_uniform_ with a=sqrt(5), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

    _nd = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation,
                 transposed: bool, output_padding, groups: int, bias: bool, padding_mode: str,
                 device=None, dtype=None) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd
        if isinstance(groups, bool) or not hasattr(groups, "__index__") or int(groups) <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        groups = int(groups)
        if in_channels % groups != 0:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups != 0:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got padding_mode="
                             f"'{padding_mode}'")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, nd, "padding", name)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, nd, "output_padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for the non-zero padding modes: last dim first, (before, after) per dim;
        # 'same' puts the odd element after, as the functional conv does
        rpad: list[int] = []
        for i in reversed(range(nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                rpad += [total // 2, total - total // 2]
            elif self.padding == "valid":
                rpad += [0, 0]
            else:
                rpad += [self.padding[i], self.padding[i]]
        self._reversed_padding_repeated_twice = rpad
        if transposed:
            shape = (self.in_channels, self.out_channels // groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(self.out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias with PyTorch's default scheme."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        nd = self._nd
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            # pad explicitly in the requested mode, then convolve without padding
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or unbatched (C_in, L) input.

    ``padding`` may be an int, a tuple, 'valid' or 'same'; ``padding_mode`` is 'zeros',
    'reflect', 'replicate' or 'circular'.

    >>> ember.nn.Conv1d(2, 4, 3)(ember.ones(1, 2, 10)).shape
    ember.Size([1, 4, 8])
    """

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or unbatched (C_in, H, W) input.

    >>> ember.nn.Conv2d(1, 2, 3, stride=2)(ember.ones(1, 1, 7, 7)).shape
    ember.Size([1, 2, 3, 3])
    """

    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or unbatched (C_in, D, H, W) input.

    >>> ember.nn.Conv3d(1, 2, 3)(ember.ones(1, 1, 4, 4, 4)).shape
    ember.Size([1, 2, 2, 2, 2])
    """

    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size) -> tuple[int, ...]:
        """The output_padding that makes the output spatial size ``output_size`` (which may also
        carry the batch and channel dims), checked against the sizes this geometry can reach."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = [int(s) for s in output_size]
        if len(size) not in (nd, nd + 1, nd + 2):
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must have {nd} or "
                             f"{nd + 2} elements (got {len(size)})")
        size = size[-nd:]
        spatial = input.shape[-nd:]
        lo, hi = self._bounds(spatial)
        if any(not a <= s <= b for a, s, b in zip(lo, size, hi)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range from {lo} to {hi} "
                             f"(for an input of {list(spatial)})")
        return tuple(s - a for s, a in zip(size, lo))

    def _bounds(self, spatial) -> tuple[list[int], list[int]]:
        """Smallest and largest output sizes per spatial dim (they differ by stride - 1)."""
        lo = [(spatial[i] - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1)
              + 1 for i in range(self._nd)]
        return lo, [v + s - 1 for v, s in zip(lo, self.stride)]

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: input must be an ember.Tensor, got {type(input).__name__}")
        if input.dim() not in (self._nd + 1, self._nd + 2):
            raise RuntimeError(f"{type(self).__name__}: expected {self._nd + 1}D (unbatched) or {self._nd + 2}D "
                               f"(batched) input, but got input of size {list(input.shape)}")
        opad = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, opad, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the gradient of Conv1d in its input); weight (C_in, C_out/groups, k).

    ``forward(input, output_size=None)``: ``output_size`` picks among the sizes a strided
    transposed convolution can produce.

    >>> ember.nn.ConvTranspose1d(2, 3, 3, stride=2)(ember.ones(1, 2, 4)).shape
    ember.Size([1, 3, 9])
    """

    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; weight (C_in, C_out/groups, kH, kW).

    >>> ember.nn.ConvTranspose2d(2, 3, 2, stride=2)(ember.ones(1, 2, 4, 4)).shape
    ember.Size([1, 3, 8, 8])
    """

    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution; weight (C_in, C_out/groups, kD, kH, kW).

    >>> ember.nn.ConvTranspose3d(1, 1, 2, stride=2)(ember.ones(1, 1, 2, 2, 2)).shape
    ember.Size([1, 1, 4, 4, 4])
    """

    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)
