"""MNIST and Fashion-MNIST from their IDX files, with download-and-cache for machines with internet.

The four files of each dataset (train/test images and labels, ``*.gz`` or extracted) are looked
up in ``<root>/<ClassName>/raw/``, then ``<root>/<ClassName>/`` -- the first place is where
``download=True`` puts them and where torchvision keeps them, so a torchvision download folder
works as ``root``. (Not in ``root`` itself: MNIST and Fashion-MNIST use the same file names.)
``root=None`` means the cache: ``$EMBER_DATA`` or ``~/.cache/ember/datasets``.

>>> train = MNIST("~/data", train=True, download=True)   # doctest: +SKIP
>>> img, label = train[0]; img.shape, img.dtype, label     # doctest: +SKIP
((28, 28), dtype('uint8'), 5)
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ._base import ArrayImageDataset, resolve_root
from ._download import download_url
from ._idx import read_idx

__all__ = ["MNIST", "FashionMNIST"]


class MNIST(ArrayImageDataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images, 28 x 28 grey.

    Args:
        root: folder holding (or receiving) the files; None for the cache directory.
        train: the training split (True) or the test split (False).
        download: fetch missing files from the mirrors (checksums verified).
        transform: applied to each image (a 28 x 28 uint8 numpy array), e.g.
            ``ember.data.vision.ToTensor()``.
        target_transform: applied to each label (an int).

    ``.data`` is a uint8 tensor (N, 28, 28), ``.targets`` an int64 tensor (N,), ``.classes`` the
    class names; items are ``(image, label)``.
    """

    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root: str | os.PathLike | None = None, train: bool = True, download: bool = False,
                 transform: Callable | None = None, target_transform: Callable | None = None):
        self.root = resolve_root(root)
        self.train = bool(train)
        prefix = "train" if self.train else "t10k"
        files = {name: md5 for name, md5 in self.resources if name.startswith(prefix + "-")}
        paths = [self._find(name, md5, download) for name, md5 in files.items()]
        img_path, lbl_path = sorted(paths, key=lambda p: "labels" in os.path.basename(p))
        images, labels = read_idx(img_path), read_idx(lbl_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise ValueError(f"{type(self).__name__}: {img_path} should hold uint8 images (N, H, W), "
                             f"got {images.dtype} with shape {images.shape}")
        if labels.ndim != 1 or len(labels) != len(images):
            raise ValueError(f"{type(self).__name__}: {lbl_path} should hold {len(images)} labels "
                             f"(one per image in {img_path}), got shape {labels.shape}")
        if labels.size and int(labels.max()) >= len(self.classes):
            raise ValueError(f"{type(self).__name__}: {lbl_path} has label {int(labels.max())}, "
                             f"but there are only {len(self.classes)} classes")
        super().__init__(images, labels, transform, target_transform)

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    def _find(self, name: str, md5: str, download: bool) -> str:
        """The path of ``name`` (gzipped or extracted) in the usual places, downloading it if asked."""
        base = name[:-3]  # without .gz
        folders = [self.raw_folder, os.path.join(self.root, type(self).__name__)]
        tried = []
        for folder in folders:
            for candidate in (name, base):
                p = os.path.join(folder, candidate)
                if os.path.isfile(p):
                    return p
                tried.append(p)
        if download:
            return download_url([m + name for m in self.mirrors], os.path.join(self.raw_folder, name), md5=md5)
        raise FileNotFoundError(
            f"{type(self).__name__}: {name} not found; looked for:\n  " + "\n  ".join(tried) +
            f"\nPass download=True to fetch it from {self.mirrors[0]}{name}, or place the file "
            f"(gzipped or extracted) in {self.raw_folder}.")

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}\nRoot location: {self.root}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28 x 28 grey images of 10 kinds of clothing; MNIST's format and API.

    >>> test = FashionMNIST(train=False, download=True)    # doctest: +SKIP
    >>> test.classes[int(test.targets[0])]                  # doctest: +SKIP
    'Ankle boot'
    """

    mirrors = [
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    ]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]
