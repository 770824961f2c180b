"""ember.optim against torch.optim: the same tiny MLP, the same initial weights and data, each library
computing its own gradients; the parameter trajectories must agree for 20 steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
from ember import nn

RS = np.random.RandomState(0)
INIT = {"w1": RS.randn(4, 3).astype(np.float32) * 0.5, "b1": RS.randn(4).astype(np.float32) * 0.1,
        "w2": RS.randn(2, 4).astype(np.float32) * 0.5, "b2": RS.randn(2).astype(np.float32) * 0.1}
X = RS.randn(8, 3).astype(np.float32)
Y = RS.randn(8, 2).astype(np.float32)


def mlp_loss(lib, P, x, y):
    h = lib.tanh(x @ P["w1"].T + P["b1"])
    return ((h @ P["w2"].T + P["b2"] - y) ** 2).mean()


def make_params(dtype=np.float32, init=INIT):
    pe = {k: nn.Parameter(ember.tensor(v.astype(dtype))) for k, v in init.items()}
    pt = {k: torch.nn.Parameter(torch.tensor(v.astype(dtype))) for k, v in init.items()}
    return pe, pt


def _groups(P, split):
    if not split:
        return list(P.values())
    weights, biases = [P["w1"], P["w2"]], [P["b1"], P["b2"]]
    return [{"params": weights}, {"params": biases, **split}]


def trajectory_check(make_e, make_t, steps=20, dtype=np.float32, closure=False, rtol=1e-5, atol=1e-6,
                     loss=mlp_loss, init=INIT, data=(X, Y)):
    """Run both optimizers side by side; compare every parameter after every step."""
    pe, pt = make_params(dtype, init)
    oe, ot = make_e(pe), make_t(pt)
    xe, ye = (ember.tensor(a.astype(dtype)) for a in data)
    xt, yt = (torch.tensor(a.astype(dtype)) for a in data)

    def ce():
        oe.zero_grad()
        v = loss(ember, pe, xe, ye)
        v.backward()
        return v

    def ct():
        ot.zero_grad()
        v = loss(torch, pt, xt, yt)
        v.backward()
        return v

    for step in range(steps):
        if closure:
            le, lt = oe.step(ce), ot.step(ct)
            np.testing.assert_allclose(float(le.detach()), float(lt.detach()), rtol=10 * rtol, atol=atol)
        else:
            ce()
            ct()
            oe.step()
            ot.step()
        for k in pe:
            np.testing.assert_allclose(pe[k].detach().numpy(), pt[k].detach().numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"{k} after step {step + 1}")
    return oe, ot, pe, pt


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.5, dampening=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1, alpha=0.9)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, eps=1e-5)),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_torch(name, kw):
    trajectory_check(lambda P: getattr(ember.optim, name)(list(P.values()), **kw),
                     lambda P: getattr(torch.optim, name)(list(P.values()), **kw))


GROUP_CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9), dict(lr=0.01, momentum=0.0, weight_decay=0.1)),
    ("Adam", dict(lr=0.01), dict(lr=0.05, amsgrad=True, betas=(0.5, 0.9))),
    ("RMSprop", dict(lr=0.01), dict(centered=True, momentum=0.3)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2), dict(lr_decay=0.1, eps=1e-3)),
]


@pytest.mark.parametrize("name,kw,group", GROUP_CASES, ids=[c[0] for c in GROUP_CASES])
def test_param_groups_with_own_options(name, kw, group):
    oe, ot, _, _ = trajectory_check(lambda P: getattr(ember.optim, name)(_groups(P, group), **kw),
                                    lambda P: getattr(torch.optim, name)(_groups(P, group), **kw))
    ge = [{k: v for k, v in g.items() if k != "params"} for g in oe.param_groups]
    gt = [{k: v for k, v in g.items() if k != "params"} for g in ot.param_groups]
    assert ge == gt


def test_float64_trajectories():
    for name, kw in [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True))]:
        trajectory_check(lambda P, n=name, k=kw: getattr(ember.optim, n)(list(P.values()), **k),
                         lambda P, n=name, k=kw: getattr(torch.optim, n)(list(P.values()), **k),
                         dtype=np.float64, rtol=1e-12, atol=1e-13)


# ---- LBFGS --------------------------------------------------------------------------------------
def logistic_loss(lib, P, x, y):
    """A strictly convex problem (L2-regularised logistic regression)."""
    z = x @ P["w"] + P["b"]
    return (lib.log(1 + lib.exp(-y * z))).mean() + 0.01 * (P["w"] ** 2).sum()


_RL = np.random.RandomState(1)
LOGI_DATA = (_RL.randn(64, 5).astype(np.float32), None)
LOGI_DATA = (LOGI_DATA[0], np.sign(LOGI_DATA[0] @ _RL.randn(5) + 0.5 * _RL.randn(64)).astype(np.float32))
LOGI_INIT = {"w": _RL.randn(5).astype(np.float32), "b": np.zeros(1, np.float32)}
LBFGS_CASES = [dict(max_iter=3), dict(max_iter=3, line_search_fn="strong_wolfe"),
               dict(lr=0.5, history_size=3, max_iter=4),
               dict(history_size=2, max_iter=4, line_search_fn="strong_wolfe"),
               dict(line_search_fn="strong_wolfe"), dict()]


@pytest.mark.parametrize("kw", LBFGS_CASES)
def test_lbfgs_float64_same_path(kw):
    # in float64 the two implementations take the same decisions: same iterations, same evaluations
    oe, ot, pe, pt = trajectory_check(lambda P: ember.optim.LBFGS(list(P.values()), **kw),
                                      lambda P: torch.optim.LBFGS(list(P.values()), **kw), closure=True,
                                      loss=logistic_loss, init=LOGI_INIT, data=LOGI_DATA, dtype=np.float64,
                                      rtol=1e-9, atol=1e-10)
    se, st = oe.state[pe["w"]], ot.state[pt["w"]]
    assert (se["func_evals"], se["n_iter"]) == (st["func_evals"], st["n_iter"])


@pytest.mark.parametrize("kw", LBFGS_CASES)
def test_lbfgs_float32(kw):
    # near a minimum, float32 fixes the minimiser only to about sqrt(eps) ~ 3e-4 (the loss is flat to
    # rounding there), so line-search decisions on noise-level differences may differ by that much
    trajectory_check(lambda P: ember.optim.LBFGS(list(P.values()), **kw),
                     lambda P: torch.optim.LBFGS(list(P.values()), **kw), closure=True, loss=logistic_loss,
                     init=LOGI_INIT, data=LOGI_DATA, rtol=1e-3, atol=3e-4)


@pytest.mark.parametrize("kw", [dict(max_iter=5), dict(max_iter=5, line_search_fn="strong_wolfe"),
                                dict(max_iter=8, history_size=3, line_search_fn="strong_wolfe", lr=0.5)])
def test_lbfgs_mlp(kw):
    # the MLP's loss has flat directions along which rounding differences grow between the two
    # libraries; float64 keeps them below float32 tolerance for 20 steps of a few iterations each
    trajectory_check(lambda P: ember.optim.LBFGS(list(P.values()), **kw),
                     lambda P: torch.optim.LBFGS(list(P.values()), **kw), closure=True, dtype=np.float64,
                     steps=20 if kw["max_iter"] == 5 else 3)


def test_lbfgs_errors_and_tolerance():
    p = nn.Parameter(ember.zeros(2))
    with pytest.raises(ValueError, match="parameter groups"):
        ember.optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(ember.zeros(1))]}])
    with pytest.raises(ValueError, match="strong_wolfe"):
        ember.optim.LBFGS([p], line_search_fn="armijo")
    opt = ember.optim.LBFGS([p])
    with pytest.raises(TypeError):
        opt.step()
    with pytest.raises(TypeError):
        torch.optim.LBFGS([torch.nn.Parameter(torch.zeros(2))]).step()
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (p ** 2).sum()  # already at the minimum: gradient 0
        loss.backward()
        return loss
    assert float(opt.step(closure)) == 0.0 and len(calls) == 1


# ---- Lion and Muon --------------------------------------------------------------------------------
class TorchLion(torch.optim.Optimizer):
    """Lion as written in the paper (Chen et al. 2023, Algorithm 2), for reference."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                grad = -p.grad if g["maximize"] else p.grad
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                c = b1 * m + (1 - b1) * grad
                p.mul_(1 - g["lr"] * g["weight_decay"]).add_(torch.sign(c), alpha=-g["lr"])
                m.copy_(b2 * m + (1 - b2) * grad)


@pytest.mark.parametrize("kw", [dict(lr=1e-3), dict(lr=3e-3, betas=(0.95, 0.98), weight_decay=0.5),
                                dict(lr=1e-3, maximize=True)])
def test_lion_matches_paper(kw):
    trajectory_check(lambda P: ember.optim.Lion(list(P.values()), **kw),
                     lambda P: TorchLion(list(P.values()), **kw))


@pytest.mark.parametrize("kw", [dict(lr=0.02), dict(lr=0.02, nesterov=False, weight_decay=0.0),
                                dict(lr=0.01, adjust_lr_fn="match_rms_adamw", momentum=0.9, ns_steps=3)])
def test_muon_matches_torch_with_adamw_fallback(kw):
    def make_t(P):
        muon = torch.optim.Muon([P["w1"], P["w2"]], **kw)
        adamw = torch.optim.AdamW([P["b1"], P["b2"]], lr=kw["lr"], betas=(0.9, 0.95), eps=1e-8,
                                  weight_decay=kw.get("weight_decay", 0.1))

        class Both:
            def zero_grad(self):
                muon.zero_grad()
                adamw.zero_grad()

            def step(self):
                muon.step()
                adamw.step()
        return Both()
    trajectory_check(lambda P: ember.optim.Muon(list(P.values()), **kw), make_t)


def test_muon_groups_and_errors():
    pe, pt = make_params()
    ember.optim.Muon([pe["w1"], pe["w2"]], lr=0.02)  # 2-d only, as torch accepts
    torch.optim.Muon([pt["w1"], pt["w2"]], lr=0.02)
    with pytest.raises(ValueError, match="2D"):
        ember.optim.Muon([{"params": [pe["b1"]], "use_muon": True}])
    with pytest.raises(ValueError):
        torch.optim.Muon([pt["b1"]])
    with pytest.raises(ValueError, match="not supported"):
        ember.optim.Muon([pe["w1"]], adjust_lr_fn="nope")
    # a 2-d parameter forced onto the AdamW path behaves like AdamW(betas=(0.9, 0.95))
    trajectory_check(lambda P: ember.optim.Muon([{"params": list(P.values()), "use_muon": False}], lr=0.01,
                                                weight_decay=0.05),
                     lambda P: torch.optim.AdamW(list(P.values()), lr=0.01, betas=(0.9, 0.95), weight_decay=0.05),
                     steps=5)


# ---- state dicts --------------------------------------------------------------------------------
def _to_ember_sd(sd):
    def conv(v):
        if isinstance(v, torch.Tensor):
            return ember.tensor(v.numpy())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v
    return conv(sd)


def _assert_same_sd(se, st):
    assert list(se["state"]) == list(st["state"])
    for i in se["state"]:
        assert list(se["state"][i]) == list(st["state"][i])
        for k, v in se["state"][i].items():
            tv = st["state"][i][k]
            if isinstance(v, ember.Tensor):
                assert v.dtype.name == str(tv.dtype).removeprefix("torch."), k
                np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6)
            else:
                assert v == tv
    assert se["param_groups"] == st["param_groups"]


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("SGD", dict(lr=0.1)), ("NAdam", dict()), ("RMSprop", dict(centered=True,
                                                                                                momentum=0.1)),
                                     ("Adagrad", dict()), ("Adadelta", dict()), ("Adamax", dict()),
                                     ("RAdam", dict()), ("AdamW", dict())])
def test_state_dict_layout_matches_torch_and_interoperates(name, kw):
    oe, ot, pe, pt = trajectory_check(lambda P: getattr(ember.optim, name)(_groups(P, {"lr": 0.003}), **kw),
                                      lambda P: getattr(torch.optim, name)(_groups(P, {"lr": 0.003}), **kw),
                                      steps=3)
    _assert_same_sd(oe.state_dict(), ot.state_dict())
    # torch's state dict, converted, drives a fresh ember optimizer along torch's path
    pe2 = {k: nn.Parameter(ember.tensor(v.detach().numpy())) for k, v in pt.items()}
    oe2 = getattr(ember.optim, name)(_groups(pe2, {"lr": 0.5}), **kw)
    oe2.load_state_dict(_to_ember_sd(ot.state_dict()))
    assert oe2.param_groups[1]["lr"] == 0.003 and oe2.param_groups[1]["params"][0] is pe2["b1"]
    xe, ye, xt, yt = ember.tensor(X), ember.tensor(Y), torch.tensor(X), torch.tensor(Y)
    for _ in range(3):
        oe2.zero_grad()
        mlp_loss(ember, pe2, xe, ye).backward()
        oe2.step()
        ot.zero_grad()
        mlp_loss(torch, pt, xt, yt).backward()
        ot.step()
    for k in pe2:
        np.testing.assert_allclose(pe2[k].detach().numpy(), pt[k].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_resumes_exactly_and_copies():
    pe, _ = make_params()
    pe2 = {k: nn.Parameter(ember.tensor(v)) for k, v in INIT.items()}
    xe, ye = ember.tensor(X), ember.tensor(Y)
    a = ember.optim.Adam(list(pe.values()), lr=0.01)
    for _ in range(4):
        a.zero_grad()
        mlp_loss(ember, pe, xe, ye).backward()
        a.step()
    b = ember.optim.Adam(list(pe2.values()), lr=0.01)
    with ember.no_grad():
        for k in pe:
            pe2[k].copy_(pe[k])
    sd = a.state_dict()
    b.load_state_dict(sd)
    assert b.state[pe2["w1"]]["exp_avg"] is not sd["state"][0]["exp_avg"]  # copied, not aliased
    for o, P in ((a, pe), (b, pe2)):
        for _ in range(3):
            o.zero_grad()
            mlp_loss(ember, P, xe, ye).backward()
            o.step()
    for k in pe:
        assert ember.equal(pe[k], pe2[k])
    assert float(b.state[pe2["w1"]]["step"]) == 7.0


def test_load_state_dict_errors():
    pe, _ = make_params()
    o = ember.optim.SGD(list(pe.values()), lr=0.1)
    with pytest.raises(ValueError, match="parameter groups"):
        o.load_state_dict({"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]})
    with pytest.raises(ValueError, match="size"):
        o.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1]}]})
    with pytest.raises(ValueError):
        o.load_state_dict({"param_groups": []})


def test_adagrad_group_initial_accumulator_value():
    # torch fills every group's accumulator with the constructor's value; ember honours a group's own
    p, q = nn.Parameter(ember.zeros(2)), nn.Parameter(ember.zeros(2))
    o = ember.optim.Adagrad([{"params": [p]}, {"params": [q], "initial_accumulator_value": 0.5}])
    assert o.state[p]["sum"].tolist() == [0.0, 0.0] and o.state[q]["sum"].tolist() == [0.5, 0.5]


def test_adagrad_state_exists_at_construction():
    pe, pt = make_params()
    oe = ember.optim.Adagrad(list(pe.values()), initial_accumulator_value=0.25)
    ot = torch.optim.Adagrad(list(pt.values()), initial_accumulator_value=0.25)
    _assert_same_sd(oe.state_dict(), ot.state_dict())


# ---- API behaviour ------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda lib, p: lib.optim.SGD(p, lr=-1.0),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=-0.5),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, nesterov=True),
    lambda lib, p: lib.optim.Adam(p, betas=(1.0, 0.9)),
    lambda lib, p: lib.optim.Adam(p, eps=-1.0),
    lambda lib, p: lib.optim.AdamW(p, weight_decay=-1.0),
    lambda lib, p: lib.optim.RMSprop(p, alpha=-1.0),
    lambda lib, p: lib.optim.Adagrad(p, lr_decay=-1.0),
    lambda lib, p: lib.optim.Adadelta(p, rho=1.5),
    lambda lib, p: lib.optim.NAdam(p, momentum_decay=-1.0),
    lambda lib, p: lib.optim.SGD([], lr=0.1),
    lambda lib, p: lib.optim.SGD(p[0], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": p}, {"params": p[:1]}], lr=0.1),
    lambda lib, p: lib.optim.SGD({p[0]}, lr=0.1) if False else lib.optim.SGD([{"params": set(p)}], lr=0.1),
    lambda lib, p: lib.optim.SGD([p[0] * 2], lr=0.1),
    lambda lib, p: lib.optim.SGD([1.0], lr=0.1),
])
def test_constructor_errors_match_torch(make):
    kinds = []
    for lib in (ember, torch):
        p = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
        with pytest.raises(Exception) as info:
            make(lib, p)
        kinds.append(type(info.value))
    assert kinds[0] is kinds[1], kinds


def test_unsupported_flags_refused():
    p = [nn.Parameter(ember.zeros(2))]
    for flag in ("differentiable", "capturable", "fused"):
        with pytest.raises(ValueError, match=flag):
            ember.optim.Adam(p, **{flag: True})
    ember.optim.Adam(p, foreach=True)  # accepted and ignored


def test_zero_grad_add_param_group_hooks_closure():
    p = nn.Parameter(ember.ones(2))
    q = nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.5)
    opt.add_param_group({"params": q, "lr": 0.1})
    assert opt.param_groups[1]["momentum"] == 0 and opt.param_groups[1]["lr"] == 0.1
    with pytest.raises(ValueError, match="more than one"):
        opt.add_param_group({"params": [p]})
    log = []
    h = opt.register_step_pre_hook(lambda o, args, kwargs: log.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum() + q.sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert float(loss) == 5.0 and log == ["pre", "post"]
    assert p.tolist() == [0.0, 0.0] and q.tolist() == pytest.approx([0.9] * 3)
    h.remove()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None and q.grad is None
    opt.step()  # parameters without gradients are skipped
    assert p.tolist() == [0.0, 0.0] and log == ["pre", "post", "post"]  # the post hook is still registered
    assert "Parameter Group 1" in repr(opt) and "lr: 0.1" in repr(opt)


def test_named_parameters_and_tensor_lr():
    m = nn.ParameterDict({"a": ember.ones(2), "b": ember.ones(2)})
    opt = ember.optim.Adam(m.named_parameters(), lr=ember.tensor(0.1))
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    (m["a"] * m["b"]).sum().backward()
    opt.step()
    np.testing.assert_allclose(m["a"].detach().numpy(), [0.9, 0.9], rtol=1e-6)
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]


def test_optimizer_works_with_module_and_to():
    m = nn.Sequential(nn.ParameterList([ember.ones(3)]))
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m.double()  # the optimizer still holds the same Parameter objects
    p = m[0][0]
    (p * p).sum().backward()
    opt.step()
    assert p.dtype is ember.float64 and p.tolist() == [0.8] * 3
    assert math.isclose(float(opt.state[p]["momentum_buffer"][0]), 2.0)


# ---- packed parameters (ember.optim._flat): SGD's multi-tensor path --------------------------------------
def _sgd_run(foreach, kw, *, steps=4, drop_grad_at=None, reload_at=None, replace_at=None):
    """Train a tiny MLP with SGD; returns the parameters, momentum buffers and the optimizer."""
    rng = np.random.default_rng(7)
    W = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((4, 3), (4,), (2, 4), (2,))]
    X = rng.standard_normal((5, 3)).astype(np.float32)
    ps = [ember.nn.Parameter(ember.tensor(w)) for w in W]
    opt = ember.optim.SGD(ps, lr=0.05, foreach=foreach, **kw)
    x = ember.tensor(X)
    for step in range(steps):
        opt.zero_grad()
        h = (x @ ps[0].T + ps[1]).tanh() @ ps[2].T + ps[3]
        (h * h).sum().backward()
        if step == drop_grad_at:
            ps[1].grad = None
        if step == replace_at:  # new data for a parameter: the pack must notice
            ps[0].data = ps[0].detach().clone() * 0.5
        opt.step()
        if step == reload_at:
            sd = opt.state_dict()
            opt = ember.optim.SGD(ps, lr=0.05, foreach=foreach, **kw)
            opt.load_state_dict(sd)
    bufs = [opt.state[p]["momentum_buffer"].numpy().copy() for p in ps if "momentum_buffer" in opt.state[p]]
    return [p.detach().numpy().copy() for p in ps] + bufs, opt


@pytest.mark.parametrize("kw", [dict(momentum=0.9), dict(momentum=0.9, nesterov=True, weight_decay=1e-2), dict(),
                                dict(momentum=0.5, dampening=0.1, maximize=True)], ids=str)
@pytest.mark.parametrize("event", [{}, {"drop_grad_at": 1}, {"reload_at": 1}, {"replace_at": 2}], ids=str)
def test_packed_sgd_equals_the_loop_bit_for_bit(kw, event):
    packed, opt = _sgd_run(None, kw, **event)
    loop, opt_loop = _sgd_run(False, kw, **event)
    assert opt._packs and not getattr(opt_loop, "_packs", None)
    assert len(packed) == len(loop)
    for a, b in zip(packed, loop):
        np.testing.assert_array_equal(a, b)


def test_packed_sgd_matches_torch():
    rng = np.random.default_rng(3)
    W = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((6, 3), (6,), (1, 6))]
    X = rng.standard_normal((8, 3)).astype(np.float32)
    ep = [ember.nn.Parameter(ember.tensor(w)) for w in W]
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in W]
    eo = ember.optim.SGD(ep, lr=0.1, momentum=0.9, weight_decay=1e-3)
    to = torch.optim.SGD(tp, lr=0.1, momentum=0.9, weight_decay=1e-3)
    for _ in range(5):
        for ps, o, x in ((ep, eo, ember.tensor(X)), (tp, to, torch.tensor(X))):
            o.zero_grad()
            ((x @ ps[0].T + ps[1]).tanh() @ ps[2].T).square().sum().backward()
            o.step()
    assert eo._packs
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_packed_parameters_share_one_buffer_and_still_save_and_check_versions(tmp_path):
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2))
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = ember.randn(5, 3)
    for _ in range(2):
        opt.zero_grad()
        m(x).square().sum().backward()
        opt.step()
    (pack,) = opt._packs.values()
    assert pack.flat.shape == (sum(p.numel() for p in m.parameters()),)
    assert all(p.is_leaf and p.requires_grad for p in m.parameters())
    saved = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    for name in ("m.safetensors", "m.pt"):
        ember.save(m.state_dict(), tmp_path / name)
        back = ember.load(tmp_path / name)
        for k, v in saved.items():
            np.testing.assert_array_equal(back[k].numpy(), v)
    loss = m(x).square().sum()
    opt.step()  # the parameters change under the saved graph: backward must refuse, as in PyTorch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_foreach_false_and_unpackable_groups_use_the_loop():
    single = [ember.nn.Parameter(ember.ones(3))]
    opt = ember.optim.SGD(single, lr=0.1)
    single[0].sum().backward()
    opt.step()
    assert not opt._packs  # one parameter: nothing to pack
    mixed = [ember.nn.Parameter(ember.ones(3)), ember.nn.Parameter(ember.ones(2, dtype=ember.float64))]
    opt = ember.optim.SGD(mixed, lr=0.1)
    (mixed[0].sum() + mixed[1].sum()).backward()
    opt.step()
    assert not opt._packs
    np.testing.assert_allclose(mixed[1].detach().numpy(), 0.9)


def _adam_pair(shape=(5, 3), seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    return w, grads


@pytest.mark.parametrize("device", ["cpu", "cudasim"])
def test_adam_step_counts_are_mirrored_on_the_host_and_resynced_after_outside_writes(device):
    """Adam reads its step counter back once, then counts on the host (a read of a CUDA counter is a sync per
    parameter); an in-place write to the counter, or a new counter from load_state_dict, is read again: the
    updates stay PyTorch's."""
    from tests import test_cuda_sim  # noqa: F401 - registers "cudasim"
    w, grads = _adam_pair()
    p = nn.Parameter(ember.tensor(w, device=device))
    tp = torch.nn.Parameter(torch.tensor(w))
    opt, topt = ember.optim.AdamW([p], lr=0.1), torch.optim.AdamW([tp], lr=0.1)
    be = p._device.backend
    reads = []
    real_read = be.read

    def spy(h):
        reads.append(1)
        return real_read(h)
    be.read = spy
    try:
        for k, g in enumerate(grads):
            p.grad, tp.grad = ember.tensor(g, device=device), torch.tensor(g)
            if k == 3:  # counters moved behind the optimizer's back
                opt.state[p]["step"].fill_(10.0)
                topt.state[tp]["step"].fill_(10.0)
            if k == 4:
                opt.load_state_dict(opt.state_dict())
            before = len(reads)
            opt.step()
            topt.step()
            assert len(reads) - before == (1 if k in (0, 3, 4) else 0), k
    finally:
        be.read = real_read
    np.testing.assert_allclose(p.detach().cpu().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert float(opt.state[p]["step"].item()) == 15.0


def test_adam_counts_right_after_compiled_replays_then_eager_steps():
    """Replays of an ember.compile'd step move the counter on the device only: the next eager step reads it
    again instead of trusting the host's copy (all steps match PyTorch's)."""
    w, grads = _adam_pair((4, 4), 1)
    p = nn.Parameter(ember.tensor(w, device="cpu:fused"))
    tp = torch.nn.Parameter(torch.tensor(w))
    opt, topt = ember.optim.Adam([p], lr=0.05), torch.optim.Adam([tp], lr=0.05)
    g_in = ember.zeros(4, 4, device="cpu:fused")

    def step(g):
        p.grad = g * 1.0
        opt.step()
    compiled = ember.compile(step)
    for k, g in enumerate(grads):
        g_in.copy_(ember.tensor(g, device="cpu:fused"))
        (compiled if k in (1, 2, 3, 4, 6) else step)(g_in)  # warm-up, two captures, replays
        tp.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(p.detach().cpu().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert float(opt.state[p]["step"].item()) == 8.0
