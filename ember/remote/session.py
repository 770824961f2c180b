"""One client's state on an ``ember serve`` server: its tensor table, recorded programs and errors.

A :class:`Session` executes decoded messages (see :mod:`ember.remote.protocol` for the message
list) on the server's backend stack. It never raises: a failing op is recorded as the session's
*pending error* (reported at the client's next sync point) and its output ids are marked failed, so
later ops that use them fail with a message naming the op that failed first, like CUDA's
asynchronous errors. Synchronous requests get their error in the reply.
"""

from __future__ import annotations

import numpy as np

from .. import _errors
from ..backend.meta import VIEW_OPS, contiguous_strides
from .codec import Ref

# exception types a client re-raises as themselves; anything else becomes a RuntimeError
SAFE_ERRORS = ("ValueError", "TypeError", "IndexError", "RuntimeError", "NotImplementedError",
               "ZeroDivisionError", "KeyError", "OverflowError", "MemoryError")
# ember's exception types (ember/_errors.py) travel by name too
EMBER_ERRORS = {"LinAlgError": _errors.LinAlgError, "IndexOutOfRange": _errors.IndexOutOfRange}
MAX_PROGRAMS = 256  # recorded programs one session may hold
MAX_PROGRAM_STEPS = 100_000


class ProtocolError(Exception):
    """A message outside the protocol: the connection is closed after the error reply."""


class OpError(Exception):
    """An op that failed on the server: ``kind`` (the exception type's name) and the message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def _error(e: BaseException, op: str) -> OpError:
    if isinstance(e, OpError):
        return e
    return OpError(error_kind(e), f"op {op!r} failed on the server: {type(e).__name__}: {e}")


def error_kind(e: BaseException) -> str:
    """The builtin exception types ``e`` is an instance of, among :data:`SAFE_ERRORS`, and ember's own
    (``ember._errors``), joined by '+' (the client re-raises an exception of all of them, e.g.
    RuntimeError+ZeroDivisionError)."""
    kinds = [k for k in SAFE_ERRORS if any(b.__name__ == k and b.__module__ == "builtins" for b in type(e).__mro__)]
    kinds += [k for k, t in EMBER_ERRORS.items() if isinstance(e, t)]
    return "+".join(kinds) or "RuntimeError"


class Session:
    """The handle table and state of one connection; :meth:`handle` executes one message.

    >>> import numpy as np
    >>> from ember.backend.numpy import Numpy
    >>> s = Session(Numpy(), {})
    >>> s.handle(("write", 1, np.arange(3.0)))
    >>> s.handle(("run", "mul", (Ref(1), 2.0), {}, (2,)))
    >>> s.handle(("read", 2))[1].tolist()
    [0.0, 2.0, 4.0]
    >>> s.handle(("run", "no_such_op", (Ref(1),), {}, (3,)))
    >>> s.handle(("sync",))[0]
    'err'
    """

    def __init__(self, backend, info: dict):
        self.backend = backend
        self.info = info
        self.table: dict[int, object] = {}
        self.failed: dict[int, str] = {}  # ids whose producing op failed -> that failure's message
        self.pending: OpError | None = None  # the first asynchronous failure since the last sync
        self.programs: dict[int, tuple] = {}
        self._supported: dict[str, bool] = {}
        self._nbytes = getattr(backend, "nbytes", None)
        self._last_n = 0
        self._last_tuple = False  # whether the last op returned a tuple (told to synchronous callers)

    # ---- bookkeeping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop every tensor and program (the client went away)."""
        self.table.clear()
        self.failed.clear()
        self.programs.clear()

    def nbytes(self) -> int:
        """Bytes held by this session's tensors (a storage shared by views counted once)."""
        seen, total = set(), 0
        storage = getattr(self.backend, "storage", None)
        for h in self.table.values():
            st = storage(h) if storage is not None else h
            if id(st) in seen:
                continue
            seen.add(id(st))
            if self._nbytes is not None:
                total += self._nbytes(st if isinstance(st, np.ndarray) else h)
            else:
                total += int(np.prod(self.backend.shape(h))) * self.backend.dtype(h).itemsize
        return total

    def supports(self, op) -> bool:
        ok = self._supported.get(op)
        if ok is None:
            ok = isinstance(op, str) and bool(self.backend.supports(op))
            self._supported[op] = ok
        return ok

    # ---- messages ---------------------------------------------------------------------------------
    def handle(self, msg):
        """Execute one message; returns the reply value, or None for asynchronous messages.

        Raises :class:`ProtocolError` for a message that isn't part of the protocol (the server
        replies with the error and closes the connection: the peer doesn't speak our language)."""
        if not isinstance(msg, tuple) or not msg or not isinstance(msg[0], str):
            raise ProtocolError("a message must be a tuple starting with its verb")
        fn = _VERBS.get(msg[0])
        if fn is None:
            raise ProtocolError(f"unknown request {msg[0]!r}")
        if len(msg) - 1 != _ARITY[msg[0]]:
            raise ProtocolError(f"request {msg[0]!r} takes {_ARITY[msg[0]]} fields, got {len(msg) - 1}")
        return fn(self, *msg[1:])

    def _reply_error(self, err: OpError):
        return ("err", err.kind, err.message)

    def _fail(self, err: OpError, out_ids) -> None:
        if self.pending is None:
            self.pending = err
        if isinstance(out_ids, tuple):
            for i in out_ids:
                if isinstance(i, int):
                    self.table.pop(i, None)
                    self.failed[i] = err.message
        return None

    def _take_pending(self):
        err, self.pending = self.pending, None
        return err

    def _value(self, x):
        if x.__class__ is Ref:
            h = self.table.get(x.id)
            if h is None:
                why = self.failed.get(x.id)
                if why is not None:
                    raise OpError("RuntimeError", f"an input comes from an op that failed earlier ({why})")
                raise OpError("RuntimeError", f"unknown tensor id {x.id} (freed, or never created)")
            return h
        if x is None or x.__class__ in (bool, int, float, complex):
            return x
        raise OpError("TypeError", f"op inputs must be tensor ids or scalars, got {type(x).__name__}")

    def _check_op(self, op, attrs) -> None:
        if not isinstance(op, str) or not self.supports(op):
            raise OpError("NotImplementedError", f"unknown op {op!r}: the server's backend "
                          f"{getattr(self.backend, 'name', '?')!r} does not implement it")
        if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
            raise OpError("TypeError", f"op {op!r}: attributes must be a dict with string keys")

    def _execute(self, op: str, vals: tuple, attrs: dict):
        """Run one op; results of non-view ops are made C-contiguous (the client assumes so)."""
        if op == "as_strided":
            self._check_strided(vals, attrs)
        try:
            out = self.backend.run(op, vals, attrs)
        except Exception as e:  # noqa: BLE001 - every failure becomes an error reply, never a crash
            raise _error(e, op) from None
        if op[-1] == "_" or op == "assign":
            return ()
        outs = out if out.__class__ is tuple else (out,)
        if op not in VIEW_OPS:
            b = self.backend
            fixed = []
            for o in outs:
                flags = getattr(o, "flags", None)  # numpy/CuPy arrays answer without computing strides
                if o is not None and not (flags is not None and flags.c_contiguous) and \
                        tuple(b.strides(o)) != contiguous_strides(tuple(b.shape(o))):
                    o = b.run("copy", (o,), {})
                fixed.append(o)
            outs = tuple(fixed)
        return outs, out.__class__ is tuple

    def _check_strided(self, vals, attrs) -> None:
        """as_strided reads raw memory: refuse windows outside the storage (they could crash us)."""
        try:
            x = vals[0]
            size, stride, off = tuple(attrs["size"]), tuple(attrs["stride"]), int(attrs["storage_offset"])
            st = self.backend.storage(x)
            n = st.size if hasattr(st, "size") and isinstance(st.size, int) else None
        except Exception as e:  # noqa: BLE001
            raise OpError("TypeError", f"op 'as_strided': bad attributes ({e})") from None
        if len(size) != len(stride) or off < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
            raise OpError("RuntimeError", "as_strided: sizes, strides and offset must be non-negative and match")
        if n is not None and 0 not in size:
            last = off + sum((a - 1) * b for a, b in zip(size, stride))
            if last >= n:
                raise OpError("RuntimeError", f"as_strided: the view reaches element {last} of a storage of {n}")

    def _store(self, out_ids, outs) -> None:
        if len(out_ids) != len(outs):
            raise OpError("RuntimeError", f"the op produced {len(outs)} outputs, the request named {len(out_ids)}")
        for i, o in zip(out_ids, outs):
            if o is not None:  # optional outputs (a norm's weight gradient without a weight) stay absent
                self.table[i] = o
                self.failed.pop(i, None)

    # ---- verbs ------------------------------------------------------------------------------------
    def _run(self, op, inputs, attrs, out_ids, spare_ids: bool = False):
        if not isinstance(out_ids, tuple) or not all(isinstance(i, int) for i in out_ids):
            return self._fail(OpError("ValueError", f"op {op!r}: output ids must be a tuple of ints"), ())
        try:
            self._check_op(op, attrs)
            if not isinstance(inputs, tuple):
                raise OpError("TypeError", f"op {op!r}: inputs must be a tuple")
            vals = tuple([self._value(x) for x in inputs])
            res = self._execute(op, vals, attrs)
            if res != ():
                outs = res[0]
                if spare_ids:  # synchronous callers reserve more ids than most ops need
                    if len(outs) > len(out_ids):
                        raise OpError("RuntimeError", f"the op produced {len(outs)} outputs, more than the "
                                      f"{len(out_ids)} ids reserved")
                    out_ids = out_ids[:len(outs)]
                self._store(out_ids, outs)
                self._last_tuple, self._last_n = res[1], len(outs)
            else:
                self._last_tuple, self._last_n = False, 0
        except Exception as e:  # noqa: BLE001 - every failure is reported, never raised
            e = _error(e, op)
            return self._fail(OpError(e.kind, e.message if e.message.startswith("op ")
                                      else f"op {op!r}: {e.message}"), out_ids)
        return None

    def _run_sync(self, op, inputs, attrs, out_ids):
        err = self._take_pending()
        if err is not None:
            return self._reply_error(err)
        self._run(op, inputs, attrs, out_ids, spare_ids=True)
        err = self._take_pending()
        if err is not None:
            return self._reply_error(err)
        b = self.backend
        metas = tuple((tuple(b.shape(self.table[i])), b.dtype(self.table[i]), tuple(b.strides(self.table[i])))
                      if i in self.table else None for i in out_ids[:self._last_n])
        return ("ok", (self._last_tuple, metas))

    def _write(self, tid, array):
        if not isinstance(tid, int) or not isinstance(array, np.ndarray):
            return self._fail(OpError("TypeError", "write: expected (id, array)"), (tid,))
        try:
            self.table[tid] = self.backend.write(array)
            self.failed.pop(tid, None)
        except Exception as e:  # noqa: BLE001
            self._fail(_error(e, "write"), (tid,))
        return None

    def _read(self, tid):
        err = self._take_pending()
        if err is not None:
            return self._reply_error(err)
        try:
            h = self._value(Ref(tid) if isinstance(tid, int) else tid)
            return ("ok", np.asarray(self.backend.read(h)))  # the encoder makes it C-ordered
        except OpError as e:
            return self._reply_error(e)
        except Exception as e:  # noqa: BLE001
            return self._reply_error(_error(e, "read"))

    def _free(self, ids):
        if isinstance(ids, tuple):
            for i in ids:
                if isinstance(i, int):
                    self.table.pop(i, None)
                    self.failed.pop(i, None)
        return None

    def _sync(self):
        err = self._take_pending()
        return self._reply_error(err) if err is not None else ("ok", None)

    def _supports_q(self, op):
        return ("ok", self.supports(op))

    def _stats(self):
        return ("ok", self.info["stats"]())

    def _define(self, pid, steps):
        try:
            if not isinstance(pid, int) or not isinstance(steps, tuple) or len(steps) > MAX_PROGRAM_STEPS:
                raise OpError("ValueError", "define: expected (program id, tuple of steps)")
            if pid not in self.programs and len(self.programs) >= MAX_PROGRAMS:
                raise OpError("RuntimeError", f"define: a session holds at most {MAX_PROGRAMS} programs")
            n_out = 0
            for k, step in enumerate(steps):
                if not (isinstance(step, tuple) and len(step) == 5):
                    raise OpError("ValueError", f"define: step {k} is not (op, inputs, attrs, dynamic, n_out)")
                op, pattern, attrs, dyn, n = step
                self._check_op(op, attrs)
                if not isinstance(n, int) or n < 0 or not isinstance(pattern, tuple) or not isinstance(dyn, tuple):
                    raise OpError("ValueError", f"define: step {k} ({op!r}) is malformed")
                for p in pattern:
                    if not (isinstance(p, tuple) and len(p) == 2 and p[0] in ("x", "o", "p", "c")):
                        raise OpError("ValueError", f"define: step {k} ({op!r}) has a bad input {p!r}")
                    if p[0] == "o" and not (isinstance(p[1], int) and 0 <= p[1] < n_out):
                        raise OpError("ValueError", f"define: step {k} ({op!r}) uses an output not made yet")
                for d in dyn:
                    if not (isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], str) and isinstance(d[1], int)):
                        raise OpError("ValueError", f"define: step {k} ({op!r}) has a bad dynamic attribute")
                n_out += n
            self.programs[pid] = (steps, n_out)
        except OpError as e:
            self._fail(e, ())
        return None

    def _replay(self, pid, ext_ids, params, out_ids):
        prog = self.programs.get(pid) if isinstance(pid, int) else None
        ok_ids = isinstance(out_ids, tuple) and all(isinstance(i, int) for i in out_ids)
        if prog is None or not ok_ids or not isinstance(ext_ids, tuple) or not isinstance(params, tuple):
            return self._fail(OpError("ValueError", f"replay: unknown program {pid!r} or malformed request"),
                              out_ids if ok_ids else ())
        steps, n_out = prog
        if len(out_ids) != n_out:
            return self._fail(OpError("ValueError", f"replay: program {pid} makes {n_out} tensors, "
                                      f"the request named {len(out_ids)}"), out_ids)
        env: list = []
        try:
            ext = [self._value(Ref(i) if isinstance(i, int) else i) for i in ext_ids]
        except OpError as e:
            return self._fail(e, out_ids)
        for k, (op, pattern, attrs, dyn, n) in enumerate(steps):
            try:
                vals = []
                for kind, v in pattern:
                    vals.append(ext[v] if kind == "x" else env[v] if kind == "o" else params[v] if kind == "p" else v)
                if dyn:
                    attrs = dict(attrs)
                    for key, j in dyn:
                        attrs[key] = params[j]
                res = self._execute(op, tuple(vals), attrs)
                outs = res[0] if res != () else ()
                if len(outs) != n:
                    raise OpError("RuntimeError", f"op {op!r} produced {len(outs)} outputs, the program expects {n}")
                env.extend(outs)
            except Exception as e:  # noqa: BLE001
                err = e if isinstance(e, OpError) else OpError("ValueError", f"op {op!r}: bad program input ({e})")
                err = OpError(err.kind, f"{err.message} (step {k} of replayed program {pid})")
                self._keep(out_ids, env)
                return self._fail(err, out_ids[len(env):])
        self._keep(out_ids, env)
        return None

    def _keep(self, out_ids, env) -> None:
        table = self.table
        for i, h in zip(out_ids, env):
            if h is not None:
                table[i] = h


_VERBS = {
    "run": Session._run, "runs": Session._run_sync, "write": Session._write, "read": Session._read,
    "free": Session._free, "sync": Session._sync, "supports": Session._supports_q, "stats": Session._stats,
    "def": Session._define, "replay": Session._replay,
}
_ARITY = {"run": 4, "runs": 4, "write": 2, "read": 1, "free": 1, "sync": 0, "supports": 1, "stats": 0, "def": 2,
          "replay": 4}
