"""The WebGPU runtime: WGSL compute shaders through wgpu-py (Vulkan, Metal, DX12; lavapipe on CPUs).

wgpu is imported on first use. :class:`WgpuArray` is a storage buffer with a shape and a dtype
(``WgpuArray.from_numpy(a)``, ``.numpy()``); kernels launched on WgpuArrays run here. Pipelines are
built once per kernel variant and process (WGSL has no portable binary to keep on disk). Launches
are queued in order; reading an array back (``.numpy()``) or :func:`synchronize` waits for them.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ..cache import Timer
from ..errors import CompileError, LaunchError
from ..types import Scalar, bool_, f32, from_numpy

MAX_GROUPS = 65535
_STATE: dict = {}


def _wgpu():
    try:
        import wgpu
    except ImportError:
        raise LaunchError("the WebGPU target needs wgpu-py: pip install wgpu (or ember[wgpu])") from None
    return wgpu


def adapter():
    """The wgpu adapter (high-performance preference), or None when there is none."""
    if "adapter" not in _STATE:
        wgpu = _wgpu()
        try:
            _STATE["adapter"] = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        except Exception:  # noqa: BLE001 - no adapter on this machine
            _STATE["adapter"] = None
    return _STATE["adapter"]


def device():
    """The process-wide wgpu device, with the adapter's largest buffer and workgroup limits."""
    if "device" not in _STATE:
        a = adapter()
        if a is None:
            raise LaunchError("wgpu found no adapter (GPU or lavapipe): install a Vulkan/Metal/DX12 driver; on Linux "
                              "without a GPU, `apt-get install mesa-vulkan-drivers` gives lavapipe")
        want = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
                "max-compute-workgroup-size-y", "max-compute-workgroup-size-z", "max-storage-buffers-per-shader-stage")
        limits = {k: a.limits[k] for k in want if k in a.limits}
        _STATE["device"] = a.request_device_sync(required_limits=limits)
    return _STATE["device"]


def synchronize() -> None:
    """Wait until every launched kernel has finished."""
    if "device" in _STATE:
        # reading a buffer back waits for the queue (more portable across wgpu-py versions than
        # on_submitted_work_done_sync)
        if "sync" not in _STATE:
            _STATE["sync"] = WgpuArray.empty((1,), f32)
        device().queue.read_buffer(_STATE["sync"].buffer, 0, 4)



def build_pipeline(wgpu, dev, kir, source: str, all_writable: bool, rejected: str):
    """(compute pipeline, bind group layout) of rendered WGSL on ``dev``: one storage binding per array
    parameter in order (read-only unless the kernel writes it or ``all_writable``: aliased buffers must
    all be bound writable), then the uniform block of scalars. ``rejected`` starts the error message
    when the WGSL compiler refuses the source."""
    try:
        module = dev.create_shader_module(code=source)
    except Exception as e:  # noqa: BLE001 - the WGSL compiler's message is the useful part
        raise CompileError(f"{rejected}:\n{e}\n{source}") from None
    entries = []
    for p in kir.params:
        if p.kind == "array":
            kind = wgpu.BufferBindingType.storage if kir.arrays[p.name].written or all_writable else \
                wgpu.BufferBindingType.read_only_storage
            entries.append({"binding": len(entries), "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}})
    entries.append({"binding": len(entries), "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.uniform}})
    bgl = dev.create_bind_group_layout(entries=entries)
    layout = dev.create_pipeline_layout(bind_group_layouts=[bgl])
    pipeline = dev.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": "main"})
    return pipeline, bgl

class WgpuArray:
    """A C-contiguous array in a WebGPU storage buffer.

    >>> a = WgpuArray.from_numpy(np.arange(4, dtype=np.float32))  # doctest: +SKIP
    >>> a.numpy()  # doctest: +SKIP
    array([0., 1., 2., 3.], dtype=float32)
    """

    def __init__(self, buffer, shape: tuple, dtype: Scalar):
        self.buffer, self.shape, self.dtype = buffer, tuple(shape), dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @classmethod
    def empty(cls, shape, dtype: Scalar) -> WgpuArray:
        wgpu = _wgpu()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = max(4, -(-math.prod(shape) * dtype.itemsize // 4) * 4)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        return cls(device().create_buffer(size=nbytes, usage=usage), shape, dtype)

    @classmethod
    def from_numpy(cls, a: np.ndarray) -> WgpuArray:
        dtype = from_numpy(a.dtype)
        if dtype is None:
            raise LaunchError(f"dtype {a.dtype} is not supported by cube")
        out = cls.empty(a.shape, dtype)
        data = np.ascontiguousarray(a).tobytes()
        data += b"\0" * (-len(data) % 4)
        if data:
            device().queue.write_buffer(out.buffer, 0, data)
        return out

    def numpy(self) -> np.ndarray:
        """A copy of the data on the host (waits for the kernels that write it)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype.np)
        raw = device().queue.read_buffer(self.buffer, 0, -(-self.nbytes // 4) * 4)
        return np.frombuffer(bytes(raw)[:self.nbytes], dtype=self.dtype.np).reshape(self.shape).copy()

    def as_arg(self):
        from ..launch import ArrayArg
        return ArrayArg("wgpu", self, self.dtype, self.shape, None, True)

    def __repr__(self) -> str:
        return f"WgpuArray(shape={self.shape}, dtype={self.dtype.name})"


class WgpuRuntime:
    """Renders WGSL, builds a compute pipeline per variant and dispatches on the device's queue."""

    key = "wgpu"

    def __init__(self):
        from ..frontend import Target
        self.frontend_target = Target("wgsl", None)

    def render(self, kir, plan) -> str:
        from ..render.wgsl import render
        return render(kir, plan)

    def compile(self, kir, plan, source: str):
        dev = device()
        lim = dev.limits.get("max-compute-invocations-per-workgroup", 256)
        if math.prod(kir.block) > lim:
            raise LaunchError(f"this WebGPU device runs at most {lim} threads per block, got {kir.block}")
        return _Pipelines(kir, source)

    def launch(self, obj, grid: tuple, block: tuple, values: list) -> None:
        wgpu = _wgpu()
        dev = device()
        params = bytearray()
        buffers = []
        it = iter(obj.layout)
        for v in values:
            if v is None:
                continue
            kind, t, ndim = next(it)
            if kind == "array":
                a = v.handle
                buffers.append(a)
                dims = (a.size,) if ndim == 1 and len(a.shape) != 1 else a.shape
                params += struct.pack(f"<{len(dims)}i", *dims)
            elif t is bool_:
                params += struct.pack("<I", int(v))
            elif t is f32:
                params += struct.pack("<f", v)
            else:
                params += struct.pack("<i" if t.kind == "i" else "<I", v)
        params += struct.pack("<4i", *grid, 0)
        params += b"\0" * (-len(params) % 16)
        total = grid[0] * grid[1] * grid[2]
        gx = min(total, MAX_GROUPS)
        gy = -(-total // MAX_GROUPS)
        if gy > MAX_GROUPS:
            raise LaunchError(f"the grid {grid} has more blocks than WebGPU can dispatch ({MAX_GROUPS}**2)")
        limit = dev.limits.get("max-storage-buffer-binding-size", 1 << 27)
        for a in buffers:
            if a.buffer.size > limit:
                raise LaunchError(f"an array of {a.buffer.size} bytes is larger than this WebGPU device binds "
                                  f"({limit} bytes)")
        aliased = len({id(b.buffer) for b in buffers}) < len(buffers)
        pipeline, bgl = obj.get(aliased)
        ubuf = dev.create_buffer_with_data(data=bytes(params), usage=wgpu.BufferUsage.UNIFORM)
        entries = [{"binding": k, "resource": {"buffer": a.buffer, "offset": 0, "size": a.buffer.size}}
                   for k, a in enumerate(buffers)]
        entries.append({"binding": len(buffers), "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}})
        group = dev.create_bind_group(layout=bgl, entries=entries)
        enc = dev.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(gx, gy, 1)
        cpass.end()
        dev.queue.submit([enc.finish()])


class _Pipelines:
    """A variant's compute pipeline, and (built when first needed) the one that binds every array
    read-write, for launches that pass one buffer as several arguments."""

    def __init__(self, kir, source: str):
        self.kir, self.source = kir, source
        self.layout = [(p.kind, p.type, p.ndim) for p in kir.params]
        self.built: dict = {}
        self.get(False)

    def get(self, aliased: bool):
        if aliased and not any(self.kir.arrays[p.name].written for p in self.kir.params if p.kind == "array"):
            aliased = False  # read-only bindings may share a buffer
        if aliased not in self.built:
            source = self.source
            if aliased:
                from ..render.wgsl import render
                source = render(self.kir, all_writable=True)
            self.built[aliased] = self._build(source, aliased)
        return self.built[aliased]

    def _build(self, source: str, all_writable: bool):
        wgpu = _wgpu()
        dev = device()
        kir = self.kir
        with Timer(f"compile {kir.name} (WGSL)"):
            return build_pipeline(wgpu, dev, kir, source, all_writable,
                                  f"the WGSL generated for kernel '{kir.name}' was rejected (a bug in ember.cube, "
                                  "or a construct WebGPU forbids)")
