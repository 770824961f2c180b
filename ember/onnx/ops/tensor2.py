"""ONNX operators: resampling (Resize, Upsample, GridSample, AffineGrid) and Col2Im.

See _registry.py for the conventions. Resize is separable: every resized axis becomes one
``index_select`` of a few taps per output position followed by a weighted sum, with the taps and
weights computed from shapes alone, so the result is differentiable in the input. Example::

    >>> import ember
    >>> from ember.onnx import ops
    >>> ops.resize(ember.ones(1, 1, 2, 2), None, ember.tensor([1.0, 1.0, 2.0, 2.0])).shape
    ember.Size([1, 1, 4, 4])
"""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F
from ember import Tensor

from ._registry import OnnxOpError, op, upgrader

__all__ = ["resize", "upsample", "grid_sample", "affine_grid", "col2im"]

_CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_crop_and_resize", "tf_half_pixel_for_nn")


def _floats(t: Tensor | None) -> list[float] | None:
    if t is None or t.numel() == 0:
        return None
    return [float(v) for v in t.reshape(-1).tolist()]


def _source_coords(ctm: str, n_in: int, n_out: int, scale: float, roi: tuple[float, float] | None) -> np.ndarray:
    """The input coordinate each output position samples (ONNX coordinate_transformation_mode)."""
    y = np.arange(n_out, dtype=np.float64)
    width = scale * n_in            # the un-rounded output length the spec's formulas use
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / width)
        return offset + (y + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (y + 0.5) / scale - 0.5 if width > 1 else np.full(n_out, -0.5)
    if ctm == "align_corners":
        return y * (n_in - 1) / (width - 1) if width != 1 else np.zeros(n_out)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if ctm == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        # The ROI is float32 data: its extent and offset are rounded to float32 as the ONNX
        # reference does, or a coordinate landing next to an integer floors/ceils differently.
        extent = float(np.float32(hi) - np.float32(lo))
        start = float(np.float32(lo) * np.float32(n_in - 1))
        if width == 1:
            x = np.full(n_out, extent * (n_in - 1) / 2)
        else:
            x = y * extent * (n_in - 1) / (width - 1)
        return x + start
    raise OnnxOpError(f"ONNX Resize: unknown coordinate_transformation_mode {ctm!r} (known: {', '.join(_CTMS)})")


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel with coefficient ``a`` at distances ``d``."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(n_in: int, n_out: int, scale: float, *, mode: str, ctm: str, roi, nearest_mode: str,
          cubic_a: float, exclude_outside: bool, antialias: bool):
    """(indices (n_out, k), weights (n_out, k) or None, extrapolated mask or None) for one axis."""
    x = _source_coords(ctm, n_in, n_out, scale, roi)
    extra = ((x < 0) | (x > n_in - 1)) if ctm == "tf_crop_and_resize" else None
    fl = np.floor(x)
    frac = x - fl
    if mode == "nearest":
        if nearest_mode == "round_prefer_floor":
            idx = np.where(frac <= 0.5, fl, np.ceil(x))
        elif nearest_mode == "round_prefer_ceil":
            idx = np.where(frac < 0.5, fl, np.ceil(x))
        elif nearest_mode == "floor":
            idx = fl
        elif nearest_mode == "ceil":
            idx = np.ceil(x)
        elif nearest_mode == "simple":    # Resize-10 / Upsample: ceil when shrinking, else floor
            idx = np.ceil(x) if scale < 1 else fl
        else:
            raise OnnxOpError(f"ONNX Resize: unknown nearest_mode {nearest_mode!r}")
        return np.clip(idx, 0, n_in - 1).astype(np.int64)[:, None], None, extra
    # The tap window sits left of x: an integral x is treated as the right end of its cell (ratio 1).
    integral = frac == 0
    r = np.where(integral, 1.0, frac)[:, None]
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        first = int(np.floor(-1 / s) + 1) if antialias else 0
    elif mode == "cubic":
        first = int(np.floor(-2 / s) + 1) if antialias else -1
    else:
        raise OnnxOpError(f"ONNX Resize: unknown mode {mode!r}")
    k = 2 - 2 * first
    offs = first + np.arange(k)[None, :]          # tap positions relative to floor(x) (ratio r)
    base = np.where(integral, fl - 1, fl)[:, None]
    idx = base + offs
    dist = (offs - r) * s
    w = np.clip(1 - np.abs(dist), 0, 1) if mode == "linear" else _cubic(dist, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    if exclude_outside:
        w = np.where((idx < 0) | (idx > n_in - 1), 0.0, w)
        tot = w.sum(axis=1, keepdims=True)
        w = w / np.where(tot == 0, 1.0, tot)
    return np.clip(idx, 0, n_in - 1).astype(np.int64), w, extra


@op("Resize")
def resize(X: Tensor, roi: Tensor | None = None, scales: Tensor | None = None, sizes: Tensor | None = None, *,
           antialias: int = 0, axes: tuple[int, ...] | None = None,
           coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
           exclude_outside: int = 0, extrapolation_value: float = 0.0,
           keep_aspect_ratio_policy: str = "stretch", mode: str = "nearest",
           nearest_mode: str = "round_prefer_floor") -> Tensor:
    """ONNX Resize (opset 19): nearest / linear / cubic over any axes, every coordinate
    transformation mode, antialiasing, ``keep_aspect_ratio_policy`` and crop-and-resize ROIs."""
    r = X.ndim
    ax = [a + r if a < 0 else a for a in axes] if axes is not None else list(range(r))
    sc, sz = _floats(scales), (_floats(sizes) if sizes is not None else None)
    if (sc is None) == (sz is None):
        raise OnnxOpError("ONNX Resize: exactly one of 'scales' and 'sizes' must be given")
    n_in = [X.shape[a] for a in ax]
    if sc is not None:
        if len(sc) != len(ax):
            raise OnnxOpError(f"ONNX Resize: {len(sc)} scales for {len(ax)} axes")
        outs = [int(math.floor(s * n)) for s, n in zip(sc, n_in)]
    else:
        outs = [int(v) for v in sz]
        if len(outs) != len(ax):
            raise OnnxOpError(f"ONNX Resize: {len(outs)} sizes for {len(ax)} axes")
        sc = [o / n if n else 1.0 for o, n in zip(outs, n_in)]
        if keep_aspect_ratio_policy != "stretch":
            if keep_aspect_ratio_policy not in ("not_larger", "not_smaller"):
                raise OnnxOpError(f"ONNX Resize: unknown keep_aspect_ratio_policy {keep_aspect_ratio_policy!r}")
            s = min(sc) if keep_aspect_ratio_policy == "not_larger" else max(sc)
            sc = [s] * len(ax)
            outs = [int(s * n + 0.5) for n in n_in]
    rois = None
    rv = _floats(roi)
    if coordinate_transformation_mode == "tf_crop_and_resize" and rv is not None:
        half = len(rv) // 2
        if half == r and len(ax) != r:
            rv = [rv[a] for a in ax] + [rv[r + a] for a in ax]
            half = len(ax)
        rois = [(rv[i], rv[half + i]) for i in range(len(ax))]
    if antialias and mode == "nearest":
        raise OnnxOpError("ONNX Resize: antialias is not defined for mode 'nearest'")
    out_dtype = X.dtype
    y = X
    if mode != "nearest" and X.dtype not in (ember.float32, ember.float64):
        y = X.to(ember.float32)     # weights and sums of narrow types in float32, rounded once at the end
    for i, a in enumerate(ax):
        roi_i = rois[i] if rois else None
        if outs[i] == n_in[i] and sc[i] == 1.0 and (roi_i is None or roi_i == (0.0, 1.0)):
            continue        # identity along this axis
        idx, w, extra = _taps(n_in[i], outs[i], sc[i], mode=mode, ctm=coordinate_transformation_mode,
                              roi=roi_i, nearest_mode=nearest_mode, cubic_a=cubic_coeff_a,
                              exclude_outside=bool(exclude_outside), antialias=bool(antialias))
        k = idx.shape[1]
        g = y.index_select(a, ember.tensor(idx.reshape(-1), device=X.device))
        if w is None:
            y = g
        else:
            shp = list(y.shape)
            shp[a:a + 1] = [outs[i], k]
            wshape = [outs[i], k] + [1] * (y.ndim - a - 1)
            wt = ember.tensor(w.reshape(wshape), dtype=y.dtype, device=X.device)
            y = (g.reshape(shp) * wt).sum(a + 1)
        if extra is not None and extra.any():
            mshape = [outs[i]] + [1] * (y.ndim - a - 1)
            mask = ember.tensor(extra.reshape(mshape), device=X.device)
            y = ember.where(mask, ember.tensor(extrapolation_value, dtype=y.dtype, device=X.device), y)
    if y.dtype != out_dtype:
        if not out_dtype.is_floating_point:
            y = y.round()
            if out_dtype != ember.bool:
                info = ember.iinfo(out_dtype)
                y = y.clamp(info.min, info.max)
        y = y.to(out_dtype)
    return y


@upgrader("Resize", below=11)
def _resize_v10(node: dict) -> dict:
    # Resize-10: (X, scales), asymmetric coordinates, nearest rounds down when enlarging and up
    # when shrinking.
    ins = node["inputs"]
    node["inputs"] = [ins[0], "", ins[1]]
    node["attrs"].setdefault("coordinate_transformation_mode", "asymmetric")
    if node["attrs"].get("mode", "nearest") == "nearest":
        node["attrs"].setdefault("nearest_mode", "simple")
    return node


@op("Upsample")
def upsample(X: Tensor, scales: Tensor, *, mode: str = "nearest") -> Tensor:
    """ONNX Upsample (opsets 7-9; later models use Resize): asymmetric nearest/linear."""
    m = {"bilinear": "linear", "trilinear": "linear"}.get(mode, mode)
    return resize(X, None, scales, mode=m, coordinate_transformation_mode="asymmetric", nearest_mode="simple")


@upgrader("Upsample", below=9)
def _upsample_v7(node: dict) -> dict:
    attrs = node["attrs"]
    if "scales" in attrs:
        name = f"{node['outputs'][0]}__scales"
        node.setdefault("new_constants", {})[name] = np.asarray(attrs.pop("scales"), np.float32)
        node["inputs"] = [node["inputs"][0], name]
    return node


@upgrader("Upsample", below=10)
def _upsample_to_resize(node: dict) -> dict:
    # Upsample-9 is Resize-10 under another name; the Resize-10 upgrader then takes over.
    node["op_type"] = "Resize"
    m = node["attrs"].get("mode", "nearest")
    node["attrs"]["mode"] = {"bilinear": "linear", "trilinear": "linear"}.get(m, m)
    return node


_GRID_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest", "cubic": "bicubic",
               "bicubic": "bicubic"}


@op("GridSample")
def grid_sample(X: Tensor, grid: Tensor, *, align_corners: int = 0, mode: str = "linear",
                padding_mode: str = "zeros") -> Tensor:
    """ONNX GridSample (2-D and 3-D; also accepts opset-16 mode names bilinear/bicubic)."""
    if mode not in _GRID_MODES:
        raise OnnxOpError(f"ONNX GridSample: unknown mode {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise OnnxOpError(f"ONNX GridSample: unknown padding_mode {padding_mode!r}")
    m = _GRID_MODES[mode]
    if m == "bicubic" and X.ndim != 4:
        raise OnnxOpError(f"ONNX GridSample: cubic mode needs a 4-D input, got {tuple(X.shape)}")
    return F.grid_sample(X, grid.to(X.dtype), mode=m, padding_mode=padding_mode,
                         align_corners=bool(align_corners))


@upgrader("GridSample", below=20)
def _grid_sample_v16(node: dict) -> dict:
    m = node["attrs"].get("mode", "bilinear")     # opset 16's default and names
    node["attrs"]["mode"] = {"bilinear": "linear", "bicubic": "cubic"}.get(m, m)
    return node


@op("AffineGrid")
def affine_grid(theta: Tensor, size: Tensor, *, align_corners: int = 0) -> Tensor:
    """ONNX AffineGrid: sampling grids for GridSample from batches of affine matrices."""
    dims = [int(v) for v in size.tolist()]
    return F.affine_grid(theta, dims, align_corners=bool(align_corners))


@op("Col2Im")
def col2im(input: Tensor, image_shape: Tensor, block_shape: Tensor, *, dilations: tuple[int, ...] | None = None,
           pads: tuple[int, ...] | None = None, strides: tuple[int, ...] | None = None) -> Tensor:
    """ONNX Col2Im: sum sliding blocks (N, C*prod(block), L) back into an (N, C, *image) tensor."""
    img = [int(v) for v in image_shape.tolist()]
    blk = [int(v) for v in block_shape.tolist()]
    nd = len(img)
    dil = list(dilations or [1] * nd)
    st = list(strides or [1] * nd)
    pd = list(pads or [0] * (2 * nd))
    padded = [img[i] + pd[i] + pd[nd + i] for i in range(nd)]
    counts = [(padded[i] - dil[i] * (blk[i] - 1) - 1) // st[i] + 1 for i in range(nd)]
    N, CK, L = input.shape
    K = math.prod(blk)
    if CK % K or L != math.prod(counts):
        raise OnnxOpError(f"ONNX Col2Im: input {tuple(input.shape)} does not match image {img}, "
                          f"block {blk}, {math.prod(counts)} block positions")
    C = CK // K
    # Flat padded-image position of (kernel offset, block position): sum over dims of
    # (block_pos * stride + kernel_off * dilation) * stride_of_dim_in_padded_image.
    kgrid = np.stack(np.meshgrid(*[np.arange(b) for b in blk], indexing="ij"), -1).reshape(K, nd)
    lgrid = np.stack(np.meshgrid(*[np.arange(c) for c in counts], indexing="ij"), -1).reshape(L, nd)
    pos = lgrid[None, :, :] * np.array(st) + kgrid[:, None, :] * np.array(dil)   # (K, L, nd)
    flat = np.ravel_multi_index(tuple(pos[..., i] for i in range(nd)), padded).reshape(-1)
    out = ember.zeros((N, C, math.prod(padded)), dtype=input.dtype, device=input.device)
    out = out.index_add(2, ember.tensor(flat, device=input.device), input.reshape(N, C, K * L))
    out = out.reshape([N, C] + padded)
    for i in range(nd):
        out = out.narrow(2 + i, pd[i], img[i])
    return out
