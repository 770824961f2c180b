"""Image transforms with torchvision's names: Compose, ToTensor, Normalize, Resize, CenterCrop, ...

Three kinds of image go in:

* a PIL image (Pillow is optional: only transforms given one need it);
* a numpy array in image layout, H x W (grey) or H x W x C -- what the ember.data sources and
  :class:`PILToArray` produce;
* an ember tensor in tensor layout, (..., C, H, W) -- what :class:`ToTensor` produces.

A transform returns the same kind it was given (except the converters). Random transforms draw
from ember's generator (``ember.manual_seed`` or their ``generator=`` argument), so a seeded run
augments identically every time.

>>> import numpy as np
>>> tf = Compose([ToTensor(), Normalize([0.5], [0.5])])
>>> x = tf(np.full((2, 2), 255, dtype=np.uint8)); x.shape, x.dtype, x.max().item()
(ember.Size([1, 2, 2]), ember.float32, 1.0)
"""

from __future__ import annotations

import enum
import numbers
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["InterpolationMode", "Compose", "Lambda", "ToTensor", "PILToTensor", "PILToArray", "Normalize",
           "Resize", "CenterCrop", "RandomCrop", "Grayscale", "RandomHorizontalFlip", "RandomVerticalFlip"]


class InterpolationMode(enum.StrEnum):
    """Resampling filters (torchvision's names); a plain string such as "bilinear" works too."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# ---- helpers -------------------------------------------------------------------------------------

def _pil_image_module():
    """PIL.Image, imported on first need, with an install hint when Pillow is missing."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("this needs Pillow, which is not installed: pip install pillow "
                          "(or pip install 'ember[vision]')") from None
    return Image


def _is_pil(img: Any) -> bool:
    mod = sys.modules.get("PIL.Image")  # if PIL was never imported, img cannot be a PIL image
    return mod is not None and isinstance(img, mod.Image)


def _is_tensor(img: Any) -> bool:
    from .. import Tensor
    return isinstance(img, Tensor)


def _kind(img: Any, who: str) -> str:
    if _is_tensor(img):
        if img.ndim < 2:
            raise ValueError(f"{who}: a tensor image needs at least 2 dims (..., H, W), got shape {tuple(img.shape)}")
        return "tensor"
    if isinstance(img, np.ndarray):
        if img.ndim not in (2, 3):
            raise ValueError(f"{who}: a numpy image must be H x W or H x W x C, got shape {img.shape}")
        return "array"
    if _is_pil(img):
        return "pil"
    raise TypeError(f"{who}: expected a PIL image, a numpy array or an ember tensor, got {type(img).__name__}")


def _hw(img: Any, kind: str) -> tuple[int, int]:
    if kind == "pil":
        return img.height, img.width
    if kind == "array":
        return img.shape[0], img.shape[1]
    return int(img.shape[-2]), int(img.shape[-1])


def _pair(size: int | Sequence[int], who: str) -> tuple[int, int]:
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{who}: size must be an int or (height, width), got {size}")
    return size


def _mode(interpolation: Any) -> InterpolationMode:
    try:
        return InterpolationMode(interpolation.value if isinstance(interpolation, enum.Enum) else interpolation)
    except ValueError:
        raise ValueError(f"unknown interpolation {interpolation!r}; choose from "
                         f"{[m.value for m in InterpolationMode]}") from None


def _array_to_pil(a: np.ndarray, who: str):
    if a.dtype != np.uint8 or not (a.ndim == 2 or a.shape[2] in (1, 3, 4)):
        raise TypeError(f"{who}: numpy images must be uint8 H x W or H x W x 1/3/4 to be resampled, got "
                        f"{a.dtype} with shape {a.shape}; convert with ToTensor() first to work on tensors")
    Image = _pil_image_module()
    return Image.fromarray(np.ascontiguousarray(a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a))


def _pil_to_array(img) -> np.ndarray:
    a = np.array(img)  # a copy, so later in-place work never touches the image
    if img.mode == "1":
        a = a.astype(np.uint8) * 255
    return a


# ---- composition ---------------------------------------------------------------------------------

class Compose:
    """Apply transforms in order.

    >>> Compose([Lambda(lambda x: x + 1), Lambda(lambda x: x * 2)])(3)
    8
    """

    def __init__(self, transforms: Sequence[Callable]):
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return "Compose(\n" + "".join(f"    {t!r}\n" for t in self.transforms) + ")"


class Lambda:
    """Wrap a function as a transform (named, so it shows in a Compose's repr)."""

    def __init__(self, lambd: Callable):
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"Lambda({getattr(self.lambd, '__name__', 'fn')})"


# ---- conversions ---------------------------------------------------------------------------------

class ToTensor:
    """PIL image or H x W (x C) numpy array -> C x H x W ember tensor; uint8 values are scaled to [0, 1].

    Other dtypes (float, int16, ...) keep their values and dtype, as in torchvision.

    >>> ToTensor()(np.array([[0, 255]], dtype=np.uint8)).tolist()
    [[[0.0, 1.0]]]
    """

    def __call__(self, pic: Any):
        from .. import from_numpy
        if _is_pil(pic):
            a = _pil_to_array(pic)
        elif isinstance(pic, np.ndarray):
            a = pic
        else:
            raise TypeError(f"ToTensor: expected a PIL image or a numpy array, got {type(pic).__name__}")
        if a.ndim == 2:
            a = a[:, :, None]
        if a.ndim != 3:
            raise ValueError(f"ToTensor: expected an image H x W or H x W x C, got shape {a.shape}")
        chw = a.transpose(2, 0, 1)
        if chw.dtype == np.uint8:
            return from_numpy(np.ascontiguousarray(chw, np.float32) / np.float32(255))
        # a native-order copy: the tensor never shares memory with the caller's array
        return from_numpy(np.array(chw, dtype=chw.dtype.newbyteorder("="), order="C", copy=True))

    def __repr__(self) -> str:
        return "ToTensor()"


class PILToTensor:
    """PIL image -> C x H x W ember tensor of the image's own dtype (uint8 for L/RGB), no scaling."""

    def __call__(self, pic: Any):
        from .. import from_numpy
        if not _is_pil(pic):
            raise TypeError(f"PILToTensor: expected a PIL image, got {type(pic).__name__}")
        a = _pil_to_array(pic)
        return from_numpy(np.ascontiguousarray((a[:, :, None] if a.ndim == 2 else a).transpose(2, 0, 1)))

    def __repr__(self) -> str:
        return "PILToTensor()"


class PILToArray:
    """PIL image -> numpy array in image layout (H x W for grey, H x W x C for colour); a copy."""

    def __call__(self, pic: Any) -> np.ndarray:
        if not _is_pil(pic):
            raise TypeError(f"PILToArray: expected a PIL image, got {type(pic).__name__}")
        return _pil_to_array(pic)

    def __repr__(self) -> str:
        return "PILToArray()"


class Normalize:
    """Per-channel ``(x - mean) / std`` on a float tensor (..., C, H, W).

    >>> import ember
    >>> Normalize([1.0, 2.0], [2.0, 4.0])(ember.ones(2, 1, 1)).flatten().tolist()
    [0.0, -0.25]
    """

    def __init__(self, mean: Sequence[float] | float, std: Sequence[float] | float, inplace: bool = False):
        self.mean, self.std = _floats(mean), _floats(std)
        if any(s == 0 for s in self.std):
            raise ValueError(f"Normalize: std evaluated to zero after conversion to float, leading to "
                             f"division by zero: std={self.std}")
        self.inplace = inplace

    def __call__(self, tensor: Any):
        from .. import Tensor
        from .. import tensor as make
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Normalize: expected an ember tensor (use ToTensor first), got {type(tensor).__name__}")
        if not tensor.is_floating_point():
            raise TypeError(f"Normalize: input tensor should be a float tensor, got {tensor.dtype}")
        if tensor.ndim < 3:
            raise ValueError(f"Normalize: expected a tensor image (..., C, H, W), got shape {tuple(tensor.shape)}")
        c = int(tensor.shape[-3])
        for name, v in (("mean", self.mean), ("std", self.std)):
            if len(v) not in (1, c):
                raise ValueError(f"Normalize: {name} has {len(v)} values but the image has {c} channels")
        mean = make(self.mean, dtype=tensor.dtype, device=tensor.device).reshape(-1, 1, 1)
        std = make(self.std, dtype=tensor.dtype, device=tensor.device).reshape(-1, 1, 1)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"


def _floats(v: Any) -> list[float]:
    """A number, a sequence, a numpy array or a tensor -> a list of floats."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    return [float(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


# ---- geometry ------------------------------------------------------------------------------------

def _resized_hw(h: int, w: int, size: int | Sequence[int], max_size: int | None) -> tuple[int, int]:
    """Output (height, width): a pair is used as is; one number sets the shorter edge, keeping the
    aspect ratio (the longer edge truncated), then the longer edge is capped at ``max_size``."""
    if not isinstance(size, numbers.Integral) and len(size) == 2:
        if max_size is not None:
            raise ValueError("Resize: max_size is only allowed when size is a single number")
        return int(size[0]), int(size[1])
    s = int(size if isinstance(size, numbers.Integral) else size[0])
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = s, int(s * long / short)
    if max_size is not None:
        if max_size <= s:
            raise ValueError(f"Resize: max_size ({max_size}) must be larger than size ({s})")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


class Resize:
    """Resize to ``size``: (h, w), or one number for the shorter edge keeping the aspect ratio.

    PIL images and uint8 numpy images are resampled by Pillow (which always antialiases); tensors
    (..., C, H, W) by ``ember.nn.functional.interpolate`` (nearest, nearest-exact, bilinear or
    bicubic; ``antialias`` applies to bilinear/bicubic). uint8 tensors are rounded back to uint8.

    >>> Resize(4)(np.zeros((2, 3), np.uint8)).shape
    (4, 6)
    """

    def __init__(self, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool = True):
        if not isinstance(size, numbers.Integral) and len(size) not in (1, 2):
            raise ValueError(f"Resize: size must be an int or a sequence of 1 or 2 ints, got {size}")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _mode(interpolation)

    def __call__(self, img: Any) -> Any:
        kind = _kind(img, "Resize")
        h, w = _hw(img, kind)
        oh, ow = _resized_hw(h, w, self.size, self.max_size)
        if kind == "tensor":
            return self._tensor(img, oh, ow)
        pil = img if kind == "pil" else _array_to_pil(img, "Resize")
        Image = _pil_image_module()
        filters = {"nearest": Image.Resampling.NEAREST, "nearest-exact": Image.Resampling.NEAREST,
                   "bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC,
                   "box": Image.Resampling.BOX, "hamming": Image.Resampling.HAMMING,
                   "lanczos": Image.Resampling.LANCZOS}
        out = pil.resize((ow, oh), filters[self.interpolation.value]) if (oh, ow) != (h, w) else pil.copy()
        if kind == "pil":
            return out
        a = np.asarray(out)
        return a[:, :, None] if img.ndim == 3 and a.ndim == 2 else a.copy()

    def _tensor(self, x, oh: int, ow: int):
        import ember.nn.functional as F
        mode = self.interpolation.value
        if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
            raise ValueError(f"Resize: tensors support nearest, nearest-exact, bilinear and bicubic, not {mode}; "
                             "resize the PIL image instead")
        lead = tuple(x.shape[:-2])
        y = x.reshape(-1, 1, *x.shape[-2:])
        floating = y.is_floating_point()
        from .. import _dtype as dt
        if x.dtype.is_complex or x.dtype is dt.bool:
            raise TypeError(f"Resize: cannot resample a {x.dtype} tensor")
        if not floating:
            y = y.float()
        linear = mode in ("bilinear", "bicubic")
        y = F.interpolate(y, size=(oh, ow), mode=mode, align_corners=False if linear else None,
                          antialias=self.antialias and linear)
        if not floating:  # round to the nearest integer, within the dtype's range
            from .. import iinfo
            info = iinfo(x.dtype)
            y = y.round().clamp(info.min, info.max).to(x.dtype)
        return y.reshape(*lead, oh, ow)

    def __repr__(self) -> str:
        return (f"Resize(size={self.size}, interpolation={self.interpolation.value}, max_size={self.max_size}, "
                f"antialias={self.antialias})")


def _crop(img: Any, kind: str, top: int, left: int, ch: int, cw: int) -> Any:
    """The ch x cw window at (top, left); parts outside the image are zeros."""
    h, w = _hw(img, kind)
    if kind == "pil":
        return img.crop((left, top, left + cw, top + ch))  # Pillow fills outside the image with 0
    pt, pl = max(0, -top), max(0, -left)
    pb, pr = max(0, top + ch - h), max(0, left + cw - w)
    if kind == "tensor":
        if pt or pl or pb or pr:
            import ember.nn.functional as F
            img = F.pad(img, (pl, pr, pt, pb))
            top, left = top + pt, left + pl
        return img[..., top:top + ch, left:left + cw]
    if pt or pl or pb or pr:
        img = np.pad(img, [(pt, pb), (pl, pr)] + [(0, 0)] * (img.ndim - 2))
        top, left = top + pt, left + pl
    return img[top:top + ch, left:left + cw].copy()


class CenterCrop:
    """Crop the centre ``size`` (int or (h, w)); a crop larger than the image is padded with zeros.

    >>> CenterCrop(2)(np.arange(16).reshape(4, 4)).tolist()
    [[5, 6], [9, 10]]
    """

    def __init__(self, size: int | Sequence[int]):
        self.size = _pair(size, "CenterCrop")

    def __call__(self, img: Any) -> Any:
        kind = _kind(img, "CenterCrop")
        h, w = _hw(img, kind)
        ch, cw = self.size
        # centred; when the crop is wider than the image, the extra (odd) column goes to the right
        top = -((ch - h) // 2) if ch > h else int(round((h - ch) / 2.0))
        left = -((cw - w) // 2) if cw > w else int(round((w - cw) / 2.0))
        return _crop(img, kind, top, left, ch, cw)

    def __repr__(self) -> str:
        return f"CenterCrop(size={self.size})"


class RandomCrop:
    """Crop a random ``size`` window, after padding each border by ``padding`` zeros (or ``fill``).

    ``padding``: int (all sides), (left/right, top/bottom) or (left, top, right, bottom);
    ``pad_if_needed`` pads an image smaller than the crop. Offsets come from ember's generator.
    """

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: float = 0, generator: Any = None):
        self.size = _pair(size, "RandomCrop")
        if padding is None:
            pad = (0, 0, 0, 0)
        elif isinstance(padding, numbers.Integral):
            pad = (int(padding),) * 4
        elif len(padding) == 2:
            pad = (int(padding[0]), int(padding[1])) * 2
        elif len(padding) == 4:
            pad = tuple(int(p) for p in padding)
        else:
            raise ValueError(f"RandomCrop: padding must be an int or 2 or 4 ints, got {padding}")
        if min(pad) < 0:
            raise ValueError(f"RandomCrop: padding must be non-negative, got {padding}")
        self.padding, self.pad_if_needed, self.fill, self.generator = pad, pad_if_needed, fill, generator

    def __call__(self, img: Any) -> Any:
        from .. import randint
        kind = _kind(img, "RandomCrop")
        h, w = _hw(img, kind)
        ch, cw = self.size
        pl, pt, pr, pb = self.padding
        if self.pad_if_needed:
            pl, pr = pl + max(0, cw - (w + pl + pr)), pr + max(0, cw - (w + pl + pr))
            pt, pb = pt + max(0, ch - (h + pt + pb)), pb + max(0, ch - (h + pt + pb))
        H, W = h + pt + pb, w + pl + pr
        if ch > H or cw > W:
            raise ValueError(f"RandomCrop: crop size {self.size} is larger than the (padded) image ({H}, {W})")
        i = int(randint(0, H - ch + 1, (1,), generator=self.generator).item())
        j = int(randint(0, W - cw + 1, (1,), generator=self.generator).item())
        if self.fill == 0:
            return _crop(img, kind, i - pt, j - pl, ch, cw)
        return _crop_filled(img, kind, i - pt, j - pl, ch, cw, self.fill)

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, padding={self.padding})"


def _crop_filled(img: Any, kind: str, top: int, left: int, ch: int, cw: int, fill: float) -> Any:
    """:func:`_crop` with ``fill`` instead of zeros outside the image."""
    h, w = _hw(img, kind)
    if kind == "pil":
        Image = _pil_image_module()
        canvas = Image.new(img.mode, (cw, ch), fill if len(img.getbands()) == 1 else (int(fill),) * len(img.getbands()))
        canvas.paste(img, (-left, -top))
        return canvas
    if kind == "tensor":
        import ember.nn.functional as F
        pt, pl = max(0, -top), max(0, -left)
        pb, pr = max(0, top + ch - h), max(0, left + cw - w)
        padded = F.pad(img, (pl, pr, pt, pb), value=fill)
        return padded[..., top + pt:top + pt + ch, left + pl:left + pl + cw]
    out = np.full((ch, cw) + img.shape[2:], fill, dtype=img.dtype)
    t0, l0 = max(0, top), max(0, left)
    t1, l1 = min(h, top + ch), min(w, left + cw)
    if t1 > t0 and l1 > l0:
        out[t0 - top:t1 - top, l0 - left:l1 - left] = img[t0:t1, l0:l1]
    return out


# ---- colour and flips ----------------------------------------------------------------------------

class Grayscale:
    """Convert to grey with ITU-R 601-2 luma weights; ``num_output_channels`` is 1 or 3.

    PIL images use Pillow's ``convert("L")``; uint8 numpy images use the same integer formula, so
    both give identical pixels. Tensors (..., 3, H, W) use 0.2989 R + 0.587 G + 0.114 B and keep
    their dtype (integer dtypes are truncated, as in torchvision).
    """

    def __init__(self, num_output_channels: int = 1):
        if num_output_channels not in (1, 3):
            raise ValueError(f"Grayscale: num_output_channels should be 1 or 3, got {num_output_channels}")
        self.num_output_channels = num_output_channels

    def __call__(self, img: Any) -> Any:
        kind = _kind(img, "Grayscale")
        n = self.num_output_channels
        if kind == "pil":
            g = img.convert("L")
            return g if n == 1 else g.convert("RGB")
        if kind == "array":
            if img.ndim == 2 or img.shape[2] == 1:
                g = img.reshape(img.shape[:2])
            elif img.shape[2] in (3, 4):
                if img.dtype != np.uint8:
                    raise TypeError(f"Grayscale: numpy images must be uint8, got {img.dtype}; use ToTensor first")
                rgb = img[:, :, :3].astype(np.uint32)
                # Pillow's fixed-point luma: weights 299/587/114 scaled by 2**16, rounded
                g = ((rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16).astype(np.uint8)
            else:
                raise ValueError(f"Grayscale: expected 1, 3 or 4 channels, got shape {img.shape}")
            return g.copy() if n == 1 else np.repeat(g[:, :, None], 3, axis=2)
        if img.ndim < 3 or int(img.shape[-3]) not in (1, 3):
            raise ValueError(f"Grayscale: expected a tensor (..., 1 or 3, H, W), got shape {tuple(img.shape)}")
        if int(img.shape[-3]) == 1:
            g = img
        else:
            x = img if img.is_floating_point() else img.float()
            g = (0.2989 * x[..., 0:1, :, :] + 0.587 * x[..., 1:2, :, :] + 0.114 * x[..., 2:3, :, :]).to(img.dtype)
        if n == 3:
            g = g.expand(*g.shape[:-3], 3, *g.shape[-2:]).contiguous()
        return g

    def __repr__(self) -> str:
        return f"Grayscale(num_output_channels={self.num_output_channels})"


class RandomHorizontalFlip:
    """Mirror left-right with probability ``p``, drawing from ember's generator (or ``generator``).

    >>> import ember
    >>> flip = RandomHorizontalFlip(p=1.0)
    >>> flip(np.array([[1, 2, 3]])).tolist()
    [[3, 2, 1]]
    """

    _axis = "horizontal"

    def __init__(self, p: float = 0.5, generator: Any = None):
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be a probability in [0, 1], got {p}")
        self.p, self.generator = float(p), generator

    def __call__(self, img: Any) -> Any:
        from .. import rand
        kind = _kind(img, type(self).__name__)
        # one draw per call, even when p is 0 or 1, so the random stream does not depend on p
        if not rand(1, generator=self.generator).item() < self.p:
            return img
        horizontal = self._axis == "horizontal"
        if kind == "pil":
            Image = _pil_image_module()
            return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT if horizontal else Image.Transpose.FLIP_TOP_BOTTOM)
        if kind == "array":
            return (img[:, ::-1] if horizontal else img[::-1]).copy()
        from .. import flip
        return flip(img, [-1 if horizontal else -2])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top-bottom with probability ``p`` (see :class:`RandomHorizontalFlip`)."""

    _axis = "vertical"
