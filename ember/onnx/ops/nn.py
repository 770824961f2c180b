"""ONNX operators: nn -- convolutions, pooling, normalisation, dropout (see _registry.py for the
conventions). Recurrent layers, attention and losses are in ``nn2``; quantisation, signal processing,
detection and random ops in ``nn3``.

Everything is written with ember Tensor ops (``ember.nn.functional`` where it fits), so an imported
model is differentiable end to end::

    >>> import ember
    >>> from ember.onnx import ops
    >>> x, w = ember.randn(1, 3, 8, 8), ember.randn(4, 3, 3, 3)
    >>> ops.conv(x, w, None, pads=(1, 1, 1, 1)).shape
    ember.Size([1, 4, 8, 8])
"""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
from ember import Tensor

from ._registry import OnnxOpError, generator, op, upgrader

__all__ = [
    "conv", "conv_transpose", "conv_integer", "max_pool", "average_pool", "lp_pool",
    "global_max_pool", "global_average_pool", "global_lp_pool", "max_unpool", "max_roi_pool",
    "batch_normalization", "instance_normalization", "layer_normalization", "group_normalization",
    "rms_normalization", "lp_normalization", "mean_variance_normalization", "lrn", "dropout",
]

_FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)


def _need_float(name: str, *ts: Tensor | None) -> None:
    for t in ts:
        if t is not None and t.dtype not in _FLOATS:
            raise OnnxOpError(f"ONNX {name}: input dtype {t.dtype} is not supported "
                              "(float16/bfloat16/float32/float64 only)")


def _spatial_attrs(name: str, x: Tensor, kernel_shape, strides, dilations, pads):
    """Fill ONNX's per-spatial-dimension defaults and check lengths."""
    nd = x.dim() - 2
    if nd < 1:
        raise OnnxOpError(f"ONNX {name}: input needs at least 3 dims (N, C, spatial...), got shape {tuple(x.shape)}")
    k = tuple(int(v) for v in kernel_shape)
    s = tuple(int(v) for v in strides) if strides else (1,) * nd
    d = tuple(int(v) for v in dilations) if dilations else (1,) * nd
    p = tuple(int(v) for v in pads) if pads else (0,) * (2 * nd)
    if len(k) != nd or len(s) != nd or len(d) != nd or len(p) != 2 * nd:
        raise OnnxOpError(f"ONNX {name}: kernel_shape {k}, strides {s}, dilations {d}, pads {p} do not match "
                          f"{nd} spatial dims of input shape {tuple(x.shape)}")
    return nd, k, s, d, p


def _auto_pads(name: str, auto_pad: str, size, k, s, d, p):
    """Explicit (begin..., end...) pads for an ``auto_pad`` setting (output = ceil(in / stride) for SAME)."""
    nd = len(size)
    if auto_pad in ("NOTSET", ""):
        return p
    if auto_pad == "VALID":
        return (0,) * (2 * nd)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise OnnxOpError(f"ONNX {name}: auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    begin, end = [], []
    for i in range(nd):
        out = -(-size[i] // s[i])
        total = max(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - size[i])
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return tuple(begin) + tuple(end)


def _torch_pad(p, nd):
    """ONNX pads (b1..bn, e1..en) -> F.pad order (last dim first, (begin, end) pairs)."""
    out: list[int] = []
    for i in reversed(range(nd)):
        out += [p[i], p[nd + i]]
    return tuple(out)


def _pad(x: Tensor, p, nd, value: float = 0.0) -> Tensor:
    if not any(p):
        return x
    if any(v < 0 for v in p):
        # negative pads crop; F.pad refuses them on some backends, so slice first
        idx = [slice(None)] * (x.dim() - nd)
        for i in range(nd):
            b, e = p[i], p[nd + i]
            idx.append(slice(max(0, -b), x.shape[x.dim() - nd + i] - max(0, -e)))
        x = x[tuple(idx)]
        p = tuple(max(0, v) for v in p)
        if not any(p):
            return x
    return F.pad(x, _torch_pad(p, nd), value=value)


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _lift(x: Tensor, nd: int) -> tuple[Tensor, int]:
    """ember's functional kernels cover 1-3 spatial dims; 0-extra views keep 1-D as is."""
    if nd > 3:
        raise OnnxOpError(f"ONNX convolution/pooling over {nd} spatial dims is not supported (1-3 only)")
    return x, nd


@op("Conv")
def conv(X: Tensor, W: Tensor, B: Tensor | None = None, *, auto_pad: str = "NOTSET", dilations=None,
         group: int = 1, kernel_shape=None, pads=None, strides=None) -> Tensor:
    """ONNX Conv: N-d convolution with explicit, asymmetric or automatic padding.

    >>> conv(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), auto_pad="SAME_UPPER").shape
    ember.Size([1, 1, 4, 4])
    """
    _need_float("Conv", X, W, B)
    nd, k, s, d, p = _spatial_attrs("Conv", X, kernel_shape or tuple(W.shape[2:]), strides, dilations, pads)
    _lift(X, nd)
    p = _auto_pads("Conv", auto_pad, tuple(X.shape[2:]), k, s, d, p)
    if all(p[i] == p[nd + i] for i in range(nd)):
        return _CONV[nd](X, W, B, stride=s, padding=p[:nd], dilation=d, groups=group)
    return _CONV[nd](_pad(X, p, nd), W, B, stride=s, padding=0, dilation=d, groups=group)


@op("ConvTranspose")
def conv_transpose(X: Tensor, W: Tensor, B: Tensor | None = None, *, auto_pad: str = "NOTSET", dilations=None,
                   group: int = 1, kernel_shape=None, output_padding=None, output_shape=None, pads=None,
                   strides=None) -> Tensor:
    """ONNX ConvTranspose. The full (unpadded) transposed convolution is computed, then ``pads`` are
    cropped, which handles asymmetric pads and ``output_shape``.

    >>> conv_transpose(ember.ones(1, 1, 3, 3), ember.ones(1, 2, 3, 3), strides=(2, 2)).shape
    ember.Size([1, 2, 7, 7])
    """
    _need_float("ConvTranspose", X, W, B)
    nd, k, s, d, p = _spatial_attrs("ConvTranspose", X, kernel_shape or tuple(W.shape[2:]), strides, dilations, pads)
    _lift(X, nd)
    op_ = tuple(int(v) for v in output_padding) if output_padding else (0,) * nd
    size = tuple(X.shape[2:])
    full = [s[i] * (size[i] - 1) + op_[i] + (k[i] - 1) * d[i] + 1 for i in range(nd)]
    if output_shape:
        target = tuple(int(v) for v in output_shape)[-nd:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = tuple(size[i] * s[i] for i in range(nd))
    else:
        target = None
    if target is not None:
        total = [full[i] - target[i] for i in range(nd)]
        if auto_pad == "SAME_UPPER":
            p = tuple(t // 2 for t in total) + tuple(t - t // 2 for t in total)
        else:
            p = tuple(t - t // 2 for t in total) + tuple(t // 2 for t in total)
    elif auto_pad == "VALID":
        p = (0,) * (2 * nd)
    elif auto_pad not in ("NOTSET", ""):
        raise OnnxOpError(f"ONNX ConvTranspose: auto_pad {auto_pad!r} is not supported")
    y = _CONVT[nd](X, W, None, stride=s, padding=0, output_padding=0, groups=group, dilation=d)
    # output_padding adds rows at the end that no input reaches; then pads crop (negative -> grow)
    crop = tuple(-v for v in p[:nd]) + tuple(op_[i] - p[nd + i] for i in range(nd))
    y = _pad(y, crop, nd)
    if B is not None:
        y = y + B.reshape((1, -1) + (1,) * nd)
    return y


@op("ConvInteger")
def conv_integer(x: Tensor, w: Tensor, x_zero_point: Tensor | None = None, w_zero_point: Tensor | None = None, *,
                 auto_pad: str = "NOTSET", dilations=None, group: int = 1, kernel_shape=None, pads=None,
                 strides=None) -> Tensor:
    """ONNX ConvInteger: int8/uint8 convolution accumulated exactly in int32 (computed in float64,
    exact for these ranges)."""
    for t in (x, w):
        if t.dtype not in (ember.int8, ember.uint8):
            raise OnnxOpError(f"ONNX ConvInteger: input dtype {t.dtype} is not int8/uint8")
    xf = x.to(ember.float64) - (x_zero_point.to(ember.float64) if x_zero_point is not None else 0.0)
    wf = w.to(ember.float64)
    if w_zero_point is not None:
        wz = w_zero_point.to(ember.float64)
        wf = wf - (wz.reshape((-1,) + (1,) * (w.dim() - 1)) if wz.numel() > 1 else wz)
    # padding must use the zero point, i.e. 0 after the shift above
    y = conv(xf, wf, None, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
             pads=pads, strides=strides)
    return y.round().to(ember.int32)


# ----------------------------------------------------------------------------------------------- pooling

def _pool_geometry(name, x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode):
    """(nd, k, s, d, explicit pads, extra end pads for ceil mode, output spatial size)."""
    nd, k, s, d, p = _spatial_attrs(name, x, kernel_shape, strides, dilations, pads)
    size = tuple(x.shape[2:])
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(nd):
            out = (size[i] - 1) // s[i] + 1
            total = max(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - size[i])
            small, big = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else big)
            end.append(big if auto_pad == "SAME_UPPER" else small)
        p = tuple(begin) + tuple(end)
    else:
        p = _auto_pads(name, auto_pad, size, k, s, d, p)
    out, extra = [], []
    for i in range(nd):
        span = size[i] + p[i] + p[nd + i] - (k[i] - 1) * d[i] - 1
        if span < 0:
            raise OnnxOpError(f"ONNX {name}: kernel {k} (dilations {d}) is larger than the padded input {size}")
        o = (-(-span // s[i]) if ceil_mode else span // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= size[i] + p[i]:
            o -= 1  # the last window must start inside the input or its begin padding
        out.append(o)
        extra.append(max(0, (o - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (size[i] + p[i] + p[nd + i])))
    return nd, k, s, d, p, tuple(extra), tuple(out)


def _windows(xp: Tensor, nd, k, s, d, out):
    """Yield the strided slices of ``xp`` that each kernel offset sees (one per kernel element)."""
    import itertools
    lead = (slice(None),) * (xp.dim() - nd)
    for offs in itertools.product(*(range(v) for v in k)):
        yield xp[lead + tuple(slice(o * d[i], o * d[i] + (out[i] - 1) * s[i] + 1, s[i]) for i, o in enumerate(offs))]


def _window_sum(xp: Tensor, nd, k, s, d, out) -> Tensor:
    total = None
    for w in _windows(xp, nd, k, s, d, out):
        total = w if total is None else total + w
    return total


@op("MaxPool")
def max_pool(X: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations=None, kernel_shape=(),
             pads=None, storage_order: int = 0, strides=None, n_outputs: int = 1):
    """ONNX MaxPool; with two outputs the second is the argmax, flattened over the whole input
    (row-major, or column-major over the spatial dims with ``storage_order=1``)."""
    if X.dtype not in _FLOATS + (ember.int8, ember.uint8):
        raise OnnxOpError(f"ONNX MaxPool: input dtype {X.dtype} is not supported")
    nd, k, s, d, p, extra, out = _pool_geometry("MaxPool", X, kernel_shape, strides, dilations, pads, auto_pad,
                                                ceil_mode)
    _lift(X, nd)
    full = p[:nd] + tuple(p[nd + i] + extra[i] for i in range(nd))
    if X.dtype in _FLOATS:
        fill = float("-inf")
        xp = _pad(X, full, nd, fill)
    else:
        xp = _pad(X.to(ember.float32), full, nd, float("-inf"))
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    if n_outputs < 2:
        y = fn(xp, k, stride=s, padding=0, dilation=d)
        return y.to(X.dtype) if y.dtype != X.dtype else y
    y, idx = fn(xp, k, stride=s, padding=0, dilation=d, return_indices=True)
    # indices of the padded input -> coordinates of the real input -> ONNX flat index
    psize = xp.shape[2:]
    size = X.shape[2:]
    coords = []
    rem = idx
    for i in reversed(range(nd)):
        coords.append(rem % psize[i] - p[i])
        rem = rem // psize[i]
    coords = coords[::-1]
    flat = ember.zeros_like(idx)
    order = range(nd) if not storage_order else reversed(range(nd))
    for i in order:
        flat = flat * size[i] + coords[i]
    n, c = X.shape[0], X.shape[1]
    plane = math.prod(size)
    base = (ember.arange(n * c, dtype=ember.int64, device=X.device) * plane).reshape((n, c) + (1,) * nd)
    y = y.to(X.dtype) if y.dtype != X.dtype else y
    return (y, flat + base) + (None,) * (n_outputs - 2)


@op("AveragePool")
def average_pool(X: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
                 dilations=None, kernel_shape=(), pads=None, strides=None) -> Tensor:
    """ONNX AveragePool: the divisor counts the real input (and, with ``count_include_pad``, the
    explicit pads) inside each window, never the extra cells ``ceil_mode`` adds."""
    _need_float("AveragePool", X)
    nd, k, s, d, p, extra, out = _pool_geometry("AveragePool", X, kernel_shape, strides, dilations, pads,
                                                auto_pad, ceil_mode)
    _lift(X, nd)
    full = p[:nd] + tuple(p[nd + i] + extra[i] for i in range(nd))
    xp = _pad(X, full, nd)
    total = _window_sum(xp, nd, k, s, d, out)
    # the divisor depends only on the position: pool a mask of the counted cells
    size = tuple(X.shape[2:])
    ones = ember.ones(size, dtype=X.dtype, device=X.device)
    if count_include_pad:
        mask = _pad(_pad(ones, p, nd, 1.0), (0,) * nd + extra, nd, 0.0)
    else:
        mask = _pad(ones, full, nd, 0.0)
    count = _window_sum(mask, nd, k, s, d, out)
    return total / count


@op("LpPool")
def lp_pool(X: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0, dilations=None, kernel_shape=(),
            p: int = 2, pads=None, strides=None) -> Tensor:
    """ONNX LpPool: (sum over the window of |x|^p)^(1/p); padding contributes zeros."""
    _need_float("LpPool", X)
    nd, k, s, d, pd, extra, out = _pool_geometry("LpPool", X, kernel_shape, strides, dilations, pads, auto_pad,
                                                 ceil_mode)
    _lift(X, nd)
    full = pd[:nd] + tuple(pd[nd + i] + extra[i] for i in range(nd))
    xp = _pad(X.abs() ** p if p != 1 else X.abs(), full, nd)
    return _window_sum(xp, nd, k, s, d, out) ** (1.0 / p)


@op("GlobalMaxPool")
def global_max_pool(X: Tensor) -> Tensor:
    """ONNX GlobalMaxPool: max over all spatial dims, kept as size 1."""
    return X.amax(dim=tuple(range(2, X.dim())), keepdim=True)


@op("GlobalAveragePool")
def global_average_pool(X: Tensor) -> Tensor:
    """ONNX GlobalAveragePool: mean over all spatial dims, kept as size 1."""
    _need_float("GlobalAveragePool", X)
    return X.mean(dim=tuple(range(2, X.dim())), keepdim=True)


@op("GlobalLpPool")
def global_lp_pool(X: Tensor, *, p: int = 2) -> Tensor:
    """ONNX GlobalLpPool: the p-norm over all spatial dims, kept as size 1."""
    _need_float("GlobalLpPool", X)
    return (X.abs() ** p).sum(dim=tuple(range(2, X.dim())), keepdim=True) ** (1.0 / p)


@op("MaxUnpool")
def max_unpool(X: Tensor, I: Tensor, output_shape: Tensor | None = None, *, kernel_shape=(), pads=None,  # noqa: E741
               strides=None) -> Tensor:
    """ONNX MaxUnpool: scatter ``X`` to the flat positions ``I`` (as MaxPool's second output gives
    them, i.e. positions in a tensor of ``output_shape`` when given) of a zero tensor."""
    nd, k, s, _, p = _spatial_attrs("MaxUnpool", X, kernel_shape, strides, None, pads)
    if output_shape is not None:
        shape = tuple(int(v) for v in output_shape.tolist())
    else:
        shape = tuple(X.shape[:2]) + tuple((X.shape[2 + i] - 1) * s[i] + k[i] - p[i] - p[nd + i] for i in range(nd))
    n = math.prod(shape)
    idx = I.reshape(-1).to(ember.int64)
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise OnnxOpError(f"ONNX MaxUnpool: indices reach {int(idx.max())}, outside the output shape {shape}")
    return ember.zeros(n, dtype=X.dtype, device=X.device).scatter(0, idx, X.reshape(-1)).reshape(shape)


@op("MaxRoiPool")
def max_roi_pool(X: Tensor, rois: Tensor, *, pooled_shape=(), spatial_scale: float = 1.0) -> Tensor:
    """ONNX MaxRoiPool: for each roi (batch, x1, y1, x2, y2) the max over each cell of a
    ``pooled_shape`` grid (Caffe/Fast R-CNN rounding)."""
    _need_float("MaxRoiPool", X)
    ph, pw = (int(v) for v in pooled_shape)
    H, W = X.shape[2], X.shape[3]
    outs = []
    for r in rois.tolist():
        b = int(r[0])
        x1, y1, x2, y2 = (int(round(v * spatial_scale)) for v in r[1:5])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        cells = []
        for i in range(ph):
            row = []
            for j in range(pw):
                hs = min(max(int(math.floor(i * rh / ph)) + y1, 0), H)
                he = min(max(int(math.ceil((i + 1) * rh / ph)) + y1, 0), H)
                ws = min(max(int(math.floor(j * rw / pw)) + x1, 0), W)
                we = min(max(int(math.ceil((j + 1) * rw / pw)) + x1, 0), W)
                if he <= hs or we <= ws:
                    row.append(ember.zeros(X.shape[1], dtype=X.dtype, device=X.device))
                else:
                    row.append(X[b, :, hs:he, ws:we].amax(dim=(1, 2)))
            cells.append(ember.stack(row, dim=-1))
        outs.append(ember.stack(cells, dim=-2))
    if not outs:
        return ember.zeros((0, X.shape[1], ph, pw), dtype=X.dtype, device=X.device)
    return ember.stack(outs)


# ----------------------------------------------------------------------------------------- normalisation

def _bshape(t: Tensor, nd: int) -> Tensor:
    return t.reshape((1, -1) + (1,) * nd)


@op("BatchNormalization")
def batch_normalization(X: Tensor, scale: Tensor, B: Tensor, input_mean: Tensor, input_var: Tensor, *,
                        epsilon: float = 1e-5, momentum: float = 0.9, training_mode: int = 0,
                        n_outputs: int = 1):
    """ONNX BatchNormalization. In training mode it normalises with the batch statistics and also
    returns the updated running mean and (biased) variance, ``running * momentum + batch * (1 - momentum)``."""
    _need_float("BatchNormalization", X, scale, B, input_mean, input_var)
    nd = X.dim() - 2
    if not training_mode:
        y = (X - _bshape(input_mean, nd)) / (_bshape(input_var, nd) + epsilon).sqrt() * _bshape(scale, nd) \
            + _bshape(B, nd)
        return y if n_outputs < 2 else (y,) + (None,) * (n_outputs - 1)
    dims = (0,) + tuple(range(2, X.dim()))
    mean = X.mean(dim=dims)
    var = X.var(dim=dims, correction=0)
    y = (X - _bshape(mean, nd)) / (_bshape(var, nd) + epsilon).sqrt() * _bshape(scale, nd) + _bshape(B, nd)
    if n_outputs < 2:
        return y
    rm = input_mean * momentum + mean.detach() * (1 - momentum)
    rv = input_var * momentum + var.detach() * (1 - momentum)
    return (y, rm, rv)[:n_outputs] + (None,) * max(0, n_outputs - 3)


@upgrader("BatchNormalization", below=14)
def _bn_old(node: dict) -> dict:
    # opsets < 9 carried is_test / spatial / consumed_inputs; < 14 had 5 outputs (saved mean/var)
    a = node["attrs"]
    if a.pop("spatial", 1) != 1:
        raise OnnxOpError("ONNX BatchNormalization: spatial=0 (per-activation statistics) is not supported")
    a.pop("consumed_inputs", None)
    is_test = a.pop("is_test", None)
    outs = node["outputs"]
    if len(outs) > 1:
        if is_test:
            node["outputs"] = outs[:1]
        else:
            a["training_mode"] = 1
            node["outputs"] = outs[:3]
            if any(o for o in outs[3:]):
                raise OnnxOpError("ONNX BatchNormalization: the saved_mean/saved_var outputs of opset < 14 "
                                  "are not supported")
    return node


@op("InstanceNormalization")
def instance_normalization(input: Tensor, scale: Tensor, B: Tensor, *, epsilon: float = 1e-5) -> Tensor:
    """ONNX InstanceNormalization: per (sample, channel) normalisation over the spatial dims."""
    _need_float("InstanceNormalization", input, scale, B)
    return F.instance_norm(input, weight=scale, bias=B, eps=epsilon)


def _stash(x: Tensor, stash_type: int) -> Tensor:
    if stash_type == 1 and x.dtype in (ember.float16, ember.bfloat16):
        return x.to(ember.float32)
    if stash_type not in (1, 11, 16, 10):
        raise OnnxOpError(f"ONNX normalization: stash_type {stash_type} is not supported")
    return x


@op("LayerNormalization")
def layer_normalization(X: Tensor, Scale: Tensor, B: Tensor | None = None, *, axis: int = -1,
                        epsilon: float = 1e-5, stash_type: int = 1, n_outputs: int = 1):
    """ONNX LayerNormalization over the dims from ``axis`` on; optional outputs are the mean and the
    inverse standard deviation (shape of X with the normalised dims set to 1).

    >>> layer_normalization(ember.randn(2, 3), ember.ones(3)).shape
    ember.Size([2, 3])
    """
    _need_float("LayerNormalization", X, Scale, B)
    ax = axis + X.dim() if axis < 0 else axis
    if not 0 <= ax < X.dim():
        raise OnnxOpError(f"ONNX LayerNormalization: axis {axis} out of range for shape {tuple(X.shape)}")
    dims = tuple(range(ax, X.dim()))
    xs = _stash(X, stash_type)
    mean = xs.mean(dim=dims, keepdim=True)
    var = ((xs - mean) ** 2).mean(dim=dims, keepdim=True)
    inv = (var + epsilon).rsqrt()
    y = ((xs - mean) * inv).to(X.dtype) * Scale
    if B is not None:
        y = y + B
    if n_outputs < 2:
        return y
    return (y, mean, inv)[:n_outputs]



@upgrader("InstanceNormalization", below=6)
def _instance_norm_old(node: dict) -> dict:
    node["attrs"].pop("consumed_inputs", None)   # opset 1's legacy optimisation hint
    return node

@op("GroupNormalization")
def group_normalization(X: Tensor, scale: Tensor, bias: Tensor, *, epsilon: float = 1e-5, num_groups: int = 1,
                        stash_type: int = 1) -> Tensor:
    """ONNX GroupNormalization (opset 21: per-channel scale and bias). Opset 18's per-group scale and
    bias (``num_groups`` elements; the same thing when there is one channel per group) are expanded to
    the channels, since the node's opset is not known here and the shapes tell the two forms apart."""
    _need_float("GroupNormalization", X, scale, bias)
    C = X.shape[1]
    if C % num_groups:
        raise OnnxOpError(f"ONNX GroupNormalization: {C} channels do not split into {num_groups} groups")
    if scale.numel() == num_groups != C and bias.numel() == num_groups:
        scale = scale.repeat_interleave(C // num_groups)
        bias = bias.repeat_interleave(C // num_groups)
    if scale.numel() != C or bias.numel() != C:
        raise OnnxOpError(f"ONNX GroupNormalization: scale/bias have {scale.numel()}/{bias.numel()} elements, "
                          f"expected {C} channels")
    xs = _stash(X, stash_type)
    y = F.group_norm(xs, num_groups, None, None, eps=epsilon).to(X.dtype)
    return y * _bshape(scale, X.dim() - 2) + _bshape(bias, X.dim() - 2)


@op("RMSNormalization")
def rms_normalization(X: Tensor, scale: Tensor, *, axis: int = -1, epsilon: float = 1e-5,
                      stash_type: int = 1) -> Tensor:
    """ONNX RMSNormalization: ``X / sqrt(mean(X^2 over dims >= axis) + epsilon) * scale``."""
    _need_float("RMSNormalization", X, scale)
    ax = axis + X.dim() if axis < 0 else axis
    if not 0 <= ax < X.dim():
        raise OnnxOpError(f"ONNX RMSNormalization: axis {axis} out of range for shape {tuple(X.shape)}")
    xs = _stash(X, stash_type)
    ms = (xs * xs).mean(dim=tuple(range(ax, X.dim())), keepdim=True)
    return (xs * (ms + epsilon).rsqrt()).to(X.dtype) * scale


@op("LpNormalization")
def lp_normalization(input: Tensor, *, axis: int = -1, p: int = 2) -> Tensor:
    """ONNX LpNormalization: divide by the L1 or L2 norm along ``axis`` (zero where the norm is 0)."""
    _need_float("LpNormalization", input)
    if p not in (1, 2):
        raise OnnxOpError(f"ONNX LpNormalization: p={p} (only 1 and 2 are defined)")
    norm = input.abs().sum(dim=axis, keepdim=True) if p == 1 else (input * input).sum(dim=axis, keepdim=True).sqrt()
    safe = ember.where(norm == 0, ember.ones_like(norm), norm)
    return ember.where(norm == 0, ember.zeros_like(input), input / safe)


@op("MeanVarianceNormalization")
def mean_variance_normalization(X: Tensor, *, axes=(0, 2, 3)) -> Tensor:
    """ONNX MeanVarianceNormalization: ``(X - mean) / sqrt(var)`` over ``axes`` (1e-9 guards 0)."""
    _need_float("MeanVarianceNormalization", X)
    dims = tuple(int(a) for a in axes)
    mean = X.mean(dim=dims, keepdim=True)
    var = ((X - mean) ** 2).mean(dim=dims, keepdim=True)
    return (X - mean) / (var.sqrt() + 1e-9)



@upgrader("MeanVarianceNormalization", below=9)
def _mvn_old(node: dict) -> dict:
    # MVN-1: across_channels / normalize_variance attributes instead of axes
    a = node["attrs"]
    if not a.pop("normalize_variance", 1):
        raise OnnxOpError("ONNX MeanVarianceNormalization-1: normalize_variance=0 (mean subtraction only) "
                          "is not supported")
    a["axes"] = (0, 1, 2, 3) if a.pop("across_channels", 0) else (0, 2, 3)
    return node

@op("LRN")
def lrn(X: Tensor, *, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0, size: int = 1) -> Tensor:
    """ONNX LRN: ``X / (bias + alpha / size * sum of squares over nearby channels) ** beta``; the window
    spans floor((size-1)/2) channels before and ceil((size-1)/2) after."""
    _need_float("LRN", X)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = X * X
    C = X.shape[1]
    nd = X.dim() - 1
    sqp = _pad(sq, (before,) + (0,) * (nd - 1) + (after,) + (0,) * (nd - 1), nd)
    acc = None
    for i in range(size):
        part = sqp[:, i:i + C]
        acc = part if acc is None else acc + part
    return X / (bias + alpha / size * acc) ** beta


@op("Dropout")
def dropout(data: Tensor, ratio: Tensor | None = None, training_mode: Tensor | None = None, *,
            seed: int | None = None, n_outputs: int = 1):
    """ONNX Dropout: identity at inference; in training mode zeroes elements with probability
    ``ratio`` and scales the rest by 1 / (1 - ratio). The optional second output is the keep mask."""
    train = bool(training_mode.item()) if training_mode is not None else False
    r = float(ratio.item()) if ratio is not None else 0.5
    if not train or r == 0.0:
        y = data
        mask = ember.ones(data.shape, dtype=ember.bool, device=data.device)
    else:
        if not 0.0 <= r < 1.0:
            raise OnnxOpError(f"ONNX Dropout: ratio {r} is outside [0, 1)")
        _need_float("Dropout", data)
        gen = generator(seed, data.device)
        mask = ember.rand(*data.shape, generator=gen, device=data.device) >= r
        y = data * mask.to(data.dtype) / (1.0 - r)
    if n_outputs < 2:
        return y
    return (y, mask)


@upgrader("Dropout", below=12)
def _dropout_old(node: dict) -> dict:
    # opsets < 12: ratio was an attribute and Dropout only ran in inference in exported graphs
    a = node["attrs"]
    ratio = a.pop("ratio", None)
    a.pop("is_test", None)
    a.pop("consumed_inputs", None)
    if ratio is not None:
        import numpy as np
        name = node["outputs"][0] + "__ratio"
        node.setdefault("new_constants", {})[name] = np.array(ratio, dtype=np.float32)
        node["inputs"] = list(node["inputs"][:1]) + [name]
    return node


# the rest of the nn operators live in sibling modules (kept under ~800 lines each)
from .nn2 import *  # noqa: E402,F401,F403
from .nn2 import __all__ as _all2  # noqa: E402
from .nn3 import *  # noqa: E402,F401,F403
from .nn3 import __all__ as _all3  # noqa: E402

__all__ += _all2 + _all3
