"""Where fused kernels run: the one place that knows the array type of a cube device.

The inner backend names its cube device (``getattr(inner, "cube_device", "cpu")``): "cpu" means
numpy arrays and cube's C target (OpenMP over blocks); "cuda"/"cuda:N" CuPy arrays and cube's CUDA
runtime (target_cuda.py); "wgpu" the Wgpu backend's storages and cube's WGSL (target_wgpu.py).
Every target has the methods and attributes of :class:`CpuTarget`; the engine above does not change.

What a target tells the kernel generators (codegen.py, rowgen.py):

* ``types``: the cube types it fuses (None: all of float32/64, int32/64, bool);
* ``storage``: cube types stored as another type (WGSL keeps bools in 32-bit words);
* ``row_block``: 0 for one thread per row (the CPU form), else the most threads a block may have,
  which asks for the GPU form: a block per row with a block-level reduction;
* ``warp``: whether warp reductions exist (CUDA) or a shared-memory tree is used (WGSL);
* ``acc64``: whether float32 sums accumulate in float64 (the CPU: numpy's accuracy; not on CUDA,
  where float32 accumulators as in PyTorch's kernels keep row kernels at memory speed, nor WGSL,
  which has no float64);
* ``vec4``: whether contiguous float32 elementwise kernels load and store 4 elements at a time;
* ``unfused``: elementwise ops whose math on the target differs from the inner backend's at the
  extremes (they run on the inner backend);
* ``max_arrays``: the most arrays one kernel may bind (None: no limit; WebGPU's storage buffers);
* ``eager_below``: the default stacks' cost model: ops whose tensor inputs are in memory and smaller
  than this many elements run at once instead of being recorded (the size at which a fused kernel's
  saved memory traffic starts to pay for recording's host time);
* ``shares_host``: whether the inner backend's arrays are the program's host arrays (numpy on the CPU:
  ``from_numpy`` and ``.numpy()`` share memory, so Fusion runs ops on such memory at once);
* ``composed``: optional ops the frontend should compose on this target although the inner backend has
  them, because the composition fuses with its neighbours and the op would end the fused group (the CPU:
  dropout, whose one-pass op is a GPU kernel's gain);
* ``split_min``: a reduction of at least this many elements to one value is recorded in two stages
  (recording.py): partial results (across SIMD lanes on the CPU, one row per block of threads on a GPU),
  then their reduction (0: never).
"""

from __future__ import annotations

import sys

import numpy as np

from ... import cube


class CpuTarget:
    """numpy arrays, launched through cube's C runtime."""

    device = "cpu"
    types = None
    storage: dict = {}
    row_block = 0
    warp = False
    acc64 = True
    vec4 = False
    unfused = frozenset()
    max_arrays = None
    composed = frozenset({"dropout"})
    shares_host = True
    # one thread per row on the C target: a sum of 4M elements to one value ran as one scalar lane (77 ms for
    # x.tanh().sum(), numpy 2.3); split into 1024 lanes' partial sums it vectorises
    split_min = 1 << 16
    eager_below = 1 << 18  # an elementwise chain fuses faster than numpy from ~64K elements; 2-op ones at ~256K
    # bytes: smaller outputs come from numpy's allocator. glibc maps blocks of 128 KB and more afresh, and a
    # fresh block costs a page fault per 4 KB on first touch: a (256, 768) bias add took 0.45 ms with its
    # output from the allocator, 0.08 ms pooled (1 MB had been the limit)
    POOL_MIN = 1 << 17
    POOL_CAP = 1 << 30  # bytes of large buffers kept for reuse

    def alloc(self, shape: tuple, np_dtype) -> np.ndarray:
        """A new C-contiguous array for a kernel output.

        Large outputs reuse a pooled buffer whose every view has died: a fresh large array costs a
        page fault and the kernel zeroing each page on first touch, a fifth of a memory-bound
        kernel's time. The pooled buffer is the returned array's base (its storage): while any view
        of it lives, its reference count says so and it is not handed out again."""
        n = 1
        for d in shape:
            n *= d
        dt = np.dtype(np_dtype)
        if n * dt.itemsize < self.POOL_MIN:
            return np.empty(shape, dt)
        key = (n, dt)
        free = self._pool.get(key)
        if free is None:
            free = self._pool[key] = []
        for raw in free:
            if sys.getrefcount(raw) == 3:  # the pool's list, this loop's variable, the call's argument
                return raw.reshape(shape)
        raw = np.empty(n, dt)
        if self._pooled + raw.nbytes > self.POOL_CAP:
            self._trim()
        if self._pooled + raw.nbytes <= self.POOL_CAP:
            free.append(raw)
            self._pooled += raw.nbytes
        return raw.reshape(shape)

    def _trim(self) -> None:
        """Drop the pooled buffers nobody uses (a workload with other sizes took over)."""
        for key, free in list(self._pool.items()):
            keep = [raw for raw in free if sys.getrefcount(raw) > 3]
            for raw in free:
                if sys.getrefcount(raw) <= 3:
                    self._pooled -= raw.nbytes
            self._pool[key] = keep

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

    # elements a block should have before another one is worth waking a thread for: a parallel
    # region waits for its slowest thread, and on 2 shared cores one is often held by a spinning
    # BLAS worker, a conv worker or another process (a 1.6M-element batch norm kernel took 6.7 ms
    # on 2 threads, 5.4 ms on one; 2**17 and 2**20 were tried before)
    WORK_PER_BLOCK = 1 << 22

    def grid(self, blocks: int, block: int, rows: bool = False) -> int:
        """How many blocks to launch for ``blocks`` virtual blocks of ``block`` threads (kernels loop
        over the rest): few enough that each has real work, since waking OpenMP threads costs tens
        of microseconds (and far more on a loaded machine). ``rows``: a GPU-form row kernel (a block
        per row), which the GPU targets launch whole."""
        if blocks <= 1:
            return blocks
        return max(1, min(blocks, blocks * block // self.WORK_PER_BLOCK))

    def __init__(self):
        self._bound: dict = {}  # (kernel, block) -> (C function, argument packer, runtime, compiled object)
        self._pool: dict = {}  # (elements, dtype) -> large output buffers, reused once unreferenced
        self._pooled = 0

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
            obj = kern.variant(rt, (block, 1, 1), key).obj
            self._bound[(kern, block)] = (obj[0], _packer(obj[1], arrays), rt, obj)
            return
        fn, packer, rt, obj = hit
        if packer is None:
            rt.launch(obj, (grid, 1, 1), (block, 1, 1), [_Arg(a) for a in arrays] + scalars)
            return
        vals = []
        for a in arrays:  # flat arrays: (pointer, size) each, as the runtime's argument block wants
            vals.append(a.ctypes.data)
            vals.append(a.size)
        fn(packer.pack(*vals, *scalars, grid, 1, 1))

    def copy(self, arr: np.ndarray) -> np.ndarray:
        """A C-contiguous copy of a handle (memory a kernel can't index)."""
        return arr.copy()

    def copy_flat(self, flat: np.ndarray) -> np.ndarray:
        """A copy of a flat launch array (a snapshot taken before a flush's writes)."""
        return flat.copy()

    def new_flat(self, arr: np.ndarray) -> np.ndarray:
        """The flat launch array of a handle that :meth:`alloc` (or a fresh inner result) made."""
        return arr.reshape(-1)

    def ptr(self, arr: np.ndarray):
        """An identity of the memory a handle starts at (equal for two views of one address)."""
        return arr.__array_interface__["data"][0]

    def contiguous(self, arr: np.ndarray) -> bool:
        return arr.flags.c_contiguous

    def whole(self, arr: np.ndarray, storage) -> bool:
        """Whether ``arr`` is a writable C-contiguous handle covering all of ``storage`` (a write into
        it replaces the storage's contents: Fusion records it; a partial write syncs)."""
        if not (arr.flags.c_contiguous and arr.flags.writeable):
            return False
        return storage is arr or (storage.size == arr.size and storage.__array_interface__["data"][0] ==
                                  arr.__array_interface__["data"][0])

    def fresh(self, inner, arr) -> bool:
        """Whether an inner result is a C-contiguous array owning its storage (else it is copied)."""
        return inner.storage(arr) is arr and arr.flags.c_contiguous

    def view(self, flat: np.ndarray, shape: tuple, strides: tuple, offset: int) -> np.ndarray:
        """The strided view of a flat array that a load reads (element strides and offset): the
        operands handed to the inner backend's matmul."""
        item = flat.itemsize
        return np.ndarray(shape, flat.dtype, flat, offset * item, tuple(s * item for s in strides))


def _packer(layout, arrays):
    """A struct packing a launch's argument block in one call (what cube's C runtime builds slot
    by slot: int64 slots, floats as their bits), or None for a layout it doesn't cover."""
    fmt = ["<"]
    arrays_left = len(arrays)
    for kind, t, ndim in layout:
        if kind == "array":
            if ndim != 1 or arrays_left == 0:
                return None
            arrays_left -= 1
            fmt.append("qq")
        elif kind != "scalar":
            return None
        elif t.kind == "f":
            fmt.append("f4x" if t.bits == 32 else "d")
        else:
            fmt.append("q")
    if arrays_left or any(a.ndim != 1 for a in arrays):
        return None
    import struct
    return struct.Struct("".join(fmt) + "qqq")


class _Arg:
    """What the C runtime reads from an array argument: the array."""

    __slots__ = ("handle",)

    def __init__(self, a):
        self.handle = a


def target_for(device: str, inner=None):
    """The target object for a cube device string ("cpu", "cuda", "cuda:N", "wgpu") over ``inner``."""
    if device == "cpu":
        return CpuTarget()
    kind, _, idx = device.partition(":")
    if kind == "cuda":
        from .target_cuda import CudaTarget
        return CudaTarget(inner, int(idx) if idx else 0)
    if kind == "wgpu":
        from .target_wgpu import WgpuTarget
        return WgpuTarget(inner)
    raise NotImplementedError(f"Fusion has no target for cube device {device!r} (cpu, cuda, cuda:N, wgpu)")


__all__ = ["CpuTarget", "target_for", "cube"]
