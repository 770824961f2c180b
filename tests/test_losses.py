"""Loss modules (ember.nn.*Loss) against torch.nn's: same options, values and gradients (inputs,
targets), reductions, class weights as buffers, reprs, legacy arguments and errors. The functional
forms are in the op registry (tests/opinfo/losses.py); here also the cases the registry can't
hold: values where PyTorch's result is undefined or unstable, and larger CTC batches."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
# empty-batch means are NaN on purpose
pytestmark = [pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

RNG = np.random.default_rng(0)


def _rand(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


def _probs(*shape, axis=1):
    e = np.exp(RNG.standard_normal(shape))
    return e / e.sum(axis=axis, keepdims=True)


def _to(lib, v, grad=False):
    """numpy data as a tensor of ``lib`` (float arrays require grad when ``grad``)."""
    if isinstance(v, np.ndarray):
        t = lib.tensor(v)
        if grad and v.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return v


# (module name, constructor kwargs, forward args[, indices of args PyTorch can't differentiate]); the
# other float arrays in args require grad
CASES = [
    ("L1Loss", {}, (_rand(3, 4), _rand(3, 4))),
    ("L1Loss", {"reduction": "sum"}, (_rand(2, 3), _rand(2, 3))),
    ("MSELoss", {"reduction": "none"}, (_rand(3, 4), _rand(3, 4))),
    ("MSELoss", {}, (_rand(5), _rand(5))),
    ("SmoothL1Loss", {"beta": 0.5}, (_rand(3, 4), _rand(3, 4))),
    ("SmoothL1Loss", {"beta": 0.0, "reduction": "sum"}, (_rand(3, 4), _rand(3, 4))),
    ("HuberLoss", {"delta": 2.0}, (_rand(3, 4, low=-4, high=4), _rand(3, 4))),
    ("KLDivLoss", {"reduction": "batchmean"}, (np.log(_probs(3, 4)), _probs(3, 4))),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, (np.log(_probs(3, 4)), np.log(_probs(3, 4)))),
    ("BCELoss", {"weight": _rand(4, low=0.2, high=2)}, (_rand(3, 4, low=0.05, high=0.95), _rand(3, 4, low=0, high=1))),
    ("BCELoss", {"reduction": "none"}, (_rand(5, low=0.05, high=0.95), _rand(5, low=0, high=1))),
    ("BCEWithLogitsLoss", {"pos_weight": _rand(4, low=0.2, high=3), "weight": _rand(3, 1, low=0.2, high=2)},
     (_rand(3, 4, low=-5, high=5), _rand(3, 4, low=0, high=1))),
    ("BCEWithLogitsLoss", {"reduction": "sum"}, (_rand(2, 3, low=-5, high=5), _rand(2, 3, low=0, high=1))),
    ("PoissonNLLLoss", {"full": True}, (_rand(3, 4), _rand(3, 4, low=0.2, high=5))),
    ("PoissonNLLLoss", {"log_input": False, "eps": 1e-4, "reduction": "sum"},
     (_rand(3, 4, low=0.1, high=3), _rand(3, 4, low=0.2, high=5))),
    ("GaussianNLLLoss", {"full": True}, (_rand(3, 4), _rand(3, 4), _rand(3, 4, low=0.1, high=2))),
    ("GaussianNLLLoss", {"reduction": "none", "eps": 0.05}, (_rand(3, 4), _rand(3, 4), _rand(3, low=0.01, high=2))),
    ("NLLLoss", {"weight": _rand(4, low=0.2, high=2), "ignore_index": 1},
     (np.log(_probs(5, 4)), np.array([0, 1, 3, 2, 1]))),
    ("NLLLoss", {"reduction": "none"}, (np.log(_probs(2, 3, 4)), np.array([[0, 1, 2, 2], [1, 1, 0, 2]]))),
    ("CrossEntropyLoss", {}, (_rand(4, 5), np.array([0, 4, 2, 2]))),
    ("CrossEntropyLoss", {"weight": _rand(3, low=0.2, high=2), "ignore_index": 0, "label_smoothing": 0.1},
     (_rand(2, 3, 4, 5), RNG.integers(0, 3, (2, 4, 5)))),
    ("CrossEntropyLoss", {"label_smoothing": 0.2, "reduction": "sum"}, (_rand(4, 5), _probs(4, 5))),
    ("CrossEntropyLoss", {"reduction": "none"}, (_rand(5), np.array(3))),
    ("CosineEmbeddingLoss", {"margin": 0.2}, (_rand(4, 6), _rand(4, 6), np.array([1.0, -1.0, -1.0, 1.0])), {2}),
    ("MarginRankingLoss", {"margin": 0.5}, (_rand(6), _rand(6), np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]))),
    ("HingeEmbeddingLoss", {"margin": 2.0}, (_rand(3, 4), np.sign(_rand(3, 4))), {1}),
    ("SoftMarginLoss", {}, (_rand(3, 4), np.sign(_rand(3, 4))), {1}),
    ("TripletMarginLoss", {"p": 1.0, "swap": True, "margin": 0.5}, (_rand(4, 6), _rand(4, 6), _rand(4, 6))),
    ("TripletMarginWithDistanceLoss", {"swap": True}, (_rand(4, 6), _rand(4, 6), _rand(4, 6))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.7, "weight": _rand(5, low=0.2, high=2)},
     (_rand(4, 5), np.array([0, 4, 2, 2]))),
    ("MultiLabelMarginLoss", {}, (_rand(3, 4), np.array([[0, 3, -1, 2], [1, 1, -1, 0], [-1, 0, 1, 2]]))),
    ("MultiLabelSoftMarginLoss", {"weight": _rand(4, low=0.2, high=2)}, (_rand(3, 4), _rand(3, 4, low=0, high=1))),
]


def _build(lib, name, kwargs):
    kw = {k: _to(lib, v) for k, v in kwargs.items()}
    return getattr(lib.nn, name)(**kw)


def _run(lib, name, kwargs, args, nograd=()):
    mod = _build(lib, name, kwargs)
    targs = [_to(lib, a, grad=i not in nograd) for i, a in enumerate(args)]
    out = mod(*targs)
    leaves = [a for a in targs if hasattr(a, "requires_grad") and a.requires_grad]
    return out, leaves


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_module_matches_torch(case):
    name, kwargs, args, *nograd = case
    eo, el = _run(ember, name, kwargs, args, *nograd)
    to, tl = _run(torch, name, kwargs, args, *nograd)
    assert tuple(eo.shape) == tuple(to.shape)
    assert eo.dtype.name == str(to.dtype).removeprefix("torch.")
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(tuple(to.shape))
    eg = ember.autograd.grad([eo], el, [ember.tensor(cot)])
    tg = torch.autograd.grad([to], tl, [torch.tensor(cot)])
    assert len(eg) == len(tg)
    for i, (a, b) in enumerate(zip(eg, tg)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{name}: grad of arg {i}")


def test_ctc_module_matches_torch_on_a_batch():
    """A realistic batch: varied input and target lengths, repeated labels, concatenated and padded targets."""
    t_len, n, c = 30, 6, 7
    logits = RNG.standard_normal((t_len, n, c))
    il = [30, 28, 25, 30, 12, 3]
    tl = [10, 0, 12, 7, 5, 4]           # the last is impossible in 3 frames
    rows = [RNG.integers(1, c, k) for k in tl]
    rows[0][3] = rows[0][4]             # a repeated label needs a blank between
    padded = np.zeros((n, max(tl)), np.int64)
    for i, r in enumerate(rows):
        padded[i, :len(r)] = r
    concat = np.concatenate(rows)
    for targets in (padded, concat):
        for reduction in ("none", "mean", "sum"):
            for zero_inf in (False, True):
                if not zero_inf and reduction != "none":
                    continue
                res = []
                for lib in (ember, torch):
                    x = lib.tensor(logits, requires_grad=True)
                    loss = lib.nn.CTCLoss(reduction=reduction, zero_infinity=zero_inf)(
                        x.log_softmax(2), lib.tensor(targets), lib.tensor(il), lib.tensor(tl))
                    g = None
                    if zero_inf:
                        (g,) = lib.autograd.grad(loss.sum(), x)
                    res.append((loss.detach().numpy(), None if g is None else g.numpy()))
                (el, eg), (tl_, tg) = res
                np.testing.assert_allclose(el, tl_, rtol=1e-9, err_msg=f"{reduction} zero_infinity={zero_inf}")
                if zero_inf:
                    np.testing.assert_allclose(eg, tg, rtol=1e-7, atol=1e-10)


def test_ctc_against_brute_force():
    """The forward algorithm against summing every alignment of a tiny case."""
    import itertools
    lp = np.log(_probs(4, 3, axis=1))  # T=4, C=3 (blank 0)
    target = [1, 1]

    def collapse(path):
        out, prev = [], None
        for s in path:
            if s != prev and s != 0:
                out.append(s)
            prev = s
        return out
    p = sum(np.exp(sum(lp[t, s] for t, s in enumerate(path)))
            for path in itertools.product(range(3), repeat=4) if collapse(path) == target)
    got = F.ctc_loss(ember.tensor(lp), ember.tensor(target), [4], [2], reduction="sum").item()
    assert got == pytest.approx(-np.log(p), rel=1e-12)


def test_ctc_refuses_out_of_range_targets():
    # PyTorch reads out of bounds here; ember says what is wrong
    with pytest.raises(RuntimeError, match="class indices"):
        F.ctc_loss(ember.randn(5, 2, 4).log_softmax(2), ember.tensor([[1, 7], [2, 3]]), [5, 5], [2, 2])


def test_weights_are_buffers_like_torch():
    w = np.array([1.0, 2.0, 0.5])
    for name, kw in [("CrossEntropyLoss", {"weight": w}), ("NLLLoss", {"weight": w}), ("BCELoss", {"weight": w}),
                     ("BCEWithLogitsLoss", {"pos_weight": w}), ("MultiMarginLoss", {"weight": w}),
                     ("MultiLabelSoftMarginLoss", {"weight": w}), ("MSELoss", {})]:
        em, tm = _build(ember, name, kw), _build(torch, name, kw)
        assert list(em.state_dict()) == list(tm.state_dict()), name
        assert repr(em) == repr(tm), name
        for k, v in tm.state_dict().items():
            np.testing.assert_array_equal(em.state_dict()[k].numpy(), v.numpy())
    em = ember.nn.CrossEntropyLoss(weight=ember.tensor([1.0, 2.0])).to(ember.float64)
    assert em.weight.dtype is ember.float64


def test_module_attributes_and_legacy_arguments():
    with pytest.warns(UserWarning):
        assert ember.nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert ember.nn.L1Loss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning):
        assert ember.nn.NLLLoss(size_average=True, reduce=True).reduction == "mean"
    m = ember.nn.CrossEntropyLoss(ignore_index=3, label_smoothing=0.25, reduction="sum")
    t = torch.nn.CrossEntropyLoss(ignore_index=3, label_smoothing=0.25, reduction="sum")
    for attr in ("ignore_index", "label_smoothing", "reduction", "weight"):
        assert getattr(m, attr) == getattr(t, attr)
    assert ember.nn.CTCLoss(blank=2).blank == 2
    assert ember.nn.NLLLoss2d()(ember.zeros(1, 2, 1, 1), ember.zeros(1, 1, 1, dtype=ember.int64)).item() == 0.0


@pytest.mark.parametrize("build", [
    lambda lib: lib.nn.MultiMarginLoss(p=3),
    lambda lib: lib.nn.MultiMarginLoss(weight=lib.ones(2, 2)),
    lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=0.0),
])
def test_constructor_errors_match_torch(build):
    with pytest.raises(ValueError):
        build(torch)
    with pytest.raises(ValueError):
        build(ember)


@pytest.mark.parametrize("name,args,kw,exc", [
    ("MSELoss", (np.ones(3), np.ones(3)), {"reduction": "avg"}, ValueError),
    ("CrossEntropyLoss", (np.ones((2, 3)), np.array([0, 3])), {}, IndexError),
    ("CrossEntropyLoss", (np.ones((2, 3)), np.array([0, 1, 2])), {}, ValueError),
    ("CrossEntropyLoss", (np.ones((2, 3)), np.array([0, 1])), {"label_smoothing": 2.0}, RuntimeError),
    ("NLLLoss", (np.ones((2, 3)), np.array([0.0, 1.0])), {}, RuntimeError),
    ("BCELoss", (np.full(2, 1.5), np.ones(2)), {}, RuntimeError),
    ("BCELoss", (np.full(2, 0.5), np.ones(3)), {}, ValueError),
    ("BCEWithLogitsLoss", (np.ones(2), np.ones(3)), {}, ValueError),
    ("KLDivLoss", (np.ones(2), np.ones(2)), {"reduction": "average"}, ValueError),
    ("CosineEmbeddingLoss", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))), {}, RuntimeError),
    ("MultiMarginLoss", (np.ones((2, 3)), np.array([0, 3])), {}, RuntimeError),
    ("CTCLoss", (np.zeros((3, 1, 4)), np.array([[1, 2]]), [4], [2]), {}, RuntimeError),
])
def test_forward_errors_match_torch(name, args, kw, exc):
    for lib in (torch, ember):
        mod = getattr(lib.nn, name)(**kw)
        with pytest.raises(exc):
            mod(*[_to(lib, a) for a in args])


def test_values_where_torch_has_special_rules():
    # binary cross entropy clamps each log at -100: a certain wrong answer costs 100
    x, y = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(F.binary_cross_entropy(ember.tensor(x), ember.tensor(y), reduction="none").numpy(),
                               TF.binary_cross_entropy(torch.tensor(x), torch.tensor(y), reduction="none").numpy())
    xe = ember.tensor(x, requires_grad=True)
    (g,) = ember.autograd.grad(F.binary_cross_entropy(xe, ember.tensor(y), reduction="sum"), xe)
    # the derivative of the clamped loss: 0 where a log is clamped, +-1 where the other term is exact
    # (PyTorch's kernel divides by max(x(1-x), 1e-12) instead: 0 or -+1e12 there)
    np.testing.assert_array_equal(g.numpy(), [1.0, -1.0, 0.0, 0.0])
    # kl_div: zero-probability targets contribute 0, negative ones NaN (xlogy)
    a = F.kl_div(ember.tensor([1.0, 2.0, 0.5]), ember.tensor([0.0, -1.0, 0.5]), reduction="none").numpy()
    b = TF.kl_div(torch.tensor([1.0, 2.0, 0.5]), torch.tensor([0.0, -1.0, 0.5]), reduction="none").numpy()
    np.testing.assert_allclose(a, b, equal_nan=True)
    # huber keeps the input's dtype, soft_margin too (PyTorch's rules), mse promotes
    x32, y64 = np.float32([0.5, 3.0]), np.array([0.25, -1.0])
    for fn in ("huber_loss", "soft_margin_loss", "mse_loss"):
        e = getattr(F, fn)(ember.tensor(x32), ember.tensor(y64))
        t = getattr(TF, fn)(torch.tensor(x32), torch.tensor(y64))
        assert e.dtype.name == str(t.dtype).removeprefix("torch."), fn
        np.testing.assert_allclose(e.item(), t.item(), rtol=1e-6)
    # soft_margin_loss stays finite where PyTorch's log1p(exp(.)) overflows
    big = F.soft_margin_loss(ember.tensor([-200.0]), ember.tensor([1.0]))
    assert big.item() == pytest.approx(200.0)
    # empty batches: mean is NaN, sum 0 (PyTorch returns uninitialised memory for these two)
    for fn, tgt in ((F.multi_margin_loss, ember.zeros(0, dtype=ember.int64)),
                    (F.multilabel_margin_loss, ember.zeros(0, 4, dtype=ember.int64))):
        assert np.isnan(fn(ember.zeros(0, 4), tgt).item())
        assert fn(ember.zeros(0, 4), tgt, reduction="sum").item() == 0.0


def test_cross_entropy_large_logits_are_stable():
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 60.0, -60.0]])
    e = F.cross_entropy(ember.tensor(logits), ember.tensor([2, 0]), reduction="none").numpy()
    t = TF.cross_entropy(torch.tensor(logits), torch.tensor([2, 0]), reduction="none").numpy()
    np.testing.assert_allclose(e, t)
    assert np.all(np.isfinite(e))


def test_warnings_point_at_the_caller():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        F.mse_loss(ember.ones(3, 2), ember.ones(2))
    assert len(w) == 1 and w[0].filename == __file__


def test_losses_train_a_classifier():
    """CrossEntropyLoss + SGD decreases the loss as in PyTorch (same weights, same steps)."""
    x = RNG.standard_normal((16, 4))
    y = RNG.integers(0, 3, 16)
    w0 = RNG.standard_normal((3, 4)) * 0.1
    losses = {}
    for lib in (ember, torch):
        w = lib.tensor(w0.copy(), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.5)
        loss_fn = lib.nn.CrossEntropyLoss(label_smoothing=0.05)
        seq = []
        for _ in range(5):
            opt.zero_grad()
            loss = loss_fn(lib.tensor(x) @ w.T, lib.tensor(y))
            loss.backward()
            opt.step()
            seq.append(loss.item())
        losses[lib.__name__] = seq
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-10)
    assert losses["ember"][-1] < losses["ember"][0]
