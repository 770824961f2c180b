"""CpuC's matmul: numpy's BLAS, with its threads only where and while they pay.

Two rules decide how many threads a product gets:

* **Small products stay on the calling thread** (below ``THREADED_MIN`` flops). After a call that
  used its threads, OpenBLAS's idle workers spin for about 2**28 cycles (a tenth of a second)
  before they sleep; a training step's small matmuls woke them, and they took the cores that the
  next ops' OpenMP threads and conv workers needed (an MNIST CNN step ran 1.9x slower).
* **Large products use BLAS's threads while that is faster than one thread**, measured as they
  run. A threaded GEMM waits on its slowest worker: when another process holds the other cores,
  the worker waits for a core and the product runs 10-50x slower than on one thread (measured on
  the 2-core development machine while a test suite ran: 128 x 784 x 512 took 20-55 ms threaded,
  1-2 ms on one thread; on the quiet machine 0.6 ms threaded, 1.1 ms on one). :class:`_Policy`
  keeps a moving average of the flop rate of each mode, uses the faster one, and retries the
  other now and then (a retry that loses waits twice as long before the next, up to
  ``PROBE_MAX`` seconds), so it follows the machine's load within a few calls.
  ``ADAPTIVE = False`` (or ``EMBER_CPUC_BLAS=threads``) always threads large products.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from ..numpy import linalg as npl
from ..numpy._blas import BLAS, one_blas_thread

# 2*M*N*K flops before BLAS may thread (about 1 ms of one core's GEMM): an MLP's 128 x 784 x 512
# products thread, a CNN's small linear layers (64 x 3136 x 128) stay on the calling thread
THREADED_MIN = 1 << 26
ADAPTIVE = os.environ.get("EMBER_CPUC_BLAS", "adaptive") != "threads"
PROBE_MIN = 0.05  # seconds between retries of the mode not in use, doubled after each losing retry
PROBE_MAX = 2.0
TRIAL = 3  # calls per trial of the mode not in use (the first not counted)
SLOW = 0.7


class _Policy:
    """Which mode large products run in: 0 one thread, 1 BLAS's threads (see the module docstring).

    The mode in use keeps a moving average of its flop rate. The other mode is tried now and then,
    and at once when the mode in use slows down (its average under ``SLOW`` times the other's last
    rate, or one call under a quarter of it, as when another process takes a core): a trial is
    ``TRIAL`` calls whose first one is not counted (it may wake sleeping BLAS workers), ended
    early when its first counted call is under half the rate in use. The trial's rate replaces the
    mode's old figure, so a rate measured under other load does not linger."""

    __slots__ = ("rate", "mode", "next_probe", "interval", "trial", "left", "flops", "secs", "skip")

    def __init__(self):
        self.rate = [0.0, 0.0]  # flops per second of each mode (0.0: not measured)
        self.mode = 1
        self.next_probe = 0.0
        self.interval = PROBE_MIN
        self.trial = -1  # the mode on trial, or -1
        self.left = 0
        self.flops = self.secs = 0.0
        self.skip = True  # the process's first product may wake BLAS's workers: not counted

    def pick(self, now: float) -> int:
        if self.trial < 0 and now >= self.next_probe and self.rate[self.mode] > 0.0:
            self.trial, self.left, self.flops, self.secs, self.skip = 1 - self.mode, TRIAL, 0.0, 0.0, True
        return self.trial if self.trial >= 0 else self.mode

    def record(self, mode: int, flops: float, seconds: float, now: float) -> None:
        skip, self.skip = self.skip, False
        if mode == self.trial:
            self.left -= 1
            if not skip:
                self.flops += flops
                self.secs += seconds
            if self.left > 0 and not (self.secs > 0.0 and self.flops / self.secs < 0.5 * self.rate[self.mode]):
                return
            self.rate[mode] = self.flops / max(self.secs, 1e-9) if self.secs > 0.0 else self.rate[mode]
            if self.rate[mode] > self.rate[self.mode]:
                self.mode = mode
                self.interval = PROBE_MIN
            else:
                self.interval = min(2 * self.interval, PROBE_MAX)
            self.trial = -1
            self.next_probe = now + self.interval
            return
        if skip or mode != self.mode:
            return
        r = flops / max(seconds, 1e-9)
        old = self.rate[mode]
        self.rate[mode] = r if old == 0.0 else 0.75 * old + 0.25 * r
        other = self.rate[1 - mode]
        if self.trial < 0 and (self.rate[mode] < SLOW * other or r < 0.25 * other):
            # the mode in use slowed down (load came or went): try the other now, against this rate
            self.rate[mode] = min(self.rate[mode], r)
            self.next_probe = now


POLICY = _Policy()


def _matmul_op(a, b):
    """The ``matmul`` op: two inputs (a third would be taken for ``out`` by :func:`_matmul`)."""
    return _matmul(a, b)


def _matmul(a, b, out=None):
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))   # () for 1-d operands
    flops = 2 * batch * m * n * a.shape[-1]
    if flops < THREADED_MIN:
        with one_blas_thread():
            return _product(a, b, out)
    if not ADAPTIVE or BLAS is None or a.dtype not in (np.float32, np.float64):
        return _product(a, b, out)
    t0 = time.perf_counter()
    mode = POLICY.pick(t0)
    if mode:
        r = _product(a, b, out)
    else:
        with one_blas_thread():
            r = _product(a, b, out)
    t1 = time.perf_counter()
    POLICY.record(mode, flops, t1 - t0, t1)
    return r


def _product(a, b, out):
    return npl._matmul(a, b) if out is None else np.matmul(a, b, out=out)


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``a @ b`` written into ``out`` with matmul's thread rules: float32/float64 2-D operands of one
    dtype, ``out`` C-contiguous of the product's shape and dtype (Fusion passes a pooled buffer,
    which a fresh result of a few hundred KB would cost in page faults every step). Returns ``out``.

    >>> import numpy as np
    >>> matmul_into(np.ones((2, 3)), np.ones((3, 4)), np.empty((2, 4)))[0, 0]
    3.0
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or out.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"matmul_into: shapes {a.shape} @ {b.shape} -> out {out.shape} do not fit")
    if not (a.dtype == b.dtype == out.dtype) or a.dtype not in (np.float32, np.float64):
        raise TypeError(f"matmul_into: float32 or float64 operands and out of one dtype, got {a.dtype}, "
                        f"{b.dtype} and {out.dtype}")
    if not out.flags.c_contiguous:
        raise ValueError("matmul_into: out must be C-contiguous")
    return _matmul(a, b, out)


OPS = {"matmul": _matmul_op}
