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


class _Policy:
    """Which mode large products run in: 0 one thread, 1 BLAS's threads (see the module docstring)."""

    __slots__ = ("rate", "mode", "next_probe", "interval")

    def __init__(self):
        self.rate = [0.0, 0.0]  # flops per second of each mode, moving averages (0.0: not measured)
        self.mode = 1
        self.next_probe = 0.0  # the first large product also measures the other mode
        self.interval = PROBE_MIN

    def pick(self, now: float) -> int:
        return 1 - self.mode if now >= self.next_probe else self.mode

    def record(self, mode: int, flops: float, seconds: float, now: float) -> None:
        r = flops / max(seconds, 1e-9)
        old = self.rate[mode]
        self.rate[mode] = r if old == 0.0 else 0.5 * (old + r)
        other = self.rate[1 - mode]
        if mode != self.mode:  # a retry of the other mode
            if self.rate[mode] > self.rate[self.mode] or self.rate[self.mode] == 0.0:
                self.mode = mode
                self.interval = PROBE_MIN
            else:
                self.interval = min(2 * self.interval, PROBE_MAX)
            self.next_probe = now + self.interval
        elif self.rate[mode] < 0.8 * other:  # the mode in use slowed down (load came or went)
            self.mode = 1 - mode
            self.interval = PROBE_MIN
            self.next_probe = now + self.interval


POLICY = _Policy()


def _matmul(a, b):
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))   # () for 1-d operands
    flops = 2 * batch * m * n * a.shape[-1]
    if flops < THREADED_MIN:
        with one_blas_thread():
            return npl._matmul(a, b)
    if not ADAPTIVE or BLAS is None or a.dtype not in (np.float32, np.float64):
        return npl._matmul(a, b)
    t0 = time.perf_counter()
    mode = POLICY.pick(t0)
    if mode:
        out = npl._matmul(a, b)
    else:
        with one_blas_thread():
            out = npl._matmul(a, b)
    t1 = time.perf_counter()
    POLICY.record(mode, flops, t1 - t0, t1)
    return out


OPS = {"matmul": _matmul}
