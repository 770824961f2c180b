"""Shape and distance layers: Flatten, Unflatten, Upsample (+ UpsamplingNearest2d/Bilinear2d),
PixelShuffle, PixelUnshuffle, ChannelShuffle, CosineSimilarity, PairwiseDistance, and the SwiGLU
activation (which PyTorch does not have; its convention is documented on the class).

>>> ember.nn.Flatten()(ember.ones(2, 3, 4)).shape
ember.Size([2, 12])
>>> ember.nn.PixelShuffle(2)(ember.ones(1, 8, 3, 3)).shape
ember.Size([1, 2, 6, 6])
"""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from ..module import Module

__all__ = ["Flatten", "Unflatten", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance", "SwiGLU"]


class Flatten(Module):
    """Flatten dims ``start_dim``..``end_dim`` into one (by default all but the batch dim).

    >>> ember.nn.Flatten(0, -1)(ember.ones(2, 3)).shape
    ember.Size([6])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a tuple or list of ints, one of which may be -1).

    >>> ember.nn.Unflatten(1, (2, 5))(ember.ones(3, 10)).shape
    ember.Size([3, 2, 5])
    """

    def __init__(self, dim: int | str, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dimensions are not supported by ember; pass an int dim")
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument type for dim parameter, expected `int`, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type {type(unflattened_size).__name__}")
        for i, e in enumerate(unflattened_size):
            if isinstance(e, bool) or not isinstance(e, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(e).__name__} at pos {i}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Upsample(Module):
    """Resize spatial dims by ``size`` or ``scale_factor`` with F.interpolate's modes ('nearest',
    'linear', 'bilinear', 'bicubic', 'trilinear', 'nearest-exact').

    >>> ember.nn.Upsample(scale_factor=2, mode="nearest")
    Upsample(scale_factor=2.0, mode='nearest')
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (``Upsample(mode='nearest')``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(N, C*r², H, W) -> (N, C, H*r, W*r): sub-pixel convolution's rearrangement.

    >>> ember.nn.PixelShuffle(3)
    PixelShuffle(upscale_factor=3)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H*r, W*r) -> (N, C*r², H, W): the inverse of PixelShuffle."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (ShuffleNet): (N, g*k, *) viewed as
    (N, g, k, *), transposed to (N, k, g, *) and flattened back.

    >>> ember.nn.ChannelShuffle(2)(ember.arange(4.0).reshape(1, 4, 1)).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        g = self.groups
        if input.dim() < 3:
            raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                               f"sizes {list(input.shape)}")
        if g <= 0:
            raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
        c = input.shape[1]
        if c % g:
            raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
        return input.unflatten(1, (g, c // g)).transpose(1, 2).flatten(1, 2)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along ``dim`` (norms clamped below by ``eps``).

    >>> ember.nn.CosineSimilarity(dim=0)(ember.tensor([1.0, 0.0]), ember.tensor([1.0, 1.0]))
    tensor(0.7071)
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """‖x1 - x2 + eps‖_p over the last dim, row by row.

    >>> d = ember.nn.PairwiseDistance()(ember.tensor([[3.0, 0.0]]), ember.tensor([[0.0, 4.0]]))
    >>> round(d.item(), 4)
    5.0
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class SwiGLU(Module):
    """The SwiGLU gate (Shazeer, "GLU Variants Improve Transformer", 2020) as a parameter-free
    activation; PyTorch has no such module.

    Convention (that of nn.GLU, with SiLU in place of the sigmoid): the input is split in two
    halves ``a, b`` along ``dim`` and the result is ``a * silu(b)`` -- the first half carries the
    values, the second the gate. A Llama-style feed-forward block is then
    ``Linear(d, 2*h, bias=False) -> SwiGLU() -> Linear(h, d, bias=False)``, where the first
    linear's rows [0, h) are Llama's ``w3`` (up) and rows [h, 2h) its ``w1`` (gate).

    >>> ember.nn.SwiGLU()(ember.tensor([2.0, 0.0]))
    tensor([0.])
    >>> ember.nn.SwiGLU()(ember.ones(3, 8)).shape
    ember.Size([3, 4])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"SwiGLU: input must be an ember.Tensor, got {type(input).__name__}")
        if input.dim() == 0:
            raise RuntimeError("swiglu does not support scalars because halving size must be even")
        d = self.dim % input.dim() if -input.dim() <= self.dim < input.dim() else None
        if d is None:
            raise IndexError(f"SwiGLU: dim {self.dim} is out of range for a {input.dim()}-D input")
        n = input.shape[d]
        if n % 2:
            raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
        a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
        return a * F.silu(b)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
