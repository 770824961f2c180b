"""Registry entries: creation ops, conversions, metadata queries and whole-tensor comparisons.

Creation ops take no tensor inputs, so their samples carry Python data and a ``dtype`` keyword
(the registry's dtype); ``empty`` is compared by shape and dtype only.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from .core import ALL, FLOATS, INTS, OpInfo, T, make
from .movement import FEW, INT_BOOL_F32, S, gen

NUMERIC = INTS + FLOATS


def _dt(name: str):
    return getattr(ember, name)


def _meta(x):
    """Shape and dtype name of a tensor of either library (for values that are undefined)."""
    return tuple(x.shape), str(x.dtype).split(".")[-1]


# ---- tensor / as_tensor ------------------------------------------------------------------------
_DATA = [
    [[1, 2], [3, 4]], [True, False], [1, 2.5], [True, 2], [[1.5], [2]], [], [[], []], 3, 2.5, True, (1, 2),
    [[0.0, -1.0], [float("inf"), -float("inf")]], [float("nan"), 1.0], [[[1]], [[2]]], [0, 1, 127], -7,
]


def _tensor_infer(dtype, rng):
    for i, data in enumerate(_DATA):
        yield S(data, name=f"infer#{i}")
    for arr in (np.arange(4, dtype=np.int32), np.ones((2, 2), np.float16), np.array(1.5), np.float64(2.5),
                np.array([True, False]), np.arange(6.0).reshape(2, 3).T, np.int64(3)):
        yield S(arr, name=f"numpy-{arr.dtype}-{np.shape(arr)}")
    yield S([[1], [1, 2]], raises=ValueError, name="ragged")
    yield S("a", raises=TypeError, name="string")


def _tensor_dtype(dtype, rng):
    d = _dt(dtype)
    for i, data in enumerate([[[1, 2], [3, 4]], [True, False], [0.5, 0, 2.0], 3, [], [[0, 1], [1, 0]]]):
        yield S(data, dtype=d, name=f"#{i}")
    if dtype in INTS:
        yield S([1.7, -0.9, 2.2] if dtype != "uint8" else [1.7, 0.9, 2.2], dtype=d, name="truncates")
        if dtype in ("uint8", "int8", "int16"):
            yield S([40000], dtype=d, raises=RuntimeError, name="overflow")
    if dtype == "uint8":
        yield S([-1, 3], dtype=d, name="negative-wraps")
    if dtype in FLOATS:
        yield S([float("nan"), float("inf"), -0.0, 1e-3], dtype=d, name="specials")
    yield S(make((2, 3), "float64", rng), dtype=d, name="from-numpy-float64")


def _tensor_of_tensors(dtype, rng):
    yield S([T(make((), dtype, rng)), T(make((), dtype, rng))], name="list-of-0d")
    yield S(T(make((2, 3), dtype, rng)), name="from-tensor")
    yield S(T(make((4, 3), dtype, rng), "transposed"), name="from-transposed")


def _as_tensor_samples(dtype, rng):
    d = _dt(dtype)
    yield S([1, 2, 3], name="list")
    yield S([1, 2, 3], dtype=d, name="list-dtype")
    if dtype != "bfloat16":  # torch can't read ml_dtypes' bfloat16 arrays
        yield S(make((2, 3), dtype, rng), name="numpy")
    yield S(make((2, 3), "float64", rng), dtype=d, name="numpy-convert")
    yield S(T(make((2, 3), dtype, rng)), name="tensor")
    yield S(T(make((2, 3), "int32", rng)), dtype=d, name="tensor-convert")
    yield S(2.5, dtype=d, name="scalar")


# ---- zeros / ones / full / empty ---------------------------------------------------------------
_SIZES = [(2, 3), ((2, 3),), ([4],), ((),), (0,), (2, 0, 1), (ember.Size([3, 1]),)]


def _size_samples(dtype, rng):
    d = _dt(dtype)
    for size in _SIZES:
        size = tuple(tuple(s) if isinstance(s, ember.Size) else s for s in size)
        yield S(*size, dtype=d, name=f"{size}")
    yield S(3, name="default-dtype")
    yield S(-1, dtype=d, raises=RuntimeError, name="negative")
    yield S(2.0, dtype=d, raises=TypeError, name="float-size")


def _full_samples(dtype, rng):
    d = _dt(dtype)
    for v in (1, 0, True, 2.5, -3):
        if dtype == "uint8" and v == -3:
            continue
        yield S((2, 3), v, dtype=d, name=f"value={v!r}")
    yield S((), 7, dtype=d, name="0d")
    yield S((0, 2), 7, dtype=d, name="empty")
    if dtype in FLOATS:
        yield S((2,), float("nan"), dtype=d, name="nan")
        yield S((2,), -float("inf"), dtype=d, name="-inf")
    if dtype in INTS:
        yield S((2,), float("inf"), dtype=d, raises=RuntimeError, name="inf-into-int")
        if dtype != "int64":
            yield S((2,), 2 ** 40, dtype=d, raises=RuntimeError, name="huge")
    if dtype == "uint8":
        yield S((2,), -1, dtype=d, name="uint8-wraps-minus-one")
        yield S((2,), 300, dtype=d, raises=RuntimeError, name="uint8-300")
    if dtype == "float16":
        yield S((2,), 1e6, dtype=d, raises=RuntimeError, name="half-overflow")


def _full_infer(dtype, rng):
    for v in (True, 3, 2.5, -1):
        yield S((2, 2), v, name=f"infer-{v!r}")
    yield S((3,), 1.0, name="tuple-size")


def _like_samples(dtype, rng):
    x = T(make((2, 3), dtype, rng))
    yield S(x, name="same")
    yield S(T(make((4, 3), dtype, rng), "transposed"), name="transposed")
    yield S(T(make((), dtype, rng)), name="0d")
    yield S(x, dtype=ember.float64, name="dtype")


def _full_like_samples(dtype, rng):
    x = T(make((2, 3), dtype, rng))
    for v in (2, True, 2.7):
        yield S(x, v, name=f"{v!r}")
    yield S(x, 1, dtype=ember.int16, name="dtype")


# ---- ranges -------------------------------------------------------------------------------------
def _arange_samples(dtype, rng):
    for args in [(5,), (2, 9), (0, 10, 3), (10, 0, -3), (0.0,), (3, 3), (-2, 2), (0, 1, 0.1), (1, 2.5, 0.5),
                 (-1, -5, -1.5), (0.1, 0.3, 0.1), (-0.3, 0, 0.1), (0, 1, 1 / 3), (0, 5, 0.7)]:
        if dtype == "uint8" and any(a < 0 for a in args):
            continue
        if dtype in INTS and any(isinstance(a, float) for a in args):
            continue
        yield S(*args, dtype=_dt(dtype), name=f"{args}")
    if dtype == "float32":
        for args in [(5,), (0, 1, 0.1), (2, 9), (1.0, 4), (0, 10, 2.5), (True, 4)]:
            yield S(*args, name=f"infer{args}")
        yield S(0, 1, 0, raises=RuntimeError, name="zero-step")
        yield S(0, -1, 1, raises=RuntimeError, name="wrong-sign")
        yield S(0, math.inf, raises=RuntimeError, name="inf")
        yield S(0, math.nan, raises=RuntimeError, name="nan")


def _linspace_samples(dtype, rng):
    d = _dt(dtype)
    for args in [(0, 1, 5), (0, 10, 4), (-10, 10, 4), (0, 1, 0), (3, 1, 1), (1, -1, 7), (0, 255, 7), (2, 2, 3)]:
        if dtype == "uint8" and any(a < 0 for a in args):
            continue
        if dtype == "int8" and 255 in args:
            yield S(*args, dtype=d, raises=RuntimeError, name="end-overflows")
            continue
        yield S(*args, dtype=d, name=f"{args}")
    if dtype == "float32":
        yield S(0, 1, 5, name="default-dtype")
        yield S(1, 2, 3, name="ints-give-float")
        yield S(0, 1, -1, raises=RuntimeError, name="negative-steps")


def _logspace_samples(dtype, rng):
    d = _dt(dtype)
    for args, kw in [((0, 2, 3), {}), ((0, 3, 4), {"base": 2}), ((-1, 1, 5), {}), ((0, 1, 0), {}), ((1, 1, 1), {})]:
        if dtype in INTS and args[0] < 0:
            continue
        yield S(*args, dtype=d, name=f"{args}{kw}", **kw)


def _eye_samples(dtype, rng):
    d = _dt(dtype)
    for args in [(3,), (2, 3), (3, 2), (0,), (1, 0)]:
        yield S(*args, dtype=d, name=f"{args}")
    yield S(-1, dtype=d, raises=RuntimeError, name="negative")


# ---- conversions and metadata -------------------------------------------------------------------
def _unary_views(m):
    return [S(m(())), S(m((0,))), S(m((3, 4))), S(m((4, 3), "transposed")), S(m((3, 4), "strided")),
            S(m((3, 4), "expanded")), S(m((6,), special=True))]


def _to_samples(dtype, rng):
    for target in ALL:
        src = make((3, 4), dtype, rng, 0, 100 if target != "bool" else 3)
        if dtype in FLOATS and target in INTS:  # out-of-range float -> int casts are undefined in C
            src = np.abs(src) % (100 if target != "int8" else 100)
        yield S(T(src), _dt(target), name=f"to-{target}")
    yield S(T(make((4, 3), dtype, rng), "transposed"), ember.float64, name="transposed")
    if dtype in FLOATS:
        yield S(T(make((6,), dtype, rng, special=True)), ember.bool, name="specials-to-bool")
        yield S(T(np.array([-1.7, -0.5, 0.5, 2.9], dtype=make((1,), dtype, rng).dtype)), ember.int32, name="truncation")


def _caster(name):
    return lambda lib, x: getattr(x, name)()


def _metadata(lib, x):
    return (x.numel(), x.dim(), x.ndim, tuple(x.size()), tuple(x.shape), x.is_contiguous(), x.stride(),
            lib.numel(x), x.nelement(), x.element_size(), x.is_floating_point())


def _metadata_views(m):
    return [
        S(m(())), S(m((0,))), S(m((0, 3))), S(m((3, 4))), S(m((4, 3), "transposed")), S(m((3, 4), "strided")),
        S(m((3, 4), "expanded")), S(m((2, 3, 4), "transposed")), S(m((3, 1), "transposed")),
    ]


def _view_kinds(lib, x):
    """is_contiguous and stride() of every kind of view of x (a (3, 4) tensor)."""
    views = [x[1], x[:, 1], x[1:], x[:, 1:3], x[::2], x[:, ::2], x[None], x[..., None], x.t(), x.T, x.mT,
             x.permute(1, 0), x.transpose(0, 1), x.unsqueeze(1), x[:1].squeeze(0), x.view(2, 6), x.view(-1),
             x.reshape(4, 3), x.flatten(), x.unflatten(1, (2, 2)), x.diagonal(), x.diagonal(1), x.narrow(1, 1, 2),
             x.select(1, 0), x.expand(2, 3, 4), x[:1].expand(3, 4), x.movedim(0, 1),
             x.unbind(1)[0], x.split(2, 1)[1], x.chunk(2, 0)[0], x.t().contiguous(), x.t()[1:], x.t().unsqueeze(0),
             x.as_strided((2, 2), (1, 2)), x[1:].reshape(-1), x[1:, 1:].reshape(-1), x.squeeze(),
             x[:, :0], x[:0].t()]
    return [(v.is_contiguous(), v.stride(), tuple(v.shape)) for v in views]


def _size_dim(lib, x, d):
    return x.size(d)


def _allclose_samples(dtype, rng):
    a = make((3, 4), dtype, rng)
    near = (a.astype(np.float64) * (1 + 1e-7)).astype(a.dtype) if dtype in FLOATS else a.copy()
    far = a.copy()
    flat = far.reshape(-1)
    flat[0] = (not flat[0]) if dtype == "bool" else flat[0] + 1
    yield S(T(a), T(a.copy()), name="same")
    yield S(T(a), T(near), name="near")
    yield S(T(a), T(far), name="far")
    yield S(T(a), T(far), rtol=1.0, atol=1.0, name="loose")
    yield S(T(a), T(a[:1].copy()), name="broadcast")
    yield S(T(a[:0]), T(a[:0].copy()), name="empty")
    yield S(T(a, "transposed"), T(a.copy(), "strided"), name="views")
    if dtype in FLOATS:
        s = make((6,), dtype, rng, special=True)
        yield S(T(s), T(s.copy()), name="nan")
        yield S(T(s), T(s.copy()), equal_nan=True, name="nan-equal")
        inf = np.array([np.inf, -np.inf, np.inf, 1.0], dtype=s.dtype)
        yield S(T(inf), T(np.array([np.inf, np.inf, 1e4, 1.0], dtype=s.dtype)), name="inf")
    other = "float64" if dtype != "float64" else "float32"
    yield S(T(a), T(make((3, 4), other, rng)), raises=RuntimeError, name="dtype-mismatch")
    yield S(T(a), T(a.copy()), rtol=-1.0, raises=RuntimeError, name="negative-rtol")


def _equal_samples(dtype, rng):
    a = make((3, 4), dtype, rng)
    yield S(T(a), T(a.copy()), name="same")
    b = a.copy()
    b.reshape(-1)[3] = not b.reshape(-1)[3] if dtype == "bool" else b.reshape(-1)[3] + 1
    yield S(T(a), T(b), name="differ")
    yield S(T(a), T(a[:1].copy()), name="shape")
    yield S(T(a[:0]), T(a[:0].copy()), name="empty")
    yield S(T(a), T(a.astype(np.float64)), name="other-dtype")
    yield S(T(make((4, 3), dtype, rng), "transposed"), T(make((4, 3), dtype, rng)), name="views")
    if dtype in FLOATS:
        s = make((6,), dtype, rng, special=True)
        yield S(T(s), T(s.copy()), name="nan")
        yield S(T(np.array([0.0], s.dtype)), T(np.array([-0.0], s.dtype)), name="signed-zero")


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _empty_fn(lib, *a, **k):
    return _meta(lib.empty(*a, **k))


OPS = [
    OpInfo("tensor", _fn("tensor"), _tensor_infer, ("float32",)),
    OpInfo("tensor_dtype", _fn("tensor"), _tensor_dtype, ALL),
    OpInfo("tensor_of_tensors", _fn("tensor"), _tensor_of_tensors, ALL),
    OpInfo("as_tensor", _fn("as_tensor"), _as_tensor_samples, ALL),
    OpInfo("zeros", _fn("zeros"), _size_samples, ALL),
    OpInfo("ones", _fn("ones"), _size_samples, ALL),
    OpInfo("empty", _empty_fn, _size_samples, ALL),
    OpInfo("full", _fn("full"), _full_samples, ALL),
    OpInfo("full_infer", _fn("full"), _full_infer, ("float32",)),
    OpInfo("zeros_like", _fn("zeros_like"), _like_samples, ALL),
    OpInfo("ones_like", _fn("ones_like"), _like_samples, ALL),
    OpInfo("empty_like", lambda lib, *a, **k: _meta(lib.empty_like(*a, **k)), _like_samples, ALL),
    OpInfo("full_like", _fn("full_like"), _full_like_samples, ALL),
    OpInfo("arange", _fn("arange"), _arange_samples, ALL[1:]),
    OpInfo("linspace", _fn("linspace"), _linspace_samples, ALL[1:], tol={"float16": (1e-3, 2e-3)}),
    OpInfo("logspace", _fn("logspace"), _logspace_samples, ALL[1:], tol={"float32": (1e-6, 1e-5)}),
    OpInfo("eye", _fn("eye"), _eye_samples, ALL),
    OpInfo("clone", lambda lib, x: x.clone(), gen(_unary_views), ALL),
    OpInfo("to_dtype", lambda lib, x, d: x.to(d), _to_samples, ALL),
    OpInfo("to_dtype_kw", lambda lib, x: x.to(dtype=lib.float64), gen(lambda m: [S(m((2, 3)))]), INT_BOOL_F32),
    OpInfo("to_same_is_self", lambda lib, x: (x.to(x.dtype) is x, x.to(x.dtype, copy=True) is x),
           gen(lambda m: [S(m((2, 3)))]), INT_BOOL_F32),
    OpInfo("float", _caster("float"), gen(_unary_views), FEW),
    OpInfo("double", _caster("double"), gen(_unary_views), INT_BOOL_F32),
    OpInfo("half", _caster("half"), gen(_unary_views), FEW),
    OpInfo("bfloat16", _caster("bfloat16"), gen(_unary_views), FEW),
    OpInfo("long", _caster("long"), gen(lambda m: [S(m((3, 4), low=0, high=50)), S(m((4, 3), "transposed", 0, 50))]),
           FEW),
    OpInfo("int", _caster("int"), gen(lambda m: [S(m((3, 4), low=0, high=50)), S(m(()))]), FEW),
    OpInfo("bool", _caster("bool"), gen(_unary_views), FEW),
    OpInfo("metadata", _metadata, gen(_metadata_views), FEW),
    OpInfo("view_strides", _view_kinds, gen(lambda m: [S(m((3, 4)))]), ("float32", "int64")),
    OpInfo("size_dim", _size_dim, gen(lambda m: [S(m((2, 3)), 0), S(m((2, 3)), -1),
                                                 S(m(()), 0, raises=IndexError, name="0d"),
                                                 S(m((2, 3)), 2, raises=IndexError, name="range")]), INT_BOOL_F32),
    OpInfo("isclose", _fn("isclose"), _allclose_samples, ALL),
    OpInfo("allclose", _fn("allclose"), _allclose_samples, ALL),
    OpInfo("isclose_method", lambda lib, x, y: x.isclose(y), gen(lambda m: [S(m((3,)), m((3,)))]), INT_BOOL_F32),
    OpInfo("equal", _fn("equal"), _equal_samples, ALL),
    OpInfo("equal_method", lambda lib, x, y: (x.equal(y), x.allclose(y)), gen(lambda m: [S(m((3,)), m((3,)))]),
           ("float32",)),
]


# factories make new leaves and the rest return bools, ints or metadata: no gradients to check
_NOT_DIFFERENTIABLE = {
    "tensor", "tensor_dtype", "tensor_of_tensors", "zeros", "ones", "empty", "full", "full_infer", "zeros_like",
    "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "to_same_is_self", "metadata",
    "view_strides", "size_dim", "isclose", "allclose", "isclose_method", "equal", "equal_method",
}
for _op in OPS:
    _op.differentiable = _op.name not in _NOT_DIFFERENTIABLE
