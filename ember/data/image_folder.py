"""ImageFolder and DatasetFolder: one sub-folder per class, one file per example.

    root/cat/001.png
    root/cat/xyz.jpg
    root/dog/1.png

``classes`` are the sorted sub-folder names, ``class_to_idx`` maps them to 0, 1, ...; ``samples``
lists ``(path, class_index)`` class by class, each class's files in sorted order (sub-folders are
searched too). Items are ``(image, class_index)``; the default loader opens the file with Pillow
(an optional dependency: ``pip install pillow``) and converts it to RGB.

>>> ds = ImageFolder("photos", transform=vision.ToTensor())   # doctest: +SKIP
>>> ds.classes, ds[0][0].shape                                   # doctest: +SKIP
(['cat', 'dog'], ember.Size([3, 64, 64]))
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

from .dataset import Dataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "pil_loader", "has_file_allowed_extension"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions: str | Sequence[str]) -> bool:
    """Whether ``filename`` ends with one of ``extensions`` (case-insensitive)."""
    exts = (extensions,) if isinstance(extensions, str) else tuple(extensions)
    return filename.lower().endswith(tuple(e.lower() for e in exts))


def pil_loader(path: str):
    """Open an image file with Pillow and convert it to RGB (the file is closed before returning)."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"loading {path} needs Pillow, which is not installed: pip install pillow "
                          "(or pip install 'ember[vision]'), or pass ImageFolder a loader= of your own") from None
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")  # convert() reads the pixels, so the file can close


class DatasetFolder(Dataset):
    """Files sorted into one sub-folder per class, read with ``loader(path)``.

    Args:
        root: the folder holding one sub-folder per class.
        loader: ``path -> example``.
        extensions: the file endings to keep (case-insensitive); exclusive with ``is_valid_file``.
        transform / target_transform: applied to the loaded example and to the class index.
        is_valid_file: ``path -> bool`` to choose files yourself.
        allow_empty: accept class folders without any valid file (otherwise an error).
    """

    def __init__(self, root: str | os.PathLike, loader: Callable[[str], Any],
                 extensions: str | Sequence[str] | None = None, transform: Callable | None = None,
                 target_transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False):
        self.root = os.fspath(root)
        self.loader = loader
        self.extensions = extensions
        self.transform = transform
        self.target_transform = target_transform
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file, allow_empty)
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def find_classes(directory: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
        """(sorted class folder names, name -> index). Override to use another layout."""
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"no such folder: {directory}")
        classes = sorted(e.name for e in os.scandir(directory) if e.is_dir())
        if not classes:
            raise FileNotFoundError(f"couldn't find any class folder in {directory}")
        return classes, {c: i for i, c in enumerate(classes)}

    @staticmethod
    def make_dataset(directory: str | os.PathLike, class_to_idx: dict[str, int],
                     extensions: str | Sequence[str] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        """The ``(path, class_index)`` list, class by class in index order, files sorted within."""
        directory = os.path.expanduser(os.fspath(directory))
        if extensions is not None and is_valid_file is not None:
            raise ValueError("extensions and is_valid_file cannot both be given: choose files one way")
        if extensions is None and is_valid_file is None:
            raise ValueError("give extensions or is_valid_file to say which files are examples")
        valid = is_valid_file if is_valid_file is not None else \
            (lambda p: has_file_allowed_extension(p, extensions))  # noqa: E731
        samples: list[tuple[str, int]] = []
        empty = []
        for name, idx in sorted(class_to_idx.items(), key=lambda kv: kv[1]):
            folder = os.path.join(directory, name)
            if not os.path.isdir(folder):
                raise FileNotFoundError(f"class folder {folder} does not exist")
            before = len(samples)
            for dirpath, _, filenames in sorted(os.walk(folder, followlinks=True)):
                for fname in sorted(filenames):
                    path = os.path.join(dirpath, fname)
                    if valid(path):
                        samples.append((path, idx))
            if len(samples) == before:
                empty.append(name)
        if empty and not allow_empty:
            what = f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}" \
                if extensions is not None else "is_valid_file accepted none of their files"
            raise FileNotFoundError(f"found no valid file for the classes {', '.join(empty)} in {directory}. {what}")
        return samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        n = len(self.samples)
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(f"{type(self).__name__} indices must be integers, got {type(index).__name__}") from None
        if not -n <= i < n:
            raise IndexError(f"{type(self).__name__}: index {i} is out of range for {n} items")
        path, target = self.samples[i]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}"]
        if self.transform is not None:
            lines.append(f"transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"target_transform: {self.target_transform!r}")
        return f"Dataset {type(self).__name__}\n" + "\n".join("    " + ln for ln in lines)


class ImageFolder(DatasetFolder):
    """Images sorted into one sub-folder per class; items are ``(image, class_index)``.

    With the default ``loader`` the image is an RGB PIL image (Pillow required): follow it with
    ``vision.ToTensor()`` for a C x H x W float tensor or ``vision.PILToArray()`` for a numpy array.
    ``extensions`` (keyword-only) defaults to :data:`IMG_EXTENSIONS` unless ``is_valid_file`` is
    given; ``imgs`` is ``samples``. The positional order is torchvision's.
    """

    def __init__(self, root: str | os.PathLike, transform: Callable | None = None,
                 target_transform: Callable | None = None, loader: Callable[[str], Any] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False, *,
                 extensions: str | Sequence[str] | None = None):
        if extensions is None and is_valid_file is None:
            extensions = IMG_EXTENSIONS
        super().__init__(root, loader if loader is not None else pil_loader, extensions, transform,
                         target_transform, is_valid_file, allow_empty)
        self.imgs = self.samples
