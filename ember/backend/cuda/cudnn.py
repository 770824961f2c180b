"""cuDNN convolutions for the CUDA backend, called through ctypes (no Python binding needed).

CuPy 14 no longer wraps cuDNN, yet cuDNN's convolutions are several times faster than im2col plus
a GEMM. The library comes from the ``nvidia-cudnn-cu12``/``-cu13`` wheel (``pip install ember[cuda]``
installs it; PyTorch's CUDA wheels bring it too) or from the system (``libcudnn.so.9``/``.8``). When it
is absent, or ``ember.backends.cudnn.enabled`` is False, or a case is one cuDNN doesn't take
(asymmetric padding, integer dtypes, more than 3 spatial dims), every function here returns None and
the backend's im2col path runs instead.

Only cuDNN's long-standing convolution API is used (descriptors, ``cudnnGetConvolution*Algorithm_v7``
or ``cudnnFind*AlgorithmEx`` when ``ember.backends.cudnn.benchmark`` is True, and the three
convolution calls). Descriptors and the chosen algorithm are cached per shape, so a training step
costs one dictionary lookup and one cuDNN call per convolution. Workspaces come from CuPy's memory
pool. Calls run on CuPy's current stream.

>>> from ember.backend.cuda import cudnn
>>> cudnn.version()          # doctest: +SKIP
91500
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os

import numpy as np

from ..meta import conv_out_size
from ..switches import cudnn as _switches
from . import cudnn_graph

__all__ = ["available", "version", "routes", "conv_forward", "conv_backward_data", "conv_backward_filter", "CudnnError"]


class CudnnError(RuntimeError):
    """A cuDNN call failed; the message names the call and cuDNN's status."""


# cuDNN enums (cudnn_graph.h / cudnn_cnn.h; stable since cuDNN 7)
_DATA = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 9}
_NCHW = 0
_CROSS_CORRELATION = 1
_DEFAULT_MATH, _TENSOR_OP_MATH, _FMA_MATH = 0, 1, 3
_NOT_SUPPORTED = 9


class _Perf(ctypes.Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the three share this layout."""
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int), ("mathType", ctypes.c_int),
                ("reserved", ctypes.c_int * 3)]


_SUBLIBS = ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv")


def _candidates() -> list[str]:
    """Where libcudnn may be: the NVIDIA wheel's directory first, then the loader's search path."""
    paths = []
    if os.environ.get("EMBER_CUDNN_PATH"):
        paths.append(os.environ["EMBER_CUDNN_PATH"])
    try:
        import nvidia.cudnn as wheel  # namespace package of nvidia-cudnn-cu12 / -cu13
        for d in wheel.__path__:
            paths += sorted(glob.glob(os.path.join(d, "lib", "libcudnn.so.*")), reverse=True)
    except ImportError:
        pass
    paths += ["libcudnn.so.9", "libcudnn.so.8"]
    found = ctypes.util.find_library("cudnn")
    if found:
        paths.append(found)
    return paths


class _Lib:
    """The loaded library with argument types declared for the calls used here."""

    def __init__(self, path: str):
        folder = os.path.dirname(path)
        if folder:  # cuDNN 9 loads its parts by name: load them first, from the same folder
            for part in _SUBLIBS:
                for f in glob.glob(os.path.join(folder, f"libcudnn_{part}.so.*")):
                    try:
                        ctypes.CDLL(f, mode=ctypes.RTLD_GLOBAL)
                    except OSError:
                        pass
        self.lib = lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.path = path
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        lib.cudnnGetErrorString.restype = ctypes.c_char_p
        vp, ip, i = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int
        sig = {
            "cudnnCreate": [ctypes.POINTER(vp)],
            "cudnnSetStream": [vp, vp],
            "cudnnCreateTensorDescriptor": [ctypes.POINTER(vp)],
            "cudnnSetTensorNdDescriptor": [vp, i, i, ip, ip],
            "cudnnCreateFilterDescriptor": [ctypes.POINTER(vp)],
            "cudnnSetFilterNdDescriptor": [vp, i, i, i, ip],
            "cudnnCreateConvolutionDescriptor": [ctypes.POINTER(vp)],
            "cudnnSetConvolutionNdDescriptor": [vp, i, ip, ip, ip, i, i],
            "cudnnSetConvolutionGroupCount": [vp, i],
            "cudnnSetConvolutionMathType": [vp, i],
        }
        for name, args in sig.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = ctypes.c_int
        self.handles: dict = {}
        self.streams: dict = {}  # device -> the stream its handle was last set to
        # the graph API (cuDNN >= 8.x), whose cached execution plans cost far less host time per call
        self.graph = cudnn_graph.bind(lib) and os.environ.get("EMBER_CUDNN_GRAPH", "1") != "0"

    def check(self, status: int, call: str) -> None:
        if status != 0:
            msg = self.lib.cudnnGetErrorString(status).decode(errors="replace")
            raise CudnnError(f"cuDNN {call} failed: {msg} (status {status})")

    def handle(self, device: int):
        h = self.handles.get(device)
        if h is None:
            h = ctypes.c_void_p()
            self.check(self.lib.cudnnCreate(ctypes.byref(h)), "cudnnCreate")
            self.handles[device] = h
        return h


_state: dict = {}


def _lib() -> _Lib | None:
    """The library, loaded once; None when it can't be found or loaded (or EMBER_CUDNN=0)."""
    if "lib" in _state:
        return _state["lib"]
    lib = None
    if os.environ.get("EMBER_CUDNN", "1") != "0":
        for path in _candidates():
            try:
                lib = _Lib(path)
                break
            except (OSError, AttributeError):
                continue
    _state["lib"] = lib
    return lib


def available() -> bool:
    """Whether cuDNN could be loaded (and is not switched off by EMBER_CUDNN=0)."""
    return _lib() is not None


def version() -> int | None:
    """cuDNN's version number (e.g. 91500 for 9.15.0), or None without cuDNN."""
    lib = _lib()
    return None if lib is None else int(lib.lib.cudnnGetVersion())


def _flags():
    """ember.backends.cudnn's switches (read at every call: users flip them between calls)."""
    return _switches


def _ints(seq) -> ctypes.Array:
    return (ctypes.c_int * len(seq))(*[int(v) for v in seq])




class _Plan:
    """Descriptors of one convolution shape and the algorithm chosen for one direction."""

    __slots__ = ("x", "w", "y", "conv", "algo", "workspace", "lib")

    def __init__(self, lib: _Lib, dtype: str, xs, ws, ys, pad, stride, dilation, groups, math_type):
        self.lib = lib
        L = lib.lib
        data = _DATA[dtype]
        compute = _DATA["float64"] if dtype == "float64" else _DATA["float32"]
        self.x, self.y = self._tensor(xs, data), self._tensor(ys, data)
        self.w = ctypes.c_void_p()
        lib.check(L.cudnnCreateFilterDescriptor(ctypes.byref(self.w)), "cudnnCreateFilterDescriptor")
        lib.check(L.cudnnSetFilterNdDescriptor(self.w, data, _NCHW, len(ws), _ints(ws)), "cudnnSetFilterNdDescriptor")
        self.conv = ctypes.c_void_p()
        lib.check(L.cudnnCreateConvolutionDescriptor(ctypes.byref(self.conv)), "cudnnCreateConvolutionDescriptor")
        lib.check(L.cudnnSetConvolutionNdDescriptor(self.conv, len(pad), _ints(pad), _ints(stride), _ints(dilation),
                                                    _CROSS_CORRELATION, compute), "cudnnSetConvolutionNdDescriptor")
        lib.check(L.cudnnSetConvolutionGroupCount(self.conv, groups), "cudnnSetConvolutionGroupCount")
        lib.check(L.cudnnSetConvolutionMathType(self.conv, math_type), "cudnnSetConvolutionMathType")
        self.algo = None
        self.workspace = 0

    def _tensor(self, shape, data):
        d = ctypes.c_void_p()
        L = self.lib.lib
        self.lib.check(L.cudnnCreateTensorDescriptor(ctypes.byref(d)), "cudnnCreateTensorDescriptor")
        strides = _ints(cudnn_graph.contiguous_strides(shape))
        self.lib.check(L.cudnnSetTensorNdDescriptor(d, data, len(shape), _ints(shape), strides),
                       "cudnnSetTensorNdDescriptor")
        return d


# per direction: (heuristic call, find call, workspace-size call, run call)
_CALLS = {
    "fwd": ("cudnnGetConvolutionForwardAlgorithm_v7", "cudnnFindConvolutionForwardAlgorithmEx",
            "cudnnGetConvolutionForwardWorkspaceSize", "cudnnConvolutionForward"),
    "data": ("cudnnGetConvolutionBackwardDataAlgorithm_v7", "cudnnFindConvolutionBackwardDataAlgorithmEx",
             "cudnnGetConvolutionBackwardDataWorkspaceSize", "cudnnConvolutionBackwardData"),
    "filter": ("cudnnGetConvolutionBackwardFilterAlgorithm_v7", "cudnnFindConvolutionBackwardFilterAlgorithmEx",
               "cudnnGetConvolutionBackwardFilterWorkspaceSize", "cudnnConvolutionBackwardFilter"),
}
_MAX_PLANS = 512


def _descs(plan: _Plan, direction: str):
    """The descriptor order of each direction's calls: (first tensor, second tensor, output)."""
    if direction == "fwd":
        return plan.x, plan.w, plan.y        # x, w -> y
    if direction == "data":
        return plan.w, plan.y, plan.x        # w, dy -> dx
    return plan.x, plan.y, plan.w            # x, dy -> dw


def _choose(lib: _Lib, handle, plan: _Plan, direction: str, bufs) -> bool:
    """Pick the algorithm (heuristics, or timing runs under benchmark=True); False if none fits."""
    get, find, size_call, _ = _CALLS[direction]
    L = lib.lib
    perf = (_Perf * 8)()
    n = ctypes.c_int(0)
    a, b, c = _descs(plan, direction)
    if _flags().benchmark and bufs is not None:
        import cupy
        ws_bytes = 256 << 20
        ws = cupy.empty(ws_bytes, np.uint8)
        pa, pb, pc = bufs
        status = getattr(L, find)(handle, a, ctypes.c_void_p(pa), b, ctypes.c_void_p(pb), plan.conv, c,
                                  ctypes.c_void_p(pc), 8, ctypes.byref(n), perf, ctypes.c_void_p(ws.data.ptr),
                                  ctypes.c_size_t(ws_bytes))
    else:
        status = getattr(L, get)(handle, a, b, plan.conv, c, 8, ctypes.byref(n), perf)
    if status == _NOT_SUPPORTED:
        return False
    lib.check(status, get)
    deterministic = _flags().deterministic
    for k in range(n.value):
        p = perf[k]
        if p.status != 0 or (deterministic and p.determinism != 1):
            continue
        size = ctypes.c_size_t(0)
        if getattr(L, size_call)(handle, a, b, plan.conv, c, p.algo, ctypes.byref(size)) != 0:
            continue
        plan.algo, plan.workspace = p.algo, size.value
        return True
    return False


def _run(direction: str, key: tuple, build, ptrs: tuple, out_ptr: int, dtype: str, device: int, cupy) -> bool:
    """Run one convolution call; False when cuDNN has no algorithm for it (the caller falls back)."""
    lib = _lib()
    handle = lib.handle(device)
    L = lib.lib
    stream = cupy.cuda.get_current_stream().ptr
    L.cudnnSetStream(handle, ctypes.c_void_p(stream))
    lib.streams[device] = stream
    cache = _state.setdefault("plans", {})
    plan = cache.get(key)
    if plan is None:
        if len(cache) >= _MAX_PLANS:
            cache.clear()
        plan = build()
        # the buffers in the order of the direction's descriptors (see _descs), for benchmark timing
        if not _choose(lib, handle, plan, direction, (ptrs[0], ptrs[1], out_ptr)):
            plan.algo = -1
        cache[key] = plan
    if plan.algo == -1:
        return False
    ws = cupy.empty(plan.workspace, np.uint8) if plan.workspace else None
    ws_ptr = ctypes.c_void_p(ws.data.ptr if ws is not None else 0)
    if dtype == "float64":
        one, zero = ctypes.c_double(1.0), ctypes.c_double(0.0)
    else:
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    a, b, c = _descs(plan, direction)
    call = _CALLS[direction][3]
    status = getattr(L, call)(handle, ctypes.byref(one), a, ctypes.c_void_p(ptrs[0]), b, ctypes.c_void_p(ptrs[1]),
                              plan.conv, plan.algo, ws_ptr, ctypes.c_size_t(plan.workspace), ctypes.byref(zero), c,
                              ctypes.c_void_p(out_ptr))
    lib.check(status, call)
    return True


# ---- the three convolutions, in the CUDA backend's op conventions -----------------------------------

def routes(kernel) -> bool:
    """Whether the CUDA backend sends a convolution with this kernel size to cuDNN: cuDNN is enabled and
    loaded with its graph API (cached plans: a call costs little host time; the legacy calls cost more
    than ember's GEMM path, so they are used only when called directly). ``EMBER_CUDNN_CONV=spatial``
    keeps 1x1 kernels on ember's GEMMs, ``EMBER_CUDNN_CONV=0`` every kernel."""
    if not _flags().enabled:
        return False
    lib = _lib()
    if lib is None or not lib.graph:
        return False
    policy = _state.get("policy")
    if policy is None:
        policy = _state["policy"] = os.environ.get("EMBER_CUDNN_CONV", "all")
    if policy == "all":
        return True
    return policy == "spatial" and any(k != 1 for k in kernel)


def _usable(x, w, padding) -> str | None:
    """cuDNN's dtype name for this case, or None when the im2col path must take it."""
    if not _flags().enabled or _lib() is None:
        return None
    name = _dtype_name(x.dtype)
    if name is None or x.dtype != w.dtype or not 1 <= x.ndim - 2 <= 3:
        return None
    if any(lo < 0 for lo, _ in padding):
        return None
    return name


_NAMES: dict = {}  # numpy dtype -> cuDNN's dtype name or None (numpy's dtype.name is slow to compute)


def _dtype_name(dt) -> str | None:
    got = _NAMES.get(dt, False)
    if got is False:
        name = np.dtype(dt).name
        got = _NAMES[dt] = name if name in _DATA else None
    return got


def _math(dtype: str) -> int:
    if dtype in ("float16", "bfloat16"):
        return _TENSOR_OP_MATH
    if dtype == "float32":
        return _DEFAULT_MATH if _flags().allow_tf32 else _FMA_MATH
    return _DEFAULT_MATH


def _as4d(shape, nd):
    """1-d convolutions run as 2-d ones with a unit height (cuDNN wants at least 4-d descriptors)."""
    return tuple(shape) if nd > 1 else tuple(shape[:2]) + (1,) + tuple(shape[2:])


def _geometry(nd, stride, padding, dilation):
    """(padding before, padding after, stride, dilation) as lists, with the unit height of 1-d cases."""
    lo, hi = [a for a, _ in padding], [b for _, b in padding]
    stride, dilation = list(stride), list(dilation)
    if nd == 1:
        lo, hi, stride, dilation = [0] + lo, [0] + hi, [1] + stride, [1] + dilation
    return lo, hi, stride, dilation


def _graph(direction: str, dtype: str, shapes: dict, lo, hi, stride, dilation, ptrs: tuple, device: int, cupy) -> bool:
    """Run one convolution through the graph API's cached execution plan (pointers in the roles x, w, y);
    False when the library lacks that API or no engine takes the case (the legacy call is tried next)."""
    lib = _lib()
    if not lib.graph or min(lo + hi, default=0) < 0:
        return False
    flags = _flags()
    align = cudnn_graph.alignment(*ptrs)
    key = (direction, dtype, shapes["x"], shapes["w"], shapes["y"], tuple(lo), tuple(hi), tuple(stride),
           tuple(dilation), align, flags.allow_tf32, flags.deterministic, flags.benchmark, device)
    cache = _state.setdefault("graph_plans", {})
    handle = lib.handle(device)
    stream = ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)
    plan = cache.get(key, False)
    if plan is False:
        if len(cache) >= _MAX_PLANS:
            for old in cache.values():
                if old is not None:
                    old.close()
            cache.clear()
        lib.lib.cudnnSetStream(handle, stream)
        lib.streams[device] = stream.value
        plans = cudnn_graph.build(lib, handle, direction, dtype, shapes, lo, hi, stride, dilation, align,
                                  flags.allow_tf32, flags.deterministic, 8 if flags.benchmark else 1)
        plan = _fastest(plans, handle, ptrs, cupy) if len(plans) > 1 else (plans[0] if plans else None)
        cache[key] = plan
    if plan is None:
        return False
    if lib.streams.get(device) != stream.value:  # the handle follows CuPy's current stream
        lib.lib.cudnnSetStream(handle, stream)
        lib.streams[device] = stream.value
    ws = cupy.empty(plan.workspace, np.uint8) if plan.workspace else None
    plan.run(handle, ptrs, ws.data.ptr if ws is not None else 0)
    return True


def _fastest(plans: list, handle, ptrs: tuple, cupy):
    """``benchmark = True``: time each candidate plan on the call's own buffers (the output is written
    again by the real run) and keep the fastest; the others are destroyed."""
    times = []
    for plan in plans:
        ws = cupy.empty(plan.workspace, np.uint8) if plan.workspace else None
        wp = ws.data.ptr if ws is not None else 0
        plan.run(handle, ptrs, wp)  # warm-up
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(3):
            plan.run(handle, ptrs, wp)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    best = plans[times.index(min(times))]
    best.shared, plans[0].shared = plans[0].shared, best.shared  # what the plans were made from
    for plan in plans:
        if plan is not best:
            plan.close()
    return best


def conv_forward(x, w, *, stride, padding, dilation, groups):
    """y = conv(x, w) for CuPy arrays x (N, C, *sp) and w (O, C/groups, *k), or None to fall back.

    ``padding`` is the backend's ((lo, hi), ...) per spatial dim; cuDNN pads symmetrically, so a
    case with lo != hi falls back.
    """
    dtype = _usable(x, w, padding)
    if dtype is None:
        return None
    import cupy

    nd = x.ndim - 2
    osz = tuple(conv_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, w.shape[2:], stride, dilation))
    if min(osz, default=1) <= 0 or x.size == 0 or w.size == 0:
        return None
    x = cupy.ascontiguousarray(x)
    w = cupy.ascontiguousarray(w)
    y = cupy.empty((x.shape[0], w.shape[0]) + osz, x.dtype)
    lo, hi, st, dil = _geometry(nd, stride, padding, dilation)
    xs, ws, ys = _as4d(x.shape, nd), _as4d(w.shape, nd), _as4d(y.shape, nd)
    if _graph("fwd", dtype, {"x": xs, "w": ws, "y": ys}, lo, hi, st, dil, (x.data.ptr, w.data.ptr, y.data.ptr),
              x.device.id, cupy):
        return y
    if lo != hi:  # the legacy descriptors pad symmetrically
        return None
    math_type = _math(dtype)
    key = ("fwd", dtype, xs, ws, tuple(lo), tuple(st), tuple(dil), groups, math_type, x.device.id)
    ok = _run("fwd", key, lambda: _Plan(_lib(), dtype, xs, ws, ys, lo, st, dil, groups, math_type),
              (x.data.ptr, w.data.ptr), y.data.ptr, dtype, x.device.id, cupy)
    return y if ok else None


def conv_backward_data(x, w, *, stride, padding, dilation, groups):
    """The backend's ``conv_transpose(x, w)``: x (N, C, *sp), w (C, Co, *k) -> (N, groups*Co, *out),
    as cuDNN's data gradient of a convolution whose output is x; None to fall back.

    ``padding`` (lo, hi) crops the full transposed output; hi = lo - output_padding, which cuDNN can
    express when 0 <= lo - hi < stride.
    """
    dtype = _usable(x, w, padding)
    if dtype is None:
        return None
    import cupy
    nd = x.ndim - 2
    out = tuple((n - 1) * s + d * (k - 1) + 1 - lo - hi
                for n, s, d, k, (lo, hi) in zip(x.shape[2:], stride, dilation, w.shape[2:], padding))
    if min(out, default=1) <= 0 or x.size == 0 or w.size == 0:
        return None
    x = cupy.ascontiguousarray(x)
    w = cupy.ascontiguousarray(w)
    dx = cupy.empty((x.shape[0], groups * w.shape[1]) + out, x.dtype)
    lo, hi, st, dil = _geometry(nd, stride, padding, dilation)
    # in cuDNN's terms: dy = x (the forward output), filter = w, dx = the result (the forward input); the
    # forward convolution pads dx by (lo, hi), which is the crop of the transposed one
    dxs, ws, dys = _as4d(dx.shape, nd), _as4d(w.shape, nd), _as4d(x.shape, nd)
    if _graph("data", dtype, {"x": dxs, "w": ws, "y": dys}, lo, hi, st, dil, (dx.data.ptr, w.data.ptr, x.data.ptr),
              x.device.id, cupy):
        return dx
    # the legacy descriptors pad symmetrically: hi = lo - output_padding, with 0 <= output_padding < stride
    if any(not (0 <= a - b < s) for a, b, s in zip(lo, hi, st)):
        return None
    math_type = _math(dtype)
    key = ("data", dtype, dxs, ws, dys, tuple(lo), tuple(st), tuple(dil), groups, math_type, x.device.id)
    ok = _run("data", key, lambda: _Plan(_lib(), dtype, dxs, ws, dys, lo, st, dil, groups, math_type),
              (w.data.ptr, x.data.ptr), dx.data.ptr, dtype, x.device.id, cupy)
    return dx if ok else None


def conv_backward_filter(x, g, *, kernel_size, stride, padding, dilation, groups):
    """The backend's ``conv_weight(x, g)``: the weight gradient (O, C/groups, *k) of a convolution of
    x (N, C, *sp) whose output gradient is g (N, O, *osz); None to fall back."""
    dtype = _usable(x, g, padding)
    if dtype is None:
        return None
    import cupy
    nd = x.ndim - 2
    if x.size == 0 or g.size == 0:
        return None
    x = cupy.ascontiguousarray(x)
    g = cupy.ascontiguousarray(g)
    dw = cupy.empty((g.shape[1], x.shape[1] // groups) + tuple(kernel_size), x.dtype)
    lo, hi, st, dil = _geometry(nd, stride, padding, dilation)
    xs, ws, gs = _as4d(x.shape, nd), _as4d(dw.shape, nd), _as4d(g.shape, nd)
    if _graph("filter", dtype, {"x": xs, "w": ws, "y": gs}, lo, hi, st, dil, (x.data.ptr, dw.data.ptr, g.data.ptr),
              x.device.id, cupy):
        return dw
    if lo != hi:  # the legacy descriptors pad symmetrically
        return None
    math_type = _math(dtype)
    key = ("filter", dtype, xs, ws, gs, tuple(lo), tuple(st), tuple(dil), groups, math_type, x.device.id)
    ok = _run("filter", key, lambda: _Plan(_lib(), dtype, xs, ws, gs, lo, st, dil, groups, math_type),
              (x.data.ptr, g.data.ptr), dw.data.ptr, dtype, x.device.id, cupy)
    return dw if ok else None
