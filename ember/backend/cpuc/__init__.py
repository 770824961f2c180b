"""CpuC: the compiled CPU backend (device ``"cpu:compiled"``).

Storage and handles are exactly the numpy backend's (numpy arrays: views, ``storage``, strides and
interop behave the same), matmul is numpy's BLAS, and the ops where compiled code beats numpy run C
kernels built with ember.cube's C toolchain: convolution's im2col/col2im around BLAS, max pooling and
its gradient, batch and layer norm forward and backward, softmax/log_softmax, sum/mean/amax/amin, and
the large relu/where/clamp/compare passes of a training step, split over OpenMP threads. Every other
op, and every input a kernel does not cover (dtypes other than float32/float64, unusual layouts, tiny
inputs), runs the numpy backend's code, so CpuC answers every op the numpy backend answers, the same
way. The guide is docs/compiled_cpu.md.

>>> import ember
>>> x = ember.randn(8, 3, 28, 28, device="cpu:compiled")
>>> ember.nn.functional.max_pool2d(x, 2).shape
ember.Size([8, 3, 14, 14])
"""

from __future__ import annotations

from ..._errors import BackendUnavailable
from ..base import UnsupportedOp
from ..numpy import _OPS as _NUMPY_OPS
from ..numpy import Numpy
from . import _lib

__all__ = ["CpuC", "make_stack", "compiled_ops"]


def _overrides() -> dict:
    from . import conv, elementwise, linalg, norm, optim, rows
    table: dict = {}
    for mod in (conv, norm, rows, elementwise, linalg, optim):
        table.update(mod.OPS)
    return table


class CpuC(Numpy):
    """numpy arrays as storage, BLAS for matmul, C kernels (ember.cube's C toolchain) for the ops in
    :func:`compiled_ops`, the numpy backend's code for the rest. Device type ``cpu``.

    Building it compiles the kernel library once (cached on disk under ``$EMBER_CACHE/cube``);
    without a working C compiler it raises :class:`ember.BackendUnavailable`.
    """

    name = "cpuc"
    device_type = "cpu"

    def __init__(self, load: bool = True):
        """``load=False`` defers building the kernel library (about 3 s on a new machine) to the first
        op that needs it: the default CPU stack, made at ``import ember``, has checked the compiler."""
        super().__init__()
        try:
            if load:
                _lib.load()
        except Exception as e:
            raise BackendUnavailable(
                "device 'cpu:compiled' needs a working C compiler to build its kernels: install gcc or clang "
                f"(Debian/Ubuntu: `apt-get install gcc`; macOS: `xcode-select --install`) or set $CC ({e})") from e
        self._ops = {**_NUMPY_OPS, **_overrides()}

    def __repr__(self) -> str:
        return "CpuC()"

    def run(self, op: str, inputs: tuple, attrs: dict):
        fn = self._ops.get(op)
        if fn is None:  # an op added to the numpy backend's table after this backend was made
            fn = _NUMPY_OPS.get(op)
            if fn is None:
                raise UnsupportedOp(self.name, op)
        return fn(*inputs, **attrs)

    def supports(self, op: str) -> bool:
        return op in self._ops or op in _NUMPY_OPS

    def matmul_into(self, a, b, out):
        """``a @ b`` into a preallocated ``out`` (2-D float arrays; see :func:`.linalg.matmul_into`)."""
        from .linalg import matmul_into
        return matmul_into(a, b, out)


def compiled_ops() -> frozenset:
    """The names of the ops CpuC runs with C kernels (for the inputs the kernels cover)."""
    return frozenset(_overrides())


def make_stack(index=None):
    """The ``cpu:compiled`` stack: ``Autodiff(CpuC())``."""
    from ..autodiff import Autodiff
    return Autodiff(CpuC())
