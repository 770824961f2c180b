"""Linear algebra of the numpy backend (BLAS matmul, LAPACK decompositions).

The frontend has already checked shapes and dtypes (LAPACK ops only ever see float32/float64
batches of matrices), so these functions only translate to numpy and turn numpy's errors into
ember's :class:`LinAlgError`.
"""

from __future__ import annotations

import numpy as np

from ..._errors import LinAlgError
from ._blas import one_blas_thread
from ._util import LOW_PRECISION


def _lapack(name, fn):
    """numpy's LinAlgError becomes ember's, naming the op; NaN/inf inputs compute silently, as in
    PyTorch (numpy attributes those warnings to its own modules, past the package-wide filter)."""
    def run(*args, **kw):
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kw)
        except np.linalg.LinAlgError as e:
            raise LinAlgError(f"linalg.{name}: {e}") from None
    run.__name__ = name
    return run


# GEMMs between these sizes (in multiply-adds) run on one BLAS thread: below, OpenBLAS stays
# single-threaded anyway; above, its threads pay off (see _blas.py for the measurements).
_ONE_THREAD_MIN, _ONE_THREAD_MAX = 1 << 16, 1 << 26


def _matmul(a, b):
    if a.dtype in LOW_PRECISION:  # fp32 accumulation, as PyTorch's CPU kernels do
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    # float32/float64 go to BLAS; integers use numpy's exact loop (wrap-around like PyTorch's)
    if a.ndim >= 2 and b.ndim >= 2:
        work = a.size * b.shape[-1]
        if _ONE_THREAD_MIN <= work <= _ONE_THREAD_MAX:
            if a.ndim == 2 and b.ndim == 2 and a.shape[0] >= 64:
                return _split_rows(a, b, work)
            with one_blas_thread():
                return np.matmul(a, b)
    return np.matmul(a, b)


def _split_rows(a, b, work):
    """A mid-size 2-d GEMM as two single-threaded GEMMs on halves of the rows, run on the worker
    threads the conv ops use: two cores without OpenBLAS's thread hand-offs."""
    from .conv import _parallel
    m = a.shape[0]
    out = np.empty((m, b.shape[1]), np.result_type(a, b))
    half = m // 2

    def part(rows):
        np.matmul(a[rows[0]:rows[1]], b, out=out[rows[0]:rows[1]])
    _parallel(part, [(0, half), (half, m)], work, blas=True)
    return out


def _inv(a):
    return np.linalg.inv(a)


def _det(a):
    return np.asarray(np.linalg.det(a))


def _slogdet(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign), np.asarray(logabs)


def _solve(a, b, left=True):
    # b is always a (batch of) matrix here; the frontend turned vectors into columns
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return np.linalg.solve(a, b)


def _cholesky(a, upper=False):
    if upper:  # PyTorch's upper=True reads the upper triangle: factor A^T and transpose back
        return np.ascontiguousarray(np.swapaxes(np.linalg.cholesky(np.swapaxes(a, -1, -2)), -1, -2))
    return np.linalg.cholesky(a)


def _qr(a, mode="reduced"):
    if mode == "r":
        return np.empty((0,), a.dtype), np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _svd(a, full_matrices=True):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _svdvals(a):
    return np.linalg.svd(a, compute_uv=False)


def _eigh(a, uplo="L"):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return w, v


def _eigvalsh(a, uplo="L"):
    return np.linalg.eigvalsh(a, UPLO=uplo)


OPS = {"matmul": _matmul}
OPS.update({name: _lapack(name, fn) for name, fn in {
    "inv": _inv, "det": _det, "slogdet": _slogdet, "solve": _solve, "cholesky": _cholesky,
    "qr": _qr, "svd": _svd, "svdvals": _svdvals, "eigh": _eigh, "eigvalsh": _eigvalsh,
}.items()})
