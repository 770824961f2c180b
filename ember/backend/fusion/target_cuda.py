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
                return self.cupy.ndarray(shape, np_dtype)
        return self.cupy.ndarray(shape, np_dtype)  # device 0 is current unless a caller switched it

    def new_flat(self, arr):
        """The launch array of a new C-contiguous array: the array itself (a launch reads its pointer and
        size; CuPy's reshape costs a few microseconds of host time a call)."""
        return arr

    def flat(self, arr, storage) -> tuple | None:
        """(flat contiguous array, element strides, offset) to read ``arr`` through, or None.
        A contiguous view that doesn't start on a 16-byte boundary is read through its base with an
        offset: the generator then sees the offset and doesn't use 16-byte vector loads on it."""
        if arr.flags.c_contiguous and arr.data.ptr % 16 == 0:
            return arr, None, 0  # contiguous: the array itself is its launch array (see new_flat)
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
            # the first launch goes through cube's checks (and compiles); later ones call the driver
            # directly with an argument block packed in the layout the generator fixed
            flat = [a if a.ndim == 1 else a.reshape(-1) for a in arrays]  # cube checks the kernels' 1-d params
            with self._dev:
                kern[grid, block](*flat, *scalars)
                values, key, dev = kern.bind((*flat, *scalars))
                obj = kern.variant(get_runtime(dev), (block, 1, 1), key).obj
                self._bound[(kern, block)] = _RawLaunch.of(obj[0], obj[1], len(arrays))
            return
        if hit is _CHECKED:
            with self._dev:
                kern[grid, block](*[a if a.ndim == 1 else a.reshape(-1) for a in arrays], *scalars)
            return
        if self.index:
            with self._dev:
                hit(grid, block, arrays, scalars)
        else:
            hit(grid, block, arrays, scalars)


_CHECKED = object()  # a kernel whose parameter layout the raw launch doesn't cover: cube's checked launch
_CODES = {("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
          ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("b", 1): "?"}


def param_block(layout, n_arrays: int) -> tuple | None:
    """(struct format, scalar converters) of a launch's parameter block: one 8-byte slot per parameter
    (``cuLaunchKernel`` reads each parameter through a pointer to its slot), per array its pointer and its
    element count as an int32, then the scalars in their C types; None for a layout of other parameters
    (arrays after scalars, arrays of more than one dim, scalar types without a struct code). One array
    and a float32 scalar: ``"<Qi4xf4x"``, ``[float]``."""
    kinds = [p[0] for p in layout]
    if kinds[:n_arrays] != ["array"] * n_arrays or kinds.count("array") != n_arrays or \
            any(p[2] != 1 for p in layout[:n_arrays]):
        return None
    fmt, conv = ["<"], []
    for _ in range(n_arrays):
        fmt.append("Qi4x")  # the pointer, then the element count (int32)
    for kind, t, _, _ in layout[n_arrays:]:
        dt = np.dtype(t.np)
        code = _CODES.get((dt.kind, dt.itemsize))
        if kind != "scalar" or code is None:
            return None
        fmt.append(code + (f"{8 - dt.itemsize}x" if dt.itemsize < 8 else ""))
        conv.append(float if dt.kind == "f" else bool if dt.kind == "b" else int)
    return "".join(fmt), conv


class _RawLaunch:
    """A kernel launched through ``cuLaunchKernel`` with a packed argument block: CuPy's ``Function``
    call inspects every argument on every launch (about 20 us of host time a kernel on the H200's host,
    a third of a recorded layer norm's); the fused kernels' parameters are fixed by the generator (per
    array a pointer and an int32 element count, then typed scalars), so each launch packs them into
    one buffer, 8 bytes a parameter, whose slot addresses the driver reads."""

    __slots__ = ("fn", "fptr", "packer", "buf", "params", "params_ptr", "conv", "launch", "stream")

    @classmethod
    def of(cls, fn, layout, n_arrays: int):
        """The raw launch of CuPy kernel ``fn`` with parameter ``layout`` on the current device, or _CHECKED."""
        block = param_block(layout, n_arrays)
        if block is None:
            return _CHECKED
        fmt, conv = block
        return cls(fn, fmt, 2 * n_arrays + len(conv), conv)

    def __init__(self, fn, fmt: str, n_params: int, conv: list):
        import ctypes
        import struct

        import cupy
        from cupy.cuda import driver
        self.fn = fn  # keeps the module loaded
        # a RawKernel's loaded function on the current device (the caller's: see CudaTarget.launch)
        self.fptr = getattr(fn, "kernel", fn).ptr
        self.packer = struct.Struct(fmt)
        self.buf = ctypes.create_string_buffer(self.packer.size)
        base = ctypes.addressof(self.buf)
        self.params = (ctypes.c_void_p * n_params)(*[base + 8 * k for k in range(n_params)])
        self.params_ptr = ctypes.addressof(self.params)
        self.conv = conv
        self.launch = driver.launchKernel
        self.stream = cupy.cuda.get_current_stream  # the current stream at each launch (graph captures)

    def __call__(self, grid: int, block: int, arrays: list, scalars: list) -> None:
        vals = []
        for a in arrays:
            vals.append(a.data.ptr)
            vals.append(a.size)
        for c, v in zip(self.conv, scalars):
            vals.append(c(v))
        # the driver copies the parameters when the launch is queued: the buffer is free again at once
        self.packer.pack_into(self.buf, 0, *vals)
        self.launch(self.fptr, grid, 1, 1, block, 1, 1, 0, self.stream().ptr, self.params_ptr, 0)
