"""``@cube.kernel`` and launching: ``kern[grid, block](*args)``.

A launch binds the arguments to the kernel's annotations, picks the device from the array
arguments (numpy arrays and CPU ember tensors: the C target; CuPy arrays and CUDA tensors: CUDA;
:class:`ember.cube.runtime.wgpu.WgpuArray`: WebGPU), finds or builds the *variant* of the kernel for
its constants, block shape and dtypes (in memory, then in the disk cache, then by compiling), and
runs it. Errors say which argument is wrong and why.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from . import analysis
from .cache import Timer, debug, debug_level
from .errors import LaunchError
from .frontend import Frontend, Source, param_specs
from .types import Any, Scalar, bool_, f64, i32, i64, u32

__all__ = ["kernel", "func", "Kernel", "Launch", "ArrayArg"]

MAX_THREADS = 1024
_INT_RANGE = {i32: (-(2 ** 31), 2 ** 31 - 1), u32: (0, 2 ** 32 - 1), i64: (-(2 ** 63), 2 ** 63 - 1)}


@dataclass
class ArrayArg:
    """An array argument as a runtime sees it."""
    device: str  # 'cpu', 'cuda:0', 'wgpu'
    handle: object  # numpy array, CuPy array, WgpuArray
    elem: Scalar
    shape: tuple
    tensor: object = None  # the ember Tensor it came from, if any
    writeable: bool = True


def _norm_dims(v, what: str) -> tuple:
    dims = (v,) if isinstance(v, int | np.integer) else tuple(v) if isinstance(v, tuple | list) else None
    if dims is None or not 1 <= len(dims) <= 3 or not all(isinstance(d, int | np.integer) and not isinstance(d, bool)
                                                          for d in dims):
        raise LaunchError(f"the {what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if any(d < 0 for d in dims) or (what == "block" and any(d < 1 for d in dims)):
        raise LaunchError(f"the {what} must be positive, got {v!r}")
    return dims


# cube.kernel(eviction_policy=...): the cache hints a kernel's loads may carry (None: none)
EVICTION_POLICIES = frozenset({None, "evict_last", "evict_first"})


class Kernel:
    """A kernel written in Python. Launch it with ``kern[grid, block](*args)``.

    >>> @cube.kernel
    ... def add(x: cube.Array[cube.f32], y: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    ...     i = cube.global_idx.x
    ...     if i < out.size:
    ...         out[i] = x[i] + y[i]
    >>> add[cube.cdiv(n, 256), 256](x, y, out)  # doctest: +SKIP
    """

    def __init__(self, fn, name: str | None = None, contract: bool = False, eviction_policy: str | None = None):
        if eviction_policy not in EVICTION_POLICIES:
            raise ValueError(f"cube.kernel: eviction_policy must be one of {sorted(p for p in EVICTION_POLICIES if p)} "
                             f"or None, got {eviction_policy!r}")
        self.fn = fn
        self.contract = bool(contract)
        self.eviction_policy = eviction_policy
        self.__name__ = name or fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source = Source(fn)
        self.specs = param_specs(self.source)
        self.variants: dict = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<cube.kernel {self.__name__}>"

    def __getitem__(self, config) -> Launch:
        if not isinstance(config, tuple) or len(config) != 2:
            raise LaunchError(f"launch a kernel as {self.__name__}[grid, block](*args), got [{config!r}]")
        grid, block = _norm_dims(config[0], "grid"), _norm_dims(config[1], "block")
        if math.prod(block) > MAX_THREADS:
            raise LaunchError(f"a block has at most {MAX_THREADS} threads, got {block} = {math.prod(block)}")
        if any(g >= 2 ** 31 for g in grid):
            raise LaunchError(f"grid dimensions must be below 2**31, got {grid}")
        return Launch(self, grid, block)

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"launch a kernel with a grid and a block: {self.__name__}[grid, block](*args)")

    # ---- arguments ------------------------------------------------------------------------------
    def bind(self, args: tuple) -> tuple[list, list, str]:
        """(values for the runtime, variant key parts, device) for a call's arguments."""
        params = self.source.params
        if len(args) != len(params):
            raise LaunchError(f"kernel '{self.__name__}' takes {len(params)} arguments ({', '.join(params)}), "
                              f"got {len(args)}")
        values, key, devices = [], [], {}
        for name, a in zip(params, args):
            kind, ann = self.specs[name]
            if kind == "const":
                try:
                    hash(a)
                except TypeError:
                    raise LaunchError(f"argument '{name}' of kernel '{self.__name__}' is a cube.Const and must be "
                                      f"hashable, got {type(a).__name__}") from None
                if ann.py in (int, float, bool) and not isinstance(a, ann.py):
                    if not (ann.py is float and isinstance(a, int) and not isinstance(a, bool)):
                        what = _article(ann.py.__name__)
                        raise LaunchError(f"argument '{name}' of kernel '{self.__name__}' must be {what}"
                                          f" (cube.Const[{ann.py.__name__}]), got {a!r}")
                values.append(None)
                key.append(("const", type(a).__name__, a))
            elif kind == "scalar":
                values.append(_scalar(a, ann, name, self.__name__))
                key.append(None)
            else:
                arr = _array_arg(a, name, self.__name__)
                if ann.elem is not Any and arr.elem is not ann.elem:
                    raise LaunchError(f"argument '{name}' of kernel '{self.__name__}' must be an array of "
                                      f"{ann.elem.name} ({ann!r}), got {arr.elem.name}")
                if ann.ndim is not None and len(arr.shape) != ann.ndim:
                    raise LaunchError(f"argument '{name}' of kernel '{self.__name__}' must have {ann.ndim} dims "
                                      f"({ann!r}), got shape {tuple(arr.shape)}")
                if math.prod(arr.shape) >= 2 ** 31:
                    raise LaunchError(f"argument '{name}' of kernel '{self.__name__}' has {math.prod(arr.shape)} "
                                      "elements; cube arrays hold fewer than 2**31 (indices are i32)")
                devices.setdefault(arr.device, name)
                values.append(arr)
                key.append(("array", arr.elem.name, ann.ndim))
        if len(devices) > 1:
            desc = ", ".join(f"'{n}' on {d}" for d, n in devices.items())
            raise LaunchError(f"kernel '{self.__name__}' got arrays on different devices ({desc}); move them to one")
        device = next(iter(devices), "cpu")
        return values, key, device

    def variant(self, runtime, block: tuple, key: list):
        """The compiled variant for a runtime, block shape and argument key (built on first use)."""
        vkey = (runtime.key, block, tuple(key))
        v = self.variants.get(vkey)
        if v is not None:
            return v
        with self._lock:
            v = self.variants.get(vkey)
            if v is None:
                v = self._build(runtime, block, key)
                self.variants[vkey] = v
        return v

    def specialise(self, runtime, block: tuple, key: list):
        """The IR and plan of a variant (no compilation)."""
        args = {}
        for name, part in zip(self.source.params, key):
            kind, ann = self.specs[name]
            if kind == "const":
                args[name] = ("const", part[2])
            elif kind == "scalar":
                args[name] = ("scalar", ann)
            else:
                from .types import scalar_of
                args[name] = ("array", scalar_of(part[1]), ann.ndim)
        with Timer(f"frontend {self.__name__}"):
            kir = Frontend(self.source, args, block, runtime.frontend_target).build()
            kir.contract = self.contract
            kir.eviction = self.eviction_policy
            plan = analysis.plan(kir)
        return kir, plan

    def _build(self, runtime, block, key):
        kir, plan = self.specialise(runtime, block, key)
        source = runtime.render(kir, plan)
        if debug_level() >= 1:
            debug(1, f"kernel '{self.__name__}' for {runtime.key}, block {block}:\n{source}")
        obj = runtime.compile(kir, plan, source)
        ir_names = iter(kir.params)
        written = set()
        for name in self.source.params:
            if self.specs[name][0] != "const":
                p = next(ir_names)
                if p.kind == "array" and kir.arrays[p.name].written:
                    written.add(name)
        return Variant(obj, frozenset(written), source, kir)

    def generated_source(self, *args, block=256, device: str | None = None) -> str:
        """The source code the kernel compiles to for these arguments (C for numpy arrays...).

        ``device`` picks another target for the same arguments' types: ``"cuda"`` or ``"wgpu"``
        render without needing the device (nothing is compiled).
        """
        values, key, dev = self.bind(args)
        runtime = get_runtime(device or dev)
        kir, plan = self.specialise(runtime, _norm_dims(block, "block"), key)
        return runtime.render(kir, plan)


@dataclass(frozen=True)
class Variant:
    """A compiled specialisation of a kernel."""
    obj: object  # what the runtime launches
    written: frozenset  # names of the array parameters the kernel stores into
    source: str
    ir: object

    def writes(self, name: str) -> bool:
        return name in self.written


class Launch:
    """``kern[grid, block]``: call it with the kernel's arguments."""

    __slots__ = ("kernel", "grid", "block")

    def __init__(self, kernel: Kernel, grid: tuple, block: tuple):
        self.kernel, self.grid, self.block = kernel, grid, block

    def __call__(self, *args) -> None:
        k = self.kernel
        values, key, device = k.bind(args)
        runtime = get_runtime(device)
        compiled = k.variant(runtime, self.block, key)
        for (name, val) in zip(k.source.params, values):
            if isinstance(val, ArrayArg) and compiled.writes(name):
                _check_writeable(val, name, k.__name__)
        if 0 in self.grid:
            return
        runtime.launch(compiled.obj, self.grid, self.block, values)
        for name, val in zip(k.source.params, values):
            if isinstance(val, ArrayArg) and val.tensor is not None and compiled.writes(name):
                _bump(val.tensor)


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _scalar(a, t: Scalar, name: str, kname: str):
    if isinstance(a, np.ndarray) and a.ndim == 0:
        a = a[()]
    if hasattr(a, "item") and not isinstance(a, np.generic) and type(a).__name__ == "Tensor":
        if a.numel() != 1:
            raise LaunchError(f"argument '{name}' of kernel '{kname}' is a {t.name} scalar, got a tensor of shape "
                              f"{tuple(a.shape)}")
        a = a.item()
    if isinstance(a, np.generic):
        a = a.item()
    if t is bool_:
        if not isinstance(a, bool):
            raise LaunchError(f"argument '{name}' of kernel '{kname}' must be a bool, got {a!r}")
        return a
    if t.is_int:
        if isinstance(a, bool) or not isinstance(a, int):
            raise LaunchError(f"argument '{name}' of kernel '{kname}' must be an int ({t.name}), got {a!r}")
        lo, hi = _INT_RANGE[t]
        if not lo <= a <= hi:
            raise LaunchError(f"argument '{name}' of kernel '{kname}' = {a} does not fit in {t.name}")
        return a
    if isinstance(a, bool) or not isinstance(a, int | float):
        raise LaunchError(f"argument '{name}' of kernel '{kname}' must be a number ({t.name}), got {a!r}")
    return float(a) if t is f64 else float(np.float32(a))


def _array_arg(a, name: str, kname: str) -> ArrayArg:
    from .runtime import adapt_array
    arr = adapt_array(a)
    if arr is None:
        raise LaunchError(f"argument '{name}' of kernel '{kname}' must be an array (numpy, ember tensor, CuPy or "
                          f"cube.wgpu array), got {type(a).__name__}")
    if isinstance(arr, str):
        raise LaunchError(f"argument '{name}' of kernel '{kname}': {arr}")
    return arr


def _check_writeable(arr: ArrayArg, name: str, kname: str) -> None:
    t = arr.tensor
    if t is not None and t.requires_grad:
        raise LaunchError(f"kernel '{kname}' writes argument '{name}', a tensor that requires grad; kernels are not "
                          "differentiable: pass a tensor that doesn't require grad (or .detach() it)")
    if not arr.writeable:
        raise LaunchError(f"kernel '{kname}' writes argument '{name}', which is read-only")


def _bump(tensor) -> None:
    """Tell autograd that a kernel wrote into a tensor's storage (its saved values are stale)."""
    backend = tensor._device.backend
    from ..backend.autodiff import Autodiff
    from ..backend.autodiff.graph import bump
    if isinstance(backend, Autodiff):
        h = tensor._h
        bump(backend.inner.storage(getattr(h, "value", h)))


_RUNTIMES: dict = {}


def get_runtime(device: str):
    """The runtime for a device string ('cpu', 'cuda', 'cuda:1', 'wgpu')."""
    rt = _RUNTIMES.get(device)
    if rt is not None:
        return rt
    kind, _, idx = device.partition(":")
    if kind == "cpu":
        from .runtime.c import CpuRuntime
        rt = CpuRuntime()
    elif kind == "cuda":
        from .runtime.cuda import CudaRuntime
        rt = CudaRuntime(int(idx) if idx else None)
    elif kind == "wgpu":
        from .runtime.wgpu import WgpuRuntime
        rt = WgpuRuntime()
    elif kind == "hip":
        from .runtime.hip import HipRuntime
        rt = HipRuntime()
    else:
        raise LaunchError(f"ember.cube has no runtime for device {device!r} (cpu, cuda, wgpu; hip renders only)")
    _RUNTIMES[device] = rt
    return rt


def kernel(fn=None, *, name: str | None = None, contract: bool = False, eviction_policy: str | None = None):
    """Decorate a Python function as a cube kernel (see :class:`Kernel` and docs/kernels.md).

    ``contract=True`` lets the GPU compilers fuse ``a * b + c`` into one fused multiply-add (nvcc's
    default, and what PyTorch's CUDA kernels are built with): faster, and each such result rounds once
    instead of twice, so it can differ from numpy's in the last bit. By default cube rounds every
    operation, as numpy and the C target do; ``cube.fma`` fuses one product explicitly either way.

    ``eviction_policy`` ("evict_last" or "evict_first", as Triton's ``tl.load`` takes it) is a cache hint
    for the vector loads (``x.vec2[i]``, ``x.vec4[i]``) of 32-bit arrays the kernel only reads: on CUDA they
    carry that L1 priority and an L2 cache policy (other loads and targets ignore it). Fusion's row
    kernels (layer norm, softmax: each row read once, into registers) use "evict_last": on an H200 they
    move ~4% more bytes per second with it.

    >>> @cube.kernel(eviction_policy="evict_last")
    ... def scale(x: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    ...     i = cube.global_idx.x
    ...     if i * 4 < out.size:
    ...         out.vec4[i] = x.vec4[i] * 2.0  # x's 16-byte load carries the hint on CUDA
    """
    if fn is None:
        return lambda f: Kernel(f, name, contract, eviction_policy)
    return Kernel(fn, name, contract, eviction_policy)


class DeviceFunction:
    """``@cube.func``: a helper a kernel calls; its body is inlined at each call.

    Outside a kernel it is the plain Python function.
    """

    __cube_func__ = True

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._source = None

    def __cube_source__(self) -> Source:
        if self._source is None:
            self._source = Source(self.fn)
        return self._source

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cube.func {self.__name__}>"


def func(fn):
    """Decorate a helper function that kernels may call (inlined; may return one value at its end)."""
    return DeviceFunction(fn)

