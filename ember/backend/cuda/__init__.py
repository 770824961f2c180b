"""The CUDA backend: NVIDIA GPUs through CuPy (memory pool, streams, cuBLAS, NVRTC).

Handles are CuPy arrays on one device. Ops are plain functions collected from this package's
modules, written against an array module ``xp`` (CuPy), so ``run`` is a dict lookup and a call like
the numpy reference backend's. Composite ops without a GPU version here are decomposed by the
frontend into primitives (which run on the GPU); primitives without one (see
``Cuda.host_ops()``) run on the numpy backend through :mod:`.fallback`.

``make_stack(index)`` builds ``Autodiff(Cuda(index))``, what ``ember.device("cuda:N")`` uses.
Without CuPy, ``make_stack`` raises BackendUnavailable with the install hint (the module itself
imports without CuPy, so the op code can be tested on numpy).

>>> x = ember.ones(3, device="cuda")          # doctest: +SKIP
>>> (x + 1).cpu()                              # doctest: +SKIP
tensor([2., 2., 2.])
"""

from __future__ import annotations

import numpy as np

from ..._dtype import _FROM_NP, from_numpy_dtype
from .. import capture
from ..base import PRIMITIVES, RANDOM, UnsupportedOp
from ..capture import CaptureSyncError, refuse
from . import (
    activations,
    attention,
    conv,
    creation,
    dropout,
    elementwise,
    indexing,
    linalg,
    movement,
    nn,
    optim,
    pool,
    random,
    reduce,
    sorting,
)
from .fallback import HostRunner
from .indexing import HostPath
from .memory import OutOfMemoryError, oom_error

__all__ = ["Cuda", "make_stack", "OutOfMemoryError"]

_capture_depth = capture._depth  # read on every op: a list lookup, not a call
_RANDOM_OPS = RANDOM
# random ops a CUDA graph can capture: their kernels read the stream's key and counter shift from device
# memory that each replay rewrites (random.py), so every replay draws fresh numbers
_GRAPH_RANDOM_OPS = frozenset({"rand", "randn", "randint", "bernoulli"})


def _build_ops(xp, special) -> dict:
    ops: dict = {}
    ops.update(creation.build(xp))
    ops.update(elementwise.build(xp, special))
    ops.update(reduce.build(xp))
    mv = movement.build(xp)
    ops.update(mv)
    ops.update(indexing.build(xp, mv))
    lin = linalg.build(xp)
    ops.update(lin)
    ops.update(sorting.build(xp))
    ops.update(nn.build(xp))
    ops.update(activations.build(xp, special))
    ops.update(conv.build(xp, mv, lin))
    ops.update(pool.build(xp))
    ops.update(random.build(xp))
    ops.update(optim.build(xp))
    ops.update(attention.build(xp))
    ops.update(dropout.build(xp))
    return ops


class Cuda:
    """CuPy arrays on CUDA device ``index`` as storage; cuBLAS and CuPy kernels as compute.

    ``Cuda(0)`` needs CuPy and a GPU. Tests of the op logic without a GPU build it with
    ``Cuda._with_array_module(numpy)``: the same op code then runs on numpy arrays.
    """

    name = "cuda"
    device_type = "cuda"
    plain_array_views = True  # CuPy arrays; views share memory (see the numpy backend)

    def __init__(self, index: int = 0):
        import cupy
        import cupyx.scipy.special as special

        n = cupy.cuda.runtime.getDeviceCount()
        if not 0 <= index < n:
            raise RuntimeError(f"CUDA device {index} does not exist: this machine has {n} CUDA device(s)")
        self.index = index
        self._device = cupy.cuda.Device(index)
        self.cube_device = f"cuda:{index}"  # where Fusion's kernels run (ember/backend/fusion/target_cuda.py)
        self._setup(cupy, special, gpu=True)

    @classmethod
    def _with_array_module(cls, xp, special=None) -> Cuda:
        """The backend over another array module (numpy): for testing the op code without a GPU."""
        self = cls.__new__(cls)
        if special is None:
            import scipy.special as special
        self.index = 0
        self._device = None
        self._setup(xp, special, gpu=False)
        return self

    def _setup(self, xp, special, gpu: bool) -> None:
        self.xp = xp
        self._gpu = gpu
        if gpu:
            self._oom = xp.cuda.memory.OutOfMemoryError
            to_host, to_device = xp.asnumpy, xp.asarray
        else:
            class _Never(Exception):
                pass
            self._oom = _Never
            to_host, to_device = (lambda a: np.array(a, copy=True)), (lambda a: np.array(a, copy=True))
        self._to_host, self._to_device = to_host, to_device
        with self._on_device():
            self._ops = _build_ops(xp, special)
        self._host = HostRunner(xp, to_host, to_device)
        host_table = self._host.numpy._ops
        # primitives the reference has and this backend runs on the host; composites without a GPU
        # version stay unsupported so that the frontend decomposes them into (GPU) primitives
        self._host_ops = frozenset(op for op in host_table if op not in self._ops and op in PRIMITIVES)
        self._supported = frozenset(self._ops) | self._host_ops
        self._switch = gpu and self.index != 0
        if not self._switch:  # the per-op path: callers reach _run without the device-switch frame
            self.run = self._run

    def _on_device(self):
        import contextlib
        return self._device if self._device is not None else contextlib.nullcontext()

    # ---- protocol ----------------------------------------------------------------------------------
    def run(self, op: str, inputs: tuple, attrs: dict):
        if self._switch:
            with self._device:
                return self._run(op, inputs, attrs)
        return self._run(op, inputs, attrs)

    def _run(self, op, inputs, attrs):
        if _capture_depth[0] and self._gpu:
            return self._run_capturing(op, inputs, attrs)
        fn = self._ops.get(op)
        if op[-1] == "_" or op == "assign":
            _check_writable(inputs[0])
        try:
            if fn is not None:
                try:
                    out = fn(*inputs, **attrs)
                except HostPath:
                    return self._host.run(op, inputs, attrs)
                if not self._gpu:  # numpy returns scalars for 0-d results: keep handles arrays
                    out = _arrays(out)
                return out
            if op in self._host_ops:
                return self._host.run(op, inputs, attrs)
        except self._oom as e:
            raise oom_error(e, op, self.index) from None
        raise UnsupportedOp(self.name, op)

    def _run_capturing(self, op, inputs, attrs):
        """``op`` while a CUDA graph is captured: ops that must read values on the host, and random ops
        (a replay would repeat their numbers), are refused with an error naming the op."""
        if op in _RANDOM_OPS and op not in _GRAPH_RANDOM_OPS:
            raise CaptureSyncError(f"random op {op!r} inside a CUDA graph capture: it decides on the host from "
                                   "its draws, which a replay can't repeat; draw it outside the captured region "
                                   "(into a static tensor)")
        fn = self._ops.get(op)
        if fn is None:
            if op in self._host_ops:
                refuse(f"op {op!r} (which runs on the host in this backend)")
            raise UnsupportedOp(self.name, op)
        if op[-1] == "_" or op == "assign":
            _check_writable(inputs[0])
        try:
            return fn(*inputs, **attrs)
        except HostPath:
            refuse(f"op {op!r} with these arguments (this case runs on the host)")
        except self._oom as e:
            raise oom_error(e, op, self.index) from None
        except (self.xp.cuda.runtime.CUDARuntimeError, NotImplementedError) as e:
            # CuPy raises NotImplementedError for library calls it refuses to capture
            raise CaptureSyncError(f"op {op!r} can't be captured into a CUDA graph ({e}): run it outside the "
                                   "captured region") from None

    def supports(self, op: str) -> bool:
        return op in self._supported

    def host_ops(self) -> frozenset:
        """The primitives this backend runs on the host (numpy) rather than on the GPU."""
        return self._host_ops

    def write(self, array: np.ndarray):
        try:
            if self._switch:
                with self._device:
                    return self._to_device(array)
            return self._to_device(array)
        except self._oom as e:
            raise oom_error(e, "write", self.index) from None

    def read(self, handle) -> np.ndarray:
        if _capture_depth[0] and self._gpu:
            refuse("reading a CUDA tensor (.item(), .cpu(), .numpy(), print, control flow on a value)")
        return self._to_host(handle)

    def strides(self, handle) -> tuple[int, ...]:
        item = handle.itemsize
        return tuple(s // item for s in handle.strides)

    def shape(self, handle) -> tuple[int, ...]:
        return handle.shape

    def dtype(self, handle):
        d = _FROM_NP.get(handle.dtype)
        return d if d is not None else from_numpy_dtype(handle.dtype)

    def meta(self, handle):
        d = _FROM_NP.get(handle.dtype)
        return handle.shape, d if d is not None else from_numpy_dtype(handle.dtype)

    def storage(self, handle):
        """The array that owns the memory (identity of the storage, weak-referenceable)."""
        return movement.root_of(handle)

    def storage_offset(self, handle) -> int:
        root = movement.root_of(handle)
        return (self.data_ptr(handle) - self.data_ptr(root)) // handle.itemsize

    def data_ptr(self, handle) -> int:
        if self._gpu:
            return handle.data.ptr
        return handle.__array_interface__["data"][0]

    def nbytes(self, handle) -> int:
        return handle.nbytes

    # ---- DLPack (used by ember._interop) ---------------------------------------------------------------
    def dlpack_device(self, handle) -> tuple[int, int]:
        return tuple(handle.__dlpack_device__())

    def to_dlpack(self, handle, *, stream=None, max_version=None, dl_device=None, copy=None):
        kw = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
        return handle.__dlpack__(**kw)

    def from_dlpack(self, obj):
        """(handle, shape, dtype) of a DLPack producer on this device, sharing its memory."""
        with self._on_device():
            h = self.xp.from_dlpack(obj)
        return h, tuple(h.shape), self.dtype(h)

    def synchronize(self) -> None:
        if self._gpu:
            self._device.synchronize()

    def __repr__(self) -> str:
        return f"Cuda({self.index})"


def _check_writable(dst) -> None:
    """Refuse writes into memory that several elements share (an expanded tensor), as numpy's read-only
    broadcast views do; the frontend turns this ValueError into PyTorch's RuntimeError."""
    if dst.size == 0:  # nothing is written (CuPy gives empty arrays zero strides)
        return
    for st, n in zip(dst.strides, dst.shape):
        if st == 0 and n > 1:
            raise ValueError("assignment destination is read-only: more than one element refers to the same "
                             "memory (an expanded tensor)")


def _arrays(out):
    if isinstance(out, tuple):
        return tuple([_arrays(o) for o in out])
    if isinstance(out, np.generic):
        return np.asarray(out)
    return out


_STACKS: dict[int, object] = {}


def make_stack(index: int | None = None):
    """``Autodiff(Cuda(index))``, one per device index (``"cuda"`` and ``"cuda:0"`` share it)."""
    from ..autodiff import Autodiff
    i = 0 if index is None else int(index)
    stack = _STACKS.get(i)
    if stack is None:
        try:
            backend = Cuda(i)
        except ImportError as e:
            from ..._errors import BackendUnavailable
            # the same words as a build without this package (docs/backends.md shows them)
            raise BackendUnavailable(
                "no backend for device type 'cuda': install the CUDA backend with `pip install ember[cuda]` "
                "on a machine with an NVIDIA GPU") from e
        except Exception as e:  # noqa: BLE001 - CuPy is there but the driver or the device is not
            if isinstance(e, RuntimeError) and "does not exist" in str(e):
                raise
            from ..._errors import BackendUnavailable
            raise BackendUnavailable(f"CUDA is not usable here: {type(e).__name__}: {e}") from e
        stack = _STACKS[i] = Autodiff(backend)
    return stack
