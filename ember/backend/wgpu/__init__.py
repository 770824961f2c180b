"""The WebGPU backend: ember tensors in wgpu storage buffers, ops as generated WGSL compute shaders.

``ember.device("wgpu")`` (the adapter wgpu prefers for high performance) or ``"wgpu:N"`` (adapter N
of :func:`ember.wgpu.adapters`) builds ``Autodiff(Wgpu(N))``. Handles are strided views of a storage
buffer (:class:`~.handle.WH`), so view ops never copy. Elementwise ops, casts, reductions, matmul,
copies, gathers and scatters, conv (im2col/col2im plus matmul), max pooling and rand/randn run as
generated WGSL kernels (``ops.GPU``); the rarer ops, and every float64 op, run on the host through
the numpy backend (read, compute, write back), counted by :func:`ember.wgpu.host_ops`. See
``docs/wgpu.md``.
"""

from __future__ import annotations

import collections

import numpy as np

from ... import _dtype as D
from ..base import PRIMITIVES, UnsupportedOp
from . import dtypes as T
from . import ops as _ops
from .handle import WH, contiguous_strides
from .runtime import get as _runtime

__all__ = ["Wgpu", "make_stack", "host_ops"]

# op name -> times it ran on the host, over every Wgpu backend in this process
HOST_COUNTS: collections.Counter = collections.Counter()


def host_ops() -> dict:
    """{op: count} of ops that ran through the host path so far in this process."""
    return dict(HOST_COUNTS)


def _layout(h: WH) -> tuple:
    """(32-bit words per element, numpy dtype of the stored elements) of a handle's storage."""
    if h.st.wide:
        return 2, np.int64
    return T.words(h.dtype), T.np_stored(h.dtype)


def _is_inplace(op: str) -> bool:
    return op.endswith("_") or op == "assign"


class Wgpu:
    """WebGPU storage and compute through wgpu-py. Device type ``wgpu``.

    >>> import ember
    >>> x = ember.ones(3, device="wgpu")  # doctest: +SKIP
    >>> (x * 2).sum().item()  # doctest: +SKIP
    6.0
    """

    name = "wgpu"
    device_type = "wgpu"
    cube_device = "wgpu"  # where Fusion's kernels run (ember/backend/fusion/target_wgpu.py)

    def __init__(self, index: int | None = None):
        self.index = index
        self.rt = _runtime(index)
        self._numpy = None

    # ---- protocol ------------------------------------------------------------------------------
    def run(self, op: str, inputs: tuple, attrs: dict):
        if attrs.get("dtype") in T.HOST_DTYPES or any(isinstance(v, WH) and (v.dtype in T.HOST_DTYPES or v.st.wide)
                                                      for v in inputs):
            return self._run_host_dtype(op, inputs, attrs)
        fn = _ops.GPU.get(op)
        if fn is not None:
            out = fn(self, *inputs, **attrs)
            if out is not NotImplemented:
                return out
        if _is_inplace(op) or not (op in PRIMITIVES or op in _ops.GPU):
            raise UnsupportedOp(self.name, op)
        return self.host(op, inputs, attrs)

    def _run_host_dtype(self, op, inputs, attrs):
        # float64 (no WGSL type): views are metadata as for every dtype; the rest computes on the host
        if op in _ops.VIEWS and not (op == "reshape" and not _ops.can_view(inputs[0], attrs["shape"])):
            return _ops.GPU[op](self, *inputs, **attrs)
        if op == "assign":
            dst, src = inputs
            self.host_assign(dst, self.read(src) if isinstance(src, WH) else src)
            return dst
        if op == "index_put_":
            new = self.host("index_put", inputs, attrs)
            self.host_assign(inputs[0], self.read(new))
            return inputs[0]
        if op in ("contiguous", "copy"):
            x = inputs[0]
            return x if op == "contiguous" and x.is_contiguous() else self.write(self.read(x))
        if _is_inplace(op) or not (op in PRIMITIVES or op in _ops.GPU):
            raise UnsupportedOp(self.name, op)
        return self.host(op, inputs, attrs)

    def host_assign(self, dst: WH, value) -> None:
        """Write a host value (array broadcast to dst's shape, or scalar) into dst's memory."""
        if dst.numel == 0:
            return
        from .movement import check_writable
        check_writable(dst)
        w, npt = _layout(dst)
        if dst.dtype is D.int64 and not dst.st.wide:
            T.to_words(np.asarray(value), D.int64)  # the range check: a 32-bit storage can't take wider values
        data = np.broadcast_to(np.asarray(value).astype(dst.dtype.np).astype(npt), dst.shape)
        if dst.is_contiguous():
            self.rt.write_words(dst.st, dst.offset * w, np.ascontiguousarray(data, dtype=npt))
            return
        extent = 1 + sum((s - 1) * st for s, st in zip(dst.shape, dst.strides) if s > 0)
        span = self.rt.download(dst.st, dst.offset * w, extent * w).view(npt)
        view = np.lib.stride_tricks.as_strided(span, dst.shape, tuple(s * span.itemsize for s in dst.strides))
        view[...] = data
        self.rt.write_words(dst.st, dst.offset * w, span)

    def supports(self, op: str) -> bool:
        if op in _ops.GPU:
            return True
        return op in PRIMITIVES and not _is_inplace(op)

    def host(self, op: str, inputs: tuple, attrs: dict):
        """Run ``op`` through the numpy backend: read the inputs, compute, write the results back."""
        if self._numpy is None:
            from ..numpy import Numpy
            self._numpy = Numpy()
        HOST_COUNTS[op] += 1
        args = tuple(self._to_host(v) for v in inputs)
        out = self._numpy.run(op, args, attrs)
        return self._from_host(out)

    def _to_host(self, v):
        if isinstance(v, WH):
            return self.read(v)
        if isinstance(v, (list, tuple)) and any(isinstance(x, WH) for x in v):
            return type(v)(self._to_host(x) for x in v)
        return v

    def _from_host(self, out):
        if isinstance(out, tuple):
            return tuple(self._from_host(o) for o in out)
        if isinstance(out, list):
            return [self._from_host(o) for o in out]
        if isinstance(out, np.ndarray):
            return self.write(out)
        if isinstance(out, np.generic):
            return self.write(np.asarray(out))
        return out

    def write(self, array) -> WH:
        a = np.asarray(array)
        dtype = D.from_numpy_dtype(a.dtype)
        wide = dtype is D.int64 and a.size and (a.min() < -2**31 or a.max() >= 2**31)
        words = np.ascontiguousarray(a, np.int64).view(np.uint32) if wide else T.to_words(a, dtype)
        st = self.rt.upload(words.reshape(-1))
        if wide:  # int64 values past 32 bits: kept whole, computed on the host (see dtypes.py)
            st.wide = True
        st.nelem //= 2 if wide else T.words(dtype)
        # a C-contiguous array keeps numpy's strides (0 for empty arrays, as torch.from_numpy shows them)
        strides = tuple(s // a.itemsize for s in a.strides) if a.flags.c_contiguous else contiguous_strides(a.shape)
        return WH(st, a.shape, strides, 0, dtype)

    def read(self, h: WH) -> np.ndarray:
        n = h.numel
        k, npt = _layout(h)
        if n == 0:
            return np.empty(h.shape, h.dtype.np)
        if h.is_contiguous():
            w = self.rt.download(h.st, h.offset * k, n * k).view(npt).reshape(h.shape)
        else:
            extent = 1 + sum((s - 1) * st for s, st in zip(h.shape, h.strides) if s > 0)
            raw = self.rt.download(h.st, h.offset * k, extent * k).view(npt)
            w = np.lib.stride_tricks.as_strided(raw, h.shape, tuple(s * 4 * k for s in h.strides))
        return T.from_words(w, h.dtype)

    def strides(self, h: WH) -> tuple:
        return h.strides

    def shape(self, h: WH) -> tuple:
        return h.shape

    def dtype(self, h: WH):
        return h.dtype

    def meta(self, h: WH):
        return h.shape, h.dtype

    def storage(self, h: WH):
        return h.st

    def storage_offset(self, h: WH) -> int:
        return h.offset

    def data_ptr(self, h: WH) -> int:
        # no host address: an identity for the storage plus the byte offset, enough for same-memory tests
        return id(h.st) + h.offset * h.dtype.itemsize

    def nbytes(self, h: WH) -> int:
        return h.numel * h.dtype.itemsize

    def synchronize(self) -> None:
        self.rt.synchronize()

    def __repr__(self) -> str:
        return f"Wgpu({'' if self.index is None else self.index})"


def make_stack(index: int | None = None):
    """``Autodiff(Wgpu(index))``: the stack behind ``ember.device("wgpu[:index]")``."""
    from ..autodiff import Autodiff
    return Autodiff(Wgpu(index))
