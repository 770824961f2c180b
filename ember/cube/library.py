"""A library of kernels written in cube: the building blocks the tests and backends use.

Each entry has a kernel (``*_kernel``) and a host function that checks shapes, allocates the
output like its input (numpy array, ember tensor, CuPy array or WgpuArray) and launches it:

* :func:`map` -- elementwise map of a ``@cube.func`` over arrays of one size
* :func:`reduce_rows` -- sum / max / min of each row, a block per row, tree reduction in shared memory
* :func:`matmul` -- tiled matmul: shared-memory tiles, a register tile per thread, vec4 loads
* :func:`softmax_rows` -- softmax of each row (max and sum by block reductions)
* :func:`histogram` -- counts in equal bins, a per-block histogram in shared memory merged with atomics
* :func:`cumsum` -- inclusive prefix sum of a 1-d array (block scans, then block offsets)
* :func:`transpose` -- 2-d transpose through a padded shared tile
"""

from __future__ import annotations

import builtins
import math

import numpy as np

import ember.cube as cube  # noqa: E402 - the package is initialised before its library

from . import launch
from .intrinsics import cdiv
from .types import Any, Array, Const, f32, i32

__all__ = ["map", "reduce_rows", "matmul", "softmax_rows", "histogram", "cumsum", "transpose", "map_kernel",
           "reduce_rows_kernel", "matmul_kernel", "softmax_rows_kernel", "histogram_kernel", "scan_blocks_kernel",
           "add_offsets_kernel", "transpose_kernel"]


# ---- helpers ------------------------------------------------------------------------------------
def _identity(op: str, t):
    """The identity of a reduction for a type (a compile-time value)."""
    if op == "sum":
        return 0.0 if t.is_float else 0
    big = math.inf if t.is_float else (2 ** (t.bits - 1) - 1 if t.kind == "i" else 2 ** t.bits - 1)
    if op == "max":
        return -big if t.is_float or t.kind == "i" else 0
    return big


@cube.func
def _combine(op, a, b):
    return a + b if op == "sum" else (cube.max(a, b) if op == "max" else cube.min(a, b))


@cube.func
def block_reduce(op, v, buf):
    """Reduce ``v`` over the threads of a 1-d block with ``op`` (a compile-time "sum", "max" or "min"), using
    the shared array ``buf`` (one slot per thread; the block size must be a power of two). Every thread gets
    the result."""
    tid = cube.thread_idx.x
    buf[tid] = v
    cube.sync_threads()
    s = cube.block_dim.x // 2
    while s > 0:
        if tid < s:
            buf[tid] = _combine(op, buf[tid], buf[tid + s])
        cube.sync_threads()
        s //= 2
    r = buf[0]
    cube.sync_threads()  # buf may be reused as soon as this returns
    return r


def _info(a):
    from .runtime import adapt_array
    arr = adapt_array(a)
    if arr is None or isinstance(arr, str):
        raise launch.LaunchError(arr if isinstance(arr, str) else f"expected an array, got {type(a).__name__}")
    return arr


def empty_like(a, shape: tuple, dtype) -> object:
    """A new array of ``shape`` and cube type ``dtype`` of the same kind and device as ``a``."""
    info = _info(a)
    cls = type(a)
    if isinstance(a, np.ndarray):
        return np.empty(shape, dtype.np)
    if cls.__name__ == "Tensor":
        import ember
        from ember._dtype import from_numpy_dtype
        return ember.empty(shape, dtype=from_numpy_dtype(dtype.np), device=a.device)
    if cls.__name__ == "WgpuArray":
        return cls.empty(shape, dtype)
    if info.device.startswith("cuda"):
        import cupy
        return cupy.empty(shape, dtype.np)
    raise launch.LaunchError(f"can't allocate an array like {cls.__name__}")


# ---- elementwise map ----------------------------------------------------------------------------
@cube.kernel
def map_kernel(f: Const, x: Array, out: Array):
    i = cube.global_idx.x
    if i < out.size:
        out[i] = f(x[i])


@cube.kernel
def map2_kernel(f: Const, x: Array, y: Array, out: Array):
    i = cube.global_idx.x
    if i < out.size:
        out[i] = f(x[i], y[i])


@cube.kernel
def map3_kernel(f: Const, x: Array, y: Array, z: Array, out: Array):
    i = cube.global_idx.x
    if i < out.size:
        out[i] = f(x[i], y[i], z[i])


def map(fn, *xs, out=None, block: int = 256):  # noqa: A001 - the library's name for an elementwise map
    """``out[i] = fn(x[i], y[i], ...)`` for 1 to 3 arrays of one size; ``fn`` is a ``@cube.func``.

    ``out`` defaults to a new array like the first input.
    """
    if not 1 <= len(xs) <= 3:
        raise TypeError(f"cube.library.map takes 1 to 3 arrays, got {len(xs)}")
    infos = [_info(x) for x in xs]
    n = math.prod(infos[0].shape)
    for x in infos[1:]:
        if math.prod(x.shape) != n:
            raise launch.LaunchError(f"cube.library.map: arrays of shapes {[tuple(i.shape) for i in infos]} differ "
                                     "in size")
    if out is None:
        out = empty_like(xs[0], tuple(infos[0].shape), infos[0].elem)
    k = (map_kernel, map2_kernel, map3_kernel)[len(xs) - 1]
    k[cdiv(n, block), block](fn, *xs, out)
    return out


# ---- row reduction ------------------------------------------------------------------------------
@cube.kernel
def reduce_rows_kernel(x: Array[Any, 2], out: Array, op: Const[str]):
    assert op in ("sum", "max", "min"), "op must be 'sum', 'max' or 'min'"
    assert cube.block_dim.x & (cube.block_dim.x - 1) == 0, "the block size must be a power of two"
    T = x.dtype.compute
    buf = cube.shared(T, cube.block_dim.x)
    row = cube.block_idx.x
    acc = T(_identity(op, T))
    for j in range(cube.thread_idx.x, x.shape[1], cube.block_dim.x):
        acc = _combine(op, acc, x[row, j])
    r = block_reduce(op, acc, buf)
    if cube.thread_idx.x == 0:
        out[row] = r


def reduce_rows(x, op: str = "sum", out=None, block: int = 256):
    """The ``op`` ("sum", "max", "min") of each row of a 2-d array; a block of threads per row."""
    info = _info(x)
    if len(info.shape) != 2:
        raise launch.LaunchError(f"cube.library.reduce_rows needs a 2-d array, got shape {tuple(info.shape)}")
    if out is None:
        out = empty_like(x, (info.shape[0],), info.elem)
    reduce_rows_kernel[info.shape[0], block](x, out, op)
    return out


# ---- matmul -------------------------------------------------------------------------------------
@cube.kernel
def matmul_kernel(a: Array[Any, 2], b: Array[Any, 2], c: Array[Any, 2], BM: Const[int], BN: Const[int],
                  BK: Const[int], TM: Const[int], TN: Const[int], VEC: Const[bool], A4: Const[bool]):
    """c = a @ b. A block of (BN/TN, BM/TM) threads computes a BM x BN tile of c; each thread a TM x TN
    register tile made of 4 x 4 pieces spread over the block tile (so neighbouring threads read neighbouring
    shared-memory vectors). VEC: K and N are multiples of 4, so global loads and stores are vec4. A4 (with
    VEC): a's tile is moved as 4 x 4 pieces transposed in registers, so shared memory sees only vec4
    accesses (WGSL then keeps the tiles as arrays of vec4)."""
    NT = cube.block_dim.x * cube.block_dim.y
    assert cube.block_dim.x * TN == BN and cube.block_dim.y * TM == BM, "block must be (BN // TN, BM // TM)"
    assert (BM * BK) % (4 * NT) == 0 and (BK * BN) % (4 * NT) == 0, "tile loads must divide among the threads"
    assert TM % 4 == 0 and TN % 4 == 0 and BK % 4 == 0
    T = a.dtype.compute
    M = a.shape[0]
    K = a.shape[1]
    N = b.shape[1]
    tx = cube.thread_idx.x
    ty = cube.thread_idx.y
    tid = ty * cube.block_dim.x + tx
    row0 = cube.block_idx.y * BM
    col0 = cube.block_idx.x * BN
    As = cube.shared(T, (BK, BM))  # a's tile, transposed: rows of the tile are contiguous for each k
    Bs = cube.shared(T, (BK, BN))
    acc = cube.local(T, (TM, TN))
    af = cube.local(T, TM)
    bf = cube.local(T, TN)
    rows = cube.local(T, (4, 4))  # the A4 path's 4 x 4 piece of a
    for i in cube.static_range(TM):
        for j in cube.static_range(TN):
            acc[i, j] = T(0)
    for k0 in range(0, K, BK):
        if VEC and A4:
            for r in cube.static_range(cube.cdiv(BM * BK // 16, NT)):
                blk = r * NT + tid
                if blk < BM * BK // 16:
                    ar = (blk // (BK // 4)) * 4
                    ak = (blk % (BK // 4)) * 4
                    gk = k0 + ak
                    for q in cube.static_range(4):
                        v = cube.vec4(T(0))
                        if row0 + ar + q < M and gk < K:
                            v = a.vec4[row0 + ar + q, gk // 4]
                        for p in cube.static_range(4):
                            rows[q, p] = v[p]
                    for p in cube.static_range(4):
                        As.vec4[ak + p, ar // 4] = cube.vec4(rows[0, p], rows[1, p], rows[2, p], rows[3, p])
        for r in cube.static_range(0 if VEC and A4 else (BM * BK) // (4 * NT)):
            e = (r * NT + tid) * 4
            ar = e // BK
            ak = e % BK
            gr = row0 + ar
            gk = k0 + ak
            if VEC:
                va = cube.vec4(T(0))
                if gr < M and gk < K:
                    va = a.vec4[gr, gk // 4]
                for q in cube.static_range(4):
                    As[ak + q, ar] = va[q]
            else:
                for q in cube.static_range(4):
                    As[ak + q, ar] = cube.load(a, (gr, gk + q), mask=gr < M and gk + q < K, other=T(0))
        for r in cube.static_range((BK * BN) // (4 * NT)):
            e = (r * NT + tid) * 4
            bk = e // BN
            bn = e % BN
            gk = k0 + bk
            gn = col0 + bn
            if VEC:
                vb = cube.vec4(T(0))
                if gk < K and gn < N:
                    vb = b.vec4[gk, gn // 4]
                Bs.vec4[bk, bn // 4] = vb
            else:
                for q in cube.static_range(4):
                    Bs[bk, bn + q] = cube.load(b, (gk, gn + q), mask=gk < K and gn + q < N, other=T(0))
        cube.sync_threads()
        for kk in cube.static_range(BK):
            for i4 in cube.static_range(TM // 4):
                v = As.vec4[kk, i4 * cube.block_dim.y + ty]
                for q in cube.static_range(4):
                    af[i4 * 4 + q] = v[q]
            for j4 in cube.static_range(TN // 4):
                v = Bs.vec4[kk, j4 * cube.block_dim.x + tx]
                for q in cube.static_range(4):
                    bf[j4 * 4 + q] = v[q]
            for i in cube.static_range(TM):
                for j in cube.static_range(TN):
                    acc[i, j] = cube.fma(af[i], bf[j], acc[i, j])
        cube.sync_threads()
    for i4 in cube.static_range(TM // 4):
        for i in cube.static_range(4):
            gr = row0 + (i4 * cube.block_dim.y + ty) * 4 + i
            if gr < M:
                for j4 in cube.static_range(TN // 4):
                    gc = col0 + (j4 * cube.block_dim.x + tx) * 4
                    if VEC:
                        if gc < N:
                            c.vec4[gr, gc // 4] = cube.vec4(acc[i4 * 4 + i, j4 * 4], acc[i4 * 4 + i, j4 * 4 + 1],
                                                            acc[i4 * 4 + i, j4 * 4 + 2], acc[i4 * 4 + i, j4 * 4 + 3])
                    else:
                        for j in cube.static_range(4):
                            cube.store(c, (gr, gc + j), acc[i4 * 4 + i, j4 * 4 + j], mask=gc + j < N)


# (BM, BN, BK, TM, TN); measured on an H200 at 4096^3: "large" 36.6 TFLOP/s through CUDA (74% of cuBLAS fp32),
# "wgpu" 18.9 TFLOP/s through WGSL on Vulkan (24 KiB of shared memory), "wgpu16k" 16.8 (fits WebGPU's
# default 16 KiB)
MATMUL_TILES = {"small": (32, 32, 16, 4, 4), "large": (128, 128, 8, 8, 8), "wgpu": (64, 128, 32, 4, 8),
                "wgpu16k": (64, 64, 32, 4, 4)}


def matmul(a, b, out=None, tiles: tuple | str | None = None):
    """``a @ b`` for 2-d arrays of one float type (f16/bf16 accumulate in f32 and store rounded).

    ``tiles`` = (BM, BN, BK, TM, TN) or a name in ``MATMUL_TILES``; by default "large" for big
    problems on GPUs and "small" otherwise.
    """
    ia, ib = _info(a), _info(b)
    if len(ia.shape) != 2 or len(ib.shape) != 2 or ia.shape[1] != ib.shape[0]:
        raise launch.LaunchError(f"cube.library.matmul: shapes {tuple(ia.shape)} and {tuple(ib.shape)} don't "
                                 "multiply")
    if ia.elem is not ib.elem or not ia.elem.is_float:
        raise launch.LaunchError(f"cube.library.matmul needs two arrays of one float type, got {ia.elem.name} and "
                                 f"{ib.elem.name}")
    M, K = ia.shape
    N = ib.shape[1]
    if out is None:
        out = empty_like(a, (M, N), ia.elem)
    if tiles is None:
        tiles = "small"
        if M * N >= 512 * 512 and ia.device != "cpu":
            tiles = "large"
            if ia.device == "wgpu":
                from .runtime.wgpu import device
                roomy = device().limits.get("max-compute-workgroup-storage-size", 16384) >= 24576
                tiles = "wgpu" if roomy else "wgpu16k"
    BM, BN, BK, TM, TN = MATMUL_TILES[tiles] if isinstance(tiles, str) else tiles
    vec = K % 4 == 0 and N % 4 == 0
    a4 = vec and ia.device == "wgpu"
    matmul_kernel[(cdiv(N, BN), cdiv(M, BM)), (BN // TN, BM // TM)](a, b, out, BM, BN, BK, TM, TN, vec, a4)
    return out


# ---- softmax by rows ----------------------------------------------------------------------------
@cube.kernel
def softmax_rows_kernel(x: Array[Any, 2], out: Array[Any, 2]):
    T = x.dtype.compute
    buf = cube.shared(T, cube.block_dim.x)
    row = cube.block_idx.x
    n = x.shape[1]
    step = cube.block_dim.x
    m = T(-math.inf)
    for j in range(cube.thread_idx.x, n, step):
        m = cube.max(m, x[row, j])
    m = block_reduce("max", m, buf)
    s = T(0)
    for j in range(cube.thread_idx.x, n, step):
        s += cube.exp(x[row, j] - m)
    s = block_reduce("sum", s, buf)
    for j in range(cube.thread_idx.x, n, step):
        out[row, j] = cube.exp(x[row, j] - m) / s


def softmax_rows(x, out=None, block: int = 256):
    """Softmax of each row of a 2-d float array (NaN in a row makes the row NaN, as in PyTorch)."""
    info = _info(x)
    if len(info.shape) != 2 or not info.elem.is_float:
        raise launch.LaunchError(f"cube.library.softmax_rows needs a 2-d float array, got {info.elem.name} of shape "
                                 f"{tuple(info.shape)}")
    if out is None:
        out = empty_like(x, tuple(info.shape), info.elem)
    if info.shape[0]:
        softmax_rows_kernel[info.shape[0], block](x, out)
    return out


# ---- histogram ----------------------------------------------------------------------------------
@cube.kernel
def histogram_kernel(x: Array, hist: Array[i32], lo: f32, hi: f32, BINS: Const[int]):
    """Counts of x in BINS equal bins over [lo, hi] (hi falls in the last bin; values outside are ignored)."""
    local = cube.shared(cube.i32, BINS)
    tid = cube.thread_idx.x
    for b in range(tid, BINS, cube.block_dim.x):
        local[b] = 0
    cube.sync_threads()
    scale = BINS / (hi - lo)
    for i in range(cube.global_idx.x, x.size, cube.block_dim.x * cube.grid_dim.x):
        v = cube.f32(x[i])
        if v >= lo and v <= hi:
            b = cube.min(cube.i32((v - lo) * scale), BINS - 1)
            cube.atomic_add(local, b, 1)
    cube.sync_threads()
    for b in range(tid, BINS, cube.block_dim.x):
        if local[b] != 0:
            cube.atomic_add(hist, b, local[b])


def histogram(x, bins: int, lo: float, hi: float, out=None, block: int = 256, blocks: int | None = None):
    """int32 counts of ``x`` in ``bins`` equal bins over [lo, hi], like ``torch.histc`` (counts as int32)."""
    info = _info(x)
    if not info.elem.is_float:
        raise launch.LaunchError(f"cube.library.histogram needs a float array, got {info.elem.name}")
    if not hi > lo:
        raise ValueError(f"cube.library.histogram: hi ({hi}) must be greater than lo ({lo})")
    if out is None:
        out = empty_like(x, (bins,), i32)
    map_kernel[cdiv(bins, block), block](_zero_i32, out, out)
    n = math.prod(info.shape)
    g = blocks or builtins.max(1, builtins.min(cdiv(n, block * 8), 1024))
    histogram_kernel[g, block](x, out, lo, hi, bins)
    return out


@cube.func
def _zero_i32(v):
    return 0


# ---- inclusive scan -----------------------------------------------------------------------------
@cube.kernel
def scan_blocks_kernel(x: Array, out: Array, sums: Array):
    """Inclusive scan of each block's slice of x (one element per thread); block totals go to sums."""
    T = x.dtype.compute
    buf = cube.shared(T, cube.block_dim.x)
    tid = cube.thread_idx.x
    i = cube.global_idx.x
    n = x.size
    buf[tid] = x[i] if i < n else T(0)
    cube.sync_threads()
    off = 1
    while off < cube.block_dim.x:
        t = buf[tid - off] if tid >= off else T(0)
        cube.sync_threads()
        buf[tid] += t
        cube.sync_threads()
        off *= 2
    if i < n:
        out[i] = buf[tid]
    if tid == cube.block_dim.x - 1:
        sums[cube.block_idx.x] = buf[tid]


@cube.kernel
def add_offsets_kernel(out: Array, offsets: Array):
    """out[i] += offsets[block - 1] for every block but the first (the scanned block totals)."""
    i = cube.global_idx.x
    if cube.block_idx.x > 0 and i < out.size:
        out[i] += offsets[cube.block_idx.x - 1]


def cumsum(x, out=None, block: int = 256):
    """Inclusive prefix sum of a 1-d array (ints wrap around; floats sum in a tree order, not numpy's)."""
    info = _info(x)
    if len(info.shape) != 1:
        raise launch.LaunchError(f"cube.library.cumsum needs a 1-d array, got shape {tuple(info.shape)}")
    n = info.shape[0]
    if out is None:
        out = empty_like(x, (n,), info.elem)
    if n == 0:
        return out
    g = cdiv(n, block)
    sums = empty_like(x, (g,), info.elem)
    scan_blocks_kernel[g, block](x, out, sums)
    if g > 1:
        sums = cumsum(sums, block=block)
        add_offsets_kernel[g, block](out, sums)
    return out


# ---- transpose ----------------------------------------------------------------------------------
@cube.kernel
def transpose_kernel(x: Array[Any, 2], out: Array[Any, 2], TILE: Const[int]):
    """out = x.T through a TILE x (TILE + 1) shared tile (the padding avoids bank conflicts on GPUs);
    block (TILE, rows): each thread moves TILE / rows elements."""
    R = x.shape[0]
    C = x.shape[1]
    tile = cube.shared(x.dtype.compute, (TILE, TILE + 1))
    bx = cube.block_idx.x * TILE
    by = cube.block_idx.y * TILE
    tx = cube.thread_idx.x
    ty = cube.thread_idx.y
    for k in cube.static_range(0, TILE, cube.block_dim.y):
        r = by + ty + k
        c = bx + tx
        if r < R and c < C:
            tile[ty + k, tx] = x[r, c]
    cube.sync_threads()
    for k in cube.static_range(0, TILE, cube.block_dim.y):
        r = bx + ty + k
        c = by + tx
        if r < C and c < R:
            out[r, c] = tile[tx, ty + k]


def transpose(x, out=None, tile: int = 32, rows: int = 8):
    """The transpose of a 2-d array."""
    info = _info(x)
    if len(info.shape) != 2:
        raise launch.LaunchError(f"cube.library.transpose needs a 2-d array, got shape {tuple(info.shape)}")
    R, C = info.shape
    if out is None:
        out = empty_like(x, (C, R), info.elem)
    transpose_kernel[(cdiv(C, tile), cdiv(R, tile)), (tile, rows)](x, out, tile)
    return out

