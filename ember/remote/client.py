"""``Remote(url)``: the client backend that sends tensor ops to an ``ember serve`` server.

>>> import ember                                                        # doctest: +SKIP
>>> dev = ember.device("remote://127.0.0.1:3000")                       # doctest: +SKIP
>>> (ember.ones(3, device=dev) * 2).tolist()                            # doctest: +SKIP
[2.0, 2.0, 2.0]

Ops are not sent one by one: they are buffered with ids the client allocates, and their result
shapes, dtypes and strides come from :func:`ember.backend.meta.infer`. The buffer goes out at a
sync point (``read``, an op whose result metadata can't be inferred, ``synchronize()``) or when it
grows large; repeated sequences become one replay frame (see :mod:`ember.remote.program`). Errors
of buffered ops surface at the next sync point as :class:`RemoteOpError` naming the op.
"""

from __future__ import annotations

import itertools
import os
import socket
import ssl
import urllib.parse

import numpy as np

from .. import _dtype as dt
from ..backend.base import DYNAMIC_SHAPE, UnsupportedOp
from ..backend.meta import Meta, contiguous_strides, infer, is_view_op
from .codec import HEADER, CodecError, decode, encode, encode_parts, frame
from .program import RUN_SYNC, Handle, Segmenter, run_frame
from .server import PROTOCOL
from .session import EMBER_ERRORS

__all__ = ["Remote", "make_stack", "RemoteOpError", "RemoteDisconnected", "RemoteAuthError", "parse_url"]

MAX_BUFFERED_OPS = 4096  # ops kept before a flush even without a sync point
_WRITE_FLUSH_BYTES = 1 << 20  # buffered writes above this go out at once
_GEN = itertools.count(1)
# ops returning a fixed-size tuple where optional outputs are None (infer lists only present ones)
_INT_DIV = frozenset({"floor_divide", "remainder", "fmod"})


class RemoteOpError(RuntimeError):
    """An op failed on the server (raised at the sync point after it, naming the op)."""


class RemoteDisconnected(RuntimeError):
    """The connection to the server is gone; tensors that lived on it are lost."""


class RemoteAuthError(PermissionError):
    """The server refused the token."""


_BUILTIN_ERRORS = {t.__name__: t for t in (ValueError, TypeError, IndexError, NotImplementedError, ZeroDivisionError,
                                             KeyError, OverflowError, MemoryError)}
_BUILTIN_ERRORS.update(EMBER_ERRORS)
_ERROR_TYPES: dict[str, type] = {"RuntimeError": RemoteOpError}


def error_type(kind: str) -> type:
    """The exception class for a server error kind like ``"RuntimeError+ZeroDivisionError"``: a
    :class:`RemoteOpError` (so a RuntimeError) that is also each builtin type named."""
    t = _ERROR_TYPES.get(kind)
    if t is None:
        bases = [_BUILTIN_ERRORS[k] for k in str(kind).split("+") if k in _BUILTIN_ERRORS]
        bases = tuple(b for b in bases if not any(o is not b and issubclass(o, b) for o in bases))  # most derived
        try:
            t = type("Remote" + "".join(b.__name__ for b in bases), (RemoteOpError, *bases), {}) if bases \
                else RemoteOpError
        except TypeError:  # no consistent MRO: the server-side type alone still names the failure
            t = RemoteOpError
        _ERROR_TYPES[kind] = t
    return t


def parse_url(url: str) -> tuple[str, int, dict]:
    """``"remote://host:port?tls=1&cafile=ca.pem"`` (scheme optional) -> (host, port, options)."""
    u = url[len("remote://"):] if url.startswith("remote://") else url
    addr, _, query = u.partition("?")
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"remote device address must be host:port, got {url!r}")
    opts = dict(urllib.parse.parse_qsl(query))
    return host.strip("[]") or "127.0.0.1", int(port), opts


class _Conn:
    """One TCP (or TLS) connection: blocking sends, replies read in order."""

    def __init__(self, host: str, port: int, token: str | None, tls: bool, cafile: str | None, timeout: float):
        self.where = f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise RemoteDisconnected(f"cannot connect to the ember server at {self.where}: {e} "
                                     "(is `ember serve` running there?)") from None
        self.sock, self.rfile = sock, None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                ctx = ssl.create_default_context(cafile=cafile)
                self.sock = sock = ctx.wrap_socket(sock, server_hostname=host)
            self.rfile = sock.makefile("rb", buffering=1 << 16)
            self.free: list[int] = []  # ids of dropped handles, sent in batches after the ops that used them
            self.gen = next(_GEN)
            self.segmenter = Segmenter()
            self.info = self.request([frame(encode(("hello", token, PROTOCOL)))])
            sock.settimeout(None)  # ops may run long on the server: wait for replies as long as it takes
        except BaseException as e:
            self.close()
            if isinstance(e, (OSError, ConnectionError, CodecError)) and not isinstance(e, RemoteAuthError):
                raise RemoteDisconnected(f"cannot connect to the ember server at {self.where}: {e}") from None
            raise

    def send(self, chunks: list) -> None:
        self.sock.sendall(b"".join(chunks))

    def recv(self):
        head = self.rfile.read(HEADER.size)
        if len(head) < HEADER.size:
            raise ConnectionError("the server closed the connection")
        (n,) = HEADER.unpack(head)
        payload = self.rfile.read(n)
        if len(payload) < n:
            raise ConnectionError("the server closed the connection mid-reply")
        return decode(payload)

    def request(self, chunks: list):
        self.send(chunks)
        reply = self.recv()
        if not isinstance(reply, tuple) or not reply:
            raise CodecError(f"malformed reply {reply!r:.80}")
        if reply[0] == "ok":
            return reply[1]
        kind, msg = reply[1], reply[2]
        if kind == "PermissionError":
            raise RemoteAuthError(f"the ember server at {self.where} refused the connection: {msg}")
        raise error_type(kind)(msg)

    def close(self) -> None:
        try:
            if self.rfile is not None:
                self.rfile.close()
            self.sock.close()
        except OSError:
            pass


class Remote:
    """The remote backend: ops run on an ``ember serve`` server at ``url`` (``"host:port"``).

    ``token`` defaults to the ``EMBER_REMOTE_TOKEN`` environment variable; ``tls=True`` (or
    ``?tls=1`` in the url) wraps the connection in TLS, verified against ``cafile`` (or the system
    store). Use it under Autodiff: ``ember.Device("remote", backend=Autodiff(Remote("h:3000")))``.
    """

    device_type = "remote"

    def __init__(self, url: str = "127.0.0.1:3000", token: str | None = None, *, tls: bool | None = None,
                 cafile: str | None = None, timeout: float = 10.0, replay: bool = True):
        self.host, self.port, opts = parse_url(url)
        self.token = token if token is not None else os.environ.get("EMBER_REMOTE_TOKEN")
        self.tls = tls if tls is not None else opts.get("tls", os.environ.get("EMBER_REMOTE_TLS", "0")) in ("1", "true")
        self.cafile = cafile or opts.get("cafile") or os.environ.get("EMBER_REMOTE_CAFILE")
        self.timeout = timeout
        self.replay = replay
        self._ids = itertools.count(1)
        self._ops: list = []
        self._writes: list = []
        self._write_bytes = 0
        self._supported: dict[str, bool] = {}
        self._conn: _Conn | None = None
        self._connect()
        self.name = f"remote({self._conn.info.get('backend', '?')})"

    # ---- connection -------------------------------------------------------------------------------
    def _connect(self) -> _Conn:
        conn = _Conn(self.host, self.port, self.token, self.tls, self.cafile, self.timeout)
        conn.segmenter.replay = self.replay
        self._conn = conn
        self._supported = {}
        self._ops, self._writes, self._write_bytes = [], [], 0
        return conn

    def _lost(self, e: BaseException):
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._ops, self._writes, self._write_bytes = [], [], 0
        return RemoteDisconnected(f"lost the connection to the ember server at {self.host}:{self.port} ({e}); "
                                  "tensors on it are gone. The next op reconnects.")

    def _live(self) -> _Conn:
        return self._conn if self._conn is not None else self._connect()

    def _check(self, h: Handle, conn: _Conn) -> None:
        if h.gen != conn.gen:
            raise RemoteDisconnected(f"this tensor lived on an earlier connection to {self.host}:{self.port}, "
                                     "lost when that connection dropped")

    def close(self) -> None:
        """Close the connection (the server frees this client's tensors)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- sending ----------------------------------------------------------------------------------
    def _pending_chunks(self, conn: _Conn) -> list:
        chunks = self._writes
        if self._ops:
            chunks = chunks + conn.segmenter.frames(self._ops)
        self._ops, self._writes, self._write_bytes = [], [], 0
        free = conn.free
        if free:
            ids = free[:]
            del free[:len(ids)]
            chunks.append(frame(encode(("free", tuple(ids)))))
        return chunks

    def _send(self, conn: _Conn, tail: list = ()) -> None:
        chunks = self._pending_chunks(conn) + list(tail)
        if chunks:
            try:
                conn.send(chunks)
            except OSError as e:
                raise self._lost(e) from None

    def _request(self, conn: _Conn, tail: list):
        chunks = self._pending_chunks(conn) + tail
        try:
            return conn.request(chunks)
        except (OSError, ConnectionError, CodecError) as e:
            raise self._lost(e) from None

    def synchronize(self) -> None:
        """Send buffered ops and wait for them; raises the first error among them."""
        self._request(self._live(), [frame(encode(("sync",)))])

    def stats(self) -> dict:
        """The server's counters: sessions, tensors, bytes, programs (over all clients)."""
        return self._request(self._live(), [frame(encode(("stats",)))])

    # ---- protocol ---------------------------------------------------------------------------------
    def _new(self, m: Meta, conn: _Conn, base=None, offset: int = 0) -> Handle:
        return Handle(next(self._ids), tuple(m.shape), m.dtype, tuple(m.strides), base, offset, conn.gen, conn.free)

    def run(self, op: str, inputs: tuple, attrs: dict):
        conn = self._live()
        if not self.supports(op):
            raise UnsupportedOp(self.name, op)
        metas = []
        for x in inputs:
            if x.__class__ is np.ndarray:  # a CPU tensor's array (CPU index tensors may index any device,
                inputs = tuple(self.write(v) if v.__class__ is np.ndarray else v for v in inputs)  # as in PyTorch)
                break
        for x in inputs:
            if x.__class__ is Handle:
                if x.gen != conn.gen:
                    self._check(x, conn)
                metas.append(Meta(x.shape, x.dtype, x.strides))
            else:
                metas.append(x)
        if op[-1] == "_" or op == "assign":  # in place: the result is the first input
            dst = inputs[0]
            if dst.__class__ is Handle and dst.ro:  # numpy's words: the frontend turns them into PyTorch's error
                raise ValueError(f"{op}: assignment destination is read-only (an expanded tensor)")
            if op[:-1] in _INT_DIV and _int_div_needs_check(inputs):
                return self._run_sync(conn, op, inputs, attrs)
            self._buffer(conn, (op, inputs, attrs, ()))
            return dst
        if op in _INT_DIV and _int_div_needs_check(inputs):
            return self._run_sync(conn, op, inputs, attrs)
        metas = tuple(metas)
        res = None if op in DYNAMIC_SHAPE else infer(op, metas, attrs)
        if res is None:
            return self._run_sync(conn, op, inputs, attrs)
        if None in res:  # optional outputs that the op returns as None
            outs = tuple(None if m is None else self._new(m, conn) for m in res)
            self._buffer(conn, (op, inputs, attrs, tuple(o.id if o is not None else 0 for o in outs)))
            return outs
        if len(res) == 1:
            m = res[0]
            if is_view_op(op, metas, attrs):
                x = inputs[0]
                out = self._new(m, conn, x.base if x.base is not None else x, _view_offset(op, x, attrs))
                out.ro = x.ro or op == "expand"
            else:
                out = self._new(m, conn)
            self._buffer(conn, (op, inputs, attrs, (out.id,)))
            return out
        outs = tuple(self._new(m, conn) for m in res)
        self._buffer(conn, (op, inputs, attrs, tuple(o.id for o in outs)))
        return outs

    def _buffer(self, conn: _Conn, rec: tuple) -> None:
        ops = self._ops
        ops.append(rec)
        if len(ops) >= MAX_BUFFERED_OPS:
            self._send(conn)

    def _run_sync(self, conn: _Conn, op: str, inputs: tuple, attrs: dict):
        """Ops whose result metadata can't be inferred: run now, the server replies with it."""
        n_ids = 8  # ids reserved for the outputs; ops with more outputs are refused by the server
        ids = tuple(next(self._ids) for _ in range(n_ids))
        is_tuple, metas = self._request(conn, [run_frame(op, inputs, attrs, ids, RUN_SYNC)])
        if op[-1] == "_" or op == "assign":
            return inputs[0]
        outs = []
        for i, m in zip(ids, metas):
            if m is None:
                outs.append(None)
                continue
            shape, dtype, strides = m
            outs.append(Handle(i, tuple(shape), dtype, tuple(strides), None, 0, conn.gen, conn.free))
        # ids the op did not use are never created on the server: nothing to free
        return tuple(outs) if is_tuple else outs[0]

    def write(self, array) -> Handle:
        conn = self._live()
        a = np.asarray(array)
        if not a.flags.c_contiguous:
            a = a.copy(order="C")
        d = dt._FROM_NP.get(a.dtype)
        if d is None:
            d = dt.from_numpy_dtype(a.dtype)  # raises a clear TypeError for dtypes ember doesn't have
        # the array's own strides (numpy gives tensors without elements various ones; PyTorch agrees)
        strides = tuple(st // a.itemsize for st in a.strides) if a.size == 0 else contiguous_strides(a.shape)
        h = Handle(next(self._ids), a.shape, d, strides, None, 0, conn.gen, conn.free)
        chunks = encode_parts(("write", h.id, a))
        self._writes.append(frame(chunks))
        self._write_bytes += a.nbytes
        if self._write_bytes >= _WRITE_FLUSH_BYTES:  # don't hold big uploads (or their frees) back
            self._send(conn)
        return h

    def read(self, h: Handle) -> np.ndarray:
        conn = self._live()
        self._check(h, conn)
        a = self._request(conn, [frame(encode(("read", h.id)))])
        if a.shape != h.shape:  # a 0-d or empty result keeps the handle's shape
            a = a.reshape(h.shape)
        return a

    def supports(self, op: str) -> bool:
        ok = self._supported.get(op)
        if ok is None:
            ok = self._supported[op] = bool(self._request(self._live(), [frame(encode(("supports", op)))]))
        return ok

    def strides(self, h: Handle) -> tuple:
        return h.strides

    def shape(self, h: Handle) -> tuple:
        return h.shape

    def dtype(self, h: Handle):
        return h.dtype

    def meta(self, h: Handle):
        return h.shape, h.dtype

    def storage(self, h: Handle) -> Handle:
        """The handle owning the memory ``h`` views (``h`` itself unless it is a view)."""
        return h.base if h.base is not None else h

    def storage_offset(self, h: Handle) -> int:
        return h.offset

    def data_ptr(self, h: Handle) -> int:
        """A synthetic address: equal for tensors viewing the same element of the same storage."""
        st = self.storage(h)
        return (st.id << 32) + h.offset * h.dtype.itemsize

    def nbytes(self, h: Handle) -> int:
        n = 1
        for s in h.shape:
            n *= s
        return n * h.dtype.itemsize

    def __repr__(self) -> str:
        return f"Remote('{self.host}:{self.port}')"


def _int_div_needs_check(inputs) -> bool:
    """Integer division by a tensor (or by 0) raises on zero divisors, which only the data tells: the
    op runs synchronously so the error comes from the call, as on the CPU (CUDA does the same)."""
    x, y = inputs[0], inputs[1]
    if x.__class__ is not Handle or x.dtype.is_floating_point:
        return False
    return y.__class__ is Handle or y == 0


def _view_offset(op: str, x: Handle, attrs: dict) -> int:
    """The storage offset of a view op's result (views keep their input's offset unless they move it)."""
    if op == "slice":
        return x.offset + sum(a * s for (a, _, _), s in zip(attrs["index"], x.strides))
    if op == "diagonal":
        off, d1, d2 = attrs["offset"], attrs["dim1"], attrs["dim2"]
        return x.offset + (off * x.strides[d2] if off >= 0 else -off * x.strides[d1])
    if op == "as_strided":
        return int(attrs["storage_offset"])
    return x.offset


def make_stack(address: str):
    """The stack behind ``ember.device("remote://host:port")``: Autodiff over :class:`Remote`."""
    from ..backend.autodiff import Autodiff
    return Autodiff(Remote(address))
