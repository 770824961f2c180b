"""Gradients checked numerically: ``ember.autograd.gradcheck`` (first order, central differences in
float64) on a representative op per family, ``gradgradcheck`` (second order: the rules recorded
again under create_graph=True) on a subset, and a guard that every backend op has a gradient
rule or is declared non-differentiable.

Inputs stay away from kinks and ties (abs at 0, equal maxima, repeated singular values), where
finite differences are not a derivative; tests/test_registry_grad.py covers those conventions
against PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.backend.autodiff.rules import NONDIFF, RULES
from ember.backend.base import OPS


def _t(*shape, low=-2.0, high=2.0, seed=0):
    rng = np.random.default_rng(seed + 17 * len(shape))
    return ember.tensor(rng.uniform(low, high, shape), dtype=ember.float64, requires_grad=True)


def _distinct(*shape, seed=0):
    """Values with no ties (a shuffled grid), so max/sort/median have one derivative."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = rng.permutation(np.linspace(-2.0, 2.0, n)) + rng.uniform(-0.01, 0.01, n)
    return ember.tensor(vals.reshape(shape), dtype=ember.float64, requires_grad=True)


def _spd(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n))
    return ember.tensor(a @ a.T + n * np.eye(n), dtype=ember.float64, requires_grad=True)


def _wc(*shape, seed=0):
    """Well-conditioned square matrices (a dominant diagonal)."""
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1]), dtype=ember.float64,
                        requires_grad=True)


def _sym(a):
    return (a + a.mT) / 2


def _idx(values):
    return ember.tensor(values, dtype=ember.int64)


# name -> (function, inputs builder); inputs are float64 tensors that require grad
FIRST_ORDER = {
    # elementwise
    "exp": (lambda x: x.exp(), lambda: (_t(3, 4),)),
    "log": (lambda x: x.log(), lambda: (_t(3, 4, low=0.5, high=3.0),)),
    "tanh": (lambda x: x.tanh(), lambda: (_t(3, 4),)),
    "sigmoid": (lambda x: x.sigmoid(), lambda: (_t(3, 4),)),
    "erf": (lambda x: ember.erf(x), lambda: (_t(5),)),
    "digamma": (lambda x: ember.digamma(x), lambda: (_t(5, low=0.3, high=4.0),)),
    "lgamma": (lambda x: ember.lgamma(x), lambda: (_t(5, low=0.3, high=4.0),)),
    "pow": (lambda x, y: x ** y, lambda: (_t(3, 4, low=0.5, high=2.0), _t(4, seed=1))),
    "div": (lambda x, y: x / y, lambda: (_t(2, 3), _t(2, 1, low=0.5, high=2.0, seed=1))),
    "atan2": (lambda x, y: ember.atan2(x, y), lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "maximum": (lambda x, y: ember.maximum(x, y), lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "clamp": (lambda x, lo: x.clamp(lo, 1.0), lambda: (_t(3, 4), _t(4, low=-1.5, high=-0.5, seed=1))),
    "where": (lambda x, y: ember.where(x > 0, x, y), lambda: (_t(3, 4), _t(4, seed=1))),
    "lerp": (lambda a, b, w: ember.lerp(a, b, w), lambda: (_t(3, 4), _t(3, 4, seed=1), _t(4, seed=2))),
    "logaddexp": (lambda a, b: ember.logaddexp(a, b), lambda: (_t(3, 4), _t(3, 4, seed=1))),
    # reductions and scans
    "sum": (lambda x: x.sum((0, 2)), lambda: (_t(2, 3, 4),)),
    "prod": (lambda x: x.prod(1), lambda: (_t(3, 4, low=0.5, high=1.5),)),
    "prod-zeros": (lambda x: x.prod(), lambda: (ember.tensor([[0.0, 2.0], [0.5, -1.5]], dtype=ember.float64,
                                                             requires_grad=True),)),
    "var": (lambda x: x.var(1, correction=0), lambda: (_t(3, 4),)),
    "std": (lambda x: x.std(), lambda: (_t(3, 4),)),
    "amax": (lambda x: x.amax(1), lambda: (_distinct(3, 4),)),
    "max": (lambda x: x.max(), lambda: (_distinct(3, 4),)),
    "logsumexp": (lambda x: x.logsumexp(1), lambda: (_t(3, 4),)),
    "cumsum": (lambda x: x.cumsum(1), lambda: (_t(3, 4),)),
    "cumprod": (lambda x: x.cumprod(1), lambda: (_t(3, 4),)),
    "cumprod-zeros": (lambda x: x.cumprod(0), lambda: (ember.tensor([1.5, 0.0, -2.0, 0.5], dtype=ember.float64,
                                                                    requires_grad=True),)),
    "norm": (lambda x: ember.linalg.vector_norm(x, 3.0, dim=1), lambda: (_t(3, 4),)),
    "norm-inf": (lambda x: ember.linalg.vector_norm(x, float("inf")), lambda: (_distinct(3, 4),)),
    # softmax family
    "softmax": (lambda x: x.softmax(1), lambda: (_t(3, 4),)),
    "log_softmax": (lambda x: x.log_softmax(0), lambda: (_t(3, 4),)),
    # movement
    "permute-reshape": (lambda x: x.permute(2, 0, 1).reshape(4, 6), lambda: (_t(2, 3, 4),)),
    "expand": (lambda x: x.expand(3, 2, 4) * 2.0, lambda: (_t(2, 1),)),
    "cat-stack": (lambda a, b: ember.stack([ember.cat([a, b], 0), ember.cat([b, a], 0)], 1),
                  lambda: (_t(2, 3), _t(1, 3, seed=1))),
    "flip-roll": (lambda x: x.flip(0).roll(1, 1), lambda: (_t(3, 4),)),
    "pad-reflect": (lambda x: ember.nn.functional.pad(x, (2, 1), mode="reflect"), lambda: (_t(2, 4),)),
    "diagonal-tril": (lambda x: x.tril(-1) + x.diagonal().diag(), lambda: (_t(4, 4),)),
    "repeat": (lambda x: x.repeat(2, 3), lambda: (_t(2, 2),)),
    # indexing
    "getitem": (lambda x: x[_idx([2, 0, 2]), 1:], lambda: (_t(3, 4),)),
    "index_select": (lambda x: x.index_select(1, _idx([3, 0, 3])), lambda: (_t(3, 4),)),
    # squared, so that their gradients depend on the input and gradgradcheck has something to check
    "gather": (lambda x: x.gather(1, _idx([[0, 3], [2, 2], [1, 0]])) ** 2, lambda: (_t(3, 4),)),
    "scatter_add": (lambda x, s: x.scatter_add(0, _idx([[1, 0, 1, 2]]), s), lambda: (_t(3, 4), _t(1, 4, seed=1))),
    "index_put": (lambda x, v: x.index_put((_idx([0, 2, 0]),), v * v, accumulate=True) * x,
                  lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "masked_fill": (lambda x: x.masked_fill(ember.tensor([True, False, True, False]), 0.5), lambda: (_t(3, 4),)),
    "setitem": (lambda x, v: _setitem(x, v), lambda: (_t(3, 4), _t(2, seed=1))),
    # sorting
    "sort": (lambda x: x.sort(1).values, lambda: (_distinct(3, 4),)),
    "topk": (lambda x: x.topk(2, 0).values, lambda: (_distinct(4, 3),)),
    "median": (lambda x: x.median(), lambda: (_distinct(3, 3),)),
    # linear algebra
    "matmul": (lambda a, b: a @ b, lambda: (_t(2, 3, 4), _t(4, 2, seed=1))),
    "inv": (lambda a: ember.linalg.inv(a), lambda: (_wc(3, 3),)),
    "det": (lambda a: ember.linalg.det(a), lambda: (_wc(2, 3, 3),)),
    "det-singular": (lambda a: ember.linalg.det(a), lambda: (ember.tensor([[1.0, 2.0], [2.0, 4.0]],
                                                                        dtype=ember.float64, requires_grad=True),)),
    "slogdet": (lambda a: ember.linalg.slogdet(a).logabsdet, lambda: (_wc(3, 3),)),
    "solve": (lambda a, b: ember.linalg.solve(a, b), lambda: (_wc(3, 3), _t(3, 2, seed=1))),
    "cholesky": (lambda a: ember.linalg.cholesky(_sym(a)), lambda: (_spd(3),)),
    "eigh": (lambda a: ember.linalg.eigh(_sym(a)).eigenvalues, lambda: (_t(3, 3),)),
    "svd": (lambda a: _svd_invariant(a), lambda: (_t(4, 3),)),
    "svd-wide": (lambda a: _svd_invariant(a), lambda: (_t(2, 4),)),
    "svdvals": (lambda a: ember.linalg.svdvals(a), lambda: (_t(3, 4),)),
    "qr": (lambda a: _qr_invariant(a), lambda: (_t(4, 3),)),
    "qr-wide": (lambda a: _qr_invariant(a), lambda: (_t(3, 5),)),
    "pinv": (lambda a: ember.linalg.pinv(a), lambda: (_t(4, 3),)),
    "lstsq": (lambda a, b: ember.linalg.lstsq(a, b).solution, lambda: (_t(5, 3), _t(5, 2, seed=1))),
    "matrix_norm-nuc": (lambda a: ember.linalg.matrix_norm(a, "nuc"), lambda: (_t(3, 4),)),
    "matrix_norm-2": (lambda a: ember.linalg.matrix_norm(a, 2), lambda: (_t(3, 4),)),
}

# (piecewise-linear ops such as max or clamp have a zero second derivative, so their first gradient
# does not depend on the input and there is nothing to check at second order)
SECOND_ORDER = ["exp", "tanh", "pow", "div", "atan2", "digamma", "lerp", "logaddexp", "prod", "prod-zeros", "var",
                "logsumexp", "cumprod", "cumprod-zeros", "norm", "norm-inf", "softmax", "log_softmax", "gather",
                "index_put", "matmul", "inv", "det", "det-singular", "slogdet", "solve", "cholesky", "qr", "svd",
                "svdvals"]


def _setitem(x, v):
    y = x.clone()
    y[1, 1:3] = v
    return y * y


def _svd_invariant(a):
    """Singular values and U diag(S) Vh: invariant to the signs of the singular vectors."""
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    return S, (U * S.unsqueeze(-2)) @ Vh, U.abs() * S.unsqueeze(-2)


def _qr_invariant(a):
    """Q R and R's magnitudes (Q and R are unique up to the signs of R's rows)."""
    Q, R = ember.linalg.qr(a)
    return Q @ R.triu(), R.abs(), (Q * Q).sum(0)


@pytest.mark.parametrize("name", list(FIRST_ORDER))
def test_gradcheck(name):
    fn, inputs = FIRST_ORDER[name]
    assert gradcheck(fn, inputs(), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, inputs = FIRST_ORDER[name]
    assert gradgradcheck(fn, inputs(), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_gradcheck_catches_a_wrong_rule():
    """The check has teeth: a rule that is off by a factor fails it."""
    class Twice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # the derivative of x * x is 2x, not 1
    assert not gradcheck(Twice.apply, (_t(3),), raise_exception=False)


# ops that need no rule: creation and random sampling (no tensor inputs to differentiate), the
# in-place forms, which autodiff records through their functional counterparts, and fused first-order
# backward kernels ("*_backward"), which rules call only when no graph is being built (with
# create_graph=True the rules use composite formulas instead)
CREATION = {"full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm", "bernoulli",
            "multinomial"}


def test_every_backend_op_has_a_rule_or_is_declared_nondifferentiable():
    missing = sorted(op for op in OPS if op not in RULES and op not in NONDIFF and op not in CREATION
                     and not op.endswith("_") and op != "assign" and not op.endswith("_backward"))
    assert not missing, f"backend ops without a gradient rule or a NONDIFF entry: {missing}"
    assert "_assign" in RULES and "index_put" in RULES  # what assign / index_put_ are recorded as
    both = sorted(set(RULES) & set(NONDIFF))
    assert not both, f"ops declared both differentiable and not: {both}"


# ---- the primitives added for gradients ------------------------------------------------------
def test_polygamma_matches_torch_with_and_without_scipy(monkeypatch):
    """polygamma(n, x), the gradient of digamma (n = 1) and its derivatives, against PyTorch; also
    the scipy-free fallback (recurrence + asymptotic series, reflection for x < 0)."""
    torch = pytest.importorskip("torch")
    from ember.backend.numpy import special
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-6, 12, 400), [0.5, 1.0, 2.0, 1e-3, 30.0, 1e4, -0.5, -2.5]])
    x = x[np.abs(x - np.round(x)) > 1e-3]  # poles at 0, -1, -2, ...: PyTorch's values there are not exact
    for scipy_present in (True, False):
        if not scipy_present:
            monkeypatch.setattr(special, "_sp", None)
        for n in (1, 2, 3, 5):
            got = special.polygamma(x, n)
            want = torch.polygamma(n, torch.from_numpy(x)).numpy()
            # relative to the magnitude, which spans many orders near the poles
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=f"n={n} scipy={scipy_present}")
        edge = special.polygamma(np.array([np.inf, np.nan, 0.0, -3.0]), 1)
        assert edge[0] == 0 and np.isnan(edge[1]) and edge[2] == np.inf and edge[3] == np.inf


def test_xlogy_composite_without_the_backend_op(monkeypatch):
    """Backends without an xlogy op get the frontend composition, with the same values."""
    torch = pytest.importorskip("torch")
    from ember.backend import numpy as numpy_backend
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.5, np.nan, 3.0])
    y = np.array([0.0, -1.0, np.nan, 0.5, 2.0, 1.0, np.inf])
    want = torch.xlogy(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    np.testing.assert_array_equal(ember.xlogy(ember.tensor(x), ember.tensor(y)).numpy(), want)
    monkeypatch.delitem(numpy_backend._OPS, "xlogy")
    np.testing.assert_array_equal(ember.xlogy(ember.tensor(x), ember.tensor(y)).numpy(), want)
