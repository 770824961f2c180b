"""``DataLoader``: batches from a dataset, shuffled reproducibly, optionally fetched by background
workers, and resumable mid-epoch (``state_dict()`` / ``load_state_dict()``).

Arguments, defaults and argument-conflict errors are PyTorch's. ember's additions and differences:

* ``state_dict()`` is the loader's position: epoch, batches already yielded in it, the sampler's
  generator state at the start of the epoch and the loader's seed. A new DataLoader that loads it
  continues mid-epoch with exactly the remaining batches, and later epochs match an
  uninterrupted run (with or without workers).
* The loader's seed (drawn once from ``generator`` or ember's global generator) seeds the global
  generators while each batch of a map-style dataset is fetched (see ``ember/data/_fetch.py``), so
  random transforms in a dataset give the same batches with any ``num_workers`` and after a resume.
* ``pin_memory`` is accepted and does nothing: ember has no pinned host memory.
* ``multiprocessing_context="thread"`` runs the workers as threads (no pickling, no start-up cost;
  good for datasets that release the GIL: file reads, Pillow decoding, sqlite, numpy). Thread
  workers share the process's global random generators, so per-batch seeding is off with them.
* The default worker start method is fork where available (not on macOS), else spawn.

>>> ds = TensorDataset(ember.arange(10).float(), ember.arange(10))
>>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=ember.Generator().manual_seed(0))
>>> [len(y) for x, y in loader], len(loader)
([4, 4, 2], 3)
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing as mp
import multiprocessing.context
import os
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from .._random import Generator
from ._fetch import Fetcher, batch_seed, seeded
from ._workers import MultiSource, WorkerPool, default_context
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, draw_seed

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
_STATE_VERSION = 1


def _none() -> None:
    return None


def _state_of(obj) -> Any:
    sd = getattr(obj, "state_dict", None)
    return sd() if callable(sd) else None


class DataLoader:
    """Iterate a dataset in batches (torch.utils.data.DataLoader; see the module doc for ember's additions).

    >>> loader = DataLoader(InMemoryDataset([{"x": i, "y": 2 * i} for i in range(5)]), batch_size=2)
    >>> next(iter(loader))
    {'x': tensor([0, 1]), 'y': tensor([0, 2])}
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context=None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing (got num_workers={num_workers!r})")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got timeout={timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. Let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int)
                                            or prefetch_factor <= 0):
            # (PyTorch accepts 0 here and then fails an assertion when iterating)
            raise ValueError(f"prefetch_factor option should be a positive int, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"DataLoader: generator must be an ember.Generator or None, got {type(generator).__name__}")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if iterable:
                sampler = _InfiniteConstant()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # accepted for PyTorch compatibility: ember has no pinned host memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else \
            default_collate if batch_sampler is not None else default_convert
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self.multiprocessing_context = multiprocessing_context
        if num_workers > (os.cpu_count() or 1):
            warnings.warn(f"DataLoader: num_workers={num_workers} is more than the {os.cpu_count()} CPUs of this "
                          "machine; the workers will compete for them", stacklevel=2)

        # the position (see state_dict) and what it needs
        self._epoch = 0
        self._yielded = 0
        self._in_epoch = False
        self._resume_at: int | None = None
        self._epoch_state: Any = None
        self._base_seed: int | None = None
        self._current_ref: Callable[[], _LoaderIter | None] = _none  # weak: a dropped iterator must be freed
        self._pool: WorkerPool | None = None
        self._initialized = True

    # ---- configuration ---------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        if name in _FROZEN and self.__dict__.get("_initialized", False):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def multiprocessing_context(self):
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                valid = [*mp.get_all_start_methods(), "thread"]
                if context not in valid:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{valid!r}, but got multiprocessing_context={context!r}")
            elif not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context!r}")
        self._mp_context = context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        """Batches per epoch (for an IterableDataset: from its ``__len__``, which it must have)."""
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    # ---- iteration -------------------------------------------------------------------------------
    def _seed(self) -> int:
        if self._base_seed is None:
            self._base_seed = draw_seed(self.generator)
        return self._base_seed

    def _capture(self) -> Any:
        """The sampling RNG's position now (None when the sampler keeps no state)."""
        return None if self._iterable else _state_of(self._index_sampler)

    def __iter__(self) -> Iterator[Any]:
        start = self._resume_at
        self._resume_at = None
        if start is None:
            if self._in_epoch:  # the previous epoch was abandoned part-way: this is the next one
                self._epoch += 1
            start = 0
        self._detach_current()
        self._seed()
        self._epoch_state = self._capture()  # before iter(sampler) draws this epoch's order
        self._in_epoch, self._yielded = True, start
        return _LoaderIter(self, start)

    def _fetch_args(self) -> tuple:
        return (self._auto_collation, self.collate_fn, self.drop_last, self.batch_size)

    def _worker_pool(self) -> WorkerPool:
        if self._pool is not None and not self._pool.closed:
            return self._pool
        ctx = self._mp_context if self._mp_context is not None else default_context()
        pool = WorkerPool(self.dataset, self.num_workers, self._fetch_args(), ctx, self._seed(), self.worker_init_fn)
        if self.persistent_workers:
            self._pool = pool
        return pool

    def _detach_current(self) -> None:
        it = self._current_ref()
        if it is not None:
            it._detach()
        self._current_ref = _none

    def _epoch_done(self, it: _LoaderIter) -> None:
        if self._current_ref() is it:
            self._epoch += 1
            self._yielded = 0
            self._in_epoch = False
            self._epoch_state = None
            self._current_ref = _none

    # ---- resuming --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The loader's position as plain values (ints, lists, dicts, None).

        Keys: ``epoch`` (0-based index of the current epoch, or of the next one between epochs),
        ``batches`` (batches already yielded in it), ``seed`` (the loader's seed), ``sampler``
        (the sampler's RNG state at the start of the epoch), ``num_batches`` (``len(loader)`` or
        None) and ``version``.
        """
        seed = self._seed()  # drawn before the sampler's generator, in the order iter() draws them
        if self._resume_at is not None:
            batches, sampler = self._resume_at, self._capture()
        elif self._in_epoch:
            batches, sampler = self._yielded, self._epoch_state
        else:
            batches, sampler = 0, self._capture()
        try:
            num = len(self)
        except TypeError:
            num = None
        return {"version": _STATE_VERSION, "epoch": self._epoch, "batches": batches, "seed": seed,
                "sampler": sampler, "num_batches": num}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a position from :meth:`state_dict`: the next ``iter(loader)`` yields the rest of
        that epoch, and later epochs are those of the run that saved it.

        >>> a = DataLoader(range(6), batch_size=2, shuffle=True)
        >>> it = iter(a); first = next(it)
        >>> b = DataLoader(range(6), batch_size=2, shuffle=True); b.load_state_dict(a.state_dict())
        >>> [x.tolist() for x in b] == [x.tolist() for x in it]
        True
        """
        if not isinstance(state_dict, dict) or not {"epoch", "batches", "seed"} <= state_dict.keys():
            raise ValueError("DataLoader.load_state_dict: expected a dict from DataLoader.state_dict() with keys "
                             f"'epoch', 'batches', 'seed' and 'sampler', got {state_dict!r}")
        epoch, batches, seed = state_dict["epoch"], state_dict["batches"], state_dict["seed"]
        for name, v in (("epoch", epoch), ("batches", batches), ("seed", seed)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"DataLoader.load_state_dict: {name} must be a non-negative int, got {v!r}")
        num = state_dict.get("num_batches")
        if num is not None and not self._iterable and num != len(self):
            raise ValueError(f"DataLoader.load_state_dict: the state is from a loader with {num} batches per epoch "
                             f"but this one has {len(self)}: the dataset, batch_size or drop_last differ")
        sampler = state_dict.get("sampler")
        if sampler is not None:
            load = getattr(self._index_sampler, "load_state_dict", None)
            if not callable(load):
                raise ValueError("DataLoader.load_state_dict: the state has a sampler state but this loader's "
                                 f"{type(self._index_sampler).__name__} has no load_state_dict")
            load(sampler)
        self._detach_current()
        self._epoch, self._base_seed, self._resume_at = epoch, seed, batches
        self._in_epoch, self._yielded, self._epoch_state = False, 0, None
        if self._pool is not None and self._pool.base_seed != seed:  # workers were seeded from the old seed
            self._pool.shutdown()
            self._pool = None

    def __del__(self):
        pool = self.__dict__.get("_pool")
        if pool is not None:
            try:
                pool.shutdown()
            except Exception:  # at interpreter exit the modules it needs may be gone; the finaliser ran anyway
                pass


class _InfiniteConstant(Sampler):
    """An IterableDataset's placeholder sampler: the dataset decides when the stream ends."""

    def __iter__(self):
        return itertools.repeat(None)


class _LoaderIter:
    """One epoch of a DataLoader; updates the loader's position as batches are handed out."""

    def __init__(self, loader: DataLoader, start: int):
        self._loader: DataLoader | None = loader
        loader._current_ref = weakref.ref(self)
        self._len = None
        self._done = False
        epoch, seed = loader._epoch, loader._seed()
        if loader._iterable:
            index_iter, skip = None, start
        else:
            index_iter = iter(loader._index_sampler)
            collections.deque(itertools.islice(index_iter, start), maxlen=0)  # already-yielded batches
            skip = 0
        if loader.num_workers == 0:
            fetcher = Fetcher(loader.dataset, *loader._fetch_args())
            self._source = _single_source(fetcher, index_iter, start, epoch, seed)
        else:
            self._source = MultiSource(loader._worker_pool(), iterable=loader._iterable, index_iter=index_iter,
                                       start=start, epoch=epoch, base_seed=seed, prefetch=loader.prefetch_factor,
                                       timeout=loader.timeout, persistent=loader.persistent_workers,
                                       in_order=loader.in_order)
        try:
            self._len = len(loader)
        except TypeError:
            pass
        for _ in range(skip):  # a stream can only be resumed by reading past what was already yielded
            try:
                next(self._source)
            except StopIteration:
                self._finish()
                break

    def __iter__(self) -> _LoaderIter:
        return self

    def __len__(self) -> int:
        if self._len is None:
            raise TypeError("this DataLoader's IterableDataset has no __len__")
        return self._len

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            batch = next(self._source)
        except StopIteration:
            self._finish()
            raise
        except BaseException:
            self._close()
            raise
        loader = self._loader
        if loader is not None and loader._current_ref() is self:
            loader._yielded += 1
        return batch

    def _finish(self) -> None:
        loader = self._loader
        self._close()
        if loader is not None:
            loader._epoch_done(self)

    def _close(self) -> None:
        if not self._done:
            self._done = True
            close = getattr(self._source, "close", None)
            if close is not None:
                close()

    def _detach(self) -> None:
        """A newer iterator took over the loader: stop counting this one's batches."""
        self._loader = None

    def __del__(self):
        if not self.__dict__.get("_done", True):
            try:
                self._close()
            except Exception:  # at interpreter exit the modules it needs may be gone; the finaliser ran anyway
                pass


def _single_source(fetcher: Fetcher, index_iter, start: int, epoch: int, seed: int) -> Iterator[Any]:
    """Batches fetched in the calling thread."""
    if fetcher.iterable:
        while True:
            try:
                batch = fetcher.fetch()
            except StopIteration:
                return
            yield batch
    for b, indices in enumerate(index_iter, start):
        if fetcher.needs_seed:
            with seeded(batch_seed(seed, epoch, b)):
                batch = fetcher.fetch(indices)
        else:
            batch = fetcher.fetch(indices)
        yield batch
