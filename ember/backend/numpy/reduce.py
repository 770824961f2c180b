"""Reductions and scans of the numpy backend. ``dim`` is a tuple of dims or None (all dims)."""

from __future__ import annotations

import numpy as np

from ._util import LOW_PRECISION, axis


def _acc(x):
    """Half-precision inputs accumulate in float32, as PyTorch's CPU reductions do."""
    return x.astype(np.float32) if x.dtype in LOW_PRECISION else x


def _acc_dtype(dtype):
    """The numpy accumulation dtype for an ember result dtype (float32 for half precision)."""
    return np.float32 if dtype.np in LOW_PRECISION else dtype.np


def _sum(x, dim, keepdim, dtype):
    out = np.sum(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=_acc_dtype(dtype))
    return np.asarray(out).astype(dtype.np, copy=False)


def _nansum(x, dim, keepdim, dtype):
    # like sum, the elements are converted to the result dtype before they are added
    out = np.nansum(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=_acc_dtype(dtype))
    return np.asarray(out).astype(dtype.np, copy=False)


def _prod(x, dim, keepdim, dtype):
    out = np.prod(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=_acc_dtype(dtype))
    return np.asarray(out).astype(dtype.np, copy=False)


def _mean(x, dim, keepdim, dtype):
    out = np.mean(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=_acc_dtype(dtype))
    return np.asarray(out).astype(dtype.np, copy=False)


def _amax(x, dim, keepdim):
    return np.asarray(np.max(x, axis=axis(dim), keepdims=keepdim))


def _amin(x, dim, keepdim):
    return np.asarray(np.min(x, axis=axis(dim), keepdims=keepdim))


def _all(x, dim, keepdim):
    return np.asarray(np.all(x, axis=axis(dim), keepdims=keepdim))


def _any(x, dim, keepdim):
    return np.asarray(np.any(x, axis=axis(dim), keepdims=keepdim))


def _arg(fn):
    def run(x, dim, keepdim):
        if dim is None:
            r = fn(x.reshape(-1))
            return np.asarray(r, dtype=np.int64).reshape((1,) * x.ndim if keepdim else ())
        return np.asarray(fn(x, axis=dim, keepdims=keepdim), dtype=np.int64)
    return run


def _var(x, dim, correction, keepdim):
    a = _acc(x)
    n = a.size if dim is None else int(np.prod([x.shape[d] for d in dim]))
    centred = a - np.mean(a, axis=axis(dim), keepdims=True)
    ss = np.sum(centred * centred, axis=axis(dim), keepdims=keepdim)
    # PyTorch divides by max(0, n - correction): inf (or NaN for 0/0) when n <= correction
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(ss, max(0.0, n - correction), out=...)
    return out.astype(x.dtype, copy=False)


def _cumsum(x, dim, dtype):
    return np.cumsum(_acc(x), axis=dim, dtype=_acc_dtype(dtype)).astype(dtype.np, copy=False)


def _cumprod(x, dim, dtype):
    return np.cumprod(_acc(x), axis=dim, dtype=_acc_dtype(dtype)).astype(dtype.np, copy=False)


def _cum_extreme(ufunc):
    def run(x, dim):
        if x.size == 0:
            return x.copy(), np.zeros(x.shape, np.int64)
        values = ufunc.accumulate(x, axis=dim)
        shape = [1] * x.ndim
        shape[dim] = x.shape[dim]
        pos = np.arange(x.shape[dim], dtype=np.int64).reshape(shape)
        # the latest position that holds the running extreme; a NaN takes over and sticks
        if x.dtype.kind == "f" or x.dtype in LOW_PRECISION:
            hit = (x == values) | np.isnan(x)
        else:
            hit = x == values
        idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=dim)
        return values, idx
    return run


def _logcumsumexp(x, dim):
    return np.logaddexp.accumulate(_acc(x), axis=dim).astype(x.dtype, copy=False)


def _extreme_dim(argfn):
    def run(x, dim, keepdim):
        idx = argfn(x, axis=dim, keepdims=True)
        values = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return values, idx.astype(np.int64, copy=False)
    return run


def _nan_arg(fn):
    """argmax/argmin that pick the first NaN of a row holding one, as PyTorch does (NaN is the
    extreme); rows without NaN keep numpy's first extreme."""
    def run(x, axis, keepdims):
        if x.dtype.kind == "f" or x.dtype in LOW_PRECISION:
            nan = np.isnan(x)
            if nan.any():
                first_nan = np.argmax(nan, axis=axis, keepdims=keepdims)
                has_nan = np.any(nan, axis=axis, keepdims=keepdims)
                return np.where(has_nan, first_nan, fn(x, axis=axis, keepdims=keepdims))
        return fn(x, axis=axis, keepdims=keepdims)
    return run


def _even_select(x, v, dim, keepdim):
    # the value itself; the op exists for its gradient (shared by the elements of x equal to v)
    return np.array(v, copy=True)


_argmax_nan = _nan_arg(np.argmax)
_argmin_nan = _nan_arg(np.argmin)

OPS = {
    "sum": _sum, "nansum": _nansum, "prod": _prod, "mean": _mean, "amax": _amax, "amin": _amin,
    "all": _all, "any": _any,
    "argmax": _arg(lambda a, axis=None, keepdims=False: _argmax_nan(a, axis, keepdims)),
    "argmin": _arg(lambda a, axis=None, keepdims=False: _argmin_nan(a, axis, keepdims)),
    "var": _var, "cumsum": _cumsum, "cumprod": _cumprod,
    "cummax": _cum_extreme(np.maximum), "cummin": _cum_extreme(np.minimum),
    "logcumsumexp": _logcumsumexp, "even_select": _even_select,
    "max_dim": _extreme_dim(lambda a, axis, keepdims: _argmax_nan(a, axis, keepdims)),
    "min_dim": _extreme_dim(lambda a, axis, keepdims: _argmin_nan(a, axis, keepdims)),
}
