"""Dataset transforms (Burn's names): lazy views of map-style datasets that compose.

* ``Mapper(ds, fn)``: ``fn(ds[i])``, computed when the item is read
* ``Partial(ds, start, end)``: items ``start`` to ``end - 1``
* ``Shuffled(ds, seed)``: a fixed random order, the same every epoch (reproducible from the seed)
* ``Composed([ds1, ds2, ...])``: the datasets one after the other
* ``Window(ds, size)``: lists of ``size`` consecutive items (``len(ds) - size + 1`` of them)

Every transform indexes like a Python list: negative indices count from the end and an index
out of range raises IndexError.

>>> ds = InMemoryDataset(range(10))
>>> train, val = Partial(Shuffled(ds, seed=0), 0, 8), Partial(Shuffled(ds, seed=0), 8, 10)
>>> sorted([train[i] for i in range(8)] + [val[0], val[-1]])
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
>>> Window(Mapper(ds, lambda x: x * 10), 3)[-1]
[70, 80, 90]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._random import Generator, randperm
from .dataset import ConcatDataset, Dataset, IterableDataset, check_index
from .sampler import draw_seed

__all__ = ["Mapper", "Partial", "Shuffled", "Composed", "Window"]


def _map_style(dataset, who: str) -> None:
    if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise TypeError(f"{who} needs a map-style dataset (with __getitem__ and __len__), got {type(dataset).__name__}")


class Mapper(Dataset):
    """``fn`` applied lazily to each item: ``Mapper(ds, fn)[i] == fn(ds[i])``.

    >>> Mapper(InMemoryDataset([1, 2, 3]), lambda x: -x)[0]
    -1
    """

    def __init__(self, dataset: Dataset, fn: Callable[[Any], Any]):
        _map_style(dataset, "Mapper")
        if not callable(fn):
            raise TypeError(f"Mapper: fn must be callable, got {type(fn).__name__}")
        self.dataset, self.fn = dataset, fn

    def __getitem__(self, index):
        return self.fn(self.dataset[check_index(index, len(self), "Mapper")])

    def __len__(self) -> int:
        return len(self.dataset)


class Partial(Dataset):
    """Items ``start`` to ``end - 1`` of a dataset (``end=None`` is its length; negatives count from the end).

    Bounds outside the dataset raise IndexError rather than being clipped, so a split that asks
    for more items than there are fails loudly.

    >>> p = Partial(InMemoryDataset("abcdef"), 2, -1)
    >>> len(p), p[0], p[-1]
    (3, 'c', 'e')
    """

    def __init__(self, dataset: Dataset, start: int, end: int | None = None):
        _map_style(dataset, "Partial")
        n = len(dataset)

        def bound(v, name: str) -> int:
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise TypeError(f"Partial: {name} must be an int, got {type(v).__name__}")
            b = v.__index__()
            b = b + n if b < 0 else b
            if not 0 <= b <= n:
                raise IndexError(f"Partial: {name}={v} is out of range for a dataset of length {n}")
            return b

        self.start = bound(start, "start")
        self.end = n if end is None else bound(end, "end")
        if self.start > self.end:
            raise ValueError(f"Partial: start ({start}) is after end ({end})")
        self.dataset = dataset

    def __getitem__(self, index):
        return self.dataset[self.start + check_index(index, len(self), "Partial")]

    def __len__(self) -> int:
        return self.end - self.start

    def _remap_indices(self, indices: list[int]) -> tuple[Dataset, list[int]]:
        return self.dataset, [self.start + i for i in indices]


class Shuffled(Dataset):
    """A dataset in a fixed random order, drawn once from ``seed`` (an int) or ``generator``.

    Unlike ``DataLoader(shuffle=True)`` the order does not change between epochs; use it to split
    a dataset reproducibly (``Partial(Shuffled(ds, seed=0), 0, 4000)``). With neither ``seed``
    nor ``generator``, the seed comes from ember's global generator (``ember.manual_seed``).

    >>> sorted(Shuffled(InMemoryDataset("abc"), seed=3)[i] for i in range(3))
    ['a', 'b', 'c']
    """

    def __init__(self, dataset: Dataset, seed: int | Generator | None = None, *, generator: Generator | None = None):
        _map_style(dataset, "Shuffled")
        if isinstance(seed, Generator):  # Shuffled(ds, g) reads naturally too
            seed, generator = None, seed
        if seed is not None and generator is not None:
            raise ValueError("Shuffled: pass a seed or a generator, not both")
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"Shuffled: generator must be an ember.Generator, got {type(generator).__name__}")
        if seed is not None:
            if isinstance(seed, bool) or not hasattr(seed, "__index__"):
                raise TypeError(f"Shuffled: seed must be an int, got {type(seed).__name__}")
            generator = Generator().manual_seed(seed.__index__())
        elif generator is None:
            generator = Generator().manual_seed(draw_seed())
        self.dataset = dataset
        self.permutation: list[int] = randperm(len(dataset), generator=generator).tolist()

    def __getitem__(self, index):
        return self.dataset[self.permutation[check_index(index, len(self), "Shuffled")]]

    def __len__(self) -> int:
        return len(self.permutation)

    def _remap_indices(self, indices: list[int]) -> tuple[Dataset, list[int]]:
        return self.dataset, [self.permutation[i] for i in indices]


class Composed(ConcatDataset):
    """Datasets one after the other (Burn's ComposedDataset; the same as ``ConcatDataset``).

    >>> c = Composed([InMemoryDataset("ab"), InMemoryDataset("c")])
    >>> [c[i] for i in range(len(c))]
    ['a', 'b', 'c']
    """

    def __init__(self, datasets: Iterable[Dataset]):
        datasets = list(datasets)
        for d in datasets:
            _map_style(d, "Composed")
        super().__init__(datasets)


class Window(Dataset):
    """Sliding windows: item ``i`` is the list ``[ds[i], ..., ds[i + size - 1]]``.

    >>> w = Window(InMemoryDataset([1, 2, 3, 4]), 2)
    >>> len(w), w[0], w[2]
    (3, [1, 2], [3, 4])
    """

    def __init__(self, dataset: Dataset, size: int):
        _map_style(dataset, "Window")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"Window: size must be a positive int, got {size!r}")
        self.dataset, self.size = dataset, size

    def __getitem__(self, index) -> list:
        i = check_index(index, len(self), "Window")
        return [self.dataset[j] for j in range(i, i + self.size)]

    def __len__(self) -> int:
        return max(len(self.dataset) - self.size + 1, 0)
