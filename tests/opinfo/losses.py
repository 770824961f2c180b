"""Registry entries: the loss functions of ember.nn.functional against torch.nn.functional.

Every loss runs its three reductions over 0-d, empty, broadcast and non-contiguous inputs, class
weights, ignore_index and label smoothing where they apply, K-dimensional inputs, NaN/inf where
the loss defines a value, and the errors PyTorch raises (with the same exception types).
tests/test_registry_grad.py checks the gradient of every float argument (targets and weights
too) against PyTorch, or against finite differences where PyTorch has no derivative (class
weights). ctc_loss is sampled through log_softmax: PyTorch's ctc gradient with respect to
log_probs assumes they are log-softmax outputs (it differs from the derivative by exp(log_probs)),
and through log_softmax both agree.
"""

from __future__ import annotations

import math

import numpy as np

from .core import OpInfo, Sample, T, make

F32_64 = ("float32", "float64")
HALF_TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (2e-6, 2e-6), "float64": (1e-9, 1e-9)}
# float64 results of float32 inputs (promotion samples) carry float32 rounding: PyTorch's default 1e-7
TOL = {"float32": (2e-6, 2e-6), "float64": (1e-7, 1e-7)}
INF, NAN = math.inf, math.nan
REDUCTIONS = ("none", "mean", "sum")


def S(*args, name: str = "", raises=None, **kwargs) -> Sample:
    return Sample(args, kwargs, name, raises)


class Maker:
    """Arguments of the sample dtype: ``m(shape)`` uniform floats, ``m.ints`` int64 class indices."""

    def __init__(self, dtype: str, rng: np.random.Generator):
        self.dtype, self.rng = dtype, rng

    def __call__(self, shape, layout="contiguous", low=-2.0, high=2.0, special=False) -> T:
        return T(make(shape, self.dtype, self.rng, low, high, special), layout)

    def of(self, values, layout="contiguous") -> T:
        return T(np.array(values, dtype=np.float64).astype(make((), self.dtype, self.rng).dtype), layout)

    def ints(self, shape, low, high, dtype=np.int64) -> T:
        return T(self.rng.integers(low, high, shape).astype(dtype))

    def idx(self, values, dtype=np.int64) -> T:
        return T(np.array(values, dtype=dtype))

    def other(self, shape, low=-2.0, high=2.0) -> T:
        """The other float dtype (promotion samples)."""
        d = "float64" if self.dtype != "float64" else "float32"
        return T(make(shape, d, self.rng, low, high))

    def probs(self, shape, axis=1) -> T:
        e = np.exp(self.rng.standard_normal(shape))
        p = e / e.sum(axis=axis, keepdims=True) if len(shape) else e
        return T(p.astype(make((), self.dtype, self.rng).dtype))

    def logp(self, shape, axis=1) -> T:
        x = self.rng.standard_normal(shape)
        x = x - np.log(np.exp(x).sum(axis=axis, keepdims=True))
        return T(x.astype(make((), self.dtype, self.rng).dtype))


def gen(build):
    def samples(dtype, rng):
        for i, s in enumerate(build(Maker(dtype, rng))):
            s.name = s.name or f"#{i}"
            yield s
    return samples


def fn(name: str):
    def call(lib, *args, **kwargs):
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _reductions(*args, **kw):
    return [S(*args, reduction=r, name=f"{kw.pop('tag', '')}{r}", **kw) for r in REDUCTIONS]


# ---- regression -------------------------------------------------------------------------------------
def _regression(weighted: bool, legacy: bool = True, extra=(), promote: bool = True):
    def build(m):
        out = []
        for shape in [(), (0,), (1,), (5,), (3, 4), (2, 3, 4)]:
            out += _reductions(m(shape), m(shape), tag=f"{shape}-")
        out += [
            S(m((3, 4), "transposed"), m((3, 4), "strided"), name="views"),
            S(m((3, 4), "expanded"), m((3, 4)), reduction="sum", name="expanded"),
            S(m((3, 4)), m((4,)), name="broadcast-target"),
            S(m((1, 4)), m((3, 1)), reduction="none", name="broadcast-both"),
            S(m((6,), special=True), m((6,)), reduction="none", name="nan-inf"),
            S(m((3, 4)), m((3, 2)), raises=RuntimeError, name="no-broadcast"),
            S(m((3, 4)), m((3, 4)), reduction="avg", raises=ValueError, name="bad-reduction"),
        ]
        if promote:
            out.append(S(m((3, 4)), m.other((3, 4)), name="promote"))
        if legacy:
            out += [S(m((3, 4)), m((3, 4)), size_average=False, name="legacy-sum"),
                    S(m((3, 4)), m((3, 4)), reduce=False, name="legacy-none")]
        if weighted:
            w = m((3, 4), low=0.1, high=2.0)
            out += _reductions(m((3, 4)), m((3, 4)), weight=w, tag="weight-")
            out += [S(m((3, 4)), m((3, 4)), weight=m((4,)), raises=ValueError, name="weight-size")]
        return out + [s(m) for s in extra]
    return build


def _smooth_l1_extra():
    return [
        lambda m: S(m((3, 4)), m((3, 4)), beta=0.5, name="beta0.5"),
        lambda m: S(m((3, 4)), m((3, 4)), beta=3.0, reduction="sum", name="beta3"),
        lambda m: S(m((3, 4)), m((3, 4)), beta=0.0, name="beta0=l1"),
        lambda m: S(m((3, 4)), m((3, 4)), beta=-1.0, raises=RuntimeError, name="negative-beta"),
    ]


def _huber_extra():
    return [
        lambda m: S(m((3, 4)), m((3, 4)), delta=0.5, name="delta0.5"),
        lambda m: S(m((3, 4)), m((3, 4)), delta=3.0, reduction="none", name="delta3"),
        lambda m: S(m((3, 4)), m((3, 4)), delta=0.0, raises=RuntimeError, name="delta0"),
    ]


def _huber(m):
    # huber takes no size_average/reduce; mixed dtypes are in tests/test_losses.py (PyTorch's huber
    # backward fails on them)
    return _regression(True, legacy=False, extra=_huber_extra(), promote=False)(m)


# ---- probabilistic -------------------------------------------------------------------------------
def _kl_div(m):
    out = []
    for r in REDUCTIONS + ("batchmean",):
        out.append(S(m.logp((3, 4)), m.probs((3, 4)), reduction=r, name=f"probs-{r}"))
        out.append(S(m.logp((3, 4)), m.logp((3, 4)), reduction=r, log_target=True, name=f"log-target-{r}"))
    return out + [
        S(m.logp((2, 3, 4), axis=2), m.probs((2, 3, 4), axis=2), reduction="batchmean", name="3d-batchmean"),
        S(m(()), m.of(0.3), reduction="batchmean", name="0d-batchmean"),
        S(m((0, 3)), m((0, 3)), reduction="batchmean", name="empty-batchmean"),
        S(m.logp((3, 4)), m.probs((1, 4)), reduction="none", name="broadcast"),
        S(T(m.logp((3, 4)).data, "transposed"), m.probs((3, 4)), reduction="sum", name="views"),
        S(m.logp((3, 4)), m.idx(np.ones((3, 4), np.int64)), reduction="sum", raises=RuntimeError,
          name="int-target"),
        S(m.logp((3, 4)), m.probs((3, 4)), reduction="bad", raises=ValueError, name="bad-reduction"),
    ]


def _unit(m, shape, layout="contiguous"):
    return m(shape, layout, low=0.05, high=0.95)


def _bce(m):
    out = []
    for shape in [(), (0,), (5,), (3, 4)]:
        out += _reductions(_unit(m, shape), _unit(m, shape), tag=f"{shape}-")
    return out + [
        S(_unit(m, (3, 4)), m.of(np.ones((3, 4))), name="target1"),
        S(_unit(m, (3, 4)), _unit(m, (3, 4)), m((4,), low=0.1, high=2.0), name="weight-row"),
        S(_unit(m, (3, 4)), _unit(m, (3, 4)), weight=m((3, 4), low=0.1, high=2.0), reduction="sum",
          name="weight-full"),
        S(_unit(m, (3, 4), "transposed"), _unit(m, (3, 4), "strided"), name="views"),
        S(m.of([1e-8, 1 - 1e-7, 0.5]), m.of([1.0, 0.0, 1.0]), reduction="none", name="near-0-1"),
        S(_unit(m, (3, 4)), _unit(m, (4,)), raises=ValueError, name="size-mismatch"),
        S(_unit(m, (3, 4)), T(make((3, 4), "float64" if m.dtype != "float64" else "float32", m.rng, 0.1, 0.9)),
          raises=RuntimeError, name="dtype-mismatch"),
        S(m.of([0.5, 1.5]), m.of([0.0, 1.0]), raises=RuntimeError, name="input>1"),
        S(m.of([0.5, NAN]), m.of([0.0, 1.0]), raises=RuntimeError, name="input-nan"),
        S(m.of([0.5, 0.5]), m.of([0.0, -1.0]), raises=RuntimeError, name="target<0"),
        S(_unit(m, (3, 4)), _unit(m, (3, 4)), m((3,)), raises=RuntimeError, name="weight-shape"),
        S(_unit(m, (3, 4)), _unit(m, (3, 4)), reduction="x", raises=ValueError, name="bad-reduction"),
    ]


def _bce_logits(m):
    out = []
    for shape in [(), (0,), (5,), (3, 4)]:
        out += _reductions(m(shape, low=-4, high=4), _unit(m, shape), tag=f"{shape}-")
    pw = m((4,), low=0.2, high=3.0)
    return out + [
        S(m.of([-30.0, -5.0, 0.0, 5.0, 30.0, 100.0, -100.0]), m.of([1.0, 0.0, 1.0, 0.5, 0.0, 0.0, 1.0]),
          reduction="none", name="wide-logits"),
        S(m((3, 4)), _unit(m, (3, 4)), pos_weight=pw, name="pos_weight"),
        S(m((3, 4)), _unit(m, (3, 4)), pos_weight=pw, weight=m((3, 1), low=0.2, high=2.0), reduction="none",
          name="pos_weight+weight"),
        S(m((3, 4)), _unit(m, (3, 4)), m((4,), low=0.1, high=2.0), reduction="sum", name="weight"),
        S(m((2, 3, 4)), _unit(m, (2, 3, 4)), pos_weight=pw, reduction="none", name="3d-pos_weight"),
        S(m((3, 4), "transposed"), _unit(m, (3, 4), "strided"), name="views"),
        S(m((3, 4)), m.other((3, 4), 0.0, 1.0), name="promote"),
        S(m((3, 4)), _unit(m, (4,)), raises=ValueError, name="size-mismatch"),
        S(m((3, 4)), _unit(m, (3, 4)), pos_weight=m((3,)), raises=RuntimeError, name="pos_weight-shape"),
        S(m((3, 4)), m.idx(np.ones((3, 4), np.int64)), raises=RuntimeError, name="int-target"),
    ]


def _poisson(m):
    out = []
    for shape in [(), (0,), (3, 4)]:
        out += _reductions(m(shape), m(shape, low=0.2, high=4.0), tag=f"{shape}-")
    return out + [
        S(m((3, 4)), m((3, 4), low=0.2, high=4.0), full=True, name="full"),
        S(m((3, 4), low=0.1, high=3.0), m((3, 4), low=0.0, high=4.0), log_input=False, name="rate"),
        S(m((3, 4), low=0.1, high=3.0), m((3, 4), low=0.2, high=4.0), log_input=False, full=True, eps=1e-3,
          reduction="none", name="rate-full-eps"),
        S(m((3, 4)), m((4,), low=0.2, high=4.0), name="broadcast"),
        S(m((3, 4), "transposed"), m((3, 4), "strided", low=0.2, high=4.0), name="views"),
        S(m((3, 4)), m((3, 4)), reduction="x", raises=ValueError, name="bad-reduction"),
    ]


def _gaussian(m):
    out = []
    for shape in [(), (0,), (3, 4)]:
        out += _reductions(m(shape), m(shape), m(shape, low=0.1, high=2.0), tag=f"{shape}-")
    return out + [
        S(m((3, 4)), m((3, 4)), m((3,), low=0.1, high=2.0), name="var-per-sample"),
        S(m((3, 4)), m((3, 4)), m((3, 1), low=0.1, high=2.0), reduction="sum", name="var-size1"),
        S(m((3, 4)), m((3, 4)), 0.5, name="var-float"),
        S(m((3, 4)), m((3, 4)), m((3, 4), low=1e-4, high=0.05), eps=0.01, reduction="none", name="var-clamped"),
        S(m((3, 4)), m((3, 4)), m((3, 4), low=0.1, high=2.0), full=True, name="full"),
        S(m((3, 4)), m((4,)), m((3, 4), low=0.1, high=2.0), name="broadcast-target"),
        S(m((3, 4)), m((3, 4)), m.of(-np.ones((3, 4))), raises=ValueError, name="negative-var"),
        S(m((3, 4)), m((3, 4)), -1.0, raises=ValueError, name="negative-float-var"),
        S(m((3, 4)), m((3, 4)), m((2, 4), low=0.1, high=1.0), raises=ValueError, name="var-size"),
        S(m((3, 4)), m((3, 4)), m((3, 4), low=0.1, high=1.0), reduction="x", raises=ValueError,
          name="bad-reduction"),
    ]


# ---- class indices ---------------------------------------------------------------------------------
def _nll(m):
    x = m.logp((5, 4))
    t = m.idx([0, 3, 1, 1, 2])
    w = m((4,), low=0.2, high=2.0)
    ign = m.idx([0, -100, 3, -100, 2])
    out = []
    out += _reductions(x, t, tag="2d-")
    out += _reductions(x, t, w, tag="weight-")
    out += _reductions(x, ign, w, tag="ignored-")
    return out + [
        S(x, t, ignore_index=1, reduction="none", name="ignore1-none"),
        S(x, t, ignore_index=1, name="ignore1-mean"),
        S(x, m.idx([-100] * 5), name="all-ignored-mean"),
        S(x, m.idx([-100] * 5), reduction="sum", name="all-ignored-sum"),
        S(m.logp((4,), axis=0), m.idx(2), name="1d"),
        S(m.logp((4,), axis=0), m.idx([2]), reduction="none", name="1d-target1"),
        S(m.logp((4,), axis=0), m.idx(-100), reduction="sum", name="1d-ignored"),
        S(m.logp((2, 3, 4)), m.ints((2, 4), 0, 3), reduction="none", name="3d"),
        S(m.logp((2, 3, 4)), m.ints((2, 4), 0, 3), m((3,), low=0.2, high=2.0), name="3d-weight"),
        S(m.logp((2, 3, 2, 2)), m.ints((2, 2, 2), 0, 3), name="4d"),
        S(m.logp((2, 3, 2, 2, 1)), m.idx(np.array([[[[0], [2]], [[-100], [1]]]] * 2)), reduction="none",
          name="5d-ignored"),
        S(m((0, 4)), m.idx(np.zeros(0, np.int64)), name="empty-mean"),
        S(m((0, 4)), m.idx(np.zeros(0, np.int64)), reduction="none", name="empty-none"),
        S(x, m.idx([0, 3, 1, 1, 2], np.uint8), name="uint8-target"),
        S(T(m.logp((5, 4)).data, "transposed"), t, name="transposed"),
        S(x, t, size_average=False, name="legacy-sum"),
        S(m(()), m.idx(0), raises=ValueError, name="0d-input"),
        S(x, m.idx([0, 1]), raises=ValueError, name="batch-mismatch"),
        S(x, m.idx(np.zeros((5, 1), np.int64)), raises=RuntimeError, name="2d-target"),
        S(m.logp((2, 3, 4)), m.ints((2, 5), 0, 3), raises=RuntimeError, name="kd-target-shape"),
        S(m.logp((2, 3, 4, 5)), m.ints((2, 4, 6), 0, 3), raises=RuntimeError, name="4d-target-shape"),
        S(x, m.idx([0, 4, 1, 1, 2]), raises=IndexError, name="target-oob"),
        S(x, m.idx([0, -1, 1, 1, 2]), raises=IndexError, name="target-negative"),
        S(x, m.idx([0, 3, 1, 1, 2], np.int32), raises=RuntimeError, name="int32-target"),
        S(x, t, m((3,)), raises=RuntimeError, name="weight-size"),
        S(x, t, m.other((4,)), raises=RuntimeError, name="weight-dtype"),
        S(m.logp((4,), axis=0), m.idx([1, 2]), raises=ValueError, name="1d-target2"),
        S(x, t, reduction="x", raises=ValueError, name="bad-reduction"),
    ]


def _ce(m):
    x = m((5, 4), low=-3, high=3)
    t = m.idx([0, 3, 1, 1, 2])
    w = m((4,), low=0.2, high=2.0)
    ign = m.idx([0, -100, 3, -100, 2])
    out = []
    out += _reductions(x, t, tag="idx-")
    out += _reductions(x, t, w, tag="weight-")
    out += _reductions(x, ign, w, label_smoothing=0.2, tag="ignored-smooth-weight-")
    out += _reductions(x, ign, label_smoothing=0.1, tag="ignored-smooth-")
    out += _reductions(x, m.probs((5, 4)), tag="probs-")
    out += _reductions(x, m.probs((5, 4)), w, label_smoothing=0.3, tag="probs-smooth-weight-")
    return out + [
        S(x, t, label_smoothing=1.0, name="smooth1"),
        S(x, t, label_smoothing=-0.1, name="smooth-negative"),
        S(x, m.idx([-100] * 5), label_smoothing=0.1, name="all-ignored-smooth"),
        S(m((4,)), m.idx(2), label_smoothing=0.2, name="1d"),
        S(m((4,)), m.idx([2]), reduction="none", name="1d-target1"),
        S(m((4,)), m.probs((4,), axis=0), name="1d-probs"),
        S(m((2, 3, 4)), m.ints((2, 4), 0, 3), m((3,), low=0.2, high=2.0), label_smoothing=0.1, reduction="none",
          name="3d-smooth-weight"),
        S(m((2, 3, 2, 2)), m.ints((2, 2, 2), 0, 3), ignore_index=2, name="4d-ignore"),
        S(m((2, 3, 4)), m.probs((2, 3, 4)), reduction="none", name="3d-probs"),
        S(m((2, 3, 4)), m.probs((2, 3, 4)), label_smoothing=0.2, name="3d-probs-smooth"),
        S(x, m.probs((5, 4)), ignore_index=-1, name="probs-ignore-1"),
        S(x, m.other((5, 4), 0.0, 1.0), name="probs-promote"),
        S(m((0, 4)), m.idx(np.zeros(0, np.int64)), name="empty"),
        S(m((0, 4)), m((0, 4)), name="empty-probs"),
        S(m((0, 4)), m.idx(np.zeros(0, np.int64)), label_smoothing=0.1, name="empty-smooth"),
        S(m((5, 4), "transposed"), t, name="transposed"),
        S(m((5, 4), "strided"), m.probs((5, 4)), name="strided-probs"),
        S(m.of([[0.0, 60.0, -60.0], [1e3, 0.0, -1e3]]), m.idx([2, 2]), reduction="none", name="large-logits"),
        S(x, t, label_smoothing=1.5, raises=RuntimeError, name="smooth>1"),
        S(x, m.probs((5, 4)), ignore_index=0, raises=RuntimeError, name="probs-ignore0"),
        S(x, m.idx(np.zeros((5, 4), np.int64)), raises=RuntimeError, name="probs-shape-int"),
        S(x, m.idx([0, 3, 1, 1, 2], np.int32), raises=RuntimeError, name="int32-target"),
        S(x, m((5,)), raises=RuntimeError, name="float-class-target"),
        S(x, m.probs((2, 4)), raises=ValueError, name="batch-mismatch"),
        S(x, t, m.other((4,)), raises=RuntimeError, name="weight-dtype"),
        S(x, m.probs((5, 4)), m((3,)), raises=RuntimeError, name="probs-weight-size"),
        S(x, t, reduction="x", raises=ValueError, name="bad-reduction"),
    ]


# ---- margins and embeddings --------------------------------------------------------------------------
def _pm1(m, shape, zeros=False):
    vals = [-1.0, 1.0, 0.0, 2.0] if zeros else [-1.0, 1.0]
    return m.of(m.rng.choice(vals, size=shape))


def _cosine(m):
    out = _reductions(m((4, 5)), m((4, 5)), _pm1(m, (4,)), tag="2d-")
    return out + [
        S(m((4, 5)), m((4, 5)), _pm1(m, (4,), zeros=True), margin=0.3, reduction="none", name="margin-other-t"),
        S(m((5,)), m((5,)), m.of(-1.0), margin=-0.5, name="1d"),
        S(m((4, 5)), m((1, 5)), _pm1(m, (4,)), reduction="none", name="broadcast"),
        S(m((4, 5), "transposed"), m((4, 5), "strided"), _pm1(m, (4,)), name="views"),
        S(m((0, 5)), m((0, 5)), m((0,)), name="empty"),
        S(m((4, 5)), m.other((4, 5)), _pm1(m, (4,)), name="promote"),
        S(m((4, 5)), m((4, 5)), m.idx([1, -1, 1, -1]), name="int-target"),
        S(m((5,)), m((5,)), _pm1(m, (1,)), raises=RuntimeError, name="1d-target-1d"),
        S(m((4, 5)), m((4, 5)), m.of(1.0), raises=RuntimeError, name="0d-target-2d"),
        S(m((2, 4, 5)), m((2, 4, 5)), _pm1(m, (2,)), raises=RuntimeError, name="3d"),
        S(m((4, 5)), m((4, 3)), _pm1(m, (4,)), raises=RuntimeError, name="shape"),
    ]


def _ranking(m):
    out = _reductions(m((3, 4)), m((3, 4)), _pm1(m, (3, 4)), tag="2d-")
    return out + [
        S(m((3, 4)), m((3, 4)), _pm1(m, (1, 4)), margin=0.5, reduction="none", name="broadcast-margin"),
        S(m(()), m(()), m.of(-1.0), margin=1.0, name="0d"),
        S(m((0,)), m((0,)), m((0,)), name="empty"),
        S(m((3, 4), "transposed"), m((3, 4), "strided"), _pm1(m, (3, 4)), name="views"),
        S(m((3, 4)), m((3, 4)), m.other((3, 4)), name="promote"),
        S(m((3, 4)), m((3, 4)), _pm1(m, (3,)), raises=RuntimeError, name="ndim"),
    ]


def _hinge(m):
    out = _reductions(m((3, 4)), _pm1(m, (3, 4)), tag="2d-")
    return out + [
        S(m((4,)), _pm1(m, (4,), zeros=True), margin=0.5, reduction="none", name="other-targets"),
        S(m((3, 4)), _pm1(m, (4,)), name="broadcast"),
        S(m((4,)), _pm1(m, (3, 4)), reduction="none", name="broadcast-input"),
        S(m(()), m.of(-1.0), margin=2.0, name="0d"),
        S(m((0,)), m((0,)), name="empty"),
        S(m((3, 4), "transposed"), _pm1(m, (3, 4)), name="views"),
        S(m((3, 4)), m.idx(np.ones((3, 4), np.int64)), name="int-target"),
        S(m((3, 4)), _pm1(m, (3,)), raises=RuntimeError, name="shape"),
    ]


def _soft_margin(m):
    out = _reductions(m((3, 4), low=-5, high=5), _pm1(m, (3, 4)), tag="2d-")
    return out + [
        S(m((3, 4)), _pm1(m, (4,)), name="broadcast"),
        S(m.of([0.0, 30.0, -30.0]), m.of([1.0, -1.0, 1.0]), reduction="none", name="wide"),
        S(m(()), m.of(1.0), name="0d"),
        S(m((0,)), m((0,)), name="empty"),
        S(m((3, 4), "transposed"), _pm1(m, (3, 4)), name="views"),
        S(m((3, 4)), _pm1(m, (3,)), raises=RuntimeError, name="shape"),
    ]


def _triplet(m):
    a, p, n = m((4, 5)), m((4, 5)), m((4, 5))
    out = _reductions(a, p, n, tag="2d-")
    return out + [
        S(a, p, n, margin=0.5, p=1, name="p1"),
        S(a, p, n, p=3, eps=1e-3, swap=True, reduction="none", name="p3-swap"),
        S(a, m((1, 5)), n, swap=True, name="broadcast-swap"),
        S(m((5,)), m((5,)), m((5,)), name="1d"),
        S(m((2, 3, 5)), m((2, 3, 5)), m((2, 3, 5)), reduction="none", name="3d"),
        S(m((4, 5), "transposed"), m((4, 5), "strided"), n, name="views"),
        S(a, p, m.other((4, 5)), name="promote"),
        S(a, p, n, margin=0.0, raises=ValueError, name="margin0"),
        S(a, m((5,)), n, raises=RuntimeError, name="ndim"),
    ]


def _triplet_distance(lib, a, p, n, l1=False, **kw):
    dist = (lambda x, y: (x - y).abs().sum(-1)) if l1 else None
    return lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, distance_function=dist, **kw)


def _triplet_dist_samples(m):
    a, p, n = m((4, 5)), m((4, 5)), m((4, 5))
    out = _reductions(a, p, n, tag="default-")
    return out + [
        S(a, p, n, l1=True, margin=0.5, name="l1"),
        S(a, p, n, l1=True, swap=True, reduction="none", name="l1-swap"),
        S(a, p, n, margin=-1.0, raises=ValueError, name="margin"),
        S(a, m((5,)), n, raises=RuntimeError, name="ndim"),
        S(a, p, n, reduction="x", raises=ValueError, name="bad-reduction"),
    ]


def _multi_margin(m):
    x = m((4, 5))
    t = m.idx([0, 4, 2, 2])
    w = m((5,), low=0.2, high=2.0)
    out = _reductions(x, t, tag="2d-")
    out += _reductions(x, t, p=2, margin=0.5, weight=w, tag="p2-weight-")
    return out + [
        S(x, t, weight=w, name="weight"),
        S(m((5,)), m.idx(3), reduction="none", name="1d"),
        S(m((5,)), m.idx([3]), name="1d-target1"),
        S(m(()), m.idx(0), reduction="none", name="0d"),
        S(m((4, 5), "transposed"), t, name="transposed"),
        S(x, t, p=3, raises=ValueError, name="p3"),
        S(x, t, weight=m((5, 1)), raises=ValueError, name="weight-2d"),
        S(x, m.idx([0, 5, 2, 2]), raises=RuntimeError, name="target-oob"),
        S(x, m.idx([0, 1]), raises=RuntimeError, name="target-size"),
        S(x, t, weight=m((4,)), raises=RuntimeError, name="weight-size"),
        S(x, m.idx([0, 4, 2, 2], np.int32), raises=RuntimeError, name="int32-target"),
        S(m((1, 4, 5)), m.idx([0]), raises=RuntimeError, name="3d-input"),
        S(m((2, 0)), m.idx([0, 0]), raises=RuntimeError, name="no-classes"),
    ]


def _multilabel_margin(m):
    x = m((3, 4))
    t = m.idx([[0, 3, -1, 2], [1, 1, -1, 0], [-1, 0, 1, 2]])
    out = _reductions(x, t, tag="2d-")
    return out + [
        S(m((4,)), m.idx([3, 0, 1, 2]), reduction="none", name="1d-all-targets"),
        S(m((4,)), m.idx([2, -1, 0, 0]), name="1d"),
        S(m(()), m.idx(0), reduction="none", name="0d"),
        S(m((3, 4), "transposed"), t, name="transposed"),
        S(x, m.idx([[0, 4, -1, 2]] * 3), raises=RuntimeError, name="target-oob"),
        S(x, m.idx([[0, 1, -1, 9]] * 3), raises=RuntimeError, name="oob-after-end"),
        S(x, m.idx([[0, -2, -1, 2]] * 3), raises=RuntimeError, name="target-below-1"),
        S(x, m.idx([0, 3, -1, 2]), raises=RuntimeError, name="target-shape"),
        S(x, m.idx(np.zeros((3, 4)), np.int32), raises=RuntimeError, name="int32-target"),
        S(m((1, 3, 4)), m.idx(np.zeros((1, 3, 4))), raises=RuntimeError, name="3d-input"),
    ]


def _multilabel_soft(m):
    x = m((3, 4))
    t = m.of(m.rng.integers(0, 2, (3, 4)))
    out = _reductions(x, t, tag="2d-")
    return out + [
        S(x, t, m((4,), low=0.2, high=2.0), name="weight"),
        S(m((4,)), m.of([1.0, 0.0, 0.0, 1.0]), name="1d"),
        S(m((2, 3, 4)), m((2, 3, 4), low=0.0, high=1.0), reduction="none", name="3d-soft-targets"),
        S(x, m.of([1.0, 0.0, 1.0, 0.0]), name="broadcast-target"),
        S(m((3, 4), "transposed"), t, name="transposed"),
        S(m(()), m.of(1.0), raises=IndexError, name="0d"),
        S(x, t, reduction="x", raises=ValueError, name="bad-reduction"),
    ]


# ---- ctc -----------------------------------------------------------------------------------------
def _ctc(lib, x, targets, input_lengths, target_lengths, **kw):
    return lib.nn.functional.ctc_loss(x.log_softmax(-1), targets, input_lengths, target_lengths, **kw)


def _ctc_samples(m):
    x = m((6, 3, 5))
    padded = m.idx([[1, 2, 2], [3, 3, 3], [4, 1, 0]])
    il, tl = m.idx([6, 5, 4]), m.idx([3, 3, 1])
    out = _reductions(x, padded, il, tl, tag="padded-")
    out += _reductions(x, m.idx([1, 2, 2, 3, 3, 3, 4]), [6, 5, 4], (3, 3, 1), tag="concat-")
    return out + [
        S(x, padded, il, m.idx([0, 2, 1]), reduction="none", name="empty-target"),
        S(x, padded, il, m.idx([0, 2, 1]), name="empty-target-mean"),
        S(x, padded, m.idx([0, 5, 4]), m.idx([0, 3, 1]), reduction="none", name="no-frames"),
        S(x, padded, m.idx([2, 6, 4]), tl, reduction="none", zero_infinity=True, name="impossible-zero-inf"),
        S(x, padded, m.idx([2, 6, 4]), tl, reduction="sum", zero_infinity=True, name="impossible-zero-inf-sum"),
        S(x, m.idx([[1, 2, 2], [3, 3, 3], [0, 1, 0]]), il, tl, blank=4, reduction="none", name="blank4"),
        S(m((6, 5)), m.idx([1, 2, 2]), m.idx(6), m.idx(3), reduction="none", name="unbatched"),
        S(m((6, 5)), m.idx([1, 2, 2]), [5], [3], name="unbatched-lists"),
        S(m((6, 1, 5)), m.idx([[2, 2, 2]]), [6], [3], reduction="none", name="repeats-tight"),
        S(m((6, 3, 5), "transposed"), padded, il, tl, name="transposed"),
        S(x, m.idx([[1, 2, 2], [3, 3, 3], [4, 1, 0]], np.int32), m.idx([6, 5, 4], np.int32),
          m.idx([3, 3, 1], np.int32), name="int32"),
        S(x, padded, il, tl, blank=5, raises=RuntimeError, name="blank-oob"),
        S(x, padded, m.idx([6, 5]), tl, raises=RuntimeError, name="input-lengths-size"),
        S(x, padded, il, m.idx([3, 3]), raises=RuntimeError, name="target-lengths-size"),
        S(x, padded, m.idx([7, 5, 4]), tl, raises=RuntimeError, name="input-length>T"),
        S(x, padded, m.idx([-1, 5, 4]), tl, raises=RuntimeError, name="negative-input-length"),
        S(x, padded, il, m.idx([4, 3, 1]), raises=RuntimeError, name="target-length>S"),
        S(x, padded, il, m.idx([3, -1, 1]), raises=RuntimeError, name="negative-target-length"),
        S(x, m.idx([1, 2, 2, 3]), il, tl, raises=RuntimeError, name="concat-size"),
        S(x, m.idx([[1, 2, 2], [3, 3, 3]]), il, tl, raises=RuntimeError, name="batch"),
        S(x, padded, m((3,)), tl, raises=RuntimeError, name="float-lengths"),
        S(x, m.idx(np.zeros((3, 3, 1))), il, tl, raises=RuntimeError, name="3d-targets"),
        S(x, padded, il, tl, reduction="x", raises=ValueError, name="bad-reduction"),
    ]


OPS = [
    OpInfo("l1_loss", fn("l1_loss"), gen(_regression(True)), tol=TOL),
    OpInfo("mse_loss", fn("mse_loss"), gen(_regression(True)), tol=TOL),
    OpInfo("mse_loss(half)", fn("mse_loss"), gen(lambda m: _reductions(m((3, 4)), m((3, 4)))),
           dtypes=("float16", "bfloat16"), tol=HALF_TOL, differentiable=False),
    OpInfo("smooth_l1_loss", fn("smooth_l1_loss"), gen(_regression(False, extra=_smooth_l1_extra())), tol=TOL),
    OpInfo("huber_loss", fn("huber_loss"), gen(_huber), tol=TOL),
    OpInfo("kl_div", fn("kl_div"), gen(_kl_div), tol=TOL),
    OpInfo("binary_cross_entropy", fn("binary_cross_entropy"), gen(_bce), tol=TOL),
    OpInfo("binary_cross_entropy_with_logits", fn("binary_cross_entropy_with_logits"), gen(_bce_logits), tol=TOL),
    OpInfo("poisson_nll_loss", fn("poisson_nll_loss"), gen(_poisson), tol=TOL),
    OpInfo("gaussian_nll_loss", fn("gaussian_nll_loss"), gen(_gaussian), tol=TOL),
    OpInfo("nll_loss", fn("nll_loss"), gen(_nll), tol=TOL),
    OpInfo("cross_entropy", fn("cross_entropy"), gen(_ce), tol=TOL),
    OpInfo("cross_entropy(half)", fn("cross_entropy"),
           gen(lambda m: [S(m((5, 4)), m.idx([0, 3, 1, 1, 2]), label_smoothing=0.1)]),
           dtypes=("float16", "bfloat16"), tol=HALF_TOL, differentiable=False),
    OpInfo("cosine_embedding_loss", fn("cosine_embedding_loss"), gen(_cosine), tol=TOL),
    OpInfo("margin_ranking_loss", fn("margin_ranking_loss"), gen(_ranking), tol=TOL),
    OpInfo("hinge_embedding_loss", fn("hinge_embedding_loss"), gen(_hinge), tol=TOL),
    OpInfo("soft_margin_loss", fn("soft_margin_loss"), gen(_soft_margin), tol=TOL),
    OpInfo("triplet_margin_loss", fn("triplet_margin_loss"), gen(_triplet), tol=TOL),
    OpInfo("triplet_margin_with_distance_loss", _triplet_distance, gen(_triplet_dist_samples), tol=TOL),
    OpInfo("multi_margin_loss", fn("multi_margin_loss"), gen(_multi_margin), tol=TOL),
    OpInfo("multilabel_margin_loss", fn("multilabel_margin_loss"), gen(_multilabel_margin), tol=TOL),
    OpInfo("multilabel_soft_margin_loss", fn("multilabel_soft_margin_loss"), gen(_multilabel_soft), tol=TOL),
    OpInfo("ctc_loss", _ctc, gen(_ctc_samples), tol=TOL),
]
