"""ember's Python Array API standard namespace (version 2025.12).

``x.__array_namespace__()`` of an ember tensor returns this module, so array-API code (scipy,
scikit-learn, array_api_compat users) works on ember tensors. The functions translate the
standard's names and semantics to ember's ops; ember's own API stays PyTorch's.

>>> import ember, ember.array_api as xp
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> x.__array_namespace__() is xp
True
>>> xp.permute_dims(xp.concat([x, x], axis=0), (1, 0)).shape
ember.Size([2, 4])

What differs from the standard (details in array-api-xfails.txt): ember has no complex dtypes
and no uint16/uint32/uint64, so they are absent (``__array_namespace_info__().dtypes()`` lists
what is there) and there is no ``fft`` extension or ``linalg.eig``/``eigvals``; the operators of
a Tensor (``x + y``, ``x == y``) keep PyTorch's promotion, where a 0-d operand does not widen
the result, while the namespace's functions (``xp.add``) follow the standard.
"""

from __future__ import annotations

import math as _math

from .. import _dtype as _dt
from .._tensor import Tensor as _Tensor
from . import linalg  # noqa: F401,E402
from ._creation import *  # noqa: F401,F403
from ._dtypes import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._info import __array_namespace_info__  # noqa: F401
from ._linalg_fns import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._searching import *  # noqa: F401,F403
from ._statistical import *  # noqa: F401,F403

__array_api_version__ = "2025.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

# dtypes: ember's own objects
bool = _dt.bool  # noqa: A001
int8, int16, int32, int64, uint8 = _dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.uint8
float32, float64 = _dt.float32, _dt.float64

# constants
e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None


# ---- the array object: what the standard asks of ember.Tensor beyond its PyTorch API ---------------
def _array_namespace(self, /, *, api_version: str | None = None):
    """The Array API namespace of this tensor: ``ember.array_api`` (any version up to 2025.12)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"__array_namespace__: unsupported Array API version {api_version!r}; "
                         f"ember supports {', '.join(_VERSIONS)}")
    import ember.array_api as namespace
    return namespace


def _to_device(self, device, /, *, stream=None):
    """The tensor on ``device`` (itself when it is already there)."""
    if stream is not None:
        raise ValueError("to_device: ember's devices have no streams; pass stream=None")
    return self.to(device)


_Tensor.__array_namespace__ = _array_namespace
_Tensor.to_device = _to_device
