"""Creating tensors (tensor, zeros, arange, ...) and converting them (to, clone, type casts)."""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt
from ._device import Device, get_default_device
from ._device import device as _device
from ._tensor import Tensor, method, run, wrap

_EMPTY: dict = {}


def _dev(device) -> Device:
    return get_default_device() if device is None else _device(device)


def _size(size) -> tuple[int, ...]:
    """Accept zeros(2, 3), zeros((2, 3)), zeros([2, 3]) and zeros(ember.Size(...))."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"sizes must be integers, got {type(s).__name__} in {list(size)}")
        if s < 0:
            raise RuntimeError(f"negative dimension {s} in size {list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _from_host(array: np.ndarray, d: dt.dtype, device: Device) -> Tensor:
    return wrap(device.backend.write(array), tuple(array.shape), d, device)


def _infer_dtype(data) -> dt.dtype:
    """torch.tensor's dtype inference for Python data: bool < int64 < default float."""
    if isinstance(data, Tensor):
        return data._dtype
    if isinstance(data, np.ndarray):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, bool):
        return dt.bool
    if isinstance(data, int):
        return dt.int64
    if isinstance(data, float):
        return dt.get_default_dtype()
    if isinstance(data, (list, tuple)):
        best = None
        for item in data:
            d = _infer_dtype(item)
            best = d if best is None else dt.promote_types(best, d)
        return dt.get_default_dtype() if best is None else best
    if hasattr(data, "__array__") or hasattr(data, "__dlpack__"):
        return dt.from_numpy_dtype(np.asarray(data).dtype)
    raise TypeError(f"can't build a tensor from {type(data).__name__}")


def _to_numpy(data, d: dt.dtype) -> np.ndarray:
    if isinstance(data, Tensor):
        return np.asarray(data.numpy(force=True), dtype=d.np)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [_to_numpy(x, d) for x in data]
    if d.category == 1 and not isinstance(data, np.ndarray):
        return _to_int_array(data, d)
    try:
        return np.array(data, dtype=d.np)
    except ValueError as e:
        raise ValueError(f"tensor(): can't build a tensor from ragged or malformed data ({e})") from None
    except OverflowError as e:
        raise RuntimeError(f"tensor(): value can't be converted to {d} without overflow ({e})") from None


def _to_int_array(data, d: dt.dtype) -> np.ndarray:
    """Python data into an integer dtype with PyTorch's overflow rule (see :func:`_py`): floats
    truncate but must fit; integers must fit, except that unsigned types wrap negatives."""
    try:
        raw = np.array(data)
    except ValueError as e:
        raise ValueError(f"tensor(): can't build a tensor from ragged or malformed data ({e})") from None
    if raw.dtype.kind == "O" or raw.dtype == np.uint64:
        raise ValueError(f"tensor(): Overflow: an integer in the data does not fit in int64 (building {d})")
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"tensor(): can't build a {d} tensor from data of type {raw.dtype}")
    if raw.size and raw.dtype.kind in "iuf":
        info = dt.iinfo(d)
        lo, hi = int(info.min), int(info.max)
        if raw.dtype.kind == "f":
            bad = not np.isfinite(raw).all() or raw.min() < lo or raw.max() > hi
        else:
            bad = int(raw.max()) > hi or int(raw.min()) < (lo if d.is_signed else -hi)
        if bad:
            raise RuntimeError(f"tensor(): a value in the data cannot be converted to type {d.name} without overflow")
    return raw.astype(d.np)


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor with a copy of ``data`` (nested lists, numbers, numpy arrays, tensors).

    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    d = _infer_dtype(data) if dtype is None else dt.as_dtype(dtype)
    arr = _to_numpy(data, d)
    if isinstance(data, np.ndarray) and arr is data or isinstance(data, Tensor):
        arr = arr.copy()
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would also turn 0-d arrays into 1-d ones)
        arr = np.ascontiguousarray(arr)
    return _finish(_from_host(arr, d, _dev(device)), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when nothing changes."""
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = out.to(device)
        return out if dtype is None else out.to(dt.as_dtype(dtype))
    if isinstance(data, np.ndarray) and (dtype is None or dt.as_dtype(dtype).np == data.dtype) \
            and _dev(device).type == "cpu":
        return from_numpy(data) if device is None or _dev(device) is get_default_device() \
            else from_numpy(data).to(device)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array (changes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    d = dt.from_numpy_dtype(array.dtype)
    t = _from_host(array, d, _device("cpu"))
    t._share_host()
    return t


def _rebuild(array, dtype_name, device_str):
    return tensor(array, dtype=dt.as_dtype(dtype_name), device=device_str)


def _fill(shape, value, dtype, device, requires_grad) -> Tensor:
    dev = _dev(device)
    h = dev.backend.run("full", (), {"shape": shape, "value": value, "dtype": dtype})
    return _finish(wrap(h, shape, dtype, dev), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``ember.zeros(2, 3)``."""
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    return _fill(_size(size), False if d is dt.bool else 0, d, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``ember.ones(2, 3)``."""
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    return _fill(_size(size), True if d is dt.bool else 1, d, device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value (bool, int64, float)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = dt.result_type(fill_value) if dtype is None else dt.as_dtype(dtype)
    shape = _size((size,))
    return _fill(shape, _py(fill_value, d), d, device, requires_grad)


def _py(v, d: dt.dtype, op: str = "full"):
    """A Python scalar converted for storage in dtype ``d``, refusing values that overflow it.

    PyTorch's rule: floats must lie in the integer type's range (then truncate); integers may
    also be negative down to -max for unsigned types, wrapping like a two's-complement cast.
    """
    if isinstance(v, np.generic):
        v = v.item()
    if d is dt.bool:
        return bool(v)
    if d.category == 1:
        info = dt.iinfo(d)
        lo, hi = int(info.min), int(info.max)
        if isinstance(v, float):
            if not math.isfinite(v) or v < lo or v > hi:
                raise RuntimeError(f"{op}: value {v} cannot be converted to type {d.name} without overflow")
            return int(v)
        v = int(v)
        if v > hi or v < (lo if d.is_signed else -hi):
            raise RuntimeError(f"{op}: value {v} cannot be converted to type {d.name} without overflow")
        return (v - lo) % (hi - lo + 1) + lo
    v = float(v)
    if math.isfinite(v) and abs(v) > float(dt.finfo(d).max):
        raise RuntimeError(f"{op}: value {v} cannot be converted to type {d.name} without overflow")
    return v


def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (its values are whatever the memory held)."""
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    dev = _dev(device)
    shape = _size(size)
    h = dev.backend.run("empty", (), {"shape": shape, "dtype": d}) if dev.backend.supports("empty") \
        else dev.backend.run("full", (), {"shape": shape, "value": 0, "dtype": d})
    return _finish(wrap(h, shape, d, dev), requires_grad)


def _like(fn):
    def like(input: Tensor, *args, dtype=None, device=None, requires_grad: bool = False, **kw):
        return fn(input._shape, *args, dtype=input._dtype if dtype is None else dtype,
                  device=input._device if device is None else device, requires_grad=requires_grad, **kw)
    return like


zeros_like = _like(lambda shape, **kw: zeros(shape, **kw))
ones_like = _like(lambda shape, **kw: ones(shape, **kw))
empty_like = _like(lambda shape, **kw: empty(shape, **kw))
full_like = _like(lambda shape, value, **kw: full(shape, value, **kw))
for _f, _n in ((zeros_like, "zeros_like"), (ones_like, "ones_like"), (empty_like, "empty_like"),
               (full_like, "full_like")):
    _f.__name__ = _n
    _f.__doc__ = f"{_n.removesuffix('_like')} with the shape (and by default dtype and device) of input."


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) by step: ``ember.arange(5)``."""
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise RuntimeError(f"arange: unsupported range: {start} -> {end} (step {step})")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    d = dt.result_type(start, end, step) if dtype is None else dt.as_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    dev = _dev(device)
    h = dev.backend.run("arange", (), {"start": start, "end": end, "step": step, "dtype": d})
    return _finish(wrap(h, (n,), d, dev), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from start to end inclusive."""
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    dev = _dev(device)
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if d.category == 1:  # the end points must fit the integer dtype (PyTorch's overflow check)
        _py(start, d, "linspace"), _py(end, d, "linspace")
    h = dev.backend.run("linspace", (), {"start": float(start), "end": float(end), "steps": int(steps), "dtype": d})
    return _finish(wrap(h, (int(steps),), d, dev), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """base ** linspace(start, end, steps)."""
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    exps = linspace(start, end, steps, dtype=dt.float64, device=device)
    return _finish(((float(base) ** exps)).to(d), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """The n×m identity matrix."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got {n} and {m}")
    d = dt.get_default_dtype() if dtype is None else dt.as_dtype(dtype)
    dev = _dev(device)
    return _finish(wrap(dev.backend.run("eye", (), {"n": n, "m": m, "dtype": d}), (n, m), d, dev), requires_grad)


# ---- conversion -------------------------------------------------------------------------------
@method
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory."""
    return run("copy", (input,), _EMPTY, input._shape, input._dtype)


@method
def to(self: Tensor, *args, dtype=None, device=None, non_blocking: bool = False, copy: bool = False,
       memory_format=None) -> Tensor:
    """Convert dtype and/or device: ``x.to("cpu")``, ``x.to(ember.float16)``, ``x.to(other)``."""
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a._dtype, a._device
        elif isinstance(a, (Device, str)) and not (isinstance(a, str) and a in dt._NAMES):
            device = a
        elif a is not None:
            dtype = a
    out = self
    if device is not None:
        dev = _device(device)
        if dev is not self._device and dev != self._device:
            host = self._device.backend.read(self._h)
            out = _from_host(np.array(host, copy=True, order="C"), self._dtype, dev)
    if dtype is not None:
        from ._elementwise import cast
        out = cast(out, dt.as_dtype(dtype))
    if copy and out is self:
        out = clone(self)
    return out


@method(name="type")
def _type(self: Tensor, dtype=None):  # named _type so the module keeps Python's builtin type()
    """With no argument, the type name ('ember.FloatTensor'); otherwise ``to(dtype)``."""
    if dtype is None:
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}
        return f"ember.{names[self._dtype.name]}Tensor"
    return self.to(dtype)


def _caster(d):
    def f(self: Tensor, memory_format=None) -> Tensor:
        return self.to(d)
    return f


for _name, _d in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                  ("bfloat16", dt.bfloat16), ("long", dt.int64), ("int", dt.int32),
                  ("short", dt.int16), ("char", dt.int8), ("byte", dt.uint8), ("bool", dt.bool)):
    setattr(Tensor, _name, _caster(_d))


@method
def cpu(self: Tensor) -> Tensor:
    """This tensor on the CPU (itself when already there)."""
    return self.to("cpu")


@method
def cuda(self: Tensor, device=None) -> Tensor:
    """This tensor on a CUDA device (needs ember's CUDA backend)."""
    return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)


@method
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor converted to other's dtype."""
    return self.to(other._dtype)


@method
def new_tensor(self: Tensor, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor from data, with this tensor's dtype and device unless given."""
    return tensor(data, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)


def _new_maker(fn):
    def f(self: Tensor, *size, dtype=None, device=None, requires_grad=False, **kw):
        return fn(*size, dtype=dtype or self._dtype, device=device or self._device,
                  requires_grad=requires_grad, **kw)
    return f


Tensor.new_zeros = _new_maker(zeros)
Tensor.new_ones = _new_maker(ones)
Tensor.new_empty = _new_maker(empty)
Tensor.new_full = lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: full(
    size, fill_value, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)


@method
def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, converted to this dtype and device) into this tensor."""
    from ._elementwise import assign_, cast
    if isinstance(src, Tensor):
        if src._device is not self._device:
            src = src.to(self._device)
        src = cast(src, self._dtype)
    assign_(self, src)
    return self


@method
def fill_(self: Tensor, value) -> Tensor:
    """Set every element to ``value``."""
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value._shape)} dimensions")
        value = value.item()
    from ._elementwise import assign_
    assign_(self, _py(value, self._dtype, "fill_"))
    return self


@method
def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return fill_(self, 0)


def scalar_tensor(value, *, dtype=None, device=None) -> Tensor:
    """A 0-d tensor holding ``value``."""
    return full((), value, dtype=dtype or dt.get_default_dtype(), device=device)
