"""Convolutions and sliding-block ops: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and fold.

The frontend validates the geometry with PyTorch's rules and error types, works out the output
shape, and dispatches one N-d backend op (``conv``, ``conv_transpose``, ``im2col``, ``col2im``)
on a batched input; unbatched inputs get a batch dim of one added and removed around it. Padding
goes to the backend as (before, after) pairs so that padding='same' with an even kernel needs no
padded copy up here.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._autocast_hooks import autocast_inputs
from .._tensor import Tensor, run, same_device

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "unfold", "fold"]


# ---- argument helpers (shared with _pool) ----------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer))


def _ints(value, n: int, name: str, op: str, msg: str | None = None) -> tuple[int, ...]:
    """An int or a sequence of 1 or ``n`` ints as an n-tuple (PyTorch expands single values)."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if _is_int(value):
        return (int(value),) * n
    if isinstance(value, (tuple, list)):
        for v in value:
            if not _is_int(v):
                raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(v).__name__}")
        if len(value) == 1:
            return (int(value[0]),) * n
        if len(value) == n:
            return tuple(int(v) for v in value)
        raise RuntimeError(msg or f"{op}: expected {name} to be a single integer value or a list of {n} values to "
                                  f"match the convolution dimensions, but got {name}={list(value)}")
    raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")


def _check_tensor(t, name: str, op: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def _sizes(shape) -> str:
    return " x ".join(str(n) for n in shape)


def _check_dtypes(op: str, input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    d = input._dtype
    if d is dt.bool:
        raise dt.unsupported(op, d, "convert with .float()")
    if weight._dtype is not d:
        raise RuntimeError(f"{op}: input ({d.name}) and weight ({weight._dtype.name}) must have the same dtype; "
                           f"convert one with .to(dtype)")
    if bias is not None and bias._dtype is not d:
        raise RuntimeError(f"{op}: input ({d.name}) and bias ({bias._dtype.name}) must have the same dtype; "
                           f"convert one with .to(dtype)")


def _batched(input: Tensor, nd: int, op: str, what: str = "input") -> tuple[Tensor, bool]:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) {what} to {op}, but got input of "
                           f"size: {list(input._shape)}")
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _geometry(op: str, stride, dilation, groups, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    stride = _ints(stride, nd, "stride", op)
    dilation = _ints(dilation, nd, "dilation", op)
    if not _is_int(groups):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (stride={list(stride)})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: non-positive dilation is not supported (dilation={list(dilation)})")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported (groups={groups})")
    return stride, dilation, int(groups)


def _check_weight(op: str, weight: Tensor, nd: int, transposed: bool) -> None:
    if weight.ndim != nd + 2:
        layout = "(in_channels, out_channels/groups, *kernel)" if transposed else \
            "(out_channels, in_channels/groups, *kernel)"
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight {layout}, but got weight of size "
                           f"{list(weight._shape)}")
    if any(k <= 0 for k in weight._shape[2:]):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got weight of size "
                           f"{list(weight._shape)}")


def _check_spatial(op: str, x: Tensor) -> None:
    if 0 in x._shape[2:]:
        raise RuntimeError(f"{op}: Only zero batch or zero channel inputs are supported, but got input shape: "
                           f"{list(x._shape)}")


def _check_bias(op: str, bias: Tensor | None, weight: Tensor, channels: int, transposed: bool) -> None:
    if bias is None:
        return
    _check_tensor(bias, "bias", op)
    if bias.ndim != 1 or bias._shape[0] != channels:
        t = "transposed=1, " if transposed else ""
        raise RuntimeError(f"{op}: Given {t}weight of size {list(weight._shape)}, expected bias to be 1-dimensional "
                           f"with {channels} elements, but got bias of size {list(bias._shape)} instead")


def _same_padding(kernel, dilation) -> tuple[tuple[int, int], ...]:
    # the total d*(k-1) is split with the extra element after, as PyTorch does for even kernels
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return tuple(out)


# ---- convolution -----------------------------------------------------------------------------------
# geometry already validated, by everything the checks read: a module called with the same shapes skips
# them (about 15 us of Python per call, paid by every convolution of a training step)
_CHECKED: dict = {}
_CHECKED_MAX = 4096


def _plain(v) -> bool:
    """An argument whose value is its hash (int, str, or a tuple of ints): safe as a cache key."""
    c = v.__class__
    return c is int or c is str or (c is tuple and all(e.__class__ is int for e in v))


def _convnd(nd: int, op: str, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    _check_tensor(input, "input", op)
    _check_tensor(weight, "weight", op)
    input, weight, bias = autocast_inputs(op, input, weight, bias)  # noqa: A001
    key = None
    if _plain(stride) and _plain(padding) and _plain(dilation) and groups.__class__ is int:
        key = (op, input._shape, weight._shape, input._dtype, weight._dtype, input._device, weight._device,
               None if bias is None else (bias.__class__, bias._shape, bias._dtype, bias._device),
               stride, padding, dilation, groups)
        hit = _CHECKED.get(key)
        if hit is not None:
            x = input.unsqueeze(0) if hit[0] else input
            inputs = (x, weight) if bias is None else (x, weight, bias)
            out = run("conv", inputs, dict(hit[1]), hit[2], input._dtype)
            return out.squeeze(0) if hit[0] else out
    x, unbatched = _batched(input, nd, op)
    _check_weight(op, weight, nd, False)
    stride, dilation, groups = _geometry(op, stride, dilation, groups, nd)
    same_device(op, *([input, weight] if bias is None else [input, weight, bias]))
    _check_dtypes(op, input, weight, bias)
    O, Cg = weight._shape[:2]
    kernel = weight._shape[2:]
    C = x._shape[1]
    if O < groups or O % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} (and at least "
                           f"{groups}) at dimension 0, but got weight of size {list(weight._shape)} instead")
    if Cg * groups != C:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight._shape)}, expected "
                           f"input{list(x._shape)} to have {Cg * groups} channels, but got {C} channels instead")
    _check_bias(op, bias, weight, O, False)
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
            pads = _same_padding(kernel, dilation)
        else:
            raise RuntimeError(f"{op}: Invalid padding string: {padding!r} (expected 'valid' or 'same')")
    else:
        p = _ints(padding, nd, "padding", op)
        if any(v < 0 for v in p):
            raise RuntimeError(f"{op}: negative padding is not supported (padding={list(p)})")
        pads = tuple((v, v) for v in p)
    if x._shape[0] and C:
        _check_spatial(op, x)
    padded = [n + lo + hi for n, (lo, hi) in zip(x._shape[2:], pads)]
    eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
                           f"({_sizes(eff)}). Kernel size can't be greater than actual input size")
    osz = tuple((p - e) // s + 1 for p, e, s in zip(padded, eff, stride))
    inputs = (x, weight) if bias is None else (x, weight, bias)
    attrs = {"stride": stride, "padding": pads, "dilation": dilation, "groups": groups}
    out = run("conv", inputs, attrs, (x._shape[0], O) + osz, input._dtype)
    if key is not None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = (unbatched, attrs, (x._shape[0], O) + osz)
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D cross-correlation over (N, C_in, L) or (C_in, L); weight (C_out, C_in/groups, k).

    ``padding`` is an int, a 1-tuple, 'valid' or 'same' (stride 1 only).

    >>> F.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2)).tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D cross-correlation over (N, C_in, H, W) or (C_in, H, W); weight (C_out, C_in/groups, kH, kW).

    >>> F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(8, 3, 3, 3), padding=1).shape
    ember.Size([1, 8, 5, 5])
    """
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D cross-correlation over (N, C_in, D, H, W) or (C_in, D, H, W).

    >>> F.conv3d(ember.ones(1, 1, 3, 3, 3), ember.ones(2, 1, 3, 3, 3)).shape
    ember.Size([1, 2, 1, 1, 1])
    """
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


# ---- transposed convolution ------------------------------------------------------------------------
def _conv_transposend(nd: int, op: str, input, weight, bias, stride, padding, output_padding, groups,
                      dilation) -> Tensor:
    _check_tensor(input, "input", op)
    _check_tensor(weight, "weight", op)
    input, weight, bias = autocast_inputs(op, input, weight, bias)  # noqa: A001
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    x, unbatched = _batched(input, nd, op)
    _check_weight(op, weight, nd, True)
    stride, dilation, groups = _geometry(op, stride, dilation, groups, nd)
    pad = _ints(padding, nd, "padding", op)
    opad = _ints(output_padding, nd, "output_padding", op)
    same_device(op, *([input, weight] if bias is None else [input, weight, bias]))
    _check_dtypes(op, input, weight, bias)
    if any(v < 0 for v in pad):
        raise RuntimeError(f"{op}: negative padding is not supported (padding={list(pad)})")
    if any(v < 0 for v in opad):
        raise RuntimeError(f"{op}: negative output_padding is not supported (output_padding={list(opad)})")
    if any(o >= s and o >= d for o, s, d in zip(opad, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(opad)}, stride={list(stride)}, dilation={list(dilation)}")
    Cin, Cog = weight._shape[:2]
    kernel = weight._shape[2:]
    C = x._shape[1]
    if Cin < groups or Cin % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} (and at least "
                           f"{groups}) at dimension 0, but got weight of size {list(weight._shape)} instead")
    if Cog == 0:
        raise RuntimeError(f"{op}: expected a non-empty weight, but got weight of size {list(weight._shape)}")
    if Cin != C:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight._shape)}, expected "
                           f"input{list(x._shape)} to have {Cin} channels, but got {C} channels instead")
    O = Cog * groups
    _check_bias(op, bias, weight, O, True)
    if x._shape[0] and C:
        _check_spatial(op, x)
    osz = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                for n, s, p, d, k, o in zip(x._shape[2:], stride, pad, dilation, kernel, opad))
    if any(n <= 0 for n in osz):
        raise RuntimeError(f"{op}: Given input size per channel: ({_sizes(x._shape[2:])}). Calculated output size "
                           f"per channel: ({_sizes(osz)}). Output size is too small")
    inputs = (x, weight) if bias is None else (x, weight, bias)
    attrs = {"stride": stride, "padding": tuple((p, p - o) for p, o in zip(pad, opad)), "dilation": dilation,
             "groups": groups}
    out = run("conv_transpose", inputs, attrs, (x._shape[0], O) + osz, input._dtype)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution (the gradient of conv1d in its input); weight (C_in, C_out/groups, k).

    Output length: (L - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1.

    >>> F.conv_transpose1d(ember.ones(1, 1, 3), ember.ones(1, 1, 2)).tolist()
    [[[1.0, 2.0, 2.0, 1.0]]]
    """
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution; weight (C_in, C_out/groups, kH, kW).

    >>> F.conv_transpose2d(ember.ones(1, 4, 5, 5), ember.ones(4, 2, 3, 3), stride=2, padding=1,
    ...                    output_padding=1).shape
    ember.Size([1, 2, 10, 10])
    """
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution; weight (C_in, C_out/groups, kD, kH, kW).

    >>> F.conv_transpose3d(ember.ones(1, 1, 2, 2, 2), ember.ones(1, 1, 2, 2, 2), stride=2).shape
    ember.Size([1, 1, 4, 4, 4])
    """
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


# ---- unfold / fold ---------------------------------------------------------------------------------
def _block_args(op: str, kernel_size, dilation, padding, stride):
    def two(v, name):
        if isinstance(v, (tuple, list)) and len(v) != 2:
            raise RuntimeError(f"{op}: It is expected {name} equals to 2, but got size {len(v)}")
        return _ints(v, 2, name, op)
    k, d, p, s = two(kernel_size, "kernel_size"), two(dilation, "dilation"), two(padding, "padding"), \
        two(stride, "stride")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got kernel_size={k}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilation={d}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: padding should be non-negative, but got padding={p}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={s}")
    return k, d, p, s


def _blocks(size, k, d, p, s) -> tuple[int, ...]:
    return tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(size, k, d, p, s))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding blocks (im2col): (N, C, H, W) -> (N, C*kH*kW, L), L the number of blocks.

    >>> F.unfold(ember.arange(9.).reshape(1, 1, 3, 3), 2).tolist()
    [[[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]]
    """
    op = "unfold"
    _check_tensor(input, "input", op)
    if input.ndim not in (3, 4) or 0 in input._shape[-3:]:
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input._shape)}")
    k, d, p, s = _block_args(op, kernel_size, dilation, padding, stride)
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)
    blocks = _blocks(x._shape[2:], k, d, p, s)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"{op}: Given input with spatial size {tuple(x._shape[2:])}, kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of sliding blocks as "
                           f"{blocks}, but its components must be at least one.")
    attrs = {"kernel_size": k, "dilation": d, "padding": tuple((v, v) for v in p), "stride": s}
    out = run("im2col", (x,), attrs, (x._shape[0], x._shape[1] * math.prod(k), math.prod(blocks)), x._dtype)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum sliding blocks back into an image (col2im): (N, C*kH*kW, L) -> (N, C, *output_size).

    The adjoint of unfold: where blocks overlap their values add up.

    >>> F.fold(ember.ones(1, 4, 4), (3, 3), 2).tolist()
    [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    op = "fold"
    _check_tensor(input, "input", op)
    if input.ndim not in (2, 3) or 0 in input._shape[-2:]:
        raise RuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input._shape)}")
    if isinstance(output_size, (tuple, list)) and len(output_size) != 2:
        raise RuntimeError(f"{op}: It is expected output_size equals to 2, but got size {len(output_size)}")
    osz = _ints(output_size, 2, "output_size", op)
    k, d, p, s = _block_args(op, kernel_size, dilation, padding, stride)
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    K = math.prod(k)
    if x._shape[1] % K:
        raise RuntimeError(f"{op}: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x._shape[1]} and kernel_size={k}.")
    blocks = _blocks(osz, k, d, p, s)
    if any(b < 1 for b in blocks) or math.prod(blocks) != x._shape[2]:
        raise RuntimeError(f"{op}: Given output_size={osz}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{' * '.join(str(b) for b in blocks)} = {math.prod(blocks)}, but got "
                           f"input.size(2)={x._shape[2]}.")
    attrs = {"output_size": osz, "kernel_size": k, "dilation": d, "padding": tuple((v, v) for v in p), "stride": s}
    out = run("col2im", (x,), attrs, (x._shape[0], x._shape[1] // K) + osz, x._dtype)
    return out.squeeze(0) if unbatched else out
