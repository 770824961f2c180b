"""Movement ops: reshapes, permutations, slicing-like views, joins and splits.

Views (view, reshape when possible, permute, transpose, expand, squeeze, unsqueeze, narrow,
diagonal, unbind/split/chunk pieces) share memory with their input, as in PyTorch; their
``_base`` points at the tensor that owns the memory.
"""

from __future__ import annotations

import math

from . import _dtype as dt
from ._shape import broadcast_shapes, contiguous_strides, infer_size, norm_dim, view_strides
from ._tensor import Tensor, method, run, same_device, wrap

_EMPTY: dict = {}


def _view(op: str, x: Tensor, attrs: dict, shape: tuple) -> Tensor:
    h = x._device.backend.run(op, (x._h,), attrs)
    return wrap(h, shape, x._dtype, x._device, x._base if x._base is not None else x)


def _shape_args(shape) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` as a tuple of ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for s in shape:
        if s.__class__ is not int:
            return tuple(int(s) for s in shape)
    return tuple(shape)


@method
def view(self: Tensor, *shape) -> Tensor:
    """A view with a new shape; fails when the layout can't be viewed that way (use reshape)."""
    if len(shape) == 1 and (isinstance(shape[0], dt.dtype) or isinstance(shape[0], str)):
        return _view_dtype(self, dt.as_dtype(shape[0]))
    new = infer_size(_shape_args(shape), math.prod(self._shape), "view")
    if new == self._shape:
        return _view("reshape", self, {"shape": new}, new)
    strides = self._device.backend.strides(self._h)
    if strides != contiguous_strides(self._shape) and view_strides(self._shape, strides, new) is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _view("reshape", self, {"shape": new}, new)


def _view_dtype(x: Tensor, d: dt.dtype) -> Tensor:
    if d.itemsize != x._dtype.itemsize:
        raise RuntimeError(f"view(dtype): only dtypes of the same size are supported here "
                           f"({x._dtype} is {x._dtype.itemsize} bytes, {d} is {d.itemsize})")
    # a host round trip: reinterpreting bits is not a protocol op (numpy shares the memory)
    arr = x._device.backend.read(x._h)
    return wrap(x._device.backend.write(arr.view(d.np)), x._shape, d, x._device,
                x._base if x._base is not None else x)


@method
def reshape(self: Tensor, *shape) -> Tensor:
    """A tensor with a new shape: a view when the layout allows, else a copy. One dim may be -1."""
    new = infer_size(_shape_args(shape), math.prod(self._shape), "reshape")
    if new == self._shape:
        return _view("reshape", self, {"shape": new}, new)
    strides = self._device.backend.strides(self._h)
    if strides == contiguous_strides(self._shape) or view_strides(self._shape, strides, new) is not None:
        return _view("reshape", self, {"shape": new}, new)
    return run("reshape", (run("contiguous", (self,), _EMPTY, self._shape, self._dtype),), {"shape": new},
               new, self._dtype)


@method
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``view(other.shape)``."""
    return view(self, other._shape)


@method
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``reshape(other.shape)``."""
    return reshape(self, other._shape)


@method
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    if not input._shape:
        return reshape(input, (1,))
    s, e = norm_dim(start_dim, input.ndim, "flatten"), norm_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input._shape[:s] + (math.prod(input._shape[s:e + 1]),) + input._shape[e + 1:]
    return reshape(input, shape)


@method
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim into ``sizes`` (one may be -1)."""
    d = norm_dim(dim, input.ndim, "unflatten")
    sizes = infer_size(tuple(sizes), input._shape[d], "unflatten")
    return view(input, input._shape[:d] + sizes + input._shape[d + 1:])


@method
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all of them, or those in ``dim``)."""
    if dim is None:
        shape = tuple(n for n in input._shape if n != 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        normed = [norm_dim(d, input.ndim, "squeeze") for d in dims]
        if len(set(normed)) != len(normed):
            raise RuntimeError(f"squeeze: dim {normed[0]} appears multiple times in the list of dims {list(dims)}")
        dims = set(normed) if input.ndim else set()
        shape = tuple(n for i, n in enumerate(input._shape) if not (i in dims and n == 1))
    return _view("reshape", input, {"shape": shape}, shape)


@method
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim``."""
    d = norm_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input._shape[:d] + (1,) + input._shape[d:]
    return _view("reshape", input, {"shape": shape}, shape)


@method
def permute(input: Tensor, *dims) -> Tensor:
    """A view with dims reordered: ``x.permute(2, 0, 1)``."""
    dims = _shape_args(dims)
    shape = input._shape
    n = len(shape)
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is "
                           f"not equal to len(dims) = {len(dims)}")
    if not all(0 <= d < n for d in dims):
        dims = tuple(norm_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    return _view("permute", input, {"dims": dims}, tuple([shape[d] for d in dims]))


@method
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with dims dim0 and dim1 swapped."""
    shape = input._shape
    n = len(shape)
    if not n:
        return _view("reshape", input, {"shape": ()}, ())
    a, b = norm_dim(dim0, n, "transpose"), norm_dim(dim1, n, "transpose")
    dims = list(range(n))
    dims[a], dims[b] = b, a
    return _view("permute", input, {"dims": tuple(dims)}, tuple([shape[d] for d in dims]))


swapaxes = swapdims = transpose
Tensor.swapaxes = Tensor.swapdims = transpose


@method
def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (≤ 2-d)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    if input.ndim < 2:  # still a new (view) tensor, as in PyTorch
        return _view("reshape", input, {"shape": input._shape}, input._shape)
    return transpose(input, 0, 1)


Tensor.T = property(lambda self: permute(self, tuple(range(self.ndim - 1, -1, -1))))
Tensor.mT = property(lambda self: transpose(self, -2, -1) if self.ndim >= 2 else _mt_error(self))
Tensor.H = property(lambda self: t(self))
Tensor.mH = Tensor.mT


def _mt_error(x):
    raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {x.ndim}-D tensor.")


@method
def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims from ``source`` to ``destination`` (ints or sequences)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    src = [norm_dim(d, input.ndim, "movedim") for d in src]
    dst = [norm_dim(d, input.ndim, "movedim") for d in dst]
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({ds})")
    if not input.ndim:
        return _view("reshape", input, {"shape": ()}, ())
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim
Tensor.moveaxis = movedim


@method
def expand(input: Tensor, *sizes) -> Tensor:
    """A broadcast view (no copy): size-1 dims repeat; -1 keeps a dim."""
    sizes = _shape_args(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({input.ndim})")
    off = len(sizes) - input.ndim
    shape = []
    for i, n in enumerate(sizes):
        if i < off:
            if n < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension ({list(sizes)})")
            shape.append(n)
            continue
        cur = input._shape[i - off]
        if n == -1:
            n = cur
        elif cur != n and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({n}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(input._shape)}")
        shape.append(n)
    shape = tuple(shape)
    if shape == input._shape:
        return _view("reshape", input, {"shape": shape}, shape)
    return _view("expand", input, {"shape": shape}, shape)


@method
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``expand(other.shape)``: a broadcast view with other's shape."""
    return expand(input, other._shape)


@method
def broadcast_to(input: Tensor, shape) -> Tensor:
    """expand to ``shape`` (torch.broadcast_to)."""
    return expand(input, tuple(shape))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Expand every tensor to their common broadcast shape."""
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


@method
def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy."""
    if input.is_contiguous():
        return input
    return run("contiguous", (input,), _EMPTY, input._shape, input._dtype)


@method
def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """A view of ``length`` elements of dim starting at ``start``."""
    if not input.ndim:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, input.ndim, "narrow")
    n = input._shape[d]
    start, length = int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"narrow(): start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length}")
    if start + length > n:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice_dim(input, d, start, start + length, 1)


def _slice_dim(x: Tensor, d: int, start: int, stop: int, step: int) -> Tensor:
    index = tuple((start, stop, step) if i == d else (0, n, 1) for i, n in enumerate(x._shape))
    shape = list(x._shape)
    shape[d] = max(0, (stop - start + step - 1) // step)
    return _view("slice", x, {"index": index}, tuple(shape))


@method
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of a size (the last may be smaller) or of the listed sizes (views)."""
    if not tensor.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = norm_dim(dim, tensor.ndim, "split")
    n = tensor._shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
        if size == 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        # a dim smaller than split_size (including an empty one) gives one piece
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size and n else [n]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_slice_dim(tensor, d, start, start + s, 1))
        start += s
    return tuple(out)


@method
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of ceil(n / chunks) (fewer when n is small)."""
    if not input.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input._shape[norm_dim(dim, input.ndim, "chunk")]
    return split(input, max(1, -(-n // chunks)) if n else 0, dim) if n else tuple(
        split(input, [0] * chunks, dim))


@method
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """numpy.array_split semantics: n nearly equal parts, or split before the given indices."""
    d = norm_dim(dim, input.ndim, "tensor_split")
    n = input._shape[d]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = [0]
        for s in sizes:
            bounds.append(bounds[-1] + s)
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
    return tuple(_slice_dim(input, d, a, max(a, b), 1) for a, b in zip(bounds[:-1], bounds[1:]))


@method
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along dim, as views without that dim."""
    if not input.ndim:
        raise IndexError(f"unbind: Dimension specified as {dim} but tensor has no dimensions")
    d = norm_dim(dim, input.ndim, "unbind")
    return tuple(select(input, d, i) for i in range(input._shape[d]))


@method
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along dim, without that dim (a view)."""
    d = norm_dim(dim, input.ndim, "select")
    n = input._shape[d]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(input._shape)} at "
                         f"dimension {d}")
    i %= n
    piece = _slice_dim(input, d, i, i + 1, 1)
    shape = input._shape[:d] + input._shape[d + 1:]
    return _view("reshape", piece, {"shape": shape}, shape)


def _join_check(op: str, tensors) -> tuple:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, not a Tensor")
    tensors = tuple(tensors)
    if not tensors:
        # PyTorch raises ValueError for cat and RuntimeError for stack
        raise (ValueError if op == "cat" else RuntimeError)(f"{op}(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensors, got {type(t).__name__}")
    return tensors


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (1-d empty tensors are skipped, as in PyTorch)."""
    from ._elementwise import cast, tracks_grad
    tensors = _join_check("cat", tensors)
    device = same_device("cat", *tensors)
    d_out = tensors[0]._dtype
    for t in tensors[1:]:
        d_out = dt.promote_types(d_out, t._dtype)
    parts = [t for t in tensors if not (t._shape == (0,))]
    if not parts:  # all 1-d and empty: joined along their only dim (so each gets a gradient)
        if len(tensors) == 1 and tensors[0]._dtype is d_out:
            return run("copy", (tensors[0],), _EMPTY, (0,), d_out)
        h = device.backend.run("cat", tuple(cast(t, d_out)._h for t in tensors), {"dim": 0})
        return wrap(h, (0,), d_out, device)
    ref = parts[0]
    if not ref.ndim:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = norm_dim(dim, ref.ndim, "cat")
    total = 0
    for i, t in enumerate(parts):
        if t.ndim != ref.ndim:
            raise RuntimeError(f"cat: Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim} "
                               f"(shapes {list(ref._shape)} and {list(t._shape)})")
        if any(a != b for j, (a, b) in enumerate(zip(t._shape, ref._shape)) if j != d):
            raise RuntimeError(f"cat: Sizes of tensors must match except in dimension {d}. Expected size "
                               f"{list(ref._shape)} but got size {list(t._shape)} for tensor number {i} in the list.")
        total += t._shape[d]
    shape = ref._shape[:d] + (total,) + ref._shape[d + 1:]
    if len(parts) < len(tensors) and tracks_grad(*tensors):
        # the skipped empties still get a (empty) gradient, as in PyTorch: join them reshaped to the
        # parts' shape with size 0 along dim
        empty = ref._shape[:d] + (0,) + ref._shape[d + 1:]
        parts = [t.reshape(empty) if t._shape == (0,) else t for t in tensors]
    h = device.backend.run("cat", tuple(cast(t, d_out)._h for t in parts), {"dim": d})
    return wrap(h, shape, d_out, device)


concat = concatenate = cat


def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    from ._elementwise import cast
    tensors = _join_check("stack", tensors)
    device = same_device("stack", *tensors)
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if t._shape != ref._shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref._shape)} at entry 0 "
                               f"and {list(t._shape)} at entry {i}")
    d_out = ref._dtype
    for t in tensors[1:]:
        d_out = dt.promote_types(d_out, t._dtype)
    d = norm_dim(dim, ref.ndim + 1, "stack")
    shape = ref._shape[:d] + (len(tensors),) + ref._shape[d:]
    h = device.backend.run("stack", tuple(cast(t, d_out)._h for t in tensors), {"dim": d})
    return wrap(h, shape, d_out, device)


def hstack(tensors) -> Tensor:
    """Join along dim 1 (dim 0 for 1-d inputs): ``hstack([a, b])``; 0-d inputs become 1-d."""
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Join as rows (dim 0) after making every input at least 2-d.

    >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape
    ember.Size([2, 2])
    """
    return cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Join along dim 2 after making every input at least 3-d."""
    return cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors) -> Tensor:
    """Join as columns: 0-d and 1-d inputs become (n, 1) columns, then cat along dim 1."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors]
    return cat(ts, 1)


def _atleast(tensors, fn, name):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    if len(tensors) == 1:
        return fn(tensors[0])
    if not tensors:
        raise TypeError(f"{name}() expects at least one tensor")
    return tuple(fn(t) for t in tensors)


def _atleast_1d(t: Tensor) -> Tensor:
    return t.reshape(1) if t.ndim == 0 else t


def _atleast_2d(t: Tensor) -> Tensor:
    return t.reshape(1, -1) if t.ndim < 2 else t


def _atleast_3d(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.reshape(1, -1, 1)
    if t.ndim == 2:
        return t.unsqueeze(-1)
    return t


def atleast_1d(*tensors):
    """The tensor viewed as at least 1-d; several tensors (or one list) give a tuple."""
    return _atleast(tensors, _atleast_1d, "atleast_1d")


def atleast_2d(*tensors):
    """The tensor viewed as at least 2-d (a 1-d tensor becomes a row)."""
    return _atleast(tensors, _atleast_2d, "atleast_2d")


def atleast_3d(*tensors):
    """The tensor viewed as at least 3-d (1-d: (1, n, 1); 2-d: (m, n, 1))."""
    return _atleast(tensors, _atleast_3d, "atleast_3d")


@method
def repeat(input: Tensor, *sizes) -> Tensor:
    """Tile the tensor: each dim repeated sizes[i] times (more sizes than dims adds leading dims)."""
    sizes = _shape_args(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"repeat: Trying to create tensor with negative dimension: repeats {list(sizes)} for "
                           f"input of shape {list(input._shape)}")
    x = input.reshape((1,) * (len(sizes) - input.ndim) + input._shape)
    shape = tuple(a * b for a, b in zip(x._shape, sizes))
    if not shape:
        return run("copy", (x,), _EMPTY, shape, x._dtype)
    return run("tile", (x,), {"reps": sizes}, shape, x._dtype)


@method
def tile(input: Tensor, dims) -> Tensor:
    """Like repeat, but fewer reps than dims are padded with leading 1s (numpy.tile)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


@method
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or a tensor of per-element counts) along dim.

    ``repeat_interleave(counts)`` with one 1-d integer tensor gives ``arange(len(counts))`` repeated.

    >>> ember.tensor([1, 2]).repeat_interleave(2).tolist()
    [1, 1, 2, 2]
    """
    from ._creation import arange
    from ._elementwise import cast
    if repeats is None:  # the one-argument form: input holds the counts
        if input.ndim != 1:
            raise RuntimeError(f"repeat_interleave only accept 1D vector as repeat, got shape {list(input._shape)}")
        idx = arange(input._shape[0], dtype=input._dtype, device=input._device)
        return repeat_interleave(idx, input, 0, output_size=output_size)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        if not input.ndim:
            raise IndexError(f"repeat_interleave: dim {dim} is out of range for a 0-d input")
        x, d = input, norm_dim(dim, input.ndim, "repeat_interleave")
    n = x._shape[d]
    if isinstance(repeats, Tensor):
        if repeats._dtype not in (dt.int32, dt.int64):
            raise TypeError(f"repeat_interleave: repeats must be an int32 or int64 tensor, got {repeats._dtype}")
        if repeats.ndim > 1:
            raise RuntimeError(f"repeats must be 0-dim or 1-dim tensor, got shape {list(repeats._shape)}")
        reps = cast(repeats.reshape(-1), dt.int64)
        if reps._shape[0] not in (1, n):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{reps._shape[0]} and input.size({d}) = {n}")
        if reps._shape[0] == 1 and n != 1:
            reps = reps.expand(n).contiguous()
        # the output length depends on the data: a sync point, like PyTorch without output_size
        host = reps.numpy(force=True)
        if host.size and int(host.min()) < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        total = int(host.sum())
        r = reps._h
    else:
        r = int(repeats)
        if r < 0:
            raise RuntimeError(f"repeat_interleave: Repeats must be non-negative, got {r}")
        total = n * r
    if output_size is not None and int(output_size) != total:
        raise RuntimeError(f"repeat_interleave: allocated size does not match required size (output_size="
                           f"{output_size}, repeats sum to {total})")
    shape = x._shape[:d] + (total,) + x._shape[d + 1:]
    h = x._device.backend.run("repeat_interleave", (x._h, r), {"dim": d, "output_size": total})
    return wrap(h, shape, x._dtype, x._device)


def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order along dims (a copy, as in PyTorch). The method also takes ``x.flip(0, 1)``."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(norm_dim(d, input.ndim, "flip") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"flip: dims {list(dims)} has a dim that appears multiple times in the list of dims")
    if not input.ndim:
        dims = ()
    return run("flip", (input,), {"dims": dims}, input._shape, input._dtype)


def _flip_method(self: Tensor, *dims) -> Tensor:
    return flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


Tensor.flip = _flip_method


@method
def fliplr(input: Tensor) -> Tensor:
    """Reverse dim 1 (left/right)."""
    if input.ndim < 2:
        raise RuntimeError(f"fliplr: Input must be >= 2-d, got shape {list(input._shape)}")
    return flip(input, (1,))


@method
def flipud(input: Tensor) -> Tensor:
    """Reverse dim 0 (up/down)."""
    if input.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d, got a 0-d tensor")
    return flip(input, (0,))


@method
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically along dims (the flattened tensor when dims is None)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if not shifts:
        raise RuntimeError("roll: `shifts` required")
    if dims is None or (not isinstance(dims, int) and not len(dims)):
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        return run("roll", (input,), {"shifts": shifts[0], "dims": ()}, input._shape, input._dtype)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not input.ndim:
        raise IndexError(f"roll: Dimension specified as {dims[0]} but tensor has no dimensions")
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    dims = tuple(norm_dim(d, input.ndim, "roll") for d in dims)
    return run("roll", (input,), {"shifts": shifts, "dims": dims}, input._shape, input._dtype)


@method
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90° k times in the plane of dims."""
    a, b = (norm_dim(d, input.ndim, "rot90") for d in dims)
    k %= 4
    if k == 1:
        return flip(input, (b,)).transpose(a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return flip(input, (a,)).transpose(a, b)
    return input.clone()


@method
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal of dims dim1, dim2 (appended as the last dim)."""
    a, b = norm_dim(dim1, input.ndim, "diagonal"), norm_dim(dim2, input.ndim, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = input._shape[a], input._shape[b]
    length = max(0, min(n1, n2 - offset)) if offset >= 0 else max(0, min(n1 + offset, n2))
    shape = tuple(n for i, n in enumerate(input._shape) if i not in (a, b)) + (length,)
    return _view("diagonal", input, {"offset": int(offset), "dim1": a, "dim2": b}, shape)


@method
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-d input: a square matrix with it on a diagonal; 2-d input: the diagonal (a copy)."""
    if input.ndim == 1:
        n = input._shape[0] + (diagonal if diagonal >= 0 else -diagonal)
        from ._creation import zeros
        out = zeros((n, n), dtype=input._dtype, device=input._device)
        from ._elementwise import assign_
        assign_(out.diagonal(diagonal), input)
        return out
    if input.ndim == 2:
        return diagonal_copy(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal(...)`` as a new tensor rather than a view."""
    return diagonal(input, offset, dim1, dim2).clone()


@method
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Put the last dim of input on the diagonal of new dims dim1, dim2."""
    n = input._shape[-1] + abs(offset)
    nd = input.ndim + 1
    a, b = norm_dim(dim1, nd, "diag_embed"), norm_dim(dim2, nd, "diag_embed")
    rest = list(input._shape[:-1])
    shape = []
    it = iter(rest)
    for i in range(nd):
        shape.append(n if i in (a, b) else next(it))
    from ._creation import zeros
    from ._elementwise import assign_
    out = zeros(tuple(shape), dtype=input._dtype, device=input._device)
    assign_(out.diagonal(offset, a, b), input)
    return out


@method
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Lower triangle of the last two dims; the rest zeroed."""
    if input.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return run("tril", (input,), {"diagonal": int(diagonal)}, input._shape, input._dtype)


@method
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Upper triangle of the last two dims; the rest zeroed."""
    if input.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return run("triu", (input,), {"diagonal": int(diagonal)}, input._shape, input._dtype)


@method
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view with explicit sizes and element strides into the input's storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape ({len(stride)} vs {len(size)})")
    off = input.storage_offset() if storage_offset is None else int(storage_offset)
    return _view("as_strided", input, {"size": size, "stride": stride, "storage_offset": off}, size)


def meshgrid(*tensors, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids (broadcast views) from 0-d/1-d tensors of one dtype.

    indexing 'ij' gives grids of shape (len(t0), len(t1), ...); 'xy' swaps the first two dims
    (Cartesian, as numpy.meshgrid's default).
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of shape "
                               f"{list(t._shape)} at position {i}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"meshgrid expects all tensors to have the same dtype, got {tensors[0]._dtype} and "
                               f"{t._dtype}")
    same_device("meshgrid", *tensors)
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:  # 'xy' is 'ij' with the first two inputs (and outputs) exchanged
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = shape[i]
        out.append(t.reshape(view_shape).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the 1-d inputs' elements, one per row (itertools.product order)."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod: Expect a 1D vector, but got shape {list(t._shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


from ._pad import pad  # noqa: E402,F401  (kept importable from here; _pad uses this module)
