"""Datasets: the map-style and iterable bases, tensors, in-memory lists, subsets, concatenation, splits.

Map-style datasets answer ``ds[i]`` and ``len(ds)``; iterable datasets only ``iter(ds)``. Names,
arguments and semantics follow ``torch.utils.data``.

>>> class Squares(Dataset):
...     def __len__(self): return 4
...     def __getitem__(self, i): return i * i
>>> [Squares()[i] for i in range(4)]
[0, 1, 4, 9]
>>> ds = TensorDataset(ember.arange(6).reshape(3, 2), ember.tensor([0, 1, 0]))
>>> x, y = ds[1]; x.tolist(), y.item()
([2, 3], 1)
"""

from __future__ import annotations

import bisect
import csv
import gzip
import io
import itertools
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from .._random import Generator, default_generator, randperm
from .._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "InMemoryDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``ds[i]`` returns one example, ``len(ds)`` counts them.

    ``ds1 + ds2`` is ``ConcatDataset([ds1, ds2])``. Subscript it for type hints as in PyTorch:
    ``class Pairs(Dataset[tuple[Tensor, int]])``.
    """

    def __getitem__(self, index: int) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Generic[T_co]):
    """A stream of examples: ``iter(ds)`` yields them (for data that cannot be indexed).

    With ``DataLoader(num_workers=n)`` every worker iterates its own copy; split the stream with
    :func:`ember.data.get_worker_info` (see docs/data.md). ``ds1 + ds2`` chains two streams.
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: IterableDataset) -> ChainDataset:
        return ChainDataset([self, other])


def check_index(index, n: int, who: str) -> int:
    """``index`` as a non-negative int below ``n``: negatives count from the end, like a list."""
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise TypeError(f"{who} indices must be integers, not {type(index).__name__}")
    i = index.__index__()
    if not -n <= i < n:
        raise IndexError(f"{who} index {i} is out of range for a dataset of length {n}")
    return i + n if i < 0 else i


def _index_list(indices) -> list[int]:
    """Indices (a list, range, tensor or array) as a list of Python ints."""
    if isinstance(indices, Tensor):
        if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dim() > 1:
            raise TypeError(f"indices must be a 1-d integer tensor, got {indices.dtype} of shape {list(indices.shape)}")
        return [int(i) for i in indices.tolist()]
    if isinstance(indices, np.ndarray):
        if indices.dtype.kind not in "iu" or indices.ndim > 1:
            raise TypeError(f"indices must be a 1-d integer array, got {indices.dtype} of shape {indices.shape}")
        return indices.tolist()
    out = []
    for i in indices:
        if isinstance(i, bool) or not hasattr(i, "__index__"):
            raise TypeError(f"indices must be integers, got {type(i).__name__}")
        out.append(i.__index__())
    return out


class TensorDataset(Dataset):
    """Examples are slices along the first dim of tensors of equal length: ``ds[i] = (t0[i], t1[i], ...)``.

    ``DataLoader`` gathers a whole batch of a TensorDataset with one indexing op per tensor
    instead of stacking single examples (same result, much faster).

    >>> ds = TensorDataset(ember.zeros(5, 3), ember.arange(5))
    >>> len(ds), [t.shape for t in ds[0]]
    (5, [ember.Size([3]), ember.Size([])])
    """

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, not an ember.Tensor")
            if t.dim() == 0:
                raise ValueError(f"TensorDataset: tensor {i} is 0-d; every tensor needs a first dim to index")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise ValueError("TensorDataset: size mismatch between tensors: first dims are "
                             f"{[t.shape[0] for t in tensors]}")
        self.tensors = tuple(tensors)

    def __getitem__(self, index) -> tuple[Tensor, ...]:
        i = check_index(index, len(self), "TensorDataset")
        return tuple(t[i] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def _parse_cell(text: str):
    """A CSV field as an int, a float or (when it is neither) the string itself."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _open_text(path, encoding: str):
    path = os.fspath(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


class InMemoryDataset(Dataset):
    """A dataset held as a Python list of examples (any iterable is read into the list once).

    >>> ds = InMemoryDataset(range(3))
    >>> len(ds), ds[-1]
    (3, 2)
    """

    def __init__(self, items: Iterable[Any]):
        if isinstance(items, Dataset):  # a map-style dataset need not define __iter__
            ds = items
            items = (ds[i] for i in range(len(ds)))
        elif not isinstance(items, Iterable):
            raise TypeError(f"InMemoryDataset: expected an iterable of examples, got {type(items).__name__}")
        self.items = list(items)

    def __getitem__(self, index):
        return self.items[check_index(index, len(self.items), "InMemoryDataset")]

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def from_csv(cls, path, *, delimiter: str = ",", header: bool = True, transform: Callable | None = None,
                 encoding: str = "utf-8") -> InMemoryDataset:
        """Rows of a CSV file (``.csv.gz`` is read through gzip). Numbers become int or float.

        With ``header=True`` each example is a dict from column name to value, otherwise a list
        of values; ``transform(row)`` (if given) turns each row into the example.

        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> _ = open(p, "w").write("x,label\\n0.5,a\\n2,b\\n")
        >>> InMemoryDataset.from_csv(p)[1]
        {'x': 2, 'label': 'b'}
        """
        with _open_text(path, encoding) as f:
            reader = csv.reader(f, delimiter=delimiter)
            names = next(reader, None) if header else None
            items = []
            for line, row in enumerate(reader, start=2 if header else 1):
                if not row:
                    continue
                values = [_parse_cell(c) for c in row]
                if names is not None:
                    if len(values) != len(names):
                        raise ValueError(f"InMemoryDataset.from_csv: {path} line {line} has {len(values)} fields "
                                         f"but the header has {len(names)}")
                    values = dict(zip(names, values))
                items.append(transform(values) if transform is not None else values)
        return cls(items)

    @classmethod
    def from_jsonl(cls, path, *, transform: Callable | None = None, encoding: str = "utf-8") -> InMemoryDataset:
        """One example per line of a JSON-lines file (``.jsonl.gz`` through gzip)."""
        items = []
        with _open_text(path, encoding) as f:
            for line, text in enumerate(f, start=1):
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as e:
                    raise ValueError(f"InMemoryDataset.from_jsonl: {path} line {line} is not JSON: {e}") from None
                items.append(transform(value) if transform is not None else value)
        return cls(items)


class Subset(Dataset):
    """The examples of ``dataset`` at ``indices``, in that order: ``Subset(ds, idx)[i] = ds[idx[i]]``.

    >>> Subset(InMemoryDataset("abcde"), [4, 0])[0]
    'e'
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices if isinstance(indices, (list, range)) else _index_list(indices)

    def __getitem__(self, idx):
        return self.dataset[self.indices[check_index(idx, len(self.indices), "Subset")]]

    def __getitems__(self, indices: list[int]) -> list:
        mapped = [self.indices[check_index(i, len(self.indices), "Subset")] for i in indices]
        many = getattr(self.dataset, "__getitems__", None)
        return many(mapped) if many is not None else [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)

    def _remap_indices(self, indices: list[int]) -> tuple[Dataset, list[int]]:
        return self.dataset, [self.indices[i] for i in indices]


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other; ``cumulative_sizes`` are the running lengths.

    >>> ds = ConcatDataset([InMemoryDataset("ab"), InMemoryDataset("xyz")])
    >>> len(ds), ds[2], ds.cumulative_sizes
    (5, 'x', [2, 5])
    """

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError(f"{type(self).__name__}: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"{type(self).__name__} does not support IterableDataset (dataset {i}); "
                                "use ChainDataset for streams")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        i = check_index(idx, len(self), type(self).__name__)
        which = bisect.bisect_right(self.cumulative_sizes, i)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][i - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other (``ds1 + ds2`` for streams).

    >>> class Count(IterableDataset):
    ...     def __init__(self, n): self.n = n
    ...     def __iter__(self): return iter(range(self.n))
    >>> list(ChainDataset([Count(2), Count(3)]))
    [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[IterableDataset]):
        self.datasets = list(datasets)
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, but dataset {i} is "
                                f"{type(d).__name__}")

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def _split_lengths(n: int, lengths: Sequence[int | float]) -> list[int]:
    """Integer split sizes; fractions that sum to 1 give floor(n * f) each, the rest dealt out one by
    one from the first split."""
    lengths = list(lengths)
    total = sum(lengths)
    if lengths and math.isclose(total, 1) and total <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is {frac}, not between 0 and 1")
            sizes.append(math.floor(n * frac))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this split will be empty",
                              stacklevel=3)
        return sizes
    for i, s in enumerate(lengths):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise ValueError(f"random_split: lengths must be non-negative ints or fractions that sum to 1, "
                             f"got {lengths[i]!r} at index {i}")
    if total != n:
        raise ValueError(f"random_split: sum of input lengths ({total}) does not equal the length of the input "
                         f"dataset ({n})!")
    return [int(s) for s in lengths]


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split a dataset into non-overlapping random subsets of the given lengths (or fractions).

    The permutation comes from ``generator`` (default: ember's global generator, so
    ``ember.manual_seed`` fixes it).

    >>> a, b = random_split(range(10), [0.7, 0.3], generator=ember.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(a.indices + b.indices) == list(range(10))
    (7, 3, True)
    """
    g = default_generator if generator is None else generator
    if not isinstance(g, Generator):
        raise TypeError(f"random_split: generator must be an ember.Generator, got {type(g).__name__}")
    sizes = _split_lengths(len(dataset), lengths)
    perm = randperm(sum(sizes), generator=g).tolist()
    out, start = [], 0
    for s in sizes:
        out.append(Subset(dataset, perm[start:start + s]))
        start += s
    return out
