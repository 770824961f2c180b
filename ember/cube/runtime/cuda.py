"""The CUDA runtime: NVRTC through CuPy's ``RawModule``, launched on CuPy's current stream.

CuPy is imported on first use, so ``ember.cube`` works without it. NVRTC compiles for the
device's architecture (sm_90 on an H200); CuPy keeps the binaries in its kernel cache
(``~/.cupy/kernel_cache``, keyed by source, options, architecture and NVRTC version, written
atomically), and cube keeps loaded kernels in memory, so a relaunch compiles nothing.
"""

from __future__ import annotations

import numpy as np

from ..cache import Timer
from ..errors import LaunchError
from ..types import from_numpy

OPTIONS = ("--std=c++14", "-fmad=false")
CONTRACT_OPTIONS = ("--std=c++14",)  # kernels made with cube.kernel(contract=True): NVRTC's default -fmad=true
MAX_GRID_YZ = 65535


def _cupy():
    try:
        import cupy
    except ImportError:
        raise LaunchError("the CUDA target needs CuPy: pip install cupy-cuda12x (or ember[cuda])") from None
    return cupy


def cuda_arg(a, tensor=None):
    """An ArrayArg for a CuPy array (or any __cuda_array_interface__ object), or an error message."""
    from ..launch import ArrayArg
    cupy = _cupy()
    if not isinstance(a, cupy.ndarray):
        a = cupy.asarray(a)  # zero-copy view of another library's device array
    elem = from_numpy(a.dtype)
    if elem is None:
        return f"dtype {a.dtype} is not supported by cube"
    if not a.flags.c_contiguous:
        return (f"the array is not C-contiguous (shape {a.shape}, strides {a.strides}): pass "
                "cupy.ascontiguousarray(x) and copy results back")
    return ArrayArg(f"cuda:{a.device.id}", a, elem, a.shape, tensor, True)


class CudaRuntime:
    """Renders CUDA C, compiles with NVRTC (CuPy) and launches on the current stream."""

    def __init__(self, device: int | None = None):
        from ..frontend import Target
        self.device = device
        self.key = "cuda" if device is None else f"cuda:{device}"
        self.frontend_target = Target("cuda", 32)

    def render(self, kir, plan) -> str:
        from ..render.cuda import render
        return render(kir, plan)

    def compile(self, kir, plan, source: str):
        cupy = _cupy()
        with Timer(f"compile {kir.name} (CUDA)"):
            mod = cupy.RawModule(code=source, options=CONTRACT_OPTIONS if kir.contract else OPTIONS)
            fn = mod.get_function("cb_kernel")
        layout = [(p.kind, p.type, p.ndim, kir.arrays[p.name].vector if p.kind == "array" else 1)
                  for p in kir.params]
        return fn, layout, mod

    def launch(self, obj, grid: tuple, block: tuple, values: list) -> None:
        fn, layout, _ = obj
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            raise LaunchError(f"CUDA grids have at most {MAX_GRID_YZ} blocks along y and z, got {grid}")
        args: list = []
        it = iter(layout)
        for v in values:
            if v is None:
                continue
            kind, t, ndim, vec = next(it)
            if kind == "array":
                a = v.handle
                if vec > 1:
                    _check_vector(a, vec, ndim > 1)
                args.append(a)
                dims = (a.size,) if ndim == 1 and a.ndim != 1 else a.shape
                args.extend(np.int32(d) for d in dims)
            else:
                args.append(t.np.type(v))
        fn(grid, block, tuple(args))


def _check_vector(a, n: int, rows: bool) -> None:
    """vecN accesses are single wide loads: the data must be aligned (and rows a multiple of n long)."""
    if rows and a.shape[-1] % n:
        raise LaunchError(f"vec{n} access needs the last dim to be a multiple of {n}, got shape {a.shape}")
    if a.data.ptr % (a.itemsize * n):
        raise LaunchError(f"vec{n} access needs data aligned to {a.itemsize * n} bytes")
