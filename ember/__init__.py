"""ember: a tensor library and deep-learning framework with PyTorch's API.

>>> import ember
>>> x = ember.arange(6, dtype=ember.float32).reshape(2, 3)
>>> x.sum(dim=1)
tensor([ 3., 12.])
"""

__version__ = "0.1.0"

from . import _dtype
from ._dtype import (  # noqa: F401
    bfloat16, bool, can_cast, double, dtype, finfo, float, float16, float32, float64, get_default_dtype,
    half, iinfo, int, int8, int16, int32, int64, long, promote_types, result_type, set_default_dtype,
    short, uint8,
)
from ._errors import BackendUnavailable, IndexOutOfRange, LinAlgError  # noqa: F401
from ._dtype import UnsupportedDtypeError  # noqa: F401
from ._device import Device, device, get_default_device, register_device, set_default_device  # noqa: F401
from ._shape import Size, broadcast_shapes  # noqa: F401
from ._tensor import Tensor, is_tensor  # noqa: F401
from ._elementwise import (  # noqa: F401
    abs, absolute, acos, acosh, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin,
    asinh, atan, atan2, atanh, bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,
    bitwise_right_shift, bitwise_xor, ceil, clamp, clamp_max, clamp_min, clip, copysign, cos, cosh, digamma,
    div, divide, eq, erf, erfc, erfinv, exp, exp2, expm1, float_power, floor, floor_divide, fmax, fmin,
    fmod, frac, ge, greater, greater_equal, gt, hypot, isfinite, isinf, isnan, le, lerp, less, less_equal,
    lgamma, log, log1p, log2, log10, logaddexp, logical_and, logical_not, logical_or, logical_xor, lt,
    maximum, minimum, mul, multiply, nan_to_num, ne, neg, negative, nextafter, not_equal, pow, positive,
    reciprocal, remainder, round, rsqrt, sgn, sigmoid, sign, signbit, sin, sinh, sqrt, square, sub,
    subtract, tan, tanh, true_divide, trunc, where, xlogy,
)
from ._creation import (  # noqa: F401
    arange, as_tensor, asarray, empty, empty_like, eye, from_numpy, full, full_like, linspace, logspace,
    ones, ones_like, scalar_tensor, tensor, zeros, zeros_like,
)
from ._reduction import (  # noqa: F401
    all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cummax, cummin, cumprod, cumsum,
    logcumsumexp, logsumexp, max, mean, min, nanmean, nansum, norm, numel, prod, return_types, std,
    std_mean, sum, var, var_mean,
)
from ._movement import (  # noqa: F401
    as_strided, atleast_1d, atleast_2d, atleast_3d, broadcast_tensors, broadcast_to, cartesian_prod, cat,
    chunk, column_stack, concat, concatenate, contiguous, diag, diag_embed, diagonal, dstack, expand,
    flatten, flip, fliplr, flipud, hstack, meshgrid, movedim, moveaxis, narrow, permute, repeat_interleave,
    reshape, roll, rot90, row_stack, select, split, squeeze, stack, swapaxes, swapdims, t, tensor_split,
    tile, transpose, tril, triu, unbind, unflatten, unsqueeze, vstack,
)
from ._indexing import (  # noqa: F401
    argwhere, gather, index_add, index_copy, index_fill, index_put, index_select, masked_fill,
    masked_scatter, masked_select, nonzero, scatter, scatter_add, scatter_reduce, take, take_along_dim,
)
from . import _printing  # noqa: F401,E402
from ._printing import set_printoptions  # noqa: F401,E402
from ._sorting import *  # noqa: F401,F403,E402
from ._linalg_ops import *  # noqa: F401,F403,E402
from ._random import *  # noqa: F401,F403,E402
from ._interop import *  # noqa: F401,F403,E402
from . import linalg  # noqa: E402
from ._dtype import as_dtype  # noqa: F401,E402
from ._softmax import *  # noqa: F401,F403,E402
from . import nn  # noqa: E402  (ember.nn.functional.pad; the nn issue fills the package)
from ._compare import allclose, equal, isclose  # noqa: E402  (whole-tensor comparisons)
from . import _tensor_autograd  # noqa: F401,E402 - Tensor.requires_grad, .grad, .backward, ...
from . import autograd, utils  # noqa: F401,E402
from .autograd.grad_mode import (  # noqa: F401,E402
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from . import array_api  # noqa: E402,F401 - the Array API namespace; adds Tensor.__array_namespace__
from . import optim; from .serialization import load, save  # noqa: E402,E702,F401 - ember.optim, ember.save/load
from . import amp; from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402,E702,F401 - mixed precision
from ._compile import compile  # noqa: E402,F401 - ember.compile: capture a step once, replay it

# Packages with heavier imports (worker processes, file formats, models, kernels) load on first use:
# `ember.data.DataLoader` works after a plain `import ember`, which itself stays fast.
_LAZY_PACKAGES = ("data", "train", "store", "models", "cube", "onnx", "cuda", "wgpu", "backends", "remote")


def __getattr__(name: str):
    if name in _LAZY_PACKAGES:
        import importlib
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":  # a missing dependency inside the package: say so
                raise
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
