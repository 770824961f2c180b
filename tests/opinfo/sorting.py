"""Registry entries: sort, argsort, topk, kthvalue, median, mode, quantile, unique, searchsorted,
bucketize, bincount, histc.

Indices are compared wherever they are determined: stable sorts, and unstable ones on data
without ties. PyTorch's CPU kernels for unstable sort, topk, kthvalue and median pick an
unspecified index among tied values, so entries whose samples have ties (small integer ranges)
set ``nondeterministic_indices`` and compare values only.
"""

from __future__ import annotations

import numpy as np

from .core import ALL, FLOATS, INTS, OpInfo, T
from .linalg import F32_64, S, gen

NUMERIC = INTS + FLOATS
NAN, INF = float("nan"), float("inf")
NO_BOOL = ("uint8", "int8", "int16", "int32", "int64") + FLOATS
# integers and half types: random samples have ties, so PyTorch's index choice is unspecified
TIES = INTS + ("float16", "bfloat16")


def _special(m):
    """NaN, +-inf and a zero: distinct values, so indices are determined (one NaN only)."""
    return m.const([3.0, NAN, 1.0, 0.0, INF, -2.5, -INF])


# ---- sort family -------------------------------------------------------------------------------
def _sort_samples(m, ties=True):
    out = [S(m(())), S(m((0,))), S(m((1,))), S(m((7,))), S(m((3, 4)), 0), S(m((3, 4)), -1), S(m((2, 0)), 1),
           S(m((2, 3, 4)), 1), S(m((3, 4)), descending=True), S(m((2, 3, 4)), 0, True),
           S(m((4, 3), "transposed"), 0), S(m((3, 6), "strided"), descending=True), S(m((3, 4), "expanded"), 0),
           S(m((3, 4)), 2, raises=IndexError, name="dim-range")]
    if m.dtype in FLOATS:
        out += [S(_special(m)), S(_special(m), descending=True)]
    return out


def _stable(s):
    """The sample with stable=True; PyTorch then takes dim and descending as keywords only."""
    kw = dict(zip(("dim", "descending"), s.args[1:]), **s.kwargs)
    return S(s.args[0], stable=True, **kw, name=s.name, raises=s.raises)


def _sort_stable(m):
    out = [_stable(s) for s in _sort_samples(m)]
    if m.dtype != "bool":
        ties = m.ints((5, 12), 2)
        out += [S(ties, stable=True), S(ties, stable=True, descending=True), S(ties, dim=0, stable=True)]
    if m.dtype in FLOATS:
        many_nan = m.const([NAN, 1.0, NAN, -0.0, 0.0, 1.0, NAN])
        out += [S(many_nan, stable=True), S(many_nan, stable=True, descending=True)]
    return out


def _topk(m):
    return [S(m((6,)), 3), S(m((4, 6)), 2), S(m((4, 6)), 2, dim=0, largest=False), S(m((4, 6)), 6),
            S(m(()), 1), S(m((0, 3)), 0, dim=0), S(m((5,)), 0), S(m((4, 3), "transposed"), 2, 0),
            S(m((3, 6), "strided"), 1),
            *([S(_special(m), 3), S(_special(m), 3, largest=False)] if m.dtype in FLOATS else []),
            S(m((5,)), 6, raises=RuntimeError, name="k-range"), S(m((5,)), -1, raises=RuntimeError, name="k-negative"),
            S(m((3, 4)), 1, 2, raises=IndexError, name="dim-range")]


def _kthvalue(m):
    return [S(m((6,)), 3), S(m((4, 6)), 2), S(m((4, 6)), 1, 0, True), S(m((4, 6)), 4, dim=0), S(m(()), 1),
            S(m((0, 3)), 1, dim=1), S(m((4, 3), "transposed"), 2, 0), S(m((3, 6), "strided"), 3),
            *([S(_special(m), 7), S(_special(m), 1)] if m.dtype in FLOATS else []),
            S(m((5,)), 6, raises=RuntimeError, name="k-range"), S(m((5,)), 0, raises=RuntimeError, name="k-zero"),
            S(m((0, 3)), 1, dim=0, raises=IndexError, name="empty-dim")]


def _median_all(m):
    out = [S(m(())), S(m((1,))), S(m((7,))), S(m((4,))), S(m((3, 4))), S(m((4, 3), "transposed")),
           S(m((3, 6), "strided"))]
    if m.dtype in FLOATS:
        out += [S(m((0,))), S(_special(m)), S(m.const([NAN, NAN])), S(m.const([1.0, NAN, NAN, 2.0]))]
    return out


def _median_dim(m):
    out = [S(m((6,)), 0), S(m((4, 6)), 1), S(m((4, 6)), 0, True), S(m((2, 3, 4)), -1), S(m(()), 0),
           S(m((0, 3)), 1), S(m((4, 3), "transposed"), 0), S(m((3, 6), "strided"), 1),
           S(m((0, 3)), 0, raises=IndexError, name="empty-dim")]
    if m.dtype in FLOATS:
        rows = m.const([[1.0, NAN, 3.0, 2.0], [4.0, 1.0, 0.0, 2.0], [NAN, 5.0, 6.0, 7.0]])
        out += [S(rows, 1), S(rows, 1, keepdim=True)]
    return out


def _nanmedian_dim(m):
    out = [s for s in _median_dim(m) if s.raises is None]
    if m.dtype in FLOATS:
        out += [S(m.const([[NAN, NAN, NAN], [NAN, 2.0, NAN]]), 1, name="all-nan-row")]
    return out


def _mode(m):
    out = [S(m.ints((7,), 3)), S(m.ints((5, 12), 3)), S(m.ints((5, 12), 3), 0, True),
           S(m(())), S(m((1,))), S(m((0, 3))), S(m.ints((4, 3), 2, "transposed"), 0),
           S(m.ints((3, 8), 2, "strided")), S(m.ints((3, 4), 2, "expanded"), 0),
           S(m((0, 3)), 0, raises=IndexError, name="empty-dim")]
    if m.dtype in FLOATS:
        out.append(S(m.const([1.0, 2.0, 2.0, 1.0, 3.0, 2.0, 1.0]), name="tie"))
    return out


# ---- quantile ----------------------------------------------------------------------------------
MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(m, nan=False):
    q = m.const([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
    out = [S(m((7,)), 0.3), S(m((4, 6)), 0.5, dim=1), S(m((4, 6)), q, dim=0, keepdim=True), S(m((4, 6)), q),
           S(m((4, 6)), q, keepdim=True), S(m(()), 0.5), S(m(()), q, dim=0, keepdim=True),
           S(m((2, 3, 4)), m.const(0.75), dim=1), S(m((4, 3), "transposed"), q, 0), S(m((3, 6), "strided"), 0.2, -1)]
    for mode in MODES:
        out += [S(m.const(np.arange(6.0)), q, interpolation=mode), S(m((3, 5)), q, 1, interpolation=mode)]
    rows = m.const([[1.0, NAN, 3.0, 2.0], [4.0, 1.0, 0.0, 2.0], [NAN, NAN, NAN, NAN]])
    out += [S(rows, 0.5, dim=1), S(rows, q, dim=1, interpolation="nearest"), S(rows, 0.4)]
    out += [S(m((3,)), 1.5, raises=RuntimeError, name="q-range"),
            S(m((3,)), m.const([0.5, 1.5]), raises=RuntimeError, name="q-tensor-range"),
            S(m((3,)), m.const([[0.5]]), raises=RuntimeError, name="q-2d"),
            S(m((0,)), 0.5, raises=RuntimeError, name="empty"),
            S(m((3,)), 0.5, interpolation="bad", raises=RuntimeError, name="mode"),
            S(T(np.arange(3)), 0.5, raises=RuntimeError, name="int-input"),
            S(m((3,)), m.other((2,)), raises=RuntimeError, name="q-dtype")]
    return out


# ---- unique ------------------------------------------------------------------------------------
def _unique(m):
    v = m.ints((12,), 3)
    rows = m.const(np.array([[1, 2], [1, 2], [0, 2], [1, 0]]).astype(m.np))
    out = [S(v), S(v, return_inverse=True, return_counts=True), S(v, sorted=False), S(m(()), return_inverse=True),
           S(m((0,)), return_counts=True), S(m.ints((3, 4), 2), return_inverse=True),
           S(rows, dim=0, return_inverse=True, return_counts=True),
           S(rows, dim=1, return_inverse=True, return_counts=True),
           S(m((0, 3)), dim=0, return_inverse=True, return_counts=True),
           S(m.ints((4, 3), 1, "transposed"), return_inverse=True, dim=0),
           S(m.ints((3, 8), 2, "strided"), return_counts=True),
           S(m((2, 0)), dim=0, raises=RuntimeError, name="zero-other-dim"),
           S(m((3, 4)), dim=2, raises=IndexError, name="dim-range")]
    if m.dtype in FLOATS:  # NaNs are all distinct; which NaN gets which slot is unspecified, so no inverse
        out += [S(m.const([NAN, 1.0, NAN, -0.0, 0.0, 1.0]), return_counts=True)]
    return out


def _unique_consecutive(m):
    v = m.ints((12,), 1)
    rows = m.const(np.array([[1, 1], [1, 1], [2, 2], [1, 1]]).astype(m.np))
    out = [S(v), S(v, return_inverse=True, return_counts=True), S(m(()), return_inverse=True, return_counts=True),
           S(m((0,)), return_counts=True), S(m.ints((3, 4), 1), return_inverse=True),
           S(rows, dim=0, return_inverse=True, return_counts=True), S(rows, dim=1, return_counts=True),
           S(m.ints((4, 3), 1, "transposed"), return_inverse=True, dim=1)]
    if m.dtype in FLOATS:
        out += [S(m.const([NAN, NAN, 1.0, 1.0, -0.0, 0.0]), return_inverse=True, return_counts=True)]
    return out


# ---- searchsorted / bucketize ------------------------------------------------------------------
def _sorted(m, shape):
    return T(np.sort(m(shape).data, axis=-1))


def _searchsorted(m):
    s1, s2 = _sorted(m, (8,)), _sorted(m, (3, 6))
    out = [S(s1, m((5,))), S(s1, m((2, 3)), right=True), S(s1, m((4,)), side="right"), S(s1, m((4,)), side="left"),
           S(s1, m((4,)), out_int32=True), S(s1, 1), S(s2, m((3, 4))), S(s2, m((3, 4)), right=True),
           S(_sorted(m, (2, 3, 5)), m((2, 3, 2))), S(s1, m(())), S(s1, m((0,))), S(_sorted(m, (0,)), m((3,))),
           S(m.const(np.array([3, 1, 2]).astype(m.np)), m((4,)), sorter=T(np.array([1, 2, 0]))),
           S(s1, m((4, 3), "transposed")), S(T(np.sort(m((3, 6)).data, axis=-1), "transposed"), m((3, 2))),
           S(s1, m((4,)), side="left", right=True, raises=RuntimeError, name="side-right"),
           S(s1, m((4,)), side="bad", raises=RuntimeError, name="side"),
           S(s2, m((4,)), raises=RuntimeError, name="leading-dims"), S(s2, 1, raises=RuntimeError, name="scalar-nd"),
           S(m(()), m((2,)), raises=RuntimeError, name="0d"),
           S(s1, m((2,)), sorter=T(np.arange(7)), raises=RuntimeError, name="sorter-size"),
           S(s1, m((2,)), sorter=T(np.arange(8) + 1), raises=RuntimeError, name="sorter-range")]
    if m.dtype in FLOATS:
        nan_seq = m.const([1.0, 2.0, 2.0, 3.0, NAN, NAN])
        vals = m.const([[0.0, 2.0, NAN], [3.0, 5.0, 2.5]])
        out += [S(nan_seq, vals), S(nan_seq, vals, right=True), S(s1, T(np.array([1, 0, -2])))]
    return out


def _bucketize(m):
    b = _sorted(m, (5,))
    return [S(m((3, 4)), b), S(m((3, 4)), b, right=True), S(m(()), b, out_int32=True), S(1, b),
            S(m((4, 3), "transposed"), b), S(m((0,)), b),
            S(m((3,)), _sorted(m, (2, 5)), raises=RuntimeError, name="2d-boundaries")]


# ---- bincount / histc --------------------------------------------------------------------------
def _counts(m):
    ints = m.rng.integers(0, 6, 20).astype(m.np)
    return T(ints)


def _bincount(m):
    x = _counts(m)
    w32 = T(m.rng.uniform(-1, 1, 20).astype(np.float32))
    w64 = T(m.rng.uniform(-1, 1, 20))
    return [S(x), S(x, minlength=10), S(x, minlength=2), S(x, w32), S(x, w64), S(x, T(np.arange(20))),
            S(x, T(m.rng.uniform(-1, 1, 20).astype(np.float16))), S(T(np.zeros(0, m.np))),
            S(T(np.zeros(0, m.np)), minlength=3), S(T(np.repeat(_counts(m).data, 2)), name="repeat"),
            S(T(np.array([2, 0, 1]).astype(m.np), "strided")),
            S(x, w32, minlength=-1, raises=RuntimeError, name="minlength"),
            S(x, T(np.ones(3, np.float32)), raises=RuntimeError, name="weights-size"),
            S(T(np.ones((2, 2), m.np)), raises=RuntimeError, name="2d")]


def _bincount_errors(m):
    return [S(m((4,)), raises=RuntimeError, name="not-integral")]


def _histc(m):
    x = m((50,))
    return [S(x), S(x, bins=7), S(x, bins=10, min=-1, max=1), S(x, 4, -5, 5), S(m((3, 4)), bins=5),
            S(m.const([1.0, 1.0]), bins=4), S(m((0,)), bins=4), S(m.const([0.0, 1.0, 2.0, 3.0]), bins=3, min=0, max=3),
            S(m.const([0.1, 0.2, 0.3, 0.7, 0.9, 1.0, 0.0]), bins=10, min=0, max=1),
            S(m.const([1.0, NAN, 2.0, INF]), bins=4, min=0, max=3), S(m((4, 3), "transposed"), bins=3),
            S(m.const([1.0, NAN, 2.0]), bins=4, raises=RuntimeError, name="nan-range"),
            S(m.const([1.0, INF]), bins=4, raises=RuntimeError, name="inf-range"),
            S(x, bins=0, raises=RuntimeError, name="bins"), S(x, 4, 3, 1, raises=RuntimeError, name="min>max")]


def _histc_int(m):
    return [S(m((4,)), bins=4, raises=RuntimeError, name="int")]


OPS = [
    OpInfo("sort", lambda lib, x, *a, **kw: tuple(lib.sort(x, *a, **kw)), gen(_sort_stable), ALL),
    OpInfo("sort_unstable", lambda lib, x, *a, **kw: tuple(x.sort(*a, **kw)), gen(_sort_samples), ALL,
           nondeterministic_indices=True),
    OpInfo("argsort", lambda lib, x, *a, **kw: lib.argsort(x, *a, **kw),
           gen(lambda m: [s for s in _sort_stable(m) if s.kwargs.get("stable")]), ALL),
    OpInfo("argsort_distinct", lambda lib, x, *a, **kw: x.argsort(*a, **kw),
           gen(lambda m: _sort_samples(m)[:10]), F32_64),
    OpInfo("msort", lambda lib, x: lib.msort(x), gen(lambda m: [S(m((4, 3))), S(m(())), S(m((0, 2)))]), NUMERIC),
    OpInfo("topk", lambda lib, x, *a, **kw: tuple(lib.topk(x, *a, **kw)), gen(_topk), F32_64),
    OpInfo("topk_ties", lambda lib, x, *a, **kw: tuple(x.topk(*a, **kw)), gen(_topk), TIES,
           nondeterministic_indices=True),
    # PyTorch leaves the order of topk(sorted=False) unspecified: compare the sorted values
    OpInfo("topk_unsorted", lambda lib, x, k, **kw: lib.sort(lib.topk(x, k, sorted=False, **kw).values).values,
           gen(lambda m: [S(m((4, 6)), 6), S(m((4, 6)), 3, largest=False), S(m((5,)), 2)]), NUMERIC),
    OpInfo("topk_bool", lambda lib, x, k: lib.topk(x, k),
           gen(lambda m: [S(m((3,)), 1, raises=RuntimeError, name="bool")]), ("bool",)),
    OpInfo("kthvalue", lambda lib, x, *a, **kw: tuple(lib.kthvalue(x, *a, **kw)), gen(_kthvalue), F32_64),
    OpInfo("kthvalue_ties", lambda lib, x, *a, **kw: tuple(x.kthvalue(*a, **kw)), gen(_kthvalue), TIES,
           nondeterministic_indices=True),
    OpInfo("median", lambda lib, x: lib.median(x), gen(_median_all), NUMERIC),
    OpInfo("median_dim", lambda lib, x, *a, **kw: tuple(lib.median(x, *a, **kw)), gen(_median_dim), F32_64),
    OpInfo("median_dim_ties", lambda lib, x, *a, **kw: tuple(x.median(*a, **kw)), gen(_median_dim), TIES,
           nondeterministic_indices=True),
    OpInfo("median_bool", lambda lib, x: lib.median(x),
           gen(lambda m: [S(m((3,)), raises=RuntimeError, name="bool")]), ("bool",)),
    OpInfo("nanmedian", lambda lib, x: lib.nanmedian(x), gen(_median_all), NUMERIC),
    # which NaN PyTorch reports for an all-NaN row is unspecified: values only
    OpInfo("nanmedian_dim", lambda lib, x, *a, **kw: tuple(lib.nanmedian(x, *a, **kw)), gen(_nanmedian_dim), FLOATS,
           nondeterministic_indices=True),
    OpInfo("nanmedian_dim_indices", lambda lib, x, *a, **kw: tuple(x.nanmedian(*a, **kw)),
           gen(lambda m: _median_dim(m)[:8]), F32_64),
    OpInfo("mode", lambda lib, x, *a, **kw: tuple(lib.mode(x, *a, **kw)), gen(_mode), ALL),
    OpInfo("quantile", lambda lib, x, q, *a, **kw: lib.quantile(x, q, *a, **kw), gen(_quantile), F32_64),
    OpInfo("nanquantile", lambda lib, x, q, *a, **kw: x.nanquantile(q, *a, **kw), gen(_quantile), F32_64),
    OpInfo("unique", lambda lib, x, **kw: lib.unique(x, **kw), gen(_unique), ALL, differentiable=False),
    OpInfo("Tensor.unique", lambda lib, x, **kw: x.unique(**kw), gen(lambda m: _unique(m)[:3]), ("int64", "float32"),
           differentiable=False),
    OpInfo("unique_consecutive", lambda lib, x, **kw: lib.unique_consecutive(x, **kw), gen(_unique_consecutive), ALL,
           differentiable=False),
    OpInfo("searchsorted", lambda lib, s, v, **kw: lib.searchsorted(s, v, **kw), gen(_searchsorted), NO_BOOL,
           differentiable=False),
    OpInfo("bucketize", lambda lib, x, b, **kw: lib.bucketize(x, b, **kw), gen(_bucketize), NO_BOOL,
           differentiable=False),
    OpInfo("bincount", lambda lib, x, *a, **kw: lib.bincount(x, *a, **kw), gen(_bincount),
           ("uint8", "int8", "int16", "int32", "int64"), differentiable=False),
    OpInfo("bincount_errors", lambda lib, x: lib.bincount(x), gen(_bincount_errors), ("bool", "float32"),
           differentiable=False),
    OpInfo("histc", lambda lib, x, *a, **kw: lib.histc(x, *a, **kw), gen(_histc), FLOATS, differentiable=False),
    OpInfo("histc_int", lambda lib, x, **kw: x.histc(**kw), gen(_histc_int), ("int64",), differentiable=False),
]
