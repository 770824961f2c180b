"""``ember.cuda``: NVIDIA GPUs, under PyTorch's ``torch.cuda`` names.

Importable everywhere: without CuPy or a GPU, ``is_available()`` is False, ``device_count()`` is 0
and the memory figures are 0; calls that need a GPU raise :class:`ember.BackendUnavailable` with the
install hint. Work on the GPU is asynchronous: ``synchronize()`` waits for it, ``Stream``/``Event``
order and time it, and ``stream(s)`` makes ops run on ``s``.

>>> import ember
>>> isinstance(ember.cuda.is_available(), bool)
True
>>> ember.cuda.memory_allocated() >= 0
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ._errors import BackendUnavailable

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "synchronize", "Stream", "Event",
    "stream", "current_stream", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "reset_peak_memory_stats", "memory_stats", "empty_cache", "get_device_name", "OutOfMemoryError",
]

_HINT = "install the CUDA backend with `pip install ember[cuda]` on a machine with an NVIDIA GPU"


def _cupy():
    """CuPy with a usable GPU, or None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no CUDA here"
        return None


def _need():
    cp = _cupy()
    if cp is None:
        raise BackendUnavailable(f"CUDA is not available: {_HINT}")
    return cp


try:
    from .backend.cuda.memory import OutOfMemoryError
except ImportError:  # pragma: no cover - the package is part of ember; kept for stripped installs
    class OutOfMemoryError(RuntimeError):
        """The GPU could not hold an allocation."""


def is_available() -> bool:
    """Whether CuPy is installed and sees at least one CUDA GPU."""
    return _cupy() is not None


def device_count() -> int:
    """How many CUDA GPUs CuPy sees (0 without CuPy)."""
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def current_device() -> int:
    """Index of the current CUDA device."""
    return int(_need().cuda.runtime.getDevice())


def set_device(device) -> None:
    """Make ``device`` (an int, "cuda:N" or an ember.Device) the current CUDA device."""
    _need().cuda.Device(_index(device)).use()


def get_device_name(device=None) -> str:
    """The GPU's name, e.g. 'NVIDIA H200'."""
    cp = _need()
    i = current_device() if device is None else _index(device)
    name = cp.cuda.runtime.getDeviceProperties(i)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    idx = getattr(device, "index", None)
    if idx is not None or hasattr(device, "type"):
        return 0 if idx is None else int(idx)
    s = str(device)
    if s == "cuda":
        return current_device()
    if s.startswith("cuda:") and s[5:].isdigit():
        return int(s[5:])
    raise ValueError(f"expected a CUDA device (an int, 'cuda' or 'cuda:N'), got {device!r}")


def synchronize(device=None) -> None:
    """Wait until every queued op on the device has finished."""
    cp = _cupy()
    if cp is None:
        return
    with cp.cuda.Device(_index(device)):
        cp.cuda.Device().synchronize()


class Stream:
    """A CUDA stream: ops issued inside ``ember.cuda.stream(s)`` run on it, in order.

    >>> s = ember.cuda.Stream()                  # doctest: +SKIP
    >>> with ember.cuda.stream(s):               # doctest: +SKIP
    ...     y = x * 2
    >>> s.synchronize()                          # doctest: +SKIP
    """

    def __init__(self, device=None, priority: int = 0, *, _cupy_stream=None):
        cp = _need()
        if _cupy_stream is not None:
            self._s = _cupy_stream
        else:
            with cp.cuda.Device(_index(device) if device is not None else cp.cuda.runtime.getDevice()):
                self._s = cp.cuda.Stream(non_blocking=True, priority=priority)

    @property
    def cuda_stream(self) -> int:
        """The raw cudaStream_t handle (an int), for other libraries."""
        return int(self._s.ptr)

    def synchronize(self) -> None:
        self._s.synchronize()

    def query(self) -> bool:
        """True when every op queued on the stream has finished."""
        return bool(self._s.done)

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits for ``event``."""
        self._s.wait_event(event._e)

    def wait_stream(self, other: Stream) -> None:
        """Later work on this stream waits for what is queued on ``other`` now."""
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        self._s.__enter__()
        return self

    def __exit__(self, *exc):
        return self._s.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self._s.ptr == other._s.ptr

    def __hash__(self) -> int:
        return hash(self._s.ptr)

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream cuda_stream={self._s.ptr:#x}>"


def current_stream(device=None) -> Stream:
    """The stream ops run on now (the device's default stream unless inside ``stream(...)``)."""
    cp = _need()
    return Stream(_cupy_stream=cp.cuda.get_current_stream())


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Run the ops issued inside the block on ``s`` (``None``: leave the current stream)."""
    if s is None:
        yield None
        return
    with s._s:
        yield s


class Event:
    """A CUDA event: a marker in a stream, for waiting and timing.

    >>> start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)  # doctest: +SKIP
    >>> start.record(); y = x @ x; end.record(); end.synchronize()   # doctest: +SKIP
    >>> start.elapsed_time(end)   # milliseconds                    # doctest: +SKIP
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        cp = _need()
        self._e = cp.cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self._e.record(None if stream is None else stream._s)

    def synchronize(self) -> None:
        self._e.synchronize()

    def query(self) -> bool:
        return bool(self._e.done)

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` (default: the current one) wait for this event."""
        cp = _need()
        (cp.cuda.get_current_stream() if stream is None else stream._s).wait_event(self._e)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, with timing enabled)."""
        cp = _need()
        return float(cp.cuda.get_elapsed_time(self._e, end._e))


# ---- memory: CuPy's caching pool -------------------------------------------------------------------------
def memory_allocated(device=None) -> int:
    """Bytes held by live tensors (0 without CUDA)."""
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().used_bytes())


def memory_reserved(device=None) -> int:
    """Bytes the caching pool holds from the driver: live tensors plus cached free blocks."""
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().total_bytes())


def max_memory_allocated(device=None) -> int:
    """The peak of :func:`memory_allocated` since the first call of this function,
    :func:`memory_stats` or :func:`reset_peak_memory_stats` (peak tracking starts there, so that
    programs which never ask pay nothing for it)."""
    if _cupy() is None:
        return 0
    from .backend.cuda.memory import stats
    return int(stats()["allocated_bytes.all.peak"])


def reset_peak_memory_stats(device=None) -> None:
    """Start the peak of :func:`max_memory_allocated` again from the current usage."""
    cp = _cupy()
    if cp is None:
        return
    from .backend.cuda.memory import PEAK
    PEAK.install()
    PEAK.peak = int(cp.get_default_memory_pool().used_bytes())


def memory_stats(device=None) -> dict:
    """The pool's figures under PyTorch's key names (``allocated_bytes.all.current``, ``.peak``,
    ``reserved_bytes.all.current``, ...); an empty dict without CUDA."""
    if _cupy() is None:
        return {}
    from .backend.cuda.memory import stats
    return stats()


def empty_cache() -> None:
    """Give the pool's cached free blocks back to the driver (live tensors are untouched)."""
    cp = _cupy()
    if cp is None:
        return
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


# ---- CUDA graphs -------------------------------------------------------------------------------------------
def is_current_stream_capturing() -> bool:
    """Whether a CUDA graph capture (``ember.cuda.graph``) is open."""
    from .backend.capture import capturing
    return capturing()


class _GraphPool:
    """A private memory pool that graphs can share (``graph_pool_handle()``, ``CUDAGraph.pool()``)."""

    def __init__(self, pool):
        self._pool = pool


def graph_pool_handle() -> _GraphPool:
    """A new private memory pool to share between graphs captured one after the other."""
    return _GraphPool(_need().cuda.MemoryPool())


class _GraphRandom:
    """Random numbers inside a CUDA graph from the default CUDA generator (PyTorch's graph-safe RNG).

    While a graph captures, a random op's kernel reads the generator's key and a counter shift from a
    small device array instead of taking them as arguments; the capture records the draws without
    making them (the generator is put back where it was), and every replay first writes the key and
    the shift for the generator's state then, and advances the generator by what the graph draws. So
    replay k draws exactly the numbers an eager run of the captured code would draw at that point:
    dropout masks change from replay to replay and follow ``ember.manual_seed``."""

    _MASK = (1 << 64) - 1

    def __init__(self, device_index: int):
        import numpy as np

        from . import _device, _random
        cp = _need()
        self.np = np
        self.gen = _random._default_for(_device.device("cuda"))
        self.seed0, self.offset0 = self.gen._seed, self.gen._offset
        with cp.cuda.Device(device_index):
            self.state = cp.zeros(4, np.uint64)  # key, 192-bit counter shift: outside the graph's pool
        self.used = 0
        from .backend import capture
        capture.set_graph_random(self._lookup)

    def _lookup(self, seed, offset):
        g = self.gen
        if seed == self.seed0 and g._seed == self.seed0 and offset is not None and self.offset0 <= offset < g._offset:
            return self.state
        return None  # another generator's numbers: the backend refuses the op

    def end(self) -> None:
        from .backend import capture
        capture.set_graph_random(None)
        self.used = self.gen._offset - self.offset0
        self.gen._offset = self.offset0  # recorded, not drawn: each replay draws them

    def before_replay(self) -> None:
        if not self.used:
            return
        g, m = self.gen, self._MASK
        shift = (g._offset - self.offset0) % (1 << 192)
        self.state.set(self.np.array([g._seed & m, shift & m, (shift >> 64) & m, (shift >> 128) & m], self.np.uint64))
        g._offset += self.used


class CUDAGraph:
    """Captured CUDA work that one call replays (PyTorch's ``torch.cuda.CUDAGraph``).

    Capture with ``ember.cuda.graph(g)``; ``g.replay()`` then re-runs every captured kernel on the
    same memory with no Python in between. Inputs are the tensors the captured code read (copy new
    data into them before a replay); outputs are the tensors it created (read them after one).
    See ``ember.cuda.graph`` for the rules.
    """

    def __init__(self):
        _need()
        self._graph = None
        self._capture = None
        self._pool = None
        self._random = None

    def capture_begin(self, pool: _GraphPool | None = None) -> None:
        """Start capturing on a side stream with a private memory pool (``pool`` to share one)."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph is already capturing")
        if self._graph is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph already holds a capture; call reset() first")
        if pool is not None and not isinstance(pool, _GraphPool):
            raise TypeError(f"pool must come from ember.cuda.graph_pool_handle() or CUDAGraph.pool(), "
                            f"got {type(pool).__name__}")
        if is_current_stream_capturing():
            raise RuntimeError("CUDAGraph.capture_begin: another capture is open (captures don't nest)")
        from .backend.cuda.graphs import Capture
        cap = Capture(current_device(), None if pool is None else pool._pool)
        self._random = _GraphRandom(current_device())
        try:
            cap.begin()
        except BaseException:
            self._random.end()
            self._random = None
            raise
        self._capture = cap

    def capture_end(self) -> None:
        """Finish the capture started by ``capture_begin``."""
        if self._capture is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture is open")
        cap, self._capture = self._capture, None
        try:
            self._graph = cap.end()
        finally:
            self._random.end()
        self._pool = cap.pool

    def _abort(self) -> None:
        cap, self._capture = self._capture, None
        if self._random is not None and cap is not None:
            self._random.end()
            self._random = None
        if cap is not None:
            try:
                cap.end(keep=False)
            except Exception:  # noqa: BLE001 - the capture was already invalidated by the error being raised
                pass

    def replay(self) -> None:
        """Run the captured work again (asynchronously, on the current stream)."""
        if self._graph is None:
            raise RuntimeError("CUDAGraph.replay: nothing has been captured (use `with ember.cuda.graph(g): ...`)")
        self._random.before_replay()  # the captured random ops' key and counter shift for this replay
        from .backend.capture import note_replay
        note_replay()
        self._graph.launch()

    def reset(self) -> None:
        """Drop the captured graph (its memory pool goes when no tensor uses it)."""
        if self._capture is not None:
            self._abort()
        self._graph = None
        self._pool = None
        self._random = None

    def pool(self) -> _GraphPool:
        """The graph's private memory pool, to capture another graph that shares it."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: nothing has been captured yet")
        return _GraphPool(self._pool)


class graph:
    """Capture the CUDA work of a ``with`` block into ``cuda_graph`` (PyTorch's ``torch.cuda.graph``).

    >>> g = ember.cuda.CUDAGraph()                            # doctest: +SKIP
    >>> opt.zero_grad(set_to_none=True)                       # doctest: +SKIP
    >>> with ember.cuda.graph(g):                             # doctest: +SKIP
    ...     loss = loss_fn(model(static_x), static_y)
    ...     loss.backward()
    ...     opt.step()
    >>> static_x.copy_(next_x); g.replay()                    # doctest: +SKIP

    Rules (checked where ember can): run the code a few times before capturing it (kernels compile,
    optimizer state appears); inside the block nothing may read values back to the host (``.item()``,
    ``print``, control flow on values, ops that run on the host): those raise ``CaptureSyncError``, and
    index-range and class-target checks are skipped; random ops from the default CUDA generator draw
    fresh numbers at each replay (graph-safe, as an eager run would draw them), others are refused.
    Python values (a learning rate, a step count) are frozen into the graph. Tensors
    created inside live in the graph's private pool and are overwritten by each replay.
    """

    def __init__(self, cuda_graph: CUDAGraph, pool: _GraphPool | None = None):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"ember.cuda.graph expects a CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph = cuda_graph
        self.pool = pool

    def __enter__(self) -> None:
        synchronize()
        self.cuda_graph.capture_begin(self.pool)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.cuda_graph.capture_end()
        else:
            self.cuda_graph._abort()
        return False


__all__ += ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"]
