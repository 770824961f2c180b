"""The names a kernel may call: math functions, launch geometry, memory, atomics, warp operations.

These objects only mark what a kernel means; the frontend recognises them by identity. Called
from ordinary Python (outside a kernel) they raise, except :func:`cdiv`, which is useful on the host.
"""

from __future__ import annotations

import math

__all__ = ["Intrinsic", "Geometry", "thread_idx", "block_idx", "block_dim", "grid_dim", "global_idx",
           "warp_size", "lane_id", "MATH", "cdiv"]


class Intrinsic:
    """A function of the kernel language (``cube.exp``, ``cube.atomic_add``, ``cube.sync_threads``...)."""

    def __init__(self, name: str, kind: str, doc: str = ""):
        self.name, self.kind, self.__doc__ = name, kind, doc

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"cube.{self.name}() can only be used inside a @cube.kernel function")

    def __repr__(self) -> str:
        return f"<cube intrinsic {self.name}>"


class Geometry:
    """``cube.thread_idx`` and friends: ``.x``, ``.y``, ``.z`` inside a kernel (i32)."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __getattr__(self, axis):
        raise RuntimeError(f"cube.{self.what}.{axis} can only be used inside a @cube.kernel function")

    def __repr__(self) -> str:
        return f"<cube {self.what}>"


thread_idx = Geometry("thread_idx")  # the thread's index within its block
block_idx = Geometry("block_idx")  # the block's index within the grid
block_dim = Geometry("block_dim")  # threads per block along each axis (a compile-time constant)
grid_dim = Geometry("grid_dim")  # blocks in the grid along each axis
global_idx = Geometry("global_idx")  # block_idx * block_dim + thread_idx


# ---- math: name -> (number of args, 'float' for float-only or 'num' for ints and floats, doc) ----------
MATH: dict[str, tuple[int, str]] = {
    **{n: (1, "float") for n in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil", "trunc",
        "round", "sigmoid")},
    **{n: (2, "float") for n in ("pow", "atan2", "copysign", "hypot", "fmod", "fmin", "fmax")},
    "fma": (3, "float"),
    "isnan": (1, "pred"), "isinf": (1, "pred"), "isfinite": (1, "pred"),
    "abs": (1, "num"), "min": (2, "num"), "max": (2, "num"),
}
_MATH_DOCS = {
    "round": "round half to even", "rsqrt": "1 / sqrt(x)", "sigmoid": "1 / (1 + exp(-x))",
    "min": "minimum; NaN if either is NaN", "max": "maximum; NaN if either is NaN",
    "fmin": "minimum ignoring NaN", "fmax": "maximum ignoring NaN", "fma": "x * y + z rounded once",
}
for _name in MATH:
    globals()[_name] = Intrinsic(_name, "math", _MATH_DOCS.get(_name, f"{_name}(x) elementwise"))
__all__ += list(MATH)

# math-module functions a kernel may call under their Python names
PY_MATH = {getattr(math, n): n for n in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil", "trunc", "pow", "atan2",
    "copysign", "hypot", "fmod", "isnan", "isinf", "isfinite", "fma") if hasattr(math, n)}
PY_MATH[math.fabs] = "abs"

_OTHER = {
    "where": ("select", "where(cond, a, b): a where cond is true, else b"),
    "sync_threads": ("barrier", "wait until every thread of the block gets here; shared memory writes before it "
                                "are visible after it"),
    "shared": ("alloc", "shared(dtype, shape): an array shared by the threads of a block"),
    "local": ("alloc", "local(dtype, shape): a small array private to each thread"),
    "load": ("memory", "load(array, index, mask=None, other=0): array[index] where mask, else other"),
    "store": ("memory", "store(array, index, value, mask=None): array[index] = value where mask"),
    "vec2": ("vector", "vec2(a, b): a 2-lane vector"),
    "vec4": ("vector", "vec4(a, b, c, d): a 4-lane vector"),
    **{f"atomic_{op}": ("atomic", f"atomic_{op}(array, index, value): atomic {op}; returns the old value")
       for op in ("add", "sub", "max", "min", "and", "or", "xor", "xchg")},
    "atomic_cas": ("atomic", "atomic_cas(array, index, compare, value): store value if the element equals compare; "
                             "returns the old value"),
    **{f"warp_{op}": ("collective", f"warp_{op}(v): the {op} of v over the lanes of the warp") for op in
       ("sum", "max", "min")},
    "shfl": ("collective", "shfl(v, lane): v of another lane of the warp"),
    "shfl_down": ("collective", "shfl_down(v, delta): v of lane + delta (own v past the warp's end)"),
    "shfl_up": ("collective", "shfl_up(v, delta): v of lane - delta (own v before the warp's start)"),
    "shfl_xor": ("collective", "shfl_xor(v, mask): v of lane ^ mask"),
    "static_range": ("range", "static_range(...): a range() whose loop the compiler fully unrolls"),
}
for _name, (_kind, _doc) in _OTHER.items():
    globals()[_name] = Intrinsic(_name, _kind, _doc)
__all__ += list(_OTHER)

warp_size = Intrinsic("warp_size", "value", "lanes per warp (32 on the C and CUDA targets)")
lane_id = Intrinsic("lane_id", "value", "the thread's lane within its warp")

BY_ID = {id(v): v for v in list(globals().values()) if isinstance(v, Intrinsic)}


def cdiv(a: int, b: int) -> int:
    """Ceiling division ``-(-a // b)``: the number of blocks of ``b`` threads that cover ``a`` items.

    Usable on the host and inside kernels.

    >>> cdiv(1000, 256)
    4
    """
    return -(-a // b)
