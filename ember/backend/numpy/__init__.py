"""The numpy backend: ember's reference CPU backend, and the one every other backend is tested against.

Handles are numpy arrays. Ops are plain functions ``fn(*inputs, **attrs)`` collected from the
modules of this package into one table, so ``run`` is a dict lookup and a call.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..._dtype import _FROM_NP, from_numpy_dtype
from ..base import UnsupportedOp
from . import (
    composite,
    conv,
    creation,
    elementwise,
    functional_scatter,
    indexing,
    linalg,
    movement,
    nn,
    random,
    reduce,
    sorting,
)

# numpy reports IEEE events (0/0, log(-1), inf-inf) as RuntimeWarnings attributed to the calling
# frame. PyTorch is silent about them, so we silence them for our own modules only; setting
# np.errstate per call would cost ~2 µs an op.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.backend\.numpy")

_OPS: dict = {}
for _mod in (composite, creation, elementwise, reduce, movement, indexing, functional_scatter, linalg, sorting,
             random, conv, nn):
    _OPS.update(_mod.OPS)


class Numpy:
    """numpy arrays as storage; numpy/BLAS/LAPACK as compute. Device type ``cpu``."""

    name = "numpy"
    device_type = "cpu"
    # handles are arrays, and a view op's result shares its input's memory: optimizers may pack
    # parameters into one buffer (ember.optim._flat); lazy or remote backends don't set this
    plain_array_views = True

    def __init__(self):
        self._ops = _OPS

    def run(self, op: str, inputs: tuple, attrs: dict):
        try:
            fn = self._ops[op]
        except KeyError:
            raise UnsupportedOp(self.name, op) from None
        return fn(*inputs, **attrs)

    def supports(self, op: str) -> bool:
        return op in self._ops

    def write(self, array: np.ndarray) -> np.ndarray:
        return array

    def read(self, handle: np.ndarray) -> np.ndarray:
        return handle

    def strides(self, handle: np.ndarray) -> tuple[int, ...]:
        item = handle.itemsize
        st = handle.strides
        if len(st) == 2:  # the common case without a generator (asked once per op result under Fusion)
            return (st[0] // item, st[1] // item)
        return tuple([s // item for s in st])

    def shape(self, handle: np.ndarray) -> tuple[int, ...]:
        return handle.shape

    def dtype(self, handle: np.ndarray):
        d = _FROM_NP.get(handle.dtype)
        return d if d is not None else from_numpy_dtype(handle.dtype)

    def meta(self, handle: np.ndarray):
        """(shape, dtype) at once: Autodiff records both for every input of a recorded op."""
        d = _FROM_NP.get(handle.dtype)
        return handle.shape, d if d is not None else from_numpy_dtype(handle.dtype)

    def storage(self, handle: np.ndarray) -> np.ndarray:
        """The array that owns the memory (identity of the storage, weak-referenceable)."""
        base = handle
        while isinstance(base.base, np.ndarray):
            base = base.base
        return base

    def storage_offset(self, handle: np.ndarray) -> int:
        base = self.storage(handle)
        return (handle.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // handle.itemsize

    def data_ptr(self, handle: np.ndarray) -> int:
        return handle.__array_interface__["data"][0]

    def nbytes(self, handle: np.ndarray) -> int:
        return handle.nbytes

    def __repr__(self) -> str:
        return "Numpy()"


def make_stack(index=None):
    """The ``cpu:numpy`` stack: ``Autodiff(Numpy())``, the reference backend without fusion or C kernels
    (``index`` is unused)."""
    from ..autodiff import Autodiff
    return Autodiff(Numpy())
