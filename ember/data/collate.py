"""Turning a list of examples into a batch: ``default_collate`` and ``default_convert`` (PyTorch's rules).

``default_collate`` stacks tensors and numpy arrays along a new first dim, turns numbers into a
tensor (floats as float64, ints as int64, bools as bool, like PyTorch), keeps strings as a list
and recurses into dicts, namedtuples, tuples and lists (a tuple becomes a list, as in PyTorch).

>>> b = default_collate([(ember.zeros(2), 1), (ember.ones(2), 0)])
>>> b[0].shape, b[1]
(ember.Size([2, 2]), tensor([1, 0]))
>>> default_collate([{"x": 1.5, "name": "a"}, {"x": 2.0, "name": "b"}])
{'x': tensor([1.5000, 2.0000], dtype=ember.float64), 'name': ['a', 'b']}
"""

from __future__ import annotations

import collections.abc as abc
import copy
import numbers
from typing import Any

import numpy as np

from .. import _dtype as dt
from .._creation import as_tensor, from_numpy, tensor
from .._movement import stack
from .._tensor import Tensor

__all__ = ["default_collate", "default_convert", "Wire", "to_wire", "from_wire"]

_REFUSED = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


class Wire:
    """A tensor in transit between processes: a numpy array plus the ember dtype and device it had.

    DataLoader workers send batches as Wires (pickled numpy, no ember objects); the main process
    turns them back into tensors with :func:`from_wire`.
    """

    __slots__ = ("array", "dtype", "device")

    def __init__(self, array: np.ndarray, dtype: str, device: str = "cpu"):
        self.array, self.dtype, self.device = array, dtype, device

    def __reduce__(self):
        return (Wire, (self.array, self.dtype, self.device))

    def tensor(self) -> Tensor:
        d = dt.as_dtype(self.dtype)
        a = self.array
        t = from_numpy(a) if dt.from_numpy_dtype(a.dtype) is d else tensor(a, dtype=d)
        return t if self.device == "cpu" else t.to(self.device)


def _where(path: str) -> str:
    return f" at {path}" if path else ""


def _numpy_dtype_ok(a: np.ndarray) -> bool:
    return a.dtype.kind not in "SaUO"


class _Maker:
    """How leaves become batches: ember tensors in the main process, Wires inside a worker."""

    def __init__(self, wire: bool):
        self.wire = wire

    def from_array(self, a: np.ndarray, d: dt.dtype, device: str = "cpu"):
        if self.wire:
            return Wire(a, d.name, device)
        t = from_numpy(a) if dt.from_numpy_dtype(a.dtype) is d else tensor(a, dtype=d)
        return t if device == "cpu" else t.to(device)


def _check_shapes(shapes: list, path: str, kind: str) -> None:
    first = shapes[0]
    for i, s in enumerate(shapes):
        if s != first:
            raise RuntimeError(f"default_collate: can't stack {kind}s of different shapes{_where(path)}: element 0 "
                               f"of the batch has shape {list(first)} but element {i} has shape {list(s)}")


def _promote(dtypes: list) -> dt.dtype:
    out = dtypes[0]
    for d in dtypes[1:]:
        if d is not out:
            out = dt.promote_types(out, d)
    return out


def _stack_tensors(batch: list, path: str, mk: _Maker):
    for i, b in enumerate(batch):
        if not isinstance(b, Tensor):
            raise TypeError(f"default_collate: element {i} of the batch is a {type(b).__name__} but element 0 "
                            f"is a Tensor{_where(path)}")
    _check_shapes([b.shape for b in batch], path, "tensor")
    if not mk.wire:
        return stack(batch, 0)
    d = _promote([b.dtype for b in batch])
    dev = str(batch[0].device)
    arrays = [b.numpy(force=True) for b in batch]
    return mk.from_array(np.stack([a if a.dtype == d.np else a.astype(d.np) for a in arrays]), d, dev)


def _stack_arrays(batch: list, path: str, mk: _Maker):
    for i, b in enumerate(batch):
        if not isinstance(b, np.ndarray):
            raise TypeError(f"default_collate: element {i} of the batch is a {type(b).__name__} but element 0 "
                            f"is a numpy array{_where(path)}")
    dtypes = {b.dtype for b in batch}
    for i, b in enumerate(batch):
        if not _numpy_dtype_ok(b):
            raise TypeError(_REFUSED.format(b.dtype) + f" (element {i}{_where(path)})")
        if len(dtypes) == 1:
            break
    if len({b.shape for b in batch}) > 1:
        _check_shapes([b.shape for b in batch], path, "array")
    if len(dtypes) == 1:
        return mk.from_array(np.stack(batch), dt.from_numpy_dtype(batch[0].dtype))
    # PyTorch's promotion, not numpy's, when the arrays' dtypes differ (int64 with float32 is float32)
    d = _promote([dt.from_numpy_dtype(b.dtype) for b in batch])
    return mk.from_array(np.stack([b if b.dtype == d.np else b.astype(d.np) for b in batch]), d)


_PLAIN = {int: (np.int64, dt.int64), float: (np.float64, dt.float64), bool: (np.bool_, dt.bool)}


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, (Tensor, np.ndarray))


def _numbers(batch: list, path: str, mk: _Maker):
    kinds = {type(b) for b in batch}
    if len(kinds) == 1 and (plain := _PLAIN.get(kinds.pop())) is not None:  # the common case, without a scan
        try:
            return mk.from_array(np.array(batch, dtype=plain[0]), plain[1])
        except OverflowError:
            pass  # ints beyond int64: the general path below reports it
    for i, b in enumerate(batch):
        if not _is_number(b):
            raise TypeError(f"default_collate: element {i} of the batch is a {type(b).__name__} but element 0 "
                            f"is a number{_where(path)}")
        if isinstance(b, np.generic) and not _numpy_dtype_ok(np.asarray(b)):
            raise TypeError(_REFUSED.format(np.asarray(b).dtype))
    first = batch[0]
    if isinstance(first, np.generic):  # numpy scalars keep their dtype (promoted across the batch)
        d = _promote([dt.from_numpy_dtype(np.asarray(b).dtype) if isinstance(b, np.generic)
                      else dt.float64 if isinstance(b, float) else dt.int64 for b in batch])
    elif isinstance(first, bool) or isinstance(first, int):
        d = None  # PyTorch builds tensor(batch): bool, int64 or the default float dtype, inferred from the values
    elif isinstance(first, float):
        d = dt.float64
    elif isinstance(first, complex):
        d = dt.complex128
    else:
        raise TypeError(_REFUSED.format(type(first)) + _where(path))
    values = [b.item() if isinstance(b, np.generic) else b for b in batch]
    if not mk.wire:
        return tensor(values, dtype=d)
    t = tensor(values, dtype=d)  # the same inference and overflow checks as the main process
    return mk.from_array(t.numpy(), t.dtype)


def _collate(batch: list, path: str, mk: _Maker):
    if not batch:
        raise IndexError(f"default_collate: the batch is empty{_where(path)}")
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack_tensors(batch, path, mk)
    if isinstance(elem, np.ndarray):
        if not _numpy_dtype_ok(elem):
            raise TypeError(_REFUSED.format(elem.dtype) + _where(path))
        return _stack_arrays(batch, path, mk)
    if isinstance(elem, (str, bytes)):
        return batch  # as PyTorch: the list (or, inside a tuple field, the tuple) of strings itself
    if _is_number(elem):
        return _numbers(batch, path, mk)
    if isinstance(elem, abc.Mapping):
        for i, b in enumerate(batch):
            if not isinstance(b, abc.Mapping):
                raise TypeError(f"default_collate: element {i} of the batch is a {type(b).__name__} but element 0 "
                                f"is a {type(elem).__name__}{_where(path)}")
            missing = [k for k in elem if k not in b]
            if missing:
                raise KeyError(f"default_collate: element {i} of the batch lacks the key(s) {missing} that "
                               f"element 0 has{_where(path)}")
        values = {k: _collate([b[k] for b in batch], f"{path}[{k!r}]", mk) for k in elem}
        return _rebuild_mapping(elem, values)
    if isinstance(elem, abc.Sequence):
        n = len(elem)
        for i, b in enumerate(batch):
            if not isinstance(b, abc.Sequence) or isinstance(b, (str, bytes)):
                raise TypeError(f"default_collate: element {i} of the batch is a {type(b).__name__} but element 0 "
                                f"is a {type(elem).__name__}{_where(path)}")
            if len(b) != n:
                raise RuntimeError(f"default_collate: each element in list of batch should be of equal size, but "
                                   f"element 0 has {n} items and element {i} has {len(b)}{_where(path)}")
        cols = [_collate(col, f"{path}[{j}]", mk) for j, col in enumerate(zip(*batch))]
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
            return type(elem)(*cols)
        if isinstance(elem, tuple):
            return cols  # a tuple of fields becomes a list of batched fields, as in PyTorch
        return _rebuild_sequence(elem, cols)
    raise TypeError(_REFUSED.format(type(elem)) + _where(path))


def _rebuild_mapping(like: abc.Mapping, values: dict):
    if type(like) is dict:
        return values
    if isinstance(like, abc.MutableMapping):
        clone = copy.copy(like)  # keeps OrderedDict, defaultdict and other dict subclasses
        clone.update(values)
        return clone
    try:
        return type(like)(values)
    except TypeError:  # the mapping type can't be built from a dict
        return values


def _rebuild_sequence(like: abc.Sequence, values: list):
    if type(like) is list:
        return values
    if isinstance(like, abc.MutableSequence):
        clone = copy.copy(like)
        for i, v in enumerate(values):
            clone[i] = v
        return clone
    try:
        return type(like)(values)
    except TypeError:
        return values


def default_collate(batch: list) -> Any:
    """Combine a list of examples into a batch (PyTorch's ``default_collate`` rules, see the module doc).

    Errors name the element of the batch and the shapes or types that don't match.

    >>> default_collate([ember.tensor([1, 2]), ember.tensor([3, 4])])
    tensor([[1, 2],
            [3, 4]])
    """
    return _collate(batch if isinstance(batch, (list, tuple)) else list(batch), "", _MAIN)


def collate_to_wire(batch: list) -> Any:
    """``default_collate`` as a worker runs it: numpy stacking, tensors left as :class:`Wire` objects."""
    return _collate(batch if isinstance(batch, (list, tuple)) else list(batch), "", _WIRE)


_MAIN, _WIRE = _Maker(False), _Maker(True)


def default_convert(data: Any) -> Any:
    """Turn numpy arrays and numpy scalars (recursively inside dicts, tuples and lists) into tensors;
    everything else is left as it is. The DataLoader's collate_fn when ``batch_size=None``.

    >>> default_convert({"x": np.array([1.0, 2.0]), "n": 3})
    {'x': tensor([1., 2.], dtype=ember.float64), 'n': 3}
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return as_tensor(data) if _numpy_dtype_ok(data) else data
    if isinstance(data, np.generic):
        return as_tensor(data) if _numpy_dtype_ok(np.asarray(data)) else data
    if isinstance(data, abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return [default_convert(v) for v in data]  # PyTorch turns tuples into lists here too
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(v) for v in data])
    return data


# ---- batches across a process boundary -------------------------------------------------------------
def to_wire(obj: Any) -> Any:
    """Replace every ember tensor inside dicts, lists and tuples by a :class:`Wire` (for pickling)."""
    if isinstance(obj, Tensor):
        return Wire(obj.numpy(force=True), obj.dtype.name, str(obj.device))
    if isinstance(obj, (str, bytes, np.ndarray, Wire)) or obj is None or _is_number(obj):
        return obj
    if isinstance(obj, dict):
        return _rebuild_mapping(obj, {k: to_wire(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_wire(v) for v in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_wire(v) for v in obj)
    return obj


def from_wire(obj: Any) -> Any:
    """The inverse of :func:`to_wire`: every :class:`Wire` becomes an ember tensor again."""
    if isinstance(obj, Wire):
        return obj.tensor()
    if isinstance(obj, (str, bytes, np.ndarray, Tensor)) or obj is None or _is_number(obj):
        return obj
    if isinstance(obj, dict):
        return _rebuild_mapping(obj, {k: from_wire(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(from_wire(v) for v in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(from_wire(v) for v in obj)
    return obj
