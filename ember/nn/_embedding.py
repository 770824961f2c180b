"""Lookup, linear maps, dropout and distances of ember.nn.functional: embedding, one_hot, linear,
bilinear, dropout (1d/2d/3d, alpha, feature alpha), cosine_similarity, pairwise_distance.

All are compositions of core ember ops, so autodiff differentiates them without rules of their
own. Dropout masks come from ember's counter-based generator (``ember.manual_seed`` reproduces
them on every backend); they are not PyTorch's random streams.

>>> import ember.nn.functional as F
>>> F.one_hot(ember.tensor([0, 2]), 3)
tensor([[1, 0, 0],
        [0, 0, 1]])
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._autocast_hooks import autocast_inputs
from .._shape import broadcast_shapes, norm_dim
from .._tensor import Tensor, wrap
from ._activation import _inplace, check_tensor

__all__ = ["embedding", "one_hot", "linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "feature_alpha_dropout", "cosine_similarity", "pairwise_distance"]


# ---- embedding and one_hot --------------------------------------------------------------------------
def _renorm_rows(weight: Tensor, idx: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` that ``idx`` uses to norm at most ``max_norm``, in place and
    outside autograd (PyTorch's embedding_renorm_)."""
    from ..autograd.grad_mode import no_grad
    from ..linalg import vector_norm
    with no_grad():
        rows = idx.reshape(-1).unique()
        if rows.numel() == 0:
            return
        w = weight.detach()
        sel = w.index_select(0, rows)
        norms = vector_norm(sel, norm_type, 1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).where(norms > max_norm, 1.0)
        w.index_copy_(0, rows, sel * scale)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``: shape ``input.shape + (embedding_dim,)``.

    ``padding_idx``: that row gets no gradient. ``max_norm``: the rows used are first rescaled in
    place to that ``norm_type``-norm at most. ``scale_grad_by_freq``: gradients are divided by how
    often each index occurs in ``input``.

    >>> w = ember.arange(6.0).reshape(3, 2)
    >>> ember.nn.functional.embedding(ember.tensor([2, 0]), w)
    tensor([[4., 5.],
            [0., 1.]])
    """
    check_tensor(input, "embedding")
    check_tensor(weight, "embedding", "weight")
    if input._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input._dtype.name} instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {list(weight._shape)}")
    if sparse:
        raise NotImplementedError("embedding(sparse=True): ember has no sparse tensors; use sparse=False "
                                  "(the gradient is then a dense tensor like weight)")
    n, d = weight._shape
    if padding_idx is not None:
        padding_idx = int(padding_idx)
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    flat = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows(weight, flat, float(max_norm), float(norm_type))
    out = weight.index_select(0, flat)
    from .._elementwise import tracks_grad
    if tracks_grad(weight) and (padding_idx is not None or scale_grad_by_freq):
        factor = None
        if scale_grad_by_freq:
            counts = flat.bincount(minlength=n).index_select(0, flat)
            factor = (1.0 / counts.to(weight._dtype)).unsqueeze(1)
        pad = None if padding_idx is None else (flat == padding_idx).unsqueeze(1)

        def scale_grad(g: Tensor) -> Tensor:
            if factor is not None:
                g = g * factor
            return g if pad is None else g.masked_fill(pad, 0.0)
        out.register_hook(scale_grad)
    return out.reshape(input._shape + (d,))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim of size ``num_classes`` (max + 1 when -1)."""
    x = check_tensor(tensor, "one_hot", "tensor")
    if x._dtype is not dt.int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor (got {x._dtype.name}).")
    num_classes = int(num_classes)
    if x.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo, hi = int(x.amin().item()), int(x.amax().item())
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"Class values must be smaller than num_classes (got {hi} for num_classes="
                               f"{num_classes}).")
    if num_classes < 0:
        raise RuntimeError(f"one_hot: num_classes should be -1 or non-negative, got {num_classes}")
    from .._creation import arange
    classes = arange(num_classes, device=x._device)
    return (x.unsqueeze(-1) == classes).to(dt.int64)


# ---- linear maps ------------------------------------------------------------------------------------------
def _same_dtypes(op: str, *ts):
    ts = [t for t in ts if t is not None]
    for t in ts[1:]:
        if t._dtype is not ts[0]._dtype:
            raise RuntimeError(f"{op}: expected all tensors to have the same dtype, got {ts[0]._dtype.name} and "
                               f"{t._dtype.name}")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias (weight (out, in), or (in,) for a single output).

    >>> ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    check_tensor(input, "linear")
    check_tensor(weight, "linear", "weight")
    if bias is not None:
        check_tensor(bias, "linear", "bias")
    input, weight, bias = autocast_inputs("linear", input, weight, bias)  # noqa: A001
    _same_dtypes("linear", input, weight, bias)
    if weight.ndim > 2:
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got shape {list(weight._shape)}")
    if weight.ndim == 1:
        if bias is not None:  # PyTorch's addmm path needs a matrix weight then
            raise RuntimeError("linear: mat2 must be a matrix, got 1-D tensor (a 1-D weight takes no bias)")
        out = input @ weight
    else:
        out = input @ weight.mT
    if bias is None:
        return out
    if broadcast_shapes(out._shape, bias._shape) != out._shape:
        raise RuntimeError(f"linear: bias of shape {list(bias._shape)} does not match the output shape "
                           f"{list(out._shape)}")
    return out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_o = input1ᵀ weight[o] input2 + bias[o] over the last dims (batch dims must match)."""
    for t, name in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        check_tensor(t, "bilinear", name)
    _same_dtypes("bilinear", input1, input2, weight, bias)
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got shape {list(weight._shape)}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1._shape[i] != input2._shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1._shape[i]} and {input2._shape[i]}")
    out_f, in1, in2 = weight._shape
    if input1._shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1._shape[-1]} but "
                           f"expected {in1}")
    if input2._shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2._shape[-1]} but "
                           f"expected {in2}")
    if bias is not None and tuple(bias._shape) != (out_f,):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {list(bias._shape)} but "
                           f"expected [{out_f}]")
    # one matmul: (..., in1) @ (in1, out*in2), then the in2 contraction as a multiply-sum
    t = input1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = t.reshape(input1._shape[:-1] + (out_f, in2))
    out = (t * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


# ---- dropout ------------------------------------------------------------------------------------------------
def _check_p(p) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def _draw_dtype(x: Tensor):
    """The dtype of dropout's uniforms for x: float64 for float64 x, float32 otherwise."""
    return dt.float64 if x._dtype is dt.float64 else dt.float32


def _keep_mask(x: Tensor, shape: tuple, p: float) -> Tensor:
    """1.0 with probability 1 - p, else 0.0, in x's dtype, drawn from ember's default generator."""
    from .._random import _rand
    return (_rand(shape, _draw_dtype(x), x._device, None) >= p).to(x._dtype)


def dropout_words(x: Tensor) -> tuple[int, int]:
    """(seed, offset) for a backend op that drops elements of x as dropout would: the generator words
    ``_keep_mask``'s rand over x's shape would draw, reserved from x's device's default generator (the
    ``dropout`` and ``attention_weights`` ops)."""
    from .._random import _WORDS, _generator
    return _generator(x._device, None, "dropout")._reserve(_WORDS["rand"](x.numel(), _draw_dtype(x)))


def _dropout_op(x: Tensor, p: float) -> Tensor:
    """The backend's one-pass ``dropout`` op: the numbers of the composition below, one kernel on the GPU
    instead of five."""
    seed, offset = dropout_words(x)
    hs = x._device.backend.run("dropout", (x._h,), {"p": p, "seed": seed, "offset": offset})
    return wrap(hs[0], x._shape, x._dtype, x._device)


def _dropout(x: Tensor, p: float, training: bool, inplace: bool, op: str, noise_shape, alpha: bool) -> Tensor:
    check_tensor(x, op)
    p = _check_p(p)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating tensor, got {x._dtype.name}")
    if not training or p == 0.0:
        return x

    def apply(src: Tensor) -> Tensor:
        if p == 1.0:
            return src * 0.0
        if not alpha and noise_shape == src._shape and src._device.backend.supports("dropout"):
            return _dropout_op(src, p)
        keep = _keep_mask(src, noise_shape, p)
        if not alpha:
            return src * (keep * (1.0 / (1.0 - p)))
        # SELU-preserving dropout: dropped units go to the negative saturation value, then an affine
        # map restores zero mean and unit variance
        a_sat = 1.7580993408473766
        a = 1.0 / math.sqrt((a_sat * a_sat * p + 1.0) * (1.0 - p))
        b = (keep - 1.0) * (a_sat * a) + a_sat * a * p
        return src * (keep * a) + b
    return _inplace(x, apply) if inplace else apply(x)


def _feature_shape(x: Tensor, op: str) -> tuple:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{list(x._shape)}")
    return x._shape[:2] + (1,) * (x.ndim - 2)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (identity in eval).

    >>> x = ember.ones(4)
    >>> ember.nn.functional.dropout(x, 0.5, training=False) is x
    True
    """
    return _dropout(input, p, training, inplace, "dropout", check_tensor(input, "dropout")._shape, False)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input."""
    x = check_tensor(input, "dropout1d")
    _check_p(p)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
                           "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    shape = (1, x._shape[0], 1) if x.ndim == 2 else _feature_shape(x, "dropout1d")
    return _channel_dropout(x, p, training, inplace, "dropout1d", shape)


def _channel_dropout(x, p, training, inplace, op, shape):
    # the mask broadcasts against x; an unbatched input's (1, C, ...) mask loses its leading 1
    shape = shape[len(shape) - x.ndim:] if len(shape) > x.ndim else shape
    return _dropout(x, p, training, inplace, op, shape, False)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (dim 1) of (N, C, H, W) input. A 3-D input is taken as (N, C, L)."""
    x = check_tensor(input, "dropout2d")
    _check_p(p)
    if x.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {x.ndim}-D input to dropout2d, which is deprecated; use dropout "
                      "for it (dropout2d expects 3D or 4D inputs)", stacklevel=2)
    if x.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L); use dropout1d for that",
                      stacklevel=2)
    return _channel_dropout(x, p, training, inplace, "dropout2d", _feature_shape(x, "dropout2d"))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    x = check_tensor(input, "dropout3d")
    _check_p(p)
    if x.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {x.ndim}-D input to dropout3d, which is deprecated; use dropout "
                      "for it (dropout3d expects 4D or 5D inputs)", stacklevel=2)
    if x.ndim == 5:
        shape = _feature_shape(x, "dropout3d")
    else:  # unbatched: channels are dim 0
        shape = (1, x._shape[0]) + (1,) * (x.ndim - 1) if x.ndim >= 1 else (1,)
    return _channel_dropout(x, p, training, inplace, "dropout3d", shape)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: keeps the mean and variance of self-normalising activations."""
    return _dropout(input, p, training, inplace, "alpha_dropout", check_tensor(input, "alpha_dropout")._shape,
                    True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels (dim 1)."""
    x = check_tensor(input, "feature_alpha_dropout")
    _check_p(p)
    shape = _feature_shape(x, "feature_alpha_dropout") if training and p > 0 else x._shape
    return _dropout(x, p, training, inplace, "feature_alpha_dropout", shape, True)


# ---- distances ---------------------------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Σ x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps)) along dim (inputs broadcast)."""
    check_tensor(x1, "cosine_similarity", "x1")
    check_tensor(x2, "cosine_similarity", "x2")
    d = dt.result_type(x1, x2)
    if not d.is_floating_point:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, yet common dtype is "
                           f"{d.name}")
    shape = broadcast_shapes(x1._shape, x2._shape)
    a, b = x1.to(d).expand(shape), x2.to(d).expand(shape)
    k = norm_dim(dim, len(shape), "cosine_similarity") if shape else 0
    from ._norm import _norm_zero_safe
    na, nb = _norm_zero_safe(a, 2.0, k), _norm_zero_safe(b, 2.0, k)
    # the clamp changes the value only: the gradient is the norm's, as in PyTorch
    na = na + (na.clamp_min(eps) - na).detach()
    nb = nb + (nb.clamp_min(eps) - nb).detach()
    return ((a / na) * (b / nb)).sum(k)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """‖x1 - x2 + eps‖_p over the last dim (inputs broadcast)."""
    check_tensor(x1, "pairwise_distance", "x1")
    check_tensor(x2, "pairwise_distance", "x2")
    diff = x1 - x2
    if not diff._dtype.is_floating_point:
        diff = diff.to(dt.get_default_dtype())
    from ..linalg import vector_norm
    if diff.ndim == 0:
        return vector_norm(diff + eps, p)
    return vector_norm(diff + eps, p, -1, keepdim)
