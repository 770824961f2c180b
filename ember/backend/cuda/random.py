"""Counter-based random numbers on the GPU: the numpy reference's streams, generated on the device.

The reference (``ember/backend/numpy/random.py``) defines every random op as a pure function of
(seed, offset): 64-bit word ``j`` is output ``j % 4`` of Philox4x64-10 keyed by ``seed`` at counter
``offset + 1 + j // 4``. Here a CUDA kernel computes the same words (one thread per 4-word block) and
the word-to-number mappings are the reference's, written against ``xp``. So ``rand``, ``randint`` and
``bernoulli`` are bit-identical to the CPU; ``randn`` uses the GPU's log/cos/sin and agrees with the
CPU to a few units in the last place. The kernel checks itself against numpy's Philox on first use
(including counter carries); should it disagree or fail to build, the ops take the host path, which is
the reference itself.

The ops with data-dependent draws:

* ``multinomial`` reads the reference's words and maps them as the reference does (inverse CDF with
  replacement, the exponential race without). The draws are the CPU's except where the GPU's cumsum or
  ``log`` rounds differently right at a category boundary or a tie of race keys (a few ulp).
* ``randperm`` is the stable argsort of n words of its private stream (one parallel sort). The
  reference shuffles with numpy's ``Generator.permutation`` instead, so CPU and GPU permutations differ
  (each reproducible on its device).
* ``poisson`` gives element i of an n-element op the block ``r * n + i`` of its private stream in round
  r: rates below 10 invert the CDF with one uniform, rates from 10 use Hoermann's transformed
  rejection (PTRS, numpy's method, one attempt per round), rates from 1e15 the rounded normal
  approximation, as the reference. Exact in distribution, reproducible, not the CPU's numbers; the
  rounds run until every element is done, checking before every 8 rounds (a device read each).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import capture
from ..numpy import random as reference
from ._util import LOW
from .indexing import HostPath

_MASK64 = (1 << 64) - 1
_SIGNIFICAND = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}
for _d in LOW:
    _SIGNIFICAND.setdefault(_d, 8)  # bfloat16

# Three CUDA modules from shared pieces, so that the graph and float32 forms, should they fail to build
# on some toolkit, leave the checked word kernel working (a module with an error builds none of its kernels)
_WORDS_FN = r"""
// the 4 words of block b of the stream (key; counter c0..c2): Philox4x64-10 at counter + 1 + b
__device__ void ember_philox_words(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                   unsigned long long c2, unsigned long long b, unsigned long long* w) {
    unsigned long long x0 = c0 + 1 + b;                 // numpy advances the counter before each block
    unsigned long long carry = x0 < c0 ? 1 : 0;
    unsigned long long x1 = c1 + carry;                 // carries through the 192 bits the ops use
    unsigned long long x2 = c2 + (carry && x1 == 0 ? 1 : 0), x3 = 0, k0 = key, k1 = 0;
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B97F4A7C15ULL; k1 += 0xBB67AE8584CAA73BULL; }
        unsigned long long lo0 = 0xD2E7470EE14C6C93ULL * x0, hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, x0);
        unsigned long long lo1 = 0xCA5A826395121157ULL * x2, hi1 = __umul64hi(0xCA5A826395121157ULL, x2);
        unsigned long long n0 = hi1 ^ x1 ^ k0, n2 = hi0 ^ x3 ^ k1;
        x0 = n0; x1 = lo1; x2 = n2; x3 = lo0;
    }
    w[0] = x0; w[1] = x1; w[2] = x2; w[3] = x3;
}

__device__ void ember_words_block(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                  unsigned long long c2, unsigned long long nwords, unsigned long long* out) {
    unsigned long long b = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;  // a block of 4 words
    unsigned long long base = b * 4;
    if (base >= nwords) return;
    unsigned long long w[4];
    ember_philox_words(key, c0, c1, c2, b, w);
    for (int j = 0; j < 4; ++j) if (base + j < nwords) out[base + j] = w[j];
}

"""

_UNIT_FN = r"""
// uniform q (0..7) of a Philox block as rand's float32 ones: the top 24 bits of half q % 2 (low first) of
// word q / 2, times 2^-24 (the row kernels that drop elements draw dropout's numbers with it)
__device__ inline float ember_u24(const unsigned long long* w, int q) {
    unsigned int half = (unsigned int)(w[q / 2] >> (32 * (q % 2)));
    return (float)(half >> 8) * 5.9604644775390625e-08f;
}
// n uniforms in [0, 1) with m significant bits (m <= 24) as float32, straight from the words: uniform i is
// the 32-bit half i % 2 (low first) of word i / 2, its top m bits times 2^-m (the words path's mapping)
__device__ void ember_unit32_block(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                   unsigned long long c2, unsigned long long n, int m, float* out) {
    unsigned long long b = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;  // 8 uniforms a block
    unsigned long long base = b * 8;
    if (base >= n) return;
    unsigned long long w[4];
    ember_philox_words(key, c0, c1, c2, b, w);
    const float scale = ldexpf(1.0f, -m);
    for (int j = 0; j < 8; ++j) {
        if (base + j < n) {
            unsigned int half = (unsigned int)(w[j / 2] >> (32 * (j % 2)));
            out[base + j] = (float)(half >> (32 - m)) * scale;
        }
    }
}

// inside a CUDA graph: the key and a 192-bit counter shift come from st (written before each replay),
// so every replay draws the numbers an eager call would draw at the generator's state then
__device__ void ember_shift(const unsigned long long* st, unsigned long long& c0, unsigned long long& c1,
                            unsigned long long& c2) {
    unsigned long long s0 = c0 + st[1];
    unsigned long long k0 = s0 < c0 ? 1 : 0;
    unsigned long long t1 = c1 + st[2];
    unsigned long long k1 = t1 < c1 ? 1 : 0;
    unsigned long long s1 = t1 + k0;
    k1 += s1 < t1 ? 1 : 0;
    c2 = c2 + st[3] + k1;
    c1 = s1;
    c0 = s0;
}
"""

_PHILOX = _WORDS_FN + r"""
extern "C" __global__ void ember_philox4x64(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                            unsigned long long c2, unsigned long long nwords,
                                            unsigned long long* out) {
    ember_words_block(key, c0, c1, c2, nwords, out);
}
"""

_PHILOX_GRAPH = _WORDS_FN + _UNIT_FN + r"""
extern "C" __global__ void ember_philox4x64_graph(unsigned long long c0, unsigned long long c1,
                                                  unsigned long long c2, unsigned long long nwords,
                                                  unsigned long long* out, const unsigned long long* st) {
    ember_shift(st, c0, c1, c2);
    ember_words_block(st[0], c0, c1, c2, nwords, out);
}
"""

_PHILOX_UNIT = _WORDS_FN + _UNIT_FN + r"""
extern "C" __global__ void ember_philox_unit32(unsigned long long key, unsigned long long c0, unsigned long long c1,
                                               unsigned long long c2, unsigned long long n, int m, float* out) {
    ember_unit32_block(key, c0, c1, c2, n, m, out);
}

extern "C" __global__ void ember_philox_unit32_graph(unsigned long long c0, unsigned long long c1,
                                                     unsigned long long c2, unsigned long long n, int m, float* out,
                                                     const unsigned long long* st) {
    ember_shift(st, c0, c1, c2);
    ember_unit32_block(st[0], c0, c1, c2, n, m, out);
}
"""


def kernel_counter(offset: int) -> tuple:
    """A stream offset as the kernels' three 64-bit counter words (low first)."""
    return (np.uint64(offset & _MASK64), np.uint64((offset >> 64) & _MASK64), np.uint64((offset >> 128) & _MASK64))


class _Words:
    """The reference's 64-bit words for (seed, offset, n), computed on the GPU."""

    # the kernels and their checks are the process's (class attributes): a CUDA graph capture runs the
    # checks before it starts (prepare_graphs), since nothing can be read back while it records
    kernel = graph_kernel = unit_kernel = unit_graph_kernel = None
    ok = None  # None: not checked yet
    graph_ok = False
    unit_ok = False  # the float32 form (uniforms straight from the words) passed its check

    def __init__(self, xp):
        self.xp = xp
        self.gpu = xp is not np

    def __call__(self, seed: int, offset: int, n: int):
        if not self.gpu:  # testing on numpy: the reference's own words
            return np.array(reference._words(seed, offset, n), copy=True)
        if _Words.ok is None:
            _Words.ok = self._check()
        if not _Words.ok or offset >> 192:
            raise HostPath
        return self._run(seed, offset, n, self._graph_state(seed, offset))

    @staticmethod
    def _graph_state(seed, offset):
        """None outside a CUDA graph capture; inside one, the device array the captured kernel reads
        its key and counter shift from (or CaptureSyncError when the op can't be captured)."""
        if not capture._depth[0]:
            return None
        st = capture.graph_random_state(seed, offset) if _Words.graph_ok else None
        if st is None:
            raise capture.CaptureSyncError(
                "a random op inside a CUDA graph capture draws from ember's default CUDA generator only "
                "(an explicit generator's numbers would repeat at every replay): draw them outside the "
                "captured region, or from the default generator")
        return st

    def unit32(self, seed: int, offset: int, n: int, m: int):
        """n uniforms with m <= 24 significant bits as float32, one kernel (the words path's numbers);
        None where the float32 form isn't available (the caller takes the words path)."""
        if not self.gpu:
            return None
        if _Words.ok is None:
            _Words.ok = self._check()
        if not (_Words.ok and _Words.unit_ok) or offset >> 192:
            return None
        return self._run_unit(seed, offset, n, m, self._graph_state(seed, offset))

    def _run_unit(self, seed, offset, n, m, st=None):
        out = self.xp.empty(max(n, 0), np.float32)
        if n:
            counter = kernel_counter(offset)
            grid = (((n + 7) // 8 + 255) // 256,)
            if st is None:
                self.unit_kernel(grid, (256,), (np.uint64(seed & _MASK64), *counter, np.uint64(n), np.int32(m), out))
            else:
                self.unit_graph_kernel(grid, (256,), (*counter, np.uint64(n), np.int32(m), out, st))
        return out

    def graph_ready(self) -> bool:
        """Whether random ops may be captured into a CUDA graph (the graph kernel passed its check)."""
        if _Words.ok is None:
            _Words.ok = self._check()
        return bool(_Words.ok and _Words.graph_ok)

    def _check_graph_form(self, cupy) -> None:
        """The graph kernel: the counter shifted by the device array's shift (carries through all
        three words) gives the reference's words there; a failure only keeps random ops out of graphs."""
        try:
            _Words.graph_kernel = cupy.RawKernel(_PHILOX_GRAPH, "ember_philox4x64_graph")
            for seed, offset, n in _CHECKS:
                for shift in (5, (1 << 64) - 1, (1 << 128) + (1 << 64) - 7):
                    st = cupy.asarray(np.array([seed & _MASK64, shift & _MASK64, (shift >> 64) & _MASK64,
                                                (shift >> 128) & _MASK64], np.uint64))
                    got = cupy.asnumpy(self._run(0, offset, n, st))
                    if not np.array_equal(got, reference._words(seed, (offset + shift) % (1 << 192), n)):
                        raise AssertionError(f"graph words differ for seed={seed}, offset={offset}, shift={shift}")
            _Words.graph_ok = True
        except Exception as e:  # noqa: BLE001 - captures then refuse random ops, as before
            warnings.warn(f"ember's CUDA Philox kernel for graphs is not used ({e}); random ops can't be "
                          "captured into CUDA graphs", RuntimeWarning, stacklevel=4)
            _Words.graph_ok = False

    def _check_unit_form(self, cupy) -> None:
        """The float32 form against the words path's mapping (and its graph variant against the shifted
        words); a failure only keeps rand/randn/bernoulli on the words path."""
        try:
            _Words.unit_kernel = cupy.RawKernel(_PHILOX_UNIT, "ember_philox_unit32")
            _Words.unit_graph_kernel = cupy.RawKernel(_PHILOX_UNIT, "ember_philox_unit32_graph")
            for seed, offset, n in _CHECKS:
                for m in (24, 11, 8):
                    halves = np.asarray(reference._words(seed, offset, (n + 1) // 2)).view(np.uint32)[:n]
                    want = (halves >> np.uint32(32 - m)).astype(np.float32) * np.float32(2.0 ** -m)
                    if not np.array_equal(cupy.asnumpy(self._run_unit(seed, offset, n, m)), want):
                        raise AssertionError(f"uniforms differ for seed={seed}, offset={offset}, m={m}")
                shift = (1 << 64) + 3
                st = cupy.asarray(np.array([seed & _MASK64, shift & _MASK64, (shift >> 64) & _MASK64, 0], np.uint64))
                shifted = reference._words(seed, (offset + shift) % (1 << 192), (n + 1) // 2)
                halves = np.asarray(shifted).view(np.uint32)[:n]
                want = (halves >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)
                if not np.array_equal(cupy.asnumpy(self._run_unit(0, offset, n, 24, st)), want):
                    raise AssertionError(f"graph uniforms differ for seed={seed}, offset={offset}")
            _Words.unit_ok = True
        except Exception as e:  # noqa: BLE001 - the words path gives the same numbers
            warnings.warn(f"ember's CUDA float32 Philox kernel is not used ({e}); uniforms take the words path",
                          RuntimeWarning, stacklevel=4)
            _Words.unit_ok = False

    def _run(self, seed, offset, n, st=None):
        """The words; with ``st`` (a CUDA graph capture) the key and a counter shift are read from that
        device array at each replay (see capture.graph_random_state)."""
        xp = self.xp
        out = xp.empty(max(n, 0), np.uint64)
        if n:
            blocks = (n + 3) // 4
            counter = kernel_counter(offset)
            grid = ((blocks + 255) // 256,)
            if st is None:
                self.kernel(grid, (256,), (np.uint64(seed & _MASK64), *counter, np.uint64(n), out))
            else:
                self.graph_kernel(grid, (256,), (*counter, np.uint64(n), out, st))
        return out

    def _check(self) -> bool:
        try:
            import cupy
            _Words.kernel = cupy.RawKernel(_PHILOX, "ember_philox4x64")
            for seed, offset, n in _CHECKS:
                got = cupy.asnumpy(self._run(seed, offset, n))
                if not np.array_equal(got, reference._words(seed, offset, n)):
                    raise AssertionError(f"words differ for seed={seed}, offset={offset}")
            self._check_graph_form(cupy)
            self._check_unit_form(cupy)
            return True
        except Exception as e:  # noqa: BLE001 - the host path gives the same numbers
            warnings.warn(f"ember's CUDA Philox kernel is not used ({e}); random ops run on the host",
                          RuntimeWarning, stacklevel=3)
            return False


def prepare_graphs() -> bool:
    """Build and check the Philox kernels (outside a capture): whether random ops can be captured."""
    import cupy
    return _Words(cupy).graph_ready()


# (seed, offset, words) the kernels are checked on: counter carries across each of the three words
_CHECKS = ((0x1234567890ABCDEF, (1 << 64) - 3, 1003), (7, 0, 9), (-5, 12345, 4), (3, (1 << 128) | (41 << 64), 37),
           (3, (1 << 128) - 2, 17))


def _private(offset: int) -> int:
    """The counter of an op's private stream (the reference's ``_own_stream``)."""
    return (1 << 128) | (offset << 64)


# numpy's (and the reference's) switch points for the Poisson samplers
_POISSON_PTRS = 10.0
_POISSON_NORMAL = reference._POISSON_NORMAL


def uniform(xp, words: _Words, seed: int, offset: int, n: int, npdtype):
    """n uniforms in [0, 1) of the stream at (seed, offset), exact in ``npdtype``, as float32 (narrow types)
    or float64: the reference's numbers (``words`` is this array module's :class:`_Words`)."""
    m = _SIGNIFICAND[np.dtype(npdtype)]
    if m == 53:
        return (words(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    u = words.unit32(seed, offset, n, m)  # one kernel from counters to floats (dropout's masks)
    if u is not None:
        return u
    w = words(seed, offset, (n + 1) // 2)
    halves = w.view(np.uint32)[:n]  # (low half, high half) of each word: the GPU is little-endian
    return (halves >> np.uint32(32 - m)).astype(np.float32) * np.float32(2.0 ** -m)


def build(xp) -> dict:
    words = _Words(xp)
    gpu = xp is not np

    def _uniform(seed, offset, n, npdtype):
        return uniform(xp, words, seed, offset, n, npdtype)

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

    def _unit(w):
        """53-bit uniforms in [0, 1) of 64-bit words (the reference's float64 mapping)."""
        return (w >> np.uint64(11)).astype(np.float64) * 2.0 ** -53

    def _randperm(n, dtype, seed, offset):
        """A stable argsort of n words of the op's private stream: a uniform permutation (ties of
        64-bit words, which stability resolves, have probability below n**2 / 2**65)."""
        keys = words(seed, _private(offset), n)
        return xp.argsort(keys, kind="stable").astype(dtype.np, copy=False)

    def _multinomial(probs, num_samples, replacement, seed, offset):
        p = probs.astype(np.float64).reshape(-1, probs.shape[-1])
        rows, n = p.shape
        if replacement:
            u = _uniform(seed, offset, rows * num_samples, np.float64).reshape(rows, num_samples)
            cdf = xp.cumsum(p, axis=1)
            cdf /= cdf[:, -1:]  # from the last nonzero category on exactly 1.0 > u
            # numpy's searchsorted(side="right") per row: the first category whose cdf exceeds u
            lo = xp.zeros((rows, num_samples), np.int64)
            hi = xp.full((rows, num_samples), n, np.int64)
            for _ in range(n.bit_length()):
                active = lo < hi
                mid = lo + ((hi - lo) >> 1)
                go_right = xp.take_along_axis(cdf, xp.minimum(mid, n - 1), axis=1) <= u
                lo = xp.where(active & go_right, mid + 1, lo)
                hi = xp.where(active & ~go_right, mid, hi)
            out = lo
        else:
            # exponential race: the k smallest of E_i / p_i are a weighted sample without replacement
            u1 = 1 - _uniform(seed, offset, rows * n, np.float64).reshape(rows, n)
            with np.errstate(divide="ignore"):
                keys = -xp.log(u1) / p
            out = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
        return out.reshape(probs.shape[:-1] + (num_samples,)).astype(np.int64, copy=False)

    def _gammaln(x):
        if gpu:
            from cupyx.scipy.special import gammaln
        else:
            from scipy.special import gammaln
        return gammaln(x)

    def _poisson(rates, seed, offset):
        lam = rates.astype(np.float64).reshape(-1)
        n = lam.shape[0]
        out = xp.zeros(n, np.float64)
        if n == 0:
            return out.astype(rates.dtype).reshape(rates.shape)
        base = _private(offset)

        def block(r):  # round r: element i reads the 4 words of block r * n + i
            return words(seed, base + r * n, 4 * n).reshape(n, 4)

        w0 = block(0)
        nan = xp.isnan(lam)
        small = lam < _POISSON_PTRS
        big = lam >= _POISSON_NORMAL
        mid = ~(small | big | nan)
        with np.errstate(all="ignore"):
            # rates from 1e15 (and inf): the rounded normal approximation, exact to float64's resolution
            u1, u2 = _unit(w0[:, 2]), _unit(w0[:, 3])
            z = xp.sqrt(-2.0 * xp.log(1.0 - u1)) * xp.cos(2 * np.pi * u2)
            out = xp.where(big, xp.where(xp.isinf(lam), lam, xp.round(lam + xp.sqrt(lam) * z)), out)
            out = xp.where(nan, lam, out)
            # rates below 10: the inverse CDF of one uniform, a term per round (stops where terms vanish)
            u = _unit(w0[:, 2])
            lam_s = xp.where(small, lam, 0.0)
            term = xp.exp(-lam_s)
            cdf = term
            k = xp.zeros(n, np.float64)
            todo_s = small & (u > cdf)
            # PTRS constants for 10 <= rate < 1e15
            lam_m = xp.where(mid, lam, _POISSON_PTRS)
            slam, loglam = xp.sqrt(lam_m), xp.log(lam_m)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            log_inv_alpha = xp.log(1.1239 + 1.1328 / (b - 3.4))
            vr = 0.9277 - 3.6224 / (b - 2)
            todo_m = mid
            r = 0
            while True:
                # one device read before every 8 rounds: which samplers still have elements to finish
                busy_s, busy_m = xp.stack([xp.any(todo_s), xp.any(todo_m)]).tolist()
                if not (busy_s or busy_m):
                    break
                for _ in range(8):
                    if busy_s:  # one inversion step
                        k = xp.where(todo_s, k + 1, k)
                        term = xp.where(todo_s, term * lam_s / xp.maximum(k, 1), term)
                        cdf = xp.where(todo_s, cdf + term, cdf)
                        todo_s = todo_s & (u > cdf) & (term > 0)
                    if busy_m:  # one PTRS attempt on round r's words
                        w = w0 if r == 0 else block(r)
                        r += 1
                        U = _unit(w[:, 0]) - 0.5
                        V = _unit(w[:, 1])
                        us = 0.5 - xp.abs(U)
                        kf = xp.floor((2 * a / us + b) * U + lam_m + 0.43)
                        quick = (us >= 0.07) & (V <= vr)
                        reject = (kf < 0) | ((us < 0.013) & (V > us)) | (us == 0)
                        slow = (xp.log(V) + log_inv_alpha - xp.log(a / (us * us) + b)
                                <= -lam_m + kf * loglam - _gammaln(xp.maximum(kf, 0) + 1))
                        take = todo_m & (quick | (~reject & slow))
                        out = xp.where(take, kf, out)
                        todo_m = todo_m & ~take
            out = xp.where(small, k, out)
        return out.astype(rates.dtype).reshape(rates.shape)

    return {"rand": _rand, "randn": _randn, "randint": _randint, "bernoulli": _bernoulli,
            "randperm": _randperm, "multinomial": _multinomial, "poisson": _poisson}
