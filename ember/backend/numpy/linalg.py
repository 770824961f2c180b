"""Linear algebra of the numpy backend (BLAS matmul, LAPACK decompositions).

The frontend has already checked shapes and dtypes (LAPACK ops only ever see float32/float64
batches of matrices), so these functions only translate to numpy and turn numpy's errors into
ember's :class:`LinAlgError`.
"""

from __future__ import annotations

import numpy as np

from ..._errors import LinAlgError
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


def _matmul(a, b):
    if a.dtype in LOW_PRECISION:  # fp32 accumulation, as PyTorch's CPU kernels do
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    # float32/float64 go to BLAS with its own threads (on a quiet machine that beat splitting the
    # rows over two single-threaded GEMMs by 1.3-1.6x for an MLP step); integers use numpy's exact
    # loop (wrap-around like PyTorch's)
    return np.matmul(a, b)


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
