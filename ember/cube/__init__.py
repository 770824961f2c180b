"""ember.cube: write a kernel once in Python, run it on the CPU (C), CUDA and WebGPU.

>>> import numpy as np
>>> from ember import cube
>>> @cube.kernel
... def scale(x: cube.Array[cube.f32], out: cube.Array[cube.f32], a: cube.f32):
...     i = cube.global_idx.x
...     if i < x.size:
...         out[i] = a * x[i]
>>> x = np.arange(5, dtype=np.float32); out = np.empty_like(x)
>>> scale[cube.cdiv(x.size, 128), 128](x, out, 2.0)
>>> out
array([0., 2., 4., 6., 8.], dtype=float32)

The guide is docs/kernels.md.
"""

from .cache import cache_dir
from .errors import CompileError, CompilerUnavailable, LaunchError
from .intrinsics import *  # noqa: F401,F403 - the kernel language's functions and geometry
from .intrinsics import MATH, block_dim, block_idx, cdiv, global_idx, grid_dim, lane_id, thread_idx, warp_size
from .launch import Kernel, func, kernel
from .types import Any, Array, Const, Scalar, bf16, bool_, f16, f32, f64, i32, i64, u32

__all__ = [
    "kernel", "func", "Kernel", "Array", "Const", "Any", "Scalar", "bool_", "i32", "u32", "i64", "f16", "bf16",
    "f32", "f64", "CompileError", "LaunchError", "CompilerUnavailable", "cdiv", "thread_idx", "block_idx",
    "block_dim", "grid_dim", "global_idx", "warp_size", "lane_id", "cache_dir", "library", "MATH",  # noqa: F405
]


def __getattr__(name):
    if name == "library":  # imported on first use: it defines (and parses) many kernels
        import importlib
        mod = importlib.import_module(".library", __name__)
        globals()["library"] = mod
        return mod
    raise AttributeError(f"module 'ember.cube' has no attribute {name!r}")
