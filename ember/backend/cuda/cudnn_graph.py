"""cuDNN's graph (backend) API for the three convolutions: execution plans built once per shape.

cuDNN 9 implements its long-standing convolution calls on top of this API and pays for it on the host
at every call (about 100 µs measured on an H200's host, more than ember's own GEMM convolution); here
the operation graph, the engine choice and the execution plan are built once per shape and cached, so
a call costs one variant pack (the data pointers and the workspace) and ``cudnnBackendExecute``.

Used by :mod:`ember.backend.cuda.cudnn`, which keeps the legacy calls as the fallback for libraries
older than cuDNN 8.x's backend API. Enum values are those of ``cudnn_graph.h`` (stable across 8.x/9.x).
"""

from __future__ import annotations

import ctypes

# descriptor types
_TENSOR, _CONV, _OP_FWD, _OP_DATA, _OP_FILTER = 17, 1, 10, 12, 11
_GRAPH, _HEUR, _ENGINECFG, _ENGINE, _PLAN, _VARIANT = 15, 4, 3, 2, 5, 16
# attribute value types
_T_HANDLE, _T_DATA, _T_INT64, _T_FLOAT, _T_DOUBLE, _T_PTR, _T_CONVMODE, _T_HEUR, _T_DESC = 0, 1, 3, 4, 5, 6, 7, 8, 15
_T_NOTE, _T_BEHAVIOR = 11, 19
# attribute names
_TENSOR_DATA, _TENSOR_DIMS, _TENSOR_STRIDES, _TENSOR_ID, _TENSOR_ALIGN = 901, 902, 903, 906, 900
_CONV_COMP, _CONV_MODE, _CONV_DIL, _CONV_STRIDES, _CONV_POST, _CONV_PRE, _CONV_DIMS = 100, 101, 102, 103, 104, 105, 106
# per direction: (alpha, beta, conv desc, then the three tensors in the order of _roles)
_OP_ATTRS = {"fwd": (700, 701, 702, {"w": 703, "x": 704, "y": 705}),
             "data": (706, 707, 708, {"w": 709, "x": 710, "y": 711}),     # x = dx, y = dy
             "filter": (712, 713, 714, {"w": 715, "x": 716, "y": 717})}   # w = dw
_OP_TYPE = {"fwd": _OP_FWD, "data": _OP_DATA, "filter": _OP_FILTER}
_GRAPH_HANDLE, _GRAPH_OPS = 800, 801
_HEUR_MODE, _HEUR_GRAPH, _HEUR_RESULTS = 200, 201, 202
_CFG_ENGINE = 300
_ENGINE_NOTES, _ENGINE_BEHAVIOR = 1303, 1305
_PLAN_HANDLE, _PLAN_CFG, _PLAN_WORKSPACE = 400, 401, 402
_VP_IDS, _VP_PTRS, _VP_WORKSPACE = 1000, 1001, 1003
_HEUR_INSTANT = 0
_NOTE_TENSOR_CORE, _NOTE_DOWN_CONVERT, _NOTE_NONDETERMINISTIC = 0, 1, 4
_BEHAVIOR_RUNTIME_COMPILATION = 0
_CROSS_CORRELATION = 1
_DATA = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 9}
_IDS = {"x": 1, "w": 2, "y": 3}

_vp = ctypes.c_void_p
_i64 = ctypes.c_int64


def bind(lib) -> bool:
    """Declare the backend API's signatures on a loaded cuDNN (a ctypes.CDLL); False when it lacks them."""
    try:
        lib.cudnnBackendCreateDescriptor.argtypes = [ctypes.c_int, ctypes.POINTER(_vp)]
        lib.cudnnBackendDestroyDescriptor.argtypes = [_vp]
        lib.cudnnBackendFinalize.argtypes = [_vp]
        lib.cudnnBackendSetAttribute.argtypes = [_vp, ctypes.c_int, ctypes.c_int, _i64, _vp]
        lib.cudnnBackendGetAttribute.argtypes = [_vp, ctypes.c_int, ctypes.c_int, _i64, ctypes.POINTER(_i64), _vp]
        lib.cudnnBackendExecute.argtypes = [_vp, _vp, _vp]
    except AttributeError:
        return False
    for name in ("cudnnBackendCreateDescriptor", "cudnnBackendDestroyDescriptor", "cudnnBackendFinalize",
                 "cudnnBackendSetAttribute", "cudnnBackendGetAttribute", "cudnnBackendExecute"):
        getattr(lib, name).restype = ctypes.c_int
    return True


class _Builder:
    """Descriptor calls with status checks; every descriptor made here is destroyed with the builder
    unless it is kept (the plan's own)."""

    def __init__(self, owner):
        self.owner = owner  # cudnn._Lib: .lib and .check
        self.L = owner.lib
        self.made: list = []

    def create(self, kind: int) -> ctypes.c_void_p:
        d = _vp()
        self.owner.check(self.L.cudnnBackendCreateDescriptor(kind, ctypes.byref(d)), "cudnnBackendCreateDescriptor")
        self.made.append(d)
        return d

    def set(self, d, name: int, kind: int, values) -> None:
        self.owner.check(self.L.cudnnBackendSetAttribute(d, name, kind, len(values), ctypes.cast(values, _vp)),
                         f"cudnnBackendSetAttribute({name})")

    def ints(self, d, name: int, seq) -> None:
        self.set(d, name, _T_INT64, (_i64 * len(seq))(*[int(v) for v in seq]))

    def enum(self, d, name: int, kind: int, value: int) -> None:
        self.set(d, name, kind, (ctypes.c_int * 1)(value))

    def desc(self, d, name: int, descs) -> None:
        self.set(d, name, _T_DESC, (_vp * len(descs))(*[x.value for x in descs]))

    def finalize(self, d) -> int:
        """cudnnBackendFinalize's status (not checked: an unsupported case is a status, not an error)."""
        return self.L.cudnnBackendFinalize(d)

    def release(self) -> None:
        for d in self.made:
            self.L.cudnnBackendDestroyDescriptor(d)
        self.made = []


def contiguous_strides(shape) -> list[int]:
    """Element strides of a C-contiguous array of ``shape`` (size-0 dims count as one)."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return out[::-1]


class GraphPlan:
    """One convolution direction's execution plan, ready to run on given pointers.

    Made by :func:`build`; ``run(handle, (x_ptr, w_ptr, y_ptr), workspace_ptr)`` executes it.
    """

    __slots__ = ("owner", "plan", "workspace", "shared", "_ids", "_ids_arg")

    def __init__(self, owner, plan, workspace: int):
        self.owner, self.plan, self.workspace = owner, plan, workspace
        # the graph, engine configurations and tensors the plan was made from, kept as long as it lives
        self.shared: list = []
        # the variant pack's unique ids never change: one read-only array (pointers are per call, so two
        # threads may run the same plan)
        self._ids = (_i64 * 3)(_IDS["x"], _IDS["w"], _IDS["y"])
        self._ids_arg = ctypes.cast(self._ids, _vp)

    def close(self) -> None:
        """Destroy the plan and what it was made from (when the plan cache drops it)."""
        destroy = self.owner.lib.cudnnBackendDestroyDescriptor
        if self.plan is not None:
            destroy(self.plan)
        for d in self.shared:
            destroy(d)
        self.plan, self.shared = None, []

    def run(self, handle, pointers: tuple, workspace_ptr: int) -> None:
        """Execute on device pointers of the roles (x, w, y) of the plan's direction."""
        L = self.owner.lib
        ptrs = (_vp * 3)(*pointers)
        ws = _vp(workspace_ptr)
        vp = _vp()
        status = L.cudnnBackendCreateDescriptor(_VARIANT, ctypes.byref(vp))
        if status:
            self.owner.check(status, "cudnnBackendCreateDescriptor(variant pack)")
        try:
            # statuses are checked together: each check is a Python call, and this runs per convolution
            status = (L.cudnnBackendSetAttribute(vp, _VP_IDS, _T_INT64, 3, self._ids_arg)
                      or L.cudnnBackendSetAttribute(vp, _VP_PTRS, _T_PTR, 3, ptrs)
                      or L.cudnnBackendSetAttribute(vp, _VP_WORKSPACE, _T_PTR, 1, ctypes.byref(ws))
                      or L.cudnnBackendFinalize(vp))
            if status:
                self.owner.check(status, "cudnnBackendSetAttribute/Finalize(variant pack)")
            status = L.cudnnBackendExecute(handle, self.plan, vp)
            if status:
                self.owner.check(status, "cudnnBackendExecute")
        finally:
            L.cudnnBackendDestroyDescriptor(vp)


def build(owner, handle, direction: str, dtype: str, shapes: dict, pad_lo, pad_hi, stride, dilation,
          align: int, allow_tf32: bool, deterministic: bool, limit: int = 1) -> list[GraphPlan]:
    """Execution plans of one convolution direction, in cuDNN's heuristic order: the first ``limit``
    engines that take the case with the requested numerics (empty when none does).

    ``shapes`` maps the roles "x" (input / input gradient), "w" (weight / weight gradient) and "y"
    (output / output gradient) to 4-d or 5-d shapes; groups are implied by the channel counts."""
    b = _Builder(owner)
    data = _DATA[dtype]
    comp = _DATA["float64"] if dtype == "float64" else _DATA["float32"]
    try:
        tensors = {}
        for role in ("x", "w", "y"):
            t = b.create(_TENSOR)
            b.enum(t, _TENSOR_DATA, _T_DATA, data)
            b.ints(t, _TENSOR_DIMS, shapes[role])
            b.ints(t, _TENSOR_STRIDES, contiguous_strides(shapes[role]))
            b.ints(t, _TENSOR_ID, [_IDS[role]])
            b.ints(t, _TENSOR_ALIGN, [align])
            owner.check(b.finalize(t), f"cudnnBackendFinalize(tensor {role})")
            tensors[role] = t
        conv = b.create(_CONV)
        b.ints(conv, _CONV_DIMS, [len(stride)])
        b.enum(conv, _CONV_COMP, _T_DATA, comp)
        b.enum(conv, _CONV_MODE, _T_CONVMODE, _CROSS_CORRELATION)
        b.ints(conv, _CONV_DIL, dilation)
        b.ints(conv, _CONV_STRIDES, stride)
        b.ints(conv, _CONV_PRE, pad_lo)
        b.ints(conv, _CONV_POST, pad_hi)
        owner.check(b.finalize(conv), "cudnnBackendFinalize(convolution)")
        alpha_name, beta_name, conv_name, roles = _OP_ATTRS[direction]
        op = b.create(_OP_TYPE[direction])
        for role, name in roles.items():
            b.desc(op, name, [tensors[role]])
        b.desc(op, conv_name, [conv])
        if dtype == "float64":
            b.set(op, alpha_name, _T_DOUBLE, (ctypes.c_double * 1)(1.0))
            b.set(op, beta_name, _T_DOUBLE, (ctypes.c_double * 1)(0.0))
        else:
            b.set(op, alpha_name, _T_FLOAT, (ctypes.c_float * 1)(1.0))
            b.set(op, beta_name, _T_FLOAT, (ctypes.c_float * 1)(0.0))
        if b.finalize(op) != 0:
            return []
        graph = b.create(_GRAPH)
        b.set(graph, _GRAPH_HANDLE, _T_HANDLE, (_vp * 1)(handle.value))
        b.desc(graph, _GRAPH_OPS, [op])
        if b.finalize(graph) != 0:
            return []
        heur = b.create(_HEUR)
        b.desc(heur, _HEUR_GRAPH, [graph])
        b.enum(heur, _HEUR_MODE, _T_HEUR, _HEUR_INSTANT)
        if b.finalize(heur) != 0:
            return []
        count = _i64(0)
        owner.check(owner.lib.cudnnBackendGetAttribute(heur, _HEUR_RESULTS, _T_DESC, 0, ctypes.byref(count), None),
                    "cudnnBackendGetAttribute(heuristic count)")
        n = min(int(count.value), 32)
        if n == 0:
            return []
        cfgs = [b.create(_ENGINECFG) for _ in range(n)]
        arr = (_vp * n)(*[c.value for c in cfgs])
        got = _i64(0)
        owner.check(owner.lib.cudnnBackendGetAttribute(heur, _HEUR_RESULTS, _T_DESC, n, ctypes.byref(got),
                                                       ctypes.cast(arr, _vp)),
                    "cudnnBackendGetAttribute(heuristic results)")
        plans: list = []
        shared = list(b.made)  # tensors, convolution, operation, graph, heuristics and configurations
        b.made = []
        for cfg in cfgs[:int(got.value)]:
            if len(plans) >= limit:
                break
            if not _acceptable(b, cfg, dtype, allow_tf32, deterministic):
                continue
            plan = b.create(_PLAN)
            b.set(plan, _PLAN_HANDLE, _T_HANDLE, (_vp * 1)(handle.value))
            b.desc(plan, _PLAN_CFG, [cfg])
            if b.finalize(plan) != 0:
                continue
            ws = _i64(0)
            owner.check(owner.lib.cudnnBackendGetAttribute(plan, _PLAN_WORKSPACE, _T_INT64, 1, ctypes.byref(_i64()),
                                                           ctypes.byref(ws)),
                        "cudnnBackendGetAttribute(plan workspace)")
            plans.append(GraphPlan(owner, plan, int(ws.value)))
            b.made.remove(plan)
        if plans:
            plans[0].shared = shared  # handed to whichever plan is kept (see cudnn._fastest)
        else:
            b.made += shared
        return plans
    finally:
        b.release()


def _acceptable(b: _Builder, cfg, dtype: str, allow_tf32: bool, deterministic: bool) -> bool:
    """Whether an engine configuration keeps the requested numerics: no TF32 for float32 unless allowed,
    no inputs converted down to a narrower type, no nondeterminism when asked, no engine that compiles
    a kernel at first use (seconds of host time inside a training step)."""
    engine = b.create(_ENGINE)
    got = _i64(0)
    L = b.L
    if L.cudnnBackendGetAttribute(cfg, _CFG_ENGINE, _T_DESC, 1, ctypes.byref(got), ctypes.byref(engine)) != 0:
        return False
    notes = (ctypes.c_int * 16)()
    if L.cudnnBackendGetAttribute(engine, _ENGINE_NOTES, _T_NOTE, 16, ctypes.byref(got), ctypes.cast(notes, _vp)) != 0:
        return False
    have = set(notes[:int(got.value)])
    if dtype in ("float32", "float64") and _NOTE_DOWN_CONVERT in have:
        return False
    if dtype == "float32" and not allow_tf32 and _NOTE_TENSOR_CORE in have:
        return False
    if deterministic and _NOTE_NONDETERMINISTIC in have:
        return False
    behavior = (ctypes.c_int * 16)()
    if L.cudnnBackendGetAttribute(engine, _ENGINE_BEHAVIOR, _T_BEHAVIOR, 16, ctypes.byref(got),
                                  ctypes.cast(behavior, _vp)) == 0:
        if _BEHAVIOR_RUNTIME_COMPILATION in set(behavior[:int(got.value)]):
            return False
    return True


def alignment(*ptrs: int) -> int:
    """The largest power of two up to 16 that divides every pointer (cuDNN's engines pick wide loads)."""
    a = 16
    for p in ptrs:
        while a > 1 and p % a:
            a //= 2
    return a


__all__ = ["bind", "build", "alignment", "contiguous_strides", "GraphPlan"]
