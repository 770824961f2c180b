"""The standard's data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type.

ember's dtypes are the standard's dtype objects. The standard's uint16/uint32/uint64 and the
complex dtypes have no ember counterpart; ``__array_namespace_info__().dtypes()`` leaves them out.
float16 and bfloat16 are extra "real floating" dtypes (the standard allows such extensions).

>>> import ember.array_api as xp
>>> xp.result_type(xp.int8, xp.uint8), xp.isdtype(xp.float32, "real floating")
(ember.int16, True)
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

from .. import _dtype as dt
from .._elementwise import cast
from .._tensor import Tensor
from ._helpers import _scalar_kind

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

_KINDS = {
    "bool": lambda d: d is dt.bool,
    "signed integer": lambda d: d.category == 1 and d.is_signed,
    "unsigned integer": lambda d: d.category == 1 and not d.is_signed,
    "integral": lambda d: d.category == 1,
    "real floating": lambda d: d.category == 2,
    "complex floating": lambda d: False,  # ember has no complex dtypes
    "numeric": lambda d: d.category >= 1,
}


def _dtype_of(x, op: str) -> dt.dtype:
    if isinstance(x, Tensor):
        return x._dtype
    if isinstance(x, dt.dtype):
        return x
    raise TypeError(f"{op}: expected an ember dtype or array, got {x!r}")


def astype(x: Tensor, dtype: dt.dtype, /, *, copy: builtins.bool = True, device=None) -> Tensor:
    """x converted to ``dtype`` (a new array unless ``copy=False`` and nothing changes).

    >>> xp.astype(xp.asarray([1.7, -2.5]), xp.int32)
    tensor([ 1, -2], dtype=ember.int32)
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"astype: expected an array, got {type(x).__name__}")
    d = _dtype_of(dtype, "astype")
    out = x if device is None else x.to(device)
    if out._dtype is not d:
        return cast(out, d)
    if copy and out is x:
        out = x.clone()
    return out


def can_cast(from_, to, /) -> builtins.bool:
    """Whether type promotion can turn ``from_`` (a dtype or array) into ``to`` without a lossy step.

    >>> xp.can_cast(xp.int8, xp.int16), xp.can_cast(xp.int16, xp.int8), xp.can_cast(xp.int8, xp.float32)
    (True, False, False)
    """
    a, b = _dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast")
    if a is b:
        return True
    # only promotions inside a kind exist in the standard's lattice; int -> float is not one
    return a.category == b.category and a.category != 0 and dt.promote_types(a, b) is b


class finfo_object(NamedTuple):
    """Limits of a floating dtype, with ``dtype`` the dtype object (ember.finfo gives its name)."""

    bits: builtins.int
    eps: builtins.float
    max: builtins.float
    min: builtins.float
    smallest_normal: builtins.float
    dtype: dt.dtype


class iinfo_object(NamedTuple):
    """Limits of an integer dtype."""

    bits: builtins.int
    max: builtins.int
    min: builtins.int
    dtype: dt.dtype


def finfo(type, /) -> finfo_object:  # noqa: A002 - the standard's argument name
    """Machine limits of a floating dtype (or of an array's dtype).

    >>> xp.finfo(xp.float32).bits
    32
    """
    d = _dtype_of(type, "finfo")
    f = dt.finfo(d)
    return finfo_object(f.bits, f.eps, f.max, f.min, f.smallest_normal, d)


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or of an array's dtype).

    >>> xp.iinfo(xp.int8).min
    -128
    """
    d = _dtype_of(type, "iinfo")
    i = dt.iinfo(d)
    return iinfo_object(i.bits, i.max, i.min, d)


def isdtype(dtype, kind) -> builtins.bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name ('integral', 'real floating', ...) or a tuple.

    >>> xp.isdtype(xp.int8, ("bool", "signed integer"))
    True
    """
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"isdtype: expected an ember dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, dt.dtype):
        return dtype is kind
    if isinstance(kind, str):
        test = _KINDS.get(kind)
        if test is None:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {', '.join(_KINDS)}")
        return test(dtype)
    raise TypeError(f"isdtype: kind must be a dtype, a string or a tuple of them, got {kind!r}")


def result_type(*arrays_and_dtypes) -> dt.dtype:
    """The standard's promoted dtype of arrays, dtypes and Python scalars (0-d arrays count fully).

    >>> xp.result_type(xp.asarray(1, dtype=xp.int16), xp.ones(3, dtype=xp.int8))
    ember.int16
    """
    out = None
    kind = -1
    for a in arrays_and_dtypes:
        if isinstance(a, (Tensor, dt.dtype)):
            d = _dtype_of(a, "result_type")
            out = d if out is None else dt.promote_types(out, d)
        else:
            kind = builtins.max(kind, _scalar_kind(a))
    if out is None:
        raise ValueError("result_type: at least one array or dtype is required")
    if kind > out.category:
        out = (dt.bool, dt.int64, dt.get_default_dtype())[kind]
    return out
