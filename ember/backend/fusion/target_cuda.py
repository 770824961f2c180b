"""The CUDA target of Fusion: CuPy arrays of the Cuda backend, kernels through cube's CUDA runtime.

Outputs come from CuPy's memory pool (the Cuda backend's allocator: inside an ``ember.cuda.graph``
capture that is the graph's private pool), and kernels launch on CuPy's *current stream*, so the
work of a flush inside a capture lands in the graph. The first launch of a kernel goes through
cube's checked path (and compiles with NVRTC); later ones call the loaded function directly.

Kernels take the GPU forms (see target.py): a block per row with a warp-shuffle reduction for row
kernels, 4-element loads and stores for contiguous float32 elementwise kernels, and a grid sized to
fill the GPU with the kernels' grid-stride loops doing the rest.
"""

from __future__ import annotations

import numpy as np

from ...cube.launch import get_runtime


class CudaTarget:
    """CuPy arrays on CUDA device ``index``, launched through cube's CUDA runtime.

    >>> import ember
    >>> x = ember.ones(4, device="cuda:fused")  # doctest: +SKIP
    """

    types = None
    storage: dict = {}
    row_block = 1024
    # a pass over n float32 elements costs the H200 about n / 500 ns; recording an op costs tens of
    # microseconds of host time: fusion pays on the eager stack from tens of millions of elements
    eager_below = 1 << 24
    # a reduction of this many elements or more to one value runs in two stages (recording._split_reduce):
    # one block of threads for all of them leaves the GPU idle (x.sum() of a fused 16M chain on WebGPU: 40 ms)
    split_min = 1 << 16
    warp = True
    # float32 sums accumulate in float32, as PyTorch's CUDA kernels and Triton's do (each thread's
    # strided partial, then a tree): float64 accumulators cost layer_norm a quarter of its bandwidth
    acc64 = False
    vec4 = True
    unfused = frozenset()
    max_arrays = None

    def __init__(self, inner, index: int = 0):
        import cupy
        self.cupy = cupy
        self.inner = inner
        self.index = index
        self.device = f"cuda:{index}"
        self._dev = cupy.cuda.Device(index)
        self._sms = int(self._dev.attributes.get("MultiProcessorCount", 80))
        self._bound: dict = {}  # (kernel, block) -> (function, argument converters)

    def grid(self, blocks: int, block: int, rows: bool = False) -> int:
        """Blocks to launch for ``blocks`` virtual blocks: enough to fill every SM a few times over
        (the kernels loop over the rest), never more than the work has; a block for every row of a row
        kernel (``rows``): the GPU then hands rows to SMs as they free up (H200, (32768, 4096) layer norm
        and softmax kernels: ~1% faster than 16 waves of blocks each looping over ~2 rows)."""
        # resident threads per SM on every GPU since Volta is 2048 (1536 on some consumer parts:
        # a grid a little too large only costs a few more loop iterations per block)
        if blocks <= 1 or rows and blocks < 1 << 31:
            return blocks
        per_sm = max(1, 2048 // block)
        # small blocks (elementwise kernels): 16 waves; measured on the H200, the 256M chain ran 2-3%
        # faster than with 4 (3,870-3,890 against 3,750-3,840 GB/s), row kernels' 512/1024-thread blocks
        # did best with 4
        waves = 16 if block <= 256 else 4
        return max(1, min(blocks, self._sms * per_sm * waves))

    def alloc(self, shape: tuple, np_dtype):
        """A new C-contiguous CuPy array from the pool (the current allocator: a capture's pool)."""
        if self.index:
            with self._dev:
                return self.cupy.empty(shape, np_dtype)
        return self.cupy.empty(shape, np_dtype)  # device 0 is current unless a caller switched it

    def new_flat(self, arr):
        return arr.reshape(-1)

    def flat(self, arr, storage) -> tuple | None:
        """(flat contiguous array, element strides, offset) to read ``arr`` through, or None.
        A contiguous view that doesn't start on a 16-byte boundary is read through its base with an
        offset: the generator then sees the offset and doesn't use 16-byte vector loads on it."""
        if arr.flags.c_contiguous and arr.data.ptr % 16 == 0:
            return arr.reshape(-1), None, 0
        item = arr.itemsize
        if any(s < 0 or s % item for s in arr.strides):
            return None
        base = storage
        cp = self.cupy
        if not (isinstance(base, cp.ndarray) and base.flags.c_contiguous and base.dtype == arr.dtype):
            return None
        off = arr.data.ptr - base.data.ptr
        if off % item or off < 0:
            return None
        from ..._shape import contiguous_strides
        strides = tuple(s // item for s in arr.strides) if not arr.flags.c_contiguous else \
            tuple(contiguous_strides(arr.shape))
        return base.reshape(-1), strides, off // item

    def copy(self, arr):
        with self._dev:
            return arr.copy()  # CuPy copies into C order

    def copy_flat(self, flat):
        with self._dev:
            return flat.copy()

    def view(self, flat, shape: tuple, strides: tuple, offset: int):
        """The strided view of a flat array a product operand reads (shares its memory)."""
        item = flat.itemsize
        cp = self.cupy
        return cp.ndarray(tuple(shape), flat.dtype, flat.data + offset * item, tuple(s * item for s in strides))

    def ptr(self, arr) -> int:
        return arr.data.ptr

    def contiguous(self, arr) -> bool:
        return arr.flags.c_contiguous

    def whole(self, arr, storage) -> bool:
        if not arr.flags.c_contiguous:
            return False
        return storage is arr or (storage.size == arr.size and storage.data.ptr == arr.data.ptr)

    def fresh(self, inner, arr) -> bool:
        return inner.storage(arr) is arr and arr.flags.c_contiguous

    def launch(self, kern, grid: int, block: int, arrays: list, scalars: list) -> None:
        if grid == 0:
            return
        hit = self._bound.get((kern, block))
        if hit is None:
            # the first launch goes through cube's checks (and compiles); later ones call the loaded
            # function directly with arguments the generator fixed the types of
            with self._dev:
                kern[grid, block](*arrays, *scalars)
            values, key, dev = kern.bind((*arrays, *scalars))
            obj = kern.variant(get_runtime(dev), (block, 1, 1), key).obj
            fn, layout, _ = obj
            kinds = [kind for kind, _, _, _ in layout]
            na = kinds.count("array")
            if kinds[:na] != ["array"] * na or na != len(arrays):
                self._bound[(kern, block)] = (None, None)  # a layout the fast path doesn't cover
                return
            self._bound[(kern, block)] = (fn, [t.np.type for kind, t, _, _ in layout[na:]])
            return
        fn, conv = hit
        if fn is None:
            with self._dev:
                kern[grid, block](*arrays, *scalars)
            return
        i32 = np.int32
        args: list = []
        for a in arrays:  # flat arrays: the array and its element count
            args.append(a)
            args.append(i32(a.size))
        for c, v in zip(conv, scalars):
            args.append(c(v))
        if self.index:
            with self._dev:
                fn((grid, 1, 1), (block, 1, 1), tuple(args))
        else:
            fn((grid, 1, 1), (block, 1, 1), tuple(args))
