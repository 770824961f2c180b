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
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _dtype as dt
from ._device import Device
from ._device import device as _device
from ._tensor import Tensor
from .store.errors import SerializationError
from .store.safetensors import EMBER_CODES as _CODES
from .store.safetensors import array_from, atomic_write, encode, header_length, parse_header, tensor_bytes, to_host

__all__ = ["save", "load", "SerializationError"]

FORMAT_VERSION = "1"
_FROM_CODE = {c: d for d, c in _CODES.items()}
_EMBER_SIZES = {c: d.itemsize for c, d in _FROM_CODE.items()}  # the dtype codes ember.load accepts
# SerializationError (a RuntimeError) lives in ember.store.errors, shared with ember.store's readers


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
    return tensor_bytes(t)


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
    return encode(((name, e["dtype"], e["shape"], c) for (name, e), c in zip(entries.items(), chunks)), meta)


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
    atomic_write(f, parts, fsync=_fsync)


# ---- loading ------------------------------------------------------------------------------------
def _bad(msg: str, where: str) -> SerializationError:
    return SerializationError(msg, path=f"ember.load({where})")


def _parse(buf: bytes, where: str) -> tuple[dict, dict, memoryview]:
    """Validate the container (the checks ember.store's safetensors reader makes): (tensor entries,
    metadata, data region)."""
    size = len(buf)
    at = f"ember.load({where})"
    n = header_length(bytes(buf[:8]), size, at)
    header, meta = parse_header(bytes(buf[8:8 + n]), size - 8 - n, at, codes=_EMBER_SIZES)
    return header, meta or {}, memoryview(buf)[8 + n:]


def _to_tensor(name: str, entry: dict, data: memoryview, dev: Device, where: str) -> Tensor:
    from ._creation import _from_host
    at = f"ember.load({where})"
    a = to_host(array_from(data, 0, entry, at, name), entry["dtype"], at, name)
    return _from_host(a, _FROM_CODE[entry["dtype"]], dev)


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
    tensors = {name: _to_tensor(name, e, data, dev, where) for name, e in header.items()}
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
