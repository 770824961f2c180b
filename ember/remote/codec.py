"""The wire format of ember's remote protocol: length-prefixed frames of tagged binary values.

A frame is a 4-byte big-endian payload length followed by the payload, one encoded value. Values
are a one-byte tag and a fixed or length-prefixed body; nothing is ever evaluated or unpickled, so
a peer can only send data. The encoding covers exactly what backend ops take as inputs and
attributes: ``None``, bools, ints, floats, complex numbers, strings, bytes, tuples, lists, dicts,
ember dtypes, tensor handle ids (:class:`Ref`) and numpy arrays (raw bytes, C order). Tuples of
four or more plain ints (or floats) travel as one block of 64-bit words (tags ``q`` and ``g``).

>>> import numpy as np, ember
>>> v = ("run", "add", (Ref(3), 1.5), {"dtype": ember.float32})
>>> decode(encode(v)) == v
True
>>> decode(encode(np.arange(3, dtype=np.int64))).tolist()
[0, 1, 2]
"""

from __future__ import annotations

import struct

import numpy as np

from .. import _dtype as dt

__all__ = ["Ref", "CodecError", "encode", "decode", "frame", "HEADER", "MAX_FRAME"]

HEADER = struct.Struct(">I")  # payload length of one frame
MAX_FRAME = 1 << 30  # default payload limit (1 GiB): bigger frames are refused before they are read
_MAX_DEPTH = 32  # nesting limit: a hostile frame can't exhaust the decoder's stack
_MAX_NDIM = 64

_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")
_C128 = struct.Struct("<dd")
_U32 = struct.Struct("<I")


class CodecError(ValueError):
    """A payload that is not a well-formed encoded value (truncated, bad tag, bad length, ...)."""


class Ref:
    """A tensor handle id inside a message (the server looks it up in the session's table)."""

    __slots__ = ("id",)

    def __init__(self, id: int):  # noqa: A002 - the protocol's word
        self.id = id

    def __eq__(self, other) -> bool:
        return isinstance(other, Ref) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("Ref", self.id))

    def __repr__(self) -> str:
        return f"Ref({self.id})"


# ---- encoding -------------------------------------------------------------------------------------
def _enc_int(v: int, out: list) -> None:
    if -(1 << 63) <= v < (1 << 63):
        out.append(b"i" + _I64.pack(v))
    else:  # seeds and other big Python ints: signed little-endian bytes
        raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
        out.append(b"I" + _U32.pack(len(raw)) + raw)


def _enc_str(v: str, out: list) -> None:
    raw = v.encode("utf-8")
    out.append(b"s" + _U32.pack(len(raw)) + raw)


def _enc_seq(tag: bytes, v, out: list) -> None:
    n = len(v)
    if n >= 4 and tag == b"t":  # id lists and replay parameters: one block of machine words
        first = v[0].__class__
        if first is int and all(x.__class__ is int for x in v):
            try:
                out.append(b"q" + _U32.pack(n) + struct.pack(f"<{n}q", *v))
                return
            except struct.error:  # an int beyond 64 bits: item by item
                pass
        elif first is float and all(x.__class__ is float for x in v):
            out.append(b"g" + _U32.pack(n) + struct.pack(f"<{n}d", *v))
            return
    out.append(tag + _U32.pack(n))
    for x in v:
        _enc(x, out)


def _enc_dict(v: dict, out: list) -> None:
    out.append(b"d" + _U32.pack(len(v)))
    for k, x in v.items():
        _enc(k, out)
        _enc(x, out)


def _enc_array(a: np.ndarray, out: list) -> None:
    d = dt._FROM_NP.get(a.dtype)
    if d is None:
        raise TypeError(f"remote: cannot send a numpy array of dtype {a.dtype} (not an ember dtype)")
    if not a.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d array into 1-d)
        a = a.copy(order="C")
    name = d.name.encode()
    out.append(b"A" + bytes((len(name),)) + name + bytes((a.ndim,)) + b"".join(_U64.pack(n) for n in a.shape))
    out.append(a.tobytes() if a.nbytes < 4096 else memoryview(a.reshape(-1).view(np.uint8)))


def _enc_dtype(v, out: list) -> None:
    name = v.name.encode()
    out.append(b"D" + bytes((len(name),)) + name)


_ENCODERS = {
    type(None): lambda v, out: out.append(b"N"),
    bool: lambda v, out: out.append(b"T" if v else b"F"),
    int: _enc_int,
    float: lambda v, out: out.append(b"f" + _F64.pack(v)),
    complex: lambda v, out: out.append(b"c" + _C128.pack(v.real, v.imag)),
    str: _enc_str,
    bytes: lambda v, out: out.append(b"b" + _U32.pack(len(v)) + v),
    tuple: lambda v, out: _enc_seq(b"t", v, out),
    list: lambda v, out: _enc_seq(b"l", v, out),
    dict: _enc_dict,
    dt.dtype: _enc_dtype,
    Ref: lambda v, out: out.append(b"H" + _U64.pack(v.id)),
    np.ndarray: _enc_array,
}


def _enc(v, out: list) -> None:
    fn = _ENCODERS.get(v.__class__)
    if fn is not None:
        fn(v, out)
        return
    # subclasses and numpy scalars (np.float32(2.0) as an attribute): their Python equivalents
    if isinstance(v, np.generic):
        _enc(v.item(), out)
    elif isinstance(v, bool):
        _enc(bool(v), out)
    elif isinstance(v, int):
        _enc_int(int(v), out)
    elif isinstance(v, float):
        _enc(float(v), out)
    elif isinstance(v, str):
        _enc_str(str(v), out)
    elif isinstance(v, tuple):
        _enc_seq(b"t", v, out)
    elif isinstance(v, np.ndarray):
        _enc_array(v, out)
    else:
        raise TypeError(f"remote: cannot send a value of type {type(v).__name__} ({v!r:.60})")


def encode_parts(v) -> list:
    """The encoding of ``v`` as a list of byte chunks (large arrays stay zero-copy memoryviews)."""
    out: list = []
    _enc(v, out)
    return out


def encode(v) -> bytes:
    """The payload bytes of ``v``."""
    return b"".join(encode_parts(v))


def frame(payload) -> bytes:
    """One frame: the length header, then the payload (bytes or a list of chunks)."""
    if isinstance(payload, (bytes, bytearray)):
        return HEADER.pack(len(payload)) + payload
    n = sum(len(c) if not isinstance(c, memoryview) else c.nbytes for c in payload)
    return HEADER.pack(n) + b"".join(payload)


# ---- decoding -------------------------------------------------------------------------------------
class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf):
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        self.pos = 0
        self.end = len(buf) if isinstance(buf, bytes) else self.buf.nbytes

    def take(self, n: int):
        p = self.pos
        if n < 0 or p + n > self.end:
            raise CodecError(f"truncated payload: needed {n} bytes at offset {p}, {self.end - p} left")
        self.pos = p + n
        return self.buf[p:p + n]

    def u8(self) -> int:
        p = self.pos
        if p >= self.end:
            raise CodecError(f"truncated payload at offset {p}")
        self.pos = p + 1
        return self.buf[p]

    def u32(self) -> int:
        return _U32.unpack(self.take(4))[0]


def _count(r: _Reader) -> int:
    n = r.u32()
    if n > r.end - r.pos:  # every item takes at least one byte: a bigger count is a lie
        raise CodecError(f"sequence of {n} items in {r.end - r.pos} remaining bytes")
    return n


def _dec(r: _Reader, depth: int):
    tag = r.u8()
    if tag == 0x4E:  # N
        return None
    if tag == 0x54:  # T
        return True
    if tag == 0x46:  # F
        return False
    if tag == 0x69:  # i
        return _I64.unpack(r.take(8))[0]
    if tag == 0x66:  # f
        return _F64.unpack(r.take(8))[0]
    if tag == 0x48:  # H
        return Ref(_U64.unpack(r.take(8))[0])
    if depth >= _MAX_DEPTH and tag in (0x74, 0x6C, 0x64):
        raise CodecError(f"values nested deeper than {_MAX_DEPTH} levels")
    if tag == 0x74:  # t
        return tuple([_dec(r, depth + 1) for _ in range(_count(r))])
    if tag == 0x6C:  # l
        return [_dec(r, depth + 1) for _ in range(_count(r))]
    if tag == 0x64:  # d
        out = {}
        for _ in range(_count(r)):
            k = _dec(r, depth + 1)
            if not isinstance(k, (str, int)):
                raise CodecError(f"dict key of type {type(k).__name__}")
            out[k] = _dec(r, depth + 1)
        return out
    if tag == 0x71 or tag == 0x67:  # q, g: a tuple of int64 / float64 as one block
        n = r.u32()
        raw = r.take(8 * n)
        return struct.unpack(f"<{n}{'q' if tag == 0x71 else 'd'}", raw)
    if tag == 0x73:  # s
        try:
            return bytes(r.take(r.u32())).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CodecError(f"string is not UTF-8: {e}") from None
    if tag == 0x62:  # b
        return bytes(r.take(r.u32()))
    if tag == 0x44:  # D
        return _dtype(bytes(r.take(r.u8())))
    if tag == 0x49:  # I
        return int.from_bytes(r.take(r.u32()), "little", signed=True)
    if tag == 0x63:  # c
        re, im = _C128.unpack(r.take(16))
        return complex(re, im)
    if tag == 0x41:  # A
        d = _dtype(bytes(r.take(r.u8())))
        if d.np is None:
            raise CodecError(f"dtype {d.name} has no numpy type on this machine")
        ndim = r.u8()
        if ndim > _MAX_NDIM:
            raise CodecError(f"array with {ndim} dims")
        shape = tuple(_U64.unpack(r.take(8))[0] for _ in range(ndim))
        n = 1
        for s in shape:
            n *= s
        nbytes = n * d.itemsize
        if nbytes > r.end - r.pos:
            raise CodecError(f"array of shape {shape} {d.name} needs {nbytes} bytes, {r.end - r.pos} left")
        raw = r.take(nbytes)
        # a copy: the frame's bytes are read-only and tensors must be writable
        return np.frombuffer(raw, dtype=d.np, count=n).reshape(shape).copy()
    raise CodecError(f"unknown tag byte 0x{tag:02x} at offset {r.pos - 1}")


def _dtype(name: bytes):
    d = dt._NAMES.get(name.decode("ascii", "replace"))
    if d is None:
        raise CodecError(f"unknown dtype name {name!r}")
    return d


def decode(payload):
    """The value encoded in ``payload`` (bytes or a buffer); :class:`CodecError` when malformed."""
    r = _Reader(payload)
    try:
        v = _dec(r, 0)
    except CodecError:
        raise
    except (struct.error, ValueError, OverflowError, MemoryError) as e:
        raise CodecError(f"malformed payload: {e}") from None
    if r.pos != r.end:
        raise CodecError(f"{r.end - r.pos} trailing bytes after the value")
    return v
