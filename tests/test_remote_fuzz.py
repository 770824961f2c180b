"""Hostile input for ``ember serve``: random, truncated, oversized and mistagged frames, unknown ops,
wrong shapes and dtypes. Every case gets an error reply (or a closed connection), and the server
keeps serving other clients. Also the codec's own checks."""

from __future__ import annotations

import socket
import struct

import numpy as np
import pytest

import ember
from ember.remote import Remote
from ember.remote.codec import HEADER, CodecError, Ref, decode, encode, frame
from ember.remote.server import PROTOCOL
from tests.test_remote_helpers import server_fixture

server = server_fixture("--max-frame-mb", "1")


class Raw:
    """A bare protocol client: frames in, frames out."""

    def __init__(self, address: str, hello: bool = True):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=20)
        if hello:
            self.send(("hello", None, PROTOCOL))
            assert self.recv()[0] == "ok"

    def send(self, msg) -> None:
        self.sock.sendall(frame(encode(msg)))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self):
        """The next reply, or None when the server closed the connection."""
        head = self._exact(HEADER.size)
        if head is None:
            return None
        body = self._exact(HEADER.unpack(head)[0])
        return None if body is None else decode(body)

    def _exact(self, n: int):
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def _still_serving(server) -> None:
    r = Remote(server.address)
    h = r.write(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(r.read(r.run("mul", (h, 2.0), {})), [0, 2, 4])
    r.close()


def _error_then_closed(c: Raw, match: str = "") -> None:
    reply = c.recv()
    assert reply is not None and reply[0] == "err", reply
    assert match in reply[2]
    assert c.closed()
    c.close()


def test_random_payloads_get_an_error_reply(server):
    rng = np.random.default_rng(0)
    for _ in range(60):
        c = Raw(server.address)
        payload = rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
        c.send_raw(HEADER.pack(len(payload)) + payload)
        c.send(("sync",))  # a random payload may decode to something harmless: then this answers
        reply = c.recv()
        assert reply is None or reply[0] in ("err", "ok"), reply
        c.close()
    _still_serving(server)


def test_mutated_frames_never_crash_the_server(server):
    rng = np.random.default_rng(1)
    good = encode(("run", "add", (Ref(1), Ref(2)), {"alpha": 1.5}, (3,)))
    for _ in range(80):
        c = Raw(server.address)
        c.send(("write", 1, np.ones(4, np.float32)))
        c.send(("write", 2, np.ones(4, np.float32)))
        bad = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
        c.send_raw(HEADER.pack(len(bad)) + bytes(bad))
        c.send(("read", 3))
        reply = c.recv()
        assert reply is None or reply[0] in ("err", "ok"), reply
        c.close()
    _still_serving(server)


def test_bad_tag_and_truncated_payload(server):
    c = Raw(server.address)
    c.send_raw(HEADER.pack(3) + b"t\x01\x00")  # a tuple header cut short
    _error_then_closed(c, "truncated")
    c = Raw(server.address)
    c.send_raw(HEADER.pack(2) + b"Zz")
    _error_then_closed(c, "unknown tag")
    _still_serving(server)


def test_truncated_frame_then_disconnect(server):
    c = Raw(server.address)
    c.send_raw(HEADER.pack(1000) + b"t" * 10)
    c.close()
    c = Raw(server.address, hello=False)
    c.send_raw(HEADER.pack(50))  # a header, then nothing: the client vanishes
    c.close()
    _still_serving(server)


def test_oversized_frame_is_refused_unread(server):
    c = Raw(server.address)
    c.send_raw(HEADER.pack(0xFFFFFFFF))
    _error_then_closed(c, "exceeds")
    c = Raw(server.address)
    with pytest.raises(Exception):  # noqa: B017 - over the 1 MiB limit of this server
        c.send(("write", 1, np.zeros(1 << 19, np.float32)))
        assert c.recv()[0] == "err"
        raise ConnectionError
    c.close()
    _still_serving(server)


def test_protocol_violations_close_the_connection(server):
    c = Raw(server.address)
    c.send(("launch_missiles",))
    _error_then_closed(c, "unknown request")
    c = Raw(server.address)
    c.send(("run", "add"))  # too few fields
    _error_then_closed(c, "fields")
    c = Raw(server.address)
    c.send(42)
    _error_then_closed(c, "tuple")
    c = Raw(server.address, hello=False)
    c.send(("read", 1))  # no hello first
    _error_then_closed(c, "hello")
    _still_serving(server)


@pytest.mark.parametrize("msg, match", [
    (("run", "no_such_op", (), {}, (5,)), "unknown op 'no_such_op'"),
    (("run", "matmul", (Ref(1), Ref(2)), {}, (5,)), "matmul"),  # (4,) @ (2, 3): wrong shapes
    (("run", "bitwise_and", (Ref(1), Ref(1)), {}, (5,)), "bitwise_and"),  # floats: wrong dtype
    (("run", "sum", (Ref(1),), {"dim": "x", "keepdim": 3}, (5,)), "sum"),  # nonsense attributes
    (("run", "add", (Ref(99), Ref(1)), {}, (5,)), "unknown tensor id 99"),
    (("run", "add", (np.ones(2),), {}, (5,)), "inputs must be tensor ids or scalars"),
    (("run", "as_strided", (Ref(1),), {"size": (1000,), "stride": (1000,), "storage_offset": 0}, (5,)),
     "storage"),
    (("replay", 77, (), (), ()), "unknown program"),
    (("def", 1, (("add", (("o", 3),), {}, (), 1),)), "output not made yet"),
])
def test_bad_ops_get_an_error_and_the_session_continues(server, msg, match):
    c = Raw(server.address)
    c.send(("write", 1, np.ones(4, np.float32)))
    c.send(("write", 2, np.ones((2, 3), np.float32)))
    c.send(msg)
    c.send(("sync",))
    reply = c.recv()
    assert reply[0] == "err" and match in reply[2], reply
    c.send(("read", 1))  # the connection and its tensors are still there
    reply = c.recv()
    assert reply[0] == "ok" and reply[1].tolist() == [1, 1, 1, 1]
    c.close()


def test_synchronous_op_error_reply(server):
    c = Raw(server.address)
    c.send(("write", 1, np.ones(4, np.float32)))
    c.send(("runs", "matmul", (Ref(1), Ref(1), Ref(1)), {}, (5, 6)))
    reply = c.recv()
    assert reply[0] == "err" and "matmul" in reply[2]
    c.close()


# ---- the codec ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 2**63 - 1, -2**63, 2**100, -2**70, 1.5, float("inf"), 1 + 2j, "", "héllo", b"\x00\xff",
    (), (1, (2, (3,))), [1, "a"], {"a": 1, "dims": (0, 1)}, ember.bfloat16, ember.int64, Ref(2**40),
])
def test_codec_roundtrip(value):
    assert decode(encode(value)) == value


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64", "bfloat16"])
def test_codec_arrays(dtype):
    d = getattr(ember, dtype)
    a = np.arange(24).reshape(2, 3, 4).astype(d.np).transpose(2, 0, 1)
    for x in (a, np.array(a[0, 0, 0]), a[:0]):
        b = decode(encode(x))
        assert b.dtype == x.dtype and b.shape == x.shape and b.flags.writeable
        np.testing.assert_array_equal(b.astype(np.float64), x.astype(np.float64))


@pytest.mark.parametrize("payload, match", [
    (b"", "truncated"), (b"i\x00", "truncated"), (b"t\xff\xff\xff\x7f", "items"), (b"s\x05\x00\x00\x00ab", "truncated"),
    (b"s\x02\x00\x00\x00\xff\xfe", "UTF-8"), (b"D\x07float99", "dtype"), (b"NN", "trailing"), (b"Q", "unknown tag"),
    (b"A\x07float32\x01" + struct.pack("<Q", 1 << 40), "needs"), (b"t\x01\x00\x00\x00" * 40 + b"N", "nested"),
    (b"d\x01\x00\x00\x00fAAAAAAAAN", "dict key"),
])
def test_codec_rejects_malformed(payload, match):
    with pytest.raises(CodecError, match=match):
        decode(payload)


def test_codec_refuses_unsendable_values():
    with pytest.raises(TypeError, match="cannot send"):
        encode(object())
    with pytest.raises(TypeError, match="cannot send"):
        encode(np.ones(2, np.complex64))
