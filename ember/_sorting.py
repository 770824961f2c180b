"""Sorting, selection and counting: sort, argsort, topk, kthvalue, median, mode, quantile, unique,
searchsorted, bucketize, bincount, histc.

Backend primitives: ``sort``, ``argsort``, ``topk``, ``kthvalue``, ``searchsorted``, ``bincount``,
``histc`` and the data-dependent ``unique``/``unique_consecutive``. median, nanmedian, mode,
quantile and msort are compositions of them with other ember ops.

Orders are PyTorch's: NaN sorts after +inf (first when descending) and -0.0 equals 0.0. Sorting
here is always stable. Where PyTorch's CPU kernels are not (``sort`` without ``stable=True``,
``topk``, ``kthvalue``, ``median`` and ``mode`` with tied values) the *index* picked among equal
values may differ from PyTorch's; the values never do.

>>> ember.sort(ember.tensor([3.0, float("nan"), 1.0]))
sort(values=tensor([1., 3., nan]), indices=tensor([2, 0, 1]))
"""

# ruff: noqa: A002 - PyTorch's argument names (input, min, max, sorted, ord) shadow builtins

from __future__ import annotations

from collections import namedtuple

from . import _dtype as dt
from ._reduction import return_types
from ._shape import norm_dim
from ._tensor import Tensor, method, same_device, wrap

__all__ = [
    "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "quantile",
    "nanquantile", "unique", "unique_consecutive", "searchsorted", "bucketize", "bincount", "histc",
]

nanmedian_type = namedtuple("nanmedian", ["values", "indices"])


def _tensor_arg(x, op: str, name: str = "input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _pair(op: str, x: Tensor, attrs: dict, shape: tuple):
    """Run a (values, int64 indices) primitive."""
    v, i = x._device.backend.run(op, (x._h,), attrs)
    return wrap(v, shape, x._dtype, x._device), wrap(i, shape, dt.int64, x._device)


def _index0(x: Tensor, shape=()) -> Tensor:
    from ._creation import zeros
    return zeros(shape, dtype=dt.int64, device=x._device)


@method
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """(values, indices) sorted along ``dim``; ties keep their input order (the sort is stable).

    >>> ember.sort(ember.tensor([2, 1, 2]), descending=True).indices
    tensor([0, 2, 1])
    """
    _tensor_arg(input, "sort")
    d = norm_dim(dim, input.ndim, "sort")
    if input.ndim == 0:
        return return_types.sort(input.clone(), _index0(input))
    v, i = _pair("sort", input, {"dim": d, "descending": bool(descending), "stable": True}, input._shape)
    return return_types.sort(v, i)


@method
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """Indices that sort ``input`` along ``dim`` (stable)."""
    _tensor_arg(input, "argsort")
    d = norm_dim(dim, input.ndim, "argsort")
    if input.ndim == 0:
        return _index0(input)
    h = input._device.backend.run("argsort", (input._h,), {"dim": d, "descending": bool(descending), "stable": True})
    return wrap(h, input._shape, dt.int64, input._device)


@method
def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dim."""
    return sort(input, 0).values


@method
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The k largest (or smallest) elements along ``dim`` and their indices, in sorted order (also
    for ``sorted=False``, whose order PyTorch leaves unspecified). NaN counts as the largest value.

    >>> ember.topk(ember.tensor([1.0, 5.0, 3.0]), 2)
    topk(values=tensor([5., 3.]), indices=tensor([1, 2]))
    """
    _tensor_arg(input, "topk")
    if input._dtype is dt.bool:
        raise RuntimeError("topk does not support bool dtypes; convert the input with .int() first")
    d = norm_dim(dim, input.ndim, "topk")
    n = input._shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k={k}, size of dim {dim} is {n})")
    if input.ndim == 0:
        return return_types.topk(input.clone(), _index0(input))
    shape = input._shape[:d] + (k,) + input._shape[d + 1:]
    v, i = _pair("topk", input, {"k": int(k), "dim": d, "largest": bool(largest), "sorted": True}, shape)
    return return_types.topk(v, i)


def _check_reduce_dim(x: Tensor, d: int, op: str):
    if x.ndim and x._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size "
                         f"(input shape {list(x._shape)})")


def _no_bool(x: Tensor, op: str):
    if x._dtype is dt.bool:
        raise NotImplementedError(f"{op}: not implemented for bool tensors; convert the input with .int() first")


@method
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The k-th smallest element along ``dim`` (k counts from 1) and its index."""
    _tensor_arg(input, "kthvalue")
    _no_bool(input, "kthvalue")
    d = norm_dim(dim, input.ndim, "kthvalue")
    _check_reduce_dim(input, d, "kthvalue")
    n = input._shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    if input.ndim == 0:
        return return_types.kthvalue(input.clone(), _index0(input))
    shape = input._shape[:d] + ((1,) if keepdim else ()) + input._shape[d + 1:]
    v, i = _pair("kthvalue", input, {"k": int(k), "dim": d, "keepdim": bool(keepdim)}, shape)
    return return_types.kthvalue(v, i)


def _median_pick(input: Tensor, d: int, keepdim: bool, ignore_nan: bool):
    """Sort along d and pick the lower median; NaN wins unless ignored (then the median of the rest)."""
    v, i = sort(input, d, stable=True)
    n = input._shape[d]
    if input._dtype.is_floating_point:
        valid = (~v.isnan()).sum(d, keepdim=True)
        if ignore_nan:
            pos = ((valid - 1).clamp(min=0)) // 2
        else:  # the first NaN (sorted last) is the median of a slice that has one
            pos = _nan_or_mid(valid, n)
    else:
        from ._creation import full
        pos = full(input._shape[:d] + (1,) + input._shape[d + 1:], (n - 1) // 2, dtype=dt.int64,
                   device=input._device)
    values, indices = v.gather(d, pos), i.gather(d, pos)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values, indices


def _nan_or_mid(valid: Tensor, n: int) -> Tensor:
    from ._elementwise import where
    return where(valid < n, valid, (n - 1) // 2)


def _median_dim(op: str, input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    _no_bool(input, op)
    d = norm_dim(dim, input.ndim, op)
    _check_reduce_dim(input, d, op)
    if input.ndim == 0:
        return input.clone(), _index0(input)
    return _median_pick(input, d, keepdim, ignore_nan)


def _median_all(op: str, input: Tensor, ignore_nan: bool) -> Tensor:
    from ._reduction import select_evenly  # the gradient goes to every element equal to the median
    _no_bool(input, op)
    if input.numel() == 0:
        if not input._dtype.is_floating_point:
            raise RuntimeError(f"{op}(): the median of an empty {input._dtype.name} tensor is undefined")
        from ._creation import full
        return select_evenly(input, lambda x: full((), float("nan"), dtype=x._dtype, device=x._device), None, False)
    return select_evenly(input, lambda x: _median_pick(x.reshape(-1), 0, False, ignore_nan)[0], None, False)


@method
def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """median(x): the lower median of all elements (NaN if any is NaN). median(x, dim): (values,
    indices) of the lower median along ``dim``.

    >>> ember.median(ember.tensor([4.0, 1.0, 3.0, 2.0]))
    tensor(2.)
    """
    _tensor_arg(input, "median")
    if dim is None:
        return _median_all("median", input, False)
    return return_types.median(*_median_dim("median", input, dim, keepdim, False))


@method
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """median that ignores NaN (NaN only where a whole slice is NaN)."""
    _tensor_arg(input, "nanmedian")
    if dim is None:
        return _median_all("nanmedian", input, True)
    return nanmedian_type(*_median_dim("nanmedian", input, dim, keepdim, True))


@method
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the index of
    its last occurrence."""
    _tensor_arg(input, "mode")
    d = norm_dim(dim, input.ndim, "mode")
    _check_reduce_dim(input, d, "mode")
    if input.ndim == 0:
        return return_types.mode(input.clone(), _index0(input))
    from ._creation import arange, ones
    from ._elementwise import where
    from ._movement import cat
    v, i = sort(input, d, stable=True)
    n = input._shape[d]
    # run lengths of equal values in the sorted slice; the first maximum ends the smallest mode
    lead = ones(input._shape[:d] + (1,) + input._shape[d + 1:], dtype=dt.bool, device=input._device)
    new_run = cat([lead, v.narrow(d, 1, n - 1) != v.narrow(d, 0, n - 1)], d)
    pos = arange(n, device=input._device).reshape((n,) + (1,) * (input.ndim - d - 1)).expand(input._shape)
    start = where(new_run, pos, 0).cummax(d).values
    best = (pos - start).argmax(d, keepdim=True)
    values, indices = v.gather(d, best), i.gather(d, best)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return return_types.mode(values, indices)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    _tensor_arg(input, op)
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {input._dtype.name}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    from ._creation import tensor
    from ._elementwise import where
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got shape {list(q._shape)}")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor ({q._dtype.name} vs "
                               f"{input._dtype.name})")
        same_device(op, input, q)
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):  # a sync, as in PyTorch
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        qt = q.reshape(-1)
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        qt = tensor([float(q)], dtype=input._dtype, device=input._device)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = norm_dim(dim, input.ndim, op)
        x = input if input.ndim else input.reshape(1)
    xs = sort(x.movedim(d, -1), -1, stable=True).values  # (*rest, n), NaN last
    n = xs._shape[-1]
    nq = qt._shape[0]
    if ignore_nan:
        valid = (~xs.isnan()).sum(-1, keepdim=True).to(input._dtype)
        ranks = (qt * (valid - 1)).clamp(min=0)  # all NaN: rank 0, a NaN (PyTorch picks the same one)
    else:
        ranks = (qt * (n - 1)).expand(xs._shape[:-1] + (nq,))
        ranks = where(xs.narrow(-1, n - 1, 1).isnan(), float(n - 1), ranks)  # any NaN: the result is NaN
    ranks = ranks.expand(xs._shape[:-1] + (nq,))
    if interpolation == "nearest":
        out = xs.gather(-1, ranks.round().long())
    else:
        below, above = ranks.floor().long(), ranks.ceil().long()
        if interpolation == "lower":
            out = xs.gather(-1, below)
        elif interpolation == "higher":
            out = xs.gather(-1, above)
        else:
            weight = 0.5 if interpolation == "midpoint" else ranks - below.to(input._dtype)
            out = xs.gather(-1, below).lerp(xs.gather(-1, above), weight)
    out = out.movedim(-1, 0)  # (Q, *rest)
    if keepdim:
        out = out.reshape((nq,) + (1,) * input.ndim) if dim is None else out.unsqueeze(d + 1)
        if input.ndim == 0:
            out = out.reshape((nq,))
    return out.squeeze(0) if scalar_q else out


@method
def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles along ``dim`` (of all elements when None). ``q`` is a float or a 1-d tensor
    (its values become a new first dim). NaN anywhere in a slice gives NaN.

    >>> ember.quantile(ember.tensor([0.0, 1.0, 2.0, 3.0]), 0.5)
    tensor(1.5000)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@method
def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """quantile ignoring NaN (NaN only where a whole slice is NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def _dynamic(op: str, x: Tensor, attrs: dict, dtypes: tuple) -> tuple:
    b = x._device.backend
    hs = b.run(op, (x._h,), attrs)
    return tuple(wrap(h, tuple(b.shape(h)), d, x._device) for h, d in zip(hs, dtypes))


def _unique_dim_check(x: Tensor, dim, op: str):
    if dim is None:
        return None
    d = norm_dim(dim, x.ndim, op)
    if x.ndim == 0:
        raise IndexError(f"{op}: dim {dim} is out of range for a 0-d tensor")
    if any(n == 0 for i, n in enumerate(x._shape) if i != d):
        raise RuntimeError(f"{op}: There are 0 sized dimensions, and they aren't selected, so unique cannot "
                           f"be applied (shape {list(x._shape)}, dim {dim})")
    return d


def _unique_result(res: tuple, return_inverse: bool, return_counts: bool):
    if not return_inverse and not return_counts:
        return res[0]
    return res


@method
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None):
    """The distinct elements (or slices along ``dim``) in ascending order; optionally the index of
    each input element in the result and the count of each value. NaNs are all distinct. The
    result is sorted also for ``sorted=False``, as on PyTorch's CPU.

    >>> ember.unique(ember.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    """
    _tensor_arg(input, "unique")
    d = _unique_dim_check(input, dim, "unique")
    attrs = {"sorted": True, "return_inverse": bool(return_inverse), "return_counts": bool(return_counts), "dim": d}
    dtypes = (input._dtype,) + (dt.int64,) * (bool(return_inverse) + bool(return_counts))
    return _unique_result(_dynamic("unique", input, attrs, dtypes), return_inverse, return_counts)


@method
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    _tensor_arg(input, "unique_consecutive")
    d = _unique_dim_check(input, dim, "unique_consecutive")
    attrs = {"return_inverse": bool(return_inverse), "return_counts": bool(return_counts), "dim": d}
    dtypes = (input._dtype,) + (dt.int64,) * (bool(return_inverse) + bool(return_counts))
    return _unique_result(_dynamic("unique_consecutive", input, attrs, dtypes), return_inverse, return_counts)


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Insertion points of ``input`` into the innermost dim of ``sorted_sequence`` that keep it sorted:
    the first position with ``value <= seq`` (left), or ``value < seq`` (right). ``sorted_sequence`` is
    1-d or its leading dims equal those of ``input``; ``sorter`` sorts an unsorted sequence.

    >>> ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3, 6]))
    tensor([1, 3])
    """
    op = "torch.searchsorted()"
    _tensor_arg(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}: side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{op}: side and right can't be set to opposites, got side of left while right "
                               "was True")
        right = side == "right"
    s = sorted_sequence
    if s.ndim == 0:
        raise RuntimeError(f"{op}: boundaries tensor should have positive dimension, but got 0 dimension")
    scalar = not isinstance(input, Tensor)
    if scalar:
        if s.ndim != 1:
            raise RuntimeError(f"{op}: input value can be a scalar only when boundaries tensor dimension is 1, "
                               f"but we got boundaries tensor dim({s.ndim})")
        from ._creation import tensor
        values = tensor(input, device=s._device)
    else:
        values = input
        same_device("searchsorted", s, values)
        if s.ndim != 1 and (values.ndim != s.ndim or values._shape[:-1] != s._shape[:-1]):
            raise RuntimeError(f"{op}: boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                               f"boundaries tensor and input value tensor must match, but we got boundaries "
                               f"tensor {list(s._shape)} and input value tensor {list(values._shape)}")
    if sorter is not None:
        if not isinstance(sorter, Tensor) or sorter._dtype is not dt.int64:
            raise RuntimeError(f"{op}: sorter must be a tensor of long dtype but got dtype "
                               f"{getattr(sorter, 'dtype', type(sorter).__name__)}")
        if sorter._shape != s._shape:
            raise RuntimeError(f"{op}: boundary and sorter must have the same size, but got boundary tensor "
                               f"{list(s._shape)} and got sorter tensor {list(sorter._shape)}")
        if sorter.numel() and not bool(((sorter >= 0) & (sorter < s._shape[-1])).all()):
            raise RuntimeError(f"{op}: sorter index out of range")
        s = s.gather(-1, sorter)
    if s._dtype is dt.bool or values._dtype is dt.bool:
        raise NotImplementedError(f"{op}: not implemented for bool tensors")
    d = dt.promote_types(s._dtype, values._dtype)
    s, values = s.to(d), values.to(d)
    out_d = dt.int32 if out_int32 else dt.int64
    h = s._device.backend.run("searchsorted", (s._h, values._h), {"right": bool(right), "out_int32": bool(out_int32)})
    return wrap(h, values._shape, out_d, s._device)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """Index of the bucket of each element: ``boundaries[i-1] < x <= boundaries[i]`` (right=False) or
    ``boundaries[i-1] <= x < boundaries[i]`` (right=True); boundaries are 1-d and ascending."""
    _tensor_arg(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@method
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value in a 1-d tensor of non-negative integers (summed ``weights`` if given);
    the length is max(input) + 1, at least ``minlength``. Reading max(input) is a sync point."""
    _tensor_arg(input, "bincount")
    if input._dtype is dt.bool or input._dtype.is_floating_point:
        raise NotImplementedError(f"bincount: not implemented for {input._dtype.name} tensors; it counts "
                                  "non-negative integers")
    if minlength < 0:
        raise RuntimeError("bincount: minlength should be >= 0")
    if input.ndim != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got shape {list(input._shape)})")
    n = input._shape[0]
    if n and int(input.amin().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs (found a negative value)")
    length = max(int(minlength), int(input.amax().item()) + 1 if n else 0)
    x = input.to(dt.int64)
    if weights is None:
        h = x._device.backend.run("bincount", (x._h,), {"minlength": int(minlength), "length": length})
        return wrap(h, (length,), dt.int64, x._device)
    _tensor_arg(weights, "bincount", "weights")
    same_device("bincount", input, weights)
    if weights.ndim != 1 or weights._shape[0] != n:
        raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input (got "
                           f"{list(weights._shape)} and {list(input._shape)})")
    # PyTorch accumulates float32 weights in float32 and every other dtype in float64
    out_d = dt.float32 if weights._dtype is dt.float32 else dt.float64
    w = weights.to(out_d)
    h = x._device.backend.run("bincount", (x._h, w._h), {"minlength": int(minlength), "length": length})
    return wrap(h, (length,), out_d, x._device)


@method
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Histogram of ``input`` in ``bins`` equal bins over [min, max]; with min == max the data's own
    range is used (a sync point). Elements outside the range and NaN are ignored."""
    _tensor_arg(input, "histc")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"histc: not implemented for {input._dtype.name} tensors; convert the input "
                                  "with .float() first")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min (got min={min}, max={max})")
    if lo == hi and input.numel():
        lo, hi = float(input.amin().item()), float(input.amax().item())
    if lo != lo or hi != hi or abs(lo) == float("inf") or abs(hi) == float("inf"):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    h = input._device.backend.run("histc", (input._h,), {"bins": int(bins), "min": lo, "max": hi})
    return wrap(h, (int(bins),), input._dtype, input._device)
