"""Indexing: ``x[key]``, ``x[key] = v``, gather/scatter, masked ops, nonzero.

Basic indices (ints, slices, None, Ellipsis) become one slice view plus a reshape; advanced
indices (integer/bool tensors, lists) go to the backend's ``index``/``index_put_`` ops with the
dims they apply to. Every index is range-checked here, so an out-of-range index raises
IndexError instead of wrapping or reading garbage. Where PyTorch raises RuntimeError for an
out-of-range index (gather, scatter, index_add), ember raises :class:`IndexOutOfRange`, which is
both an IndexError and a RuntimeError.
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._creation import _py
from ._elementwise import _write, assign_, cast, tracks_grad
from ._errors import IndexOutOfRange
from ._shape import broadcast_shapes, norm_dim
from ._tensor import Tensor, method, run, same_device, wrap
from .backend.capture import capturing_on

_EMPTY: dict = {}
_INT_INDEX = (dt.int64, dt.int32)


# ---- index checking ---------------------------------------------------------------------------
def _index_dtype(index, op: str, allowed=_INT_INDEX, error: type = RuntimeError) -> Tensor:
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): index must be a Tensor, got {type(index).__name__}")
    if index._dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise error(f"{op}(): Expected dtype {names} for index, got {index._dtype}")
    return index


def _check_range(idx: Tensor, n: int, dim: int, op: str, *, negative: bool = True,
                 error: type = IndexError) -> Tensor:
    """idx as int64, negatives wrapped when ``negative`` allows them; ``error`` for anything outside
    [-n, n) (or [0, n)). Reads the index's min and max: a sync point, as in PyTorch."""
    idx = cast(idx, dt.int64)
    if idx.numel() == 0:
        return idx
    if capturing_on(idx._device):
        # nothing can be read back during a capture (CUDA graph, ember.compile): no range check (as
        # PyTorch's CUDA kernels without device asserts); negatives are wrapped unconditionally
        return _wrap_negative(idx, n) if negative else idx
    b = idx._device.backend
    # one read for both bounds: each read is a round trip on remote and GPU backends
    lo_hi = b.run("stack", (b.run("amin", (idx._h,), {"dim": None, "keepdim": False}),
                            b.run("amax", (idx._h,), {"dim": None, "keepdim": False})), {"dim": 0})
    lo, hi = (int(v) for v in b.read(lo_hi))
    if lo < (-n if negative else 0) or hi >= n:
        bad = hi if hi >= n else lo
        raise error(f"{op}: index {bad} is out of bounds for dimension {dim} with size {n}")
    return _wrap_negative(idx, n) if lo < 0 else idx


def _wrap_negative(idx: Tensor, n: int) -> Tensor:
    """int64 idx with negative entries counted from the end (idx + n where idx < 0)."""
    return run("where", (run("lt", (idx, 0), _EMPTY, idx._shape, dt.bool),
                         run("add", (idx, n), _EMPTY, idx._shape, dt.int64), idx), _EMPTY, idx._shape, dt.int64)


def _as_index_tensor(obj, device) -> Tensor:
    """A key item (tensor, list, array) as an int64 index or a bool mask."""
    from ._creation import tensor
    if isinstance(obj, Tensor):
        if obj._device is not device:  # a CPU index into another device's tensor moves there, as in PyTorch
            if obj._device.type != "cpu":
                raise IndexError(f"indices should be either on cpu or on the same device as the indexed tensor "
                                 f"({device}), got {obj._device}")
            obj = obj.to(device)
        if obj._dtype is dt.uint8:  # PyTorch still reads uint8 index tensors as masks (deprecated)
            return cast(obj, dt.bool)
        if obj._dtype is not dt.bool and obj._dtype not in _INT_INDEX:
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {obj._dtype}")
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


def _seq_as_tuple(key: list) -> bool:
    """PyTorch (like numpy before 1.23) reads a short list holding slices, None, Ellipsis, tensors
    or sequences as a tuple of indices: ``x[[idx0, idx1]]`` is ``x[idx0, idx1]``."""
    if len(key) >= 32:
        return False
    return any(k is None or k is Ellipsis or isinstance(k, (Tensor, list, tuple, slice, np.ndarray)) for k in key)


# ---- parsing a key ----------------------------------------------------------------------------
def _parse(x: Tensor, key):
    """Split a key into a basic view of x plus advanced index tensors on dims of that view.

    Returns (view, [(dim, int64 index tensor) ...]) where dims refer to the view's dims.
    """
    if isinstance(key, list) and _seq_as_tuple(key):
        key = tuple(key)
    elif not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, (list, np.ndarray, Tensor)):
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
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {consumed})")
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
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero" if k.step else "slice step cannot be zero")
            start, stop, step = k.indices(n)
            length = max(0, (stop - start + step - 1) // step)
            if length == 0:
                start = stop = min(start, n)
            slices.append((start, stop, step))
            out_shape.append(length)
            d += 1
        elif isinstance(k, Tensor) and k._dtype is dt.bool:
            if not k.ndim:  # a 0-d mask adds a size-1 dim and keeps it (True) or empties it (False)
                out_shape.append(1)
                adv.append((len(out_shape) - 1, k.reshape(1)))
                continue
            for j in range(k.ndim):
                n = x._shape[d + j]
                if k._shape[j] != n:
                    raise IndexError(f"The shape of the mask {list(k._shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {list(x._shape)} at index {d + j}")
                slices.append((0, n, 1))
                out_shape.append(n)
            adv.append((len(out_shape) - k.ndim, k))
            d += k.ndim
        elif isinstance(k, Tensor):
            n = x._shape[d]
            slices.append((0, n, 1))
            out_shape.append(n)
            adv.append((len(out_shape) - 1, _check_range(k, n, d, "index")))
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
    base = x._base if x._base is not None else x
    view = x
    if any(s != (0, n, 1) for s, n in zip(slices, x._shape)):
        shape = tuple(max(0, (b - a + c - 1) // c) for a, b, c in slices)
        view = wrap(x._device.backend.run("slice", (x._h,), {"index": tuple(slices)}), shape, x._dtype,
                    x._device, base)
    out_shape = tuple(out_shape)
    if out_shape != view._shape:
        view = wrap(view._device.backend.run("reshape", (view._h,), {"shape": out_shape}), out_shape,
                    view._dtype, view._device, base)
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
    """numpy/PyTorch rule: adjacent advanced dims are replaced in place by the broadcast index
    shape; advanced dims separated by a basic one move the index shape to the front."""
    dims = [d for d, _ in adv]
    try:
        bshape = broadcast_shapes(*(i._shape for _, i in adv))
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(i._shape)) for _, i in adv)) from None
    rest = [n for i, n in enumerate(view._shape) if i not in dims]
    if dims == list(range(dims[0], dims[0] + len(dims))):
        first = dims[0]
        before = [n for i, n in enumerate(view._shape) if i < first and i not in dims]
        after = [n for i, n in enumerate(view._shape) if i > first and i not in dims]
        return tuple(before) + bshape + tuple(after)
    return bshape + tuple(rest)


def _basic(x: Tensor, items: tuple) -> Tensor | None:
    """x[items] for a tuple of ints and slices only (the common case, without _parse's generality);
    None for what it leaves to _parse (a non-positive slice step, so that _parse raises)."""
    shape = x._shape
    if not shape:  # x[()] of a 0-d tensor: numpy would hand back a scalar, not a view
        return None
    index, out = [], []
    for d, k in enumerate(items):
        n = shape[d]
        if k.__class__ is int:
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
            k %= n
            index.append((k, k + 1, 1))
            continue
        if k.step is not None and k.step <= 0:
            return None
        start, stop, step = k.indices(n)
        length = (stop - start + step - 1) // step
        if length <= 0:
            length, start, stop = 0, min(start, n), min(start, n)
        index.append((start, stop, step))
        out.append(length)
    for n in shape[len(items):]:
        index.append((0, n, 1))
        out.append(n)
    run_ = x._device.backend.run
    h = run_("slice", (x._h,), {"index": tuple(index)})
    out = tuple(out)
    if len(out) != len(shape):
        h = run_("reshape", (h,), {"shape": out})
    return wrap(h, out, x._dtype, x._device, x._base if x._base is not None else x)


def getitem(self: Tensor, key) -> Tensor:
    """x[key] with PyTorch/numpy semantics: basic indices give views, advanced ones copies."""
    if key.__class__ is int and self._shape:  # fast path: x[i]
        n = self._shape[0]
        if not -n <= key < n:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {n}")
        key %= n
        rest = self._shape[1:]
        index = ((key, key + 1, 1), *[(0, m, 1) for m in rest])
        run_ = self._device.backend.run
        h = run_("reshape", (run_("slice", (self._h,), {"index": index}),), {"shape": rest})
        return wrap(h, rest, self._dtype, self._device, self._base if self._base is not None else self)
    kc = key.__class__
    if kc is slice or (kc is tuple and len(key) <= len(self._shape)
                       and all(k.__class__ is int or k.__class__ is slice for k in key)):
        view = _basic(self, (key,) if kc is slice else key)
        if view is not None:
            return view
    if not self._shape and (isinstance(key, (int, np.integer, slice)) and not isinstance(key, bool)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number")
    view, adv = _parse(self, key)
    if not adv:
        if view is self:  # x[...], x[()]: still a new view object, as in PyTorch
            h = self._device.backend.run("reshape", (self._h,), {"shape": self._shape})
            return wrap(h, self._shape, self._dtype, self._device, self._base if self._base is not None else self)
        return view
    shape = _advanced_shape(view, adv)
    idx = [i for _, i in adv]
    if len(set(i._shape for i in idx)) > 1:
        bshape = broadcast_shapes(*(i._shape for i in idx))
        idx = [i.expand(bshape) for i in idx]
    h = view._device.backend.run("index", (view._h, *(i._h for i in idx)), {"dims": tuple(d for d, _ in adv)})
    return wrap(h, shape, view._dtype, view._device)


def _value_for(self: Tensor, value, op: str):
    """A setitem/fill value: a tensor cast to self's dtype, or a checked Python scalar."""
    if isinstance(value, Tensor):
        same_device(op, self, value)
        return cast(value, self._dtype)
    if isinstance(value, (int, float, bool, np.generic)):
        return _py(value, self._dtype, op)
    from ._creation import tensor
    return tensor(value, dtype=self._dtype, device=self._device)


def setitem(self: Tensor, key, value) -> None:
    """x[key] = value: writes through to x's memory (value broadcasts, casts to x's dtype)."""
    view, adv = _parse(self, key)
    value = _value_for(self, value, "setitem")
    if not adv:
        assign_(view, value)
        return
    shape = _advanced_shape(view, adv)
    if isinstance(value, Tensor) and broadcast_shapes(shape, value._shape) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value._shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    _put(self, view, adv, value, False)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


@method
def index_put_(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """self[indices] = values in place (``+=`` with accumulate=True, summing duplicate indices).

    >>> x = ember.zeros(3)
    >>> x.index_put_((ember.tensor([0, 0, 2]),), ember.tensor(1.0), accumulate=True).tolist()
    [2.0, 0.0, 1.0]
    """
    indices = tuple(indices)
    for i in indices:
        if not isinstance(i, Tensor):
            raise TypeError(f"index_put_(): indices must be Tensors, got {type(i).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be a Tensor, not {type(values).__name__}")
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self._dtype} for "
                           f"the destination and {values._dtype} for the source.")
    same_device("index_put_", self, values, *indices)
    view, adv = _parse(self, indices)
    if not adv:
        assign_(view, view + values if accumulate else values)
        return self
    shape = _advanced_shape(view, adv)
    if broadcast_shapes(shape, values._shape) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    _put(self, view, adv, values.expand(shape).contiguous() if accumulate and values._shape != shape else values,
         bool(accumulate))
    return self


def _put(self: Tensor, view: Tensor, adv, value, accumulate: bool) -> None:
    """view[adv] = value (or +=) in place; recorded functionally when autodiff is involved."""
    attrs = {"dims": tuple(d for d, _ in adv), "accumulate": accumulate}
    idx = tuple(i._h for _, i in adv)
    if tracks_grad(view, value, self):
        new = run("index_put", (view, value, *(i for _, i in adv)), attrs, view._shape, view._dtype)
        assign_(view, new)
        return
    v = value._h if isinstance(value, Tensor) else value
    _write(self._device.backend, "index_put_", (view._h, v, *idx), attrs)


@method
def index_put(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place index_put_: a copy of self with self[indices] = values (or +=)."""
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
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or a tuple of 1-d tensors.

    >>> ember.tensor([0, 3, 0, 4]).nonzero().tolist()
    [[1], [3]]
    """
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
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    return mask


def _fill_scalar(value, input: Tensor, op: str):
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value.item()
    return _py(value, input._dtype, op)


@method
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of input with ``value`` where mask is true (input and mask broadcast together)."""
    mask = _mask(mask, "masked_fill")
    same_device("masked_fill", input, mask)
    shape = broadcast_shapes(input._shape, mask._shape)
    v = _fill_scalar(value, input, "masked_fill")
    if isinstance(value, Tensor) and tracks_grad(value):  # the value tensor gets a gradient too
        from ._elementwise import where
        return where(mask, cast(value, input._dtype), input)
    x = input if shape == input._shape else input.expand(shape)
    return run("masked_fill", (x, mask, v), _EMPTY, shape, input._dtype)


@method
def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """In-place masked_fill; mask must broadcast to input's shape."""
    mask = _mask(mask, "masked_fill_")
    if broadcast_shapes(input._shape, mask._shape) != input._shape:
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask._shape)} can't be broadcast to the input's "
                           f"shape {list(input._shape)}")
    assign_(input, masked_fill(input, mask, value))
    return input


@method
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where mask is true, as a 1-d tensor (input and mask broadcast)."""
    mask = _mask(mask, "masked_select")
    same_device("masked_select", input, mask)
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
    """out[i][j] = input[index[i][j]][j] (for dim 0): picks along dim by index.

    >>> ember.tensor([[1, 2], [3, 4]]).gather(1, ember.tensor([[1], [0]])).tolist()
    [[2], [3]]
    """
    _index_dtype(index, "gather")
    same_device("gather", input, index)
    d = norm_dim(dim, input.ndim, "gather")
    _check_like("gather", input, index, d)
    n = input._shape[d] if input.ndim else 1
    checked = _check_range(index, n, d, "gather", negative=False, error=IndexOutOfRange)
    if input.ndim != index.ndim or not input.ndim:  # 0-d/1-d mixes: gather on 1-d views
        flat = run("gather", (input.reshape(-1), checked.reshape(-1)), {"dim": 0}, (checked.numel(),), input._dtype)
        return flat.reshape(index._shape)
    return run("gather", (input, checked), {"dim": d}, index._shape, input._dtype)


@method
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """gather with broadcasting of the non-dim dims (numpy.take_along_axis); negative indices wrap."""
    _index_dtype(indices, "take_along_dim", (dt.int64,))
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = norm_dim(dim, input.ndim, "take_along_dim")
    if input.ndim != indices.ndim:
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number of dimensions, but "
                           f"got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    s_in, s_ix = list(input._shape), list(indices._shape)
    s_in[d] = s_ix[d] = 1
    b = broadcast_shapes(tuple(s_in), tuple(s_ix))
    in_shape = tuple(input._shape[d] if i == d else n for i, n in enumerate(b))
    ix_shape = tuple(indices._shape[d] if i == d else n for i, n in enumerate(b))
    checked = _check_range(indices, input._shape[d], d, "take_along_dim")
    return gather(input.expand(in_shape), d, checked.expand(ix_shape))


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src, reduce) -> Tensor:
    _index_dtype(index, op)
    d = norm_dim(dim, input.ndim, op)
    if isinstance(src, Tensor):
        same_device(op, input, index, src)
        if src._dtype is not input._dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got {input._dtype} and "
                               f"{src._dtype})")
        _check_like(op, input, index, d, src)
    else:
        _check_like(op, input, index, d)
        src = _py(src, input._dtype, op)
    index = _check_range(index, input._shape[d] if input.ndim else 1, d, op, negative=False, error=IndexOutOfRange)
    if not input.ndim:  # scatter into the 1-element view
        flat = _scatter(op, input.reshape(1), 0, index.reshape(-1),
                        src.reshape(-1) if isinstance(src, Tensor) else src, reduce)
        return flat.reshape(())
    s = src._h if isinstance(src, Tensor) else src
    h = input._device.backend.run("scatter", (input._h, index._h, s), {"dim": d, "reduce": reduce})
    return wrap(h, input._shape, input._dtype, input._device)


@method
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """Out-of-place scatter: out[index[i][j]][j] = src[i][j] (dim 0); reduce 'add' or 'multiply'."""
    if src is None:
        src = value
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
    return _scatter("scatter", input, dim, index, src, reduce)


@method
def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """In-place scatter."""
    assign_(input, scatter(input, dim, index, src, value=value, reduce=reduce))
    return input


@method
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """scatter with summation of colliding indices."""
    return _scatter("scatter_add", input, dim, index, src, "add")


@method
def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place scatter_add."""
    assign_(input, scatter_add(input, dim, index, src))
    return input


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@method
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Scatter with reduce in 'sum', 'prod', 'mean', 'amax', 'amin' (optionally ignoring input)."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be one of {', '.join(_SCATTER_REDUCES)}, "
                           f"got {reduce!r}")
    _index_dtype(index, "scatter_reduce")
    same_device("scatter_reduce", input, index, src)
    if src._dtype is not input._dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {input._dtype} and "
                           f"{src._dtype})")
    if reduce == "mean" and input._dtype is dt.bool:
        raise NotImplementedError("scatter_reduce(): reduce='mean' is not implemented for bool tensors")
    d = norm_dim(dim, input.ndim, "scatter_reduce")
    _check_like("scatter_reduce", input, index, d, src)
    index = _check_range(index, input._shape[d] if input.ndim else 1, d, "scatter_reduce", negative=False,
                         error=IndexOutOfRange)
    if not input.ndim:
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                              include_self=include_self).reshape(())
    return run("scatter_reduce", (input, index, src),
               {"dim": d, "reduce": reduce, "include_self": bool(include_self)}, input._shape, input._dtype)


@method
def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place scatter_reduce."""
    # its gradient needs the old input (PyTorch saves a copy of it too), which the write destroys
    old = input.clone() if tracks_grad(input, src) else input
    assign_(input, scatter_reduce(old, dim, index, src, reduce, include_self=include_self))
    return input


def _index_1d(index, op: str, allowed=_INT_INDEX, dtype_error: type = RuntimeError,
              shape_error: type = IndexError) -> Tensor:
    _index_dtype(index, op, allowed, dtype_error)
    if index.ndim > 1:
        raise shape_error(f"{op}(): Index is supposed to be a vector (or a scalar), got shape {list(index._shape)}")
    return index.reshape(-1)


def _check_source(op: str, input: Tensor, d: int, index: Tensor, source: Tensor, error: type):
    if source._dtype is not input._dtype:
        raise RuntimeError(f"{op}(): self ({input._dtype}) and source ({source._dtype}) must have the same dtype")
    expected = input._shape[:d] + index._shape + input._shape[d + 1:] if input.ndim else ()
    if input.ndim == 0 and index.numel() != 1:
        raise error(f"{op}(): Number of indices ({index.numel()}) should be 1 for a 0-d self")
    ok = source._shape == expected or (input.ndim == 0 and source.numel() == 1 and source.ndim <= 1)
    if not ok:
        raise error(f"{op}(): source of shape {list(source._shape)} does not match self {list(input._shape)} with "
                    f"dimension {d} replaced by the {index.numel()} indices (expected {list(expected)})")


@method
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``index`` along dim (a copy); negative indices are out of range."""
    index = _index_1d(index, "index_select")
    same_device("index_select", input, index)
    d = norm_dim(dim, input.ndim, "index_select")
    if not input.ndim:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        _check_range(index, 1, 0, "index_select", negative=False, error=IndexOutOfRange)
        return run("copy", (input,), _EMPTY, (), input._dtype)
    # PyTorch raises IndexError along dim 0 and RuntimeError along other dims: be both
    index = _check_range(index, input._shape[d], d, "index_select", negative=False, error=IndexOutOfRange)
    shape = input._shape[:d] + index._shape + input._shape[d + 1:]
    return run("index_select", (input, index), {"dim": d}, shape, input._dtype)


@method
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """out = input; out[..., index[i], ...] += alpha * source[..., i, ...] along dim."""
    index = _index_1d(index, "index_add")
    same_device("index_add", input, index, source)
    d = norm_dim(dim, input.ndim, "index_add")
    _check_source("index_add", input, d, index, source, RuntimeError)
    index = _check_range(index, input._shape[d] if input.ndim else 1, d, "index_add", negative=False,
                         error=IndexOutOfRange)
    alpha = 1 if input._dtype is dt.bool else _py(alpha, input._dtype, "index_add")
    if not input.ndim:
        return run("index_add", (input.reshape(1), index, source.reshape(1)), {"dim": 0, "alpha": alpha}, (1,),
                   input._dtype).reshape(())
    return run("index_add", (input, index, source), {"dim": d, "alpha": alpha}, input._shape, input._dtype)


@method
def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place index_add."""
    assign_(input, index_add(input, dim, index, source, alpha=alpha))
    return input


@method
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """out[..., index[i], ...] = source[..., i, ...] along dim (indices must be in [0, size))."""
    index = _index_1d(index, "index_copy", (dt.int64,))
    same_device("index_copy", input, index, source)
    d = norm_dim(dim, input.ndim, "index_copy")
    _check_source("index_copy", input, d, index, source, IndexError)
    index = _check_range(index, input._shape[d] if input.ndim else 1, d, "index_copy", negative=False)
    out = input.clone()
    if not input.ndim:
        assign_(out, source.reshape(()))
    else:
        setitem(out, (slice(None),) * d + (index,), source)
    return out


@method
def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place index_copy."""
    assign_(input, index_copy(input, dim, index, source))
    return input


@method
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """out[..., index[i], ...] = value along dim (value: a number or a 0-d tensor)."""
    index = _index_1d(index, "index_fill", (dt.int64,), IndexError, RuntimeError)
    same_device("index_fill", input, index)
    d = norm_dim(dim, input.ndim, "index_fill")
    v = _fill_scalar(value, input, "index_fill")
    if isinstance(value, Tensor) and tracks_grad(value):  # the value tensor gets a gradient too
        v = cast(value, input._dtype)
    index = _check_range(index, input._shape[d] if input.ndim else 1, d, "index_fill")
    out = input.clone()
    if not input.ndim:
        if index.numel():
            assign_(out, v)
    else:
        setitem(out, (slice(None),) * d + (index,), v)
    return out


@method
def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place index_fill."""
    assign_(input, index_fill(input, dim, index, value))
    return input


@method
def take(input: Tensor, index: Tensor) -> Tensor:
    """input.flatten()[index], shaped like index (negative indices count from the end)."""
    _index_dtype(index, "take", (dt.int64,))
    same_device("take", input, index)
    index = _check_range(index, input.numel(), 0, "take")
    return run("take", (input, index), _EMPTY, index._shape, input._dtype)
