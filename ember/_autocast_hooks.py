"""Autocast (mixed precision) state, per-op policies, and the hooks ops call to take part.

``ember.autocast`` (in :mod:`ember.amp.autocast_mode`) only flips the state kept here; the ops do the
casting themselves, at the top of their frontend function, so no dispatch layer has to know about
mixed precision and the cost while autocast is off is one attribute read::

    if _autocast.on:  # hot paths check the flag first
        input, other = autocast_inputs("matmul", input, other)

or, for an op written with other ember ops that must not autocast again inside it (PyTorch runs
an autocast op with autocast excluded), the decorator::

    @autocast_op("addmm")
    def addmm(input, mat1, mat2, *, beta=1, alpha=1): ...

Policies follow PyTorch's lists for the device type: ``LOWER`` ops run in the autocast dtype
(every floating input except float64 is cast to it), ``FP32`` ops run in float32 (float16/bfloat16
inputs are cast up), ``BANNED`` ops refuse to run under autocast; ops not listed run in the dtypes
they are given. The CPU tables are checked against ``torch.autocast("cpu")`` in tests/test_amp.py;
the CUDA ones follow PyTorch's documented CUDA lists.
"""

from __future__ import annotations

import functools
import threading
import weakref

from . import _dtype as dt
from ._tensor import Tensor

__all__ = ["autocast_inputs", "autocast_op", "state", "LOWER", "FP32", "BANNED", "POLICIES"]

LOWER = "lower"
FP32 = "fp32"
BANNED = "banned"

_FP32_LOSSES = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "kl_div",
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss", "ctc_loss",
    "binary_cross_entropy_with_logits",
)

# PyTorch's CPU lists (aten/src/ATen/autocast_mode.cpp), under ember's op names
_CPU = {
    **dict.fromkeys((
        "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "conv1d", "conv2d", "conv3d",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
        "vecdot", "rnn",
    ), LOWER),
    **dict.fromkeys(_FP32_LOSSES + (
        "binary_cross_entropy", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
        "max_unpool2d", "max_unpool3d", "grid_sample", "reflection_pad", "replication_pad", "prod", "quantile",
        "nanquantile", "cdist", "trace", "inverse", "pinverse", "cholesky", "cholesky_inverse", "cholesky_solve",
        "linalg.inv", "linalg.cholesky", "linalg.svd", "linalg.svdvals", "linalg.eig",
        "linalg.eigh", "linalg.eigvals", "linalg.eigvalsh", "linalg.lstsq", "linalg.solve", "linalg.qr",
        "linalg.householder_product", "linalg.tensorinv", "linalg.tensorsolve", "linalg.lu_factor",
        "linalg.lu_solve", "qr", "svd", "triangular_solve", "lu_solve", "polar", "stft", "fft",
    ), FP32),
}

# PyTorch's CUDA lists (the documented "CUDA Ops that can autocast to float16 / float32")
_CUDA = {
    **dict.fromkeys((
        "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "addmv", "addr", "mv", "einsum", "chain_matmul",
        "linalg.multi_dot", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "prelu", "scaled_dot_product_attention", "vecdot", "rnn",
    ), LOWER),
    **dict.fromkeys(_FP32_LOSSES + (
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
        "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "vector_norm",
        "matrix_norm", "cosine_similarity", "pdist", "cdist", "dist", "renorm", "logsumexp", "interpolate",
        "prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum", "softmin",
    ), FP32),
    "binary_cross_entropy": BANNED,
}

POLICIES: dict[str, dict[str, str]] = {"cpu": _CPU, "cuda": _CUDA}
DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}


class _State(threading.local):
    """Per-thread autocast state (PyTorch's is thread-local too)."""

    on = False  # some device type has autocast enabled and no autocast op is running

    def __init__(self) -> None:
        self.enabled: dict[str, dt.dtype] = {}      # device type -> its low dtype, while enabled
        self.dtypes: dict[str, dt.dtype] = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0                             # autocast contexts entered (the cache dies at 0)
        self.suspended = 0                           # autocast ops running (their insides don't autocast)
        self.cache: dict = {}                        # (id(weight), grad mode) -> (weakref, cast copy)

    def refresh(self) -> None:
        self.on = bool(self.enabled) and not self.suspended


state = _State()


def _target(op: str, t: Tensor):
    """The dtype autocast gives tensor ``t`` as an input of ``op`` (None: leave it)."""
    low = state.enabled.get(t._device.type)
    if low is None:
        return None
    policy = POLICIES[t._device.type].get(op)
    if policy is None:
        return None
    if policy == BANNED:
        raise RuntimeError(
            f"{op} is unsafe to autocast on {t._device.type}: its result can't be represented well in "
            f"{low.name}. Compute it from logits with binary_cross_entropy_with_logits (BCEWithLogitsLoss), "
            f"or disable autocast around it with ember.autocast(device_type='{t._device.type}', enabled=False)")
    d = t._dtype
    if not d.is_floating_point or d is dt.float64:  # PyTorch never touches float64 or non-float inputs
        return None
    to = low if policy == LOWER else dt.float32
    return None if d is to else to


def _cast(op: str, t):
    if isinstance(t, (list, tuple)):
        return type(t)(_cast(op, v) for v in t)
    if not isinstance(t, Tensor):
        return t
    to = _target(op, t)
    if to is None:
        return t
    from .autograd.grad_mode import is_grad_enabled
    # weights (float32 leaves requiring grad) are cast once per outermost autocast region, like PyTorch
    cacheable = (state.cache_enabled and to is state.enabled.get(t._device.type) and t._dtype is dt.float32
                 and t._base is None and t.requires_grad and t.is_leaf)
    if not cacheable:
        return t.to(to)
    key = (id(t), is_grad_enabled())
    hit = state.cache.get(key)
    if hit is not None and hit[0]() is t and hit[1]._dtype is to:
        return hit[1]
    out = t.to(to)
    state.cache[key] = (weakref.ref(t), out)
    return out


def autocast_inputs(op: str, *tensors) -> tuple:
    """The arguments of ``op`` as autocast wants them (unchanged while autocast is off): each
    eligible tensor cast per ``op``'s policy for its device type; other values pass through.

    >>> import ember
    >>> from ember._autocast_hooks import autocast_inputs
    >>> with ember.autocast("cpu"):
    ...     autocast_inputs("matmul", ember.ones(2), 3)[0].dtype
    ember.bfloat16
    """
    if not state.on:
        return tensors
    return tuple(_cast(op, t) for t in tensors)


def autocast_op(op: str | None):
    """Decorator for an op built from other ember ops: under autocast its tensor arguments
    (positional, keyword, and tensors inside list/tuple arguments) are cast per ``op``'s policy
    (``None``: left as they are), and its body runs with autocast suspended, so the ops inside
    see the dtypes PyTorch's kernel would (mv stays float32 although it is written with matmul)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not state.on:
                return fn(*args, **kwargs)
            if op is not None:
                args = tuple(_cast(op, a) for a in args)
                kwargs = {k: _cast(op, v) for k, v in kwargs.items()}
            state.suspended += 1
            state.on = False
            try:
                return fn(*args, **kwargs)
            finally:
                state.suspended -= 1
                state.refresh()
        return wrapper
    return deco
