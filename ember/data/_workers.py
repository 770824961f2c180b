"""DataLoader workers: background processes (or threads) that fetch and collate batches ahead of use.

Design:

* Every worker has its own task queue; all answer on one result queue. The main process keeps
  ``prefetch_factor * num_workers`` tasks in flight and hands out results in task order (a small
  reorder buffer), so batches come out in the sampler's order whichever worker finishes first.
* Process workers collate with numpy and send pickled numpy (:class:`~ember.data.collate.Wire`),
  never ember tensors; the main process wraps the arrays as tensors without copying.
* A worker pickles its answer itself, so an unpicklable batch becomes a clear error instead of a
  hang, and an exception travels as its type, message and traceback text and is raised again in
  the main process naming the worker and the batch.
* Each ``iter()`` is a new *generation*; answers from an abandoned generation (persistent workers)
  are dropped. Workers poll their parent's pid and exit when it dies (the main process was killed),
  and the main process checks that workers are alive while it waits, so nothing hangs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
import weakref
from typing import Any

from ._fetch import Fetcher, batch_seed, seed_all
from .collate import from_wire

_POLL = 0.1  # seconds between liveness checks while a queue is empty
_local = threading.local()


class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset``."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any):  # noqa: A002 - PyTorch's field name
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, " \
               f"dataset={type(self.dataset).__name__})"


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker, its :class:`WorkerInfo`; in the main process, None.

    An IterableDataset uses it to give each worker its own share of the stream:

    >>> get_worker_info() is None
    True
    """
    return getattr(_local, "info", None)


class _PlainMessage(str):
    """A KeyError's message shown as written (KeyError's str() would show its repr, newlines escaped)."""

    def __repr__(self) -> str:
        return str(self)


class WorkerFailure:
    """An exception raised in a worker, in a form that crosses the process boundary."""

    def __init__(self, exc: BaseException, worker_id: int, where: str):
        self.type_name = type(exc).__qualname__
        try:
            pickle.dumps(type(exc))
            self.exc_type: type | None = type(exc)
        except Exception:  # a class defined inside a function can't be pickled: re-raise as RuntimeError
            self.exc_type = None
        lines = traceback.format_exception(exc)
        if lines and lines[0].startswith("Traceback"):
            lines = lines[1:]
        self.traceback = "".join(lines)
        self.worker_id, self.where, self.pid = worker_id, where, os.getpid()

    def exception(self) -> BaseException:
        msg = (f"Caught {self.type_name} in DataLoader worker {self.worker_id} (pid {self.pid}) while loading "
               f"{self.where}.\nOriginal traceback (most recent call last):\n{self.traceback}")
        cls = self.exc_type
        if cls is KeyError:
            return KeyError(_PlainMessage(msg))
        if cls is not None:
            try:
                return cls(msg)
            except Exception:  # exception types whose constructor needs more than a message
                pass
        return RuntimeError(msg)


def _worker_loop(kind: str, worker_id: int, num_workers: int, dataset, fetch_args: tuple, index_q, result_q,
                 base_seed: int, init_fn, parent_pid: int) -> None:
    """The body of one worker: answer tasks until told to stop or the parent dies.

    Tasks are ``("task", generation, task_id, batch_index, indices, seed)``, ``("epoch", generation)``
    or None (stop); answers are ``(generation, task_id, kind, payload)`` with kind "ok", "end" (the
    stream is exhausted) or "error" (payload: a WorkerFailure).
    """
    process = kind == "process"
    seed = (base_seed + worker_id) % 2**63
    if process:
        seed_all(seed)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    _local.info = WorkerInfo(worker_id, num_workers, seed, dataset)
    fetcher = Fetcher(dataset, *fetch_args, wire=True, pickled=process)

    def send(gen, tid, kind: str, payload, where: str) -> None:
        msg = (gen, tid, kind, payload)
        if not process:
            result_q.put(msg)
            return
        try:
            data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            err = TypeError(f"the batch can't be sent to the main process: pickling it failed ({e})")
            data = pickle.dumps((gen, tid, "error", WorkerFailure(err, worker_id, where)))
        result_q.put(data)

    failed = None
    if init_fn is not None:
        try:
            init_fn(worker_id)
        except Exception as e:
            failed = WorkerFailure(e, worker_id, "its worker_init_fn")
            send(None, None, "error", failed, "")
    streamed = 0  # batches this worker produced from its stream (iterable datasets)
    try:
        while True:
            try:
                msg = index_q.get(timeout=_POLL * 5)
            except queue.Empty:
                if process and os.getppid() != parent_pid:
                    return  # the main process died (e.g. SIGKILL): exit instead of lingering
                continue
            if msg is None:
                break
            if msg[0] == "epoch":
                fetcher.reset()
                streamed = 0
                continue
            _, gen, tid, batch, indices, bseed = msg
            where = f"batch {batch}" if batch is not None else f"batch {streamed} of its share of the stream"
            if failed is not None:
                send(gen, tid, "error", failed, where)
                continue
            try:
                if bseed is not None and fetcher.needs_seed:
                    seed_all(bseed)
                data = fetcher.fetch(indices)
            except StopIteration:
                if fetcher.iterable:
                    send(gen, tid, "end", None, where)
                else:
                    err = RuntimeError("the dataset raised StopIteration")
                    send(gen, tid, "error", WorkerFailure(err, worker_id, where), where)
                continue
            except Exception as e:
                send(gen, tid, "error", WorkerFailure(e, worker_id, where), where)
                continue
            streamed += 1
            send(gen, tid, "ok", data, where)
    except KeyboardInterrupt:
        pass
    except (EOFError, OSError):
        pass  # the queues went away with the main process
    if process:
        result_q.cancel_join_thread()  # answers nobody will read must not keep this process alive


def default_context() -> str:
    """fork where it is safe and available (Linux), else spawn."""
    methods = mp.get_all_start_methods()
    if "fork" in methods and not sys.platform.startswith("darwin"):
        return "fork"
    return "spawn"


class _PoolState:
    """What shutting a pool down needs (kept apart from the pool so a finaliser can hold it)."""

    def __init__(self):
        self.workers: list = []
        self.index_qs: list = []
        self.result_q = None
        self.process = True
        self.closed = False


def _shutdown(state: _PoolState, grace: float = 2.0) -> None:
    if state.closed:
        return
    state.closed = True
    for q in state.index_qs:
        try:
            q.put(None)
        except Exception:
            pass
    deadline = time.monotonic() + grace
    for w in state.workers:
        w.join(max(0.0, deadline - time.monotonic()))
    if state.process:
        for w in state.workers:
            if w.is_alive():  # stuck in the dataset's code: stop it
                w.terminate()
                w.join(1.0)
            if w.is_alive():
                w.kill()
                w.join(1.0)
        for q in [*state.index_qs, state.result_q]:
            q.cancel_join_thread()
            q.close()


class WorkerPool:
    """``num_workers`` workers (processes or threads) and their queues."""

    def __init__(self, dataset, num_workers: int, fetch_args: tuple, context, base_seed: int, init_fn):
        st = self._state = _PoolState()
        st.process = context != "thread"
        self.num_workers = num_workers
        self.base_seed = base_seed
        self.generation = 0
        if st.process:
            ctx = mp.get_context(context) if isinstance(context, str) else context
            st.result_q = ctx.Queue()
            make_q, make_w = ctx.Queue, ctx.Process
        else:
            st.result_q = queue.Queue()
            make_q, make_w = queue.Queue, threading.Thread
        self._finalizer = weakref.finalize(self, _shutdown, st)
        kind = "process" if st.process else "thread"
        for i in range(num_workers):
            q = make_q()
            w = make_w(target=_worker_loop, args=(kind, i, num_workers, dataset, fetch_args, q, st.result_q,
                                                  base_seed, init_fn, os.getpid()),
                       daemon=True, name=f"ember-data-worker-{i}")
            st.index_qs.append(q)
            st.workers.append(w)
            w.start()

    @property
    def closed(self) -> bool:
        return self._state.closed

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self._state.workers] if self._state.process else []

    def new_generation(self) -> int:
        """Start a new epoch: workers restart their streams; older answers will be dropped."""
        self.generation += 1
        for q in self._state.index_qs:
            q.put(("epoch", self.generation))
        return self.generation

    def send(self, worker: int, msg: tuple) -> None:
        self._state.index_qs[worker].put(msg)

    def receive(self, timeout: float) -> tuple:
        """The next answer from any worker; raises if a worker died or ``timeout`` (> 0) passes."""
        st = self._state
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))
            try:
                raw = st.result_q.get(timeout=wait)
            except queue.Empty:
                self._check_alive()
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds waiting for a batch from its "
                                       "workers") from None
                continue
            return pickle.loads(raw) if st.process else raw

    def _check_alive(self) -> None:
        for i, w in enumerate(self._state.workers):
            if not w.is_alive():
                if not self._state.process:
                    raise RuntimeError(f"DataLoader worker thread {i} stopped unexpectedly")
                code = w.exitcode
                how = f"exit code {code}"
                if code is not None and code < 0:
                    try:
                        how = f"signal {signal.Signals(-code).name}"
                    except ValueError:
                        how = f"signal {-code}"
                raise RuntimeError(f"DataLoader worker {i} (pid {w.pid}) exited unexpectedly ({how}); if it was "
                                   "killed for memory, try fewer workers or a smaller batch_size")

    def shutdown(self, grace: float = 2.0) -> None:
        """Stop every worker (waiting up to ``grace`` seconds, then terminating) and close the queues."""
        self._finalizer.detach()
        _shutdown(self._state, grace)


class MultiSource:
    """One epoch's batches from a worker pool, in order."""

    def __init__(self, pool: WorkerPool, *, iterable: bool, index_iter, start: int, epoch: int, base_seed: int,
                 prefetch: int, timeout: float, persistent: bool, in_order: bool):
        self.pool, self.iterable, self.index_iter, self.start = pool, iterable, index_iter, start
        self.epoch, self.base_seed, self.timeout, self.persistent, self.in_order = \
            epoch, base_seed, timeout, persistent, in_order
        self.seeded = pool._state.process  # thread workers share the global generators: no per-batch seeding
        self.gen = pool.new_generation()
        n = pool.num_workers
        self.active = [True] * n
        self.next_tid = self.rcvd = self.rr = 0
        self.pending: dict[int, int] = {}  # task id -> worker, for tasks not answered yet
        self.buffer: dict[int, tuple] = {}
        self.done = False
        for _ in range(prefetch * n):
            self._dispatch()

    def _dispatch(self) -> None:
        n = self.pool.num_workers
        if self.iterable:
            for _ in range(n):
                w, self.rr = self.rr, (self.rr + 1) % n
                if self.active[w]:
                    break
            else:
                return
            task = (None, None, None)
        else:
            indices = next(self.index_iter, None)
            if indices is None:
                return
            w = self.next_tid % n
            b = self.start + self.next_tid
            task = (b, indices, batch_seed(self.base_seed, self.epoch, b) if self.seeded else None)
        self.pool.send(w, ("task", self.gen, self.next_tid, *task))
        self.pending[self.next_tid] = w
        self.next_tid += 1

    def _take(self) -> tuple:
        """The next answer to hand out: the lowest outstanding task (or any, without in_order)."""
        if self.in_order and self.rcvd in self.buffer:
            return self.buffer.pop(self.rcvd)
        if not self.in_order and self.buffer:
            return self.buffer.pop(next(iter(self.buffer)))
        while True:
            msg = self.pool.receive(self.timeout)
            gen, tid = msg[0], msg[1]
            if tid is None:  # worker_init_fn failed
                raise msg[3].exception()
            if gen != self.gen:
                continue  # an answer for an abandoned epoch
            if not self.in_order or tid == self.rcvd:
                return msg
            self.buffer[tid] = msg

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        if self.done:
            raise StopIteration
        if self.pool.generation != self.gen:
            raise RuntimeError("this DataLoader iterator was superseded by a newer iter(loader): with "
                               "persistent_workers=True the loader's workers serve one iterator at a time")
        try:
            while True:
                if not self.pending:
                    self.close()
                    raise StopIteration
                _, tid, kind, payload = self._take()
                self.rcvd += 1
                worker = self.pending.pop(tid)
                if kind == "end":
                    self.active[worker] = False
                    self._dispatch()
                    continue
                if kind == "error":
                    raise payload.exception()
                self._dispatch()
                return from_wire(payload)
        except StopIteration:
            raise
        except BaseException:
            self.close(error=True)
            raise

    def close(self, error: bool = False) -> None:
        if self.done:
            return
        self.done = True
        if error or not self.persistent:
            self.pool.shutdown(grace=0.5 if error else 2.0)
