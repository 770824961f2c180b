"""A restricted unpickler for PyTorch checkpoints: the allowlist, and safe stand-ins for torch's globals.

A pickle is a small program: ``GLOBAL os system`` followed by ``REDUCE`` runs ``os.system(...)``.
Python's unpickler runs whatever callables the file names. This one never imports anything a
file names: :meth:`RestrictedUnpickler.find_class` looks ``"module.name"`` up in an explicit
allowlist of the globals a state dict needs and returns ember's own stand-ins for them
(``torch._utils._rebuild_tensor_v2`` becomes a function that builds an ember Tensor,
``torch.FloatStorage`` a marker naming ember.float32, ``collections.OrderedDict`` itself); anything
else raises :class:`UnsafePickleError` naming the global before the pickle can call it.

The opcodes that call code or methods on objects are re-implemented too, so nothing reaches a
callable or method outside the allowlist by another route:

* REDUCE, NEWOBJ, NEWOBJ_EX, INST and OBJ call only allowlisted callables (checked by identity);
* BUILD sets attributes only on OrderedDicts (``state_dict()._metadata``), and never one that would
  shadow a dict method;
* APPEND(S), SETITEM(S) and ADDITEMS act only on real lists, dicts and sets (a tensor has ``add``
  and ``__setitem__`` methods a hostile pickle could otherwise reach);
* EXT1/2/4 (the copyreg extension registry) are refused.

The unpickler is a subclass of the pure-Python ``pickle._Unpickler`` (its dispatch table is what
makes the per-opcode overrides possible); checkpoint pickles hold only metadata, the tensor bytes
live outside them, so the pure-Python speed does not matter.
"""

from __future__ import annotations

import _compat_pickle
import math
import pickle
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as dt
from .._shape import Size
from .._tensor import Tensor
from .errors import StoreDtypeError, TorchFileError, UnsafePickleError

__all__ = ["RestrictedUnpickler", "StorageRef", "TorchDtype", "ALLOWED_GLOBALS"]


# ---- markers for torch objects that carry no behaviour -----------------------------------------------
class TorchDtype:
    """A torch dtype that ember has no counterpart for (float8, complex, uint16, quantized...)."""

    __slots__ = ("name", "itemsize")

    def __init__(self, name: str, itemsize: int):
        self.name, self.itemsize = name, itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _StorageType:
    """``torch.FloatStorage`` and friends: which dtype the storage's bytes hold."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype  # dtype: ember dtype, TorchDtype, or None for UntypedStorage

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _TypeMarker:
    """``torch.Tensor`` / ``torch.nn.parameter.Parameter`` as the ``new_type`` of ``_rebuild_from_type_v2``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


_TENSOR = _TypeMarker("torch.Tensor")
_PARAMETER = _TypeMarker("torch.nn.parameter.Parameter")

_EMBER_DTYPES = {"float64": dt.float64, "double": dt.float64, "float32": dt.float32, "float": dt.float32,
                 "float16": dt.float16, "half": dt.float16, "bfloat16": dt.bfloat16, "int64": dt.int64,
                 "long": dt.int64, "int32": dt.int32, "int": dt.int32, "int16": dt.int16, "short": dt.int16,
                 "int8": dt.int8, "uint8": dt.uint8, "bool": dt.bool}
_OTHER_DTYPES = {"complex32": 4, "chalf": 4, "complex64": 8, "cfloat": 8, "complex128": 16, "cdouble": 16,
                 "uint16": 2, "uint32": 4, "uint64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
                 "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1,
                 "quint2x4": 1, "bits8": 1, "bits16": 2}
_STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
             "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
             "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
             "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}


def _torch_dtype(name: str):
    if name in _EMBER_DTYPES:
        return _EMBER_DTYPES[name]
    return TorchDtype(name, _OTHER_DTYPES[name])


def _itemsize(d) -> int:
    return d.itemsize if d is not None else 1


class StorageRef:
    """A storage named by a persistent id: ``key`` in the file, its dtype and byte count, and (legacy
    format views) an element offset into the root storage."""

    __slots__ = ("key", "dtype", "nbytes", "location", "offset")

    def __init__(self, key: str, dtype, nbytes: int, location: str, offset: int = 0):
        self.key, self.dtype, self.nbytes, self.location, self.offset = key, dtype, nbytes, location, offset

    def __repr__(self) -> str:
        return f"StorageRef({self.key!r}, {self.dtype}, {self.nbytes} bytes)"


# ---- the unpickler ---------------------------------------------------------------------------------
_DISPATCH = dict(pickle._Unpickler.dispatch)  # noqa: SLF001 - see the module docstring


def _op(code: bytes):
    def register(fn):
        _DISPATCH[code[0]] = fn
        return fn
    return register


class RestrictedUnpickler(pickle._Unpickler):  # noqa: SLF001
    """Unpickles a checkpoint with stand-ins for torch's globals.

    ``storage(ref, dtype)`` is called with a :class:`StorageRef` and an ember dtype and returns a
    1-D ember tensor over the storage's elements (the formats supply it; it may cache). With
    ``storage=None`` (a dry run), tensors are left as None after validating their arguments.
    ``extra_globals`` maps further ``"module.name"`` strings to objects the caller trusts.
    """

    dispatch = _DISPATCH

    def __init__(self, file, where: str, *, storage: Callable[[StorageRef, dt.dtype], Tensor] | None,
                 persistent: Callable[[Any], StorageRef] | None = None,
                 extra_globals: dict[str, Any] | None = None):
        super().__init__(file, encoding="utf-8")
        self.where = where
        self._storage = storage
        self._persistent = persistent
        self._globals = self._allowlist()
        extra = check_extra_globals(extra_globals)
        self._globals.update(extra)
        self._callables = {id(v): v for v in self._globals.values() if callable(v)}
        # instances of classes the caller trusts may be BUILT as pickle normally does (Namespace...)
        self._trusted_types = {v for v in extra.values() if isinstance(v, type)}

    # -- globals
    def _allowlist(self) -> dict[str, Any]:
        g: dict[str, Any] = {
            "collections.OrderedDict": OrderedDict,
            "builtins.set": set,
            "builtins.frozenset": frozenset,
            "_codecs.encode": _codecs_encode,
            "torch.Size": _size,
            "torch.device": _device_str,
            "torch.Tensor": _TENSOR,
            "torch.nn.parameter.Parameter": _PARAMETER,
            "torch._utils._rebuild_tensor": self._rebuild_tensor,
            "torch._utils._rebuild_tensor_v2": self._rebuild_tensor_v2,
            "torch._utils._rebuild_tensor_v3": self._rebuild_tensor_v3,
            "torch._utils._rebuild_parameter": self._rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self._rebuild_parameter_with_state,
            "torch._tensor._rebuild_from_type": self._rebuild_from_type,
            "torch._tensor._rebuild_from_type_v2": self._rebuild_from_type_v2,
            "torch.storage.UntypedStorage": _StorageType("UntypedStorage", None),
            "torch.UntypedStorage": _StorageType("UntypedStorage", None),
        }
        for name in (*_EMBER_DTYPES, *_OTHER_DTYPES):
            g[f"torch.{name}"] = _torch_dtype(name)
        for name, dname in _STORAGES.items():
            g[f"torch.{name}"] = _StorageType(name, _torch_dtype(dname))
        return g

    def find_class(self, module: str, name: str):
        if self.proto < 3:  # Python 2 names, mapped as pickle itself maps them (__builtin__ -> builtins)
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        obj = self._globals.get(full)
        if obj is None:
            hint = ""
            if module.startswith("torch.nn.modules") or module.startswith("__main__"):
                hint = ("The file holds a pickled model object rather than a state dict; re-save it with "
                        "torch.save(model.state_dict(), path). ")
            raise UnsafePickleError(
                f"refusing to unpickle the global '{full}': ember.store only allows the tensors, containers and "
                f"plain values a checkpoint needs, so nothing in this file was run. {hint}If you trust the file, "
                f"pass extra_globals={{'{full}': <a safe stand-in>}} or convert it with torch.load(path, "
                "weights_only=False) and ember.store.save_file.", global_name=full, path=self.where)
        return obj

    def persistent_load(self, pid):
        if self._persistent is None:
            raise TorchFileError("unexpected persistent id in this pickle", path=self.where)
        return self._persistent(pid)

    # -- opcodes that call things
    def _call(self, func, args):
        if not isinstance(args, tuple):
            raise TorchFileError(f"REDUCE arguments must be a tuple, got {type(args).__name__}", path=self.where)
        if self._callables.get(id(func)) is not func:
            name = getattr(func, "__qualname__", type(func).__qualname__)
            raise UnsafePickleError(f"refusing to call {name!r} (a {type(func).__name__}): only allowlisted "
                                    "globals may be called, so nothing in this file was run.",
                                    global_name=str(name), path=self.where)
        return func(*args)

    @_op(pickle.REDUCE)
    def _load_reduce(self):
        args = self.stack.pop()
        self.stack[-1] = self._call(self.stack[-1], args)

    def _instantiate(self, klass, args):
        self.append(self._call(klass, tuple(args)))

    @_op(pickle.NEWOBJ)
    def _load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._call(cls, args))

    @_op(pickle.NEWOBJ_EX)
    def _load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if kwargs:
            raise TorchFileError("NEWOBJ_EX with keyword arguments is not used by checkpoints", path=self.where)
        self.append(self._call(cls, args))

    @_op(pickle.BUILD)
    def _load_build(self):
        if type(self.stack[-2]) in self._trusted_types:
            return pickle._Unpickler.load_build(self)  # noqa: SLF001 - the caller vouched for this class
        state = self.stack.pop()
        inst = self.stack[-1]
        if state is None:
            return
        if type(inst) is OrderedDict and isinstance(state, dict):
            for k, v in state.items():  # torch stores state_dict()._metadata this way
                if not isinstance(k, str) or hasattr(OrderedDict, k):
                    raise TorchFileError(f"refusing to set attribute {k!r} on an OrderedDict", path=self.where)
                setattr(inst, k, v)
            return
        raise TorchFileError(f"BUILD on a {type(inst).__name__} is not part of a checkpoint", path=self.where)

    @_op(pickle.APPEND)
    def _load_append(self):
        value = self.stack.pop()
        _want(self.stack[-1], list, "APPEND", self.where).append(value)

    @_op(pickle.APPENDS)
    def _load_appends(self):
        items = self.pop_mark()
        _want(self.stack[-1], list, "APPENDS", self.where).extend(items)

    @_op(pickle.SETITEM)
    def _load_setitem(self):
        value = self.stack.pop()
        key = self.stack.pop()
        _want(self.stack[-1], dict, "SETITEM", self.where)[key] = value

    @_op(pickle.SETITEMS)
    def _load_setitems(self):
        items = self.pop_mark()
        d = _want(self.stack[-1], dict, "SETITEMS", self.where)
        for i in range(0, len(items) - 1, 2):
            d[items[i]] = items[i + 1]

    @_op(pickle.ADDITEMS)
    def _load_additems(self):
        items = self.pop_mark()
        _want(self.stack[-1], set, "ADDITEMS", self.where).update(items)

    @_op(pickle.EXT1)
    @_op(pickle.EXT2)
    @_op(pickle.EXT4)
    def _refuse_ext(self):
        raise TorchFileError("pickle extension codes (EXT1/2/4) are not used by checkpoints", path=self.where)

    # -- torch stand-ins
    def _tensor(self, storage, storage_offset, size, stride, dtype=None):
        if not isinstance(storage, StorageRef):
            raise TorchFileError(f"a tensor's storage must come from a persistent id, got {type(storage).__name__}",
                                 path=self.where)
        size, stride = _ints(size, "size", self.where), _ints(stride, "stride", self.where)
        offset = _ints((storage_offset,), "storage_offset", self.where)[0]
        if len(size) != len(stride):
            raise TorchFileError(f"tensor size {size} and stride {stride} differ in length", path=self.where)
        d = storage.dtype if dtype is None else dtype
        if isinstance(d, TorchDtype):
            raise StoreDtypeError(f"a tensor of dtype {d} (storage {storage.key!r}): ember has no such dtype "
                                  f"(it has {', '.join(x.name for x in dt.ALL)})", path=self.where)
        if not isinstance(d, dt.dtype):
            raise TorchFileError(f"storage {storage.key!r} has no dtype", path=self.where)
        if storage.dtype is not None and d is not storage.dtype:
            raise TorchFileError(f"storage {storage.key!r} holds {storage.dtype.name} but the tensor says {d.name}",
                                 path=self.where)
        n_elems = storage.nbytes // d.itemsize
        if math.prod(size) and offset + sum((s - 1) * st for s, st in zip(size, stride)) >= n_elems:
            raise TorchFileError(f"tensor of size {list(size)}, stride {list(stride)} and offset {offset} reaches "
                                 f"past the end of storage {storage.key!r} ({n_elems} elements)", path=self.where)
        if self._storage is None:
            return None  # dry run: arguments checked, no data yet
        base = self._storage(storage, d)
        if math.prod(size) == 0:
            from .._creation import empty
            return empty(size, dtype=d, device=base.device)
        start = storage.offset + offset
        if start == 0 and math.prod(size) == base.numel() and stride == _contiguous(size):
            return base.view(size)
        return base.as_strided(size, stride, start)

    def _finish(self, t, requires_grad):
        if t is not None and requires_grad and t.dtype.is_floating_point:
            t = t.detach().requires_grad_(True)
        return t

    def _rebuild_tensor(self, storage, storage_offset, size, stride):
        return self._tensor(storage, storage_offset, size, stride)

    def _rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                           metadata=None):
        return self._finish(self._tensor(storage, storage_offset, size, stride), requires_grad is True)

    def _rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                           metadata=None):
        if not isinstance(dtype, (dt.dtype, TorchDtype)):
            raise TorchFileError(f"_rebuild_tensor_v3 needs a dtype, got {type(dtype).__name__}", path=self.where)
        return self._finish(self._tensor(storage, storage_offset, size, stride, dtype), requires_grad is True)

    def _rebuild_parameter(self, data, requires_grad, backward_hooks):
        if data is None:  # dry run
            return None
        if not isinstance(data, Tensor):
            raise TorchFileError(f"_rebuild_parameter needs a tensor, got {type(data).__name__}", path=self.where)
        from ..nn.parameter import Parameter
        return Parameter(data, bool(requires_grad) and data.dtype.is_floating_point)

    def _rebuild_parameter_with_state(self, data, requires_grad, backward_hooks, state):
        return self._rebuild_parameter(data, requires_grad, backward_hooks)  # Python attributes are dropped

    def _rebuild_from_type_v2(self, func, new_type, args, state):
        if new_type is not _TENSOR and new_type is not _PARAMETER:
            raise TorchFileError(f"tensor subclass {new_type!r} is not supported", path=self.where)
        out = self._call(func, args)
        if new_type is _PARAMETER and out is not None and not isinstance(out, Tensor):
            raise TorchFileError("_rebuild_from_type_v2 did not produce a tensor", path=self.where)
        return out  # ``state`` (Python attributes set on the tensor) carries no weights and is dropped

    def _rebuild_from_type(self, func, new_type, args, state):
        return self._rebuild_from_type_v2(func, new_type, args, state)


def check_extra_globals(extra) -> dict[str, Any]:
    """Validate ``extra_globals``: a dict of ``"module.name"`` -> object."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise TypeError(f"extra_globals must be a dict of 'module.name' -> object, got {type(extra).__name__}")
    for name in extra:
        if not isinstance(name, str) or "." not in name:
            raise TypeError(f"extra_globals keys must be 'module.name' strings, got {name!r}")
    return dict(extra)


def _want(obj, kind: type, opcode: str, where: str):
    if type(obj) is not kind and not (kind is dict and type(obj) is OrderedDict):
        raise TorchFileError(f"{opcode} on a {type(obj).__name__} is not part of a checkpoint", path=where)
    return obj


def _ints(xs, what: str, where: str) -> tuple[int, ...]:
    if not isinstance(xs, (tuple, list)) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2 ** 62
                                                     for x in xs):
        raise TorchFileError(f"tensor {what} must be non-negative integers, got {xs!r}", path=where)
    return tuple(int(x) for x in xs)


def _contiguous(size: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(size):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def _size(dims=()) -> Size:
    if not isinstance(dims, (tuple, list)) or not all(isinstance(x, int) for x in dims):
        raise TypeError(f"torch.Size needs a tuple of ints, got {dims!r}")
    return Size(dims)


def _device_str(kind, index=None) -> str:
    if not isinstance(kind, str) or (index is not None and not isinstance(index, int)):
        raise TypeError(f"torch.device({kind!r}, {index!r})")
    return kind if index is None else f"{kind}:{index}"


def _codecs_encode(text, encoding="utf-8") -> bytes:
    """Protocol-2 pickles store bytes as ``_codecs.encode(str, "latin1")``; only that is allowed."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise TypeError(f"_codecs.encode is allowed only for str with a text encoding, got {encoding!r}")
    return text.encode(encoding)


def storage_array(raw, d: dt.dtype, little_endian: bool) -> np.ndarray:
    """A native-order numpy array of dtype ``d`` that owns its memory, from a storage's raw bytes: a
    fresh array of that dtype is used in place, anything else (bytes) is copied. (Owning matters:
    tensors are ``as_strided`` views of it, computed against the root buffer's dtype.)"""
    npd = np.dtype(d.np)
    if isinstance(raw, np.ndarray) and raw.dtype == npd and raw.base is None and raw.flags.writeable:
        a = raw
    else:
        a = np.frombuffer(raw, dtype=npd).copy()
    if npd.itemsize > 1 and little_endian != (sys.byteorder == "little"):
        a.byteswap(inplace=True)
    if d is dt.bool and a.size and a.view(np.uint8).max() > 1:
        a = a.view(np.uint8) != 0  # torch reads any non-zero byte as True
    return a


ALLOWED_GLOBALS = tuple(sorted(RestrictedUnpickler(__import__("io").BytesIO(), "", storage=None)._globals))
