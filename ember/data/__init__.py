"""ember.data: datasets, samplers, the DataLoader, dataset transforms and data sources."""

from ._workers import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    InMemoryDataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .loader import DataLoader
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .transforms import Composed, Mapper, Partial, Shuffled, Window

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "InMemoryDataset", "Subset", "ConcatDataset", "ChainDataset",
    "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler", "DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
    "Mapper", "Partial", "Shuffled", "Composed", "Window",
]

# ---- data sources (SQLite, image folders, MNIST/CIFAR/shipped data, image transforms) ----
from . import sources, vision  # noqa: E402, F401
from .image_folder import DatasetFolder, ImageFolder  # noqa: E402, F401
from .sources import CIFAR10, MNIST, Digits, FashionMNIST, ShippedMNIST, mnist_5k  # noqa: E402, F401
from .sqlite import SqliteDataset, SqliteWriter  # noqa: E402, F401

__all__ += ["sources", "vision", "DatasetFolder", "ImageFolder", "CIFAR10", "MNIST", "Digits", "FashionMNIST",
            "ShippedMNIST", "mnist_5k", "SqliteDataset", "SqliteWriter"]
