"""safetensors files: a lazy, memory-mapped reader and an atomic writer, no third-party package needed.

The format::

    bytes 0..8       N, the header length: unsigned 64-bit little-endian
    bytes 8..8+N     UTF-8 JSON: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
                                  ..., "__metadata__": {"<str>": "<str>"}}   (padded with spaces)
    bytes 8+N..      the tensors' little-endian bytes, back to back; offsets are relative to this region

The header is checked the way the reference implementation checks it (offsets contiguous from 0,
no gaps or overlaps, byte counts matching shape x dtype, the data region exactly as long as the
header says), so a damaged file raises :class:`SafetensorsError` naming the file and the tensor.
:mod:`ember.serialization` (``ember.save``/``ember.load``) shares this module's header code.

>>> import ember, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
>>> save_file({"w": ember.arange(6.).reshape(2, 3)}, path, metadata={"step": "3"})
>>> f = safe_open(path)
>>> f.keys(), f.metadata(), f.get_slice("w")[1:, ::2]
(['w'], {'step': '3'}, tensor([[3., 5.]]))
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Iterable, Mapping

import numpy as np

from .. import _dtype as dt
from .._device import device as _device
from .._fileio import atomic_write  # noqa: F401  (re-exported: ember.store.safetensors.atomic_write)
from .._tensor import Tensor
from .errors import SafetensorsError, StoreDtypeError

__all__ = ["safe_open", "load_file", "load_bytes", "save_file", "save_bytes", "CODES", "EMBER_CODES"]

MAX_HEADER = 100_000_000  # the reference implementation's limit on the JSON header

# code -> (numpy dtype of the little-endian bytes or None if numpy can't hold it, ember dtype or None)
_ML = {}
try:
    import ml_dtypes as _ml
    _ML = {"F8_E4M3": _ml.float8_e4m3fn, "F8_E5M2": _ml.float8_e5m2}
    if hasattr(_ml, "float8_e8m0fnu"):
        _ML["F8_E8M0"] = _ml.float8_e8m0fnu
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    pass

EMBER_CODES: dict[dt.dtype, str] = {
    dt.float64: "F64", dt.float32: "F32", dt.float16: "F16", dt.bfloat16: "BF16", dt.int64: "I64",
    dt.int32: "I32", dt.int16: "I16", dt.int8: "I8", dt.uint8: "U8", dt.bool: "BOOL"}
_FROM_EMBER = {c: d for d, c in EMBER_CODES.items()}
# every code whose element size is a whole number of bytes, with that size
CODES: dict[str, int] = {**{c: d.itemsize for c, d in _FROM_EMBER.items()},
                         "U16": 2, "U32": 4, "U64": 8, "C64": 8, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}


def _np_dtype(code: str) -> np.dtype:
    d = _FROM_EMBER.get(code)
    if d is not None:
        npd = np.dtype(d.np)
    elif code in _ML:
        npd = np.dtype(_ML[code])
    elif code in ("U16", "U32", "U64", "C64"):
        npd = np.dtype({"U16": "u2", "U32": "u4", "U64": "u8", "C64": "c8"}[code])
    else:
        raise StoreDtypeError(f"dtype {code} needs ml_dtypes, which is not installed")
    return npd.newbyteorder("<") if npd.byteorder in "=|" and npd.kind in "fiuc" and npd.itemsize > 1 else npd


# ---- header ---------------------------------------------------------------------------------------
def header_length(first8: bytes, size: int, where: str) -> int:
    """N from the first 8 bytes of a file of ``size`` bytes, checked against the size."""
    if size < 8 or len(first8) < 8:
        raise SafetensorsError(f"file is truncated: {size} bytes, less than the 8-byte header length field",
                               path=where)
    (n,) = struct.unpack("<Q", first8[:8])
    if n > MAX_HEADER or n > size - 8:
        raise SafetensorsError(f"bad header length {n} for a file of {size} bytes (truncated or not a "
                               "safetensors file)", path=where)
    return n


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def parse_header(raw: bytes, data_len: int, where: str, *, codes: Mapping[str, int] = CODES
                 ) -> tuple[dict[str, dict], dict | None]:
    """Validate a JSON header describing ``data_len`` bytes of data.

    Returns (entries in data order, metadata or None); raises SafetensorsError naming ``where`` and
    the key. ``codes`` are the dtype codes accepted (code -> element size).
    """
    try:
        header = json.loads(bytes(raw).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise SafetensorsError(f"the header is not valid JSON ({e}); the file is corrupted or was modified",
                               path=where) from None
    if not isinstance(header, dict):
        raise SafetensorsError("the header is not a JSON object", path=where)
    meta = header.pop("__metadata__", None)
    if meta is not None and (not isinstance(meta, dict) or
                             not all(isinstance(v, str) for v in meta.values())):
        raise SafetensorsError("__metadata__ must map strings to strings", path=where)
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError("entry must have exactly dtype, shape and data_offsets", path=where, key=name)
        code, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if not isinstance(code, str) or code not in codes:
            raise SafetensorsError(f"unsupported dtype {code!r} (known: {', '.join(codes)})", path=where, key=name)
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise SafetensorsError(f"shape must be a list of non-negative integers, got {shape!r}",
                                   path=where, key=name)
        if (not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) for o in offs)
                or not 0 <= offs[0] <= offs[1]):
            raise SafetensorsError(f"data_offsets must be [begin, end] with 0 <= begin <= end, got {offs!r}",
                                   path=where, key=name)
        need = math.prod(shape) * codes[code]
        if offs[1] - offs[0] != need:
            raise SafetensorsError(f"wrong byte count: data_offsets {offs} hold {offs[1] - offs[0]} bytes but "
                                   f"shape {shape} of {code} needs {need}", path=where, key=name)
        spans.append((offs[0], offs[1], name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            raise SafetensorsError(f"starts at byte {begin} of the data but the previous tensor ends at {at} "
                                   "(gap or overlap)", path=where, key=name)
        at = end
    if at > data_len:
        raise SafetensorsError(f"file is truncated: the header describes {at} bytes of tensor data but only "
                               f"{data_len} follow it", path=where)
    if at < data_len:
        raise SafetensorsError(f"{data_len - at} unexpected bytes after the tensor data", path=where)
    return {name: header[name] for _, _, name in spans}, meta


def array_from(buffer, start: int, entry: dict, where: str, name: str) -> np.ndarray:
    """A read-only numpy view of one entry's bytes in ``buffer`` (data region at ``start``)."""
    npd = _np_dtype(entry["dtype"])
    return np.ndarray(tuple(entry["shape"]), dtype=npd, buffer=buffer, offset=start + entry["data_offsets"][0])


def to_host(view: np.ndarray, code: str, where: str, name: str) -> np.ndarray:
    """An owned, writable, native-order copy of a file view; BOOL bytes must be 0 or 1."""
    out = view.astype(view.dtype.newbyteorder("="), copy=True) if view.dtype.byteorder == "<" \
        else np.array(view, copy=True)
    if code == "BOOL" and out.size and out.view(np.uint8).max() > 1:
        raise SafetensorsError("a BOOL tensor holds bytes other than 0 and 1", path=where, key=name)
    return out


def _ember_dtype(code: str, where: str, name: str) -> dt.dtype:
    d = _FROM_EMBER.get(code)
    if d is None:
        raise StoreDtypeError(f"dtype {code} has no ember counterpart (ember has {', '.join(EMBER_CODES.values())}); "
                              "read the raw values with get_numpy(name) and convert them, e.g. "
                              "ember.tensor(f.get_numpy(name).astype('float32'))", path=where, key=name)
    return d


def _tensor(arr: np.ndarray, code: str, dev, where: str, name: str) -> Tensor:
    from .._creation import _from_host
    return _from_host(arr, _ember_dtype(code, where, name), dev)


# ---- reading --------------------------------------------------------------------------------------
class safe_open:  # noqa: N801 - the safetensors package's name, so code ports by changing the import
    """Open a safetensors file lazily: only the header is read; tensors come from a memory map.

    ``framework`` is accepted (and ignored) for compatibility with ``safetensors.safe_open``;
    ``device`` is where :meth:`get_tensor` puts tensors.

    >>> with safe_open(path) as f:                      # doctest: +SKIP
    ...     emb = f.get_slice("wte.weight")[:100]       # reads only the first 100 rows
    """

    def __init__(self, filename, framework: str | None = None, device="cpu"):
        self._where = os.fspath(filename)
        self._device = _device(device)
        self._mm, self._closed = None, False
        with open(self._where, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            n = header_length(fh.read(8), size, self._where)
            raw = fh.read(n)
            if len(raw) != n:
                raise SafetensorsError("file is truncated inside the header", path=self._where)
            self._entries, self._meta = parse_header(raw, size - 8 - n, self._where)
            self._start = 8 + n
            if size > self._start:
                self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    # context manager / lifetime
    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release the memory map (tensors already returned are copies and stay valid)."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self._closed = True

    def __repr__(self) -> str:
        return f"safe_open({self._where!r}, {len(self._entries)} tensors)"

    # queries
    def keys(self) -> list[str]:
        """Tensor names, sorted (as ``safetensors.safe_open.keys``)."""
        return sorted(self._entries)

    def offset_keys(self) -> list[str]:
        """Tensor names in the order their data lies in the file."""
        return list(self._entries)

    def metadata(self) -> dict[str, str] | None:
        """The ``__metadata__`` strings, or None when the file has none."""
        return None if self._meta is None else dict(self._meta)

    def _entry(self, name: str) -> dict:
        if self._closed:
            raise SafetensorsError("the file was closed", path=self._where, key=name)
        e = self._entries.get(name)
        if e is None:
            raise KeyError(f"{self._where}: no tensor named {name!r} (the file has {len(self._entries)}: "
                           f"{', '.join(list(self._entries)[:8])}{'...' if len(self._entries) > 8 else ''})")
        return e

    def _view(self, name: str) -> np.ndarray:
        e = self._entry(name)
        if self._mm is None:  # only empty tensors in the file
            return np.zeros(tuple(e["shape"]), _np_dtype(e["dtype"]))
        return array_from(self._mm, self._start, e, self._where, name)

    def get_numpy(self, name: str) -> np.ndarray:
        """The tensor as a numpy array (a copy), for any dtype: float8 arrays are ml_dtypes types."""
        return to_host(self._view(name), self._entry(name)["dtype"], self._where, name)

    def get_tensor(self, name: str) -> Tensor:
        """The tensor ``name`` as an ember Tensor (its own memory) on this reader's device."""
        code = self._entry(name)["dtype"]
        _ember_dtype(code, self._where, name)  # refuse before copying anything
        return _tensor(self.get_numpy(name), code, self._device, self._where, name)

    def get_slice(self, name: str) -> TensorSlice:
        """A handle that reads part of a tensor: ``f.get_slice("w")[:, 2:4]``."""
        self._entry(name)
        return TensorSlice(self, name)


class TensorSlice:
    """Index with ints, slices (positive steps) and ``...`` to read only part of one tensor."""

    def __init__(self, reader: safe_open, name: str):
        self._reader, self._name = reader, name

    def get_shape(self) -> list[int]:
        return list(self._reader._entry(self._name)["shape"])

    def get_dtype(self) -> str:
        return self._reader._entry(self._name)["dtype"]

    def __getitem__(self, index) -> Tensor:
        r, name = self._reader, self._name
        code = self.get_dtype()
        _ember_dtype(code, r._where, name)
        view = r._view(name)
        part = view[_check_index(index, view.shape, r._where, name)]
        return _tensor(to_host(part, code, r._where, name), code, r._device, r._where, name)

    def __repr__(self) -> str:
        return f"TensorSlice({self._name!r}, shape={self.get_shape()}, dtype={self.get_dtype()})"


def _check_index(index, shape: tuple, where: str, name: str) -> tuple:
    """Basic indexing only, with PyTorch's rules (no negative steps) and errors naming the tensor."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError(f"{where}: tensor {name!r}: an index can only have a single ellipsis ('...')")
    n = sum(1 for i in items if i is not Ellipsis)
    if n > len(shape):
        raise IndexError(f"{where}: tensor {name!r}: too many indices for a tensor of dimension {len(shape)}")
    out, dim = [], 0
    for i in items:
        if i is Ellipsis:
            out.append(i)
            dim += len(shape) - n
            continue
        if isinstance(i, slice):
            for part in (i.start, i.stop, i.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    raise TypeError(f"{where}: tensor {name!r}: slice bounds must be integers, got {part!r}")
            if i.step is not None and i.step <= 0:
                raise ValueError(f"{where}: tensor {name!r}: slice step must be positive, got {i.step}")
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            size = shape[dim]
            if not -size <= i < size:
                raise IndexError(f"{where}: tensor {name!r}: index {i} is out of bounds for dimension {dim} "
                                 f"with size {size}")
        else:
            raise TypeError(f"{where}: tensor {name!r}: get_slice takes ints, slices and '...', got "
                            f"{type(i).__name__}")
        out.append(i)
        dim += 1
    return tuple(out)


def load_file(filename, device="cpu") -> dict[str, Tensor]:
    """Every tensor of a safetensors file, in file order: ``{name: Tensor}``."""
    with safe_open(filename, device=device) as f:
        return {k: f.get_tensor(k) for k in f.offset_keys()}


def load_bytes(data: bytes, device="cpu") -> dict[str, Tensor]:
    """The tensors of a safetensors file held in memory (``safetensors.torch.load``'s counterpart)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_bytes needs bytes, got {type(data).__name__}")
    where = "<bytes>"
    buf = memoryview(data).cast("B") if isinstance(data, memoryview) else data
    n = header_length(bytes(buf[:8]), len(buf), where)
    entries, _ = parse_header(bytes(buf[8:8 + n]), len(buf) - 8 - n, where)
    dev = _device(device)
    out = {}
    for name, e in entries.items():
        _ember_dtype(e["dtype"], where, name)
        host = to_host(array_from(buf, 8 + n, e, where, name), e["dtype"], where, name)
        out[name] = _tensor(host, e["dtype"], dev, where, name)
    return out


# ---- writing --------------------------------------------------------------------------------------
def tensor_bytes(t: Tensor) -> tuple[str, list[int], bytes]:
    """(code, shape, little-endian contiguous bytes) of a tensor (moved to the host if needed)."""
    a = np.ascontiguousarray(t.detach().numpy(force=True))
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return EMBER_CODES[t.dtype], list(t.shape), a.tobytes()


def encode(items: Iterable[tuple[str, str, list[int], bytes]], metadata: Mapping[str, str] | None) -> list[bytes]:
    """The parts of a file holding ``(name, code, shape, data)`` items in the given order."""
    header: dict = {}
    chunks, at = [], 0
    for name, code, shape, data in items:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [at, at + len(data)]}
        chunks.append(data)
        at += len(data)
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # 8-byte aligned data region, as other writers do
    return [struct.pack("<Q", len(raw)), raw, *chunks]


def _items(tensors: Mapping[str, Tensor], metadata) -> list[tuple[str, str, list[int], bytes]]:
    if not isinstance(tensors, Mapping):
        raise TypeError(f"save_file needs a dict of name -> Tensor, got {type(tensors).__name__}")
    if metadata is not None and (not isinstance(metadata, Mapping) or
                                 not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("save_file: metadata must be a dict of str -> str")
    items = []
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"save_file: tensor names must be str, got {type(name).__name__} ({name!r})")
        if name == "__metadata__":
            raise ValueError("save_file: '__metadata__' is reserved for the metadata and can't name a tensor")
        if not isinstance(t, Tensor):
            raise TypeError(f"save_file: {name!r} is a {type(t).__name__}, not an ember.Tensor")
        items.append((name, *tensor_bytes(t)))
    # widest elements first (stable), so every tensor starts at a multiple of its element size
    items.sort(key=lambda it: -CODES[it[1]])
    return items


def save_bytes(tensors: Mapping[str, Tensor], metadata: Mapping[str, str] | None = None) -> bytes:
    """A safetensors file as bytes (``safetensors.torch.save``'s counterpart)."""
    return b"".join(encode(_items(tensors, metadata), metadata))




def save_file(tensors: Mapping[str, Tensor], filename, metadata: Mapping[str, str] | None = None) -> None:
    """Write ``{name: Tensor}`` (e.g. ``model.state_dict()``) as a safetensors file, atomically.

    Tensors that share memory are written once each (no aliasing in the file); parameters are
    saved as plain tensors. ``safetensors.torch.load_file`` and ember read the result.
    """
    atomic_write(filename, encode(_items(tensors, metadata), metadata))
