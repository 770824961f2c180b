"""Random numbers: Generator, seeding, and the sampling functions (rand, randn, normal, ...).

Randomness is counter-based: a :class:`Generator` is just a (seed, offset) pair. Each random op
passes ``seed`` and ``offset`` to the backend, which computes its numbers as a pure function of
them, and the generator moves its offset past every counter the op used, so consecutive draws
never overlap and any backend (eager, fused, remote) can reproduce a draw from two integers.

Distributions the backend does not draw directly (uniform on [a, b), exponential, geometric,
log-normal, Cauchy, normal with tensor parameters) are transformations of its uniform and
normal draws, written with ordinary ember ops.
"""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np

from . import _dtype as dt
from ._creation import _dev, _finish, _size, full
from ._device import Device
from ._device import device as _device
from ._shape import broadcast_shapes
from ._tensor import Tensor, method, run, same_device

__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "normal", "bernoulli", "multinomial", "poisson",
]

_DEFAULT_SEED = 67280421310721  # PyTorch's, so initial_seed() reads the same on a fresh start
_U64 = 2**64

# 64-bit words each backend op reads for n elements of dtype d; the offset moves by ceil(words / 4)
# Philox blocks (see ember/backend/numpy/random.py for the stream definition). Narrow floats get two
# uniforms per word; randperm and poisson use a private stream and reserve one block.
_WORDS = {
    "rand": lambda n, d: n if d is dt.float64 else (n + 1) // 2,
    "randn": lambda n, d: n + (n & 1) if d is dt.float64 else (n + 1) // 2,
    "randint": lambda n, d: n, "bernoulli": lambda n, d: n, "randperm": lambda n, d: 4, "poisson": lambda n, d: 4,
}


class Generator:
    """A random-number generator for one device: a seed and a counter offset (torch.Generator).

    >>> g = ember.Generator().manual_seed(0)
    >>> a = ember.rand(3, generator=g); _ = g.manual_seed(0)
    >>> ember.equal(a, ember.rand(3, generator=g))
    True
    """

    def __init__(self, device: str | Device = "cpu"):
        self._device = _device(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0

    @property
    def device(self) -> Device:
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Set the seed (any int in [-2**63, 2**64); negatives wrap like PyTorch) and reset the offset."""
        s = int(seed)
        if not -(2**63) <= s < _U64:
            raise ValueError(f"manual_seed: seed {s} is out of range: it must be in [-2**63, 2**64 - 1]")
        self._seed = s % _U64
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed chosen."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the current stream started from."""
        return self._seed

    def get_offset(self) -> int:
        """How many Philox blocks the generator has used since it was seeded."""
        return self._offset

    def set_offset(self, offset: int) -> Generator:
        if int(offset) < 0:
            raise ValueError(f"set_offset: offset must be non-negative, got {offset}")
        self._offset = int(offset)
        return self

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor of 16 bytes: seed then offset, each little-endian uint64."""
        raw = np.array([self._seed, self._offset % _U64], dtype="<u8").view(np.uint8)
        from ._creation import tensor
        return tensor(raw, dtype=dt.uint8)

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from :meth:`get_state` (from any device's generator)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"set_state: expected an ember.uint8 tensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError(f"set_state: RNG state must be an ember.uint8 tensor, got {new_state.dtype}")
        if new_state.numel() != 16:
            raise RuntimeError(f"set_state: expected an RNG state of 16 bytes (seed and offset), "
                               f"got {new_state.numel()}")
        seed, offset = np.ascontiguousarray(new_state.numpy(force=True).reshape(16)).view("<u8").tolist()
        self._seed, self._offset = int(seed), int(offset)
        return self

    def clone_state(self) -> Generator:
        """A new generator on the same device with the same seed and offset."""
        g = Generator(self._device)
        g._seed, g._offset = self._seed, self._offset
        return g

    def _reserve(self, words: int) -> tuple[int, int]:
        """(seed, offset) for an op reading ``words`` 64-bit words; moves past them."""
        off = self._offset
        self._offset = off + (words + 3) // 4
        return self._seed, off

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self._seed, self._offset))

    def __repr__(self) -> str:
        return f"ember.Generator(device='{self._device}', seed={self._seed}, offset={self._offset})"


def _rebuild_generator(device: str, seed: int, offset: int) -> Generator:
    g = Generator(device)
    g._seed, g._offset = seed, offset
    return g


# ---- default generators, one per device type ---------------------------------------------------
default_generator = Generator("cpu")
_DEFAULTS: dict[str, Generator] = {"cpu": default_generator}
_global_seed = [_DEFAULT_SEED]


def _default_for(dev: Device) -> Generator:
    g = _DEFAULTS.get(dev.type)
    if g is None:
        g = _DEFAULTS[dev.type] = Generator(dev).manual_seed(_global_seed[0])
    return g


def manual_seed(seed) -> Generator:
    """Seed every device's default generator; returns the CPU one (torch.manual_seed).

    >>> _ = ember.manual_seed(0); a = ember.randn(2); _ = ember.manual_seed(0)
    >>> ember.equal(a, ember.randn(2))
    True
    """
    default_generator.manual_seed(seed)
    _global_seed[0] = default_generator.initial_seed()
    for g in _DEFAULTS.values():
        g.manual_seed(_global_seed[0])
    return default_generator


def seed() -> int:
    """Seed every default generator from the OS's entropy; returns the seed."""
    s = default_generator.seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the CPU default generator."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The CPU default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the CPU default generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, device_type: str = "cuda"):
    """Restore every default generator's state on exit (torch.random.fork_rng)."""
    if not enabled:
        yield
        return
    saved = {k: (g._seed, g._offset) for k, g in _DEFAULTS.items()}
    try:
        yield
    finally:
        for k, (s, o) in saved.items():
            _DEFAULTS[k]._seed, _DEFAULTS[k]._offset = s, o


# ---- dispatch ------------------------------------------------------------------------------------
def _generator(dev: Device, generator: Generator | None, op: str) -> Generator:
    if generator is None:
        return _default_for(dev)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be an ember.Generator, got {type(generator).__name__}")
    if generator._device.type != dev.type:
        raise RuntimeError(f"{op}: expected a '{dev.type}' device type for generator but found "
                           f"'{generator._device.type}'; create it with ember.Generator(device='{dev}')")
    return generator


def _draw(op: str, inputs: tuple, attrs: dict, shape: tuple, d: dt.dtype, dev: Device,
          generator: Generator | None, words: int) -> Tensor:
    s, off = _generator(dev, generator, op)._reserve(words)
    return run(op, inputs, {**attrs, "seed": s, "offset": off}, shape, d, dev)


def _float_dtype(dtype, op: str) -> dt.dtype:
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    if not d.is_floating_point:
        raise TypeError(f"{op}: expected a floating dtype, got {d}: {op} draws real numbers")
    return d


def _compute(d: dt.dtype) -> dt.dtype:
    """The dtype transformations run in: float32 for the 16-bit floats, as PyTorch's CPU kernels."""
    return dt.float32 if d.itemsize == 2 else d


def _shape_of(size, kw_size, op: str) -> tuple:
    if kw_size is not None:
        if size:
            raise TypeError(f"{op}: size given both positionally and as a keyword")
        size = (kw_size,)
    if not size:
        raise TypeError(f"{op}: missing the size argument")
    return _size(size)


def _rand(shape, d, dev, generator) -> Tensor:
    return _draw("rand", (), {"shape": shape, "dtype": d}, shape, d, dev, generator,
                 _WORDS["rand"](math.prod(shape), d))


def _randn(shape, d, dev, generator) -> Tensor:
    return _draw("randn", (), {"shape": shape, "dtype": d}, shape, d, dev, generator,
                 _WORDS["randn"](math.prod(shape), d))


# ---- creation functions ----------------------------------------------------------------------------
def rand(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False,
         **kw) -> Tensor:
    """Uniform numbers in [0, 1): ``ember.rand(2, 3)``."""
    shape = _shape_of(size, kw.pop("size", None), "rand")
    _no_extra(kw, "rand")
    d = _float_dtype(dtype, "rand")
    return _finish(_rand(shape, d, _dev(device), generator), requires_grad)


def randn(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False,
          **kw) -> Tensor:
    """Standard normal numbers: ``ember.randn(2, 3)``."""
    shape = _shape_of(size, kw.pop("size", None), "randn")
    _no_extra(kw, "randn")
    d = _float_dtype(dtype, "randn")
    return _finish(_randn(shape, d, _dev(device), generator), requires_grad)


def _no_extra(kw: dict, op: str):
    kw.pop("layout", None)
    kw.pop("pin_memory", None)
    if kw:
        raise TypeError(f"{op}() got unexpected keyword argument(s) {', '.join(map(repr, kw))}")


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype=None, device=None,  # noqa: A002
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """rand with input's shape, dtype and device."""
    d = _float_dtype(input._dtype if dtype is None else dtype, "rand_like")
    dev = input._device if device is None else _dev(device)
    return _finish(_rand(input._shape, d, dev, generator), requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype=None, device=None,  # noqa: A002
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """randn with input's shape, dtype and device."""
    d = _float_dtype(input._dtype if dtype is None else dtype, "randn_like")
    dev = input._device if device is None else _dev(device)
    return _finish(_randn(input._shape, d, dev, generator), requires_grad)


def _int_arg(v, name: str, op: str) -> int:
    if isinstance(v, Tensor):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{op}(): argument '{name}' must be an int, not {type(v).__name__}")
    return int(v)


_SIGNIFICAND = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}


def _bounds(d: dt.dtype) -> tuple[int, int] | None:
    """Inclusive integer range of an integer/bool dtype; None for floats."""
    if d.is_floating_point:
        return None
    if d is dt.bool:
        return 0, 1
    info = dt.iinfo(d)
    return info.min, info.max


def _check_int_range(low: int, high: int, d: dt.dtype, op: str):
    if low >= high:
        raise RuntimeError(f"{op}: expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if not (-(2**63) <= low and high - 1 < 2**63):
        raise RuntimeError(f"{op}: the range [{low}, {high}) does not fit in int64")
    b = _bounds(d)
    if b is not None:
        if low < b[0]:
            raise RuntimeError(f"{op}: from={low} is out of bounds for {d} (range [{b[0]}, {b[1]}])")
        if high - 1 > b[1]:
            raise RuntimeError(f"{op}: to - 1 = {high - 1} is out of bounds for {d} (range [{b[0]}, {b[1]}])")


def _randint(shape, low, high, d, dev, generator, op) -> Tensor:
    _check_int_range(low, high, d, op)
    return _draw("randint", (), {"shape": shape, "low": low, "high": high, "dtype": d}, shape, d, dev,
                 generator, _WORDS["randint"](math.prod(shape), d))


def randint(*args, size=None, low=None, high=None, generator: Generator | None = None, dtype=None,
            device=None, requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high): ``randint(10, (3,))`` or ``randint(2, 10, (3,))``.

    >>> ember.randint(0, 10, (4,)).dtype
    ember.int64
    """
    args = list(args)
    if size is None:
        if not args or not isinstance(args[-1], (tuple, list)):
            got = type(args[-1]).__name__ if args else "nothing"
            raise TypeError(f"randint(): argument 'size' must be a tuple of ints, not {got}")
        size = args.pop()
    if len(args) == 2:
        if low is not None or high is not None:
            raise TypeError("randint(): low/high given both positionally and as keywords")
        low, high = args
    elif len(args) == 1:
        if high is not None:
            low = args[0]
        else:
            high = args[0]
    elif args:
        raise TypeError(f"randint(): expected (high, size) or (low, high, size), got {len(args) + 1} arguments")
    if high is None:
        raise TypeError("randint(): missing the 'high' argument")
    low = 0 if low is None else _int_arg(low, "low", "randint")
    high = _int_arg(high, "high", "randint")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be a tuple of ints, not {type(size).__name__}")
    shape = _size((size,))
    d = dt.int64 if dtype is None else dt.as_dtype(dtype)
    return _finish(_randint(shape, low, high, d, _dev(device), generator, "randint"), requires_grad)


def randint_like(input: Tensor, *args, low=None, high=None, generator: Generator | None = None, dtype=None,  # noqa: A002
                 device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """randint with input's shape, dtype and device: ``randint_like(x, 10)`` or ``(x, 2, 10)``."""
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise TypeError("randint_like(): expected (input, high) or (input, low, high)")
    if high is None:
        raise TypeError("randint_like(): missing the 'high' argument")
    low = 0 if low is None else _int_arg(low, "low", "randint_like")
    high = _int_arg(high, "high", "randint_like")
    d = input._dtype if dtype is None else dt.as_dtype(dtype)
    dev = input._device if device is None else _dev(device)
    return _finish(_randint(input._shape, low, high, d, dev, generator, "randint_like"), requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype=None, device=None,
             requires_grad: bool = False, **kw) -> Tensor:
    """A random permutation of 0..n-1: ``ember.randperm(5)``."""
    _no_extra(kw, "randperm")
    n = _int_arg(n, "n", "randperm")
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    d = dt.int64 if dtype is None else dt.as_dtype(dtype)
    if d is dt.bool:
        raise TypeError("randperm: a permutation can't be stored as ember.bool; use an integer dtype")
    # every value 0..n-1 must be exact: floats hold integers up to 2**significand
    limit = 2 ** _SIGNIFICAND[d] + 1 if d.is_floating_point else _bounds(d)[1] + 1
    if n > limit:
        raise RuntimeError(f"randperm: n={n} is too large for {d}: values above {limit - 1} are not exact")
    dev = _dev(device)
    return _finish(_draw("randperm", (), {"n": n, "dtype": d}, (n,), d, dev, generator, _WORDS["randperm"](n, d)),
                   requires_grad)


# ---- distributions with parameters -----------------------------------------------------------------
def _any(mask: Tensor) -> bool:
    """A sync point: whether any element of a bool tensor is set."""
    from ._reduction import any as any_
    return mask.numel() > 0 and bool(any_(mask).item())


def normal(mean, std=1.0, size=None, *, generator: Generator | None = None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Normal numbers with the given mean and std (tensors broadcast, or floats with ``size``).

    >>> ember.normal(ember.zeros(3), 2.0).shape
    ember.Size([3])
    >>> ember.normal(0.0, 1.0, (2, 2)).shape
    ember.Size([2, 2])
    """
    from ._elementwise import add, cast, isnan, logical_or, lt, mul
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal(): with float mean and std, a size is required: normal(mean, std, size)")
        mean, std = float(mean), float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        d = _float_dtype(dtype, "normal")
        out = _randn(_size((size,)), d, _dev(device), generator)
        if std != 1.0 or mean != 0.0:
            out = _affine(out, std, mean)
        return _finish(out, requires_grad)
    if size is not None or dtype is not None or device is not None:
        raise TypeError("normal(): size, dtype and device are only accepted when mean and std are both floats; "
                        "with tensor parameters the result follows their shape, dtype and device")
    ref = mean if mt else std
    d = ref._dtype
    if not d.is_floating_point:
        raise TypeError(f"normal: expected a floating {'mean' if mt else 'std'} tensor, got {d}")
    if st:
        if mt:
            same_device("normal", mean, std)
        if _any(logical_or(lt(std, 0), isnan(std))):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = broadcast_shapes(mean._shape, std._shape) if mt else std._shape
    else:
        std = float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = mean._shape
    c = _compute(d)
    z = _randn(shape, c, ref._device, generator)
    m = cast(mean, c) if mt else float(mean)
    s = cast(std, c) if st else std
    return _finish(cast(add(mul(z, s), m), d), requires_grad)


def _affine(z: Tensor, scale: float, shift: float) -> Tensor:
    """z * scale + shift computed in the 16-bit floats' wider compute dtype."""
    from ._elementwise import add, cast, mul
    c = _compute(z._dtype)
    return cast(add(mul(cast(z, c), scale), shift), z._dtype)


def _check_p(p: float, op: str) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")
    return p


def _check_p_tensor(p: Tensor, op: str):
    from ._elementwise import ge, le, logical_and, logical_not
    if not p._dtype.is_floating_point:
        raise TypeError(f"{op}: probabilities must be a floating tensor, got {p._dtype}")
    from .backend.capture import capturing_on
    if capturing_on(p._device):  # values can't be read while a graph records; u < p stays defined for any p
        return
    if _any(logical_not(logical_and(ge(p, 0), le(p, 1)))):
        raise RuntimeError(f"{op}: every probability must be in [0, 1] (found a value outside it, or NaN)")


def _bernoulli_draw(p: Tensor, shape: tuple, d: dt.dtype, generator) -> Tensor:
    """0/1 of dtype ``d`` and ``shape``, from a float probability tensor broadcastable to it."""
    from ._elementwise import cast
    from ._movement import expand
    if p._shape != shape:
        p = expand(p, shape).contiguous()
    out = _draw("bernoulli", (p,), {}, shape, p._dtype, p._device, generator,
                _WORDS["bernoulli"](math.prod(shape), d))
    return cast(out, d)


def bernoulli(input: Tensor, p=None, *, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """0/1 draws: with probability ``input`` elementwise, or with float ``p`` in input's shape and dtype.

    >>> ember.bernoulli(ember.full((4,), 0.5)).dtype
    ember.float32
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): input must be a Tensor, got {type(input).__name__}")
    if p is None:
        _check_p_tensor(input, "bernoulli")
        return _bernoulli_draw(input, input._shape, input._dtype, generator)
    if isinstance(p, Tensor):
        same_device("bernoulli", input, p)
        _check_p_tensor(p, "bernoulli")
        return _bernoulli_draw(p, input._shape, input._dtype, generator)
    p = _check_p(p, "bernoulli_")
    pt = full(input._shape, p, dtype=dt.float64, device=input._device)
    return _bernoulli_draw(pt, input._shape, input._dtype, generator)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Generator | None = None) -> Tensor:
    """Category indices drawn from each row of (unnormalised) probabilities ``input``.

    >>> ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 2, replacement=True)
    tensor([1, 1])
    """
    from ._elementwise import isfinite, logical_not, logical_or, lt
    from ._reduction import sum as sum_
    num_samples = _int_arg(num_samples, "num_samples", "multinomial")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got a tensor of shape {list(input.shape)}")
    if not input._dtype.is_floating_point:
        raise TypeError(f"multinomial only supports floating-point dtypes for input, got {input._dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    n = input._shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                           f"replacement ({num_samples} > {n})")
    if n > 2**24:
        raise RuntimeError(f"multinomial: number of categories cannot exceed 2^24 (got {n})")
    shape = input._shape[:-1] + (num_samples,)
    rows = math.prod(input._shape[:-1])
    if rows == 0:
        return full(shape, 0, dtype=dt.int64, device=input._device)
    if _any(logical_or(logical_not(isfinite(input)), lt(input, 0))):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if _any(lt(sum_(input, dim=-1, dtype=dt.float64), 1e-300) if n else full((rows,), True, dtype=dt.bool)):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    words = rows * (num_samples if replacement else n)
    return _draw("multinomial", (input,), {"num_samples": num_samples, "replacement": bool(replacement)},
                 shape, dt.int64, input._device, generator, words)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """Poisson counts with rates ``input`` (same shape and floating dtype).

    >>> ember.poisson(ember.zeros(3))
    tensor([0., 0., 0.])
    """
    from ._elementwise import isnan, logical_or, lt
    if not input._dtype.is_floating_point:
        raise TypeError(f"poisson: rates must be a floating tensor, got {input._dtype}")
    if _any(logical_or(lt(input, 0), isnan(input))):
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    return _draw("poisson", (input,), {}, input._shape, input._dtype, input._device, generator,
                 _WORDS["poisson"](input.numel(), input._dtype))


# ---- in-place Tensor methods -------------------------------------------------------------------------
def _fill_from(self: Tensor, values: Tensor) -> Tensor:
    """Write freshly drawn ``values`` (self's shape) into self, converting to self's dtype."""
    from ._elementwise import assign_, cast
    assign_(self, cast(values, self._dtype))
    return self


def _require_float(self: Tensor, op: str):
    if not self._dtype.is_floating_point:
        raise TypeError(f"{op}: the tensor must have a floating dtype (it is {self._dtype}): "
                        f"{op.rstrip('_')} is a continuous distribution")


def _uniform01(self: Tensor, generator) -> Tensor:
    """Uniforms in [0, 1) of self's shape, in the dtype transformations compute in."""
    return _rand(self._shape, _compute(self._dtype), self._device, generator)


@method
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Generator | None = None,
             **kw) -> Tensor:
    """Fill with numbers uniform in [from, to): ``x.uniform_(-1, 1)``."""
    from_ = float(kw.pop("from", from_))
    _no_extra(kw, "uniform_")
    to = float(to)
    _require_float(self, "uniform_")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    big = dt.finfo(self._dtype).max
    if not (-big <= from_ <= big and -big <= to <= big):
        raise RuntimeError(f"uniform_: from={from_} and to={to} must be finite values of {self._dtype}")
    if to - from_ > big:
        raise RuntimeError(f"uniform_ expects to - from <= the largest {self._dtype}, but found "
                           f"to={to} and from={from_}")
    from ._elementwise import add, cast, minimum, mul
    if from_ == to:
        return _fill_from(self, full(self._shape, from_, dtype=self._dtype, device=self._device))
    u = _uniform01(self, generator)
    # rounding to the dtype can land on ``to`` itself; the range is half-open, as in PyTorch
    x = minimum(cast(add(mul(u, to - from_), from_), self._dtype), _largest_below(to, self._dtype))
    return _fill_from(self, x)


def _largest_below(to: float, d: dt.dtype) -> float:
    """The largest value of floating dtype ``d`` that is smaller than ``to``."""
    t = np.array(to, dtype=np.float64).astype(d.np)
    if float(t) >= to:
        t = np.nextafter(t, np.array(-np.inf, dtype=d.np))
    return float(t)


@method
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with normal numbers: ``x.normal_(0, 0.02)``."""
    _require_float(self, "normal_")
    std = float(std)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    z = _randn(self._shape, _compute(self._dtype), self._device, generator)
    from ._elementwise import add, mul
    return _fill_from(self, add(mul(z, std), float(mean)))


@method
def bernoulli_(self: Tensor, p=0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 0/1 draws, 1 with probability ``p`` (a float or a tensor broadcastable to self)."""
    if isinstance(p, Tensor):
        _check_p_tensor(p, "bernoulli_")
        if broadcast_shapes(self._shape, p._shape) != self._shape:
            raise RuntimeError(f"bernoulli_: p of shape {list(p._shape)} can't be broadcast to the "
                               f"tensor's shape {list(self._shape)}")
        pt = p.to(self._device)
    else:
        pt = full(self._shape, _check_p(p, "bernoulli_"), dtype=dt.float64, device=self._device)
    return _fill_from(self, _bernoulli_draw(pt, self._shape, self._dtype, generator))


@method
def random_(self: Tensor, *args, generator: Generator | None = None, **kw) -> Tensor:
    """Fill with integers uniform in [from, to): ``random_()``, ``random_(to)``, ``random_(from, to)``.

    Without ``to`` the range ends at the dtype's largest value (for floats, 2**significand bits,
    so every value is exact).
    """
    low, high = 0, None
    if len(args) == 1:
        high = args[0]
    elif len(args) == 2:
        low, high = args
    elif args:
        raise TypeError(f"random_(): expected at most 2 positional arguments, got {len(args)}")
    low = kw.pop("from", low)
    high = kw.pop("to", high)
    _no_extra(kw, "random_")
    low = _int_arg(low, "from", "random_")
    d = self._dtype
    if high is None:
        top = 2 ** _SIGNIFICAND[d] if d.is_floating_point else _bounds(d)[1]
        high = top + 1
    else:
        high = _int_arg(high, "to", "random_")
    out = _randint(self._shape, low, high, d, self._device, generator, "random_")
    return _fill_from(self, out)


@method
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with exponential numbers of rate ``lambd``: -log(1 - U) / lambd."""
    from ._elementwise import div, log1p, neg
    _require_float(self, "exponential_")
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill_from(self, div(neg(log1p(neg(_uniform01(self, generator)))), lambd))


@method
def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (values 1, 2, ...)."""
    from ._elementwise import add, div, floor, log, sub
    if self._dtype is dt.bool:
        raise TypeError("geometric_: needs a numeric tensor, not ember.bool")
    p = float(p)
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _rand(self._shape, dt.float64, self._device, generator)
    # 1 - U is in (0, 1], so the log is finite and the result is at least 1
    k = add(floor(div(log(sub(1.0, u)), math.log1p(-p))), 1.0)
    return _fill_from(self, k)


@method
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with exp(N(mean, std²)) numbers."""
    from ._elementwise import add, exp, mul
    _require_float(self, "log_normal_")
    std = float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = _randn(self._shape, _compute(self._dtype), self._device, generator)
    return _fill_from(self, exp(add(mul(z, std), float(mean))))


@method
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy numbers: median + sigma * tan(pi * (U - 1/2))."""
    from ._elementwise import add, mul, sub, tan
    _require_float(self, "cauchy_")
    sigma = float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform01(self, generator)
    return _fill_from(self, add(mul(tan(mul(sub(u, 0.5), math.pi)), sigma), float(median)))


Tensor.bernoulli = bernoulli
Tensor.multinomial = multinomial


from . import random as _random_module  # noqa: E402,F401 - so ``ember.random`` is there after ``import ember``
