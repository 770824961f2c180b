"""Matrix products and decompositions on the CUDA backend: cuBLAS and cuSOLVER through CuPy.

float16/bfloat16 products accumulate in float32 (cuBLAS compute type 32F); float32 products use TF32
tensor cores only while ``ember.backends.cuda.matmul.allow_tf32`` is True (PyTorch's switch and
default, False). The switch is read at each product and pushed into CuPy's per-dtype compute type
when it changed, so flipping it takes effect at once.

Decompositions (inv, det, slogdet, solve, cholesky, qr, svd, svdvals, eigh, eigvalsh) call
``cupy.linalg``, which handles batches of float32/float64 matrices (batched getrf/getri, potrf, geqrf,
gesvdj, syevj; the frontend refuses half precision as PyTorch does). Where numpy raises LinAlgError
(singular ``inv``/``solve``, ``cholesky`` of a matrix that is not positive-definite, no convergence),
CuPy's checks run under ``cupyx.errstate(linalg="raise")``: they read cuSOLVER's status from the device,
a sync that PyTorch's CUDA linalg does too. ``det``/``slogdet`` never raise and don't sync. Empty
matrices and batches take the host path: nothing is copied, and the reference defines their shapes
(identity factors and all).
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..._errors import LinAlgError
from . import cublas
from ._util import LOW
from .indexing import HostPath

# numpy's words for a failure, which on the GPU only reports a status code
_FAILED = {"inv": "Singular matrix", "solve": "Singular matrix", "cholesky": "Matrix is not positive definite",
           "qr": "QR did not converge", "svd": "SVD did not converge", "svdvals": "SVD did not converge",
           "eigh": "Eigenvalues did not converge", "eigvalsh": "Eigenvalues did not converge"}

_BF16 = LOW[-1]


class _ComputeType:
    """Keeps CuPy's cuBLAS compute types in line with ember's allow_tf32 flag."""

    def __init__(self, xp):
        self.gpu = xp is not np
        self.tf32 = None
        if self.gpu:
            from cupy._core import _routines_linalg as rl
            self.rl = rl
            for d in LOW:  # fp32 accumulation for half precision
                try:
                    rl.set_compute_type(d, rl.COMPUTE_TYPE_FP32)
                except Exception:  # noqa: BLE001 - a CuPy that doesn't know the dtype keeps its default (FP32)
                    pass

    def sync(self) -> None:
        from ..switches import cuda as flags
        want = bool(flags.matmul.allow_tf32)
        if want is not self.tf32 and self.gpu:
            rl = self.rl
            rl.set_compute_type(np.float32, rl.COMPUTE_TYPE_TF32 if want else rl.COMPUTE_TYPE_DEFAULT)
        self.tf32 = want


def build(xp) -> dict:
    ct = _ComputeType(xp)
    from ..switches import cuda as flags
    matmul_flags = flags.matmul

    def _matmul(a, b):
        if matmul_flags.allow_tf32 is not ct.tf32:
            ct.sync()
        if a.dtype.kind == "b":
            return xp.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        if a.dtype == _BF16:
            return _bf16_matmul(a, b)
        return xp.matmul(a, b)

    def _bf16_matmul(a, b):
        """CuPy 14 multiplies bfloat16 as plain 2-d GEMMs only: fold a's batch dims into rows when b is
        a matrix; batched products (attention's q @ kᵀ) go to one strided-batched cuBLAS GEMM
        accumulating in float32 (cublas.matmul); without cuBLAS through ctypes, compute in float32
        (exact products of bfloat16 inputs) and round once."""
        try:
            if b.ndim == 2 and a.ndim >= 2 and ct.gpu and b.dtype == a.dtype:
                rows = a.size // a.shape[-1] if a.shape[-1] else 0
                if cublas.needs_alignment(rows, b.shape[-1], a.shape[-1], a.dtype) and cublas.available():
                    a2 = a if a.ndim == 2 else a.reshape(-1, a.shape[-1])  # odd rows: aligned copies, cuBLAS
                    return cublas.matmul(a2, b).reshape(a.shape[:-1] + (b.shape[-1],))
            if a.ndim == 2 and b.ndim == 2:
                return _as(xp.matmul(a, b), a.dtype)
            if b.ndim == 2 and a.ndim > 2:
                r = xp.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
                return _as(r, a.dtype)
        except TypeError:  # a layout CuPy's bfloat16 GEMM refuses ("data type 'E' not understood")
            pass
        if ct.gpu and a.ndim >= 2 and b.ndim >= 2 and b.dtype == a.dtype:
            if cublas.available():
                return cublas.matmul(a, b)
        return xp.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)

    def _as(r, dtype):
        # numpy (the tests' stand-in for CuPy) multiplies ml_dtypes' bfloat16 into float32
        return r if r.dtype == dtype else r.astype(dtype)

    ops = {"matmul": _matmul}
    ops.update(_decompositions(xp))
    return ops


def _decompositions(xp) -> dict:
    gpu = xp is not np
    la = xp.linalg

    def checked(name, fn):
        """Runs ``fn`` with failures raised (a sync on the GPU), as ember's LinAlgError naming the op."""
        def run(a, *args, **kw):
            if a.size == 0 or any(b.size == 0 for b in args if isinstance(b, xp.ndarray)):
                raise HostPath  # empty: shapes only, nothing to copy
            if gpu:
                import cupyx
                guard = cupyx.errstate(linalg="raise")
            else:
                guard = np.errstate(all="ignore")
            try:
                with guard:
                    return fn(a, *args, **kw)
            except np.linalg.LinAlgError as e:  # CuPy raises numpy's class, with cuSOLVER's status
                raise LinAlgError(f"linalg.{name}: {_FAILED[name] if gpu else e}") from None
        run.__name__ = name
        return run

    def quiet(fn):
        def run(a, *args, **kw):
            if a.size == 0:
                raise HostPath
            with contextlib.nullcontext() if gpu else np.errstate(all="ignore"):
                return fn(a, *args, **kw)
        return run

    def _inv(a):
        return la.inv(a)

    def _det(a):
        return xp.asarray(la.det(a))

    def _slogdet(a):
        sign, logabs = la.slogdet(a)
        return xp.asarray(sign), xp.asarray(logabs)

    def _solve(a, b, left=True):
        # b is a (batch of) matrix; CuPy wants equal batch dims, numpy broadcasts: give both the same
        if not left:  # X A = B  <=>  A^T X^T = B^T
            return xp.swapaxes(_solve(xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2)), -1, -2)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        if a.shape[:-2] != batch:
            a = xp.broadcast_to(a, batch + a.shape[-2:])
        if b.shape[:-2] != batch:
            b = xp.broadcast_to(b, batch + b.shape[-2:])
        return la.solve(a, b)

    def _cholesky(a, upper=False):
        if upper:  # PyTorch's upper=True reads the upper triangle: factor A^T and transpose back
            return xp.ascontiguousarray(xp.swapaxes(la.cholesky(xp.swapaxes(a, -1, -2)), -1, -2))
        return la.cholesky(a)

    def _qr(a, mode="reduced"):
        if mode == "r":
            return xp.empty((0,), a.dtype), la.qr(a, mode="r")
        q, r = la.qr(a, mode=mode)
        return q, r

    def _svd(a, full_matrices=True):
        u, s, vh = la.svd(a, full_matrices=full_matrices)
        return u, s, vh

    def _svdvals(a):
        return la.svd(a, compute_uv=False)

    def _eigh(a, uplo="L"):
        w, v = la.eigh(a, UPLO=uplo)
        return w, v

    def _eigvalsh(a, uplo="L"):
        return la.eigvalsh(a, UPLO=uplo)

    ops = {name: checked(name, fn) for name, fn in {
        "inv": _inv, "solve": _solve, "cholesky": _cholesky, "qr": _qr, "svd": _svd, "svdvals": _svdvals,
        "eigh": _eigh, "eigvalsh": _eigvalsh}.items()}
    ops["det"], ops["slogdet"] = quiet(_det), quiet(_slogdet)
    return ops
