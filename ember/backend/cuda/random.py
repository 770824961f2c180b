"""Counter-based random numbers on the GPU: the numpy reference's streams, generated on the device.

The reference (``ember/backend/numpy/random.py``) defines every random op as a pure function of
(seed, offset): 64-bit word ``j`` is output ``j % 4`` of Philox4x64-10 keyed by ``seed`` at counter
``offset + 1 + j // 4``. Here a CUDA kernel computes the same words (one thread per 4-word block) and
the word-to-number mappings are the reference's, written against ``xp``. So ``rand``, ``randint`` and
``bernoulli`` are bit-identical to the CPU; ``randn`` uses the GPU's log/cos/sin and agrees with the
CPU to a few units in the last place. The kernel checks itself against numpy's Philox on first use
(including a counter carry); should it disagree or fail to build, the ops take the host path, which is
the reference itself. ``randperm``, ``multinomial`` and ``poisson`` always take the host path.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..numpy import random as reference
from ._util import LOW
from .indexing import HostPath

_MASK64 = (1 << 64) - 1
_SIGNIFICAND = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}
for _d in LOW:
    _SIGNIFICAND.setdefault(_d, 8)  # bfloat16

_PHILOX = r"""
extern "C" __global__ void ember_philox4x64(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                            unsigned long long nwords, unsigned long long* out) {
    unsigned long long b = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;  // a block of 4 words
    unsigned long long base = b * 4;
    if (base >= nwords) return;
    unsigned long long x0 = c0 + 1 + b;                 // numpy advances the counter before each block
    unsigned long long x1 = c1 + (x0 < c0 ? 1 : 0);     // 128-bit carry
    unsigned long long x2 = 0, x3 = 0, k0 = key, k1 = 0;
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B97F4A7C15ULL; k1 += 0xBB67AE8584CAA73BULL; }
        unsigned long long lo0 = 0xD2E7470EE14C6C93ULL * x0, hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, x0);
        unsigned long long lo1 = 0xCA5A826395121157ULL * x2, hi1 = __umul64hi(0xCA5A826395121157ULL, x2);
        unsigned long long n0 = hi1 ^ x1 ^ k0, n2 = hi0 ^ x3 ^ k1;
        x0 = n0; x1 = lo1; x2 = n2; x3 = lo0;
    }
    out[base] = x0;
    if (base + 1 < nwords) out[base + 1] = x1;
    if (base + 2 < nwords) out[base + 2] = x2;
    if (base + 3 < nwords) out[base + 3] = x3;
}
"""


class _Words:
    """The reference's 64-bit words for (seed, offset, n), computed on the GPU."""

    def __init__(self, xp):
        self.xp = xp
        self.gpu = xp is not np
        self.kernel = None
        self.ok = None  # None: not checked yet

    def __call__(self, seed: int, offset: int, n: int):
        if not self.gpu:  # testing on numpy: the reference's own words
            return np.array(reference._words(seed, offset, n), copy=True)
        if self.ok is None:
            self.ok = self._check()
        if not self.ok or offset >> 128:
            raise HostPath
        return self._run(seed, offset, n)

    def _run(self, seed, offset, n):
        xp = self.xp
        out = xp.empty(max(n, 0), np.uint64)
        if n:
            blocks = (n + 3) // 4
            self.kernel(((blocks + 255) // 256,), (256,),
                        (np.uint64(seed & _MASK64), np.uint64(offset & _MASK64),
                         np.uint64((offset >> 64) & _MASK64), np.uint64(n), out))
        return out

    def _check(self) -> bool:
        try:
            import cupy
            self.kernel = cupy.RawKernel(_PHILOX, "ember_philox4x64")
            for seed, offset, n in ((0x1234567890ABCDEF, (1 << 64) - 3, 1003), (7, 0, 9), (-5, 12345, 4)):
                got = cupy.asnumpy(self._run(seed, offset, n))
                if not np.array_equal(got, reference._words(seed, offset, n)):
                    raise AssertionError(f"words differ for seed={seed}, offset={offset}")
            return True
        except Exception as e:  # noqa: BLE001 - the host path gives the same numbers
            warnings.warn(f"ember's CUDA Philox kernel is not used ({e}); random ops run on the host",
                          RuntimeWarning, stacklevel=3)
            return False


def build(xp) -> dict:
    words = _Words(xp)

    def _uniform(seed, offset, n, npdtype):
        """n uniforms in [0, 1), exact in ``npdtype``, as float32 (narrow types) or float64."""
        m = _SIGNIFICAND[np.dtype(npdtype)]
        if m == 53:
            return (words(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        w = words(seed, offset, (n + 1) // 2)
        halves = w.view(np.uint32)[:n]  # (low half, high half) of each word: the GPU is little-endian
        return (halves >> np.uint32(32 - m)).astype(np.float32) * np.float32(2.0 ** -m)

    def _rand(shape, dtype, seed, offset):
        return _uniform(seed, offset, math.prod(shape), dtype.np).astype(dtype.np, copy=False).reshape(shape)

    def _randn(shape, dtype, seed, offset):
        n = math.prod(shape)
        k = (n + 1) // 2
        u = _uniform(seed, offset, 2 * k, np.float64 if dtype.np == np.float64 else np.float32).reshape(k, 2)
        wide = u.dtype.type
        r = xp.sqrt(wide(-2) * xp.log(wide(1) - u[:, 0]))
        theta = u[:, 1] * wide(2 * np.pi)
        out = xp.stack([r * xp.cos(theta), r * xp.sin(theta)], axis=1)
        return out.reshape(-1)[:n].astype(dtype.np, copy=False).reshape(shape)

    def _randint(shape, low, high, dtype, seed, offset):
        span = high - low
        w = words(seed, offset, math.prod(shape))
        m = w if span == 2 ** 64 else w % np.uint64(span)
        v = m.view(np.int64) + np.int64(low)  # wraps modulo 2**64 to exactly low + m
        return v.astype(dtype.np, copy=False).reshape(shape)

    def _bernoulli(p, seed, offset):
        u = _uniform(seed, offset, p.size, np.float64).reshape(p.shape)
        return (u < p.astype(np.float64, copy=False)).astype(p.dtype)

    return {"rand": _rand, "randn": _randn, "randint": _randint, "bernoulli": _bernoulli}
