"""Attention weights with dropout as one op: the middle of scaled_dot_product_attention.

``attention_weights(scores)`` is ``softmax(scores * scale)`` over the last dim, keys after the query masked
when ``is_causal``, then dropout: it returns ``(weights, dropped)`` with ``dropped = weights * keep / (1 - p)``.
The keep mask is the one ``nn.functional.dropout`` would draw at the same generator state (uniforms of the
``rand`` stream at ``(seed, offset)``, float32 ones unless the scores are float64, kept where ``u >= p``),
so the fused and the composed attention drop the same weights. Its backward,
``attention_weights_backward(weights, dropped, grad)``, needs no random numbers: a weight was kept exactly
where ``dropped`` is nonzero or the weight is zero (and then its gradient is zero anyway).

The functions here are written against an array module ``xp``: the numpy backend runs them, and the CUDA
backend runs them for the dtypes and cases its kernels don't take.

>>> w, d = attention_weights(np.zeros((2, 3), np.float32), 1.0, True, 0.0, 0, 0)
>>> w.tolist()
[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
"""

from __future__ import annotations

import numpy as np

from .dropout import dropped_of, keep_scale
from .random import _uniform

__all__ = ["attention_weights", "attention_weights_backward", "weights_of", "backward_of", "keep_scale"]


def _work(dtype):
    """The dtype the softmax runs in: float32 for 16-bit floats, else the scores' own."""
    return np.dtype(np.float32) if np.dtype(dtype).itemsize == 2 else np.dtype(dtype)


def weights_of(xp, scores, scale: float, is_causal: bool, dropout_p: float, uniform):
    """(weights, dropped) for ``scores`` of shape (..., L, S); ``uniform(n, npdtype)`` gives the n uniforms
    of the op's stream (called only when ``dropout_p > 0``). ``dropped`` is ``weights`` when p = 0."""
    dtype = scores.dtype
    work = _work(dtype)
    x = scores.astype(work) * work.type(scale)
    if is_causal and x.ndim >= 2 and x.size:
        L, S = x.shape[-2:]
        x = xp.where(xp.triu(xp.ones((L, S), dtype=bool), 1), work.type(-np.inf), x)
    if x.size == 0:
        w = x.astype(dtype)
        return w, w
    m = x.max(axis=-1, keepdims=True)
    m = xp.where(xp.isfinite(m), m, work.type(0))  # rows of -inf only: exp(-inf) = 0, not NaN
    e = xp.exp(x - m)
    den = e.sum(axis=-1, keepdims=True)
    w = (e / xp.where(den == 0, work.type(1), den)).astype(dtype)
    if dropout_p == 0.0:
        return w, w
    return w, dropped_of(xp, w, dropout_p, uniform)[0]  # dropout's numbers: the same mask as F.dropout


def backward_of(xp, w, d, g, scale: float, dropout_p: float):
    """The scores' gradient for the gradient ``g`` of ``dropped``: ``w * (g' - sum(d * g)) * scale`` where
    ``g' = g / (1 - p)`` at the kept weights (``d != 0``) and 0 elsewhere; computed in float32 for 16-bit."""
    dtype = w.dtype
    work = _work(dtype)
    wf, df, gf = w.astype(work), d.astype(work), g.astype(work)
    if dropout_p == 0.0:
        gp = gf
    else:
        gp = xp.where(df != 0, gf * work.type(keep_scale(dtype, dropout_p)), work.type(0))
    dot = (df * gf).sum(axis=-1, keepdims=True)
    return (wf * (gp - dot) * work.type(scale)).astype(dtype, copy=False)


def attention_weights(scores, scale, is_causal, dropout_p, seed, offset):
    """The numpy backend's op (see the module docstring)."""
    return weights_of(np, np.asarray(scores), float(scale), bool(is_causal), float(dropout_p),
                      lambda n, npdtype: _uniform(seed, offset, n, npdtype))


def attention_weights_backward(weights, dropped, grad, scale, dropout_p):
    """The numpy backend's backward op: the scores' gradient (see :func:`backward_of`)."""
    return backward_of(np, weights, dropped, grad, float(scale), float(dropout_p))


OPS = {"attention_weights": attention_weights, "attention_weights_backward": attention_weights_backward}
