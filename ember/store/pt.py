"""PyTorch ``.pt`` / ``.pth`` / ``.bin`` files without torch: the zip format and the legacy format.

Zip format (``torch.save`` since 1.6)::

    <archive>/data.pkl       the pickled object; each storage is a persistent id
                             ("storage", torch.FloatStorage, "<key>", "<location>", <numel>)
    <archive>/data/<key>     that storage's raw bytes, uncompressed
    <archive>/byteorder      "little" or "big" (absent in old files: little)

Legacy format (``_use_new_zipfile_serialization=False``, and every file before 1.6), one stream::

    pickle(magic number 0x1950a86a20f9469cfc6c), pickle(protocol version 1001),
    pickle(sys_info: {"little_endian": ..., ...}), pickle(the object; persistent ids
    ("storage", type, "<key>", "<location>", <numel>, view_metadata or None)),
    pickle(sorted list of storage keys), then per key: int64 numel + numel elements

Both pickles go through :class:`~ember.store.torch_pickle.RestrictedUnpickler`. Storages become
ember tensors once each, and every tensor is a view of its storage (``as_strided`` with the saved
size, stride and offset), so tensors that shared a storage in PyTorch share memory in ember too.

>>> obj = load_torch("resnet18.pth")          # doctest: +SKIP
>>> obj["fc.weight"].shape                    # doctest: +SKIP
ember.Size([1000, 512])
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zipfile
from typing import Any

import numpy as np

from .. import _dtype as dt
from .._device import Device
from .._device import device as _device
from .._tensor import Tensor
from .errors import StoreError, TorchFileError
from .torch_pickle import RestrictedUnpickler, StorageRef, _itemsize, check_extra_globals, storage_array

__all__ = ["load_torch", "MAGIC_NUMBER", "PROTOCOL_VERSION"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


def _resolver(map_location):
    """location tag in the file ("cpu", "cuda:0") -> ember Device."""
    if map_location is None or isinstance(map_location, (str, Device)):
        dev = _device("cpu" if map_location is None else map_location)
        return lambda loc: dev
    if isinstance(map_location, dict):
        table = {k: _device(v) for k, v in map_location.items()}
        return lambda loc: table.get(loc, _device("cpu"))
    raise TypeError(f"map_location must be a device, a device string or a dict of location -> device, got "
                    f"{type(map_location).__name__}")


class _Storages:
    """Persistent ids -> StorageRefs, and StorageRefs -> ember tensors (each storage read once)."""

    def __init__(self, where: str, read, little_endian: bool, locate, legacy: bool):
        self.where, self.read, self.little, self.locate, self.legacy = where, read, little_endian, locate, legacy
        self.refs: dict[str, StorageRef] = {}
        self.tensors: dict[tuple[str, str], Tensor] = {}

    def persistent_id(self, pid) -> StorageRef:
        if not isinstance(pid, tuple) or not pid:
            raise TorchFileError(f"persistent id must be a tuple, got {type(pid).__name__}", path=self.where)
        kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if kind != "storage":
            raise TorchFileError(f"unsupported persistent id kind {kind!r} (a pickled module or a storage type "
                                 "ember does not know)", path=self.where)
        if len(pid) != (6 if self.legacy else 5):
            raise TorchFileError(f"malformed storage id {pid!r}", path=self.where)
        stype, key, location, numel = pid[1:5]
        d = getattr(stype, "dtype", False) if type(stype).__name__ == "_StorageType" else False
        if d is False:
            raise TorchFileError(f"storage type must be a torch storage class, got {stype!r}", path=self.where)
        location = location.decode("ascii") if isinstance(location, bytes) else location
        if not isinstance(key, str) or not isinstance(location, str) or not isinstance(numel, int) or numel < 0:
            raise TorchFileError(f"malformed storage id {pid!r}", path=self.where)
        nbytes = numel * _itemsize(d)
        known = self.refs.get(key)
        if known is None:
            known = self.refs[key] = StorageRef(key, d, nbytes, location)
        elif known.dtype is not d or known.nbytes != nbytes:
            raise TorchFileError(f"storage {key!r} is described twice, differently ({known.dtype}, {known.nbytes} "
                                 f"bytes vs {d}, {nbytes} bytes)", path=self.where)
        view = pid[5] if self.legacy else None
        if view is None:
            return known
        if (not isinstance(view, tuple) or len(view) != 3 or not isinstance(view[1], int)
                or not isinstance(view[2], int) or view[1] < 0 or view[2] < 0
                or (view[1] + view[2]) * _itemsize(d) > nbytes):
            raise TorchFileError(f"malformed storage view {view!r} of storage {key!r}", path=self.where)
        return StorageRef(key, d, view[2] * _itemsize(d), location, view[1])

    def tensor(self, ref: StorageRef, d: dt.dtype) -> Tensor:
        """The whole root storage ``ref.key`` as a 1-D ember tensor of dtype ``d``."""
        from .._creation import _from_host
        cached = self.tensors.get((ref.key, d.name))
        if cached is not None:
            return cached
        root = self.refs[ref.key]
        if root.nbytes % d.itemsize:
            raise TorchFileError(f"storage {ref.key!r} has {root.nbytes} bytes, not a whole number of {d.name} "
                                 "elements", path=self.where)
        raw = self.read(root.key, root.nbytes, np.dtype(d.np))
        t = _from_host(storage_array(raw, d, self.little), d, self.locate(root.location))
        self.tensors[(ref.key, d.name)] = t
        return t


def _unpickle(file, where: str, storages: _Storages | None, extra_globals, dry: bool = False):
    up = RestrictedUnpickler(file, where, storage=None if dry or storages is None else storages.tensor,
                             persistent=None if storages is None else storages.persistent_id,
                             extra_globals=extra_globals)
    return up.load()


# ---- zip ------------------------------------------------------------------------------------------
def _load_zip(source, where: str, locate, extra_globals) -> Any:
    with zipfile.ZipFile(source) as zf:
        names = zf.namelist()
        pkls = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1 and n.split("/")[1] == "data.pkl"]
        if len(pkls) != 1:
            if any(n.endswith("/constants.pkl") or "/code/" in n for n in names):
                raise TorchFileError("this is a TorchScript archive (torch.jit.save), which holds code; ember.store "
                                     "reads torch.save checkpoints. Save the model's state_dict() instead.", path=where)
            raise TorchFileError("a zip file without exactly one '<archive>/data.pkl': not a torch.save checkpoint "
                                 f"(entries: {', '.join(names[:6])}{'...' if len(names) > 6 else ''})", path=where)
        prefix = pkls[0][: -len("data.pkl")]
        if prefix + "constants.pkl" in names or any(n.startswith(prefix + "code/") for n in names):
            raise TorchFileError("this is a TorchScript archive (torch.jit.save), which holds code; ember.store reads "
                                 "torch.save checkpoints. Save the model's state_dict() instead.", path=where)
        order = b"little"
        if prefix + "byteorder" in names:
            order = zf.read(prefix + "byteorder").strip()
            if order not in (b"little", b"big"):
                raise TorchFileError(f"unknown byteorder {order!r}", path=where)

        def read(key: str, nbytes: int, npd) -> bytes:
            name = prefix + "data/" + key
            try:
                info = zf.getinfo(name)
            except KeyError:
                raise TorchFileError(f"storage {key!r} is missing from the archive ({name})", path=where) from None
            if info.file_size != nbytes:
                raise TorchFileError(f"storage {key!r} holds {info.file_size} bytes but the pickle says {nbytes}",
                                     path=where)
            return _member(zf, info, where)  # bytes; storage_array copies them into an array of the right dtype

        storages = _Storages(where, read, order == b"little", locate, legacy=False)
        return _unpickle(io.BytesIO(_member(zf, zf.getinfo(pkls[0]), where)), where, storages, extra_globals)


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    # torch stores members uncompressed; a member that inflates enormously is a zip bomb, not a checkpoint
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > 1024 * max(info.compress_size, 1):
        raise TorchFileError(f"{info.filename} is compressed more than 1024:1 (a zip bomb?)", path=where)
    return zf.read(info)


# ---- legacy ---------------------------------------------------------------------------------------
def _load_legacy(stream, size: int, read_at, where: str, locate, extra_globals) -> Any:
    """``stream``: read/readline/tell/seek over the file (reads past the end come back short);
    ``read_at(offset, n, npd)``: n bytes of the file as a fresh numpy array of dtype ``npd``."""
    def plain():
        return _unpickle(stream, where, None, None)

    if plain() != MAGIC_NUMBER:
        raise TorchFileError("wrong magic number: not a PyTorch file in the legacy format", path=where)
    version = plain()
    if version != PROTOCOL_VERSION:
        raise TorchFileError(f"unsupported legacy protocol version {version!r} (expected {PROTOCOL_VERSION})",
                             path=where)
    info = plain()
    little = info.get("little_endian", True) if isinstance(info, dict) else None
    if not isinstance(little, bool):
        raise TorchFileError("malformed sys_info record", path=where)
    start = stream.tell()
    # Pass 1: the storages come after the object's pickle, so unpickle once to learn their types
    # (refusing unsafe globals before reading any tensor data), then locate every storage's bytes.
    offsets: dict[str, tuple[int, int]] = {}

    def read(key: str, nbytes: int, npd):
        at, n = offsets[key]
        if n != nbytes:
            raise TorchFileError(f"storage {key!r} holds {n} bytes but the pickle says {nbytes}", path=where)
        return read_at(at, n, npd)

    storages = _Storages(where, read, little, locate, legacy=True)
    _unpickle(stream, where, storages, extra_globals, dry=True)
    keys = plain()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise TorchFileError("malformed storage key list", path=where)
    at = stream.tell()
    for key in keys:
        ref = storages.refs.get(key)
        if ref is None:
            raise TorchFileError(f"storage {key!r} is listed but no tensor uses it", path=where)
        if at + 8 > size:
            raise TorchFileError(f"file is truncated before storage {key!r}", path=where)
        (numel,) = struct.unpack("<q" if little else ">q", read_at(at, 8, np.dtype(np.uint8)).tobytes())
        n = numel * _itemsize(ref.dtype)
        if numel < 0 or at + 8 + n > size:
            raise TorchFileError(f"file is truncated inside storage {key!r} ({numel} elements, {size - at - 8} "
                                 "bytes left)", path=where)
        offsets[key] = (at + 8, n)
        at += 8 + n
    missing = [k for k in storages.refs if k not in offsets]
    if missing:
        raise TorchFileError(f"storages {missing[:4]} are used but not stored", path=where)
    stream.seek(start)
    return _unpickle(stream, where, storages, extra_globals)  # pass 2, with the data


# ---- entry point ----------------------------------------------------------------------------------
def _wrap_errors(fn, where: str):
    try:
        return fn()
    except StoreError:
        raise
    except Exception as e:  # noqa: BLE001 - zipfile/pickle raise a dozen types on damaged input; one is ours
        raise TorchFileError(f"the file is damaged or not a PyTorch checkpoint ({type(e).__name__}: {e})",
                             path=where) from e


def load_torch(f, *, map_location="cpu", extra_globals: dict[str, Any] | None = None) -> Any:
    """Read a file written by ``torch.save`` (zip or legacy format) without torch.

    Returns the saved structure (dicts, OrderedDicts, lists, tuples, plain values, ember Tensors
    and ``nn.Parameter``\\ s) with tensors on ``map_location`` (a device, a device string or a dict
    mapping the file's location tags to devices). Unknown globals raise
    :class:`~ember.store.UnsafePickleError` and nothing from the file runs; damaged files raise
    :class:`~ember.store.TorchFileError`; dtypes ember lacks raise :class:`~ember.store.StoreDtypeError`.

    ``f`` is a path or a binary file object (read fully). ``extra_globals`` maps further
    ``"module.name"`` strings to objects you trust; the pickle may then call them with arguments
    from the file, and set attributes on instances of the classes among them, as pickle does
    (``{"argparse.Namespace": argparse.Namespace}`` for old training scripts' arguments). Pass only
    plain-data classes you know, never a general function such as ``builtins.getattr``.

    >>> sd = load_torch("model.pt")    # doctest: +SKIP
    """
    locate = _resolver(map_location)
    extra_globals = check_extra_globals(extra_globals)
    if hasattr(f, "read"):
        data, where = f.read(), "<file object>"
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("load_torch needs a binary file")
        if data[:2] == b"PK":
            return _wrap_errors(lambda: _load_zip(io.BytesIO(data), where, locate, extra_globals), where)

        def read_at(at: int, n: int, npd) -> np.ndarray:
            return np.frombuffer(data, npd, n // npd.itemsize, at).copy()

        return _wrap_errors(lambda: _load_legacy(io.BytesIO(data), len(data), read_at, where, locate,
                                                 extra_globals), where)
    where = os.fspath(f)
    with open(where, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise TorchFileError("the file is empty", path=where)
        if fh.read(2) == b"PK":
            return _wrap_errors(lambda: _load_zip(fh, where, locate, extra_globals), where)

        def read_at(at: int, n: int, npd) -> np.ndarray:
            out = np.empty(n // npd.itemsize, npd)  # the tensor's own memory, filled straight from the file
            fh.seek(at)
            if fh.readinto(out.view(np.uint8)) != n:
                raise TorchFileError(f"file is truncated at byte {at}", path=where)
            return out

        # the pickles are read through a memory map, whose reads past the end come back short
        # (a buffered file would allocate whatever length a damaged pickle asks for)
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _wrap_errors(lambda: _load_legacy(mm, size, read_at, where, locate, extra_globals), where)
