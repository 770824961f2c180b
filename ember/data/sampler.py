"""Samplers: the order in which a DataLoader visits a map-style dataset (torch.utils.data.sampler).

Random samplers draw from an :class:`ember.Generator`. Without one they seed a private generator
from ember's global generator the first time they need it and keep drawing from it, so
``ember.manual_seed`` fixes every epoch's order, and ``state_dict()`` (the generator's seed and
offset: two ints) lets a DataLoader resume mid-epoch. (PyTorch instead draws a fresh seed from
the global generator every epoch; the orders differ from PyTorch's in any case, as the random
streams do.)

>>> s = RandomSampler(range(5), generator=ember.Generator().manual_seed(0))
>>> sorted(s) == [0, 1, 2, 3, 4]
True
>>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
[[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

from .. import _dtype as dt
from .._creation import tensor
from .._random import Generator, multinomial, randint, randperm
from .._tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def draw_seed(generator: Generator | None = None) -> int:
    """A 63-bit seed drawn from ``generator`` (ember's global generator when None)."""
    return int(randint(0, 2**63 - 1, (), generator=generator).item())


def _check_generator(generator, who: str) -> Generator | None:
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{who}: generator must be an ember.Generator or None, got {type(generator).__name__}")
    return generator


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: ``iter(sampler)`` yields dataset indices (or, for a batch sampler, lists of them).

    Subscript it for type hints as in PyTorch: ``Sampler[int]``, ``Sampler[list[int]]``.
    """

    def __init__(self, data_source: Sized | None = None) -> None:
        pass  # PyTorch accepts and ignores data_source; so does ember

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class _Seeded:
    """Shared RNG handling of the random samplers: ``generator`` or a private one (see the module doc)."""

    generator: Generator | None
    _own: Generator | None = None

    def _rng(self) -> Generator:
        if self.generator is not None:
            return self.generator
        if self._own is None:
            self._own = Generator().manual_seed(draw_seed())
        return self._own

    def state_dict(self) -> dict:
        """The generator's position as plain ints: ``{"seed": ..., "offset": ...}``."""
        g = self._rng()
        return {"seed": g.initial_seed(), "offset": g.get_offset()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Move the generator to a saved position, so the next ``iter()`` repeats that epoch's order."""
        try:
            seed, offset = int(state_dict["seed"]), int(state_dict["offset"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected {{'seed': int, 'offset': int}}, "
                             f"got {state_dict!r}") from None
        if self.generator is not None:
            self.generator.manual_seed(seed).set_offset(offset)
        else:
            self._own = Generator().manual_seed(seed).set_offset(offset)


class SequentialSampler(Sampler[int]):
    """Indices 0, 1, ..., len(data_source) - 1 in order.

    >>> list(SequentialSampler("abc"))
    [0, 1, 2]
    """

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(_Seeded, Sampler[int]):
    """Random indices: a fresh permutation every epoch, or with ``replacement`` independent draws.

    ``num_samples`` (default ``len(data_source)``) may exceed the dataset's length: without
    replacement the sampler then chains whole permutations.

    >>> g = ember.Generator().manual_seed(1)
    >>> len(list(RandomSampler(range(4), num_samples=10, generator=g)))
    10
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _check_generator(generator, "RandomSampler")
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        n = self.num_samples
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={n}")

    @property
    def num_samples(self) -> int:
        # the dataset may change length between epochs: read it each time
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k, g = len(self.data_source), self.num_samples, self._rng()
        if n == 0:
            raise ValueError("RandomSampler: the dataset is empty, there is nothing to sample")
        # the whole epoch is drawn now, so the generator's position after iter() is fixed (resuming relies on it)
        if self.replacement:
            return iter(randint(0, n, (k,), generator=g).tolist())
        order: list[int] = []
        for _ in range(k // n):
            order += randperm(n, generator=g).tolist()
        if k % n:
            order += randperm(n, generator=g).tolist()[:k % n]
        return iter(order)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_Seeded, Sampler[int]):
    """The given indices in a random order (a new one each epoch).

    >>> sorted(SubsetRandomSampler([7, 3, 5]))
    [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None):
        self.indices = indices
        self.generator = _check_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        perm = randperm(len(self.indices), generator=self._rng()).tolist()
        return iter([self.indices[i] for i in perm])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_Seeded, Sampler[int]):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (with replacement by default).

    >>> s = WeightedRandomSampler([0.0, 1.0, 0.0], 4)
    >>> list(s)
    [1, 1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = weights.to(dt.float64) if isinstance(weights, Tensor) else tensor(weights, dtype=dt.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = _check_generator(generator, "WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        return iter(multinomial(self.weights, self.num_samples, self.replacement, generator=self._rng()).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of another sampler into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``).

    >>> list(BatchSampler(range(5), 2, drop_last=True))
    [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it, size = iter(self.sampler), self.batch_size
        while True:
            batch = [i for _, i in zip(range(size), it)]
            if not batch or (self.drop_last and len(batch) < size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def state_dict(self) -> dict:
        """The wrapped sampler's state (``{"sampler": None}`` when it has none)."""
        sd = getattr(self.sampler, "state_dict", None)
        return {"sampler": sd() if callable(sd) else None}

    def load_state_dict(self, state_dict: dict) -> None:
        inner = state_dict.get("sampler")
        if inner is not None:
            load = getattr(self.sampler, "load_state_dict", None)
            if not callable(load):
                raise ValueError(f"BatchSampler.load_state_dict: the state has a sampler state but "
                                 f"{type(self.sampler).__name__} has no load_state_dict")
            load(inner)
