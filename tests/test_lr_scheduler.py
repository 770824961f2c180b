"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the same schedulers on the same
optimizer set-ups must produce the same learning rates (and momenta) for 40 steps."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import ember


def _optimizer(lib, kind="SGD"):
    ps = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


def _run(lib, make, steps=40, metrics=None, kind="SGD"):
    opt = _optimizer(lib, kind)
    sched = make(lib.optim.lr_scheduler, opt)
    out = [(list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt))]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt)))
    return out


def _momenta(opt):
    return [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]


def _same(a, b):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        for u, v in zip(x, y):
            assert u == pytest.approx(v, rel=1e-12, abs=1e-15), f"step {i}: {x} vs {y}"


SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=12, eta_min=0.001),
    "CosineAnnealingLR-0": lambda m, o: m.CosineAnnealingLR(o, T_max=5),
    "WarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01),
    "WarmRestarts-mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=10),
    "LinearLR-down": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=30),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=6),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: e % 3 + 1]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.97),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=40),
    "OneCycleLR-linear3": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=4, steps_per_epoch=10,
                                                    anneal_strategy="linear", three_phase=True, pct_start=0.25),
    "OneCycleLR-nomom": lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=45, cycle_momentum=False,
                                                  div_factor=10.0, final_div_factor=100.0),
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-tri2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=5,
                                             mode="triangular2"),
    "CyclicLR-exp": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                            gamma=0.97, cycle_momentum=False),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
                                                    m.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "SequentialLR-3": lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, factor=0.2, total_iters=4),
                                                      m.CosineAnnealingLR(o, T_max=10),
                                                      m.StepLR(o, step_size=3, gamma=0.5)], milestones=[4, 15]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                                         m.ExponentialLR(o, gamma=0.9)]),
    "Chained-cosine": lambda m, o: m.ChainedScheduler([m.LinearLR(o, start_factor=0.3, total_iters=8),
                                                       m.CosineAnnealingLR(o, T_max=13, eta_min=0.002)], optimizer=o),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(_run(ember, SCHEDULES[name]), _run(torch, SCHEDULES[name]))


def test_one_cycle_with_adam_betas():
    make = SCHEDULES["OneCycleLR"]
    _same(_run(ember, make, kind="Adam"), _run(torch, make, kind="Adam"))


METRICS = [1.0, 0.9, 0.9, 0.91, 0.95, 0.9, 0.89, 0.89, 0.9, 0.95, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.51, 0.6, 0.4,
           0.4] * 2


@pytest.mark.parametrize("kw", [dict(), dict(patience=2, factor=0.5), dict(mode="max", patience=1, cooldown=2),
                                dict(patience=0, threshold_mode="abs", threshold=0.05, min_lr=[0.02, 0.004]),
                                dict(patience=1, factor=0.5, min_lr=0.03, eps=1e-3)])
def test_reduce_on_plateau_matches_torch(kw):
    def make(m, o):
        return m.ReduceLROnPlateau(o, **kw)
    _same(_run(ember, make, metrics=METRICS), _run(torch, make, metrics=METRICS))
    s = ember.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(ember), **kw)
    s.step(ember.tensor(3.0))  # a 0-d tensor metric works too
    assert s.best == 3.0


@pytest.mark.parametrize("d_model,warmup,factor", [(512, 10, 1.0), (64, 4, 2.0)])
def test_noam_matches_lambda_definition(d_model, warmup, factor):
    def rate(step):
        return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)

    def make_e(m, o):
        return m.NoamLR(o, d_model, warmup, factor)

    def make_t(m, o):
        for g in o.param_groups:
            g["lr"] = 1.0
        return m.LambdaLR(o, lambda e: rate(e + 1))
    got, want = _run(ember, make_e), _run(torch, make_t)
    _same([(a, b, []) for a, b, _ in got], [(a, b, []) for a, b, _ in want])
    lrs = [x[0][0] for x in got]
    assert max(lrs) == lrs[warmup - 1] == pytest.approx(factor * (d_model * warmup) ** -0.5)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR", "WarmRestarts-mult", "LambdaLR"])
def test_step_with_epoch_closed_form(name):
    def drive(lib):
        opt = _optimizer(lib)
        s = SCHEDULES[name](lib.optim.lr_scheduler, opt)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in [3, 7, 2, 15, 30, 11]:
                opt.step()
                s.step(e)
                out.append((s.get_last_lr(), [s.last_epoch], []))
        return out
    _same(drive(ember), drive(torch))


def _resume(lib, make):
    """12 steps, then optimizer + scheduler state dicts into fresh objects, then 18 more steps."""
    opt = _optimizer(lib)
    s = make(lib.optim.lr_scheduler, opt)
    for _ in range(12):
        opt.step()
        s.step()
    sd, osd = s.state_dict(), opt.state_dict()
    assert "optimizer" not in sd
    opt2 = _optimizer(lib)
    opt2.load_state_dict(osd if lib is torch else _ember_osd(osd))
    s2 = make(lib.optim.lr_scheduler, opt2)
    s2.load_state_dict(sd)
    out = []
    for _ in range(18):
        opt2.step()
        s2.step()
        out.append((list(s2.get_last_lr()), [g["lr"] for g in opt2.param_groups], []))
    return out


def _ember_osd(osd):
    return {"state": osd["state"], "param_groups": osd["param_groups"]}


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR", "ChainedScheduler",
                                  "WarmRestarts-mult", "LambdaLR", "CyclicLR", "LinearLR"])
def test_state_dict_resume(name):
    make = SCHEDULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _resume(ember, make)
        _same(got, _resume(torch, make))
        if name not in ("SequentialLR", "ChainedScheduler", "LinearLR"):
            # these resume exactly where the uninterrupted run was; the others scale the lr when they
            # are constructed (LinearLR by start_factor, composites through their members), in torch too
            full = _run(ember, make, steps=30)
            _same(got, [(a, b, []) for a, b, _ in full[13:]])


def test_lambda_state_dict_keeps_callable_objects():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, e):
            return self.rate ** e
    opt = _optimizer(ember)
    fn = Decay()
    s = ember.optim.lr_scheduler.LambdaLR(opt, [fn, lambda e: 1.0])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    fn.rate = 0.9
    s.load_state_dict(sd)
    assert fn.rate == 0.5


@pytest.mark.parametrize("make", [
    lambda m, o: m.ConstantLR(o, factor=1.5),
    lambda m, o: m.LinearLR(o, start_factor=0.0),
    lambda m, o: m.LinearLR(o, end_factor=2.0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5),
    lambda m, o: m.OneCycleLR(o, max_lr=[0.1], total_steps=10),
    lambda m, o: m.ReduceLROnPlateau(o, factor=1.0),
    lambda m, o: m.ReduceLROnPlateau(o, mode="sideways"),
    lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda m, o: m.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.StepLR("not an optimizer", 3),
    lambda m, o: m.StepLR(o, 3, last_epoch=5),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.StepLR(o, 3)], milestones=[]),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.ReduceLROnPlateau(o)], milestones=[3]),
    lambda m, o: m.ChainedScheduler([]),
    lambda m, o: m.CyclicLR(o, 0.1, 1.0, mode="weird"),
])
def test_errors_match_torch(make):
    kinds = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            make(lib.optim.lr_scheduler, _optimizer(lib))
        kinds.append(type(info.value))
    assert kinds[0] is kinds[1], kinds


def test_one_cycle_overrun_and_cycle_momentum_check():
    opt = _optimizer(ember)
    s = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            s.step()
        with pytest.raises(ValueError, match="total steps"):
            s.step()
    p = ember.nn.Parameter(ember.zeros(1))
    with pytest.raises(ValueError, match="momentum"):
        ember.optim.lr_scheduler.OneCycleLR(ember.optim.Adagrad([p]), max_lr=0.1, total_steps=5)


def test_warning_when_stepped_before_optimizer():
    opt = _optimizer(ember)
    s = ember.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        s.step()
    opt2 = _optimizer(ember)
    s2 = ember.optim.lr_scheduler.StepLR(opt2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        s2.step()


def test_resume_with_last_epoch_and_initial_lr():
    opt = _optimizer(ember)
    ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    opt.param_groups[0]["lr"] = 0.025
    s = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5, last_epoch=2)
    assert s.base_lrs == [0.1, 0.05] and s.last_epoch == 3
    assert s.get_last_lr()[0] == 0.025  # the initial step of a resumed chainable schedule keeps the lr
    assert math.isclose(s._get_closed_form_lr()[0], 0.1 * 0.5 ** 3)
