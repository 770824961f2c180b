"""Normalisation layers' functions: layer_norm, group_norm, batch_norm, instance_norm, rms_norm,
local_response_norm and normalize (torch.nn.functional's names and semantics).

The mean/variance normalisations all reduce to one backend op, ``norm_affine`` (statistics over a
tuple of dims, then scale and shift by tensors that broadcast against the input), so a backend
that fuses it speeds up all four; without it the frontend composes var_mean and elementwise ops.
Batch and instance norm update their running statistics in place, outside autograd, as PyTorch.

>>> import ember.nn.functional as F
>>> F.layer_norm(ember.tensor([[1.0, 3.0]]), (2,))
tensor([[-1.0000,  1.0000]])
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor, wrap
from ._activation import check_tensor

__all__ = ["layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "local_response_norm",
           "normalize"]


def _float(x, op: str) -> Tensor:
    check_tensor(x, op)
    if not x._dtype.is_floating_point:
        raise dt.unsupported(op, x._dtype, "normalisation needs a floating tensor")
    return x


def _same_dtype(x: Tensor, t, name: str, op: str):
    if t is None:
        return None
    check_tensor(t, op, name)
    if t._dtype is not x._dtype:
        raise RuntimeError(f"{op}: expected {name} to have dtype {x._dtype.name} like the input, got {t._dtype.name}")
    return t


def _norm_affine(x: Tensor, w, b, dims: tuple, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(y, mean, var) with biased var over ``dims`` (kept); w/b broadcast against x (or None)."""
    stat_shape = tuple(1 if i in dims else n for i, n in enumerate(x._shape))
    be = x._device.backend
    if be.supports("norm_affine"):
        hs = be.run("norm_affine", (x._h, None if w is None else w._h, None if b is None else b._h),
                    {"dim": dims, "eps": float(eps)})
        dev = x._device
        return (wrap(hs[0], x._shape, x._dtype, dev), wrap(hs[1], stat_shape, x._dtype, dev),
                wrap(hs[2], stat_shape, x._dtype, dev))
    from .._reduction import var_mean
    var, mean = var_mean(x, dims, correction=0, keepdim=True)
    y = (x - mean) * (var + eps).rsqrt()
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean.detach(), var.detach()


def _channel_view(t, ndim: int):
    """A per-channel (C,) tensor shaped to broadcast against (N, C, *spatial) of ``ndim`` dims."""
    return None if t is None else t.reshape((t._shape[0],) + (1,) * (ndim - 2))


# ---- layer norm and rms norm ---------------------------------------------------------------------
def _trailing(x: Tensor, normalized_shape, op: str) -> tuple:
    if not isinstance(normalized_shape, (tuple, list)) and type(normalized_shape).__name__ != "Size":
        raise TypeError(f"{op}(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    ns = tuple(int(n) for n in normalized_shape)
    if not ns:
        raise RuntimeError(f"{op}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           "least one element, but got normalized_shape = []")
    k = len(ns)
    if x.ndim < k or tuple(x._shape[-k:]) != ns:
        raise RuntimeError(f"{op}: Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(x._shape)}")
    return ns


def _affine_shape(t, ns: tuple, name: str, op: str):
    if t is not None and tuple(t._shape) != ns:
        raise RuntimeError(f"{op}: Expected {name} to be of same shape as normalized_shape, but got {name} of "
                           f"shape {list(t._shape)} and normalized_shape = {list(ns)}")


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale by weight and shift by bias.

    >>> ember.nn.functional.layer_norm(ember.tensor([[0.0, 2.0, 4.0]]), [3]).round(decimals=3)
    tensor([[-1.2250,  0.0000,  1.2250]])
    """
    x = _float(input, "layer_norm")
    ns = _trailing(x, normalized_shape, "layer_norm")
    w, b = _same_dtype(x, weight, "weight", "layer_norm"), _same_dtype(x, bias, "bias", "layer_norm")
    _affine_shape(w, ns, "weight", "layer_norm")
    _affine_shape(b, ns, "bias", "layer_norm")
    dims = tuple(range(x.ndim - len(ns), x.ndim))
    return _norm_affine(x, w, b, dims, eps)[0]


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x², trailing dims) + eps) * weight; eps defaults to the dtype's machine epsilon."""
    x = _float(input, "rms_norm")
    ns = _trailing(x, normalized_shape, "rms_norm")
    w = _same_dtype(x, weight, "weight", "rms_norm")
    _affine_shape(w, ns, "weight", "rms_norm")
    eps = dt.finfo(x._dtype).eps if eps is None else float(eps)
    dims = tuple(range(x.ndim - len(ns), x.ndim))
    be = x._device.backend
    if be.supports("rms_norm"):
        h = be.run("rms_norm", (x._h, None if w is None else w._h), {"dim": dims, "eps": eps})
        return wrap(h, x._shape, x._dtype, x._device)
    work = x.float() if x._dtype.itemsize == 2 else x
    y = work * ((work * work).mean(dims, keepdim=True) + eps).rsqrt()
    y = y.to(x._dtype)
    return y if w is None else y * w


# ---- group norm -------------------------------------------------------------------------------------------
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise each of ``num_groups`` groups of channels over its channels and spatial positions."""
    x = _float(input, "group_norm")
    if x.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x._shape[0], x._shape[1]
    g = int(num_groups)
    if g <= 0 or c % g:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x._shape)} and num_groups={g}")
    w, b = _same_dtype(x, weight, "weight", "group_norm"), _same_dtype(x, bias, "bias", "group_norm")
    for t, name in ((w, "weight"), (b, "bias")):
        if t is not None and (t.ndim != 1 or t._shape[0] != c):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to the number of channels "
                               f"in input, but got {name} of shape {list(t._shape)} and input of shape "
                               f"{list(x._shape)}")
    spatial = math.prod(x._shape[2:])
    # (N, G, C/G·S): each group's statistics reduce the trailing dim (a row-wise op); the
    # per-channel affine follows on the (N, C, S) view
    y = _norm_affine(x.reshape(n, g, (c // g) * spatial), None, None, (2,), eps)[0].reshape(n, c, spatial)
    if w is not None:
        y = y * w.reshape(c, 1)
    if b is not None:
        y = y + b.reshape(c, 1)
    return y.reshape(x._shape)


# ---- batch norm and instance norm -------------------------------------------------------------------------
def _check_running(x: Tensor, t, name: str, c: int, op: str):
    if t is None:
        return None
    check_tensor(t, op, name)
    if t.numel() != c:
        raise RuntimeError(f"{op}: running_{name} should contain {c} elements not {t.numel()}")
    if t._dtype is not x._dtype and not (x._dtype.itemsize == 2 and t._dtype is dt.float32):
        raise RuntimeError(f"{op}: running_{name} has dtype {t._dtype.name} but the input {x._dtype.name}; "
                           "they must match (float32 statistics are allowed for 16-bit inputs)")
    return t


def _update_running(stat: Tensor, new: Tensor, momentum: float, scale: float = 1.0) -> None:
    """stat = (1 - momentum) * stat + momentum * scale * new, written in place outside autograd.

    Every batch-norm layer runs this twice per training step: one backend op where the backend has
    ``running_update_`` (CUDA), else three (scale, scaled new value, accumulate) with no temporaries
    written back."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        s = stat.detach()
        b = s._device.backend
        if b.supports("running_update_"):
            b.run("running_update_", (s._h, new.detach()._h), {"momentum": momentum, "scale": scale})
            return
        s.mul_(1.0 - momentum)
        s.add_(new.detach().reshape(stat._shape).to(stat._dtype), alpha=momentum * scale)


def _check_affine(t, name: str, c: int, op: str):
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{op}: expected {name} to have {c} elements, got {t.numel()} (shape {list(t._shape)})")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims.

    In training the batch statistics are used and the running statistics (when given) move toward
    them by ``momentum``, the variance unbiased; in eval the running statistics are used.

    >>> x = ember.randn(8, 3, 4, 4)
    >>> ember.nn.functional.batch_norm(x, None, None, training=True).shape
    ember.Size([8, 3, 4, 4])
    """
    return batch_norm_counting(input, running_mean, running_var, weight, bias, training, momentum, eps, None)


def batch_norm_counting(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                        weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float, eps: float,
                        counter: Tensor | None) -> Tensor:
    """:func:`batch_norm` that also adds one to ``counter`` (the module's ``num_batches_tracked``) when
    training: inside the batch-norm op where the backend has one, which saves an op per layer per step."""
    x = _float(input, "batch_norm")
    if x.ndim < 2:
        raise RuntimeError(f"batch_norm: expected an input of shape (N, C, *), got shape {list(x._shape)}")
    c = x._shape[1]
    rm = _check_running(x, running_mean, "mean", c, "batch_norm")
    rv = _check_running(x, running_var, "var", c, "batch_norm")
    w, b = _same_dtype(x, weight, "weight", "batch_norm"), _same_dtype(x, bias, "bias", "batch_norm")
    _check_affine(w, "weight", c, "batch_norm")
    _check_affine(b, "bias", c, "batch_norm")
    if training:
        count = x.numel() // c if c else 0
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.shape}")
        be = x._device.backend
        if counter is not None and (counter._device != x._device or counter._dtype is not dt.int64
                                    or counter.numel() != 1):
            raise RuntimeError("batch_norm: the batch counter must be a one-element int64 tensor on the input's "
                               "device")
        if be.supports("batch_norm"):
            # one op: (C,) parameters as they are (no channel views to record and differentiate), the
            # running statistics and the counter updated by the backend
            hs = be.run("batch_norm", tuple(None if t is None else t._h for t in (x, w, b, rm, rv, counter)),
                        {"eps": float(eps), "momentum": float(momentum)})
            return wrap(hs[0], x._shape, x._dtype, x._device)
        if counter is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                counter.add_(1)
        wv, bv = _channel_view(w, x.ndim), _channel_view(b, x.ndim)
        dims = (0,) + tuple(range(2, x.ndim))
        y, mean, var = _norm_affine(x, wv, bv, dims, eps)
        if count and rm is not None:
            _update_running(rm, mean, float(momentum))
        if count and rv is not None:  # the running variance is the unbiased one
            _update_running(rv, var, float(momentum), count / max(count - 1, 1))
        return y
    if rm is None or rv is None:
        raise RuntimeError("batch_norm: running_mean must be defined in evaluation mode (training=False)")
    wv, bv = _channel_view(w, x.ndim), _channel_view(b, x.ndim)
    # per-channel scale and shift first (C values), then one multiply-add over the input
    shape = (c,) + (1,) * (x.ndim - 2)
    scale = (rv.reshape(shape).to(x._dtype) + eps).rsqrt()
    if wv is not None:
        scale = scale * wv
    shift = -(rm.reshape(shape).to(x._dtype) * scale)
    if bv is not None:
        shift = shift + bv
    return x * scale + shift


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims; with ``use_input_stats=False`` use
    the running statistics instead (which are updated, averaged over the batch, otherwise)."""
    x = _float(input, "instance_norm")
    if x.ndim < 2:
        raise RuntimeError(f"instance_norm: expected an input of shape (N, C, *), got shape {list(x._shape)}")
    c = x._shape[1]
    rm = _check_running(x, running_mean, "mean", c, "instance_norm")
    rv = _check_running(x, running_var, "var", c, "instance_norm")
    w, b = _same_dtype(x, weight, "weight", "instance_norm"), _same_dtype(x, bias, "bias", "instance_norm")
    _check_affine(w, "weight", c, "instance_norm")
    _check_affine(b, "bias", c, "instance_norm")
    wv, bv = _channel_view(w, x.ndim), _channel_view(b, x.ndim)
    if not use_input_stats:
        if rm is None or rv is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return batch_norm(x, rm, rv, w, b, False, momentum, eps)
    spatial = math.prod(x._shape[2:])
    if spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {x.shape}")
    dims = tuple(range(2, x.ndim))
    y, mean, var = _norm_affine(x, wv, bv, dims, eps)
    if x.numel():
        if rm is not None:
            _update_running(rm, mean.reshape(x._shape[:2]).mean(0), float(momentum))
        if rv is not None:
            unbiased = var.reshape(x._shape[:2]) * (spatial / (spatial - 1))
            _update_running(rv, unbiased.mean(0), float(momentum))
    return y


# ---- local response norm and normalize ------------------------------------------------------------------
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x² over ``size`` neighbouring channels) ** beta (AlexNet's LRN)."""
    x = _float(input, "local_response_norm")
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    if x.numel() == 0:
        return x
    size = int(size)
    if size <= 0:
        raise RuntimeError(f"local_response_norm: size must be positive, got {size}")
    c = x._shape[1]
    sq = x * x
    before, after = size // 2, (size - 1) // 2
    # zero-pad the channel dim, then add the ``size`` shifted windows (PyTorch divides by size
    # whatever the padding, like an average pool that counts padded zeros)
    pad = [0, 0] * (x.ndim - 2) + [before, after]
    from .._pad import pad as _pad
    padded = _pad(sq, pad)
    div = padded.narrow(1, 0, c)
    for i in range(1, size):
        div = div + padded.narrow(1, i, c)
    div = (div * (alpha / size) + k) ** beta
    return x / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """x / max(‖x‖_p along dim, eps).

    >>> ember.nn.functional.normalize(ember.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    check_tensor(input, "normalize")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"normalize: expected a floating point tensor as input, got {input._dtype.name}")
    x = input
    if out is not None:
        raise TypeError("normalize: the out= argument is not supported; assign the result instead")
    return x / _norm_zero_safe(x, float(p), dim).clamp_min(eps)


def _norm_zero_safe(x: Tensor, p: float, dim: int) -> Tensor:
    """The p-norm along dim (kept) whose gradient at an all-zero slice is 0, as PyTorch's norm
    backward gives (sqrt's derivative at 0 would turn it into NaN)."""
    from ..linalg import vector_norm
    if math.isinf(p) or p <= 0:
        return vector_norm(x, p, dim, keepdim=True)
    s = (x * x if p == 2 else x.abs() ** p).sum(dim, keepdim=True)
    pos = s > 0
    root = s.where(pos, 1.0)
    root = root.sqrt() if p == 2 else root ** (1.0 / p)
    return root.where(pos, 0.0)
