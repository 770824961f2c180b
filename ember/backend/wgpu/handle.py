"""Handles of the Wgpu backend: a storage plus the layout of one view of it, like a strided tensor."""

from __future__ import annotations

import math

from ..._shape import contiguous_strides  # noqa: F401 - re-exported for this package's modules


class WH:
    """A view of a :class:`~ember.backend.wgpu.runtime.Storage`: shape, element strides, element offset,
    dtype. Views (reshape, permute, expand, slice, diagonal, as_strided) make new WH objects over the
    same storage; kernels read through the strides and write contiguous results."""

    __slots__ = ("st", "shape", "strides", "offset", "dtype", "__weakref__")

    def __init__(self, st, shape, strides, offset, dtype):
        self.st, self.shape, self.strides, self.offset, self.dtype = st, tuple(shape), tuple(strides), offset, dtype

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, contiguous_strides(self.shape)))

    def view(self, shape, strides, offset) -> WH:
        return WH(self.st, shape, strides, offset, self.dtype)

    def __repr__(self) -> str:
        return f"WH(shape={self.shape}, strides={self.strides}, offset={self.offset}, dtype={self.dtype})"
