"""Products of tensors: matmul and its family (mm, bmm, mv, dot, inner, outer, tensordot, kron),
the fused add-multiply ops (addmm, addmv, addbmm, baddbmm, addr), trace, cross and chained products.

The only backend primitive here is ``matmul(a, b)``: inputs of one dtype, at least 1-d, with
numpy/PyTorch semantics for 1-d operands and broadcast batch dims. The frontend checks shapes and
dtypes and computes the result shape; everything else is a composite of ember ops.

>>> a = ember.ones(2, 3); b = ember.ones(3, 4)
>>> (a @ b).shape
ember.Size([2, 4])
"""

# ruff: noqa: A002 - PyTorch's argument names (input, min, max, sorted, ord) shadow builtins

from __future__ import annotations

import math

from . import _dtype as dt
from ._autocast_hooks import autocast_inputs, autocast_op
from ._autocast_hooks import state as _autocast
from ._shape import broadcast_shapes, norm_dim
from ._tensor import Tensor, method, same_device, wrap

__all__ = [
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "tensordot", "kron",
    "addmm", "addmv", "addbmm", "baddbmm", "addr", "trace", "cross", "chain_matmul", "einsum",
    "det", "logdet", "slogdet", "inverse", "matrix_power", "pinverse",
]

_EMPTY: dict = {}


def _dims(shape) -> str:
    return "x".join(str(n) for n in shape)


def _check_tensor(x, op: str, name: str):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _same_dtype(op: str, a: Tensor, b: Tensor):
    """PyTorch's matmul family does not promote: both operands must share a dtype."""
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: {a._dtype.name} != "
                           f"{b._dtype.name} (convert one with .to({a._dtype}) or .to({b._dtype}))")
    if a._dtype is dt.bool:
        raise NotImplementedError(f"{op}: not implemented for bool tensors; convert them with .int() or .float()")


def _matmul_shape(sa: tuple, sb: tuple) -> tuple:
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    if nb == 1:
        if sa[-1] != sb[0]:
            if na == 1:
                raise RuntimeError(f"matmul: inconsistent tensor size, expected tensor [{sa[0]}] and src "
                                   f"[{sb[0]}] to have the same number of elements, but got {sa[0]} and "
                                   f"{sb[0]} elements respectively")
            raise RuntimeError(f"matmul: size mismatch, got mat ({_dims(sa)}) and vec ({sb[0]})")
        return sa[:-1]
    if na == 1:
        if sa[0] != sb[-2]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{sa[0]} and {_dims(sb[-2:])})"
                               + ("" if nb == 2 else f" (matmul of shapes {list(sa)} and {list(sb)})"))
        return sb[:-2] + sb[-1:]
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims(sa[-2:])} and {_dims(sb[-2:])})"
                           + ("" if na == nb == 2 else f" (matmul of shapes {list(sa)} and {list(sb)})"))
    batch = sa[:-2] if sa[:-2] == sb[:-2] else broadcast_shapes(sa[:-2], sb[:-2])
    return batch + (sa[-2], sb[-1])


@method
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-d operands are promoted to a row/column and the added dim
    is removed again; dims before the last two are batch dims and broadcast.

    >>> ember.matmul(ember.ones(5, 2, 3), ember.ones(3)).shape
    ember.Size([5, 2])
    """
    if input.__class__ is not Tensor or other.__class__ is not Tensor:
        _check_tensor(input, "matmul", "input")
        _check_tensor(other, "matmul", "other")
    if _autocast.on:  # mixed precision: under ember.autocast products run in the low dtype
        input, other = autocast_inputs("matmul", input, other)  # noqa: A001
    sa, sb = input._shape, other._shape
    d = input._dtype
    if d is not other._dtype or d is dt.bool:
        _same_dtype("matmul", input, other)
    # the common 2-d case stays lean: it is the per-call overhead of every Linear layer
    if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:
        shape = (sa[0], sb[1])
    else:
        shape = _matmul_shape(sa, sb)
    dev = input._device
    if other._device is not dev:
        same_device("matmul", input, other)
    return wrap(dev.backend.run("matmul", (input._h, other._h), _EMPTY), shape, d, dev)


def _rmatmul(self, other):
    return matmul(other, self) if isinstance(other, Tensor) else NotImplemented


def _matmul_op(self, other):
    return matmul(self, other) if isinstance(other, Tensor) else NotImplemented


Tensor.__matmul__ = _matmul_op
Tensor.__rmatmul__ = _rmatmul
# Like PyTorch, ``a @= b`` rebinds ``a`` to a new tensor instead of writing into a's memory
# (the result generally has another shape than ``a``).
Tensor.__imatmul__ = _matmul_op


@method
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices (no broadcasting): ``(n, k) @ (k, m) -> (n, m)``."""
    _check_tensor(input, "mm", "input")
    _check_tensor(mat2, "mm", "mat2")
    if input.ndim != 2:
        raise RuntimeError(f"mm: self must be a matrix, got a {input.ndim}-D tensor of shape {list(input._shape)}")
    if mat2.ndim != 2:
        raise RuntimeError(f"mm: mat2 must be a matrix, got a {mat2.ndim}-D tensor of shape {list(mat2._shape)}")
    return matmul(input, mat2)


@method
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of 3-d tensors with equal batch size: ``(b, n, k) @ (b, k, m) -> (b, n, m)``."""
    _check_tensor(input, "bmm", "input")
    _check_tensor(mat2, "bmm", "mat2")
    if input.ndim != 3:
        raise RuntimeError(f"bmm: batch1 must be a 3D tensor, got shape {list(input._shape)}")
    if mat2.ndim != 3:
        raise RuntimeError(f"bmm: batch2 must be a 3D tensor, got shape {list(mat2._shape)}")
    b, _, k = input._shape
    if mat2._shape[:2] != (b, k):
        raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
                           f"got: [{mat2._shape[0]}, {mat2._shape[1]}] (shapes {list(input._shape)} and "
                           f"{list(mat2._shape)})")
    return matmul(input, mat2)


@method
@autocast_op(None)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector: ``(n, k) @ (k,) -> (n,)``."""
    _check_tensor(input, "mv", "input")
    _check_tensor(vec, "mv", "vec")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got a {input.ndim}-D matrix and a "
                           f"{vec.ndim}-D vector")
    if input._shape[1] != vec._shape[0]:
        raise RuntimeError(f"mv: size mismatch, got mat ({_dims(input._shape)}), vec ({vec._shape[0]})")
    return matmul(input, vec)


@method
@autocast_op(None)
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-d tensors of the same size and dtype (a 0-d result)."""
    _check_tensor(input, "dot", "input")
    _check_tensor(tensor, "dot", "tensor")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input._dtype is not tensor._dtype:
        raise RuntimeError(f"dot: expected both vectors to have same dtype, but found {input._dtype.name} "
                           f"and {tensor._dtype.name}")
    if input._shape != tensor._shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input._shape[0]}] and src "
                           f"[{tensor._shape[0]}] to have the same number of elements")
    return matmul(input, tensor)


@method
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """dot of the conjugate of ``input`` with ``other`` (ember is real-valued, so it equals dot)."""
    return dot(input, other)


@method
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``; a 0-d
    operand multiplies elementwise."""
    _check_tensor(input, "inner", "input")
    _check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input._shape[-1] != other._shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input._shape)} and {list(other._shape)}")
    return tensordot(input, other, ([-1], [-1]))


@method
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-d tensors (types promote): ``out[i, j] = input[i] * vec2[j]``."""
    _check_tensor(input, "outer", "input")
    _check_tensor(vec2, "outer", "vec2")
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return input.reshape(input._shape[0], 1) * vec2.reshape(1, vec2._shape[0])


ger = outer
Tensor.ger = outer


def _contract_dims(dims, na: int, nb: int) -> tuple[list, list]:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(na - dims, na)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, int) else list(da)
    db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"tensordot: both dimension lists should have same length, got {da} and {db}")
    return [norm_dim(d, na, "tensordot") for d in da], [norm_dim(d, nb, "tensordot") for d in db]


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract dims of ``a`` with dims of ``b``: ``dims=n`` pairs a's last n dims with b's first n;
    ``dims=([..], [..])`` names them. The result has a's free dims, then b's.

    >>> ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5)).shape
    ember.Size([2, 5])
    """
    _check_tensor(a, "tensordot", "a")
    _check_tensor(b, "tensordot", "b")
    ca, cb = _contract_dims(dims, a.ndim, b.ndim)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"tensordot: both inputs should have same dtype, got {a._dtype.name} and {b._dtype.name}")
    for x, y in zip(ca, cb):
        if a._shape[x] != b._shape[y]:
            raise RuntimeError(f"tensordot: contracted dimensions need to match, but first has size {a._shape[x]} "
                               f"in dim {x} and second has size {b._shape[y]} in dim {y}")
    if len(set(ca)) != len(ca) or len(set(cb)) != len(cb):
        raise RuntimeError(f"tensordot: a dim appears twice in the contracted dims {ca} / {cb}")
    fa = [d for d in range(a.ndim) if d not in ca]
    fb = [d for d in range(b.ndim) if d not in cb]
    k = 1
    for d in ca:
        k *= a._shape[d]
    out_shape = tuple(a._shape[d] for d in fa) + tuple(b._shape[d] for d in fb)
    pa = math.prod(a._shape[d] for d in fa)
    pb = math.prod(b._shape[d] for d in fb)
    m = a.permute(fa + ca).reshape(pa, k)
    n = b.permute(cb + fb).reshape(k, pb)
    return matmul(m, n).reshape(out_shape)


@method
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block ``(i, j)`` of the result is ``input[i, j] * other`` (types promote)."""
    _check_tensor(input, "kron", "input")
    _check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + input._shape
    sb = (1,) * (nd - other.ndim) + other._shape
    # interleave: a gets a size-1 dim after each of its dims, b before each of its dims
    a = input.reshape(tuple(x for n in sa for x in (n, 1)))
    b = other.reshape(tuple(x for n in sb for x in (1, n)))
    return (a * b).reshape(tuple(p * q for p, q in zip(sa, sb)))


@method
@autocast_op("trace")
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix (integers sum to int64)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._dtype is dt.bool:
        raise NotImplementedError("trace: not implemented for bool tensors; convert with .int()")
    return input.diagonal().sum()


def _scaled(x: Tensor, s, d: dt.dtype) -> Tensor:
    """x * s for alpha/beta; integer results truncate s to an int, as PyTorch does."""
    if s == 1:
        return x
    return x * (int(s) if d.category < 2 else s)


def _check_all(op: str, *tensors):
    for name, t in zip(("input", "first operand", "second operand"), tensors):
        _check_tensor(t, op, name)


_GEMMS = ("addmm", "addbmm", "baddbmm")


def _fused(op: str, input: Tensor, prod_fn, shape: tuple, operands, beta, alpha) -> Tensor:
    """beta * input + alpha * prod_fn(*operands), with PyTorch's dtype, shape and zero-scale rules."""
    d = operands[0]._dtype
    for t in (input,) + tuple(operands[1:]):
        if t._dtype is not d:
            names = ", ".join(x._dtype.name for x in (input,) + tuple(operands))
            raise RuntimeError(f"{op}: input tensors must have the same dtype, but got {names}")
    if broadcast_shapes(input._shape, shape) != shape:
        raise RuntimeError(f"{op}: input of shape {list(input._shape)} can't be expanded to the result "
                           f"shape {list(shape)}")
    if d.is_floating_point and d.itemsize < 4 and (operands[0]._device.type == "cpu" or op not in _GEMMS):
        # half precision: PyTorch's CPU kernels multiply, scale and add in float32 and round once; on GPUs a
        # matrix product stays in 16 bits (float32 accumulation), as PyTorch's CUDA addmm: an upcast there
        # would make GPT-2's projections float32 GEMMs
        from ._elementwise import cast
        up = tuple(cast(x, dt.float32) for x in operands)
        return cast(_fused(op, cast(input, dt.float32), prod_fn, shape, up, beta, alpha), d)
    from ._elementwise import tracks_grad, zero_grad_from
    if alpha == 0:  # PyTorch ignores the product (NaN included) when alpha is 0
        from ._creation import zeros
        prod = zeros(shape, dtype=d, device=operands[0]._device)
        if tracks_grad(*operands):  # but its gradient formula still multiplies through it
            prod = zero_grad_from(prod, prod_fn(*operands))
    else:
        prod = _scaled(prod_fn(*operands), alpha, d)
    if beta == 0:  # and ignores input when beta is 0 (which then gets a zero gradient)
        return zero_grad_from(prod, input)
    return prod + _scaled(input, beta, d)


@method
@autocast_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; input broadcasts to the product's shape."""
    _check_all("addmm", input, mat1, mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"addmm: mat1 and mat2 must be matrices, got {mat1.ndim}-D and {mat2.ndim}-D")
    shape = _matmul_shape(mat1._shape, mat2._shape)
    return _fused("addmm", input, matmul, shape, (mat1, mat2), beta, alpha)


@method
@autocast_op(None)
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _check_all("addmv", input, mat, vec)
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"addmv: vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    shape = _matmul_shape(mat._shape, vec._shape)
    return _fused("addmv", input, matmul, shape, (mat, vec), beta, alpha)


@method
@autocast_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    _check_all("baddbmm", input, batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"baddbmm: batch1 and batch2 must be 3D tensors, got {batch1.ndim}D and {batch2.ndim}D")
    shape = (batch1._shape[0], batch1._shape[1], batch2._shape[2])
    return _fused("baddbmm", input, bmm, shape, (batch1, batch2), beta, alpha)


@method
@autocast_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _check_all("addbmm", input, batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"addbmm: batch1 and batch2 must be 3D tensors, got {batch1.ndim}D and {batch2.ndim}D")
    shape = (batch1._shape[1], batch2._shape[2])
    b, n, k = batch1._shape
    if batch2._shape[:2] != (b, k):
        raise RuntimeError(f"addbmm: batch1 and batch2 shapes cannot be multiplied ({list(batch1._shape)} and "
                           f"{list(batch2._shape)})")

    def prod(x, y):  # the sum over the batch is one matmul: (n, b*k) @ (b*k, m)
        return matmul(x.permute(1, 0, 2).reshape(n, b * k), y.reshape(b * k, shape[1]))
    return _fused("addbmm", input, prod, shape, (batch1, batch2), beta, alpha)


@method
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _check_all("addr", input, vec1, vec2)
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: vec1 and vec2 must be 1-D, got {vec1.ndim}-D and {vec2.ndim}-D")
    shape = (vec1._shape[0], vec2._shape[0])
    return _fused("addr", input, outer, shape, (vec1, vec2), beta, alpha)


def _inplace(fn):
    def op_(self: Tensor, *args, **kw) -> Tensor:
        from ._elementwise import assign_
        out = fn(self, *args, **kw)
        if out._shape != self._shape:
            raise RuntimeError(f"{fn.__name__}_: the result of shape {list(out._shape)} doesn't fit the "
                               f"tensor of shape {list(self._shape)}")
        assign_(self, out)
        return self
    op_.__name__ = fn.__name__ + "_"
    return op_


for _fn in (addmm, addmv, baddbmm, addbmm, addr):
    setattr(Tensor, _fn.__name__ + "_", _inplace(_fn))


@method
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (inputs broadcast). With ``dim`` this is
    ``ember.linalg.cross``; without, PyTorch's legacy default: the first dim of size 3.

    >>> ember.cross(ember.tensor([1., 0, 0]), ember.tensor([0., 1, 0]))
    tensor([0., 0., 1.])
    """
    if dim is None:
        dim = next((i for i, n in enumerate(input._shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {list(input._shape)}")
    return _cross(input, other, dim, "cross")


def _cross(a: Tensor, b: Tensor, dim: int, op: str) -> Tensor:
    _check_tensor(a, op, "input")
    _check_tensor(b, op, "other")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}: expected both inputs to have the same dtype, but got {a._dtype.name} "
                           f"and {b._dtype.name}")
    if a.ndim != b.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions, got {a.ndim} and {b.ndim}")
    d = norm_dim(dim, a.ndim, op)
    if a._shape[d] != 3 or b._shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {a._shape[d]} and {b._shape[d]}")
    shape = broadcast_shapes(a._shape, b._shape)
    a, b = a.expand(shape), b.expand(shape)
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    from ._movement import stack
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _chain_order(shapes: list) -> list:
    """Optimal parenthesisation of a matrix chain (classic O(n^3) dynamic programme): split[i][j]."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return split


def _multi_dot(tensors, op: str) -> Tensor:
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"{op}(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        _check_tensor(t, op, f"tensors[{i}]")
        want = (1, 2) if i in (0, n - 1) else (2,)
        if t.ndim not in want:
            where = "first" if i == 0 else "last" if i == n - 1 else f"tensor {i}"
            raise RuntimeError(f"{op}(): the {where} tensor must be {' or '.join(f'{w}D' for w in want)} "
                               f"but got {t.ndim}D")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"{op}(): all tensors must have be the same dtype but tensor 0 is "
                               f"{tensors[0]._dtype.name} and tensor {i} {t._dtype.name}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(n - 1):
        if mats[i]._shape[1] != mats[i + 1]._shape[0]:
            raise RuntimeError(f"{op}(): tensors {i} and {i + 1} with shapes {list(tensors[i]._shape)} and "
                               f"{list(tensors[i + 1]._shape)} cannot be multiplied")
    split = _chain_order([m._shape for m in mats]) if n > 2 else None

    def prod(i, j):
        if i == j:
            return mats[i]
        k = split[i][j] if split else i
        return matmul(prod(i, k), prod(k + 1, j))
    out = prod(0, n - 1)
    if first_vec and last_vec:
        return out.reshape(())
    if first_vec:
        return out.reshape(out._shape[1:])
    if last_vec:
        return out.reshape(out._shape[:1])
    return out


def chain_matmul(*matrices: Tensor) -> Tensor:
    """Product of 2-d matrices in the cheapest order (prefer ``ember.linalg.multi_dot``)."""
    if len(matrices) == 1:
        m = matrices[0]
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected one or more matrices, but got a {m.ndim}-D tensor")
        return m.clone()
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected one or more matrices, but got a {m.ndim}-D tensor")
    return _multi_dot(matrices, "chain_matmul")


def einsum(*args) -> Tensor:
    """Einstein summation: ``ember.einsum("bij,bjk->bik", a, b)`` (see ember._einsum)."""
    from ._einsum import einsum as _einsum
    return _einsum(*args)


# ---- torch.* spellings of ember.linalg functions ----------------------------------------------
@method
def det(input: Tensor) -> Tensor:
    """Determinant of a (batch of) square matrices: ``ember.linalg.det``."""
    from . import linalg
    return linalg.det(input)


@method
def logdet(input: Tensor) -> Tensor:
    """log(det(A)): NaN for a negative determinant, -inf for a singular matrix."""
    from . import linalg
    sign, logabs = linalg.slogdet(input)
    from ._elementwise import where
    return where(sign < 0, float("nan"), logabs)


@method
def slogdet(input: Tensor):
    """(sign, log|det|) of a (batch of) square matrices."""
    from . import linalg
    from ._reduction import return_types
    return return_types.slogdet(*linalg.slogdet(input))


@method
@autocast_op("inverse")
def inverse(input: Tensor) -> Tensor:
    """Inverse of a (batch of) square matrices: ``ember.linalg.inv``."""
    from . import linalg
    return linalg.inv(input)


@method
def matrix_power(input: Tensor, n: int) -> Tensor:
    """A square matrix to an integer power: ``ember.linalg.matrix_power``."""
    from . import linalg
    return linalg.matrix_power(input, n)


@method
@autocast_op("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Pseudo-inverse dropping singular values below ``rcond * s_max``."""
    from . import linalg
    return linalg.pinv(input, rtol=rcond)
