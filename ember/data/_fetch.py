"""Producing one batch, the same way in the main process and in a worker: fetch, collate, seed.

Random transforms inside a dataset stay reproducible because every batch of a map-style dataset
is fetched with ember's, numpy's and Python's global generators seeded from (the loader's seed,
the epoch, the batch index): a batch gets the same random numbers whichever process fetches it,
with any number of workers, and again after a resume. In the main process the generators are
restored afterwards, so iterating a DataLoader does not move the global random streams.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._creation import from_numpy
from .._indexing import index_select
from .._random import default_generator
from .collate import Wire, collate_to_wire, default_collate, to_wire
from .dataset import IterableDataset, Subset, TensorDataset
from .transforms import Partial, Shuffled

_MASK64 = (1 << 64) - 1
_REMAPPERS = (Subset, Partial, Shuffled)  # exact types whose items are another dataset's, re-indexed


def _mix(x: int) -> int:
    """splitmix64's finaliser: a well-spread 64-bit hash of a 64-bit int."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def batch_seed(base_seed: int, epoch: int, batch: int) -> int:
    """The seed a batch is fetched under: a 63-bit hash of (loader seed, epoch, batch index)."""
    return _mix(_mix(_mix(base_seed) ^ epoch) ^ batch) >> 1


def seed_all(seed: int) -> None:
    """Seed ember's CPU default generator, numpy's global RandomState and Python's ``random``."""
    default_generator.manual_seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
    random.seed(seed)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with every global generator seeded by ``seed``; restore them afterwards."""
    saved = (default_generator.initial_seed(), default_generator.get_offset(), np.random.get_state(),
             random.getstate())
    seed_all(seed)
    try:
        yield
    finally:
        default_generator.manual_seed(saved[0]).set_offset(saved[1])
        np.random.set_state(saved[2])
        random.setstate(saved[3])


def fast_base(dataset) -> TensorDataset | None:
    """The TensorDataset under a chain of Subset/Partial/Shuffled views, or None."""
    while type(dataset) is not TensorDataset:
        if type(dataset) not in _REMAPPERS:
            return None
        dataset = dataset.dataset
    return dataset


def fast_batch(dataset, indices: list[int], wire: bool) -> list:
    """``default_collate([dataset[i] for i in indices])`` for a (re-indexed) TensorDataset: one gather
    per tensor instead of one indexing op per example and a stack."""
    while type(dataset) is not TensorDataset:
        dataset, indices = dataset._remap_indices(indices)
    n = len(dataset)
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx[(idx < -n) | (idx >= n)][0])
        raise IndexError(f"TensorDataset index {bad} is out of range for a dataset of length {n}")
    idx = np.where(idx < 0, idx + n, idx)
    if wire:
        return [Wire(t.numpy(force=True)[idx], t.dtype.name, str(t.device)) for t in dataset.tensors]
    at = from_numpy(idx)
    return [index_select(t, 0, at if t.device.type == "cpu" else at.to(t.device)) for t in dataset.tensors]


def _identity(x):
    return x


class Fetcher:
    """Turns what the sampler yields (a list of indices, one index, or nothing for a stream) into a batch.

    ``wire=True`` (inside workers) collates with numpy and leaves tensors as :class:`Wire` objects;
    ``pickled=True`` (worker processes, not threads) also converts tensors a custom collate_fn returns.
    """

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool,
                 batch_size: int | None, wire: bool = False, pickled: bool = False):
        self.dataset, self.auto_collation, self.drop_last, self.batch_size = dataset, auto_collation, drop_last, \
            batch_size
        self.iterable = isinstance(dataset, IterableDataset)
        default = collate_fn is default_collate
        self.collate = collate_to_wire if wire and default else collate_fn
        self.post = to_wire if pickled and not default else _identity
        self.fast = default and auto_collation and not self.iterable and fast_base(dataset) is not None
        self.wire = wire
        self.needs_seed = not self.iterable and not self.fast
        many = getattr(dataset, "__getitems__", None) if not self.iterable else None
        self._getitems = many if callable(many) else None
        self._it: Iterator | None = None
        self._ended = False

    def reset(self) -> None:
        """Start the stream of an iterable dataset again (a new epoch)."""
        self._it, self._ended = None, False

    def fetch(self, indices: Any = None) -> Any:
        if self.iterable:
            return self._fetch_stream()
        if self.fast:
            return fast_batch(self.dataset, indices, self.wire)
        if self.auto_collation:
            items = self._getitems(list(indices)) if self._getitems is not None \
                else [self.dataset[i] for i in indices]
            return self.post(self.collate(items))
        return self.post(self.collate(self.dataset[indices]))

    def _fetch_stream(self) -> Any:
        if self._ended:
            raise StopIteration
        if self._it is None:
            self._it = iter(self.dataset)
        if self.auto_collation:
            items = list(itertools.islice(self._it, self.batch_size))
            if not items or (self.drop_last and len(items) < self.batch_size):
                self._ended = True
                raise StopIteration
            return self.post(self.collate(items))
        try:
            item = next(self._it)
        except StopIteration:
            self._ended = True
            raise
        return self.post(self.collate(item))
