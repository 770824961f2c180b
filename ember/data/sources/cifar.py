"""CIFAR-10 from its binary distribution (cifar-10-binary.tar.gz): fixed-size records, no pickle.

Each ``.bin`` file is a run of 3,073-byte records: one label byte (0..9), then the 32 x 32 red
plane, the green plane and the blue plane, each row-major. The training split is
``data_batch_1.bin`` .. ``data_batch_5.bin`` (50,000 images), the test split ``test_batch.bin``
(10,000); ``batches.meta.txt`` names the classes.

>>> train = CIFAR10("~/data", train=True, download=True)   # doctest: +SKIP
>>> img, label = train[0]; img.shape, train.classes[label]  # doctest: +SKIP
((32, 32, 3), 'frog')
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ._base import ArrayImageDataset, resolve_root
from ._download import download_url, extract_tar

__all__ = ["CIFAR10", "read_cifar_bin"]

_SIDE = 32
_RECORD = 1 + 3 * _SIDE * _SIDE


def read_cifar_bin(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 binary batch file -> (images uint8 (N, 32, 32, 3), labels int64 (N,))."""
    path = os.fspath(path)
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % _RECORD:
        raise ValueError(f"read_cifar_bin: {path} has {raw.size} bytes, which is not a whole number "
                         f"of {_RECORD}-byte CIFAR-10 records (1 label byte + 3 x 32 x 32 pixels)")
    rec = raw.reshape(-1, _RECORD)
    labels = rec[:, 0].astype(np.int64)
    if labels.max() > 9:
        bad = int(np.argmax(labels > 9))
        raise ValueError(f"read_cifar_bin: {path} record {bad} has label {int(labels[bad])}; CIFAR-10 "
                         "labels are 0..9 (is this a CIFAR-100 file?)")
    # planes (N, 3, 32, 32) -> the image layout (N, 32, 32, 3), copied to be contiguous
    images = np.ascontiguousarray(rec[:, 1:].reshape(-1, 3, _SIDE, _SIDE).transpose(0, 2, 3, 1))
    return images, labels


class CIFAR10(ArrayImageDataset):
    """CIFAR-10: 60,000 32 x 32 colour images in 10 classes, read from the binary version.

    Args:
        root: folder holding ``cifar-10-batches-bin/`` or ``cifar-10-binary.tar.gz``; None for the
            cache directory (``$EMBER_DATA`` or ``~/.cache/ember/datasets``).
        train: the 50,000 training images (True) or the 10,000 test images (False).
        download: fetch the archive when neither the folder nor the archive is there.
        transform / target_transform: applied to the image (a 32 x 32 x 3 uint8 numpy array) and
            the label (an int).

    ``.data`` is a uint8 tensor (N, 32, 32, 3), ``.targets`` an int64 tensor (N,).
    """

    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    filename = "cifar-10-binary.tar.gz"
    tgz_md5 = "c32a1d4ab5d03f1284b67883e8d87530"
    base_folder = "cifar-10-batches-bin"
    train_list = [f"data_batch_{i}.bin" for i in range(1, 6)]
    test_list = ["test_batch.bin"]
    meta_file = "batches.meta.txt"
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root: str | os.PathLike | None = None, train: bool = True, download: bool = False,
                 transform: Callable | None = None, target_transform: Callable | None = None):
        self.root = resolve_root(root)
        self.train = bool(train)
        names = self.train_list if self.train else self.test_list
        folder = os.path.join(self.root, self.base_folder)
        missing = [n for n in names if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            self._fetch(missing, download)
        parts = [read_cifar_bin(os.path.join(folder, n)) for n in names]
        images = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        labels = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
        meta = os.path.join(folder, self.meta_file)
        if os.path.isfile(meta):
            with open(meta, encoding="utf-8") as f:
                names_read = [ln.strip() for ln in f if ln.strip()]
            if names_read:
                self.classes = names_read
        super().__init__(images, labels, transform, target_transform)

    def _fetch(self, missing: list[str], download: bool) -> None:
        """Extract the missing batch files from the archive, downloading it first if asked."""
        archive = os.path.join(self.root, self.filename)
        if not os.path.isfile(archive):
            if not download:
                raise FileNotFoundError(
                    f"CIFAR10: {', '.join(missing)} not found in {os.path.join(self.root, self.base_folder)} "
                    f"and no {self.filename} in {self.root}. Pass download=True to fetch {self.url}, or "
                    f"place that file (md5 {self.tgz_md5}) in {self.root}.")
            download_url(self.url, archive, md5=self.tgz_md5)
        wanted = [f"{self.base_folder}/{n}" for n in missing]
        done = extract_tar(archive, self.root, [*wanted, f"{self.base_folder}/{self.meta_file}"])
        absent = [w for w in wanted if w not in done]
        if absent:  # the metadata file is optional; the batch files are not
            raise FileNotFoundError(f"CIFAR10: {archive} does not contain {', '.join(absent)}; "
                                    "is it the binary version (cifar-10-binary.tar.gz)?")

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}\nRoot location: {self.root}"
