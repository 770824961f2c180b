"""Registry entries: indexing (``x[key]``, ``x[key] = v``), gather/scatter, masks, nonzero.

Out-of-range indices raise in both libraries: IndexError where PyTorch raises it, RuntimeError
where PyTorch does (ember's error for those is both an IndexError and a RuntimeError).
Samples avoid duplicate indices wherever the written value would depend on write order.
"""

from __future__ import annotations

import numpy as np

from .core import ALL, FLOATS, INTS, OpInfo, T, make
from .movement import FEW, INT_BOOL_F32, S, gen, idx

NUMERIC = INTS + FLOATS
# accumulating ops round after every addition in half precision, in an order that differs between
# libraries when indices repeat: compare those with a few ulps of slack
ACC_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}


def mask(values) -> T:
    return T(np.asarray(values, dtype=bool))


def i32(values) -> T:
    return T(np.asarray(values, dtype=np.int32))


# ---- x[key] ----------------------------------------------------------------------------------
def _getitem(lib, x, key):
    return x[key]


def _basic_keys(m):
    a, b = m((3, 4)), m((2, 3, 4))
    return [
        S(a, 0), S(a, -1), S(a, 2), S(a, slice(1, None)), S(a, slice(None, None, 2)), S(a, slice(-3, -1)),
        S(a, slice(5, 10)), S(a, slice(2, 1)), S(a, (slice(None), 1)), S(a, (1, -2)), S(a, None),
        S(a, (None, slice(None), None)), S(a, Ellipsis), S(a, (Ellipsis, 0)), S(a, (0, Ellipsis, None)),
        S(a, (slice(None), None, slice(1, 3))), S(a, ()), S(a, (slice(None, None, 3), slice(1, None, 2))),
        S(b, (1, Ellipsis, slice(None, 2))), S(b, (Ellipsis, None, 1)), S(b, (slice(None), 2, slice(None))),
        S(a, True), S(a, False), S(a, (None, 0)),
        S(m(()), None), S(m(()), Ellipsis), S(m(()), ()), S(m(()), True), S(m(()), False),
        S(m((0, 3)), (slice(None), 1)), S(m((5,)), slice(-100, 100)),
        S(m((4, 3), "transposed"), (slice(1, 3), 0)), S(m((3, 4), "strided"), (Ellipsis, slice(None, None, 2))),
        S(m((3, 4), "expanded"), (1, slice(1, None))),
        S(a, 3, raises=IndexError, name="int-range"), S(a, (0, -5), raises=IndexError, name="neg-range"),
        S(a, (0, 0, 0), raises=IndexError, name="too-many"),
        S(a, slice(None, None, -1), raises=ValueError, name="negative-step"),
        S(a, slice(None, None, 0), raises=ValueError, name="zero-step"),
        S(a, 1.0, raises=IndexError, name="float-key"), S(m(()), 0, raises=IndexError, name="0d-int"),
    ]


def _advanced_keys(m):
    a, b = m((3, 4)), m((2, 3, 4))
    return [
        S(a, [0, 2]), S(a, [[0, 1], [2, 2]]), S(a, idx([2, -1, 0])), S(a, idx([[1], [0]])), S(a, []),
        S(a, idx(1)), S(a, (idx(1), 2)), S(a, (slice(None), [3, 0, 1])), S(a, (idx([0, 2]), idx([1, 3]))),
        S(a, (idx([[0], [2]]), idx([1, 3, 0]))), S(b, (idx([1, 0]), slice(None), idx([3, 2]))),
        S(b, (slice(None), idx([0, 2]), idx([1, 1]))), S(b, (idx([[0, 1]]), slice(1, 3))),
        S(b, (0, slice(None), idx([3, 0]))), S(b, (idx([1, 0]), 1)), S(b, (Ellipsis, idx([0, 3]))),
        S(b, (None, idx([1]), None)), S(b, (idx([1, 0]), None, idx([2, 0]))), S(a, (slice(None, 2), [0, 0])),
        S(a, i32([2, 0])), S(m((0, 3)), (slice(None), idx([0, 2]))), S(m((0, 3)), idx([])),
        S(m((4, 3), "transposed"), (idx([3, 0]), slice(1, None))), S(m((3, 4), "strided"), idx([2, 2, 0])),
        S(m((3, 4), "expanded"), (idx([1, 2]), idx([0, 3]))),
        S(a, idx([0, 3]), raises=IndexError, name="range"), S(a, [-4], raises=IndexError, name="neg-range"),
        S(a, (slice(None), idx([4])), raises=IndexError, name="range-dim1"),
        S(a, T(np.array([0.0, 1.0], np.float32)), raises=IndexError, name="float-index"),
        S(a, (idx([0, 1]), idx([0, 1, 2])), raises=IndexError, name="no-broadcast"),
        S(m(()), (None, idx([0, 0])), raises=IndexError, name="0d-too-many"),
    ]


def _bool_keys(m):
    a, b = m((3, 4)), m((2, 3, 4))
    return [
        S(a, mask([[True, False, True, False]] * 3)), S(a, mask([True, False, True])), S(a, mask([False] * 3)),
        S(a, (slice(None), mask([True, True, False, True]))), S(b, mask(np.eye(2, 3, dtype=bool))),
        S(b, (mask([True, False]), slice(1, None))), S(b, (Ellipsis, mask([False, True, True, False]))),
        S(b, (mask([True, True]), idx([0, 2]))), S(b, (1, mask([[True, False, True, True]] * 3))),
        S(m(()), mask(True)), S(m(()), mask(False)), S(m((0, 3)), mask(np.zeros((0, 3), bool))),
        S(m((4, 3), "transposed"), mask([True, False, False, True])),
        S(m((3, 4), "expanded"), mask([[False, True, True, True]] * 3)),
        S(a, mask([True, False]), raises=IndexError, name="wrong-shape"),
    ]


# ---- x[key] = value --------------------------------------------------------------------------
def _setitem(lib, x, key, value):
    y = x.clone()
    y[key] = value
    return y


def _setitem_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, 1), S(a, -1, m((4,))), S(a, (slice(None), 1), m((3,))), S(a, slice(None, None, 2), m((1, 4))),
        S(a, (Ellipsis, slice(1, 3)), m(())), S(a, None, 0), S(a, Ellipsis, m((3, 1))), S(a, (1, 2), True),
        S(a, [0, 2], m((2, 4))), S(a, (idx([0, 2]), idx([1, 3])), m((2,))), S(a, (slice(None), idx([3, 0])), m((3, 1))),
        S(a, idx([[2], [0]]), m((4,))), S(a, (idx([-1, 0]), 1), 0),
        S(m((2, 3, 4)), (idx([1, 0]), slice(None), idx([3, 1])), m((3,))),
        S(a, mask([[True, False, True, False]] * 3), 0), S(a, mask([True, False, True]), m((4,))),
        S(a, mask([[True, False, False, True]] * 3), m((6,))), S(a, mask([False] * 3), m((4,))),
        S(m(()), Ellipsis, 2), S(m(()), None, m((1,))), S(m((0, 3)), (slice(None), 1), 1),
        S(m((4, 3), "transposed"), (slice(1, 3), 0), m((2,))), S(a, (1, slice(None)), m((4,), "strided")),
        S(a, 1, T(np.arange(4, dtype=np.float64)), name="other-dtype"),
        S(a, 3, 0, raises=IndexError, name="range"), S(a, idx([5]), 0, raises=IndexError, name="adv-range"),
        S(a, 0, m((3,)), raises=RuntimeError, name="shape-mismatch"),
        S(a, [0, 1], m((3,)), raises=RuntimeError, name="adv-shape-mismatch"),
    ]


# ---- index_select / gather / scatter -----------------------------------------------------------
def _index_select_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, idx([2, 0, 2])), S(a, 1, idx([3])), S(a, -1, idx([])), S(a, 0, i32([1, 1])), S(a, 1, idx(2)),
        S(m((2, 3, 4)), 1, idx([2, 0])), S(m(()), 0, idx([0])), S(m(()), 0, idx(0)), S(m((0, 3)), 1, idx([0, 0])),
        S(m((4, 3), "transposed"), 1, idx([2, 1])), S(m((3, 4), "expanded"), 0, idx([2, 0])),
        S(a, 0, idx([3]), raises=IndexError, name="range"), S(a, 0, idx([-1]), raises=IndexError, name="negative"),
        S(a, 0, idx([[0]]), raises=IndexError, name="2d-index"),
        S(a, 0, T(np.array([0.0], np.float32)), raises=RuntimeError, name="float-index"),
        S(m(()), 0, idx([0, 0]), raises=RuntimeError, name="scalar-two-values"),
        S(a, 2, idx([0]), raises=IndexError, name="dim-range"),
    ]


def _gather_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, idx([[0, 1, 2, 0], [2, 2, 1, 0]])), S(a, 1, idx([[3, 0], [1, 1], [2, 3]])), S(a, -1, idx([[0], [3]])),
        S(a, 1, idx(np.zeros((3, 0), np.int64))), S(a, 0, i32([[1, 2]])),
        S(m((2, 3, 4)), 1, idx(np.zeros((2, 5, 4), np.int64) + 2)),
        S(m(()), 0, idx(0)), S(m(()), 0, idx([0, 0])), S(m((4, 3), "transposed"), 0, idx([[3, 0, 1]])),
        S(m((3, 4), "expanded"), 1, idx([[1, 1, 0]])), S(a, 1, T(np.array([[0, 1], [2, 3]]).T.copy(), "transposed")),
        S(a, 0, idx([[3]]), raises=RuntimeError, name="range"),
        S(a, 0, idx([[-1]]), raises=RuntimeError, name="negative"),
        S(a, 0, idx([0]), raises=RuntimeError, name="ndim"),
        S(a, 0, idx(np.zeros((1, 5), np.int64)), raises=RuntimeError, name="too-big"),
    ]


def _scatter_samples(m):
    a = m((3, 4))
    u = idx([[0, 1, 2, 0], [2, 0, 1, 1]])  # no duplicate target along dim 0
    return [
        S(a, 0, u, m((2, 4))), S(a, 0, u, m((3, 5))), S(a, 1, idx([[3, 0], [1, 2], [0, 3]]), m((3, 2))),
        S(a, 0, u, 2), S(a, 1, idx([[2]]), value=-1), S(a, 0, idx(np.zeros((0, 4), np.int64)), m((0, 4))),
        S(m(()), 0, idx(0), m(())), S(m((4, 3), "transposed"), 1, idx([[2, 0]]), m((1, 2))),
        S(a, -1, i32([[1, 0]]), m((1, 2), "strided")),
        S(a, 0, idx([[3]]), 1, raises=RuntimeError, name="range"),
        S(a, 0, idx([[-1]]), 1, raises=RuntimeError, name="negative"),
        S(a, 0, idx(np.zeros((3, 4), np.int64)), m((2, 4)), raises=RuntimeError, name="src-too-small"),
        S(a, 0, idx([[0]]), 1, reduce="mean", raises=RuntimeError, name="bad-reduce"),
    ]


def _scatter_src_dtype(dtype, rng):
    other = "int64" if dtype.startswith("float") or dtype == "bfloat16" else "float32"
    yield S(T(make((3, 4), dtype, rng)), 0, idx([[0]]), T(make((1, 1), other, rng)), raises=RuntimeError,
            name="src-dtype")


def _scatter_reduce_legacy(m):
    a = m((3, 4), low=-2, high=2)
    dup = idx([[0, 1, 2, 0], [0, 1, 0, 0], [2, 2, 2, 0]])
    return [S(a, 0, dup, m((3, 4), low=-2, high=2), reduce="add"),
            S(a, 0, dup, m((3, 4), low=-2, high=2), reduce="multiply"),
            S(a, 0, dup, 2, reduce="add"), S(a, 1, idx([[0, 0]]), 3, reduce="multiply")]


def _scatter_add_samples(m):
    a = m((3, 4))
    dup = idx([[0, 1, 2, 0], [0, 1, 0, 0], [2, 2, 2, 0]])
    return [
        S(a, 0, dup, m((3, 4))), S(a, 1, idx([[0, 0, 3], [1, 1, 1]]), m((2, 5))),
        S(m((5,)), 0, idx([4, 4, 0]), m((3,))),
        S(a, 0, idx(np.zeros((0, 4), np.int64)), m((0, 4))), S(m(()), 0, idx(0), m(())),
        S(m((4, 3), "transposed"), 0, idx([[3, 3, 3]]), m((1, 3), "strided")),
        S(a, 0, idx([[3]]), m((1, 1)), raises=RuntimeError, name="range"),
    ]


def _scatter_reduce_samples(dtype, rng):
    def m(shape, layout="contiguous"):
        return T(make(shape, dtype, rng, -3, 3), layout)
    dup = idx([[0, 1, 2, 0], [0, 1, 0, 0], [2, 2, 2, 0]])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        if reduce == "mean" and dtype == "bool":
            continue
        for inc in (True, False):
            yield S(m((3, 4)), 0, dup, m((3, 4)), reduce, include_self=inc, name=f"{reduce}-self{inc}")
            yield S(m((5,)), 0, idx([4, 4, 0, 4]), m((4,)), reduce, include_self=inc, name=f"{reduce}-1d-self{inc}")
            yield S(m((4, 3), "transposed"), 1, idx([[2, 2], [0, 2]]), m((2, 3)), reduce, include_self=inc,
                    name=f"{reduce}-views-self{inc}")
        yield S(m((3, 4)), 0, idx([[3]]), m((1, 1)), reduce, raises=RuntimeError, name=f"{reduce}-range")
    if dtype in FLOATS:
        nan = make((3, 4), dtype, rng, special=True)
        yield S(T(nan), 1, idx([[0, 0, 1, 1]] * 3), T(make((3, 4), dtype, rng, special=True)), "amax", name="nan")
    yield S(m((3,)), 0, idx([0]), m((1,)), "median", raises=RuntimeError, name="bad-reduce")


def _index_add_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, idx([2, 0, 2]), m((3, 4))), S(a, 1, idx([3, 3]), m((3, 2))), S(a, 0, idx([1]), m((1, 4)), alpha=2),
        S(a, -1, i32([0]), m((3, 1))), S(a, 0, idx([]), m((0, 4))), S(m(()), 0, idx([0]), m(())),
        S(m((4, 3), "transposed"), 0, idx([3, 3, 0]), m((3, 3), "strided")),
        S(a, 0, idx([3]), m((1, 4)), raises=RuntimeError, name="range"),
        S(a, 0, idx([-1]), m((1, 4)), raises=RuntimeError, name="negative"),
        S(a, 0, idx([0]), m((2, 4)), raises=RuntimeError, name="shape"),
    ]


def _index_copy_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, idx([2, 0]), m((2, 4))), S(a, 1, idx([3, 1, 0]), m((3, 3))), S(a, -1, idx([]), m((3, 0))),
        S(m(()), 0, idx([0]), m((1,))), S(m((4, 3), "transposed"), 1, idx([1]), m((4, 1), "strided")),
        S(a, 0, idx([3]), m((1, 4)), raises=IndexError, name="range"),
        S(a, 0, idx([-1]), m((1, 4)), raises=IndexError, name="negative"),
        S(a, 0, idx([0]), m((2, 4)), raises=IndexError, name="shape"),
    ]


def _index_fill_samples(m):
    a = m((3, 4))
    return [
        S(a, 0, idx([2, 0]), 1), S(a, 1, idx([3, -1, 0]), 2.5), S(a, 1, idx([0]), m(())), S(a, 0, idx([]), 1),
        S(a, 0, idx(1), True), S(m(()), 0, idx([0]), 2), S(m((4, 3), "transposed"), 0, idx([1, 3]), 0),
        S(a, 0, idx([3]), 1, raises=IndexError, name="range"),
        S(a, 0, idx([[0]]), 1, raises=RuntimeError, name="2d-index"),
        S(a, 0, idx([0]), m((1,)), raises=RuntimeError, name="1d-value"),
    ]


def _index_put_samples(m):
    a = m((3, 4), low=-2, high=2)
    return [
        S(a, (idx([0, 2]),), m((2, 4)), False), S(a, (idx([0, 2]), idx([1, 3])), m(()), False),
        S(a, (idx([0, 0, 2]),), m((3, 4), low=-2, high=2), True, name="dup-accumulate"),
        S(a, (idx([0, 0, 1, 0]), idx([3, 3, 3, 3])), m((4,), low=-2, high=2), True, name="dup-accumulate-2"),
        S(a, (idx([1, 1]),), m((4,), low=-2, high=2), True, name="broadcast-accumulate"),
        S(a, (mask([True, False, True]),), m((4,)), False), S(a, (mask(np.eye(3, 4, dtype=bool)),), m(()), True),
        S(a, (idx([-1]), idx([0])), m((1,)), False),
        S(m((4, 3), "transposed"), (idx([3, 0]),), m((2, 3)), True),
        S(a, (idx([3]),), m(()), False, raises=IndexError, name="range"),
        S(a, (idx([3]),), m(()), True, raises=IndexError, name="range-accumulate"),
        S(a, (idx([0, 1]),), m((3,)), False, raises=RuntimeError, name="shape"),
    ]


def _index_put_dtype(dtype, rng):
    other = "int64" if dtype.startswith("float") or dtype == "bfloat16" else "float32"
    yield S(T(make((3, 4), dtype, rng)), (idx([0]),), T(make((), other, rng)), False, raises=RuntimeError,
            name="value-dtype")


def _index_put_fn(lib, x, indices, values, accumulate):
    return x.index_put(indices, values, accumulate=accumulate)


def _index_put_inplace_fn(lib, x, indices, values, accumulate):
    y = x.clone()
    r = y.index_put_(indices, values, accumulate=accumulate)
    return y, r


# ---- masks ------------------------------------------------------------------------------------
def _masked_fill_samples(m):
    a = m((3, 4))
    return [
        S(a, mask([[True, False, True, False]] * 3), 1.5), S(a, mask([True, False, False, True]), -1),
        S(a, mask(np.zeros((3, 4), bool)), 2), S(a, mask(True), m(())), S(a, mask([[True], [False], [True]]), True),
        S(a, mask(np.ones((2, 3, 4), bool)), 0, name="mask-bigger"), S(m(()), mask(True), 3),
        S(m((0, 4)), mask([True, False, True, True]), 1),
        S(m((4, 3), "transposed"), mask([True, False, True]), 0),
        S(m((3, 4), "expanded"), mask([True, False, True, True]), 5),
        S(a, T(np.array([1, 0, 1, 0])), 1, raises=RuntimeError, name="int-mask"),
        S(a, mask([True, False, True, False]), m((1,)), raises=RuntimeError, name="1d-value"),
        S(a, mask([True, False, True]), 1, raises=RuntimeError, name="bad-broadcast"),
    ]


def _masked_fill_special(dtype, rng):
    x = T(make((3, 4), dtype, rng))
    m = mask([False, True, True, False])
    for v in (float("nan"), float("inf"), 1e300):
        if dtype in FLOATS and v != 1e300:
            yield S(x, m, v, name=f"{v}")
        elif dtype not in ("bool", "float64"):
            yield S(x, m, v, raises=RuntimeError, name=f"{v}-overflows")
    if dtype == "uint8":
        yield S(x, m, -1, name="uint8-wraps-minus-one")
        yield S(x, m, 300, raises=RuntimeError, name="uint8-300")


def _masked_select_samples(m):
    a = m((3, 4))
    return [
        S(a, mask([[True, False, True, False]] * 3)), S(a, mask([True, False, True, True])),
        S(a, mask(np.zeros((3, 4), bool))),
        S(m((4,)), mask(np.ones((3, 4), bool))), S(m(()), mask(True)), S(m(()), mask([True, False])),
        S(m((0, 4)), mask([True, False, True, True])), S(m((4, 3), "transposed"), mask([[True, False, True]] * 4)),
        S(m((3, 4), "expanded"), mask([False, True, True, True])),
        S(a, T(np.array([1, 0, 1, 0])), raises=RuntimeError, name="int-mask"),
    ]


def _masked_scatter_samples(m):
    a = m((3, 4))
    return [S(a, mask([[True, False, True, False]] * 3), m((8,))), S(a, mask([True, False, False, True]), m((3, 4))),
            S(a, mask(np.zeros((3, 4), bool)), m((0,))),
            S(m((4, 3), "transposed"), mask([True, False, True]), m((2, 4)))]


# ---- take, nonzero ----------------------------------------------------------------------------
def _take_samples(m):
    a = m((3, 4))
    return [
        S(a, idx([0, 11, 5])), S(a, idx([[-1, 0], [3, -12]])), S(a, idx([])), S(a, idx(7)), S(m(()), idx([0, 0])),
        S(m((4, 3), "transposed"), idx([1, 2, 3])), S(m((3, 4), "strided"), idx([[5], [6]])),
        S(a, idx([12]), raises=IndexError, name="range"), S(a, idx([-13]), raises=IndexError, name="neg-range"),
        S(a, i32([0]), raises=RuntimeError, name="int32-index"), S(m((0,)), idx([0]), raises=IndexError, name="empty"),
    ]


def _take_along_dim_samples(m):
    a = m((3, 4))
    return [
        S(a, idx([[0, 3], [1, 1], [2, 0]]), 1), S(a, idx([[2, 1, 0, 0]]), 0), S(a, idx([0, 11, 3])),
        S(a, idx([0, -1]), raises=RuntimeError, name="flat-negative"),
        S(a, idx([[0], [2], [1]]), 1), S(m((1, 4)), idx(np.zeros((3, 1), np.int64)), 1), S(a, idx([[-1, 0]]), 1),
        S(m((2, 3, 4)), idx(np.zeros((2, 1, 4), np.int64) + 2), 1), S(m((4, 3), "transposed"), idx([[1, 2]]), -1),
        S(a, idx([0, 0, 0]), 1, raises=RuntimeError, name="ndim"),
        S(a, i32([[0]]), 1, raises=RuntimeError, name="int32-index"),
    ]


def _nonzero_samples(m):
    return [S(m(())), S(m((0,))), S(m((5,))), S(m((3, 4))), S(m((2, 3, 4))), S(m((2, 0, 3))),
            S(m((4, 3), "transposed")), S(m((3, 4), "expanded")), S(m((6,), special=True))]


def _nonzero_bool(dtype, rng):
    yield S(T(np.zeros((3, 2), dtype=make((1,), dtype, rng).dtype)), name="all-zero")
    yield S(T(make((3, 4), dtype, rng, -1, 1)), name="small-values")


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _meth(name):
    return lambda lib, x, *a, **k: getattr(x, name)(*a, **k)


def _gen_both(*builders):
    def samples(dtype, rng):
        for b in builders:
            yield from b(dtype, rng)
    return samples


def _clone_inplace(name):
    def fn(lib, x, *a, **k):
        y = x.clone()
        r = getattr(y, name)(*a, **k)
        return y, r
    return fn


OPS = [
    OpInfo("getitem_basic", _getitem, gen(_basic_keys), ALL),
    OpInfo("getitem_advanced", _getitem, gen(_advanced_keys), ALL),
    OpInfo("getitem_bool", _getitem, gen(_bool_keys), ALL),
    OpInfo("setitem", _setitem, gen(_setitem_samples), ALL),
    OpInfo("index_select", _fn("index_select"), gen(_index_select_samples), ALL),
    OpInfo("index_select_method", _meth("index_select"), gen(lambda m: [S(m((3, 4)), 1, idx([0, 0]))]), INT_BOOL_F32),
    OpInfo("gather", _fn("gather"), gen(_gather_samples), ALL),
    OpInfo("gather_method", _meth("gather"), gen(lambda m: [S(m((3, 4)), 1, idx([[0], [1], [3]]))]), INT_BOOL_F32),
    OpInfo("scatter", _fn("scatter"), _gen_both(gen(_scatter_samples), _scatter_src_dtype), ALL),
    OpInfo("scatter_reduce_legacy", _fn("scatter"), gen(_scatter_reduce_legacy), NUMERIC),
    OpInfo("scatter_", _clone_inplace("scatter_"), gen(lambda m: [S(m((3, 4)), 0, idx([[1, 0]]), m((1, 2)))]), FEW),
    OpInfo("scatter_add", _fn("scatter_add"), _gen_both(gen(_scatter_add_samples), _scatter_src_dtype), ALL),
    OpInfo("scatter_add_", _clone_inplace("scatter_add_"),
           gen(lambda m: [S(m((3, 4)), 0, idx([[1, 1]]), m((1, 2)))]), FEW),
    OpInfo("scatter_reduce", _fn("scatter_reduce"), _scatter_reduce_samples, ALL),
    OpInfo("scatter_reduce_", _clone_inplace("scatter_reduce_"),
           gen(lambda m: [S(m((3, 4)), 0, idx([[1, 1]]), m((1, 2)), "amax", include_self=False)]), FEW),
    OpInfo("index_add", _fn("index_add"), gen(_index_add_samples), ALL),
    OpInfo("index_add_", _clone_inplace("index_add_"), gen(lambda m: [S(m((3, 4)), 0, idx([1, 1]), m((2, 4)))]), FEW),
    OpInfo("index_copy", _fn("index_copy"), gen(_index_copy_samples), ALL),
    OpInfo("index_copy_", _clone_inplace("index_copy_"), gen(lambda m: [S(m((3, 4)), 1, idx([2]), m((3, 1)))]), FEW),
    OpInfo("index_fill", _fn("index_fill"), gen(_index_fill_samples), ALL),
    OpInfo("index_fill_", _clone_inplace("index_fill_"), gen(lambda m: [S(m((3, 4)), 1, idx([2]), 1)]), FEW),
    OpInfo("index_put", _index_put_fn, _gen_both(gen(_index_put_samples), _index_put_dtype), ALL),
    OpInfo("index_put_", _index_put_inplace_fn, gen(_index_put_samples), FEW),
    OpInfo("masked_fill", _fn("masked_fill"), _gen_both(gen(_masked_fill_samples), _masked_fill_special), ALL),
    OpInfo("masked_fill_", _clone_inplace("masked_fill_"),
           gen(lambda m: [S(m((3, 4)), mask([True, False, False, True]), 2),
                          S(m((3, 4)), mask(np.ones((2, 3, 4), bool)), 2, raises=RuntimeError, name="mask-bigger")]),
           FEW),
    OpInfo("masked_select", _fn("masked_select"), gen(_masked_select_samples), ALL),
    OpInfo("masked_scatter", _fn("masked_scatter"), gen(_masked_scatter_samples), FEW),
    OpInfo("take", _fn("take"), gen(_take_samples), ALL),
    OpInfo("take_along_dim", _fn("take_along_dim"), gen(_take_along_dim_samples), ALL),
    OpInfo("nonzero", _fn("nonzero"), _gen_both(gen(_nonzero_samples), _nonzero_bool), ALL),
    OpInfo("nonzero_tuple", lambda lib, x: lib.nonzero(x, as_tuple=True),
           _gen_both(gen(_nonzero_samples), _nonzero_bool), ALL),
    OpInfo("nonzero_method", lambda lib, x: x.nonzero(), gen(lambda m: [S(m((3, 4)))]), INT_BOOL_F32),
    OpInfo("argwhere", _fn("argwhere"), _gen_both(gen(_nonzero_samples), _nonzero_bool), ALL),
]

for _op in OPS:
    if _op.name in ("scatter_reduce_legacy", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
                    "index_add", "index_add_", "index_put", "index_put_"):
        _op.tol = ACC_TOL
for _op in OPS:  # integer outputs
    if _op.name.startswith(("nonzero", "argwhere")):
        _op.differentiable = False
