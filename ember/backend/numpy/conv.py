"""The numpy backend's convolution, pooling and im2col/col2im ops, for any number of spatial dims.

Every op takes batched inputs ``(N, C, *spatial)`` and per-spatial-dim geometry tuples (the frontend
normalised them). Convolution is im2col + BLAS matmul per chunk of the batch: the columns are a
strided window view of the padded input (``as_strided``) copied into a reused scratch buffer small
enough to stay in cache, and the matmul writes straight into the (N, C, L) output. The transposed
convolution is the adjoint: a matmul to columns, then col2im as a loop over kernel offsets that
adds strided slices; the weight gradient (``conv_weight``) is one GEMM per chunk on columns laid out
for it. Pooling loops over kernel offsets within the input (no padded copy), over chunks of planes.
Chunks run on a small thread pool (see "parallelism" below). float16/bfloat16 compute in float32
and integers in int64 (wrapping like C), as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..meta import conv_out_size
from ._blas import BLAS, one_blas_thread
from ._util import LOW_PRECISION

# Scratch buffers up to this size are cached per thread: fresh large allocations cost page faults.
_SCRATCH_MAX = 32 << 20
# Bytes of im2col columns built at once (a chunk of the batch): big enough for an efficient GEMM,
# small enough to stay in the last-level cache while the GEMM reads it.
_CHUNK_BYTES = 2 << 20
# Elements of pooling output processed at once (the running max/sum stays in cache).
_POOL_CHUNK = 1 << 16
# Below this many multiply-adds (pooling: 4 per element and window offset) a job runs inline:
# handing chunks to threads costs ~50 us.
_PARALLEL_MIN = 1 << 22
_local = threading.local()


# ---- parallelism ---------------------------------------------------------------------------------
# The chunks of a conv or pool are independent, so worker threads take them (numpy releases the GIL
# in copies, ufunc loops and BLAS). While they run, BLAS is held to one thread per call: two threads
# each running a single-threaded GEMM scale like one two-threaded GEMM on a quiet machine, and on a
# busy one they avoid OpenBLAS's thread hand-offs, which made many small GEMMs 10-20x slower here.
try:  # the cores this process may run on (taskset, cgroups), not the machine's: 16 workers on 2 allowed
    _WORKERS = len(os.sched_getaffinity(0))  # cores made a conv 1.45x slower than 2 workers
except (AttributeError, OSError):  # pragma: no cover - not Linux
    _WORKERS = os.cpu_count() or 1
_executor = None


def _parallel(fn, items, work: int, blas: bool = False) -> None:
    """Run ``fn(item)`` for every item, on worker threads when the job is big enough. Jobs that call
    BLAS run threaded only where BLAS can be held to one thread (else BLAS's own threads do it)."""
    items = list(items)
    if len(items) < 2 or work < _PARALLEL_MIN or _WORKERS < 2 or (blas and BLAS is None) \
            or getattr(_local, "worker", False):
        for it in items:
            fn(it)
        return
    global _executor
    if _executor is None:
        from concurrent.futures import ThreadPoolExecutor
        _executor = ThreadPoolExecutor(_WORKERS, "ember-numpy", initializer=_mark_worker)
    from concurrent.futures import wait
    if blas:
        with one_blas_thread():
            futures = [_executor.submit(fn, it) for it in items]
            wait(futures)
    else:
        futures = [_executor.submit(fn, it) for it in items]
        wait(futures)
    for f in futures:
        f.result()   # re-raise the first failure


def _mark_worker():
    _local.worker = True   # a job started from a worker runs inline (no waiting on our own pool)


def _after_fork_in_child():
    # a forked child (a DataLoader worker) has none of the parent's threads: start afresh
    global _executor
    _executor = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _scratch(n: int, dtype, slot: int = 0) -> np.ndarray:
    """A 1-d buffer of ``n`` elements, reused across calls by this thread (never handed out as a
    result); ``slot`` tells apart buffers that are in use at the same time."""
    dtype = np.dtype(dtype)
    if n * dtype.itemsize > _SCRATCH_MAX:
        return np.empty(n, dtype)
    cache = getattr(_local, "bufs", None)
    if cache is None:
        cache = _local.bufs = {}
    key = (dtype, slot)
    buf = cache.get(key)
    if buf is None or buf.size < n:
        buf = cache[key] = np.empty(max(n, 1 << 16), dtype)
    return buf[:n]


def _work_dtype(dt: np.dtype) -> np.dtype:
    if dt in LOW_PRECISION:
        return np.dtype(np.float32)
    if dt.kind in "iub":
        return np.dtype(np.int64)
    return dt


def _pad(x: np.ndarray, pads, value=0) -> np.ndarray:
    """x with (before, after) padding on each spatial dim, filled with ``value``."""
    if not any(a or b for a, b in pads):
        return x
    shape = x.shape[:2] + tuple(n + a + b for n, (a, b) in zip(x.shape[2:], pads))
    out = np.full(shape, value, x.dtype) if value != 0 else np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(a, a + n) for n, (a, _) in zip(x.shape[2:], pads))] = x
    return out


_out_size = conv_out_size  # the window-count formula every backend shares (backend.meta)


def _windows(xp: np.ndarray, kernel, stride, dilation, osz) -> np.ndarray:
    """Read-only view (N, C, *kernel, *osz) of a padded input: the im2col columns, uncopied."""
    st = xp.strides
    sp = st[2:]
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(osz),
                      st[:2] + tuple(a * d for a, d in zip(sp, dilation)) + tuple(a * s for a, s in zip(sp, stride)),
                      writeable=False)


def _offsets(kernel, stride, dilation, osz):
    """(flat offset number, index) per kernel offset: the slice of the padded input it reads."""
    for i, k in enumerate(np.ndindex(*kernel)):
        yield i, (Ellipsis,) + tuple(slice(kk * d, kk * d + s * (o - 1) + 1, s) if o else slice(0, 0)
                                     for kk, d, s, o in zip(k, dilation, stride, osz))


def _valid_offsets(isz, kernel, stride, dilation, lo, osz):
    """For each kernel offset k: (flat k, output slices, input slices) covering the output positions o
    whose input position o*s + k*d - lo lies inside the input (padding is never touched, so pooling
    needs no padded copy). Offsets that never land inside are left out."""
    out = []
    for i, k in enumerate(np.ndindex(*kernel)):
        osl, isl = [], []
        for kk, s, d, p, n, o in zip(k, stride, dilation, lo, isz, osz):
            shift = kk * d - p                      # input position of output 0
            o0 = (-shift + s - 1) // s if shift < 0 else 0
            o1 = min(o, max(0, (n - 1 - shift) // s + 1))
            if o0 >= o1:
                break
            osl.append(slice(o0, o1))
            i0 = o0 * s + shift
            isl.append(slice(i0, i0 + s * (o1 - o0 - 1) + 1, s))
        else:
            out.append((i, (Ellipsis,) + tuple(osl), (Ellipsis,) + tuple(isl)))
    return out


def _col2im_add(cols: np.ndarray, out: np.ndarray, stride, dilation, lo) -> None:
    """out += col2im(cols): ``cols`` is (N, C, *kernel, *blocks); block b at kernel offset k lands
    on output position b*s + k*d - lo (positions outside ``out`` are dropped)."""
    nd = len(stride)
    kernel = cols.shape[2:2 + nd]
    blocks = cols.shape[2 + nd:]
    flat = cols.reshape(cols.shape[:2] + (-1,) + blocks)
    for i, bsl, osl in _valid_offsets(out.shape[2:], kernel, stride, dilation, lo, blocks):
        out[osl] += flat[:, :, i][bsl]


# ---- convolution ---------------------------------------------------------------------------------
def _conv(x, w, b=None, *, stride, padding, dilation, groups):
    """Cross-correlation: x (N, G*Ci, *sp), w (G*Co, Ci, *k), b (G*Co,) or None; ``padding`` is a
    (before, after) pair per spatial dim."""
    out_dt = np.result_type(x.dtype, w.dtype)
    cd = _work_dtype(out_dt)
    x, w = x.astype(cd, copy=False), w.astype(cd, copy=False)
    N, C = x.shape[:2]
    O, Ci = w.shape[:2]
    kernel = w.shape[2:]
    G = groups
    Co = O // G
    K = math.prod(kernel)
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel, stride, dilation))
    L = math.prod(osz)
    out = np.empty((N, G, Co, L), cd)
    bias = None if b is None else b.astype(cd, copy=False).reshape(G, Co, 1)
    if out.size == 0:
        pass
    elif Ci * K == 0:
        out[...] = 0 if bias is None else bias
    elif Ci == 1 and G > 1:
        _conv_depthwise(x, w, out.reshape((N, G, Co) + osz), padding, stride, dilation, osz)
        if bias is not None:
            out += bias
    else:
        _conv_gemm(x, w.reshape(G, Co, Ci * K), out, bias, kernel, padding, stride, dilation, osz)
    return out.reshape((N, O) + osz).astype(out_dt, copy=False)


def _conv_gemm(x, wm, out, bias, kernel, padding, stride, dilation, osz):
    N, C = x.shape[:2]
    G, Co, CiK = wm.shape
    L = out.shape[-1]
    if G == 1:  # plain 2-d weight: numpy runs one BLAS GEMM per batch item
        wm, out = wm[0], out.reshape(N, Co, L)
    shape = (G, CiK, L) if G > 1 else (CiK, L)
    # 1x1, stride 1, no padding: the input is its own columns
    direct = all(k == 1 and s == 1 for k, s in zip(kernel, stride)) and not any(a or b for a, b in padding)
    xp = x.reshape((N,) + shape) if direct else _pad(x, padding)
    per = C * math.prod(kernel) * L
    chunk = max(1, min(N, _CHUNK_BYTES // max(1, per * x.itemsize)))

    def work(n0):
        n1 = min(N, n0 + chunk)
        m = n1 - n0
        if direct:
            cols = xp[n0:n1]
        else:
            cols = _scratch(m * per, x.dtype).reshape((m, C) + tuple(kernel) + tuple(osz))
            np.copyto(cols, _windows(xp[n0:n1], kernel, stride, dilation, osz))
        o = out[n0:n1]
        np.matmul(wm, cols.reshape((m,) + shape), out=o)
        if bias is not None:
            o += bias if G > 1 else bias[0]

    _parallel(work, range(0, N, chunk), N * G * Co * CiK * L, blas=True)


def _conv_depthwise(x, w, out, padding, stride, dilation, osz):
    """One input channel per group: a multiply-add per kernel offset beats N*G tiny GEMMs."""
    N, G = x.shape[:2]
    Co = w.shape[0] // G
    kernel = w.shape[2:]
    nd = len(kernel)
    wk = w.reshape(G, Co, -1)
    xp = _pad(x, padding)
    L = math.prod(osz)
    chunk = max(1, min(N, _POOL_CHUNK // max(1, G * Co * L)))
    offs = list(_offsets(kernel, stride, dilation, osz))

    def work(n0):
        n1 = min(N, n0 + chunk)
        o = out[n0:n1]
        tmp = _scratch(o.size, o.dtype).reshape(o.shape)
        o[...] = 0
        for i, sl in offs:
            xs = xp[n0:n1][sl][:, :, None]                          # (m, G, 1, *osz)
            np.multiply(xs, wk[:, :, i].reshape((G, Co) + (1,) * nd), out=tmp)
            o += tmp

    _parallel(work, range(0, N, chunk), out.size * len(offs))


def _conv_weight(x, g, *, kernel_size, stride, padding, dilation, groups):
    """The gradient of conv in its weight: the correlation of x (N, G*Ci, *sp) with the output
    gradient g (N, G*Co, *osz), summed over the batch -> (G*Co, Ci, *kernel). Per chunk of the batch
    one GEMM (Co, m*L) @ (m*L, Ci*K) on columns laid out (C*K, m, L); each thread accumulates its
    own partial sum."""
    out_dt = np.result_type(x.dtype, g.dtype)
    cd = _work_dtype(out_dt)
    x, g = x.astype(cd, copy=False), g.astype(cd, copy=False)
    N, C = x.shape[:2]
    O = g.shape[1]
    G = groups
    Ci, Co = C // G, O // G
    kernel = tuple(kernel_size)
    nd = len(kernel)
    K = math.prod(kernel)
    osz = g.shape[2:]
    L = math.prod(osz)
    gw = np.zeros((G, Co, Ci * K), cd)
    if N * L * Ci * K * Co:
        xp = _pad(x, padding)
        gm = g.reshape(N, G, Co, L)
        per = C * K * L
        chunk = max(1, min(N, _CHUNK_BYTES // max(1, per * x.itemsize)))
        partial = {}
        # windows (m, C, *k, *osz) read in the order (C, *k, m, *osz)
        order = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))

        def work(n0):
            n1 = min(N, n0 + chunk)
            m = n1 - n0
            cols = _scratch(m * per, cd).reshape((C,) + kernel + (m,) + tuple(osz))
            np.copyto(cols, _windows(xp[n0:n1], kernel, stride, dilation, osz).transpose(order))
            gc = _scratch(m * O * L, cd, 1).reshape(G, Co, m, L)
            np.copyto(gc, gm[n0:n1].transpose(1, 2, 0, 3))
            r = np.matmul(gc.reshape(G, Co, m * L), cols.reshape(G, Ci * K, m * L).transpose(0, 2, 1))
            acc = partial.setdefault(threading.get_ident(), r)
            if acc is not r:
                acc += r

        _parallel(work, range(0, N, chunk), N * O * Ci * K * L, blas=True)
        for r in partial.values():
            gw += r
    return gw.reshape((O, Ci) + kernel).astype(out_dt, copy=False)


def _conv_transpose(x, w, b=None, *, stride, padding, dilation, groups):
    """The adjoint of conv in x: x (N, G*Ci, *sp), w (G*Ci, Co, *k). ``padding`` (before, after) per
    dim crops the full output ((n-1)*s + d*(k-1) + 1); a negative ``after`` extends it with zeros
    (PyTorch's output_padding)."""
    out_dt = np.result_type(x.dtype, w.dtype)
    cd = _work_dtype(out_dt)
    x, w = x.astype(cd, copy=False), w.astype(cd, copy=False)
    N, C = x.shape[:2]
    G = groups
    Ci, Co = C // G, w.shape[1]
    kernel = w.shape[2:]
    K = math.prod(kernel)
    isz = x.shape[2:]
    Lin = math.prod(isz)
    osz = tuple((n - 1) * s + d * (k - 1) + 1 - lo - hi
                for n, (lo, hi), k, s, d in zip(isz, padding, kernel, stride, dilation))
    out = np.zeros((N, G * Co) + osz, cd)
    if out.size and Ci * K * Lin:
        wt = w.reshape(G, Ci, Co * K).transpose(0, 2, 1)        # (G, Co*K, Ci)
        xm = x.reshape(N, G, Ci, Lin)
        per = G * Co * K * Lin
        chunk = max(1, min(N, _CHUNK_BYTES // max(1, per * x.itemsize)))
        lo = tuple(p[0] for p in padding)

        def work(n0):
            n1 = min(N, n0 + chunk)
            m = n1 - n0
            cols = _scratch(m * per, cd).reshape(m, G, Co * K, Lin)
            np.matmul(wt, xm[n0:n1], out=cols)
            _col2im_add(cols.reshape((m, G * Co) + tuple(kernel) + tuple(isz)), out[n0:n1], stride, dilation, lo)

        _parallel(work, range(0, N, chunk), N * per * Ci, blas=True)
    if b is not None:
        out += b.astype(cd, copy=False).reshape((-1,) + (1,) * len(osz))
    return out.astype(out_dt, copy=False)


def _im2col(x, *, kernel_size, dilation, padding, stride):
    """(N, C, *sp) -> (N, C*prod(kernel), L): every sliding block as a column (any dtype)."""
    N, C = x.shape[:2]
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(x.shape[2:], padding, kernel_size, stride, dilation))
    out = np.empty((N, C) + tuple(kernel_size) + osz, x.dtype)
    if out.size:
        np.copyto(out, _windows(_pad(x, padding), kernel_size, stride, dilation, osz))
    return out.reshape(N, C * math.prod(kernel_size), math.prod(osz))


def _col2im(cols, *, output_size, kernel_size, dilation, padding, stride):
    """(N, C*prod(kernel), L) -> (N, C, *output_size): the adjoint of im2col (overlaps add up)."""
    N = cols.shape[0]
    K = math.prod(kernel_size)
    C = cols.shape[1] // K if K else 0
    blocks = tuple(_out_size(n, lo, hi, k, s, d)
                   for n, (lo, hi), k, s, d in zip(output_size, padding, kernel_size, stride, dilation))
    cd = _work_dtype(cols.dtype) if cols.dtype.kind != "b" else cols.dtype
    out = np.zeros((N, C) + tuple(output_size), cd)
    if out.size and cols.size:
        c = cols.astype(cd, copy=False).reshape((N, C) + tuple(kernel_size) + blocks)
        _col2im_add(c, out, stride, dilation, tuple(p[0] for p in padding))
    return out.astype(cols.dtype, copy=False)


# ---- pooling -------------------------------------------------------------------------------------
def _planes(x: np.ndarray) -> np.ndarray:
    """(N, C, *sp) -> (N*C, *sp), a view when the layout allows."""
    return x.reshape((-1,) + x.shape[2:])


def _chunks(planes: int, per_plane: int):
    step = max(1, _POOL_CHUNK // max(1, per_plane))
    for p0 in range(0, planes, step):
        yield slice(p0, min(planes, p0 + step))


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _index_tables(isz, kernel, stride, dilation, lo, osz):
    """(base, koff, first): flat input position of each window's corner, flat input offset of each
    kernel offset, and each window's first in-bounds kernel offset (PyTorch's index when nothing
    beats the initial lowest value)."""
    nd = len(kernel)
    instr = [math.prod(isz[i + 1:]) for i in range(nd)]
    kstr = [math.prod(kernel[i + 1:]) for i in range(nd)]
    base = np.zeros(osz, np.int64)
    first = np.zeros(osz, np.int64)
    koff = np.zeros(kernel, np.int64)
    for i in range(nd):
        shape = [1] * nd
        shape[i] = osz[i]
        start = np.arange(osz[i]) * stride[i] - lo[i]
        base = base + (start * instr[i]).reshape(shape)
        kf = np.minimum(np.where(start < 0, (-start + dilation[i] - 1) // dilation[i], 0), kernel[i] - 1)
        first = first + (kf * kstr[i]).reshape(shape)
        shape = [1] * nd
        shape[i] = kernel[i]
        koff = koff + (np.arange(kernel[i]) * dilation[i] * instr[i]).reshape(shape)
    return base, koff.reshape(-1), first


def _small_int(n: int):
    return np.int8 if n < 128 else np.int16 if n < 32768 else np.int64


def _max_pool(x, *, kernel_size, stride, padding, dilation):
    """(values, int64 indices) of the max over each window; ``padding`` (before, after) per dim
    (after includes ceil_mode's overhang). Each window starts at the lowest value and its first
    in-bounds position, then takes every in-bounds element that is greater or NaN: ties keep the
    first max, the last NaN wins, padding is never chosen (PyTorch's CPU semantics)."""
    dt = x.dtype
    cd = np.dtype(np.float32) if dt in LOW_PRECISION else dt
    isz = x.shape[2:]
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(isz, padding, kernel_size, stride, dilation))
    vals = np.empty(x.shape[:2] + osz, cd)
    idx = np.empty(vals.shape, np.int64)
    if vals.size:
        lo = tuple(p[0] for p in padding)
        xp = _planes(x.astype(cd, copy=False))
        vp, ip = _planes(vals), _planes(idx)
        offs = _valid_offsets(isz, kernel_size, stride, dilation, lo, osz)
        base, koff, first = _index_tables(isz, kernel_size, stride, dilation, lo, osz)
        kt = _small_int(len(koff))
        first = first.astype(kt)
        isfloat = cd.kind == "f"
        low = _lowest(cd)

        def work(ch):
            xc, best = xp[ch], vp[ch]
            best[...] = low
            kc = np.empty(best.shape, kt)
            kc[...] = first
            # contiguous scratch: the strided window reads are the slow part, so each is read once;
            # masked writes (copyto where=) are ~10x slower than arithmetic, so the index moves by
            # kc += (i - kc) * upd and the value by maximum (which keeps NaN, like the rule above)
            n = best.size
            vbuf, ubuf, nbuf, dbuf = np.empty(n, cd), np.empty(n, bool), np.empty(n, bool), np.empty(n, kt)
            for i, osl, isl in offs:
                b, k = best[osl], kc[osl]
                shape = b.shape
                v = vbuf[: b.size].reshape(shape)
                np.copyto(v, xc[isl])
                upd = np.greater(v, b, out=ubuf[: b.size].reshape(shape))
                if isfloat:
                    upd |= np.isnan(v, out=nbuf[: b.size].reshape(shape))
                np.maximum(b, v, out=b)
                d = np.subtract(kt(i), k, out=dbuf[: b.size].reshape(shape))
                d *= upd
                k += d
            np.add(base, np.take(koff, kc), out=ip[ch])

        _parallel(work, _chunks(xp.shape[0], math.prod(osz)), 4 * vals.size * len(offs))
    return vals.astype(dt, copy=False), idx


def _max_pool_values(x, *, kernel_size, stride, padding, dilation):
    """Only the max of each window (NaN propagates), without tracking where it was."""
    dt = x.dtype
    cd = np.dtype(np.float32) if dt in LOW_PRECISION else dt
    isz = x.shape[2:]
    osz = tuple(_out_size(n, lo, hi, k, s, d)
                for n, (lo, hi), k, s, d in zip(isz, padding, kernel_size, stride, dilation))
    vals = np.empty(x.shape[:2] + osz, cd)
    if vals.size:
        xp = _planes(x.astype(cd, copy=False))
        vp = _planes(vals)
        offs = _valid_offsets(isz, kernel_size, stride, dilation, tuple(p[0] for p in padding), osz)
        low = _lowest(cd)

        def work(ch):
            xc, best = xp[ch], vp[ch]
            best[...] = low
            for _, osl, isl in offs:
                b = best[osl]
                np.maximum(b, xc[isl], out=b)

        _parallel(work, _chunks(xp.shape[0], math.prod(osz)), 4 * vals.size * len(offs))
    return vals.astype(dt, copy=False)


def _max_pool_backward(g, idx, *, input_size, disjoint=False):
    """Sum of ``g`` at the flat per-plane positions ``idx``: the gradient of a max pool. With
    ``disjoint`` windows (stride at least the dilated kernel) no position is hit twice, so a plain
    scatter replaces the (several times slower) accumulating bincount."""
    N, C = g.shape[:2]
    L = math.prod(input_size)
    out_dt = g.dtype
    if g.size == 0 or L == 0:
        return np.zeros((N, C) + tuple(input_size), out_dt)
    planes = N * C
    flat = idx.reshape(planes, -1) + (np.arange(planes, dtype=np.int64) * L)[:, None]
    if disjoint:
        r = np.zeros(planes * L, out_dt)
        r[flat.reshape(-1)] = g.reshape(-1)
        return r.reshape((N, C) + tuple(input_size))
    r = np.bincount(flat.reshape(-1), weights=g.reshape(-1).astype(np.float64, copy=False), minlength=planes * L)
    return r.astype(out_dt, copy=False).reshape((N, C) + tuple(input_size))


def _avg_divisor(isz, osz, kernel, stride, padding, count_include_pad, divisor_override, dt):
    """The divisor of every output position: window size clipped to the padded input (or to the
    input when padding isn't counted), or the override."""
    if divisor_override is not None:
        return np.asarray(divisor_override, dt)
    nd = len(kernel)
    div = np.ones(osz, np.int64)
    for i in range(nd):
        start = np.arange(osz[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel[i], isz[i] + padding[i])
        n = end - start if count_include_pad else np.minimum(end, isz[i]) - np.maximum(start, 0)
        shape = [1] * nd
        shape[i] = osz[i]
        div = div * np.maximum(n, 1).reshape(shape)
    return div.astype(dt)


def _pool_osz(isz, kernel_size, stride, padding, ceil_mode):
    osz = []
    for n, k, s, p in zip(isz, kernel_size, stride, padding):
        o = (n + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        osz.append(o)
    return tuple(osz)


def _int_div(s, div):
    """Integer division truncating toward zero (C semantics, as PyTorch's integer avg_pool)."""
    q = np.abs(s) // np.abs(div)
    return np.where((s < 0) != (np.asarray(div) < 0), -q, q)


def _avg_pool(x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    dt = x.dtype
    cd = _work_dtype(dt)
    isz = x.shape[2:]
    osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
    out = np.empty(x.shape[:2] + osz, cd)
    if out.size:
        xp = _planes(x.astype(cd, copy=False))
        op = _planes(out)
        offs = _valid_offsets(isz, kernel_size, stride, (1,) * len(osz), padding, osz)

        def work(ch):
            xc, acc = xp[ch], op[ch]
            acc[...] = 0
            for _, osl, isl in offs:
                a = acc[osl]
                a += xc[isl]

        _parallel(work, _chunks(xp.shape[0], math.prod(osz)), 4 * out.size * len(offs))
        div = _avg_divisor(isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override,
                           np.int64 if cd.kind == "i" else cd)
        if cd.kind == "i":
            out = _int_div(out, div)
        else:
            out /= div
    return out.astype(dt, copy=False)


def _avg_pool_backward(g, *, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    """The adjoint of avg_pool: each output's gradient divided by its divisor and spread over its
    window."""
    dt = g.dtype
    cd = _work_dtype(dt)
    isz = tuple(input_size)
    osz = _pool_osz(isz, kernel_size, stride, padding, ceil_mode)
    out = np.zeros(g.shape[:2] + isz, cd)
    if g.size and out.size:
        div = _avg_divisor(isz, osz, kernel_size, stride, padding, count_include_pad, divisor_override, cd)
        gs = g.astype(cd, copy=False) / div
        for _, osl, isl in _valid_offsets(isz, kernel_size, stride, (1,) * len(osz), padding, osz):
            out[isl] += gs[osl]
    return out.astype(dt, copy=False)


def _adaptive_windows(n: int, o: int):
    """start and length of each adaptive window along one dim: [floor(i*n/o), ceil((i+1)*n/o))."""
    i = np.arange(o)
    start = (i * n) // o
    end = -((-(i + 1) * n) // o)
    return start, end - start


def _adaptive_max_pool(x, *, output_size):
    """(values, int64 indices) of adaptive max pooling; windows of unequal length are read with
    clamped gathers (repeating a window's last element changes neither max nor first argmax)."""
    dt = x.dtype
    cd = np.dtype(np.float32) if dt in LOW_PRECISION else dt
    isz = x.shape[2:]
    osz = tuple(output_size)
    nd = len(osz)
    vals = np.empty(x.shape[:2] + osz, cd)
    idx = np.zeros(vals.shape, np.int64)
    if vals.size:
        xc = x.astype(cd, copy=False)
        wins = [_adaptive_windows(n, o) for n, o in zip(isz, osz)]
        kmax = tuple(int(ln.max()) for _, ln in wins)
        instr = [math.prod(isz[i + 1:]) for i in range(nd)]
        isfloat = cd.kind == "f"
        for j, k in enumerate(np.ndindex(*kmax)):
            pos = [st + np.minimum(kk, ln - 1) for kk, (st, ln) in zip(k, wins)]
            grid = np.ix_(*pos)
            v = xc[(slice(None), slice(None)) + grid]
            flat = sum(p * s for p, s in zip(grid, instr))
            if j == 0:
                vals[...] = v
                idx[...] = flat
                continue
            upd = np.greater(v, vals)
            if isfloat:
                upd |= np.isnan(v)
            np.copyto(vals, v, where=upd)
            np.copyto(idx, np.broadcast_to(flat, idx.shape), where=upd)
    return vals.astype(dt, copy=False), idx


OPS = {
    "conv": _conv,
    "conv_weight": _conv_weight,
    "conv_transpose": _conv_transpose,
    "im2col": _im2col,
    "col2im": _col2im,
    "max_pool": _max_pool,
    "max_pool_values": _max_pool_values,
    "max_pool_backward": _max_pool_backward,
    "avg_pool": _avg_pool,
    "avg_pool_backward": _avg_pool_backward,
    "adaptive_max_pool": _adaptive_max_pool,
}
