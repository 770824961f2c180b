"""GPU memory: CuPy's caching pool as ember's allocator, its statistics, and out-of-memory errors.

CuPy's default memory pool is a caching allocator: freed blocks stay cached and are reused by later
allocations of similar size, so a training loop stops calling cudaMalloc after its first step.
``empty_cache`` hands cached blocks back to the driver. The peak statistic comes from a CuPy memory
hook that sees every pool allocation (installed on first use of the statistics).
"""

from __future__ import annotations


class OutOfMemoryError(RuntimeError):
    """The GPU could not hold an allocation (PyTorch's ``torch.cuda.OutOfMemoryError``)."""


def _fmt(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def oom_error(e, op: str, index: int) -> OutOfMemoryError:
    """An ember error naming the requested size and the pool's usage, from CuPy's OutOfMemoryError."""
    import cupy
    requested = getattr(e, "size", None)
    if requested is None:  # older CuPy keeps the sizes only in the message
        import re
        m = re.search(r"allocating ([\d,]+) bytes", str(e))
        requested = int(m.group(1).replace(",", "")) if m else -1
    pool = cupy.get_default_memory_pool()
    try:
        free, total = cupy.cuda.runtime.memGetInfo()
    except Exception:  # noqa: BLE001 - the figures are a courtesy
        free = total = -1
    return OutOfMemoryError(
        f"CUDA out of memory in op {op!r} on cuda:{index}: tried to allocate {_fmt(requested)}; "
        f"ember's pool holds {_fmt(pool.used_bytes())} in tensors and {_fmt(pool.free_bytes())} cached "
        f"({_fmt(pool.total_bytes())} reserved); the GPU has {_fmt(free)} free of {_fmt(total)}. "
        f"Free tensors you no longer need, call ember.cuda.empty_cache(), or use smaller batches.")


class _Peak:
    """Tracks the pool's peak of bytes in use through a CuPy memory hook."""

    def __init__(self):
        self.peak = 0
        self.installed = False
        self.hook = None

    def install(self) -> None:
        if self.installed:
            return
        import cupy
        from cupy.cuda import memory_hook
        pool = cupy.get_default_memory_pool()
        tracker = self

        class Hook(memory_hook.MemoryHook):
            name = "ember_peak"

            def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
                used = pool.used_bytes()
                if used > tracker.peak:
                    tracker.peak = used

        self.hook = Hook()
        self.hook.__enter__()  # stays active on this thread
        self.peak = max(self.peak, pool.used_bytes())
        self.installed = True


PEAK = _Peak()


def stats() -> dict:
    """A dict of the pool's figures, PyTorch's key names where they mean the same thing."""
    import cupy
    pool = cupy.get_default_memory_pool()
    PEAK.install()
    used = pool.used_bytes()
    PEAK.peak = max(PEAK.peak, used)
    pinned = cupy.get_default_pinned_memory_pool()
    return {
        "allocated_bytes.all.current": used,
        "allocated_bytes.all.peak": PEAK.peak,
        "reserved_bytes.all.current": pool.total_bytes(),
        "inactive_split_bytes.all.current": pool.free_bytes(),
        "num_free_blocks": pool.n_free_blocks(),
        "pinned_free_blocks": pinned.n_free_blocks(),
    }
