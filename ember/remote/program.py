"""Turning the client's buffered ops into frames, and replaying repeated sequences by id.

Between two sync points the client buffers ops. When it sends them, it reduces the sequence to a
*pattern*: each op with its static attributes and, for each input, whether it is a tensor made
earlier in the sequence ("o", index), a tensor from outside it ("x", index), a number ("p", index
into the parameters) or a constant ("c", value). A training step gives the same pattern every
step (only tensor ids, Python scalars such as a learning rate, and the seed/offset of random ops
change), so the second time a pattern is seen it is sent once as a program ("def") and from then on
the whole sequence is one small "replay" frame: program id, external tensor ids, parameters, and
the ids to give the results.

>>> from ember.remote.program import Segmenter
>>> seg = Segmenter()
>>> seg.frames([]) == []
True
"""

from __future__ import annotations

import struct

from .codec import HEADER, encode

__all__ = ["Segmenter", "Handle", "run_frame", "RUN_SYNC"]

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_RUN = b"t" + _U32.pack(5) + encode("run")
RUN_SYNC = b"t" + _U32.pack(5) + encode("runs")
# attributes whose values change from call to call of the same op sequence: replay passes them
_DYNAMIC = ("seed", "offset")
_NUMBERS = (int, float, bool)
MAX_PROGRAMS = 200  # below the server's per-session limit
_MAX_SEEN = 256  # candidate patterns remembered (a bounded cache: old ones are forgotten)


class Handle:
    """A client-side tensor handle: the id on the server and the tensor's metadata.

    ``base`` is the handle owning the storage this one views (None when it owns it); dropping the
    last reference queues the id to be freed on the server.

    >>> import ember
    >>> freed = []
    >>> h = Handle(7, (2,), ember.float32, (1,), None, 0, 1, freed)
    >>> del h
    >>> freed
    [7]
    """

    __slots__ = ("id", "shape", "dtype", "strides", "base", "offset", "gen", "_fl", "ro", "__weakref__")

    def __init__(self, id, shape, dtype, strides, base, offset, gen, fl):  # noqa: A002
        self.id, self.shape, self.dtype, self.strides = id, shape, dtype, strides
        self.base, self.offset, self.gen, self._fl = base, offset, gen, fl
        self.ro = False  # a view of an expanded tensor: several elements share memory, writes are refused

    def __del__(self):
        try:
            self._fl.append(self.id)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"RemoteHandle(id={self.id}, shape={self.shape}, dtype={self.dtype})"


def _inputs(inputs) -> bytes:
    out = [b"t", _U32.pack(len(inputs))]
    for x in inputs:
        if x.__class__ is Handle:
            out.append(b"H" + _U64.pack(x.id))
        else:
            out.append(encode(x))
    return b"".join(out)


def _ids(ids) -> bytes:
    return b"t" + _U32.pack(len(ids)) + b"".join([b"i" + struct.pack("<q", i) for i in ids])


def run_frame(op: str, inputs, attrs: dict, out_ids, verb: bytes = _RUN) -> bytes:
    """The frame of one op: asynchronous ("run") or, with ``verb=RUN_SYNC``, answered ("runs")."""
    payload = b"".join((verb, encode(op), _inputs(inputs), encode(attrs), _ids(out_ids)))
    return HEADER.pack(len(payload)) + payload


class Segmenter:
    """Encodes buffered op records ``(op, inputs, attrs, out_ids)``; remembers programs per connection."""

    def __init__(self, replay: bool = True):
        self.replay = replay
        self.programs: dict[tuple, int] = {}
        self.seen: dict[tuple, int] = {}
        self.replayed = 0  # segments sent as one replay frame (for tests and the bench)

    def frames(self, ops: list) -> list:
        """The frames that execute ``ops`` on the server, in order."""
        if not ops:
            return []
        if not self.replay or len(ops) < 2:
            return [run_frame(*rec) for rec in ops]
        local: dict[int, int] = {}
        ext: dict[int, int] = {}
        ext_ids: list = []
        params: list = []
        out_ids: list = []
        key: list = []
        statics: list = []
        for op, inputs, attrs, outs in ops:
            pat = []
            for x in inputs:
                if x.__class__ is Handle:
                    j = local.get(x.id)
                    if j is not None:
                        pat.append(("o", j))
                        continue
                    k = ext.get(x.id)
                    if k is None:
                        k = ext[x.id] = len(ext_ids)
                        ext_ids.append(x.id)
                    pat.append(("x", k))
                elif x.__class__ in _NUMBERS:
                    pat.append(("p", len(params)))
                    params.append(x)
                else:
                    pat.append(("c", x))
            dyn = ()
            if "seed" in attrs or "offset" in attrs:
                static = {k: v for k, v in attrs.items() if k not in _DYNAMIC}
                dyn = []
                for k in _DYNAMIC:
                    if k in attrs:
                        dyn.append((k, len(params)))
                        params.append(attrs[k])
                dyn = tuple(dyn)
            else:
                static = attrs
            key.append((op, encode(static), tuple(pat), dyn, len(outs)))
            statics.append(static)
            for i in outs:
                local[i] = len(out_ids)
                out_ids.append(i)
        key = tuple(key)
        pid = self.programs.get(key)
        frames = []
        if pid is None:
            count = self.seen.get(key, 0) + 1
            if count < 2 or len(self.programs) >= MAX_PROGRAMS:
                if len(self.seen) >= _MAX_SEEN:
                    self.seen.clear()
                self.seen[key] = count
                return [run_frame(*rec) for rec in ops]
            self.seen.pop(key, None)
            pid = self.programs[key] = len(self.programs) + 1
            steps = tuple((k[0], k[2], s, k[3], k[4]) for k, s in zip(key, statics))
            payload = encode(("def", pid, steps))
            frames.append(HEADER.pack(len(payload)) + payload)
        payload = encode(("replay", pid, tuple(ext_ids), tuple(params), tuple(out_ids)))
        frames.append(HEADER.pack(len(payload)) + payload)
        self.replayed += 1
        return frames
