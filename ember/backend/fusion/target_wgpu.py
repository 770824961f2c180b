"""The WebGPU target of Fusion: the Wgpu backend's storages, kernels rendered by cube's WGSL target.

Handles are the Wgpu backend's strided views (``WH``) of a :class:`Storage`; a kernel argument is a
whole storage (:class:`Flat`, a ``WgpuArray`` that keeps its storage alive) indexed with the load's
strides and offset. Kernels are rendered to WGSL by cube, but their pipelines are built on the Wgpu
backend's device and their dispatches recorded into its open batch (``Runtime.dispatch``): cube's
own WGSL runtime has a device of its own, whose buffers the backend's can't be bound with, and one
queue keeps fused kernels ordered with the backend's own launches.

WGSL computes in 32-bit types: float32, int32 and bool (stored as one 32-bit word, as the Wgpu
backend keeps it) fuse; float64, int64 and 16-bit dtypes run on the inner backend op by op. Row
kernels take the GPU form with a shared-memory tree (WGSL has no warp operations here).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ... import _dtype as D
from ...cube.runtime.wgpu import WgpuArray, build_pipeline
from ...cube.types import bool_, f32, i32, u32

_STORED = {D.float32: f32, D.int32: i32, D.bool: u32}
MAX_GROUPS = 65535


class Flat(WgpuArray):
    """A whole storage as a flat cube array of its stored type (``dtype``: the ember dtype)."""

    def __init__(self, st, dtype):
        super().__init__(st.buffer, (st.nelem,), _STORED[dtype])
        self.st = st
        self.edtype = dtype


class WgpuTarget:
    """Storages of the Wgpu backend ``inner``; WGSL pipelines on its device, dispatched in its batches."""

    device = "wgpu"
    types = frozenset({"f32", "i32", "bool_"})
    storage = {"bool_": "u32"}
    row_block = 256  # WebGPU guarantees 256 invocations per workgroup
    # every op is recorded: a WebGPU dispatch (buffers, bind group, encoding) costs more host time than
    # recording an op, so even small tensors gain (H200 over Vulkan: an MLP step 13.1 -> 11.0 ms, a
    # 4-layer GPT-2 step 206 -> 136 ms against the unfused stack; with 2^18 nothing of either was recorded)
    eager_below = 0
    # a reduction of this many elements or more to one value runs in two stages (recording._split_reduce):
    # one block of threads for all of them leaves the GPU idle (x.sum() of a fused 16M chain on WebGPU: 40 ms)
    split_min = 1 << 16
    warp = False
    acc64 = False
    vec4 = False
    # WGSL's built-ins as cube renders them lose PyTorch's values at the extremes (sin/cos/tan of large
    # arguments, acosh below 1, atan2(0, 0), pow of NaN on lavapipe): the Wgpu backend's own kernels keep them
    unfused = frozenset({"sin", "cos", "tan", "acosh", "atan2", "pow"})

    def __init__(self, inner):
        from ..wgpu.handle import WH
        self.inner = inner
        self.rt = inner.rt
        self.WH = WH
        lim = self.rt.device.limits.get("max-compute-invocations-per-workgroup", 256)
        self.row_block = min(256, lim)
        # storage buffers a kernel may bind (the scheduler splits wider elementwise groups)
        self.max_arrays = int(self.rt.device.limits.get("max-storage-buffers-per-shader-stage", 8))
        self._pipes: dict = {}  # (kernel, block, aliased) -> (pipeline, bind group layout, scalar types)

    # ---- memory ----------------------------------------------------------------------------------
    def grid(self, blocks: int, block: int, rows: bool = False) -> int:
        """Blocks to launch: the kernels loop over the rest (a grid-stride loop)."""
        return max(0, min(blocks, 4096))

    def alloc(self, shape: tuple, np_dtype):
        dtype = D.from_numpy_dtype(np.dtype(np_dtype))
        n = math.prod(shape)
        st = self.rt.alloc(n)
        return self.WH(st, shape, _contiguous(shape), 0, dtype)

    def new_flat(self, h) -> Flat:
        return Flat(h.st, h.dtype)

    def flat(self, h, storage) -> tuple | None:
        if h.st.wide or h.dtype not in _STORED or any(s < 0 for s in h.strides):
            return None
        strides = None if h.offset == 0 and h.is_contiguous() else tuple(h.strides)
        return Flat(h.st, h.dtype), strides, h.offset if strides is not None else 0

    def copy(self, h):
        return self.inner.run("copy", (h,), {})

    def copy_flat(self, flat: Flat) -> Flat:
        whole = self.WH(flat.st, (flat.st.nelem,), (1,), 0, flat.edtype)
        return Flat(self.inner.run("copy", (whole,), {}).st, flat.edtype)

    def view(self, flat: Flat, shape: tuple, strides: tuple, offset: int):
        return self.WH(flat.st, tuple(shape), tuple(strides), offset, flat.edtype)

    def ptr(self, h):
        return (id(h.st), h.offset)

    def contiguous(self, h) -> bool:
        return h.is_contiguous()

    def whole(self, h, storage) -> bool:
        return h.is_contiguous() and h.offset == 0 and h.numel == h.st.nelem and not h.st.wide

    def fresh(self, inner, h) -> bool:
        return h.offset == 0 and h.is_contiguous() and h.numel == h.st.nelem

    # ---- launches --------------------------------------------------------------------------------
    def launch(self, kern, grid: int, block: int, arrays: list, scalars: list) -> None:
        if grid == 0:
            return
        aliased = len({id(a.st) for a in arrays}) < len(arrays)
        hit = self._pipes.get((kern, block, aliased))
        if hit is None:
            hit = self._pipes[(kern, block, aliased)] = self._build(kern, block, aliased, arrays, scalars)
        pipeline, bgl, layout = hit
        wgpu = self.rt.wgpu
        dev = self.rt.device
        # the parameter block cube's WGSL reads: per array its element count, the scalars, the grid
        params = bytearray()
        for a in arrays:
            params += struct.pack("<i", a.size)
        for (_, t), v in zip(layout, scalars):
            if t is bool_:
                params += struct.pack("<I", int(v))
            elif t is f32:
                params += struct.pack("<f", v)
            else:
                params += struct.pack("<i" if t.kind == "i" else "<I", v)
        params += struct.pack("<4i", grid, 1, 1, 0)
        params += b"\0" * (-len(params) % 16)
        gx, gy = min(grid, MAX_GROUPS), -(-grid // MAX_GROUPS)
        ubuf = dev.create_buffer_with_data(data=bytes(params), usage=wgpu.BufferUsage.UNIFORM)
        entries = [{"binding": k, "resource": {"buffer": a.buffer, "offset": 0, "size": a.buffer.size}}
                   for k, a in enumerate(arrays)]
        entries.append({"binding": len(arrays), "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}})
        group = dev.create_bind_group(layout=bgl, entries=entries)
        self.rt.dispatch(pipeline, group, (gx, gy, 1), [a.st for a in arrays])

    def _build(self, kern, block: int, aliased: bool, arrays: list, scalars: list):
        """The pipeline of a kernel variant on the backend's device (cube renders the WGSL)."""
        from ...cube.launch import get_runtime
        from ...cube.render.wgsl import render
        # cube binds its own array type (the dtype decides the variant); nothing here touches a device
        _, key, _ = kern.bind((*[WgpuArray(a.buffer, a.shape, a.dtype) for a in arrays], *scalars))
        rt = get_runtime("wgpu")  # rendering only: cube's WGSL runtime opens no device for this
        kir, plan = kern.specialise(rt, (block, 1, 1), key)
        written = {p.name for p in kir.params if p.kind == "array" and kir.arrays[p.name].written}
        source = render(kir, plan, all_writable=aliased and bool(written))
        pipeline, bgl = build_pipeline(self.rt.wgpu, self.rt.device, kir, source, aliased and bool(written),
                                       "fusion: the WGSL of a fused kernel was rejected")
        scal = [(p.kind, p.type) for p in kir.params if p.kind != "array"]
        return pipeline, bgl, scal


def _contiguous(shape: tuple) -> tuple:
    from ..._shape import contiguous_strides
    return tuple(contiguous_strides(shape))
