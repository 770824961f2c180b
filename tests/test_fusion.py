"""Fusion(inner): lazy recording, fused kernels, sync points, views, in-place writes, and the
number of kernels known patterns launch (pinned so a regression in fusion decisions shows)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backend import fusion
from ember.backend.autodiff import Autodiff
from ember.backend.fusion import Fusion
from ember.backend.fusion.graph import FH

try:
    from ember.cube.runtime.c import compiler
    compiler()
except Exception:  # noqa: BLE001
    pytest.skip("Fusion on the CPU needs a C compiler", allow_module_level=True)

DEV = "cpu:fused"


def _fusion(device=DEV) -> Fusion:
    be = ember.device(device).backend
    while not isinstance(be, Fusion):
        be = be.inner
    return be


class Launches:
    """Counts what a block of code launches on ``device`` (a fused one): fused kernels plus ops run
    on the inner backend."""

    def __init__(self, device=DEV):
        self.device = device

    def __enter__(self):
        self.fu = _fusion(self.device)
        self.fu.flush()
        self.start = dict(self.fu.stats)
        return self

    def __exit__(self, *exc):
        self.fu.flush()
        d = {k: self.fu.stats[k] - self.start[k] for k in self.start}
        self.kernels, self.inner = d["kernels"], d["inner_ops"]
        self.total = self.kernels + self.inner


def t(a, **kw):
    return ember.tensor(np.asarray(a), device=DEV, **kw)


def test_stack():
    be = ember.device(DEV).backend
    assert isinstance(be, Autodiff) and isinstance(be.inner, Fusion)


def test_chain_is_one_kernel_and_correct():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 53)).astype(np.float32)
    with Launches() as n:
        xt = t(x)
        y = ((xt * 1.5 + 0.5).tanh() * xt.sigmoid() + xt * xt) * 0.5
        got = y.numpy()
    want = (np.tanh(x * 1.5 + 0.5) * (1 / (1 + np.exp(-x))) + x * x) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert n.kernels == 1


def test_results_are_lazy_until_read():
    x = t(np.ones(4, np.float32))
    y = x * 2 + 1
    assert isinstance(y._h.value if hasattr(y._h, "value") else y._h, FH)
    h = y._h
    assert h.arr is None and y.shape == (4,) and y.dtype == ember.float32 and y.stride() == (1,)
    np.testing.assert_array_equal(y.numpy(), [3, 3, 3, 3])
    assert h.arr is not None


def test_broadcast_views_and_casts():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 1, 6)).astype(np.float32)
    b = rng.standard_normal((5, 6)).astype(np.float32)
    c = rng.standard_normal((6, 4)).astype(np.float64)
    at, bt, ct = t(a), t(b), t(c)
    y = (at.exp() + bt)  # (4, 5, 6)
    z = y.permute(2, 0, 1)[1:5, :, ::2]  # a view of a pending value: read through strides
    w = (z * 2).to(ember.float64) + ct[1:5].reshape(4, 4, 1)
    want_y = np.exp(a) + b
    want = (want_y.transpose(2, 0, 1)[1:5, :, ::2] * 2).astype(np.float64) + c[1:5].reshape(4, 4, 1)
    # atol: exp(a) + b cancels for some elements, and the vectorised exp is within an ulp or two
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(z.numpy(), want_y.transpose(2, 0, 1)[1:5, :, ::2], rtol=1e-6, atol=1e-6)
    assert z.stride() == (1, 30, 12)  # the view's layout over y's (4, 5, 6) storage


def test_view_of_pending_value_aliases_its_base():
    x = t(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = x + 1
    v = y.t()  # a view: shares y's storage once both are in memory
    y.mul_(10)
    np.testing.assert_array_equal(v.numpy(), ((np.arange(6).reshape(2, 3) + 1) * 10).T)
    np.testing.assert_array_equal(y.numpy(), (np.arange(6).reshape(2, 3) + 1) * 10)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "var"])
@pytest.mark.parametrize("dim,keepdim", [((1,), False), ((0, 2), True), ((), False), ((2,), True)])
def test_reductions_with_prologue(op, dim, keepdim):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xt = t(x)
    pro = (xt * 2).exp()
    d = dim or None
    if op == "var":
        r = pro.var(dim=d, keepdim=keepdim)
        want = np.var(np.exp(x * 2).astype(np.float64), axis=d, keepdims=keepdim, ddof=1)
    else:
        r = getattr(pro, op)(dim=d, keepdim=keepdim) if d is not None else getattr(pro, op)()
        want = getattr(np, {"amax": "max", "amin": "min"}.get(op, op))(np.exp(x * 2).astype(np.float64), axis=d,
                                                                          keepdims=keepdim if d is not None else False)
    np.testing.assert_allclose(r.numpy(), want, rtol=2e-5)
    assert r.dtype == ember.float32


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_reduction_to_one_value_in_two_stages(op, dtype):
    # 256 x 512 elements to one value: 1024 lanes' partials, then their reduction (two kernels), against torch
    import torch
    rng = np.random.default_rng(4)
    x = rng.standard_normal((256, 512)).astype(dtype)
    x[3, 7] = 9.5  # a unique maximum
    xt = t(x)
    with Launches() as n:
        r = getattr((xt * 0.5).tanh() + 1, op)()
        got = r.numpy()
    tx = (torch.from_numpy(x) * 0.5).tanh() + 1
    want = getattr(tx.double(), op)().to(getattr(torch, dtype)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-12)
    assert r.dtype == getattr(ember, dtype) and r.shape == ()
    assert n.kernels == 2 and n.inner == 0
    k = (xt + 1).sum(dim=(0, 1), keepdim=True)
    np.testing.assert_allclose(k.numpy(), (x.astype(np.float64) + 1).sum(keepdims=True), rtol=1e-6)
    assert k.shape == (1, 1)


def test_long_reductions_of_other_kinds():
    rng = np.random.default_rng(5)
    ints = rng.integers(-1000, 1000, (300, 256))
    a = t(ints)
    assert int((a * 3).sum().item()) == int((ints * 3).sum())                    # int64 partials
    assert int((a > 0).sum().item()) == int((ints > 0).sum())                    # a bool sum
    x = rng.standard_normal((200, 333)).astype(np.float32)                       # 370 lanes
    np.testing.assert_allclose((t(x) * 2).sum().item(), (x.astype(np.float64) * 2).sum(), rtol=1e-5)
    for shape, kernels in (((1001, 1003), 2), ((65537,), 1)):  # odd factors: 1003 lanes; a prime: one stage
        z = rng.standard_normal(shape).astype(np.float32)
        with Launches() as n:
            got = (t(z) * 2).amax().item(), (t(z) * 2).mean().item()
        np.testing.assert_allclose(got, ((z * 2).max(), (z.astype(np.float64) * 2).mean()), rtol=1e-5)
        assert n.kernels == 2 * kernels
    y = rng.standard_normal((512, 256)).astype(np.float32)
    yt = t(y)
    np.testing.assert_allclose((yt * 2).t().exp().mean().item(), np.exp(y.astype(np.float64) * 2).mean(), rtol=1e-5)
    y[5, 5] = np.nan
    assert np.isnan((t(y) + 1).amax().item()) and np.isnan((t(y) + 1).sum().item())


def test_ops_on_dtypes_the_target_does_not_fuse_go_straight_to_the_inner_backend():
    # a bfloat16 op can't be recorded, so it isn't described into the window's signature either
    import ml_dtypes
    x = t(np.linspace(-2, 2, 12).astype(ml_dtypes.bfloat16))
    fu = _fusion()
    fu.flush()
    sig = len(fu._sig)
    with Launches() as n:
        y = x * 2
        described = len(fu._sig) - sig
    assert described == 0 and n.inner == 1 and n.kernels == 0
    np.testing.assert_array_equal(y.numpy().astype(np.float32), np.linspace(-2, 2, 12).astype(ml_dtypes.bfloat16)
                                  .astype(np.float32) * 2)


def test_integer_and_bool_ops():
    a = t(np.array([[1, -2, 3], [4, 5, -6]], np.int64))
    m = (a > 0) & (a < 5)
    s = (a * 3 - 1).sum(dim=1)
    np.testing.assert_array_equal(m.numpy(), [[True, False, True], [True, False, False]])
    np.testing.assert_array_equal(s.numpy(), [3 * 2 - 3, 3 * 3 - 3])
    assert s.dtype == ember.int64 and m.dtype == ember.bool


def test_inplace_write_orders_after_pending_reads():
    x = t(np.arange(4, dtype=np.float32))
    before = x * 2  # pending: must see x before the write
    x.add_(100)
    after = x * 2  # recorded after the write: sees it
    xv = x[1:3]  # a view of the written storage
    np.testing.assert_array_equal(before.numpy(), [0, 2, 4, 6])
    np.testing.assert_array_equal(after.numpy(), [200, 202, 204, 206])
    np.testing.assert_array_equal(xv.numpy(), [101, 102])
    np.testing.assert_array_equal(x.numpy(), [100, 101, 102, 103])


def test_write_with_transposed_read_of_itself():
    x = t(np.arange(9, dtype=np.float32).reshape(3, 3))
    x.copy_(x.t() + 0)  # reads other elements of the storage it writes: needs a snapshot
    np.testing.assert_array_equal(x.numpy(), np.arange(9).reshape(3, 3).T)


def test_storage_identity_is_stable():
    be = ember.device(DEV).backend
    x = t(np.ones(3, np.float32))
    y = x * 3
    s0 = be.storage(y._h)
    y.numpy()
    assert be.storage(y._h) is s0
    assert be.storage(y[1:]._h) is s0


def test_dead_intermediates_are_not_written():
    x = t(np.ones(1000, np.float32))
    with Launches() as n:
        y = x
        for _ in range(6):
            y = y * 1.5 + 1.0
        total = y.sum()
        del y  # nobody holds the chain's values: they stay in registers
        total.item()
    # the chain is inlined into the reduction's prologue: nothing but the result is written
    assert n.total == 1


def test_unsupported_op_is_a_sync_point():
    x = t(np.arange(6, dtype=np.float32))
    y = (x + 1).flip(0) * 2  # flip is not fused: its input is materialised, it runs on the inner backend
    np.testing.assert_array_equal(y.numpy(), (np.arange(6) + 1)[::-1] * 2)


def test_autograd_through_fusion():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((8, 16)).astype(np.float32)
    x = t(x0, requires_grad=True)
    y = (x.tanh() * x.sigmoid()).sum()
    y.backward()
    import torch
    xt = torch.tensor(x0, requires_grad=True)
    (xt.tanh() * xt.sigmoid()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_switch_off_runs_eagerly_with_same_results():
    x0 = np.linspace(-2, 2, 50, dtype=np.float32)
    on = ((t(x0) * 1.5 + 0.5).tanh() * 0.5).numpy()
    with Launches() as n, fusion.enabled(False):
        off = ((t(x0) * 1.5 + 0.5).tanh() * 0.5).numpy()
    assert n.kernels == 0 and n.inner == 4
    np.testing.assert_allclose(on, off, rtol=1e-6)
    assert fusion.is_enabled()


def test_debug_prints_kernels(monkeypatch, capfd):
    from ember.backend.fusion import schedule
    monkeypatch.setattr(schedule, "_DEBUG", True)  # what EMBER_DEBUG=1 in the environment sets at import
    x = t(np.ones(3, np.float32))
    ((x + 2) * 3).numpy()
    err = capfd.readouterr().err
    assert "[ember.fusion] kernel" in err and "def fused_ew" in err
    assert schedule._debug()


def test_repeated_step_reuses_kernels():
    from ember.backend.fusion import codegen
    x = t(np.ones((16, 8), np.float32))
    for _ in range(2):
        F.softmax(x * 2, dim=-1).numpy()
    n = len(codegen._KERNELS)
    for k in range(3):
        F.softmax(x * (k + 3), dim=-1).numpy()  # new scalar values: runtime arguments, same kernels
    assert len(codegen._KERNELS) == n


# ---- kernel counts of known patterns --------------------------------------------------------------
def test_softmax_launches():
    x = t(np.random.default_rng(4).standard_normal((64, 128)).astype(np.float32))
    with Launches() as n:
        y = F.softmax(x, dim=-1)
        got = y.numpy()
    import torch
    np.testing.assert_allclose(got, torch.softmax(torch.tensor(x.numpy()), -1).numpy(), rtol=1e-5, atol=1e-7)
    assert n.total == 1  # max, sum of exp and normalise: one row kernel


def test_layer_norm_launches():
    rng = np.random.default_rng(5)
    x = t(rng.standard_normal((32, 64)).astype(np.float32))
    w, b = t(rng.standard_normal(64).astype(np.float32)), t(rng.standard_normal(64).astype(np.float32))
    with Launches() as n:
        got = F.layer_norm(x, (64,), w, b).numpy()
    import torch
    want = torch.nn.functional.layer_norm(torch.tensor(x.numpy()), (64,), torch.tensor(w.numpy()),
                                          torch.tensor(b.numpy())).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert n.total == 1  # mean, var and normalise-scale-shift: one row kernel


def test_gelu_mlp_block_launches():
    rng = np.random.default_rng(6)
    x = t(rng.standard_normal((16, 32)).astype(np.float32))
    w1 = t(rng.standard_normal((64, 32)).astype(np.float32) * 0.1)
    b1 = t(rng.standard_normal(64).astype(np.float32))
    w2 = t(rng.standard_normal((32, 64)).astype(np.float32) * 0.1)
    b2 = t(rng.standard_normal(32).astype(np.float32))
    with Launches() as n:
        h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
        y = F.linear(h, w2, b2) + x  # residual
        got = y.numpy()
    import torch
    T = torch.tensor
    want = torch.nn.functional.linear(torch.nn.functional.gelu(
        torch.nn.functional.linear(T(x.numpy()), T(w1.numpy()), T(b1.numpy())), approximate="tanh"),
        T(w2.numpy()), T(b2.numpy())) + T(x.numpy())
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)
    # two matmuls on the inner backend (BLAS); bias + GELU one kernel; bias + residual one kernel
    assert n.inner == 2 and n.kernels == 2


def test_adam_update_launches():
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal(256).astype(np.float32)
    p = t(p0, requires_grad=True)
    opt = ember.optim.Adam([p], lr=1e-2)
    import torch
    pt = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.Adam([pt], lr=1e-2)
    for step in range(3):
        opt.zero_grad()
        (p * p).sum().backward()
        topt.zero_grad()
        (pt * pt).sum().backward()
        topt.step()
        with Launches() as n:
            opt.step()
        if step > 0:
            # m, v and p are written by one kernel; the step counter is the other
            assert n.total == 2, (n.kernels, n.inner)
    np.testing.assert_allclose(p.detach().numpy(), pt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_long_chains_and_the_pending_bound():
    x = t(np.ones((4, 3), np.float32))
    y = x
    for _ in range(1500):  # deeper than MAX_DEPTH, longer than MAX_PENDING
        y = y + 1
    z = (y[:, :1] * x).permute(1, 0) + y.t()
    np.testing.assert_array_equal(z.numpy(), np.full((3, 4), 3002.0))


def test_bool_sum_and_masked_fill():
    m = t(np.array([[True, False, True], [False, False, True]]))
    x = t(np.arange(6, dtype=np.float64).reshape(2, 3))
    np.testing.assert_array_equal(m.sum(dim=1).numpy(), [2, 1])
    np.testing.assert_array_equal((x * 2).masked_fill(m, -1.0).numpy(), [[-1, 2, -1], [6, 8, -1]])


def test_softmax_with_infinities_matches_torch():
    import torch
    x0 = np.array([[np.inf, -np.inf, 0, 1], [-np.inf, -np.inf, -np.inf, -np.inf], [1, 2, 3, 4]], np.float32)
    got = F.softmax(t(x0), dim=1).numpy()
    want = torch.softmax(torch.tensor(x0), 1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


# ---- row kernels: reduce, then read the result back over the row, in one kernel -----------------
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_family_any_dim_one_kernel(dim):
    import torch
    x0 = np.random.default_rng(8).standard_normal((6, 7, 9)).astype(np.float32)
    for fe, ft in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        with Launches() as n:
            got = fe(t(x0) * 2.0, dim=dim).numpy()
        want = ft(torch.tensor(x0) * 2.0, dim).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert n.total == 1


def test_rms_norm_one_kernel_and_layer_norm_saves_stats():
    import torch
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((16, 32)).astype(np.float32)
    w0 = rng.standard_normal(32).astype(np.float32)
    with Launches() as n:
        got = F.rms_norm(t(x0), (32,), t(w0), eps=1e-6).numpy()
    want = torch.nn.functional.rms_norm(torch.tensor(x0), (32,), torch.tensor(w0), eps=1e-6).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert n.total == 1
    # with autograd, layer norm's mean and variance are kept for backward: the same kernel writes them
    x = t(x0, requires_grad=True)
    w = t(w0, requires_grad=True)
    with Launches() as n:
        y = F.layer_norm(x, (32,), w)
        y.detach().numpy()
    assert n.kernels == 1
    (y * y).sum().backward()
    xt = torch.tensor(x0, requires_grad=True)
    wt = torch.tensor(w0, requires_grad=True)
    (torch.nn.functional.layer_norm(xt, (32,), wt) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_reduction_read_elsewhere_is_not_fused():
    x0 = np.random.default_rng(10).standard_normal((5, 8)).astype(np.float32)
    x = t(x0)
    m = x.amax(dim=1, keepdim=True)
    y = x - m
    z = m.t() * 2  # another shape reads the max: it stays a kernel of its own, written to memory
    np.testing.assert_allclose(y.numpy(), x0 - x0.max(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), x0.max(1, keepdims=True).T * 2, rtol=1e-6)


# ---- the plan cache: a repeated flush replays its plan ----------------------------------------------
def test_training_step_replays_plans_without_generating_source():
    from ember.backend.fusion import codegen
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEV)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(11)
    x = t(rng.standard_normal((8, 12)).astype(np.float32))
    y = t(rng.integers(0, 3, 8))
    fu = _fusion()
    losses = []
    for step in range(4):
        gen, hits, plans = codegen.GENERATED[0], fu.stats["plan_hits"], fu.stats["plans"]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step >= 2:  # the first step builds the plans (Adam's first step differs: its state is new)
            assert codegen.GENERATED[0] == gen, "a replayed step generated kernel source"
            assert fu.stats["plans"] == plans and fu.stats["plan_hits"] > hits
    assert losses[-1] < losses[0]
    # the same steps unfused give the same losses (scalars such as Adam's step count bind anew)
    ember.manual_seed(0)
    model2 = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEV)
    opt2 = ember.optim.Adam(model2.parameters(), lr=1e-2)
    with fusion.enabled(False):
        for step in range(4):
            opt2.zero_grad()
            loss = F.cross_entropy(model2(x), y)
            loss.backward()
            opt2.step()
            np.testing.assert_allclose(loss.item(), losses[step], rtol=1e-5)


def test_replay_binds_new_buffers_and_scalars():
    rng = np.random.default_rng(12)
    for k in range(3):
        a0 = rng.standard_normal((4, 6)).astype(np.float32)
        a = t(a0)
        s = float(k) + 0.5
        y = F.softmax(a * s, dim=1) + a.sum(dim=0) * s
        want = np.exp(a0 * s - (a0 * s).max(1, keepdims=True))
        want = want / want.sum(1, keepdims=True) + a0.sum(0) * s
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)


# ---- a failing flush leaves Fusion usable -----------------------------------------------------------
def test_failed_flush_names_the_op_and_recovers(monkeypatch):
    fu = _fusion()
    x = t(np.arange(6, dtype=np.float32))
    y = (x * 2).tanh() + 1
    real = fu.target.launch

    def broken(kern, *args):
        raise MemoryError("no memory for this kernel")
    monkeypatch.setattr(fu.target, "launch", broken)
    with pytest.raises(MemoryError, match="fused kernel computing .*tanh"):
        y.numpy()
    monkeypatch.setattr(fu.target, "launch", real)
    assert not fu._pending and not fu._writes
    with pytest.raises(RuntimeError, match="flush computing it failed"):
        y.numpy()  # the value that failed is not silently wrong
    np.testing.assert_allclose(((x * 2).tanh() + 1).numpy(), np.tanh(np.arange(6) * 2) + 1, rtol=1e-6)
    # an op on the inner backend failing at the flush: the error names it, later ops work
    z = t(np.array([1.0, 2.0], np.float32))
    w = z + 1  # alone: runs on the inner backend at the flush
    inner_run = fu.inner.run

    def bad(op, *a):
        if op == "add":
            raise ValueError("bad input discovered late")
        return inner_run(op, *a)
    monkeypatch.setattr(fu.inner, "run", bad)
    with pytest.raises(ValueError, match="op 'add'"):
        w.numpy()
    monkeypatch.setattr(fu.inner, "run", inner_run)
    np.testing.assert_array_equal((z * 3).numpy(), [3, 6])


def test_max_of_a_recomputed_value_keeps_its_gradient():
    """amax's gradient picks the elements equal to the maximum, so the maximum and that comparison must
    see one computation of the input: a softcapped, causally masked score row (tanh, computed by several
    kernels of one flush) gets torch's gradient on cpu:fused, not NaN."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, gv = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 5))
    bias = np.where(np.arange(5)[None, :] <= np.arange(3)[:, None], 0.0, -np.inf)

    def grad(lib, dev=None):
        kw = {} if dev is None else {"device": dev}
        x = lib.tensor(xv, requires_grad=True, **kw)
        s = (x / 3.0).tanh() * 3.0 + lib.tensor(bias, **kw)
        e = (s - s.amax(dim=-1, keepdim=True)).exp()
        e.backward(lib.tensor(gv, **kw))
        return x.grad.numpy()
    got, want = grad(ember, "cpu:fused"), grad(torch)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_bool_clamp_runs_on_the_inner_backend():
    # cube's max/min order numbers only: a bool clamp recorded into a kernel failed to compile at the
    # flush (the sequence the remote client sends for x.clamp_(tensor) on bools)
    import ember._dtype as dt
    fu = _fusion()
    a = np.array([[True, False, True], [False, False, True]]).T.copy()
    m = np.array([True, False])
    x = fu.write(a.copy())
    r = fu.run("clamp", (x, fu.write(m), None), {})
    fu.run("assign", (x, fu.run("cast", (r,), {"dtype": dt.bool})), {})
    want = np.maximum(a, m)  # clamp(min=m) of bools: the larger of the two
    np.testing.assert_array_equal(fu.read(x), want)
