"""``__array_namespace_info__()``: what this namespace supports (capabilities, devices, dtypes).

>>> import ember.array_api as xp
>>> info = xp.__array_namespace_info__()
>>> info.default_dtypes()["integral"], "complex64" in info.dtypes()
(ember.int64, False)
"""

from __future__ import annotations

from .. import _dtype as dt
from .._device import _CACHE, _FACTORIES, get_default_device
from .._device import device as _device

# the standard's dtypes that ember has; uint16/32/64 and complex64/128 it lacks
_STANDARD = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64")
_KIND_MEMBERS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8",),
    "integral": ("int8", "int16", "int32", "int64", "uint8"),
    "real floating": ("float32", "float64"),
    "complex floating": (),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "float32", "float64"),
}


class Info:
    """The namespace's inspection object (the standard's ``__array_namespace_info__()``)."""

    __module__ = "ember.array_api"

    def capabilities(self) -> dict:
        """Boolean indexing and data-dependent shapes are supported; at most 64 dimensions (numpy's limit)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        """The device new arrays go to (``ember.get_default_device()``)."""
        return get_default_device()

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes; there is no complex dtype, so 'complex floating' is None."""
        self._check_device(device)
        return {"real floating": dt.get_default_dtype(), "complex floating": None, "integral": dt.int64,
                "indexing": dt.int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The standard's dtypes ember supports, by name, optionally only those of ``kind`` (a str or tuple)."""
        self._check_device(device)
        if kind is None:
            names = _STANDARD
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            names = []
            for k in kinds:
                if k not in _KIND_MEMBERS:
                    raise ValueError(f"dtypes: unknown kind {k!r}; expected one of {', '.join(_KIND_MEMBERS)}")
                names += [n for n in _KIND_MEMBERS[k] if n not in names]
        return {n: dt.as_dtype(n) for n in names}

    def devices(self) -> tuple:
        """The devices whose backends are available: the CPU, and any other registered device already made."""
        out = [_device("cpu")]
        for d in _CACHE.values():
            if d not in out and d.type in _FACTORIES:
                out.append(d)
        return tuple(out)

    def _check_device(self, device) -> None:
        if device is not None:
            _device(device)  # raises for an unknown device


def __array_namespace_info__() -> Info:
    """The inspection object of ember's Array API namespace."""
    return Info()
