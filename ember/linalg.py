"""ember.linalg: linear algebra with torch.linalg's names and semantics.

Every function takes batches (leading dims) of matrices. Decompositions and solvers run on the
backend's LAPACK-like primitives (``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``, ``qr``,
``svd``, ``svdvals``, ``eigh``, ``eigvalsh``) in float32/float64, as PyTorch's CPU kernels do
(half-precision inputs are refused, like PyTorch); norms, ``pinv``, ``lstsq``, ``matrix_rank``,
``matrix_power``, ``cross``, ``vecdot`` and ``multi_dot`` are compositions of ember ops.

>>> A = ember.tensor([[2.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.solve(A, ember.tensor([3.0, 5.0]))
tensor([0.8000, 1.4000])
"""

# ruff: noqa: A002 - PyTorch's argument names (input, min, max, sorted, ord) shadow builtins

from __future__ import annotations

import math
from collections import namedtuple

from . import _dtype as dt
from ._errors import LinAlgError
from ._linalg_ops import _cross, _multi_dot, matmul
from ._shape import broadcast_shapes, norm_dim
from ._tensor import Tensor, same_device, wrap

__all__ = [
    "LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "qr",
    "cholesky", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "lstsq", "matrix_rank", "matrix_power",
    "cross", "multi_dot", "vecdot", "diagonal", "matmul",
]


class _types:  # noqa: N801 - the names of torch.return_types.linalg_*
    slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
    qr = namedtuple("linalg_qr", ["Q", "R"])
    svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
    eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
    lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# ---- argument checks ---------------------------------------------------------------------------
def _float_input(A: Tensor, op: str):
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}(): expected a Tensor, got {type(A).__name__}")
    if not A._dtype.is_floating_point:
        raise RuntimeError(f"linalg.{op}: Expected a floating point tensor as input. Got {A._dtype.name}")


def _lapack_input(A: Tensor, op: str, square: bool = True):
    """Checks for the decompositions: >= 2-d, float32/float64, square when asked."""
    _float_input(A, op)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if A._dtype.itemsize < 4:
        raise NotImplementedError(f"linalg.{op}: Low precision dtypes not supported. Got {A._dtype.name}; "
                                  "convert the input with .float() first")
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")


def _run(op: str, inputs: tuple, attrs: dict, shapes, dtypes):
    """Dispatch a multi-output primitive and wrap each result."""
    dev = inputs[0]._device
    hs = dev.backend.run(op, tuple(x._h for x in inputs), attrs)
    if not isinstance(hs, tuple):
        return wrap(hs, shapes, dtypes, dev)
    return tuple(wrap(h, s, d, dev) for h, s, d in zip(hs, shapes, dtypes))


def _eps(d: dt.dtype) -> float:
    return dt.finfo(d).eps


# ---- norms -------------------------------------------------------------------------------------
def _norm_dtype(x: Tensor, dtype, op: str) -> Tensor:
    _float_input(x, op)
    if dtype is None:
        return x
    d = dt.as_dtype(dtype)
    if not d.is_floating_point:
        raise RuntimeError(f"linalg.{op}: dtype should be floating point, but got {d.name}")
    if dt.promote_types(x._dtype, d) is not d:
        raise RuntimeError(f"linalg.{op}: the dtype of the input ({x._dtype.name}) should be convertible "
                           f"without narrowing to the specified dtype ({d.name})")
    return x.to(d)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (all elements by default): ``ord`` is any real number,
    ``inf`` (max |x|), ``-inf`` (min |x|) or 0 (the count of nonzeros).

    >>> ember.linalg.vector_norm(ember.tensor([3.0, -4.0]))
    tensor(5.)
    """
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be a number, not {type(ord).__name__}")
    x = _norm_dtype(x, dtype, "vector_norm")
    if x._dtype.itemsize < 4:  # half precision accumulates in float32, as PyTorch's kernel does
        return vector_norm(x.float(), ord, dim, keepdim).to(x._dtype)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    if isinstance(dim, int):
        dim = (dim,)
    if abs(ord) == math.inf:
        dims = range(x.ndim) if dim is None else [norm_dim(d, x.ndim, "linalg.vector_norm") for d in dim]
        empty = x.numel() == 0 if dim is None else any(x._shape[d] == 0 for d in dims if x.ndim)
        if empty:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                               "the operation does not have an identity")
        from ._reduction import select_evenly
        a = x.abs()
        d_arg = () if dim is None else dim
        # PyTorch's inf-norm gradient: shared by the elements of largest |x| (NaN ones included, whose
        # sign() is 0), so not amax's, which is NaN for a slice holding a NaN
        return select_evenly(a, lambda t: t.amax(d_arg, keepdim) if ord > 0 else t.amin(d_arg, keepdim),
                             None if dim is None else tuple(sorted(dims)) if x.ndim else (), keepdim)
    if ord == 0:
        from ._elementwise import zero_grad_from
        # the count of nonzeros has a zero gradient (PyTorch gives x none, or zeros)
        return zero_grad_from((x != 0).sum(dim, keepdim).to(x._dtype), x.sum(dim, keepdim))
    if ord == 1:
        return x.abs().sum(dim, keepdim)
    if ord == 2:
        return (x * x).sum(dim, keepdim).sqrt()
    return (x.abs() ** ord).sum(dim, keepdim) ** (1.0 / ord)


def _matrix_dims(A: Tensor, dim, op: str) -> tuple[int, int]:
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = norm_dim(dim[0], A.ndim, op), norm_dim(dim[1], A.ndim, op)
    if d0 == d1:
        raise RuntimeError(f"linalg.{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _to_back(A: Tensor, d0: int, d1: int) -> Tensor:
    """A with dims d0, d1 moved last (in that order)."""
    rest = [d for d in range(A.ndim) if d not in (d0, d1)]
    return A.permute(rest + [d0, d1])


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc' (sum of singular values), 2 / -2 (largest /
    smallest singular value), 1 / -1 (max / min column sum of |A|), inf / -inf (max / min row sum).

    >>> ember.linalg.matrix_norm(ember.eye(3), "nuc")
    tensor(3.)
    """
    _float_input(A, "matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _matrix_dims(A, dim, "matrix_norm")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf) or isinstance(ord, bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2) and A._dtype.itemsize < 4:  # checked before any dtype= conversion, as in PyTorch
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {A._dtype.name}")
    A = _norm_dtype(A, dtype, "matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        if ord == 2 and A.numel() == 0:  # the norm of an empty matrix is 0; min/max need elements
            return _empty_norm(A, d0, d1, keepdim)
        s = svdvals(_to_back(A, d0, d1))
        if ord == "nuc":
            out = s.sum(-1)
        elif s._shape[-1] == 0:
            raise IndexError("linalg.matrix_norm: the -2 norm of an empty matrix is undefined (no singular values)")
        else:
            out = s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    # 1 / -1: reduce |A| over rows (d0) then take max/min over columns; inf / -inf: the transpose
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    if ord > 0 and A.numel() == 0:
        return _empty_norm(A, d0, d1, keepdim)
    col = A.abs().sum(d0, keepdim=True)
    if col._shape[d1] == 0:
        raise IndexError(f"linalg.matrix_norm: the {ord} norm needs a non-empty dimension {d1} "
                         f"(input shape {list(A._shape)})")
    out = col.amax(d1, keepdim=True) if ord > 0 else col.amin(d1, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def _empty_norm(A: Tensor, d0: int, d1: int, keepdim: bool) -> Tensor:
    from ._creation import zeros
    from ._elementwise import zero_grad_from
    shape = tuple(1 if i in (d0, d1) else n for i, n in enumerate(A._shape)) if keepdim else \
        tuple(n for i, n in enumerate(A._shape) if i not in (d0, d1))
    return zero_grad_from(zeros(shape, dtype=A._dtype, device=A._device), A.sum((d0, d1), keepdim))


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector or matrix norm: a string ``ord`` or a 2-tuple ``dim`` means a matrix norm; otherwise a
    vector norm (the 2-norm of all elements when neither ord nor dim is given).

    >>> ember.linalg.norm(ember.ones(2, 2))
    tensor(2.)
    """
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
    if dim is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype)
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    dim = tuple(dim)
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")


# ---- determinants and inverses -----------------------------------------------------------------
def det(A: Tensor) -> Tensor:
    """Determinant of each square matrix in A (1 for 0x0 matrices)."""
    _lapack_input(A, "det")
    return _run("det", (A,), {}, A._shape[:-2], A._dtype)


def slogdet(A: Tensor):
    """(sign, log|det|): sign 0 and logabsdet -inf for singular matrices."""
    _lapack_input(A, "slogdet")
    b = A._shape[:-2]
    return _types.slogdet(*_run("slogdet", (A,), {}, (b, b), (A._dtype, A._dtype)))


def inv(A: Tensor) -> Tensor:
    """Inverse of each square matrix in A; raises LinAlgError for singular matrices.

    >>> ember.linalg.inv(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _lapack_input(A, "inv")
    return _run("inv", (A,), {}, A._shape, A._dtype)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A to the integer power n by repeated squaring; n = 0 gives the identity, n < 0 uses inv(A)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_power(): expected a Tensor, got {type(A).__name__}")
    if A.ndim < 2 or A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{list(A._shape[-2:])} matrices")
    if n == 0:
        from ._creation import eye
        from ._elementwise import zero_grad_from
        out = eye(A._shape[-1], dtype=A._dtype, device=A._device).expand(A._shape).contiguous()
        return zero_grad_from(out, A)  # PyTorch: A gets a zero gradient
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A.clone()
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


# ---- solvers -----------------------------------------------------------------------------------
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``). B is a batch of vectors when it
    is 1-d or has shape ``A.shape[:-1]``; otherwise a batch of matrices. Batch dims broadcast."""
    _lapack_input(A, "solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): expected B to be a Tensor, got {type(B).__name__}")
    if B.ndim < 1:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    same_device("linalg.solve", A, B)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A._dtype.name} and B of type {B._dtype.name} instead")
    n = A._shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    rows = Bm._shape[-2] if left else Bm._shape[-1]
    if rows != n or (vector and not left):
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {Bm._shape[-2]}x{Bm._shape[-1]})")
    batch = broadcast_shapes(A._shape[:-2], Bm._shape[:-2])
    shape = batch + Bm._shape[-2:]
    X = _run("solve", (A, Bm), {"left": bool(left)}, shape, A._dtype)
    return X.squeeze(-1) if vector else X


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Cholesky factor L (A = L L^T) of symmetric positive-definite matrices, read from A's lower
    triangle; ``upper=True`` gives U = L^T, read from the upper triangle. Raises LinAlgError when A
    is not positive-definite."""
    _lapack_input(A, "cholesky")
    return _run("cholesky", (A,), {"upper": bool(upper)}, A._shape, A._dtype)


def qr(A: Tensor, mode: str = "reduced"):
    """QR decomposition (Q, R) with mode 'reduced' (Q is m x k), 'complete' (Q is m x m) or 'r'
    (only R; Q is empty). k = min(m, n)."""
    _lapack_input(A, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")
    *b, m, n = A._shape
    b = tuple(b)
    k = min(m, n)
    if mode == "r":
        q_shape, r_shape = (0,), b + (k, n)
    elif mode == "complete":
        q_shape, r_shape = b + (m, m), b + (m, n)
    else:
        q_shape, r_shape = b + (m, k), b + (k, n)
    return _types.qr(*_run("qr", (A,), {"mode": mode}, (q_shape, r_shape), (A._dtype, A._dtype)))


def _check_driver(driver, op: str):
    if driver is not None:
        raise RuntimeError(f"linalg.{op}: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """Singular value decomposition A = U diag(S) Vh, singular values in descending order. The signs
    of singular vectors are not unique; compare reconstructions, not factors."""
    _lapack_input(A, "svd", square=False)
    _check_driver(driver, "svd")
    *b, m, n = A._shape
    b = tuple(b)
    k = min(m, n)
    shapes = (b + ((m, m) if full_matrices else (m, k)), b + (k,), b + ((n, n) if full_matrices else (k, n)))
    return _types.svd(*_run("svd", (A,), {"full_matrices": bool(full_matrices)}, shapes, (A._dtype,) * 3))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """Singular values of A in descending order."""
    _lapack_input(A, "svd", square=False)
    _check_driver(driver, "svdvals")
    return _run("svdvals", (A,), {}, A._shape[:-2] + (min(A._shape[-2:]),), A._dtype)


def _uplo(UPLO: str) -> str:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


def eigh(A: Tensor, UPLO: str = "L"):  # noqa: N803 - torch's argument name
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, read from the triangle UPLO."""
    _lapack_input(A, "eigh")
    uplo = _uplo(UPLO)
    shapes = (A._shape[:-1], A._shape)
    return _types.eigh(*_run("eigh", (A,), {"uplo": uplo}, shapes, (A._dtype, A._dtype)))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """Eigenvalues (ascending) of symmetric matrices."""
    _lapack_input(A, "eigvalsh")
    return _run("eigvalsh", (A,), {"uplo": _uplo(UPLO)}, A._shape[:-1], A._dtype)


def _tolerances(A: Tensor, atol, rtol, op: str):
    """PyTorch's defaults: with neither given, rtol = eps * max(m, n); an atol > 0 alone means rtol = 0."""
    if rtol is None:
        rtol = 0.0 if (atol is not None and (isinstance(atol, Tensor) or atol > 0)) else \
            _eps(A._dtype) * max(A._shape[-2:])
    return (0.0 if atol is None else atol), rtol


def _cutoff(s: Tensor, atol, rtol) -> Tensor:
    """max(atol, rtol * s_max) per matrix, shaped (..., 1) to compare with s (..., k)."""
    smax = s.amax(-1, keepdim=True)
    rt = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    at = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    from ._elementwise import maximum
    return maximum(smax * rt, at)


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD (eigh when ``hermitian``), dropping singular values
    <= max(atol, rtol * s_max). ``rcond`` is the older name of rtol."""
    _float_input(A, "pinv")
    if A.ndim < 2 or A._dtype.itemsize < 4:
        raise RuntimeError(f"linalg.pinv({A._dtype.name}{list(A._shape)}): expected a tensor with 2 or more "
                           "dimensions of float or double types")
    if rcond is not None:
        rtol = rcond
    atol, rtol = _tolerances(A, atol, rtol, "pinv")
    m, n = A._shape[-2:]
    if A.numel() == 0:
        from ._creation import zeros
        from ._elementwise import zero_grad_from
        return zero_grad_from(zeros(A._shape[:-2] + (n, m), dtype=A._dtype, device=A._device), A.mT)
    from ._elementwise import where
    if hermitian:
        w, V = eigh(A)
        s = w.abs()
        keep = s > _cutoff(s, atol, rtol)
        winv = where(keep, 1 / where(keep, w, 1.0), 0.0)  # 1/0 never formed: its gradient would be NaN
        return matmul(V * winv.unsqueeze(-2), V.mT)
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _cutoff(S, atol, rtol)
    sinv = where(keep, 1 / where(keep, S, 1.0), 0.0)  # 1/0 never formed: its gradient would be NaN
    return matmul(Vh.mT, sinv.unsqueeze(-1) * U.mT)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """Number of singular values > max(atol, rtol * s_max) (int64). ``tol`` is the older name of atol."""
    _float_input(A, "matrix_rank")
    if A._dtype.itemsize < 4:
        raise RuntimeError("linalg.matrix_rank: This function doesn't handle types other than float and double")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor A must have at least 2 dimensions.")
    if tol is not None:
        atol, rtol = tol, 0.0
    if hermitian and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"linalg.eigh: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")
    atol, rtol = _tolerances(A, atol, rtol, "matrix_rank")
    if 0 in A._shape[-2:]:
        from ._creation import zeros
        return zeros(A._shape[:-2], dtype=dt.int64, device=A._device)
    s = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (s > _cutoff(s, atol, rtol)).sum(-1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` for A of shape (..., m, n) and B (..., m, k) or (..., m).

    Returns (solution, residuals, rank, singular_values) filled as PyTorch's CPU drivers fill them:
    the default 'gelsy' gives the solution and rank; 'gelsd'/'gelss' add singular values and, when
    m > n and A has full rank, the squared residuals; 'gels' (full rank assumed) gives residuals for
    m > n and no rank. Rank-deficient systems get the minimum-norm solution; singular values below
    ``rcond * s_max`` (default eps * max(m, n)) count as zero.
    """
    for x in (A, B):
        _float_input(x, "lstsq")
        if x._dtype.itemsize < 4:
            raise RuntimeError("torch.linalg.lstsq: This function doesn't handle types other than float and double")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A._dtype.name} and other's dtype {B._dtype.name}")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of ({', '.join(_DRIVERS)})")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm._shape[-2] != A._shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (shapes "
                           f"{list(A._shape)} and {list(B._shape)})")
    m, n = A._shape[-2:]
    k = Bm._shape[-1]
    batch = broadcast_shapes(A._shape[:-2], Bm._shape[:-2])
    if rcond is None:
        rcond = _eps(A._dtype) * max(m, n)
    from ._creation import zeros
    from ._elementwise import where
    if min(m, n) == 0:
        from ._elementwise import zero_grad_from  # A and B get (empty or zero) gradients, as in PyTorch
        X = zero_grad_from(zeros(batch + (n, k), dtype=A._dtype, device=A._device), A.sum(-2, keepdim=True).mT,
                           Bm.sum(-2, keepdim=True))
        S = zeros(A._shape[:-2] + (0,), dtype=A._dtype, device=A._device)
        rank = zeros(A._shape[:-2], dtype=dt.int64, device=A._device)
    else:
        U, S, Vh = svd(A, full_matrices=False)
        keep = S > S.amax(-1, keepdim=True) * rcond
        sinv = where(keep, 1 / where(keep, S, 1.0), 0.0)  # 1/0 kept out of the gradient too (0 * inf = NaN)
        X = matmul(Vh.mT, sinv.unsqueeze(-1) * matmul(U.mT, Bm))
        rank = keep.sum(-1)
    empty_f = zeros((0,), dtype=A._dtype, device=A._device)
    # residuals are differentiable even when empty (as in PyTorch); the singular values are not
    residuals = X.reshape(-1)[:0]
    full_rank = m > n and (driver == "gels" or bool((rank == n).all()))
    if driver != "gelsy" and full_rank:
        r = matmul(A, X) - Bm
        residuals = (r * r).sum(-2)
    if driver == "gels":
        rank, S = zeros((0,), dtype=dt.int64, device=A._device), empty_f
    elif driver == "gelsy":
        S = empty_f
    return _types.lstsq(X.squeeze(-1) if vector else X, residuals, rank, S.detach())


# ---- products ----------------------------------------------------------------------------------
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default the last); batch dims broadcast."""
    return _cross(input, other, dim, "linalg.cross")


def multi_dot(tensors) -> Tensor:
    """Product of a chain of matrices in the cheapest order; the first and last may be 1-d vectors.

    >>> ember.linalg.multi_dot([ember.ones(3), ember.ones(3, 4), ember.ones(4)])
    tensor(12.)
    """
    return _multi_dot(tensors, "multi_dot")


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of vectors along ``dim``; other dims broadcast."""
    _float_input(x, "vecdot")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x._dtype.name} and y of type {y._dtype.name} instead")
    return (x * y).sum(dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A view of the diagonals of the matrices in A (last two dims by default)."""
    return A.diagonal(offset, dim1, dim2)

