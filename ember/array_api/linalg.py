"""The standard's ``linalg`` extension, on top of ``ember.linalg``.

Translations: results of several arrays are named tuples with the standard's field names;
``matrix_rank``/``pinv`` take ``rtol`` (default max(M, N) * eps); ``trace`` works on stacks of
matrices with ``offset`` and ``dtype``; ``vector_norm``/``matrix_norm`` use ``axis``/``keepdims``.
``eig`` and ``eigvals`` are left out: their results are complex and ember has no complex dtypes.

>>> import ember.array_api as xp
>>> xp.linalg.slogdet(xp.asarray([[2.0, 0.0], [0.0, 3.0]])).logabsdet
tensor(1.7918)
"""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import ember
import ember.linalg as _la

from .. import _dtype as dt
from .._tensor import Tensor
from ._helpers import axis_tuple, check_array, operands
from ._linalg_fns import matmul, matrix_transpose, tensordot, vecdot
from ._statistical import _accumulate_dtype

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _matrices(x: Tensor, op: str, square: builtins.bool = True) -> Tensor:
    check_array(x, op)
    if x.ndim < 2:
        raise ValueError(f"linalg.{op}: needs at least 2 dimensions, got shape {tuple(x._shape)}")
    if square and x._shape[-1] != x._shape[-2]:
        raise ValueError(f"linalg.{op}: needs square matrices, got shape {tuple(x._shape)}")
    return x


def cholesky(x: Tensor, /, *, upper: builtins.bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (L, or U = L^T when ``upper``)."""
    return _la.cholesky(_matrices(x, "cholesky"), upper=upper)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Cross products of 3-vectors along ``axis`` (counted from the end); the other axes broadcast."""
    a, b = operands("cross", check_array(x1, "linalg.cross"), check_array(x2, "linalg.cross"))
    n = builtins.min(a.ndim, b.ndim)
    if n == 0 or not -n <= axis < n:
        raise ValueError(f"linalg.cross: axis {axis} is out of range for shapes {tuple(a._shape)}, {tuple(b._shape)}")
    if axis >= 0:  # the standard counts the axis from the end, so broadcasting can't shift it
        axis -= n
    if a._shape[axis] != 3 or b._shape[axis] != 3:
        raise ValueError(f"linalg.cross: the size along axis {axis} must be 3, got shapes {tuple(a._shape)} and "
                         f"{tuple(b._shape)}")
    a, b = ember.broadcast_tensors(a, b)
    return _la.cross(a, b, dim=axis)


def det(x: Tensor, /) -> Tensor:
    """Determinants of square matrices."""
    return _la.det(_matrices(x, "det"))


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes."""
    return _la.diagonal(_matrices(x, "diagonal", square=False), offset=offset)


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices."""
    return EighResult(*_la.eigh(_matrices(x, "eigh")))


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices."""
    return _la.eigvalsh(_matrices(x, "eigvalsh"))


def inv(x: Tensor, /) -> Tensor:
    """Inverses of square matrices."""
    return _la.inv(_matrices(x, "inv"))


def matrix_norm(x: Tensor, /, *, keepdims: builtins.bool = False, ord="fro") -> Tensor:
    """A norm of the matrices in the last two axes: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    return _la.matrix_norm(_matrices(x, "matrix_norm", square=False), ord, (-2, -1), keepdims)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """x multiplied by itself n times (n < 0: of the inverse; n == 0: the identity)."""
    return _la.matrix_power(_matrices(x, "matrix_power"), n)


def _rtol(x: Tensor, rtol):
    if rtol is None:
        return dt.finfo(x._dtype).eps * builtins.max(x._shape[-2:])
    if isinstance(rtol, Tensor):
        return rtol
    return builtins.float(rtol)


def matrix_rank(x: Tensor, /, *, rtol=None) -> Tensor:
    """The number of singular values above rtol * the largest one (rtol defaults to max(M, N) * eps)."""
    x = _matrices(x, "matrix_rank", square=False)
    return _la.matrix_rank(x, atol=0.0, rtol=_rtol(x, rtol))


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two 1-d arrays."""
    a, b = operands("outer", check_array(x1, "linalg.outer"), check_array(x2, "linalg.outer"))
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"linalg.outer: needs 1-d arrays, got shapes {tuple(a._shape)} and {tuple(b._shape)}")
    return ember.outer(a, b)


def pinv(x: Tensor, /, *, rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse, dropping singular values <= rtol * the largest."""
    x = _matrices(x, "pinv", square=False)
    return _la.pinv(x, atol=0.0, rtol=_rtol(x, rtol))


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition ('reduced' or 'complete')."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*_la.qr(_matrices(x, "qr", square=False), mode))


def slogdet(x: Tensor, /) -> SlogdetResult:
    """(sign, log|det|) of square matrices."""
    return SlogdetResult(*_la.slogdet(_matrices(x, "slogdet")))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """X with x1 @ X == x2; x2 is a stack of vectors when 1-d, else of matrices."""
    a, b = operands("solve", _matrices(x1, "solve"), check_array(x2, "linalg.solve", "x2"))
    return _la.solve(a, b)


def svd(x: Tensor, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """U, S, Vh with x == U @ diag(S) @ Vh (S descending)."""
    return SVDResult(*_la.svd(_matrices(x, "svd", square=False), full_matrices))


def svdvals(x: Tensor, /) -> Tensor:
    """Singular values in descending order."""
    return _la.svdvals(_matrices(x, "svdvals", square=False))


def trace(x: Tensor, /, *, offset: int = 0, dtype=None) -> Tensor:
    """Sum of the ``offset`` diagonal of each matrix in the last two axes."""
    x = _matrices(x, "trace", square=False)
    d = _accumulate_dtype(x, dtype, "linalg.trace")
    return ember.sum(x.diagonal(offset, -2, -1), -1, dtype=d)


def vector_norm(x: Tensor, /, *, axis=None, keepdims: builtins.bool = False, ord=2) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements when None)."""
    check_array(x, "linalg.vector_norm")
    axes = axis_tuple(axis, x.ndim, "linalg.vector_norm")
    if axes == ():  # a norm of single elements: |x| (the standard reduces over no axis)
        return ember.abs(x) if ord != 0 else ember.ne(x, 0).to(x._dtype)
    if ord != ord or (isinstance(ord, builtins.float) and math.isnan(ord)):
        raise ValueError("linalg.vector_norm: ord must not be NaN")
    out = _la.vector_norm(x, ord, axes, keepdims)
    if keepdims and axes is None and x.ndim:
        out = out.reshape((1,) * x.ndim)
    return out
