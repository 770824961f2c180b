"""Normalisation layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm and
LocalResponseNorm, with torch.nn's arguments, parameter/buffer names and running-statistics rules.

>>> bn = ember.nn.BatchNorm1d(3)
>>> list(bn.state_dict())
['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
>>> bn(ember.randn(8, 3)).shape
ember.Size([8, 3])
"""

from __future__ import annotations

import numbers

from ... import _dtype as dt
from ..._creation import empty, ones, tensor, zeros
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from .._norm import batch_norm_counting
from ..module import Module
from ..parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _check_input(x, layer: str, dims: tuple[int, ...]) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: input must be an ember.Tensor, got {type(x).__name__}")
    if x.dim() not in dims:
        want = " or ".join(f"{d}D" for d in dims)
        raise ValueError(f"expected {want} input (got {x.dim()}D input)")


class _NormBase(Module):
    """Shared state of batch and instance norm: affine ``weight``/``bias`` (ones/zeros) and, with
    ``track_running_stats``, the buffers ``running_mean``, ``running_var`` and
    ``num_batches_tracked`` (registered in that order, as in PyTorch). ``bias=False`` (keyword
    only) keeps the scale but drops the shift."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = int(num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(self.num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(self.num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(self.num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(self.num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, batch counter 0."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims: tuple[int, ...] = ()

    def forward(self, input: Tensor) -> Tensor:
        _check_input(input, type(self).__name__, self._dims)
        factor = 0.0 if self.momentum is None else self.momentum
        counter = None
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            if self.momentum is None:  # cumulative moving average: the n-th batch gets weight 1/n
                with no_grad():
                    self.num_batches_tracked.add_(1)
                factor = 1.0 / float(self.num_batches_tracked.item())
            else:  # counted by the batch-norm op itself where the backend can
                counter = self.num_batches_tracked
        # batch statistics in training, and in eval too when there are no running statistics
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm_counting(input, self.running_mean if keep else None,
                                   self.running_var if keep else None, self.weight, self.bias, use_batch, factor,
                                   self.eps, counter)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) input, per channel C.

    Training uses the batch statistics and moves the running ones by ``momentum`` (unbiased
    variance); ``momentum=None`` keeps a cumulative average instead. Eval uses the running
    statistics (or the batch's when ``track_running_stats=False``).

    >>> ember.nn.BatchNorm1d(4, affine=False)
    BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=True)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) input, per channel C (see BatchNorm1d)."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) input, per channel C (see BatchNorm1d)."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    _nd = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        nd = self._nd
        _check_input(input, type(self).__name__, (nd + 1, nd + 2))
        channels = input.shape[-nd - 1]
        if channels != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={input.dim() - nd - 1} to match num_features "
                             f"({self.num_features}), but got: {channels}.")
        unbatched = input.dim() == nd + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, L) or (C, L) input over L; no affine parameters
    and no running statistics unless asked for (PyTorch's defaults).

    >>> ember.nn.InstanceNorm1d(3)(ember.randn(2, 3, 5)).shape
    ember.Size([2, 3, 5])
    """

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, H, W) or (C, H, W) input over (H, W)."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, D, H, W) or (C, D, H, W) input over (D, H, W)."""

    _nd = 3


def _shape_tuple(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)

def _affine_parameters(module: Module, shape, affine: bool, bias: bool, device, dtype) -> None:
    """Register ``weight`` then ``bias`` of ``shape`` (or None placeholders), in PyTorch's order."""
    if affine:
        module.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """weight = 1, bias = 0 (when present)."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` (ones) and
    shift by ``bias`` (zeros) when ``elementwise_affine``.

    >>> ln = ember.nn.LayerNorm(4)
    >>> ln
    LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
    >>> ln(ember.arange(8.0).reshape(2, 4)).abs().sum(-1).shape
    ember.Size([2])
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the C channels of (N, C, *) input into ``num_groups`` groups and normalise each
    (sample, group); per-channel affine ``weight``/``bias`` when ``affine``.

    >>> ember.nn.GroupNorm(2, 4)(ember.randn(3, 4, 5)).shape
    ember.Size([3, 4, 5])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = int(num_groups)
        self.num_channels = int(num_channels)
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (self.num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x², trailing dims) + eps) * weight; ``eps=None`` uses the dtype's machine
    epsilon, as PyTorch does.

    >>> ember.nn.RMSNorm(2)(ember.tensor([[3.0, 4.0]])).detach()
    tensor([[0.8485, 1.1314]])
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """AlexNet's normalisation across ``size`` neighbouring channels:
    x / (k + alpha/size * sum of x² over the window) ** beta.

    >>> ember.nn.LocalResponseNorm(2)
    LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
