"""Resampling: interpolate (and the upsample aliases), grid_sample, affine_grid, pixel_shuffle and
pixel_unshuffle, with torch.nn.functional's names and semantics.

interpolate is separable: each spatial dim is resampled in turn, by gathering (nearest modes:
one tap; linear: two; bicubic: four) or, for 'area' and antialiased downsampling, by a matmul with
a small (out, in) averaging matrix. The source indices and weights depend only on the sizes, so
they are computed on the host, in the precision PyTorch's CPU kernels use (float32 for the 32-
and 16-bit floats), which makes nearest-neighbour picks identical. grid_sample gathers the
corners of each sampled point from the flattened spatial dims. Everything is built from core
ember ops, so autodiff differentiates it (grid_sample also with respect to the grid).

>>> import ember.nn.functional as F
>>> F.interpolate(ember.tensor([[[1.0, 2.0]]]), scale_factor=2, mode="nearest")
tensor([[[1., 1., 2., 2.]]])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._activation import check_tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle"]

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_DIMS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_CUBIC_A = -0.75


# ---- 1-d source positions (host-side: they depend on sizes only) ----------------------------------
def _opmath(d: dt.dtype):
    """numpy type of PyTorch's CPU kernels' index arithmetic for dtype d."""
    return np.float64 if d is dt.float64 else np.float32


def _scale(n_in: int, n_out: int, align_corners: bool, scale, ft):
    """Source-per-destination step (area_pixel_compute_scale)."""
    if align_corners:
        return ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(n_in) / ft(n_out)


def _src(n_in, n_out, align_corners, scale, ft, cubic=False) -> np.ndarray:
    """Real-valued source coordinate of each output index."""
    r = _scale(n_in, n_out, align_corners, scale, ft)
    dst = np.arange(n_out).astype(ft)
    if align_corners:
        return r * dst
    s = r * (dst + ft(0.5)) - ft(0.5)
    return s if cubic else np.maximum(s, ft(0))


def _nearest_index(n_in, n_out, scale, exact: bool) -> np.ndarray:
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
    if exact:
        pos = ((np.arange(n_out) + 0.5) * np.float64(s)).astype(np.float32)
    else:
        pos = np.arange(n_out).astype(np.float32) * s
    return np.minimum(np.floor(pos).astype(np.int64), n_in - 1)


def _linear_taps(n_in, n_out, align_corners, scale, ft):
    """(indices (2, n_out), weights (2, n_out)) of linear interpolation."""
    src = _src(n_in, n_out, align_corners, scale, ft)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam1 = np.clip(src - i0.astype(ft), ft(0), ft(1)).astype(ft)
    i1 = i0 + (i0 < n_in - 1)
    return np.stack([i0, i1]), np.stack([ft(1) - lam1, lam1])


def _cubic_weights(t, ft) -> list:
    """Keys' cubic convolution weights (A = -0.75) of the taps at distances 1+t, t, 1-t, 2-t."""
    a = ft(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + ft(2)) * x - (a + ft(3))) * x * x + ft(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - ft(5) * a) * x + ft(8) * a) * x - ft(4) * a
    return [far(t + ft(1)), near(t), near(ft(1) - t), far(ft(2) - t)]


def _cubic_taps(n_in, n_out, align_corners, scale, ft):
    src = _src(n_in, n_out, align_corners, scale, ft, cubic=True)
    i = np.floor(src).astype(np.int64)
    t = np.clip(src - i.astype(ft), ft(0), ft(1)).astype(ft)
    idx = np.stack([np.clip(i - 1 + k, 0, n_in - 1) for k in range(4)])
    return idx, np.stack(_cubic_weights(t, ft)).astype(ft)


def _area_matrix(n_in, n_out, ft) -> np.ndarray:
    """(n_out, n_in) averaging matrix of adaptive average pooling."""
    m = np.zeros((n_out, n_in), dtype=ft)
    for o in range(n_out):
        start = (o * n_in) // n_out
        end = -((-(o + 1) * n_in) // n_out)
        m[o, start:end] = ft(1) / ft(end - start)
    return m


def _aa_matrix(n_in, n_out, align_corners, scale, ft, cubic: bool) -> np.ndarray:
    """(n_out, n_in) weights of antialiased resampling: the interpolation kernel stretched by the
    downscaling factor so every input sample contributes (PIL's approach), rows normalised.
    (align_corners changes only the scale here, not the sample centres.)"""
    r = float(_scale(n_in, n_out, align_corners, scale, np.float64))
    support = (2.0 if cubic else 1.0) * max(r, 1.0)
    inv = 1.0 / max(r, 1.0)
    m = np.zeros((n_out, n_in), dtype=np.float64)
    for o in range(n_out):
        center = r * (o + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        x = (np.arange(lo, hi) - center + 0.5) * inv
        if cubic:  # PIL's bicubic (a = -0.5), which PyTorch's antialiased mode follows
            ax = np.abs(x)
            a = -0.5
            w = np.where(ax <= 1, ((a + 2) * ax - (a + 3)) * ax * ax + 1,
                         np.where(ax < 2, ((a * ax - 5 * a) * ax + 8 * a) * ax - 4 * a, 0.0))
        else:
            w = np.maximum(1.0 - np.abs(x), 0.0)
        total = w.sum()
        if total != 0:
            m[o, lo:hi] = w / total
    return m.astype(ft)


# ---- applying 1-d resampling along a dim ------------------------------------------------------------
def _index(x: Tensor, idx: np.ndarray) -> Tensor:
    from .._creation import tensor
    return tensor(idx, dtype=dt.int64, device=x._device)


def _weights(x: Tensor, w: np.ndarray, dim: int) -> Tensor:
    """A 1-d weight vector shaped to broadcast along ``dim`` of x, in x's dtype."""
    from .._creation import tensor
    shape = [1] * x.ndim
    shape[dim] = w.shape[0]
    return tensor(w.astype(x._dtype.np if x._dtype is not dt.bfloat16 else np.float32).reshape(shape),
                  device=x._device).to(x._dtype)


def _gather_mix(x: Tensor, dim: int, idx: np.ndarray, w: np.ndarray) -> Tensor:
    """Σ_k w[k] * x.index_select(dim, idx[k]) (taps k): the backend's resample_taps when it has it."""
    be = x._device.backend
    if be.supports("resample_taps"):
        from .._creation import tensor
        from .._tensor import wrap
        it = tensor(np.ascontiguousarray(idx), dtype=dt.int64, device=x._device)
        wt = tensor(np.ascontiguousarray(w).astype(np.float64), device=x._device).to(x._dtype)
        shape = x._shape[:dim] + (idx.shape[1],) + x._shape[dim + 1:]
        return wrap(be.run("resample_taps", (x._h, it._h, wt._h), {"dim": dim}), shape, x._dtype, x._device)
    out = None
    for k in range(idx.shape[0]):
        term = x.index_select(dim, _index(x, idx[k])) * _weights(x, w[k], dim)
        out = term if out is None else out + term
    return out


def _matrix_apply(x: Tensor, dim: int, m: np.ndarray) -> Tensor:
    from .._creation import tensor
    mt = tensor(np.ascontiguousarray(m.T).astype(np.float32 if x._dtype.itemsize == 2 else x._dtype.np),
                device=x._device)
    work = x.float() if x._dtype.itemsize == 2 else x
    y = work.movedim(dim, -1) @ mt
    return y.movedim(-1, dim).to(x._dtype)


# ---- interpolate ------------------------------------------------------------------------------------------------
def _spatial_sizes(x: Tensor, size, scale_factor, recompute_scale_factor):
    k = x.ndim - 2
    spatial = list(x._shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * k
        if len(sizes) != k:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                             "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             "format.")
        return [int(s) for s in sizes], [None] * k
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * k
    if len(scales) != k:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                         "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,"
                         "sK) format.")
    scales = [float(s) for s in scales]
    sizes = [int(math.floor(n * s)) for n, s in zip(spatial, scales)]
    return sizes, [None] * k if recompute_scale_factor else scales


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` or by ``scale_factor``.

    Modes: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear'/'bicubic' (4-D), 'trilinear'
    (5-D), 'area' (adaptive average pooling). ``align_corners`` maps corner pixel centres onto each
    other (linear modes only); ``antialias`` widens the kernel when downsampling (bilinear, bicubic).

    >>> x = ember.tensor([[[0.0, 1.0]]])
    >>> ember.nn.functional.interpolate(x, size=3, mode="linear", align_corners=True)
    tensor([[[0.0000, 0.5000, 1.0000]]])
    """
    x = check_tensor(input, "interpolate")
    if mode not in _MODES or x.ndim not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
                                  f"modes: {' | '.join(_MODES)} (got {mode})")
    if mode in _LINEAR_DIMS:
        if x.ndim != _LINEAR_DIMS[mode]:
            raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_LINEAR_DIMS[mode]}D input")
        align_corners = bool(align_corners) if align_corners is not None else False
    elif align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    sizes, scales = _spatial_sizes(x, size, scale_factor, recompute_scale_factor)
    spatial = x._shape[2:]
    if any(n <= 0 for n in sizes) or any(n <= 0 for n in spatial):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input {tuple(spatial)} "
                           f"output {tuple(sizes)}")
    if not x._dtype.is_floating_point:
        raise dt.unsupported(f"upsample_{mode}", x._dtype, "interpolate needs a floating tensor")
    ft = _opmath(x._dtype)
    # 16-bit floats resample in float32 and round once at the end, as PyTorch's kernels do
    half = x._dtype.itemsize == 2 and mode not in ("nearest", "nearest-exact")
    out = x.float() if half else x
    for i, (n_in, n_out, s) in enumerate(zip(spatial, sizes, scales)):
        d = 2 + i
        if mode in ("nearest", "nearest-exact"):
            out = out.index_select(d, _index(out, _nearest_index(n_in, n_out, s, mode == "nearest-exact")))
        elif mode == "area":
            out = out if n_in == n_out else _matrix_apply(out, d, _area_matrix(n_in, n_out, ft))
        elif antialias:
            out = _matrix_apply(out, d, _aa_matrix(n_in, n_out, align_corners, s, ft, mode == "bicubic"))
        elif mode == "bicubic":
            out = _gather_mix(out, d, *_cubic_taps(n_in, n_out, align_corners, s, ft))
        elif n_in != n_out:  # linear modes copy a dim whose size does not change
            out = _gather_mix(out, d, *_linear_taps(n_in, n_out, align_corners, s, ft))
    return out.to(x._dtype) if half else out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(..., mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid_sample and affine_grid -------------------------------------------------------------------------------
def _unnormalize(coord: Tensor, n: int, align_corners: bool) -> Tensor:
    """[-1, 1] grid coordinates to pixel coordinates."""
    if align_corners:
        return (coord + 1) * ((n - 1) / 2)
    return ((coord + 1) * n - 1) / 2


def _reflect(c: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect coordinates into [twice_low / 2, twice_high / 2] (mirror at the bounds, repeatedly)."""
    if twice_low == twice_high:
        return c * 0.0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    a = (c - lo).abs()
    extra = a.fmod(span)
    flips = (a / span).floor()
    even = flips.remainder(2) == 0
    return (extra + lo).where(even, span - extra + lo)


def _pad_coord(c: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return c.clamp(0, n - 1)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align_corners else _reflect(c, -1, 2 * n - 1)
        return c.clamp(0, n - 1)
    return c


def _sample_taps(x: Tensor, coords: list, taps: list) -> Tensor:
    """Σ over taps of weight * x[..., idx] for (N, C, *spatial) x; ``taps`` are lists of
    (integer coordinate tensor, weight tensor) per spatial dim (each (N, *out)); out-of-bounds taps
    contribute 0 (zeros padding)."""
    n, c = x._shape[:2]
    spatial = x._shape[2:]
    flat = x.reshape(n, c, math.prod(spatial))
    out_shape = coords[0]._shape[1:]
    total = None
    import itertools
    for combo in itertools.product(*taps):
        lin = None
        valid = None
        weight = None
        for (ic, w), size, stride in zip(combo, spatial, _strides(spatial)):
            ok = (ic >= 0).logical_and(ic <= size - 1)
            valid = ok if valid is None else valid.logical_and(ok)
            part = ic.clamp(0, size - 1).to(dt.int64) * stride
            lin = part if lin is None else lin + part
            weight = w if weight is None else weight * w
        weight = weight.masked_fill(valid.logical_not(), 0.0)
        points = math.prod(out_shape)
        idx = lin.reshape(n, 1, points).expand(n, c, points)
        vals = flat.gather(2, idx).reshape((n, c) + out_shape)
        term = vals * weight.unsqueeze(1)
        total = term if total is None else total + term
    return total


def _strides(spatial) -> list:
    out, acc = [], 1
    for s in reversed(spatial):
        out.append(acc)
        acc *= s
    return out[::-1]


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) or (N, C, D, H, W) at the normalised [-1, 1] positions of ``grid``
    (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3), whose last dim is (x, y[, z]).

    ``mode``: 'bilinear' (trilinear for 5-D), 'nearest' or 'bicubic' (4-D only);
    ``padding_mode``: 'zeros', 'border' or 'reflection' for positions outside the input.
    """
    check_tensor(input, "grid_sample")
    check_tensor(grid, "grid_sample", "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired.", stacklevel=2)
        align_corners = False
    x = input
    if not x._dtype.is_floating_point:
        raise dt.unsupported("grid_sampler", x._dtype, "grid_sample needs floating input and grid")
    if grid._dtype is not x._dtype:
        raise RuntimeError(f"grid_sampler(): expected grid to have the input's dtype {x._dtype.name}, got "
                           f"{grid._dtype.name}")
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(x._shape)} and grid with sizes {list(grid._shape)}")
    k = x.ndim - 2
    if grid._shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension, but got grid with "
                           f"sizes {list(grid._shape)}")
    if grid._shape[0] != x._shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(x._shape)} and grid with sizes {list(grid._shape)}")
    for i, s in enumerate(x._shape[2:]):
        if s == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(x._shape)} with dimension {i + 2} being empty")
    if mode == "bicubic" and k != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    spatial = x._shape[2:]
    # grid's last dim is (x, y[, z]): reversed order of the spatial dims (D, H, W)
    coords = [_unnormalize(grid.select(-1, k - 1 - i), spatial[i], align_corners) for i in range(k)]
    if mode == "bicubic":
        taps = []
        for ci, size in zip(coords, spatial):
            base = ci.floor()
            t = ci - base
            ws = _cubic_weights(t, float)
            taps.append([(_pad_coord(base + (j - 1), size, padding_mode, align_corners).detach().round(), ws[j])
                         for j in range(4)])
        return _sample_taps(x, coords, taps)
    coords = [_pad_coord(ci, size, padding_mode, align_corners) for ci, size in zip(coords, spatial)]
    if mode == "nearest":
        taps = [[(ci.detach().round(), ci * 0.0 + 1.0)] for ci in coords]
        return _sample_taps(x, coords, taps)
    taps = []
    for ci in coords:
        lo = ci.detach().floor()
        frac = ci - lo
        taps.append([(lo, 1.0 - frac), (lo + 1, frac)])
    return _sample_taps(x, coords, taps)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4) for an output of
    ``size`` (N, C, H, W) or (N, C, D, H, W), in grid_sample's [-1, 1] coordinates."""
    check_tensor(theta, "affine_grid", "theta")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired.", stacklevel=2)
        align_corners = False
    if not theta._dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta._dtype}")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    k = len(size) - 2
    if theta.ndim != 3 or theta._shape[1:] != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got "
                         f"{theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta._shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: theta has {theta._shape[0]} matrices but size asks for a batch of "
                           f"{size[0]}")
    from .._creation import linspace, ones
    from .._movement import meshgrid, stack

    def axis(steps: int) -> Tensor:
        if steps <= 1:
            return linspace(0.0, 0.0, 1, dtype=theta._dtype, device=theta._device)
        r = linspace(-1.0, 1.0, steps, dtype=theta._dtype, device=theta._device)
        return r if align_corners else r * ((steps - 1) / steps)
    spatial = size[2:]
    axes = [axis(s) for s in spatial]
    mesh = meshgrid(*axes, indexing="ij")
    # homogeneous coordinates, innermost first: (x, y[, z], 1)
    base = stack([mesh[i] for i in reversed(range(k))] + [ones(spatial, dtype=theta._dtype, device=theta._device)],
                 -1)
    grid = base.reshape(1, -1, k + 1) @ theta.mT
    return grid.reshape((size[0],) + spatial + (k,))


# ---- pixel shuffle ------------------------------------------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C·r², H, W) -> (*, C, H·r, W·r).

    >>> ember.nn.functional.pixel_shuffle(ember.arange(4).reshape(4, 1, 1), 2)
    tensor([[[0, 1],
             [2, 3]]])
    """
    x = check_tensor(input, "pixel_shuffle")
    r = int(upscale_factor)
    if x.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           "dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c, h, w = x._shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    lead = x._shape[:-3]
    b = len(lead)
    y = x.reshape(lead + (c // (r * r), r, r, h, w))
    y = y.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return y.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H·r, W·r) -> (*, C·r², H, W), the inverse of pixel_shuffle."""
    x = check_tensor(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if x.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    c, h, w = x._shape[-3:]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    lead = x._shape[:-3]
    b = len(lead)
    y = x.reshape(lead + (c, h // r, r, w // r, r))
    y = y.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return y.reshape(lead + (c * r * r, h // r, w // r))
