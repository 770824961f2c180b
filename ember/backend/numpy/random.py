"""Counter-based random numbers for the numpy backend.

Every random op gets ``seed`` and ``offset`` attributes and is a pure function of (seed, offset,
shape, attrs): nothing depends on what ran before, so results reproduce and a lazy, fused or
remote backend can replay them.

The stream: 64-bit word ``j`` of an op is output ``j % 4`` of Philox4x64-10 keyed by ``seed`` at
counter ``offset + 1 + j // 4`` (numpy's ``Philox(key=seed, counter=offset).random_raw``). Each op
reads a fixed number of words (the frontend's ``_random._WORDS``), so the frontend advances the
offset by ``ceil(words / 4)`` and two calls never share a counter. The word-to-number mappings are
simple enough for a GPU kernel to reproduce bit for bit:

* float32/float16/bfloat16 uniforms: two per word, element 2j from the low and 2j+1 from the
  high 32 bits of word j; each takes the top ``m`` bits of its half times 2**-m, with ``m`` the
  dtype's significand width (24, 11, 8), so values are exactly representable and always < 1;
* float64 uniforms: one per word, the top 53 bits times 2**-53;
* normal: Box-Muller on uniform pairs (2i, 2i+1) as above, giving elements 2i (r cos) and 2i+1
  (r sin), computed in float32 for the 32- and 16-bit floats and in float64 for float64;
* integers in [low, high): low + word mod (high - low) (bias below (high - low) / 2**64);
* bernoulli: a 53-bit uniform < p; multinomial: the inverse CDF of 53-bit uniforms with
  replacement, the exponential race without (one word per category).

``randperm`` and ``poisson`` read a data-dependent number of words, so each draws from its own
Philox stream at counter ``(1 << 128) | (offset << 64)``, which no fixed-size op reaches; they
reserve one block. Those two are reproducible on this backend but not specified bit for bit.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ._util import LOW_PRECISION

_MASK64 = 2**64 - 1
_SIGNIFICAND = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}
for _d in LOW_PRECISION:
    _SIGNIFICAND.setdefault(_d, 8)  # bfloat16
_local = threading.local()
_LITTLE = sys.byteorder == "little"


def _bitgen(seed: int, counter: int) -> np.random.Philox:
    """A Philox bit generator at (seed, counter). Re-seating one per thread costs a quarter of
    constructing it, which matters for the many tiny draws of a training loop."""
    bg = getattr(_local, "bg", None)
    if bg is None:
        bg = _local.bg = np.random.Philox(key=0)
    bg.state = {
        "bit_generator": "Philox",
        "state": {"counter": np.array([(counter >> s) & _MASK64 for s in (0, 64, 128, 192)], dtype=np.uint64),
                  "key": np.array([seed & _MASK64, 0], dtype=np.uint64)},
        "buffer": np.zeros(4, dtype=np.uint64), "buffer_pos": 4, "has_uint32": 0, "uinteger": 0,
    }
    return bg


def _words(seed: int, offset: int, n: int) -> np.ndarray:
    return _bitgen(seed, offset).random_raw(n)


def _own_stream(seed: int, offset: int) -> np.random.Generator:
    """The private stream of an op that reads a data-dependent number of words."""
    return np.random.Generator(_bitgen(seed, (1 << 128) | (offset << 64)))


def _uniform(seed: int, offset: int, n: int, npdtype) -> np.ndarray:
    """n uniforms in [0, 1), exact in ``npdtype``, as float32 (narrow types) or float64."""
    m = _SIGNIFICAND[np.dtype(npdtype)]
    if m == 53:
        return (_words(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    w = _words(seed, offset, (n + 1) // 2)
    if _LITTLE:  # the uint32 view of a word is (low half, high half)
        halves = w.view(np.uint32)[:n]
    else:
        halves = np.stack([w & np.uint64(0xFFFFFFFF), w >> np.uint64(32)], axis=-1).astype(np.uint32).reshape(-1)[:n]
    return (halves >> np.uint32(32 - m)).astype(np.float32) * np.float32(2.0**-m)


def _rand(shape, dtype, seed, offset):
    return _uniform(seed, offset, math.prod(shape), dtype.np).astype(dtype.np, copy=False).reshape(shape)


def _randn(shape, dtype, seed, offset):
    n = math.prod(shape)
    k = (n + 1) // 2
    # float32 uniforms (24 bits) even for the 16-bit floats: the radius needs the resolution
    u = _uniform(seed, offset, 2 * k, np.float64 if dtype.np == np.float64 else np.float32).reshape(k, 2)
    wide = u.dtype.type
    r = np.sqrt(wide(-2) * np.log(wide(1) - u[:, 0]))  # 1 - u is in (0, 1]: the log stays finite
    theta = u[:, 1] * wide(2 * np.pi)
    out = np.empty((k, 2), dtype=wide)
    np.multiply(r, np.cos(theta), out=out[:, 0])
    np.multiply(r, np.sin(theta), out=out[:, 1])
    return out.reshape(-1)[:n].astype(dtype.np, copy=False).reshape(shape)


def _randint(shape, low, high, dtype, seed, offset):
    span = high - low
    w = _words(seed, offset, math.prod(shape))
    m = w if span == 2**64 else w % np.uint64(span)
    # low + m always fits int64; the int64 view and add wrap modulo 2**64 to exactly that value
    v = m.view(np.int64) + np.int64(low)
    return v.astype(dtype.np, copy=False).reshape(shape)


def _randperm(n, dtype, seed, offset):
    return _own_stream(seed, offset).permutation(n).astype(dtype.np, copy=False)


def _bernoulli(p, seed, offset):
    u = _uniform(seed, offset, p.size, np.float64).reshape(p.shape)
    return (u < p.astype(np.float64, copy=False)).astype(p.dtype)


def _multinomial(probs, num_samples, replacement, seed, offset):
    p = probs.astype(np.float64).reshape(-1, probs.shape[-1])
    rows, n = p.shape
    if replacement:
        u = _uniform(seed, offset, rows * num_samples, np.float64).reshape(rows, num_samples)
        cdf = np.cumsum(p, axis=1)
        # dividing by the row total makes every entry from the last nonzero category on exactly
        # 1.0, so u < 1 can never land on a zero-probability category
        cdf /= cdf[:, -1:]
        out = np.empty((rows, num_samples), dtype=np.int64)
        for r in range(rows):
            out[r] = np.searchsorted(cdf[r], u[r], side="right")
    else:
        # exponential race: the k smallest of E_i / p_i are a weighted sample without replacement
        u1 = 1 - _uniform(seed, offset, rows * n, np.float64).reshape(rows, n)
        with np.errstate(divide="ignore"):
            keys = -np.log(u1) / p
        out = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return out.reshape(probs.shape[:-1] + (num_samples,)).astype(np.int64, copy=False)


# numpy's sampler refuses rates above ~9.2e18; far below that the normal approximation is exact
# to the float64 resolution, so huge rates (and inf) use it
_POISSON_NORMAL = 1e15


def _poisson(rates, seed, offset):
    g = _own_stream(seed, offset)
    lam = rates.astype(np.float64)
    big = lam >= _POISSON_NORMAL
    out = g.poisson(np.where(big, 0.0, lam))
    out = out.astype(np.float64)
    if big.any():
        z = g.standard_normal(int(big.sum()))
        with np.errstate(invalid="ignore"):
            out[big] = np.round(lam[big] + np.sqrt(lam[big]) * z)
        out[np.isinf(lam)] = np.inf
    return out.astype(rates.dtype).reshape(rates.shape)


OPS = {
    "rand": _rand, "randn": _randn, "randint": _randint, "randperm": _randperm,
    "bernoulli": _bernoulli, "multinomial": _multinomial, "poisson": _poisson,
}
