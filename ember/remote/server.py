"""``ember serve``: the compute server behind ``ember.device("remote://host:port")``.

An asyncio TCP server (TLS when given a certificate). Each connection is a :class:`Session` with
its own tensor table; the first frame must be ``("hello", token, protocol)``, and a wrong or
missing token is refused (constant-time compare) before any op runs. Ops run on the server's
backend stack without Autodiff (the client differentiates and sends backward ops as plain ops).

Frames that can't be decoded, or that break the protocol, get an error reply and the connection
is closed; ops that fail get an error reply at the client's next sync point. Neither affects other
clients, and a vanished client's tensors are dropped with its session.

>>> # in a shell: ember serve --port 3000 --device cpu
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import ssl
import sys

from .codec import HEADER, MAX_FRAME, CodecError, decode, encode_parts, frame
from .session import OpError, ProtocolError, Session

__all__ = ["Server", "serve", "server_backend", "PROTOCOL"]

PROTOCOL = 1
HELLO_TIMEOUT = 30.0  # seconds an unauthenticated connection may stay silent


def server_backend(device: str):
    """The backend stack ops run on for ``--device``: the device's stack without its Autodiff layer
    (the client differentiates) and without a Fusion layer (a session answers each op's error with
    that op; a lazy layer would raise it at a later flush)."""
    import ember
    from ember.backend.autodiff import Autodiff
    from ember.backend.fusion import Fusion

    if device.startswith("remote"):
        raise ValueError("ember serve: --device must be a local device (cpu, cpu:compiled, wgpu, cuda), "
                         f"not {device!r}")
    b = ember.device(device).backend
    while isinstance(b, (Autodiff, Fusion)):
        b = b.inner
    return b


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _FrameTooLarge(Exception):
    pass


class Server:
    """Serves ``backend`` to remote clients. ``await server.start()``, then ``server.port``.

    >>> import asyncio
    >>> from ember.backend.numpy import Numpy
    >>> async def main():
    ...     s = Server(Numpy(), "cpu", port=0)
    ...     await s.start()
    ...     ok = s.port > 0
    ...     await s.stop()
    ...     return ok
    >>> asyncio.run(main())
    True
    """

    def __init__(self, backend, device: str, host: str = "127.0.0.1", port: int = 3000, token: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, max_frame: int = MAX_FRAME):
        if not is_loopback(host) and not token:
            raise ValueError(f"ember serve: listening on the non-loopback address {host!r} needs an auth token "
                             "(--token-file FILE)")
        self.backend = backend
        self.device = device
        self.host, self.port = host, port
        self.token = token.encode() if token else None
        self.ssl_context = ssl_context
        self.max_frame = max_frame
        self.sessions: set[Session] = set()
        self._server: asyncio.base_events.Server | None = None

    def stats(self) -> dict:
        """Sessions, live tensors, their bytes and recorded programs, over every connection."""
        return {"sessions": len(self.sessions), "tensors": sum(len(s.table) for s in self.sessions),
                "bytes": sum(s.nbytes() for s in self.sessions),
                "programs": sum(len(s.programs) for s in self.sessions)}

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, self.host, self.port, ssl=self.ssl_context,
                                                  limit=1 << 20)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        async with self._server:
            await self._server.serve_forever()

    async def _frame(self, reader: asyncio.StreamReader) -> bytes:
        (n,) = HEADER.unpack(await reader.readexactly(HEADER.size))
        if n > self.max_frame:
            raise _FrameTooLarge(f"frame of {n} bytes exceeds the server's limit of {self.max_frame} bytes")
        return await reader.readexactly(n)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, reply) -> None:
        writer.write(frame(encode_parts(reply)))
        await writer.drain()

    async def _hello(self, reader, writer) -> bool:
        msg = decode(await asyncio.wait_for(self._frame(reader), HELLO_TIMEOUT))
        if not (isinstance(msg, tuple) and len(msg) == 3 and msg[0] == "hello"):
            raise ProtocolError("the first request must be ('hello', token, protocol)")
        _, token, proto = msg
        if self.token is not None:
            given = token.encode() if isinstance(token, str) else b""
            if not hmac.compare_digest(given, self.token):
                await self._send(writer, ("err", "PermissionError", "authentication failed: wrong or missing token"))
                return False
        if proto != PROTOCOL:
            await self._send(writer, ("err", "RuntimeError", f"protocol version {proto!r} is not supported "
                                      f"(the server speaks {PROTOCOL})"))
            return False
        b = self.backend
        await self._send(writer, ("ok", {"protocol": PROTOCOL, "device": self.device, "backend": b.name,
                                         "device_type": b.device_type, "max_frame": self.max_frame}))
        return True

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = None
        try:
            if not await self._hello(reader, writer):
                return
            session = Session(self.backend, {"stats": self.stats})
            self.sessions.add(session)
            count = 0
            while True:
                reply = session.handle(decode(await self._frame(reader)))
                if reply is not None:
                    await self._send(writer, reply)
                count += 1
                if count % 64 == 0:  # let other clients' frames in when one streams many
                    await asyncio.sleep(0)
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, OSError):
            pass  # the client went away (or never said hello): its session is dropped below
        except (CodecError, ProtocolError, _FrameTooLarge, OpError) as e:
            await self._try_send(writer, ("err", "ValueError", f"bad frame, connection closed: {e}"))
        except Exception as e:  # noqa: BLE001 - a bug must cost one connection, never the server
            print(f"ember serve: internal error on a connection: {type(e).__name__}: {e}", file=sys.stderr)
            await self._try_send(writer, ("err", "RuntimeError", f"internal server error: {e}"))
        finally:
            if session is not None:
                self.sessions.discard(session)
                session.close()
            writer.close()
            try:
                await writer.wait_closed()
            except Exception:  # noqa: BLE001 - the peer may already be gone
                pass

    async def _try_send(self, writer, reply) -> None:
        try:
            await self._send(writer, reply)
        except Exception:  # noqa: BLE001
            pass


def serve(device: str = "cpu", host: str = "127.0.0.1", port: int = 3000, token: str | None = None,
          certfile: str | None = None, keyfile: str | None = None, max_frame: int = MAX_FRAME) -> None:
    """Run a server until interrupted (what ``ember serve`` calls); prints one line when listening."""
    ctx = None
    if certfile:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certfile, keyfile)
    server = Server(server_backend(device), device, host, port, token, ctx, max_frame)

    async def main():
        await server.start()
        scheme = "TLS" if ctx else "plain TCP"
        print(f"ember serve: listening on {host}:{server.port} ({scheme}, device {device}, "
              f"backend {server.backend.name}, auth {'token' if token else 'none'})", flush=True)
        await server.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

