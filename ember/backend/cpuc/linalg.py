"""CpuC's matmul: numpy's BLAS, held to one thread below ``THREADED_MIN`` flops.

Why: after a call that used its threads, OpenBLAS's idle workers spin for about 2**28 cycles (a
tenth of a second) before they sleep. A training step's matmuls are small, and the spinning workers
took the cores that the next ops' OpenMP threads and conv workers needed: on 2 cores an MNIST CNN
step ran 1.9x slower than with the spin cut short (``OPENBLAS_THREAD_TIMEOUT=4``, which only works
when set before numpy loads). Holding small GEMMs to the calling thread never wakes the workers;
a product big enough to keep both cores busy for milliseconds still gets every BLAS thread.
"""

from __future__ import annotations

import math

import numpy as np

from ..numpy import linalg as npl
from ..numpy._blas import one_blas_thread

# 2*M*N*K flops before BLAS may thread (about 1 ms of one core's GEMM): an MLP's 128 x 784 x 512
# products thread (fused MLP step 0.75x -> 0.93x the numpy stack's steps/s, measured 2026-12), a
# CNN's small linear layers (64 x 3136 x 128) stay on the calling thread
THREADED_MIN = 1 << 26


def _matmul(a, b):
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))   # () for 1-d operands
    if 2 * batch * m * n * a.shape[-1] >= THREADED_MIN:
        return npl._matmul(a, b)
    with one_blas_thread():
        return npl._matmul(a, b)


OPS = {"matmul": _matmul}
