"""Counter-based random numbers for the numpy backend.

Every random op gets ``seed`` and ``offset`` attributes; the stream is numpy's Philox with the
seed as key and the offset as counter, so a result depends only on (seed, offset, shape), never
on what ran before: reproducible, and replayable by lazy or remote backends.
"""

from __future__ import annotations

import numpy as np

from ._util import LOW_PRECISION


def _gen(seed, offset):
    return np.random.Generator(np.random.Philox(key=seed & (2**64 - 1), counter=offset))


def _float_out(dtype):
    """numpy generates float32/float64 directly; half types are rounded from float32."""
    return np.float64 if dtype.np == np.float64 else np.float32


def _rand(shape, dtype, seed, offset):
    return _gen(seed, offset).random(shape, dtype=_float_out(dtype)).astype(dtype.np, copy=False)


def _randn(shape, dtype, seed, offset):
    return _gen(seed, offset).standard_normal(shape, dtype=_float_out(dtype)).astype(dtype.np, copy=False)


def _randint(shape, low, high, dtype, seed, offset):
    return _gen(seed, offset).integers(low, high, size=shape, dtype=np.int64).astype(dtype.np, copy=False)


def _randperm(n, dtype, seed, offset):
    return _gen(seed, offset).permutation(n).astype(dtype.np, copy=False)


def _bernoulli(p, seed, offset):
    u = _gen(seed, offset).random(p.shape)
    probs = p.astype(np.float64) if p.dtype in LOW_PRECISION else p
    return (u < probs).astype(p.dtype)


def _multinomial(probs, num_samples, replacement, seed, offset):
    g = _gen(seed, offset)
    p = probs.astype(np.float64).reshape(-1, probs.shape[-1])
    p = p / p.sum(axis=1, keepdims=True)
    if replacement:
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = 1.0
        u = g.random((p.shape[0], num_samples))
        out = np.stack([np.searchsorted(cdf[r], u[r], side="right") for r in range(p.shape[0])])
        out = np.minimum(out, p.shape[1] - 1)
    else:
        # exponential race: the k smallest of E_i / p_i are a sample without replacement
        with np.errstate(divide="ignore"):
            keys = g.standard_exponential(p.shape) / p
        out = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return out.reshape(probs.shape[:-1] + (num_samples,)).astype(np.int64)


OPS = {
    "rand": _rand, "randn": _randn, "randint": _randint, "randperm": _randperm,
    "bernoulli": _bernoulli, "multinomial": _multinomial,
}
