"""scaled_dot_product_attention (torch.nn.functional's), computed stably.

The backend op ``scaled_dot_product_attention`` takes q, k, v and an optional mask; the numpy
backend computes it a block of rows at a time so the (L, S) score matrices of the whole batch never
exist at once. With dropout (whose random numbers come from the frontend's generator), or on a
backend without that op (CUDA), an attention without a mask runs as two matmuls around the backend's
``attention_weights`` op (the scaled, optionally causal softmax and the dropout in one pass; one
pass back). Otherwise the frontend composes matmul, a masked softmax, dropout and matmul. Either way a row whose
keys are all masked gives zeros, as PyTorch's CPU kernel does, instead of NaN.

>>> import ember.nn.functional as F
>>> q = k = v = ember.ones(1, 2, 4)
>>> F.scaled_dot_product_attention(q, k, v).shape
ember.Size([1, 2, 4])
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._shape import broadcast_shapes
from .._tensor import Tensor, wrap
from ._activation import check_tensor
from ._embedding import dropout_words

__all__ = ["scaled_dot_product_attention"]


def _check(query, key, value, attn_mask, dropout_p, is_causal):
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        check_tensor(t, "scaled_dot_product_attention", name)
    q, k, v = query, key, value
    if q._dtype is not k._dtype or q._dtype is not v._dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{q._dtype.name} key.dtype: {k._dtype.name} and value.dtype: {v._dtype.name} instead.")
    if not q._dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected floating query, key and value, got {q._dtype.name}")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be at least 2 dimensional, but got query.dim: "
                           f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead.")
    if q._shape[-1] != k._shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key must have the same embedding size, got "
                           f"query {list(q._shape)} and key {list(k._shape)}")
    if k._shape[-2] != v._shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length, got "
                           f"key {list(k._shape)} and value {list(v._shape)}")
    if attn_mask is not None:
        check_tensor(attn_mask, "scaled_dot_product_attention", "attn_mask")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask._dtype is not dt.bool and attn_mask._dtype is not q._dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask._dtype.name} and query.dtype: {q._dtype.name} instead.")
    if not 0.0 <= float(dropout_p) <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def _gqa(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Repeat the key/value heads (dim -3) so each serves its group of query heads."""
    if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
        return k, v
    hq, hk, hv = q._shape[-3], k._shape[-3], v._shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query, got "
                           f"query heads {hq}, key heads {hk}, value heads {hv}")
    if hk != hq:
        k = k.repeat_interleave(hq // hk, -3)
    if hv != hq:
        v = v.repeat_interleave(hq // hv, -3)
    return k, v


def _composite(q, k, v, mask, scale, is_causal, dropout_p):
    scores = (q * scale) @ k.mT
    L, S = q._shape[-2], k._shape[-2]
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -math.inf) if mask._dtype is dt.bool else scores + mask
    if is_causal:
        from .._creation import ones
        upper = ones(L, S, dtype=dt.bool, device=q._device).triu(1)
        scores = scores.masked_fill(upper, -math.inf)
    if S == 0 or L == 0:  # nothing to normalise: (L, 0) @ (0, Ev) gives the zeros
        return scores @ v
    m = scores.amax(-1, keepdim=True).detach()
    m = m.where(m.isfinite(), 0.0)
    e = (scores - m).exp()
    denom = e.sum(-1, keepdim=True)
    p = e / denom.where(denom != 0, 1.0)  # rows with every key masked: p = 0, not 0/0
    if dropout_p > 0:
        from ._embedding import dropout
        p = dropout(p, dropout_p, True)
    return p @ v


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(query @ keyᵀ * scale + mask) @ value over the last two dims (batch dims broadcast).

    ``attn_mask``: bool (True = may attend) or additive float of query's dtype, broadcastable to
    (..., L, S); ``is_causal``: query i attends keys 0..i (top-left aligned); ``scale`` defaults to
    1/sqrt(E); ``dropout_p`` drops attention weights (with ember's generator); ``enable_gqa`` lets
    key/value have fewer heads (dim -3) than query, each serving a group of query heads.
    """
    _check(query, key, value, attn_mask, dropout_p, is_causal)
    q, k, v = query, key, value
    if enable_gqa:
        k, v = _gqa(q, k, v)
    batch = broadcast_shapes(q._shape[:-2], k._shape[:-2], v._shape[:-2])
    L, S, E, Ev = q._shape[-2], k._shape[-2], q._shape[-1], v._shape[-1]
    mask = attn_mask
    if mask is not None:
        full = broadcast_shapes(mask._shape, batch + (L, S))
        if full != batch + (L, S):
            raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape {list(mask._shape)} does not "
                               f"broadcast to the attention shape {list(batch + (L, S))}")
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    dropout_p = float(dropout_p)
    shape = batch + (L, Ev)
    be = q._device.backend
    if dropout_p == 0.0 and be.supports("scaled_dot_product_attention"):
        h = be.run("scaled_dot_product_attention", (q._h, k._h, v._h, None if mask is None else mask._h),
                   {"scale": scale, "is_causal": bool(is_causal)})
        return wrap(h, shape, q._dtype, q._device)
    if mask is None and dropout_p < 1.0 and be.supports("attention_weights"):
        return _with_weights_op(q, k, v, scale, bool(is_causal), dropout_p)
    return _composite(q, k, v, mask, scale, bool(is_causal), dropout_p)


def _with_weights_op(q: Tensor, k: Tensor, v: Tensor, scale: float, is_causal: bool, dropout_p: float) -> Tensor:
    """q kᵀ and the product with v as matmuls, the scaled (causal) softmax and dropout between them as the
    backend's one ``attention_weights`` op, which drops the weights dropout() would drop at this
    generator state (it reserves the same numbers from the same generator)."""
    scores = q @ k.mT
    attrs = {"scale": scale, "is_causal": is_causal, "dropout_p": dropout_p, "seed": 0, "offset": 0}
    if dropout_p > 0.0:
        attrs["seed"], attrs["offset"] = dropout_words(scores)
    hs = scores._device.backend.run("attention_weights", (scores._h,), attrs)
    return wrap(hs[1], scores._shape, scores._dtype, scores._device) @ v
