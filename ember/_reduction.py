"""Reductions (sum, mean, max, var, ...) and scans (cumsum, cummax, ...)."""

from __future__ import annotations

import math
from collections import namedtuple

from . import _dtype as dt
from ._elementwise import cast
from ._shape import norm_dim, reduced_shape
from ._tensor import Tensor, method, run, wrap

values_indices = namedtuple("values_indices", ["values", "indices"])


class return_types:  # noqa: N801 - mirrors torch.return_types
    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])
    sort = namedtuple("sort", ["values", "indices"])
    topk = namedtuple("topk", ["values", "indices"])
    kthvalue = namedtuple("kthvalue", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])
    var_mean = namedtuple("var_mean", ["var", "mean"])
    std_mean = namedtuple("std_mean", ["std", "mean"])
    aminmax = namedtuple("aminmax", ["min", "max"])
    slogdet = namedtuple("slogdet", ["sign", "logabsdet"])
    qr = namedtuple("qr", ["Q", "R"])
    svd = namedtuple("svd", ["U", "S", "Vh"])
    eigh = namedtuple("eigh", ["eigenvalues", "eigenvectors"])


def _dims(dim, ndim: int, op: str):
    """None (every dim) or a sorted tuple of normalised dims (``()`` for a 0-d tensor).

    An int or a sequence; a 0-d tensor takes dims 0 and -1; a repeated dim is an error, and an
    empty sequence means every dim (PyTorch's rule for sum/mean/amax...).
    """
    if dim is None:
        return None
    if isinstance(dim, int):
        d = norm_dim(dim, ndim, op)
        return (d,) if ndim else ()
    dims = [norm_dim(d, ndim, op) for d in dim]
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"{op}: dim {d} appears multiple times in the list of dims")
        seen.add(d)
    if not dims:
        return None
    return tuple(sorted(dims)) if ndim else ()


def _reduce(op: str, x: Tensor, dim, keepdim: bool, out_dtype: dt.dtype, **attrs) -> Tensor:
    dims = _dims(dim, x.ndim, op)
    if dims is not None and len(dims) == x.ndim and x.ndim:
        dims = None if not keepdim else dims
    shape = reduced_shape(x._shape, dims, keepdim)
    h = x._device.backend.run(op, (x._h,), {"dim": dims, "keepdim": keepdim, **attrs})
    return wrap(h, shape, out_dtype, x._device)


def _sum_dtype(x: Tensor, dtype) -> dt.dtype:
    if dtype is not None:
        return dt.as_dtype(dtype)
    return dt.int64 if x._dtype.category < 2 else x._dtype


@method
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (all dims by default); integer and bool inputs sum to int64."""
    d = _sum_dtype(input, dtype)
    return _reduce("sum", input, dim, keepdim, d, dtype=d)


@method
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum treating NaN as zero."""
    d = _sum_dtype(input, dtype)
    if not input._dtype.is_floating_point:
        return sum(input, dim, keepdim, dtype=d)
    return _reduce("nansum", input, dim, keepdim, d, dtype=d)


@method
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product over ``dim`` (one dim, or all by default)."""
    d = _sum_dtype(input, dtype)
    return _reduce("prod", input, dim, keepdim, d, dtype=d)


def _float_dtype(x: Tensor, dtype, op: str) -> dt.dtype:
    if dtype is not None:
        d = dt.as_dtype(dtype)
    else:
        d = x._dtype
    if not d.is_floating_point:
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {x._dtype.name.capitalize()}")
    return d


@method
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``dim``; floating inputs only (or pass ``dtype``)."""
    d = _float_dtype(input, dtype, "mean")
    return _reduce("mean", input, dim, keepdim, d, dtype=d)


@method
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean of the non-NaN elements."""
    _float_dtype(input, dtype, "nanmean")
    keep = ~input.isnan()
    return nansum(input, dim, keepdim, dtype=dtype) / sum(keep, dim, keepdim).to(dtype or input._dtype)


def _check_nonempty(x: Tensor, dims, op: str, full_error=RuntimeError):
    """Reductions without an identity (max, argmax...) refuse empty input, as PyTorch does:
    ``full_error`` without a dim (RuntimeError for max/amax, IndexError for argmax), IndexError
    for a zero-size reduced dim."""
    if x.numel() == 0:
        if dims is None:
            raise full_error(f"{op}(): Expected reduction dim to be specified for input.numel() == 0 (input shape "
                             f"{list(x._shape)}). Specify the reduction dim with the 'dim' argument.")
        for d in dims:
            if x._shape[d] == 0:
                raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (input shape "
                                 f"{list(x._shape)}).")


def select_evenly(input: Tensor, fn, dims, keepdim: bool) -> Tensor:
    """``fn(input)``: a value a reduction over ``dims`` (a tuple, or None for all) selects from
    input, whose gradient is shared evenly by the elements of input equal to it, NaN matching NaN.
    That is PyTorch's convention for max(), min(), median() of all elements and the inf-norm
    (amax/amin/max(dim) differ), so such values go through the backend's ``even_select``."""
    from ._elementwise import tracks_grad
    if not tracks_grad(input) or not input._device.backend.supports("even_select"):
        return fn(input)
    v = fn(input.detach())
    return run("even_select", (input, v), {"dim": dims, "keepdim": keepdim}, v._shape, v._dtype)


def _amax_amin(op: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    _check_nonempty(input, _dims(dim, input.ndim, op), op)
    return _reduce(op, input, dim, keepdim, input._dtype)


@method
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Maximum over ``dim`` (all dims by default, or with ``dim=()``); NaN propagates.

    >>> ember.amax(ember.tensor([[1, 5], [7, 2]]), dim=1)
    tensor([5, 7])
    """
    return _amax_amin("amax", input, dim, keepdim)


@method
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Minimum over ``dim`` (all dims by default); NaN propagates."""
    return _amax_amin("amin", input, dim, keepdim)


@method
def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """(amin, amax) over one dim or every dim."""
    if input.numel() == 0 and (dim is None or input._shape[norm_dim(dim, input.ndim, "aminmax")] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity")
    d = dim if dim is not None else ()
    return return_types.aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


def _extreme(op: str, input: Tensor, dim, keepdim, other):
    if isinstance(dim, Tensor):  # max(a, b): elementwise
        other, dim = dim, None
    if other is not None:
        from ._elementwise import maximum, minimum
        return (maximum if op == "max" else minimum)(input, other)
    if dim is None:
        _check_nonempty(input, None, op)
        return select_evenly(input, lambda x: _reduce("a" + op, x, None, False, x._dtype), None, False)
    d = norm_dim(dim, input.ndim, op)
    _check_nonempty(input, (d,) if input.ndim else (), op)
    shape = reduced_shape(input._shape, (d,) if input.ndim else None, keepdim)
    v, i = input._device.backend.run(op + "_dim", (input._h,), {"dim": d if input.ndim else None, "keepdim": keepdim}) \
        if input.ndim else (input._device.backend.run("copy", (input._h,), {}),
                            input._device.backend.run("full", (), {"shape": (), "value": 0, "dtype": dt.int64}))
    rt = return_types.max if op == "max" else return_types.min
    return rt(wrap(v, shape, input._dtype, input._device), wrap(i, shape, dt.int64, input._device))


@method
def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):  # noqa: A001
    """max(x): the largest value; max(x, dim): (values, indices); max(x, y): elementwise."""
    return _extreme("max", input, dim, keepdim, other)


@method
def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):  # noqa: A001
    """min(x): the smallest value; min(x, dim): (values, indices); min(x, y): elementwise."""
    return _extreme("min", input, dim, keepdim, other)


def _arg(op: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    if input._dtype is dt.bool:
        raise RuntimeError(f"{op}(): does not support bool input; convert it with .int() or .byte() first")
    if dim is None:
        _check_nonempty(input, None, op, IndexError)
        shape = (1,) * input.ndim if keepdim else ()
        return wrap(input._device.backend.run(op, (input._h,), {"dim": None, "keepdim": keepdim}),
                    shape, dt.int64, input._device)
    d = norm_dim(dim, input.ndim, op)
    _check_nonempty(input, (d,) if input.ndim else (), op)
    if not input.ndim:
        return wrap(input._device.backend.run("full", (), {"shape": (), "value": 0, "dtype": dt.int64}),
                    (), dt.int64, input._device)
    shape = reduced_shape(input._shape, (d,), keepdim)
    h = input._device.backend.run(op, (input._h,), {"dim": d, "keepdim": keepdim})
    return wrap(h, shape, dt.int64, input._device)


@method
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the maximum (of the flattened tensor when dim is None); the first NaN wins."""
    return _arg("argmax", input, dim, keepdim)


@method
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the minimum."""
    return _arg("argmin", input, dim, keepdim)


def _all_any(op: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    if isinstance(dim, (tuple, list)) and not dim:
        r = run("ne", (input, 0), {}, input._shape, dt.bool)  # PyTorch: an empty dim list reduces nothing
    else:
        r = _reduce(op, input, dim, keepdim, dt.bool)
    return cast(r, dt.uint8) if input._dtype is dt.uint8 else r  # uint8 in, uint8 out (PyTorch)


@method
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (over dim) is nonzero.

    >>> ember.all(ember.tensor([[1, 0], [2, 3]]), dim=1)
    tensor([False,  True])
    """
    return _all_any("all", input, dim, keepdim)


@method
def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where some element (over dim) is nonzero."""
    return _all_any("any", input, dim, keepdim)


def _correction(unbiased, correction) -> float:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


@method
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Variance over dim with Bessel's ``correction`` (1 by default; 0 for the population)."""
    if isinstance(unbiased, (int, tuple, list)) and not isinstance(unbiased, bool):
        dim, unbiased = unbiased, None  # var(x, 1) means dim=1
    _float_dtype(input, None, "var")
    # the dims are passed as given, even when they are all of them: PyTorch's gradient differs
    # between var(x) and var(x, dim=<every dim>) when correction >= N
    dims = _dims(dim, input.ndim, "var")
    attrs = {"dim": dims, "keepdim": keepdim, "correction": _correction(unbiased, correction)}
    h = input._device.backend.run("var", (input._h,), attrs)
    return wrap(h, reduced_shape(input._shape, dims, keepdim), input._dtype, input._device)


@method
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Standard deviation: sqrt(var)."""
    v = var(input, dim, unbiased, keepdim, correction=correction)
    from ._elementwise import tracks_grad, where
    if tracks_grad(v):
        # PyTorch's std gradient is 0 where std is 0 (sqrt's alone would be inf * 0 = NaN there):
        # where() passes no gradient to v at those elements, whatever sqrt's rule gives
        v = where(v == 0, 0.0, v)
    return v.sqrt()


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """(var, mean) over dim."""
    return return_types.var_mean(var(input, dim, unbiased, keepdim, correction=correction),
                                 mean(input, dim, keepdim))


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """(std, mean) over dim."""
    return return_types.std_mean(std(input, dim, unbiased, keepdim, correction=correction),
                                 mean(input, dim, keepdim))


@method
def logsumexp(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over dim, computed stably."""
    x = input if input._dtype.is_floating_point else cast(input, dt.get_default_dtype())
    if x._device.backend.supports("logsumexp"):
        dims = _dims(dim, x.ndim, "logsumexp")
        return wrap(x._device.backend.run("logsumexp", (x._h,), {"dim": dims, "keepdim": keepdim}),
                    reduced_shape(x._shape, dims, keepdim), x._dtype, x._device)
    if x.numel() == 0:
        return sum(x.exp(), dim, keepdim).log()
    m = amax(x, dim if dim is not None else (), keepdim=True)
    m = m.masked_fill(m.isinf(), 0.0)
    out = sum((x - m).exp(), dim, keepdim=True).log() + m
    dims = _dims(dim, x.ndim, "logsumexp")
    if not keepdim:
        out = out.reshape(reduced_shape(x._shape, dims, False))
    return out


@method
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Vector p-norm over dim (or the whole tensor); 'fro' is the 2-norm; 'nuc' needs 2 dims."""
    from . import linalg
    if p == "nuc":
        return linalg.matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if p == "fro":
        p = 2
    return linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)


def _scan(op: str, input: Tensor, dim: int, dtype) -> Tensor:
    d = norm_dim(dim, input.ndim, op)
    out_dtype = _sum_dtype(input, dtype)
    x = input if input.ndim else input.reshape(1)
    h = x._device.backend.run(op, (x._h,), {"dim": d if input.ndim else 0, "dtype": out_dtype})
    return wrap(h, input._shape, out_dtype, input._device) if input.ndim else \
        wrap(h, (1,), out_dtype, input._device).reshape(())


@method
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sum along dim (integers accumulate in int64)."""
    return _scan("cumsum", input, dim, dtype)


@method
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running product along dim."""
    return _scan("cumprod", input, dim, dtype)


def _cum_extreme(op: str, input: Tensor, dim: int):
    d = norm_dim(dim, input.ndim, op)
    x = input if input.ndim else input.reshape(1)
    v, i = x._device.backend.run(op, (x._h,), {"dim": d if input.ndim else 0})
    rt = getattr(return_types, op)
    v, i = wrap(v, x._shape, x._dtype, x._device), wrap(i, x._shape, dt.int64, x._device)
    if not input.ndim:
        v, i = v.reshape(()), i.reshape(())
    return rt(v, i)


@method
def cummax(input: Tensor, dim: int):
    """(running max, index of the latest position holding it) along dim."""
    return _cum_extreme("cummax", input, dim)


@method
def cummin(input: Tensor, dim: int):
    """(running min, index of the latest position holding it) along dim."""
    return _cum_extreme("cummin", input, dim)


@method
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(x))) along dim, computed stably."""
    d = norm_dim(dim, input.ndim, "logcumsumexp")
    x = input if input._dtype.is_floating_point else cast(input, dt.get_default_dtype())
    return run("logcumsumexp", (x,), {"dim": d}, x._shape, x._dtype) if x.ndim else x.clone()


@method
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of nonzero elements over dim."""
    return sum(input != 0, dim)


def numel(input: Tensor) -> int:
    return math.prod(input._shape)
