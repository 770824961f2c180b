"""Matrix products through cuBLAS called with ctypes, for use inside a CUDA graph capture.

CuPy 14 refuses every cuBLAS call while a stream is being captured, so ``graphs.Capture`` swaps
``cupy.matmul`` for :func:`matmul` for the duration of a capture: the same product (numpy's matmul
semantics: 1-d operands, broadcast batch dims) as one ``cublasGemmStridedBatchedEx`` call on the
capture stream, float16/bfloat16 accumulating in float32, float32 on TF32 tensor cores while
``ember.backends.cuda.matmul.allow_tf32`` is set. Other dtypes go to CuPy's own matmul (which doesn't
use cuBLAS for them). cuBLAS gets a fixed workspace so that it allocates nothing while capturing.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

from .casts import contiguous, copy_rows

__all__ = ["matmul", "available", "prepare"]

_DATA = {"float16": 2, "float32": 0, "float64": 1, "bfloat16": 14}  # cudaDataType
_COMPUTE_32F, _COMPUTE_32F_TF32, _COMPUTE_64F = 68, 77, 70       # cublasComputeType_t
_GEMM_DEFAULT = -1
_WORKSPACE = 32 << 20

_state: dict = {}


def _load():
    if "lib" in _state:
        return _state["lib"]
    lib = None
    names = ["libcublas.so.13", "libcublas.so.12"]
    try:
        import nvidia.cublas as wheel
        for d in wheel.__path__:
            names += sorted(glob.glob(os.path.join(d, "lib", "libcublas.so.*")), reverse=True)
    except ImportError:
        pass
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            lib.cublasGemmStridedBatchedEx  # noqa: B018 - the symbol must exist
            break
        except (OSError, AttributeError):
            lib = None
    _state["lib"] = lib
    return lib


def available() -> bool:
    """Whether libcublas could be loaded with ctypes."""
    return _load() is not None


def _handle(lib, device: int):
    handles = _state.setdefault("handles", {})
    h = handles.get(device)
    if h is None:
        import cupy
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
        ws = cupy.empty(_WORKSPACE, np.uint8)  # kept for the handle's lifetime
        _check(lib.cublasSetWorkspace_v2(h, ctypes.c_void_p(ws.data.ptr), ctypes.c_size_t(_WORKSPACE)),
               "cublasSetWorkspace")
        handles[device] = h
        _state.setdefault("workspaces", []).append(ws)
    return h


def prepare(device: int) -> bool:
    """Load cuBLAS and create this device's handle and workspace (outside a capture: both allocate)."""
    lib = _load()
    if lib is None:
        return False
    _handle(lib, device)
    return True


def _check(status: int, call: str) -> None:
    if status != 0:
        raise RuntimeError(f"cuBLAS {call} failed with status {status}")


def matmul(a, b, out=None, **kw):
    """numpy's ``matmul`` for CuPy arrays through one strided-batched cuBLAS GEMM (see the module)."""
    import cupy
    fallback = _state.get("cupy_matmul", cupy.matmul)
    lib = _load()
    if (out is not None or kw or lib is None or not isinstance(a, cupy.ndarray) or not isinstance(b, cupy.ndarray)
            or a.dtype != b.dtype or a.dtype.name not in _DATA or a.ndim == 0 or b.ndim == 0):
        return fallback(a, b, out=out, **kw) if out is not None else fallback(a, b, **kw)
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a[None, :]
    if vb:
        b = b[:, None]
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {k2} is different "
                         f"from {k})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = int(np.prod(batch)) if batch else 1
    c = cupy.empty(batch + (m, n), a.dtype)
    if c.size and k == 0:
        c.fill(0)
    elif c.size:
        a_arr, sa, ta = _operand(cupy, a, batch, m * k)
        b_arr, sb, tb = _operand(cupy, b, batch, k * n)
        dtype = a.dtype.name
        data = _DATA[dtype]
        from ..switches import cuda as flags
        # row-major C = A @ B is column-major C^T = B^T @ A^T: B's buffer first. A row-major buffer read
        # column-major is the transpose the product wants (op N, leading dim = its row length); an operand
        # passed as its row-major transpose is transposed back by cuBLAS (op T, leading dim = its row count)
        mp, np_, kp, c_buf = m, n, k, c
        if needs_alignment(m, n, k, a.dtype):  # every dim a multiple of 8 on padded copies (see there)
            mp, np_, kp = (-(-d // _ALIGN) * _ALIGN for d in (m, n, k))
            a_arr, sa = _padded(cupy, a_arr, (kp, mp) if ta else (mp, kp), sa)
            b_arr, sb = _padded(cupy, b_arr, (np_, kp) if tb else (kp, np_), sb)
            if (mp, np_) != (m, n):
                c_buf = cupy.empty(batch + (mp, np_), a.dtype)
        _gemm(lib, c.device.id, (np_, mp, kp), (b_arr.data.ptr, data, kp if tb else np_, sb),
              (a_arr.data.ptr, data, mp if ta else kp, sa), (c_buf.data.ptr, data, np_, mp * np_), count, dtype,
              tf32=dtype == "float32" and flags.matmul.allow_tf32, trans=(tb, ta))
        if c_buf is not c:
            if batch and mp != m:  # rows of the batches aren't evenly spaced in the padded result
                for i in np.ndindex(*batch):
                    copy_rows(cupy, c_buf[i][:m, :n], c[i])
            else:
                copy_rows(cupy, c_buf[..., :m, :n], c)
    if va:
        c = c[..., 0, :]
    if vb:
        c = c[..., 0]
    return c


def _gemm(lib, device: int, mnk: tuple, a: tuple, b: tuple, c: tuple, count: int, dtype: str,
          tf32: bool = False, trans: tuple = (False, False)) -> None:
    """C = op(A) op(B) (column-major; op transposes where ``trans`` says) for ``count`` matrices, on the
    current stream: ``a``, ``b`` and ``c`` are (pointer, cudaDataType, leading dimension, batch stride);
    16-bit inputs and float32 accumulate in float32 (on TF32 tensor cores when ``tf32``), float64 in
    float64."""
    import cupy
    if dtype == "float64":
        compute, alpha, beta = _COMPUTE_64F, ctypes.c_double(1.0), ctypes.c_double(0.0)
    else:
        compute, alpha, beta = (_COMPUTE_32F_TF32 if tf32 else _COMPUTE_32F), ctypes.c_float(1.0), ctypes.c_float(0.0)
    h = _handle(lib, device)
    _check(lib.cublasSetStream_v2(h, ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)), "cublasSetStream")
    ll, ptr = ctypes.c_longlong, ctypes.c_void_p
    _check(lib.cublasGemmStridedBatchedEx(
        h, int(trans[0]), int(trans[1]), *mnk, ctypes.byref(alpha), ptr(a[0]), a[1], a[2], ll(a[3]),
        ptr(b[0]), b[1], b[2], ll(b[3]), ctypes.byref(beta), ptr(c[0]), c[1], c[2], ll(c[3]), count, compute,
        _GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx")


# cuBLAS runs 16-bit products on its fast tensor-core kernels only when every dim and leading dim is a whole number
# of 16-byte pieces; one odd dim (GPT-2's 50,257-word vocabulary) sends the product to kernels several times
# slower (the LM head's three GEMMs: 15 ms of a 124M-parameter training step on an H200). A large product with
# an odd dim runs on copies padded to multiples of 8 elements (zeros where the padding meets the summed dim k;
# padded rows and columns of the result are dropped) and copies the result out: three passes over the large
# matrix instead of a kernel several times slower.
_ALIGN = 8
_ALIGN_WORK = 1 << 27  # m * n * k from which the copies cost less than the slow kernels


def needs_alignment(m: int, n: int, k: int, dtype) -> bool:
    """Whether a 16-bit (m, k) @ (k, n) product is large enough, with a dim cuBLAS's aligned kernels refuse, to
    be worth running on padded copies (``matmul`` does; 2-d products go there for it)."""
    return np.dtype(dtype).itemsize == 2 and m * n * k >= _ALIGN_WORK and bool(m % _ALIGN or n % _ALIGN
                                                                                or k % _ALIGN)


def _padded(cupy, arr, shape: tuple, stride: int):
    """(arr as C-contiguous (..., rows, cols) matrices of ``shape``, batch stride): ``arr`` itself when it has
    that shape and a 16-byte aligned base, else a copy, zeros in the padding."""
    rows, cols = arr.shape[-2:]
    if (rows, cols) == shape and arr.data.ptr % 16 == 0:
        return arr, stride
    buf = cupy.empty(arr.shape[:-2] + shape, arr.dtype)
    copy_rows(cupy, arr, buf[..., :rows, :])
    if shape[0] > rows:
        buf[..., rows:, :] = 0
    return buf, 0 if stride == 0 else shape[0] * shape[1]


def _operand(cupy, x, batch, size):
    """(C-contiguous array, batch stride in elements, transposed): stride 0 for a matrix shared by the whole
    batch. A matrix stored column by column (a transposed view: attention's kᵀ, the weights' transpose in
    its backward) comes as its row-major transpose, for cuBLAS to transpose back, instead of being copied
    element by element."""
    transposed = x.shape[-1] > 1 and x.strides[-2] == x.itemsize and x.strides[-1] != x.itemsize
    if transposed:
        x = x.swapaxes(-1, -2)
    if x.ndim == 2 or all(d == 1 for d in x.shape[:-2]):
        return contiguous(cupy, x.reshape(x.shape[-2:])), 0, transposed  # permuted heads: 16 bytes a thread
    if tuple(x.shape[:-2]) != tuple(batch):
        x = cupy.broadcast_to(x, tuple(batch) + x.shape[-2:])
    return contiguous(cupy, x), size, transposed


# ---- sums over leading axes as one GEMM -------------------------------------------------------------------
# A bias gradient is the (N, C) gradient summed over its N rows. CuPy reduces bfloat16 by copying it to float32
# first and reduces along the slow axis with a generic kernel; ones(N) @ x reads x once at memory speed on the
# tensor cores (16-bit inputs accumulate in float32, float32 stays exact FFMA: no TF32 here).
_ones: dict = {}  # (device, dtype) -> a ones vector, grown on demand (never created inside a capture)
_SUM_OUT = {("bfloat16", "bfloat16"), ("bfloat16", "float32"), ("float16", "float16"), ("float16", "float32"),
            ("float32", "float32"), ("float64", "float64")}


def row_sum(x, out_dtype, capturing: bool = False):
    """The (C,) sums of the rows of a C-contiguous 2-d CuPy array ``x`` (N, C) as ``out_dtype``, one GEMM;
    None when this path doesn't apply (dtype pair, no cuBLAS, no ones vector yet inside a capture)."""
    import cupy
    lib = _load()
    pair = (x.dtype.name, np.dtype(out_dtype).name)
    if lib is None or pair not in _SUM_OUT or x.ndim != 2 or not x.flags.c_contiguous:
        return None
    n, c = x.shape
    key = (x.device.id, x.dtype)
    ones = _ones.get(key)
    if ones is None or ones.size < n:
        if capturing:  # filling it would only be recorded, not run
            return None
        ones = _ones[key] = cupy.ones(max(n, 1024), x.dtype)
    out = cupy.empty(c, out_dtype)
    # row-major (1, N) @ (N, C) is column-major (C, N) @ (N, 1): x's buffer is A with leading dimension C
    _gemm(lib, x.device.id, (c, 1, n), (x.data.ptr, _DATA[pair[0]], c, 0), (ones.data.ptr, _DATA[pair[0]], n, 0),
          (out.data.ptr, _DATA[pair[1]], c, c), 1, pair[0])
    return out
