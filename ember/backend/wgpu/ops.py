"""The table of ops the Wgpu backend runs as kernels: ``GPU[op](backend, *inputs, **attrs)``.

A function may return ``NotImplemented`` for inputs it has no kernel for (an integer pow with tensor
exponents, say); the backend then runs the op on the host.
"""

from __future__ import annotations

from . import activations, advindex, conv, indexing, matmul, movement, pool, random, reduce, scan, scatter
from . import elementwise as E

GPU: dict = {}


def _u(op):
    def run(be, x):
        r = E.run_unary(be, op, x)
        return NotImplemented if r is None else r
    return run


def _b(op):
    def run(be, x, y):
        r = E.run_binary(be, op, x, y)
        return NotImplemented if r is None else r
    return run


for _op in E.UNARY_OPS:
    GPU[_op] = _u(_op)
for _op in E.BINARY_OPS | {"pow"}:
    GPU[_op] = _b(_op)


def _cast(be, x, dtype):
    return E.run_cast(be, x, dtype)


def _where(be, c, x, y):
    r = E.run_where(be, c, x, y)
    return NotImplemented if r is None else r


def _clamp(be, x, lo, hi):
    r = E.run_clamp(be, x, lo, hi)
    return NotImplemented if r is None else r


def _nan_to_num(be, x, nan, posinf, neginf):
    return E.run_nan_to_num(be, x, nan, posinf, neginf)


GPU.update({"cast": _cast, "where": _where, "clamp": _clamp, "nan_to_num": _nan_to_num})
GPU.update(movement.OPS)
GPU.update(indexing.OPS)
GPU.update(reduce.OPS)
GPU.update(matmul.OPS)
GPU.update(conv.OPS)
GPU.update(activations.OPS)
GPU.update(scatter.OPS)
GPU.update(pool.OPS)
GPU.update(random.OPS)
GPU.update(advindex.OPS)
GPU.update(scan.OPS)

VIEWS = frozenset({"reshape", "permute", "expand", "slice", "diagonal", "as_strided"})


def can_view(x, shape) -> bool:
    return movement._view_strides(x.shape, x.strides, tuple(shape)) is not None


def _hardtanh(be, x, min_val, max_val):
    return _clamp(be, x, min_val, max_val)


def _relu(be, x):
    return _clamp(be, x, 0, None)


# activations PyTorch defines on integers too: the frontend's float decomposition would change the dtype
GPU.update({"hardtanh": _hardtanh, "relu": _relu})


def _masked_fill(be, x, mask, value):
    if hasattr(value, "dtype") and value.dtype is not x.dtype:
        value = E.run_cast(be, value, x.dtype)
    elif not hasattr(value, "dtype") and E.T.st(x.dtype) != "f32":
        value = int(value)
    r = E.run_where(be, mask, value, x)
    return NotImplemented if r is None else r


GPU["masked_fill"] = _masked_fill
