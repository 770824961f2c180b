"""Composite ops the numpy backend implements directly because a fused numpy version is faster
than the frontend's decomposition (fewer passes, no temporaries)."""

from __future__ import annotations

import numpy as np

from ._util import LOW_PRECISION


def _softmax(x, dim):
    work = x.astype(np.float32) if x.dtype in LOW_PRECISION else x
    out = work - np.max(work, axis=dim, keepdims=True)  # one new buffer, then in place
    np.exp(out, out=out)
    out /= np.sum(out, axis=dim, keepdims=True)
    return out.astype(x.dtype, copy=False)


def _log_softmax(x, dim):
    work = x.astype(np.float32) if x.dtype in LOW_PRECISION else x
    m = np.max(work, axis=dim, keepdims=True)
    m[~np.isfinite(m)] = 0
    out = work - m
    lse = np.log(np.sum(np.exp(out), axis=dim, keepdims=True))
    out -= lse
    return out.astype(x.dtype, copy=False)


def _logsumexp(x, dim, keepdim):
    work = x.astype(np.float32) if x.dtype in LOW_PRECISION else x
    axis = None if dim is None else tuple(dim)
    if work.size == 0:
        return np.log(np.sum(np.exp(work), axis=axis, keepdims=keepdim)).astype(x.dtype)
    m = np.max(work, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)  # all -inf (or inf) rows: avoid inf - inf
    out = np.log(np.sum(np.exp(work - m), axis=axis, keepdims=True)) + m
    if not keepdim:
        out = out.reshape(()) if axis is None else np.squeeze(out, axis=axis)
    return out.astype(x.dtype, copy=False)


OPS = {"softmax": _softmax, "log_softmax": _log_softmax, "logsumexp": _logsumexp}
