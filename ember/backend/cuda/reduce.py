"""Reductions and scans of the CUDA backend, written against an array module ``xp``.

Half-precision inputs accumulate in float32 and round once (as the numpy reference and PyTorch do).
Scans that CuPy lacks (cummax, cummin, logcumsumexp) are left to the backend's host path.
"""

from __future__ import annotations

import numpy as np

from ._util import LOW, acc_dtype, axis


def build(xp) -> dict:
    def _acc(x):
        return x.astype(np.float32) if x.dtype in LOW else x

    def _red(fn):
        def run(x, dim, keepdim, dtype):
            out = fn(_acc(x), axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype))
            return out.astype(dtype.np, copy=False)
        return run

    def _mean(x, dim, keepdim, dtype):
        a = _acc(x)
        if a.size == 0 or (dim is not None and any(x.shape[d] == 0 for d in dim)):
            s = xp.sum(a, axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype))
            return (s * np.nan).astype(dtype.np)  # 0/0, as PyTorch gives for an empty mean
        return xp.mean(a, axis=axis(dim), keepdims=keepdim, dtype=acc_dtype(dtype)).astype(dtype.np, copy=False)

    def _ext(fn):
        def run(x, dim, keepdim):
            return fn(x, axis=axis(dim), keepdims=keepdim)
        return run

    def _nan_arg(fn, x, ax, keepdims):
        """The first NaN of a row wins, as in PyTorch; rows without NaN take the first extreme."""
        r = fn(x, axis=ax, keepdims=keepdims)
        if x.dtype.kind == "f" or x.dtype in LOW:
            nan = xp.isnan(x)
            r = xp.where(xp.any(nan, axis=ax, keepdims=keepdims), xp.argmax(nan, axis=ax, keepdims=keepdims), r)
        return r

    def _arg(fn):
        def run(x, dim, keepdim):
            if dim is None:
                r = _nan_arg(fn, x.reshape(-1), None, False)
                return r.astype(np.int64).reshape((1,) * x.ndim if keepdim else ())
            return _nan_arg(fn, x, dim, keepdim).astype(np.int64, copy=False)
        return run

    def _var(x, dim, correction, keepdim):
        a = _acc(x)
        n = a.size if dim is None else int(np.prod([x.shape[d] for d in dim]))
        centred = a - xp.mean(a, axis=axis(dim), keepdims=True)
        ss = xp.sum(centred * centred, axis=axis(dim), keepdims=keepdim)
        # PyTorch divides by max(0, n - correction): inf (or NaN for 0/0) when n <= correction
        return (ss / float(max(0.0, n - correction))).astype(x.dtype, copy=False)

    def _scan(fn):
        def run(x, dim, dtype):
            return fn(_acc(x), axis=dim, dtype=acc_dtype(dtype)).astype(dtype.np, copy=False)
        return run

    def _extreme_dim(argname):
        argf = _arg(getattr(xp, argname))

        def run(x, dim, keepdim):
            idx = argf(x, dim, True)
            values = xp.take_along_axis(x, idx, axis=dim)
            if not keepdim:
                values, idx = values.squeeze(dim), idx.squeeze(dim)
            return values, idx
        return run

    def _even_select(x, v, dim, keepdim):
        return v.copy()

    return {
        "sum": _red(xp.sum), "nansum": _red(xp.nansum), "prod": _red(xp.prod), "mean": _mean,
        "amax": _ext(xp.max), "amin": _ext(xp.min), "all": _ext(xp.all), "any": _ext(xp.any),
        "argmax": _arg(xp.argmax), "argmin": _arg(xp.argmin), "var": _var,
        "cumsum": _scan(xp.cumsum), "cumprod": _scan(xp.cumprod), "even_select": _even_select,
        "max_dim": _extreme_dim("argmax"), "min_dim": _extreme_dim("argmin"),
    }
