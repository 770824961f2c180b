"""ONNX operators: quantisation, signal processing (DFT, STFT, windows, mel filters), detection
(NonMaxSuppression, RoiAlign) and random ops (see _registry.py for the conventions).

    >>> import ember
    >>> from ember.onnx import ops
    >>> ops.hann_window(ember.tensor(4)).tolist()
    [0.0, 0.5, 1.0, 0.5]
"""

from __future__ import annotations

import math

import ember
from ember import Tensor

from ._registry import OnnxOpError, generator, op, upgrader

__all__ = ["quantize_linear", "dequantize_linear", "dynamic_quantize_linear", "qlinear_matmul", "qlinear_conv",
           "dft", "stft", "hann_window", "hamming_window", "blackman_window", "mel_weight_matrix",
           "non_max_suppression", "roi_align", "deform_conv", "flex_attention", "random_normal", "random_uniform",
           "random_normal_like",
           "random_uniform_like", "bernoulli", "multinomial"]

_FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)

# ONNX TensorProto.DataType -> ember dtype (only the ones ember has)
_ONNX_DTYPES = {1: ember.float32, 2: ember.uint8, 3: ember.int8, 5: ember.int16, 6: ember.int32, 7: ember.int64,
                9: ember.bool, 10: ember.float16, 11: ember.float64, 16: ember.bfloat16}
_ONNX_NAMES = {4: "uint16", 12: "uint32", 13: "uint64", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
               20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1", 8: "string", 14: "complex64",
               15: "complex128", 24: "float8e8m0", 25: "uint2", 26: "int2"}
_QRANGE = {ember.uint8: (0, 255), ember.int8: (-128, 127), ember.int16: (-32768, 32767),
           ember.int32: (-2**31, 2**31 - 1)}


def _dtype(name: str, code: int):
    if code in _ONNX_DTYPES:
        return _ONNX_DTYPES[code]
    raise OnnxOpError(f"ONNX {name}: data type {_ONNX_NAMES.get(code, code)} is not supported by ember")


def _need_float(name: str, *ts: Tensor | None) -> None:
    for t in ts:
        if t is not None and t.dtype not in _FLOATS:
            raise OnnxOpError(f"ONNX {name}: input dtype {t.dtype} is not supported "
                              "(float16/bfloat16/float32/float64 only)")


# ----------------------------------------------------------------------------------------- quantisation

def _per_axis(name: str, p: Tensor, x: Tensor, axis: int, block_size: int) -> Tensor:
    """Broadcast a scale / zero point against ``x``: scalar, per-axis 1-D, or blocked along ``axis``."""
    if p.numel() == 1 and p.dim() <= 1:
        return p.reshape(())
    ax = axis + x.dim() if axis < 0 else axis
    if not 0 <= ax < x.dim():
        raise OnnxOpError(f"ONNX {name}: axis {axis} out of range for shape {tuple(x.shape)}")
    if block_size > 0:
        if p.dim() != x.dim():
            raise OnnxOpError(f"ONNX {name}: blocked scale needs rank {x.dim()}, got shape {tuple(p.shape)}")
        return p.repeat_interleave(block_size, dim=ax).narrow(ax, 0, x.shape[ax])
    if p.dim() != 1 or p.shape[0] != x.shape[ax]:
        raise OnnxOpError(f"ONNX {name}: scale shape {tuple(p.shape)} does not match axis {axis} of {tuple(x.shape)}")
    return p.reshape((-1,) + (1,) * (x.dim() - ax - 1))


def _saturate(name: str, v: Tensor, dtype) -> Tensor:
    if dtype not in _QRANGE:
        raise OnnxOpError(f"ONNX {name}: quantised dtype {dtype} is not supported (uint8/int8/int16/int32)")
    lo, hi = _QRANGE[dtype]
    return v.round().clamp(lo, hi).to(dtype)


@op("QuantizeLinear")
def quantize_linear(x: Tensor, y_scale: Tensor, y_zero_point: Tensor | None = None, *, axis: int = 1,
                    block_size: int = 0, output_dtype: int = 0, precision: int = 0, saturate: int = 1) -> Tensor:
    """ONNX QuantizeLinear: ``saturate(round_half_even(x / scale) + zero_point)`` (scalar, per-axis or
    blocked scales) to uint8/int8/int16/int32; float8/int4/uint16 targets raise OnnxOpError."""
    if x.dtype not in _FLOATS and x.dtype != ember.int32:
        raise OnnxOpError(f"ONNX QuantizeLinear: input dtype {x.dtype} is not supported")
    if y_zero_point is not None:
        out = y_zero_point.dtype
    elif output_dtype:
        out = _dtype("QuantizeLinear", output_dtype)
    else:
        out = ember.uint8
    calc = ember.float64 if x.dtype in (ember.float64, ember.int32) else ember.float32
    if precision:
        calc = _dtype("QuantizeLinear", precision)
    s = _per_axis("QuantizeLinear", y_scale.to(calc), x, axis, block_size)
    v = (x.to(calc) / s).round()
    if y_zero_point is not None:
        v = v + _per_axis("QuantizeLinear", y_zero_point.to(calc), x, axis, block_size)
    return _saturate("QuantizeLinear", v, out)


@op("DequantizeLinear")
def dequantize_linear(x: Tensor, x_scale: Tensor, x_zero_point: Tensor | None = None, *, axis: int = 1,
                      block_size: int = 0, output_dtype: int = 0, precision: int = 0) -> Tensor:
    """ONNX DequantizeLinear: ``(x - zero_point) * scale`` in the scale's dtype (or ``output_dtype``)."""
    if x.dtype not in _QRANGE:
        raise OnnxOpError(f"ONNX DequantizeLinear: quantised dtype {x.dtype} is not supported (uint8/int8/int16/int32)")
    out = _dtype("DequantizeLinear", output_dtype) if output_dtype else x_scale.dtype
    calc = _dtype("DequantizeLinear", precision) if precision else (
        ember.float64 if x_scale.dtype == ember.float64 else ember.float32)
    v = x.to(calc)
    if x_zero_point is not None:
        v = v - _per_axis("DequantizeLinear", x_zero_point.to(calc), x, axis, block_size)
    return (v * _per_axis("DequantizeLinear", x_scale.to(calc), x, axis, block_size)).to(out)


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """ONNX DynamicQuantizeLinear: uint8 quantisation whose scale and zero point cover [min(x, 0), max(x, 0)].
    Returns (y, y_scale, y_zero_point)."""
    _need_float("DynamicQuantizeLinear", x)
    xf = x.to(ember.float32)
    lo = xf.min().clamp(max=0.0) if x.numel() else ember.tensor(0.0, device=x.device)
    hi = xf.max().clamp(min=0.0) if x.numel() else ember.tensor(0.0, device=x.device)
    scale = (hi - lo) / 255.0
    safe = ember.where(scale == 0, ember.ones_like(scale), scale)
    zp = _saturate("DynamicQuantizeLinear", (-lo / safe).round(), ember.uint8)
    y = _saturate("DynamicQuantizeLinear", (xf / safe).round() + zp.to(ember.float32), ember.uint8)
    return y, scale.to(ember.float32), zp


@op("QLinearMatMul")
def qlinear_matmul(a: Tensor, a_scale: Tensor, a_zero_point: Tensor, b: Tensor, b_scale: Tensor,
                   b_zero_point: Tensor, y_scale: Tensor, y_zero_point: Tensor) -> Tensor:
    """ONNX QLinearMatMul: integer matmul of the zero-point-shifted operands, rescaled by
    a_scale * b_scale / y_scale and requantised (per-tensor or per-row/column scales)."""
    for t in (a, b):
        if t.dtype not in (ember.uint8, ember.int8):
            raise OnnxOpError(f"ONNX QLinearMatMul: operand dtype {t.dtype} is not uint8/int8")
    A = a.to(ember.float64) - (a_zero_point.to(ember.float64).reshape(-1, 1) if a_zero_point.numel() > 1
                               else a_zero_point.to(ember.float64).reshape(()))
    B = b.to(ember.float64) - (b_zero_point.to(ember.float64).reshape(()) if b_zero_point.numel() == 1
                               else b_zero_point.to(ember.float64))
    acc = A @ B
    sa = a_scale.to(ember.float32).reshape(-1, 1) if a_scale.numel() > 1 else a_scale.to(ember.float32).reshape(())
    sb = b_scale.to(ember.float32).reshape(()) if b_scale.numel() == 1 else b_scale.to(ember.float32)
    mult = (sa * sb / y_scale.to(ember.float32)).to(ember.float64)
    return _saturate("QLinearMatMul", (acc * mult).round() + y_zero_point.to(ember.float64), y_zero_point.dtype)


@op("QLinearConv")
def qlinear_conv(x: Tensor, x_scale: Tensor, x_zero_point: Tensor, w: Tensor, w_scale: Tensor, w_zero_point: Tensor,
                 y_scale: Tensor, y_zero_point: Tensor, B: Tensor | None = None, *, auto_pad: str = "NOTSET",
                 dilations=None, group: int = 1, kernel_shape=None, pads=None, strides=None) -> Tensor:
    """ONNX QLinearConv: convolution of the zero-point-shifted integers (exact in float64), plus the
    int32 bias, rescaled by x_scale * w_scale / y_scale (per output channel) and requantised."""
    from .nn import conv
    for t in (x, w):
        if t.dtype not in (ember.uint8, ember.int8):
            raise OnnxOpError(f"ONNX QLinearConv: operand dtype {t.dtype} is not uint8/int8")
    nd = x.dim() - 2
    X = x.to(ember.float64) - x_zero_point.to(ember.float64).reshape(())
    wz = w_zero_point.to(ember.float64)
    W = w.to(ember.float64) - (wz.reshape((-1,) + (1,) * (w.dim() - 1)) if wz.numel() > 1 else wz.reshape(()))
    acc = conv(X, W, None, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
               pads=pads, strides=strides)
    if B is not None:
        acc = acc + B.to(ember.float64).reshape((1, -1) + (1,) * nd)
    ws = w_scale.to(ember.float32)
    ws = ws.reshape((1, -1) + (1,) * nd) if ws.numel() > 1 else ws.reshape(())
    mult = (x_scale.to(ember.float32).reshape(()) * ws / y_scale.to(ember.float32).reshape(())).to(ember.float64)
    return _saturate("QLinearConv", (acc * mult).round() + y_zero_point.to(ember.float64).reshape(()),
                     y_zero_point.dtype)


# ------------------------------------------------------------------------------------- signal processing

def _twiddles(n_in: int, n_out: int, length: int, dtype, sign: float, device):
    """cos and sign*sin of 2*pi*k*t/length as (n_in, n_out) matrices (t along rows) on ``device``."""
    t = ember.arange(n_in, dtype=ember.float64, device=device).reshape(-1, 1)
    k = ember.arange(n_out, dtype=ember.float64, device=device).reshape(1, -1)
    ang = (t * k % length) * (2 * math.pi / length)   # reduce first: keeps float64 angles small
    return ang.cos().to(dtype), (ang.sin() * sign).to(dtype)


@op("DFT")
def dft(input: Tensor, dft_length: Tensor | None = None, axis: Tensor | None = None, *, inverse: int = 0,
        onesided: int = 0) -> Tensor:
    """ONNX DFT (opset 20): the signal is ``input[..., 0]`` (+ i * ``input[..., 1]``) along ``axis``
    (default -2); output (..., bins, 2). Computed as matmuls with cos/sin tables (differentiable).
    ``inverse`` with ``onesided`` is the inverse real FFT (real output, last dim 1)."""
    _need_float("DFT", input)
    if input.shape[-1] not in (1, 2):
        raise OnnxOpError(f"ONNX DFT: the last dim must be 1 (real) or 2 (complex), got shape {tuple(input.shape)}")
    ax = int(axis.item()) if axis is not None else -2
    ax = ax + input.dim() if ax < 0 else ax
    if not 0 <= ax < input.dim() - 1:
        raise OnnxOpError(f"ONNX DFT: axis {ax} out of range for shape {tuple(input.shape)}")
    m = input.shape[ax]
    if dft_length is not None:
        n = int(dft_length.item())
    else:
        n = 2 * (m - 1) if inverse and onesided else m
    xr = input[..., 0].movedim(ax, -1)
    xi = input[..., 1].movedim(ax, -1) if input.shape[-1] == 2 else None
    dt = input.dtype
    if inverse and onesided:
        # Hermitian extension: bins 1..n/2-1 count twice; DC and Nyquist imaginary parts drop out
        use = min(m, n // 2 + 1)
        xr, xi = xr[..., :use], (xi[..., :use] if xi is not None else None)
        c, s = _twiddles(use, n, n, dt, 1.0, input.device)
        wts = [1.0 if (k == 0 or 2 * k == n) else 2.0 for k in range(use)]
        w = ember.tensor(wts, dtype=dt, device=input.device).reshape(-1, 1)
        y = xr @ (c * w)
        if xi is not None:
            y = y - xi @ (s * w)
        return (y / n).movedim(-1, ax).unsqueeze(-1)
    if m > n:
        xr, xi = xr[..., :n], (xi[..., :n] if xi is not None else None)
    n_in = min(m, n)   # zero padding to n adds nothing to the sums
    n_out = n // 2 + 1 if onesided else n
    c, s = _twiddles(n_in, n_out, n, dt, 1.0 if inverse else -1.0, input.device)
    # (xr + i xi)(c + i s) = xr c - xi s + i (xr s + xi c)
    re = xr @ c
    im = xr @ s
    if xi is not None:
        re = re - xi @ s
        im = im + xi @ c
    out = ember.stack([re, im], dim=-1)
    if inverse:
        out = out / n
    return out.movedim(-2, ax)


@upgrader("DFT", below=20)
def _dft_axis_input(node: dict) -> dict:
    # DFT-17: axis was an attribute (default 1); DFT-20 takes it as the third input
    import numpy as np
    ax = node["attrs"].pop("axis", 1)
    name = node["outputs"][0] + "__axis"
    node.setdefault("new_constants", {})[name] = np.array(ax, dtype=np.int64)
    ins = list(node["inputs"]) + [""] * (2 - len(node["inputs"]))
    node["inputs"] = ins[:2] + [name]
    return node


@op("STFT")
def stft(signal: Tensor, frame_step: Tensor, window: Tensor | None = None, frame_length: Tensor | None = None, *,
         onesided: int = 1) -> Tensor:
    """ONNX STFT: DFTs of windowed frames of a (batch, length, 1|2) signal; output
    (batch, frames, bins, 2)."""
    _need_float("STFT", signal, window)
    step = int(frame_step.item())
    if frame_length is not None:
        fl = int(frame_length.item())
    elif window is not None:
        fl = window.shape[0]
    else:
        raise OnnxOpError("ONNX STFT: needs a window or a frame_length")
    if window is not None and window.shape[0] != fl:
        raise OnnxOpError(f"ONNX STFT: window length {window.shape[0]} != frame_length {fl}")
    L = signal.shape[1]
    if fl > L or step < 1:
        raise OnnxOpError(f"ONNX STFT: frame_length {fl} / frame_step {step} do not fit signal length {L}")
    frames = 1 + (L - fl) // step
    idx = (ember.arange(frames, dtype=ember.int64, device=signal.device).reshape(-1, 1) * step
           + ember.arange(fl, dtype=ember.int64, device=signal.device).reshape(1, -1)).reshape(-1)
    fr = signal.index_select(1, idx).reshape(signal.shape[0], frames, fl, signal.shape[2])
    if window is not None:
        fr = fr * window.to(signal.dtype).reshape(1, 1, fl, 1)
    return dft(fr, None, ember.tensor(2), onesided=onesided if signal.shape[2] == 1 else 0)


def _window(name: str, size: Tensor, periodic: int, output_datatype: int, coeffs) -> Tensor:
    n = int(size.item())
    dt = _dtype(name, output_datatype)
    if n <= 0:
        return ember.zeros(0, dtype=dt, device=size.device)
    N = n if periodic else n - 1
    k = ember.arange(n, dtype=ember.float64, device=size.device)
    w = ember.zeros(n, dtype=ember.float64, device=size.device) + coeffs[0]
    for j, a in enumerate(coeffs[1:], start=1):
        w = w + a * (k * (2 * math.pi * j / N)).cos() if N else w + a
    return w.to(dt)


@op("HannWindow")
def hann_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1) -> Tensor:
    """ONNX HannWindow: 0.5 - 0.5 cos(2 pi n / N)."""
    return _window("HannWindow", size, periodic, output_datatype, (0.5, -0.5))


@op("HammingWindow")
def hamming_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1) -> Tensor:
    """ONNX HammingWindow: 25/46 - 21/46 cos(2 pi n / N)."""
    return _window("HammingWindow", size, periodic, output_datatype, (25 / 46, -21 / 46))


@op("BlackmanWindow")
def blackman_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1) -> Tensor:
    """ONNX BlackmanWindow: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _window("BlackmanWindow", size, periodic, output_datatype, (0.42, -0.5, 0.08))


@op("MelWeightMatrix")
def mel_weight_matrix(num_mel_bins: Tensor, dft_length: Tensor, sample_rate: Tensor, lower_edge_hertz: Tensor,
                      upper_edge_hertz: Tensor, *, output_datatype: int = 1) -> Tensor:
    """ONNX MelWeightMatrix: (dft_length // 2 + 1, num_mel_bins) triangular filters, equally spaced on
    the mel scale between the edges (integer FFT-bin edges, as the ONNX definition specifies)."""
    nm, nd, sr = int(num_mel_bins.item()), int(dft_length.item()), int(sample_rate.item())
    lo, hi = float(lower_edge_hertz.item()), float(upper_edge_hertz.item())
    bins = nd // 2 + 1

    def mel(f):
        return 2595 * math.log1p(f / 700) / math.log(10)
    lm, hm = mel(lo), mel(hi)
    step = (hm - lm) / (nm + 2)
    edges = [int(((nd + 1) * (700 * math.expm1((i * step + lm) / 2595 * math.log(10)))) // sr)
             for i in range(nm + 2)]
    rows = [[0.0] * nm for _ in range(bins)]
    for i in range(nm):
        a, c, b = edges[i], edges[i + 1], edges[i + 2]
        if c == a:
            rows[c][i] = 1.0
        else:
            for j in range(a, c + 1):
                rows[j][i] = (j - a) / (c - a)
        for j in range(c, b):
            rows[j][i] = (b - j) / (b - c)
    out = _dtype("MelWeightMatrix", output_datatype)
    return ember.tensor(rows, dtype=ember.float64, device=num_mel_bins.device).to(out)


# -------------------------------------------------------------------------------------------- detection

@op("NonMaxSuppression")
def non_max_suppression(boxes: Tensor, scores: Tensor, max_output_boxes_per_class: Tensor | None = None,
                        iou_threshold: Tensor | None = None, score_threshold: Tensor | None = None, *,
                        center_point_box: int = 0) -> Tensor:
    """ONNX NonMaxSuppression: greedy per (batch, class) selection by score, dropping boxes whose IoU
    with a kept one exceeds the threshold. Returns (selected, 3) int64 rows (batch, class, box)."""
    limit = int(max_output_boxes_per_class.item()) if max_output_boxes_per_class is not None else 0
    iou_t = float(iou_threshold.item()) if iou_threshold is not None else 0.0
    score_t = float(score_threshold.item()) if score_threshold is not None else None
    bx = boxes.detach().to(ember.float64).tolist()
    sc = scores.detach().to(ember.float64).tolist()
    out: list[list[int]] = []
    if limit <= 0:
        return ember.zeros((0, 3), dtype=ember.int64, device=boxes.device)
    for b, per_batch in enumerate(sc):
        corners = []
        for v in bx[b]:
            if center_point_box:
                xc, yc, w, h = v
                corners.append((yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2))
            else:
                y1, x1, y2, x2 = v
                corners.append((min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)))
        for c, cls_scores in enumerate(per_batch):
            order = sorted((i for i, s in enumerate(cls_scores) if score_t is None or s > score_t),
                           key=lambda i: -cls_scores[i])
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit:
                    break
                if all(_iou(corners[i], corners[j]) <= iou_t for j in kept):
                    kept.append(i)
            out += [[b, c, i] for i in kept]
    if not out:
        return ember.zeros((0, 3), dtype=ember.int64, device=boxes.device)
    return ember.tensor(out, dtype=ember.int64, device=boxes.device)


def _iou(a, b) -> float:
    ih = min(a[2], b[2]) - max(a[0], b[0])
    iw = min(a[3], b[3]) - max(a[1], b[1])
    if ih <= 0 or iw <= 0:
        return 0.0
    inter = ih * iw
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@op("RoiAlign")
def roi_align(X: Tensor, rois: Tensor, batch_indices: Tensor, *, coordinate_transformation_mode: str = "half_pixel",
              mode: str = "avg", output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0) -> Tensor:
    """ONNX RoiAlign: bilinear samples on a regular grid inside each bin of each roi (x1, y1, x2, y2),
    averaged (``mode="avg"``) or maxed. Differentiable in ``X``; roi coordinates are data."""
    _need_float("RoiAlign", X)
    if mode not in ("avg", "max"):
        raise OnnxOpError(f"ONNX RoiAlign: mode {mode!r} is not avg/max")
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise OnnxOpError(f"ONNX RoiAlign: coordinate_transformation_mode {coordinate_transformation_mode!r}")
    half = coordinate_transformation_mode == "half_pixel"
    C, H, W = X.shape[1], X.shape[2], X.shape[3]
    ph, pw = output_height, output_width
    flat = X.reshape(X.shape[0], C, H * W)
    outs = []
    for r, b in zip(rois.detach().to(ember.float64).tolist(), batch_indices.tolist()):
        off = 0.5 if half else 0.0
        x0, y0, x1, y1 = (v * spatial_scale - off for v in r)
        rw, rh = x1 - x0, y1 - y0
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rh / ph))
        gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rw / pw))
        count = max(gh * gw, 1)
        if gh * gw == 0:
            outs.append(ember.zeros((C, ph, pw), dtype=X.dtype, device=X.device))
            continue
        # sample coordinates of every (bin, sub-sample) at once: (ph*gh,) rows and (pw*gw,) columns
        ys = y0 + (ember.arange(ph, dtype=ember.float64, device=X.device).reshape(ph, 1) * bh
                   + (ember.arange(gh, dtype=ember.float64, device=X.device).reshape(1, gh) + 0.5)
                   * (bh / gh)).reshape(-1)
        xs = x0 + (ember.arange(pw, dtype=ember.float64, device=X.device).reshape(pw, 1) * bw
                   + (ember.arange(gw, dtype=ember.float64, device=X.device).reshape(1, gw) + 0.5)
                   * (bw / gw)).reshape(-1)
        (ylo, yhi, wy_lo, wy_hi, oky), (xlo, xhi, wx_lo, wx_hi, okx) = _axis_taps(ys, H), _axis_taps(xs, W)
        dims = (ph, gh, pw, gw)
        ok = _grid(oky, okx, "and", dims)   # inside the [-1, size] band on both axes
        pos = ember.stack([_grid(ylo * W, xlo, "add", dims), _grid(ylo * W, xhi, "add", dims),
                           _grid(yhi * W, xlo, "add", dims), _grid(yhi * W, xhi, "add", dims)], dim=-1)
        wts = ember.stack([_grid(wy_lo, wx_lo, "mul", dims), _grid(wy_lo, wx_hi, "mul", dims),
                           _grid(wy_hi, wx_lo, "mul", dims), _grid(wy_hi, wx_hi, "mul", dims)], dim=-1)
        wts = ember.where(ok.unsqueeze(-1), wts, ember.zeros_like(wts))
        vals = flat[int(b)].index_select(1, pos.reshape(-1).to(ember.int64))
        vals = (vals * wts.reshape(-1).to(X.dtype)).reshape(C, ph, pw, gh * gw, 4)
        if mode == "avg":
            outs.append(vals.sum(dim=(3, 4)) / count)
        else:
            outs.append(vals.amax(dim=4).amax(dim=3))
    if not outs:
        return ember.zeros((0, C, ph, pw), dtype=X.dtype, device=X.device)
    return ember.stack(outs)


@upgrader("RoiAlign", below=16)
def _roi_align_old(node: dict) -> dict:
    # RoiAlign-10 had no coordinate_transformation_mode and did not shift by half a pixel
    node["attrs"].setdefault("coordinate_transformation_mode", "output_half_pixel")
    return node


def _grid(a: Tensor, b: Tensor, how: str, dims) -> Tensor:
    """Combine per-row (ph*gh,) and per-column (pw*gw,) values into (ph, pw, gh*gw) sample grids."""
    ph, gh, pw, gw = dims
    a, b = a.reshape(ph, gh, 1, 1), b.reshape(1, 1, pw, gw)
    out = a + b if how == "add" else (a * b if how == "mul" else a & b)
    return out.permute(0, 2, 1, 3).reshape(ph, pw, gh * gw)


def _axis_taps(v: Tensor, size: int):
    """Per coordinate: low/high neighbour index, their weights and whether it is inside [-1, size]."""
    ok = (v >= -1.0) & (v <= size)
    v = v.clamp(min=0.0)
    lo = v.floor()
    edge = lo >= size - 1
    lo = ember.where(edge, ember.full_like(lo, size - 1), lo)
    hi = ember.where(edge, lo, lo + 1)
    v = ember.where(edge, lo, v)
    frac = v - lo
    return lo, hi, 1.0 - frac, frac, ok


@op("DeformConv", since=19)
def deform_conv(X: Tensor, W: Tensor, offset: Tensor, B: Tensor | None = None, mask: Tensor | None = None, *,
                dilations=None, group: int = 1, kernel_shape=None, offset_group: int = 1, pads=None,
                strides=None) -> Tensor:
    """ONNX DeformConv (2-D): each kernel tap samples ``X`` bilinearly (zeros outside) at its regular
    position plus a learned ``offset`` (per offset group, (dy, dx) per tap), optionally scaled by
    ``mask``, then the taps are contracted with ``W`` per group. Differentiable in X, W, offset, mask."""
    _need_float("DeformConv", X, W, offset, B, mask)
    if X.dim() != 4:
        raise OnnxOpError(f"ONNX DeformConv: only 2-D inputs (N, C, H, W) are supported, got shape {tuple(X.shape)}")
    n, C, ih, iw = X.shape
    oc = W.shape[0]
    kh, kw = (int(v) for v in (kernel_shape or W.shape[2:]))
    sh, sw = (int(v) for v in (strides or (1, 1)))
    dh, dw = (int(v) for v in (dilations or (1, 1)))
    pt, pl = (int(v) for v in tuple(pads or (0, 0, 0, 0))[:2])
    G = offset_group
    if C != W.shape[1] * group or oc % group or C % G or offset.shape[1] != G * kh * kw * 2:
        raise OnnxOpError(f"ONNX DeformConv: X {tuple(X.shape)}, W {tuple(W.shape)}, offset {tuple(offset.shape)} "
                          f"do not fit group={group}, offset_group={G}")
    oh, ow = offset.shape[2], offset.shape[3]
    off = offset.reshape(n, G, kh, kw, 2, oh, ow)
    dev = X.device
    base_y = (ember.arange(kh, dtype=X.dtype, device=dev) * dh).reshape(kh, 1, 1, 1) + \
        (ember.arange(oh, dtype=X.dtype, device=dev) * sh - pt).reshape(1, 1, oh, 1)
    base_x = (ember.arange(kw, dtype=X.dtype, device=dev) * dw).reshape(1, kw, 1, 1) + \
        (ember.arange(ow, dtype=X.dtype, device=dev) * sw - pl).reshape(1, 1, 1, ow)
    py = off[:, :, :, :, 0] + base_y          # (n, G, kh, kw, oh, ow)
    px = off[:, :, :, :, 1] + base_x
    y0, x0 = py.detach().floor(), px.detach().floor()
    ly, lx = py - y0, px - x0
    flat = X.reshape(n, G, C // G, ih * iw)
    P = kh * kw * oh * ow
    cols = None
    for cy, cx, wgt in ((0, 0, (1 - ly) * (1 - lx)), (0, 1, (1 - ly) * lx), (1, 0, ly * (1 - lx)), (1, 1, ly * lx)):
        yy, xx = y0 + cy, x0 + cx
        valid = (yy >= 0) & (yy <= ih - 1) & (xx >= 0) & (xx <= iw - 1)
        idx = (yy.clamp(0, ih - 1) * iw + xx.clamp(0, iw - 1)).to(ember.int64).reshape(n, G, 1, P)
        vals = flat.gather(3, idx.expand(n, G, C // G, P))
        term = vals * (wgt * valid.to(X.dtype)).reshape(n, G, 1, P)
        cols = term if cols is None else cols + term
    if mask is not None:
        cols = cols * mask.reshape(n, G, 1, P)
    # (n, C, kh*kw, oh*ow) -> per conv group (n, group, C/group * kh*kw, oh*ow)
    cols = cols.reshape(n, group, (C // group) * kh * kw, oh * ow)
    wg = W.reshape(group, oc // group, (C // group) * kh * kw)
    y = (wg.unsqueeze(0) @ cols).reshape(n, oc, oh, ow)
    if B is not None:
        y = y + B.reshape(1, -1, 1, 1)
    return y


@op("FlexAttention", domain="ai.onnx.preview")
def flex_attention(Q: Tensor, K: Tensor, V: Tensor, *, scale: float | None = None, score_mod=None, prob_mod=None,
                   softmax_precision: int | None = None) -> Tensor:
    """ONNX FlexAttention (ai.onnx.preview): attention over (B, heads, L, E) whose scores and
    probabilities pass through the optional ``score_mod`` / ``prob_mod`` subgraphs (callables)."""
    _need_float("FlexAttention", Q, K, V)
    if Q.dim() != 4 or K.dim() != 4 or V.dim() != 4:
        raise OnnxOpError(f"ONNX FlexAttention: Q, K, V must be 4-D, got {tuple(Q.shape)}, {tuple(K.shape)}, "
                          f"{tuple(V.shape)}")
    hq, hk = Q.shape[1], K.shape[1]
    if hq != hk:
        if hq % hk:
            raise OnnxOpError(f"ONNX FlexAttention: {hq} query heads cannot share {hk} key/value heads")
        K, V = K.repeat_interleave(hq // hk, dim=1), V.repeat_interleave(hq // hk, dim=1)
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[3])
    s = math.sqrt(scale)
    scores = (Q * s) @ (K * s).transpose(-1, -2)
    if softmax_precision is not None:
        calc = _float_dtype("FlexAttention", softmax_precision)
    else:
        calc = ember.float32 if Q.dtype in (ember.float16, ember.bfloat16) else Q.dtype
    scores = scores.to(calc)

    def call(g, t):
        out = g(t)
        out = out[0] if isinstance(out, (tuple, list)) else out
        return out.to(calc)
    if score_mod is not None:
        scores = call(score_mod, scores)
    probs = scores.softmax(dim=-1)
    if prob_mod is not None:
        probs = call(prob_mod, probs)
    return (probs @ V.to(calc)).to(V.dtype)

# ----------------------------------------------------------------------------------------------- random

def _float_dtype(name: str, code: int):
    dt = _dtype(name, code)
    if dt not in _FLOATS:
        raise OnnxOpError(f"ONNX {name}: dtype {dt} is not a float type")
    return dt


@op("RandomNormal")
def random_normal(*, dtype: int = 1, mean: float = 0.0, scale: float = 1.0, seed: float | None = None,
                  shape=()) -> Tensor:
    """ONNX RandomNormal: samples of N(mean, scale^2) (ember's generator, so values differ from other runtimes)."""
    return _normal(_float_dtype("RandomNormal", dtype), mean, scale, seed, shape, None)


def _normal(dt, mean: float, scale: float, seed, shape, device) -> Tensor:
    g = generator(seed, device)
    return (ember.randn(*shape, generator=g, dtype=ember.float32, device=device) * scale + mean).to(dt)


@op("RandomUniform")
def random_uniform(*, dtype: int = 1, high: float = 1.0, low: float = 0.0, seed: float | None = None,
                   shape=()) -> Tensor:
    """ONNX RandomUniform: samples of U[low, high)."""
    return _uniform(_float_dtype("RandomUniform", dtype), low, high, seed, shape, None)


def _uniform(dt, low: float, high: float, seed, shape, device) -> Tensor:
    g = generator(seed, device)
    return (ember.rand(*shape, generator=g, dtype=ember.float32, device=device) * (high - low) + low).to(dt)


@op("RandomNormalLike")
def random_normal_like(input: Tensor, *, dtype: int | None = None, mean: float = 0.0, scale: float = 1.0,
                       seed: float | None = None) -> Tensor:
    """ONNX RandomNormalLike: RandomNormal with ``input``'s shape (and dtype unless given)."""
    code = dtype if dtype is not None else next((k for k, v in _ONNX_DTYPES.items() if v == input.dtype), 1)
    return _normal(_float_dtype("RandomNormalLike", code), mean, scale, seed, tuple(input.shape), input.device)


@op("RandomUniformLike")
def random_uniform_like(input: Tensor, *, dtype: int | None = None, high: float = 1.0, low: float = 0.0,
                        seed: float | None = None) -> Tensor:
    """ONNX RandomUniformLike: RandomUniform with ``input``'s shape (and dtype unless given)."""
    code = dtype if dtype is not None else next((k for k, v in _ONNX_DTYPES.items() if v == input.dtype), 1)
    return _uniform(_float_dtype("RandomUniformLike", code), low, high, seed, tuple(input.shape), input.device)


@op("Bernoulli")
def bernoulli(input: Tensor, *, dtype: int | None = None, seed: float | None = None) -> Tensor:
    """ONNX Bernoulli: 1 with probability ``input`` else 0, in ``dtype`` (default: input's dtype)."""
    _need_float("Bernoulli", input)
    out = _dtype("Bernoulli", dtype) if dtype is not None else input.dtype
    u = ember.rand(*input.shape, generator=generator(seed, input.device), dtype=ember.float64, device=input.device)
    return (u < input.detach().to(ember.float64)).to(out)


@op("Multinomial")
def multinomial(input: Tensor, *, dtype: int = 6, sample_size: int = 1, seed: float | None = None) -> Tensor:
    """ONNX Multinomial: ``sample_size`` class draws per row of unnormalised log-probabilities."""
    _need_float("Multinomial", input)
    out = _dtype("Multinomial", dtype)
    if out not in (ember.int32, ember.int64):
        raise OnnxOpError(f"ONNX Multinomial: output dtype {out} is not int32/int64")
    probs = input.detach().softmax(dim=-1)
    return ember.multinomial(probs, sample_size, replacement=True, generator=generator(seed, input.device)).to(out)
