"""Where fused kernels run: the one place that knows the array type of a cube device.

The inner backend names its cube device (``getattr(inner, "cube_device", "cpu")``): "cpu" means
numpy arrays and cube's C target (OpenMP over blocks). A GPU target adds a class here with the
same three methods for CuPy arrays or ``WgpuArray``; the engine above it does not change.
"""

from __future__ import annotations

import numpy as np

from ... import cube


class CpuTarget:
    """numpy arrays, launched through cube's C runtime."""

    device = "cpu"

    def alloc(self, shape: tuple, np_dtype) -> np.ndarray:
        """A new C-contiguous array for a kernel output."""
        return np.empty(shape, np_dtype)

    def flat(self, arr: np.ndarray, storage) -> tuple | None:
        """(flat 1-d contiguous array, element strides, offset) to read ``arr`` through, or None when
        its memory can't be indexed from a contiguous base (the caller copies it)."""
        item = arr.itemsize
        if arr.flags.c_contiguous:
            return arr.reshape(-1), None, 0
        if any(s < 0 or s % item for s in arr.strides):
            return None
        base = storage
        if not (isinstance(base, np.ndarray) and base.flags.c_contiguous and base.dtype == arr.dtype):
            return None
        off = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        if off % item:
            return None
        return base.reshape(-1), tuple(s // item for s in arr.strides), off // item

    # elements a block should have before another one is worth waking a thread for
    WORK_PER_BLOCK = 1 << 17

    def grid(self, blocks: int, block: int) -> int:
        """How many blocks to launch for ``blocks`` virtual blocks of ``block`` threads (kernels loop
        over the rest): few enough that each has real work, since waking OpenMP threads costs tens
        of microseconds (and far more on a loaded machine)."""
        if blocks <= 1:
            return blocks
        return max(1, min(blocks, blocks * block // self.WORK_PER_BLOCK))

    def __init__(self):
        self._bound: dict = {}  # (kernel, block) -> (runtime, compiled object)

    def launch(self, kern, grid: int, block: int, arrays: list, scalars: list) -> None:
        if grid == 0:
            return
        hit = self._bound.get((kern, block))
        if hit is None:
            # the first launch goes through cube's checks (and compiles); later ones call the compiled
            # variant directly: the arguments' types can't change, the generator fixed them
            kern[grid, block](*arrays, *scalars)
            from ...cube.launch import get_runtime
            values, key, dev = kern.bind((*arrays, *scalars))
            rt = get_runtime(dev)
            self._bound[(kern, block)] = (rt, kern.variant(rt, (block, 1, 1), key).obj)
            return
        rt, obj = hit
        rt.launch(obj, (grid, 1, 1), (block, 1, 1), [_Arg(a) for a in arrays] + scalars)

    def copy(self, arr: np.ndarray) -> np.ndarray:
        return arr.copy()


class _Arg:
    """What the C runtime reads from an array argument: the array."""

    __slots__ = ("handle",)

    def __init__(self, a):
        self.handle = a


def target_for(device: str):
    """The target object for a cube device string."""
    if device == "cpu":
        return CpuTarget()
    raise NotImplementedError(f"Fusion has no target for cube device {device!r} yet (only 'cpu')")


__all__ = ["CpuTarget", "target_for", "cube"]
