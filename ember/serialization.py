"""ember.save / ember.load: state dicts, optimizer states and other nested data in one
safetensors file, without pickle.

File format (a valid safetensors file; any safetensors reader can load its tensors)::

    bytes 0..8        N, the header length: unsigned 64-bit little-endian
    bytes 8..8+N      header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
                        {"<tensor name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
                         ...,
                         "__metadata__": {"format": "ember", "ember.version": "1",
                                          "ember.structure": "<JSON of the saved object>",
                                          "ember.sha256": "<hex digest>"}}
    bytes 8+N..       the tensors' raw little-endian bytes, back to back, in header order, with
                      data_offsets relative to the start of this region (no gaps, no overlap)

dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (one byte per bool, 0 or 1).

Tensor names are the dotted paths to the tensors in the saved object (``"fc.weight"`` for a model
state dict, ``"state.0.exp_avg"`` for an optimizer's), so a saved ``model.state_dict()`` is an ordinary
safetensors checkpoint. A tensor object that occurs twice is stored once.

``ember.structure`` holds everything else, as JSON in which tagged objects mark what JSON cannot say
directly: ``{"T": name}`` a tensor (``"param": true`` for an nn.Parameter, ``"rg": true`` when it required
grad), ``{"D": [[key, value], ...]}`` a dict with any plain keys (``"o": true`` for an OrderedDict),
``{"L": [...]}`` a list, ``{"U": [...]}`` a tuple, ``{"F": "nan" | "inf" | "-inf"}`` a non-finite float,
``{"dtype": "float32"}`` and ``{"device": "cpu"}``; strings, ints, finite floats, bools and None are
plain JSON. ``ember.sha256`` is the SHA-256 of the tensor entries, the structure and the data, so
``load`` reports a modified or corrupted file instead of returning wrong numbers.

Saving writes a temporary file in the target's directory, fsyncs it and renames it over the target
(``os.replace``), so a crash leaves either the old file or the new one, never a partial file.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
>>> ember.save({"w": ember.ones(2), "epoch": 3, "betas": (0.9, 0.999)}, path)
>>> ember.load(path)
{'w': tensor([1., 1.]), 'epoch': 3, 'betas': (0.9, 0.999)}
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import struct
import tempfile
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _dtype as dt
from ._device import Device
from ._device import device as _device
from ._tensor import Tensor

__all__ = ["save", "load", "SerializationError"]

FORMAT_VERSION = "1"
_MAX_HEADER = 100_000_000  # the safetensors limit on header size
_CODES = {dt.float64: "F64", dt.float32: "F32", dt.float16: "F16", dt.bfloat16: "BF16", dt.int64: "I64",
          dt.int32: "I32", dt.int16: "I16", dt.int8: "I8", dt.uint8: "U8", dt.bool: "BOOL"}
_FROM_CODE = {c: d for d, c in _CODES.items()}


class SerializationError(RuntimeError):
    """A file that is not a valid ember/safetensors file: truncated, corrupted or tampered with."""


# ---- saving -------------------------------------------------------------------------------------
class _Writer:
    """Turns the object into JSON-able structure while collecting its tensors under unique names."""

    def __init__(self):
        self.tensors: dict[str, Tensor] = {}
        self._by_id: dict[int, str] = {}

    def name_for(self, t: Tensor, path: str) -> str:
        known = self._by_id.get(id(t))
        if known is not None:
            return known
        name = path or "tensor"
        if name in self.tensors or name == "__metadata__":
            k = 1
            while f"{name}#{k}" in self.tensors:
                k += 1
            name = f"{name}#{k}"
        self.tensors[name] = t
        self._by_id[id(t)] = name
        return name

    def encode(self, obj, path: str):
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            out: dict[str, Any] = {"T": self.name_for(obj, path)}
            if isinstance(obj, Parameter):
                out["param"] = True
            if obj.requires_grad:
                out["rg"] = True
            return out
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"F": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if isinstance(k, Tensor) or isinstance(k, (dict, list)):
                    raise TypeError(f"ember.save: dict keys must be plain values (str, int, float, bool, None, "
                                    f"tuple), got {type(k).__name__} at {path or 'the top level'}")
                items.append([self.encode(k, ""), self.encode(v, _join(path, k))])
            out = {"D": items}
            if isinstance(obj, OrderedDict):
                out["o"] = True
            return out
        if isinstance(obj, list):
            return {"L": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}
        if isinstance(obj, tuple):
            return {"U": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}
        if isinstance(obj, dt.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Device):
            return {"device": str(obj)}
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), path)
        raise TypeError(f"ember.save can't store an object of type {type(obj).__name__} (at "
                        f"{path or 'the top level'}): it saves tensors and nested dicts, lists and tuples of "
                        "tensors, str, int, float, bool and None (no pickle, by design)")


def _join(path: str, key) -> str:
    k = str(key)
    return k if not path else f"{path}.{k}"


def _tensor_bytes(t: Tensor) -> tuple[str, list[int], bytes]:
    a = np.ascontiguousarray(t.detach().numpy(force=True))
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return _CODES[t.dtype], list(t.shape), a.tobytes()


def _digest(entries: dict, structure: str, chunks) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode())
    h.update(structure.encode())
    for c in chunks:
        h.update(c)
    return h.hexdigest()


def _serialize(obj) -> list[bytes]:
    w = _Writer()
    structure = json.dumps(w.encode(obj, ""), separators=(",", ":"), allow_nan=False)
    entries: dict[str, Any] = {}
    chunks = []
    at = 0
    for name, t in w.tensors.items():
        code, shape, data = _tensor_bytes(t)
        entries[name] = {"dtype": code, "shape": shape, "data_offsets": [at, at + len(data)]}
        chunks.append(data)
        at += len(data)
    meta = {"format": "ember", "ember.version": FORMAT_VERSION, "ember.structure": structure,
            "ember.sha256": _digest(entries, structure, chunks)}
    header = json.dumps({**entries, "__metadata__": meta}, separators=(",", ":")).encode("utf-8")
    header += b" " * (-len(header) % 8)  # align the data region to 8 bytes, as safetensors writers do
    return [struct.pack("<Q", len(header)), header, *chunks]


def save(obj, f, *, _fsync: bool = True) -> None:
    """Save tensors and nested dicts/lists/tuples of tensors and plain values to ``f`` (a path or a
    binary file object), in the safetensors-based format described in this module's docstring.

    Writing to a path is atomic: a temporary file in the same directory is written, fsynced and
    renamed over ``f``. Raises TypeError for objects the format can't hold (never pickles).
    """
    parts = _serialize(obj)
    if hasattr(f, "write"):
        for p in parts:
            f.write(p)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            for p in parts:
                fh.write(p)
            fh.flush()
            if _fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if _fsync and hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# ---- loading ------------------------------------------------------------------------------------
def _bad(msg: str, where: str) -> SerializationError:
    return SerializationError(f"ember.load({where}): {msg}")


def _parse(buf: bytes, where: str) -> tuple[dict, dict, memoryview]:
    """Validate the container: (tensor entries, metadata, data region)."""
    size = len(buf)
    if size < 8:
        raise _bad(f"file is truncated: {size} bytes, less than the 8-byte header length field", where)
    (n,) = struct.unpack("<Q", buf[:8])
    if n > _MAX_HEADER or n > size - 8:
        raise _bad(f"bad header length {n} for a file of {size} bytes (truncated or not a safetensors file)", where)
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(f"the header is not valid JSON ({e}); the file is corrupted or was modified", where) from None
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object", where)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _bad("__metadata__ must map strings to strings", where)
    data = memoryview(buf)[8 + n:]
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise _bad(f"tensor {name!r}: entry must have exactly dtype, shape and data_offsets", where)
        code, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if code not in _FROM_CODE:
            raise _bad(f"tensor {name!r}: unsupported dtype {code!r} (known: {', '.join(_FROM_CODE)})", where)
        if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                  for s in shape):
            raise _bad(f"tensor {name!r}: shape must be a list of non-negative integers, got {shape!r}", where)
        if (not isinstance(offs, list) or len(offs) != 2 or not all(isinstance(o, int) for o in offs)
                or not 0 <= offs[0] <= offs[1]):
            raise _bad(f"tensor {name!r}: data_offsets must be [begin, end] with 0 <= begin <= end, got {offs!r}",
                       where)
        need = math.prod(shape) * _FROM_CODE[code].itemsize
        if offs[1] - offs[0] != need:
            raise _bad(f"tensor {name!r}: wrong byte count: data_offsets {offs} hold {offs[1] - offs[0]} bytes but "
                       f"shape {shape} of {code} needs {need}", where)
        spans.append((offs[0], offs[1], name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            raise _bad(f"tensor {name!r} starts at byte {begin} of the data but the previous tensor ends at {at} "
                       "(gap or overlap)", where)
        at = end
    if at > len(data):
        raise _bad(f"file is truncated: the header describes {at} bytes of tensor data but only {len(data)} "
                   "follow it", where)
    if at < len(data):
        raise _bad(f"{len(data) - at} unexpected bytes after the tensor data", where)
    return header, meta, data


def _to_tensor(entry: dict, data: memoryview, dev: Device) -> Tensor:
    from ._creation import _from_host
    d = _FROM_CODE[entry["dtype"]]
    begin, end = entry["data_offsets"]
    np_dtype = np.dtype(d.np).newbyteorder("<")
    a = np.frombuffer(data[begin:end], dtype=np_dtype).reshape(entry["shape"])
    a = a.astype(np.dtype(d.np), copy=True)  # own, writable, native-order memory
    if d is dt.bool and a.size and not np.isin(a.view(np.uint8), (0, 1)).all():
        raise SerializationError("ember.load: a BOOL tensor holds bytes other than 0 and 1")
    return _from_host(a, d, dev)


class _Reader:
    def __init__(self, tensors: dict[str, Tensor], where: str):
        self.tensors, self.where = tensors, where

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            raise _bad("malformed structure: bare JSON list", self.where)
        if not isinstance(node, dict) or len(node) == 0:
            raise _bad(f"malformed structure node {node!r}", self.where)
        if "T" in node:
            t = self.tensors.get(node["T"])
            if t is None:
                raise _bad(f"the structure refers to tensor {node['T']!r}, which is not in the file", self.where)
            if node.get("param"):
                from .nn.parameter import Parameter
                return Parameter(t, bool(node.get("rg")))
            if node.get("rg"):
                t = t.requires_grad_(True) if t.is_leaf else t
            return t
        if "D" in node:
            out = OrderedDict() if node.get("o") else {}
            for pair in node["D"]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _bad("malformed dict entry in the structure", self.where)
                key = self.decode(pair[0])
                if isinstance(key, (Tensor, dict, list)):
                    raise _bad("malformed dict key in the structure", self.where)
                out[key] = self.decode(pair[1])
            return out
        if "L" in node:
            return [self.decode(v) for v in node["L"]]
        if "U" in node:
            return tuple(self.decode(v) for v in node["U"])
        if "F" in node:
            return float(node["F"])
        if "dtype" in node:
            return dt.as_dtype(node["dtype"])
        if "device" in node:
            return _device(node["device"])
        raise _bad(f"unknown structure tag in {sorted(node)}", self.where)


def load(f, map_location=None, *, weights_only: bool = True, mmap=None) -> Any:
    """Load what :func:`save` wrote (from a path or a binary file object), tensors on ``map_location``
    (a device or device string; default CPU). A plain safetensors file without ember's structure
    loads as a dict of its tensors. Raises :class:`SerializationError` (a RuntimeError) with the
    reason for a truncated, corrupted or modified file. ``weights_only`` is accepted for PyTorch
    compatibility: loading never runs code.
    """
    if map_location is not None and not isinstance(map_location, (str, Device)):
        raise TypeError(f"map_location must be a device or device string, got {type(map_location).__name__}")
    if hasattr(f, "read"):
        buf, where = f.read(), "<file object>"
    else:
        where = repr(os.fspath(f))
        with open(f, "rb") as fh:
            buf = fh.read()
    if isinstance(buf, str) or not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError("ember.load needs a binary file")
    header, meta, data = _parse(buf, where)
    dev = _device(map_location if map_location is not None else "cpu")
    structure = meta.get("ember.structure")
    digest = meta.get("ember.sha256")
    if digest is not None:
        order = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
        chunks = [data[e["data_offsets"][0]:e["data_offsets"][1]] for _, e in order]
        if _digest(header, structure or "", chunks) != digest:
            raise _bad("checksum mismatch: the file was modified or corrupted after it was written", where)
    tensors = {name: _to_tensor(e, data, dev) for name, e in header.items()}
    if structure is None:
        return tensors
    try:
        tree = json.loads(structure)
    except json.JSONDecodeError as e:
        raise _bad(f"the saved structure is not valid JSON ({e})", where) from None
    return _Reader(tensors, where).decode(tree)


def _roundtrip(obj) -> Any:
    """save + load through memory (used by tests and deepcopy-like helpers)."""
    b = io.BytesIO()
    save(obj, b)
    b.seek(0)
    return load(b)
