"""Indexing: ``x[key]``, ``x[key] = v``, gather/scatter, masked ops, nonzero.

Basic indices (ints, slices, None, Ellipsis) become one slice view plus a reshape; advanced
indices (integer/bool tensors, lists) go to the backend's ``index``/``index_put_`` ops with the
dims they apply to. Every index is range-checked here, so an out-of-range index raises
IndexError instead of wrapping or reading garbage.
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._elementwise import _bump, _scalar_for, _write, assign_, cast
from ._shape import broadcast_shapes, norm_dim
from ._tensor import Tensor, method, run, same_device, wrap

_EMPTY: dict = {}


# ---- index checking ---------------------------------------------------------------------------
def _normalize_index(idx: Tensor, n: int, dim: int, op: str) -> Tensor:
    """idx as int64 with negatives wrapped; IndexError for anything outside [-n, n)."""
    if idx._dtype.is_floating_point or idx._dtype is dt.bool:
        raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors, got {idx._dtype}")
    idx = cast(idx, dt.int64)
    if idx.numel() == 0:
        return idx
    b = idx._device.backend
    lo = int(b.read(b.run("amin", (idx._h,), {"dim": None, "keepdim": False})))
    hi = int(b.read(b.run("amax", (idx._h,), {"dim": None, "keepdim": False})))
    if lo < -n or hi >= n:
        bad = hi if hi >= n else lo
        raise IndexError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {n}")
    if lo < 0:
        idx = run("where", (run("lt", (idx, 0), _EMPTY, idx._shape, dt.bool), run("add", (idx, n), _EMPTY, idx._shape, dt.int64), idx),
                  _EMPTY, idx._shape, dt.int64)
    return idx


def _as_index_tensor(obj, device) -> Tensor:
    from ._creation import tensor
    if isinstance(obj, Tensor):
        return obj
    arr = np.asarray(obj)
    if arr.dtype == np.bool_:
        return tensor(arr, dtype=dt.bool, device=device)
    if arr.size == 0:
        return tensor(arr.astype(np.int64), dtype=dt.int64, device=device)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                         f"valid indices (got {arr.dtype})")
    return tensor(arr.astype(np.int64), dtype=dt.int64, device=device)


# ---- parsing a key ----------------------------------------------------------------------------
def _parse(x: Tensor, key):
    """Split a key into a basic view of x plus advanced index tensors on dims of that view.

    Returns (view, [(dim, index tensor) ...]) where dims refer to the view's dims.
    """
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, (list, np.ndarray)) or (isinstance(k, Tensor)):
            items.append(_as_index_tensor(k, x._device))
        else:
            items.append(k)
    consumed = 0
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, bool):
            continue
        consumed += k.ndim if isinstance(k, Tensor) and k._dtype is dt.bool else 1
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    slices = []        # per input dim: (start, stop, step)
    out_shape = []     # shape after slicing, dropping int dims, inserting None dims
    adv = []           # (out dim, index tensor or bool-mask) in output-dim coordinates
    d = 0
    for k in items:
        if k is Ellipsis:
            for _ in range(x.ndim - consumed):
                n = x._shape[d]
                slices.append((0, n, 1))
                out_shape.append(n)
                d += 1
        elif k is None or k is True:
            out_shape.append(1)
        elif k is False:
            out_shape.append(1)
            adv.append((len(out_shape) - 1, _as_index_tensor(np.zeros(0, np.int64), x._device)))
        elif isinstance(k, slice):
            n = x._shape[d]
            start, stop, step = k.indices(n)
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            length = max(0, (stop - start + step - 1) // step)
            if length == 0:
                start = stop = min(start, n)
            slices.append((start, stop, step))
            out_shape.append(length)
            d += 1
        elif isinstance(k, Tensor):
            if k._dtype is dt.bool:
                for j in range(k.ndim):
                    n = x._shape[d + j]
                    if k._shape[j] != n:
                        raise IndexError(f"The shape of the mask {list(k._shape)} at index {j} does not match the "
                                         f"shape of the indexed tensor {list(x._shape)} at index {d + j}")
                    slices.append((0, n, 1))
                    out_shape.append(n)
                adv.append((len(out_shape) - k.ndim, k))
                d += k.ndim
            else:
                n = x._shape[d]
                slices.append((0, n, 1))
                out_shape.append(n)
                adv.append((len(out_shape) - 1, _normalize_index(k, n, d, "index")))
                d += 1
        elif isinstance(k, (int, np.integer)):
            n = x._shape[d]
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {n}")
            i %= n
            slices.append((i, i + 1, 1))
            d += 1
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are "
                             f"valid indices (got {type(k).__name__})")
    while d < x.ndim:
        n = x._shape[d]
        slices.append((0, n, 1))
        out_shape.append(n)
        d += 1
    view = x
    if any(s != (0, n, 1) for s, n in zip(slices, x._shape)):
        shape = tuple(max(0, (b - a + c - 1) // c) for a, b, c in slices)
        view = wrap(x._device.backend.run("slice", (x._h,), {"index": tuple(slices)}), shape, x._dtype,
                    x._device, x._base if x._base is not None else x)
    out_shape = tuple(out_shape)
    if out_shape != view._shape:
        view = wrap(view._device.backend.run("reshape", (view._h,), {"shape": out_shape}), out_shape,
                    view._dtype, view._device, x._base if x._base is not None else x)
    # bool masks become integer indices (a sync point: the count depends on the data)
    expanded = []
    for dim, idx in adv:
        if idx._dtype is dt.bool:
            for j, col in enumerate(_nonzero_tuple(idx)):
                expanded.append((dim + j, col))
        else:
            expanded.append((dim, idx))
    return view, expanded


def _advanced_shape(view: Tensor, adv) -> tuple:
    dims = [d for d, _ in adv]
    bshape = broadcast_shapes(*(i._shape for _, i in adv))
    rest = [n for i, n in enumerate(view._shape) if i not in dims]
    contiguous = dims == list(range(dims[0], dims[0] + len(dims)))
    if contiguous:
        first = dims[0]
        before = [n for i, n in enumerate(view._shape) if i < first and i not in dims]
        after = [n for i, n in enumerate(view._shape) if i > first and i not in dims]
        return tuple(before) + bshape + tuple(after)
    return bshape + tuple(rest)


def getitem(self: Tensor, key) -> Tensor:
    """x[key] with PyTorch/numpy semantics: basic indices give views, advanced ones copies."""
    if key.__class__ is int and self._shape:  # fast path: x[i]
        n = self._shape[0]
        if not -n <= key < n:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {n}")
        key %= n
        index = ((key, key + 1, 1),) + tuple((0, m, 1) for m in self._shape[1:])
        h = self._device.backend.run("slice", (self._h,), {"index": index})
        h = self._device.backend.run("reshape", (h,), {"shape": self._shape[1:]})
        return wrap(h, self._shape[1:], self._dtype, self._device, self._base if self._base is not None else self)
    if not self._shape and key is not None and key is not Ellipsis and not isinstance(key, (tuple, Tensor, bool)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number")
    view, adv = _parse(self, key)
    if not adv:
        return view
    shape = _advanced_shape(view, adv)
    idx = [i for _, i in adv]
    if len(set(i._shape for i in idx)) > 1:
        bshape = broadcast_shapes(*(i._shape for i in idx))
        idx = [i.expand(bshape) for i in idx]
    h = view._device.backend.run("index", (view._h, *(i._h for i in idx)), {"dims": tuple(d for d, _ in adv)})
    return wrap(h, shape, view._dtype, view._device)


def setitem(self: Tensor, key, value) -> None:
    """x[key] = value: writes through to x's memory (value broadcasts, casts to x's dtype)."""
    view, adv = _parse(self, key)
    if isinstance(value, Tensor):
        same_device("index_put_", self, value)
        value = cast(value, self._dtype)
    elif not isinstance(value, (int, float, bool, np.generic)):
        from ._creation import tensor
        value = tensor(value, dtype=self._dtype, device=self._device)
    if not adv:
        assign_(view, value if isinstance(value, Tensor) else _scalar_for(value, self._dtype))
        _bump(self)
        return
    shape = _advanced_shape(view, adv)
    v = value._h if isinstance(value, Tensor) else _scalar_for(value, self._dtype)
    if isinstance(value, Tensor) and broadcast_shapes(shape, value._shape) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value._shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    idx = [i for _, i in adv]
    _write(self._device.backend, "index_put_", (view._h, v, *(i._h for i in idx)),
           {"dims": tuple(d for d, _ in adv), "accumulate": False})
    _bump(self)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


@method
def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """self[indices] = values (or += with accumulate=True, summing duplicates)."""
    indices = tuple(indices)
    view, adv = _parse(self, indices)
    if not adv:
        if accumulate:
            assign_(view, view + values)
        else:
            assign_(view, values)
        _bump(self)
        return self
    shape = _advanced_shape(view, adv)
    values = cast(values, self._dtype) if isinstance(values, Tensor) else values
    if isinstance(values, Tensor) and broadcast_shapes(shape, values._shape) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    v = values._h if isinstance(values, Tensor) else _scalar_for(values, self._dtype)
    if accumulate and isinstance(values, Tensor) and values._shape != shape:
        v = values.expand(shape).contiguous()._h
    _write(self._device.backend, "index_put_", (view._h, v, *(i._h for _, i in adv)),
           {"dims": tuple(d for d, _ in adv), "accumulate": bool(accumulate)})
    _bump(self)
    return self


@method
def index_put(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    return index_put_(self.clone(), indices, values, accumulate)


# ---- nonzero and masks ------------------------------------------------------------------------
def _dynamic(op: str, inputs: tuple, attrs: dict, dtypes: tuple, device):
    b = device.backend
    hs = b.run(op, tuple(i._h for i in inputs), attrs)
    if not isinstance(hs, tuple):
        hs = (hs,)
    return tuple(wrap(h, tuple(b.shape(h)), d, device) for h, d in zip(hs, dtypes))


@method
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or a tuple of 1-d tensors."""
    if as_tuple:
        return _nonzero_tuple(input)
    x = input if input.ndim else input.reshape(1)
    (out,) = _dynamic("nonzero", (x,), _EMPTY, (dt.int64,), input._device)
    return out if input.ndim else out[:, :0]


def _nonzero_tuple(input: Tensor):
    x = input if input.ndim else input.reshape(1)
    (nz,) = _dynamic("nonzero", (x,), _EMPTY, (dt.int64,), input._device)
    return tuple(nz[:, j].contiguous() for j in range(x.ndim))


@method
def argwhere(input: Tensor) -> Tensor:
    """nonzero(input) as an (n, ndim) tensor."""
    return nonzero(input)


def _mask(mask, op: str) -> Tensor:
    if not isinstance(mask, Tensor) or mask._dtype is not dt.bool:
        raise RuntimeError(f"{op}: expected a bool mask tensor, got "
                           f"{mask._dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    return mask


@method
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of input with ``value`` where mask is true (mask broadcasts to input's shape)."""
    mask = _mask(mask, "masked_fill")
    same_device("masked_fill", input, mask)
    if broadcast_shapes(input._shape, mask._shape) != input._shape:
        raise RuntimeError(f"masked_fill: mask of shape {list(mask._shape)} can't be broadcast to input of shape "
                           f"{list(input._shape)}")
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value.item()
    return run("masked_fill", (input, mask, _scalar_for(value, input._dtype)), _EMPTY, input._shape, input._dtype)


@method
def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    assign_(input, masked_fill(input, mask, value))
    _bump(input)
    return input


@method
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where mask is true, as a 1-d tensor (input and mask broadcast)."""
    mask = _mask(mask, "masked_select")
    shape = broadcast_shapes(input._shape, mask._shape)
    x, m = input.expand(shape), mask.expand(shape)
    (out,) = _dynamic("masked_select", (x, m), _EMPTY, (input._dtype,), input._device)
    return out


@method
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Copy of input whose masked positions take source's elements in order."""
    mask = _mask(mask, "masked_scatter")
    m = mask.expand(input._shape)
    count = int(m.sum().item())
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} elements, got {source.numel()}")
    out = input.clone()
    out[m] = source.reshape(-1)[:count]
    return out


# ---- gather / scatter ------------------------------------------------------------------------
def _check_index_dtype(index: Tensor, op: str):
    if not isinstance(index, Tensor) or index._dtype is not dt.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got "
                           f"{index._dtype if isinstance(index, Tensor) else type(index).__name__}")


def _check_like(op: str, input: Tensor, index: Tensor, d: int, src: Tensor | None = None):
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index._shape)} vs input {list(input._shape)})")
    for i, (a, b) in enumerate(zip(index._shape, input._shape)):
        if i != d and a > b:
            raise RuntimeError(f"{op}(): Size does not match at dimension {i} expected index {list(index._shape)} "
                               f"to be no larger than self {list(input._shape)} apart from dimension {d}")
    if src is not None:
        for i, (a, b) in enumerate(zip(index._shape, src._shape)):
            if a > b:
                raise RuntimeError(f"{op}(): Expected index {list(index._shape)} to be no larger than src "
                                   f"{list(src._shape)} at dimension {i}")


@method
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim 0): picks along dim by index."""
    _check_index_dtype(index, "gather")
    same_device("gather", input, index)
    d = norm_dim(dim, input.ndim, "gather")
    _check_like("gather", input, index, d)
    if not input.ndim:
        index = _normalize_index(index, 1, 0, "gather")
        return input.reshape(1)[index.reshape(-1)].reshape(index._shape)
    index = _normalize_index(index, input._shape[d], d, "gather")
    return run("gather", (input, index), {"dim": d}, index._shape, input._dtype)


@method
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """gather with broadcasting of the non-dim dims (numpy.take_along_axis)."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = norm_dim(dim, input.ndim, "take_along_dim")
    s_in = list(input._shape)
    s_ix = list(indices._shape)
    s_in[d] = s_ix[d] = 1
    b = broadcast_shapes(tuple(s_in), tuple(s_ix))
    in_shape = tuple(input._shape[d] if i == d else n for i, n in enumerate(b))
    ix_shape = tuple(indices._shape[d] if i == d else n for i, n in enumerate(b))
    return gather(input.expand(in_shape), d, indices.expand(ix_shape))


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src, reduce) -> Tensor:
    _check_index_dtype(index, op)
    d = norm_dim(dim, input.ndim, op)
    if isinstance(src, Tensor):
        same_device(op, input, index, src)
        _check_like(op, input, index, d, src)
        srch = cast(src, input._dtype)._h
    else:
        _check_like(op, input, index, d)
        srch = _scalar_for(src, input._dtype)
    index = _normalize_index(index, input._shape[d] if input.ndim else 1, d, op)
    attrs = {"dim": d, "reduce": reduce}
    return wrap(input._device.backend.run("scatter", (input._h, index._h, srch), attrs), input._shape,
                input._dtype, input._device)


_REDUCE_NAMES = {None: None, "add": "add", "multiply": "multiply"}


@method
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """Out-of-place scatter: out[index[i][j]][j] = src[i][j] (dim 0); reduce 'add' or 'multiply'."""
    if src is None:
        src = value
    if reduce not in _REDUCE_NAMES:
        raise RuntimeError(f"scatter: reduce argument must be either add or multiply, got {reduce!r}")
    return _scatter("scatter", input, dim, index, src, reduce)


@method
def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    assign_(input, scatter(input, dim, index, src, value=value, reduce=reduce))
    _bump(input)
    return input


@method
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """scatter with summation of colliding indices."""
    return _scatter("scatter_add", input, dim, index, src, "add")


@method
def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    assign_(input, scatter_add(input, dim, index, src))
    _bump(input)
    return input


@method
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Scatter with reduce in 'sum', 'prod', 'mean', 'amax', 'amin' (optionally ignoring input)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_index_dtype(index, "scatter_reduce")
    same_device("scatter_reduce", input, index, src)
    d = norm_dim(dim, input.ndim, "scatter_reduce")
    _check_like("scatter_reduce", input, index, d, src)
    index = _normalize_index(index, input._shape[d] if input.ndim else 1, d, "scatter_reduce")
    return run("scatter_reduce", (input, index, cast(src, input._dtype)),
               {"dim": d, "reduce": reduce, "include_self": bool(include_self)}, input._shape, input._dtype)


@method
def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    assign_(input, scatter_reduce(input, dim, index, src, reduce, include_self=include_self))
    _bump(input)
    return input


def _index_1d(index: Tensor, op: str) -> Tensor:
    if not isinstance(index, Tensor) or index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got shape {list(index._shape)}")
    return index.reshape(-1)


@method
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``index`` along dim."""
    index = _index_1d(index, "index_select")
    same_device("index_select", input, index)
    d = norm_dim(dim, input.ndim, "index_select")
    n = input._shape[d] if input.ndim else 1
    index = _normalize_index(index, n, d, "index_select")
    if not input.ndim:
        return input.reshape(1)[index].reshape(()) if index.numel() == 1 else input.reshape(1)[index]
    shape = input._shape[:d] + index._shape + input._shape[d + 1:]
    return run("index_select", (input, index), {"dim": d}, shape, input._dtype)


@method
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """out = input; out[..., index[i], ...] += alpha * source[..., i, ...] along dim."""
    index = _index_1d(index, "index_add")
    same_device("index_add", input, index, source)
    d = norm_dim(dim, input.ndim, "index_add")
    expected = input._shape[:d] + index._shape + input._shape[d + 1:] if input.ndim else index._shape
    if source._shape != expected and not (input.ndim == 0 and source.numel() == 1):
        raise RuntimeError(f"index_add_(): source shape {list(source._shape)} does not match the expected "
                           f"{list(expected)}")
    index = _normalize_index(index, input._shape[d] if input.ndim else 1, d, "index_add")
    return run("index_add", (input, index, cast(source, input._dtype)),
               {"dim": d, "alpha": alpha}, input._shape, input._dtype)


@method
def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    assign_(input, index_add(input, dim, index, source, alpha=alpha))
    _bump(input)
    return input


@method
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """out[..., index[i], ...] = source[..., i, ...] along dim."""
    d = norm_dim(dim, input.ndim, "index_copy")
    key = (slice(None),) * d + (_index_1d(index, "index_copy"),)
    out = input.clone()
    out[key] = source
    return out


@method
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """out[..., index[i], ...] = value along dim."""
    d = norm_dim(dim, input.ndim, "index_fill")
    key = (slice(None),) * d + (_index_1d(index, "index_fill"),)
    out = input.clone()
    out[key] = value
    return out


@method
def take(input: Tensor, index: Tensor) -> Tensor:
    """input.flatten()[index], shaped like index."""
    _check_index_dtype(index, "take")
    same_device("take", input, index)
    index = _normalize_index(index, input.numel(), 0, "take")
    return run("take", (input, index), _EMPTY, index._shape, input._dtype)
