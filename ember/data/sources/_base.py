"""What the image-classification sources share: index checks, transforms, .data/.targets, repr."""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dataset import Dataset
from ._download import default_data_dir


def resolve_root(root: str | os.PathLike | None) -> str:
    """``root`` expanded, or the cache directory when it is None."""
    return default_data_dir() if root is None else os.path.abspath(os.path.expanduser(os.fspath(root)))


def _as_array(value) -> np.ndarray:
    from ... import Tensor
    return value.numpy(force=True) if isinstance(value, Tensor) else np.asarray(value)


class ArrayImageDataset(Dataset):
    """(image, label) pairs held as a uint8 image array ``images`` (N, H, W[, C]) and int64 ``labels``.

    Items are ``(image, label)``: with no ``transform`` the image is a uint8 numpy array, H x W for
    grey images and H x W x C for colour ones (the layout of a PIL image, which
    ``ember.data.vision.ToTensor`` turns into a C x H x W float tensor in [0, 1]); the label is an int.
    """

    classes: list[str] = []

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform: Callable | None = None,
                 target_transform: Callable | None = None):
        if len(images) != len(labels):
            raise ValueError(f"{type(self).__name__}: {len(images)} images but {len(labels)} labels")
        self._images = images
        self._labels = labels.astype(np.int64, copy=False)
        self.transform = transform
        self.target_transform = target_transform
        self._data_t = self._targets_t = None

    def __len__(self) -> int:
        return len(self._labels)

    def _index(self, index: Any) -> int:
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(f"{type(self).__name__} indices must be integers, got {type(index).__name__}") from None
        n = len(self._labels)
        if len(self._images) != n:
            raise RuntimeError(f"{type(self).__name__}: data holds {len(self._images)} images but targets "
                               f"holds {n} labels; set both to the same rows")
        if not -n <= i < n:
            raise IndexError(f"{type(self).__name__}: index {i} is out of range for {n} items")
        return i + n if i < 0 else i

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        i = self._index(index)
        img: Any = self._images[i].copy()  # a transform may work in place; the dataset must not change
        target: Any = int(self._labels[i])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    @property
    def data(self):
        """All images as one ember uint8 tensor (shares memory with the dataset's array)."""
        if self._data_t is None:
            from ... import from_numpy
            self._data_t = from_numpy(self._images)
        return self._data_t

    @data.setter
    def data(self, value) -> None:
        # torchvision-style subsetting: ds.data = ds.data[mask]; ds.targets = ds.targets[mask]
        images = _as_array(value)
        if images.ndim != self._images.ndim:
            raise ValueError(f"{type(self).__name__}.data: expected images with {self._images.ndim} dims "
                             f"(N, ...), got shape {images.shape}")
        self._images, self._data_t = images, None

    @property
    def targets(self):
        """All labels as one ember int64 tensor."""
        if self._targets_t is None:
            from ... import from_numpy
            self._targets_t = from_numpy(self._labels)
        return self._targets_t

    @targets.setter
    def targets(self, value) -> None:
        labels = _as_array(value).astype(np.int64)
        if labels.ndim != 1:
            raise ValueError(f"{type(self).__name__}.targets: expected one label per item, got shape {labels.shape}")
        self._labels, self._targets_t = labels, None

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}"]
        if self.extra_repr():
            lines += self.extra_repr().splitlines()
        if self.transform is not None:
            lines.append(f"transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"target_transform: {self.target_transform!r}")
        return f"Dataset {type(self).__name__}\n" + "\n".join("    " + ln for ln in lines)
