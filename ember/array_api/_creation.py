"""The standard's creation functions, on top of ember's (``ember.zeros``, ``ember.arange``, ...).

Differences from the PyTorch-style functions that are translated here: shapes are one int or a
tuple, ``arange`` gives an empty array (not an error) for an empty range, ``linspace`` has
``endpoint``, ``eye`` has ``k``, ``meshgrid`` defaults to 'xy' indexing, ``asarray`` has the
standard's ``copy`` keyword (True: always copy, False: never copy, None: copy only when needed).

>>> import ember.array_api as xp
>>> xp.eye(2, 3, k=1, dtype=xp.int64)
tensor([[0, 1, 0],
        [0, 0, 1]])
"""

from __future__ import annotations

import builtins
import math

import numpy as np

import ember

from .. import _dtype as dt
from .._interop import from_dlpack as _from_dlpack
from .._tensor import Tensor
from ._helpers import check_array

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
           "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]


def _shape(shape, op: str) -> tuple[int, ...]:
    if isinstance(shape, (builtins.int, np.integer)) and not isinstance(shape, builtins.bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got {type(shape).__name__}")
    return tuple(shape)


def _dtype(dtype) -> dt.dtype | None:
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    raise TypeError(f"expected an ember dtype, got {dtype!r}")


def _same_device(a, b) -> builtins.bool:
    return b is None or a == ember.device(b)


def asarray(obj, /, *, dtype=None, device=None, copy: builtins.bool | None = None) -> Tensor:
    """An array from an array, a Python scalar, nested sequences or a buffer-protocol object.

    >>> xp.asarray([[1, 2], [3, 4]]).dtype, xp.asarray(2.5).shape
    (ember.int64, ember.Size([]))
    """
    d = _dtype(dtype)
    if isinstance(obj, Tensor):
        if copy is False and ((d is not None and d is not obj._dtype) or not _same_device(obj._device, device)):
            raise ValueError("asarray: copy=False but converting the dtype or device needs a copy")
        out = obj if device is None else obj.to(device)
        if d is not None and d is not out._dtype:
            out = out.to(d)
        elif copy and out is obj:
            out = obj.clone()
        return out
    if isinstance(obj, (builtins.bool, builtins.int, builtins.float, np.generic)) or isinstance(obj, (list, tuple)):
        if copy is False:
            raise ValueError("asarray: copy=False needs an object that supports the buffer protocol; "
                             "Python scalars and sequences are always copied")
        if d is None:
            d = _infer(obj)
        if d.category == 1:
            _check_int_range(obj, d)
        return ember.tensor(obj, dtype=d, device=device)
    if isinstance(obj, complex):
        raise TypeError("asarray: ember has no complex dtypes")
    # buffer-protocol objects and foreign arrays: numpy reads them without copying
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        try:
            return asarray(ember.from_dlpack(obj), dtype=d, device=device, copy=copy)
        except (TypeError, BufferError, RuntimeError):
            pass
    try:
        arr = np.asarray(obj) if copy is not True else np.array(obj, copy=True)
    except Exception as e:
        raise TypeError(f"asarray: can't make an array from {type(obj).__name__} ({e})") from None
    if arr.dtype.kind == "O":
        raise TypeError(f"asarray: can't make an array from {type(obj).__name__}")
    out = ember.from_numpy(arr) if arr.dtype.kind != "V" else None
    if out is None:
        raise TypeError(f"asarray: unsupported buffer element type {arr.dtype}")
    if copy is False and ((d is not None and d is not out._dtype) or not _same_device(out._device, device)):
        raise ValueError("asarray: copy=False but converting the dtype or device needs a copy")
    if device is not None:
        out = out.to(device)
    return out if d is None else out.to(d)


def _infer(obj) -> dt.dtype:
    """The standard's inference: all bool -> bool; ints (and bools) -> int64; any float -> default float."""
    kinds = set()

    def walk(o):
        if isinstance(o, (list, tuple)):
            for item in o:
                walk(item)
        elif isinstance(o, Tensor):
            kinds.add(o._dtype)
        elif isinstance(o, (builtins.bool, np.bool_)):
            kinds.add(0)
        elif isinstance(o, (builtins.int, np.integer)):
            kinds.add(1)
        elif isinstance(o, (builtins.float, np.floating)):
            kinds.add(2)
        elif isinstance(o, complex):
            raise TypeError("asarray: ember has no complex dtypes")
        else:
            raise TypeError(f"asarray: can't make an array from an element of type {type(o).__name__}")

    walk(obj)
    tensors = [k for k in kinds if isinstance(k, dt.dtype)]
    if tensors and len(kinds) == 1 and isinstance(obj, (list, tuple)):
        return tensors[0]
    cats = {k.category if isinstance(k, dt.dtype) else k for k in kinds}
    if not cats:
        return dt.get_default_dtype()
    return (dt.bool, dt.int64, dt.get_default_dtype())[builtins.max(cats)]


def _check_int_range(obj, d: dt.dtype) -> None:
    """Integers outside the dtype's range are an error (not a silent wrap)."""
    info = dt.iinfo(d)

    def walk(o):
        if isinstance(o, (list, tuple)):
            for item in o:
                walk(item)
        elif isinstance(o, (builtins.int, np.integer)) and not isinstance(o, (builtins.bool, np.bool_)):
            if not info.min <= o <= info.max:
                raise OverflowError(f"asarray: {o} is out of range for {d.name}")

    walk(obj)


def _fill_dtype(dtype) -> dt.dtype:
    d = _dtype(dtype)
    return dt.get_default_dtype() if d is None else d


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """An uninitialised array of ``shape``."""
    return ember.empty(_shape(shape, "empty"), dtype=_fill_dtype(dtype), device=device)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """An array of zeros: ``xp.zeros((2, 3))``."""
    return ember.zeros(_shape(shape, "zeros"), dtype=_fill_dtype(dtype), device=device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """An array of ones: ``xp.ones(3, dtype=xp.int32)``."""
    return ember.ones(_shape(shape, "ones"), dtype=_fill_dtype(dtype), device=device)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """An array filled with ``fill_value`` (bool, int or float: the dtype follows it when not given)."""
    if isinstance(fill_value, complex):
        raise TypeError("full: ember has no complex dtypes")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return ember.full(_shape(shape, "full"), fill_value, dtype=_dtype(dtype), device=device)


def _like(x: Tensor, dtype, device, op: str):
    check_array(x, op)
    return (x._dtype if dtype is None else _dtype(dtype)), (x._device if device is None else device)


def empty_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """An uninitialised array with x's shape (and dtype and device unless given)."""
    d, dev = _like(x, dtype, device, "empty_like")
    return ember.empty(x._shape, dtype=d, device=dev)


def zeros_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Zeros with x's shape (and dtype and device unless given)."""
    d, dev = _like(x, dtype, device, "zeros_like")
    return ember.zeros(x._shape, dtype=d, device=dev)


def ones_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Ones with x's shape (and dtype and device unless given)."""
    d, dev = _like(x, dtype, device, "ones_like")
    return ember.ones(x._shape, dtype=d, device=dev)


def full_like(x: Tensor, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """``fill_value`` with x's shape; the dtype is x's unless given."""
    d, dev = _like(x, dtype, device, "full_like")
    if isinstance(fill_value, complex):
        raise TypeError("full_like: ember has no complex dtypes")
    return ember.full(x._shape, fill_value, dtype=d, device=dev)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """Values in [start, stop) by step; an empty range gives an empty array.

    >>> xp.arange(5, 0, -2)
    tensor([5, 3, 1])
    """
    if stop is None:
        start, stop = 0, start
    d = _dtype(dtype)
    if d is None:
        floats = builtins.any(isinstance(v, builtins.float) for v in (start, stop, step))
        d = dt.get_default_dtype() if floats else dt.int64
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    n = math.ceil((stop - start) / step) if all(math.isfinite(v) for v in (start, stop, step)) else -1
    if n <= 0:
        if n < 0 and not all(math.isfinite(v) for v in (start, stop, step)):
            raise ValueError(f"arange: the range {start}, {stop}, {step} is not finite")
        return ember.empty((0,), dtype=d, device=device)
    out = ember.arange(start, stop, step, dtype=d, device=device)
    if out._shape[0] != n:  # float rounding of (stop - start) / step: the standard's length wins
        out = out[:n] if out._shape[0] > n else ember.arange(n, dtype=dt.float64, device=device).mul(step).add(
            start).to(d)
    return out


def linspace(start, stop, /, num: int, *, dtype=None, device=None, endpoint: builtins.bool = True) -> Tensor:
    """``num`` evenly spaced values from start to stop (stop excluded when ``endpoint=False``).

    >>> xp.linspace(0, 1, 4, endpoint=False)
    tensor([0.0000, 0.2500, 0.5000, 0.7500])
    """
    if isinstance(start, complex) or isinstance(stop, complex):
        raise TypeError("linspace: ember has no complex dtypes")
    if not isinstance(num, (builtins.int, np.integer)) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    d = _fill_dtype(dtype)
    if endpoint:
        return ember.linspace(start, stop, num, dtype=d, device=device)
    if num == 0:
        return ember.empty((0,), dtype=d, device=device)
    # the points of linspace(start, stop, num + 1) without the last; computed in float64 so the
    # values match start + i * (stop - start) / num
    return ember.linspace(start, stop, num + 1, dtype=dt.float64, device=device)[:num].to(d)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None, device=None) -> Tensor:
    """Ones on the k-th diagonal of an n_rows x n_cols matrix, zeros elsewhere."""
    n_cols = n_rows if n_cols is None else n_cols
    d = _fill_dtype(dtype)
    k = builtins.max(-n_rows, builtins.min(builtins.int(k), n_cols))  # beyond that no diagonal is inside
    if k == 0:
        return ember.eye(n_rows, n_cols, dtype=d, device=device)
    rows = ember.arange(n_rows, device=device).reshape(n_rows, 1)
    cols = ember.arange(n_cols, device=device).reshape(1, n_cols)
    return (rows + k == cols).to(d)


def from_dlpack(x, /, *, device=None, copy: builtins.bool | None = None) -> Tensor:
    """An array sharing memory with any DLPack producer (``copy=True`` copies; ``device`` moves)."""
    if copy is False and device is not None:
        dev_type = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        if ember.device(device).type != "cpu" or int(dev_type) != 1:
            raise BufferError("from_dlpack: copy=False but moving to another device needs a copy")
    return _from_dlpack(x, device=device, copy=copy)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-d arrays ('xy': Cartesian, the standard's default; 'ij': matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        check_array(a, "meshgrid", "arrays")
    if not arrays:
        return ()
    return tuple(ember.meshgrid(*arrays, indexing=indexing))


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (k > 0 keeps diagonals above the main one)."""
    return ember.tril(check_array(x, "tril"), k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes."""
    return ember.triu(check_array(x, "triu"), k)
