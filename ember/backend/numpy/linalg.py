"""Linear algebra of the numpy backend (BLAS matmul, LAPACK decompositions)."""

from __future__ import annotations

import numpy as np

from ..._errors import LinAlgError
from ._util import LOW_PRECISION


def _lapack(fn):
    """LAPACK works in float32/float64; half inputs run in float32. numpy's errors become ember's."""
    def run(*args, **kw):
        dt = args[0].dtype
        args = tuple(a.astype(np.float32) if a.dtype in LOW_PRECISION else a for a in args)
        try:
            out = fn(*args, **kw)
        except np.linalg.LinAlgError as e:
            raise LinAlgError(f"{fn.__name__.strip('_')}: {e}") from None
        if dt in LOW_PRECISION:
            out = tuple(o.astype(dt) for o in out) if isinstance(out, tuple) else out.astype(dt)
        return out
    run.__name__ = fn.__name__
    return run


def _matmul(a, b):
    if a.dtype in LOW_PRECISION:  # fp32 accumulation, as PyTorch's CPU kernels do
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    if a.dtype.kind in "iub":  # integer matmul: numpy's loop is exact; bool gives any-of-and
        return np.matmul(a, b)
    return np.matmul(a, b)


def _inv(a):
    return np.linalg.inv(a)


def _det(a):
    return np.asarray(np.linalg.det(a))


def _slogdet(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign), np.asarray(logabs)


def _solve(a, b, left=True):
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return np.linalg.solve(a, b)


def _cholesky(a, upper=False):
    lower = np.linalg.cholesky(a)
    return np.swapaxes(lower, -1, -2).copy() if upper else lower


def _qr(a, mode="reduced"):
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return np.empty((0,), a.dtype), r
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _svd(a, full_matrices=True):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _eigh(a, uplo="L"):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return w, v


def _eigvalsh(a, uplo="L"):
    return np.linalg.eigvalsh(a, UPLO=uplo)


def _pinv(a, hermitian=False):
    return np.linalg.pinv(a, hermitian=hermitian)


def _lstsq(a, b):
    if a.ndim == 2:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    return np.linalg.pinv(a) @ b


def _matrix_rank(a, hermitian=False):
    return np.asarray(np.linalg.matrix_rank(a, hermitian=hermitian), dtype=np.int64)


OPS = {"matmul": _matmul}
OPS.update({name: _lapack(fn) for name, fn in {
    "inv": _inv, "det": _det, "slogdet": _slogdet, "solve": _solve, "cholesky": _cholesky,
    "qr": _qr, "svd": _svd, "eigh": _eigh, "eigvalsh": _eigvalsh, "pinv": _pinv,
    "lstsq": _lstsq, "matrix_rank": _matrix_rank,
}.items()})
