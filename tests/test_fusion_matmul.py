"""Matrix products in Fusion (recorded lazily, run by BLAS at the flush, in the layout their readers
want) and CpuC's BLAS thread policy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backend.fusion import schedule

# the device, the engine, and the module-level skip without a C compiler
from tests.test_fusion import DEV, _fusion  # noqa: E402


def t(a, **kw):
    return ember.tensor(np.asarray(a), device=DEV, **kw)


def _products_in_last_plans(fu) -> list:
    """(operand shapes, result shape) of every product step in the cached plans."""
    out = []
    for plan in fu._plans.values():
        for step in plan.steps:
            if step[0] == schedule._MM:
                out.append((step[2][1][0], step[3][1][0], step[4]))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_are_recorded_and_match_numpy(dtype):
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal((5, 7)).astype(dtype)
    b0 = rng.standard_normal((6, 7)).astype(dtype)
    a, b = t(a0), t(b0)
    fu = _fusion()
    fu.flush()
    flushes = fu.stats["flushes"]
    y = (a * 2 + 1) @ b.mT        # a pending operand and a transposed one
    z = (y.relu() @ (b + 1)).sum(0)   # a product of a pending product
    assert fu.stats["flushes"] == flushes, "a product must not flush"
    h = np.maximum((a0 * 2 + 1) @ b0.T, 0)
    want = (h @ (b0 + 1)).sum(0)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(z.numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(y.numpy(), (a0 * 2 + 1) @ b0.T, rtol=tol, atol=tol)
    assert z.dtype == ember.float32 if dtype == np.float32 else ember.float64


def test_views_of_pending_operands():
    rng = np.random.default_rng(1)
    a0 = rng.standard_normal((4, 6)).astype(np.float32)
    a = t(a0)
    e = a.exp()
    got = (e.mT @ e[:, 1:3]).numpy()   # a transposed and a sliced view of one pending value
    np.testing.assert_allclose(got, np.exp(a0).T @ np.exp(a0)[:, 1:3], rtol=1e-5)


def test_weight_gradient_layout_is_chosen_for_its_reader():
    # (x.mT @ g).mT read only transposed: the flush computes g.mT @ x, read contiguously
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((16, 24)).astype(np.float32)
    g0 = rng.standard_normal((16, 8)).astype(np.float32)
    x, g = t(x0), t(g0)
    fu = _fusion()
    fu.flush()
    fu._plans.clear()
    w = (x.mT @ g).mT.contiguous() * 2.0
    got = w.numpy()
    np.testing.assert_allclose(got, 2 * g0.T @ x0, rtol=1e-5)
    assert _products_in_last_plans(fu) == [((8, 16), (16, 24), (8, 24))]


def test_product_of_a_flipped_product():
    # both products are read only transposed: both flip, the second reading the first's new layout
    rng = np.random.default_rng(6)
    a0, b0, c0 = (rng.standard_normal(s).astype(np.float64) for s in ((4, 3), (4, 5), (3, 6)))
    fu = _fusion()
    fu.flush()
    fu._plans.clear()
    y = ((t(a0).mT @ t(b0)).mT @ t(c0)).mT.contiguous()
    np.testing.assert_allclose(y.numpy(), ((a0.T @ b0).T @ c0).T, rtol=1e-12)
    assert sorted(s[2] for s in _products_in_last_plans(fu)) == [(5, 3), (6, 5)]


def test_held_product_keeps_its_layout_and_views_share_storage():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((5, 3)).astype(np.float32)
    g0 = rng.standard_normal((5, 4)).astype(np.float32)
    p = t(x0).mT @ t(g0)   # (3, 4), held
    v = p.mT               # a view of it, held too
    _fusion()._plans.clear()
    np.testing.assert_allclose(v.numpy(), (x0.T @ g0).T, rtol=1e-5)
    assert _products_in_last_plans(_fusion()) == [((3, 5), (5, 4), (3, 4))]
    assert v.data_ptr() == p.data_ptr()
    p.add_(1.0)            # the view sees writes into the product
    np.testing.assert_allclose(v.numpy(), (x0.T @ g0).T + 1, rtol=1e-5)


def test_writes_into_operands_are_ordered():
    a0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    b0 = np.ones((3, 2), np.float32)
    a, b = t(a0.copy()), t(b0)
    before = a @ b           # recorded before the write: reads the old a
    a.add_(10.0)
    after = a @ b            # recorded after it: reads the new a
    np.testing.assert_allclose(before.numpy(), a0 @ b0)
    np.testing.assert_allclose(after.numpy(), (a0 + 10) @ b0)


def test_what_is_not_recorded_still_runs():
    ai = t(np.arange(6).reshape(2, 3))
    bi = t(np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal((ai @ bi).numpy(), np.arange(6).reshape(2, 3) @ np.arange(6).reshape(3, 2))
    v = t(np.ones(3, np.float32))
    np.testing.assert_allclose((t(np.ones((2, 3), np.float32)) @ v).numpy(), [3.0, 3.0])
    bat = t(np.ones((2, 2, 3), np.float32))
    assert (bat @ t(np.ones((3, 4), np.float32))).shape == (2, 2, 4)
    with pytest.raises(RuntimeError):
        (t(np.ones((2, 3), np.float32)) @ t(np.ones((4, 5), np.float32))).numpy()


def test_mlp_training_matches_the_unfused_stack():
    nn = ember.nn
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((32, 20)).astype(np.float32)
    y0 = rng.integers(0, 5, 32)
    results = []
    for dev in (DEV, "cpu"):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(20, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU(), nn.Linear(24, 5)).to(dev)
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = ember.tensor(x0, device=dev), ember.tensor(y0, device=dev)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append((losses, [p.detach().numpy() for p in model.parameters()],
                        [p.grad.numpy() for p in model.parameters()]))
    (l1, p1, g1), (l2, p2, g2) = results
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    for a, b in zip(p1 + g1, p2 + g2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for g in g1:  # a gradient has the layout of its parameter
        assert g.flags.c_contiguous


# ---- CpuC's BLAS thread policy ----------------------------------------------------------------------
def test_policy_uses_the_faster_mode_and_backs_off():
    from ember.backend.cpuc.linalg import PROBE_MAX, PROBE_MIN, TRIAL, _Policy

    def call(p, now, seconds_by_mode):
        mode = p.pick(now)
        p.record(mode, 1e9, seconds_by_mode[mode], now)
        return mode

    quiet = {0: 1e-3, 1: 0.5e-3}   # threads twice as fast
    busy = {0: 2e-3, 1: 20e-3}     # another process holds a core: threads 10x slower than one thread
    p = _Policy()
    now = 0.0
    assert [call(p, now, quiet) for _ in range(2)] == [1, 1]   # threads first (the first call not counted)
    assert p.rate[1] == pytest.approx(2e12) and p.rate[0] == 0.0
    assert [call(p, now, quiet) for _ in range(TRIAL)] == [0] * TRIAL   # then a trial of one thread: it loses
    assert p.mode == 1 and p.rate[0] == pytest.approx(1e12) and p.interval == 2 * PROBE_MIN
    assert call(p, now + 0.01, quiet) == 1                       # no trial before the interval is over
    for _ in range(4):                                           # load comes: threads slow down, a trial
        call(p, now + 0.02, busy)                                # of one thread starts at once and wins
    assert p.mode == 0
    for _ in range(12):                                          # trials of threads keep losing, each
        now = p.next_probe                                       # ended after its first counted call,
        modes = [call(p, now, busy) for _ in range(2)]           # and the wait between them grows
        assert modes == [1, 1] and p.mode == 0 and p.trial == -1
    assert p.interval == PROBE_MAX
    now = p.next_probe
    assert [call(p, now, quiet) for _ in range(TRIAL)] == [1] * TRIAL   # the load went away: threads win
    assert p.mode == 1 and p.interval == PROBE_MIN


@pytest.mark.parametrize("mode", [0, 1])
def test_large_products_match_numpy_in_both_modes(mode, monkeypatch):
    from ember.backend.cpuc import linalg
    p = linalg._Policy()
    p.mode, p.next_probe, p.skip = mode, float("inf"), False
    monkeypatch.setattr(linalg, "POLICY", p)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 384)).astype(np.float32)
    b = rng.standard_normal((384, 400)).astype(np.float32)
    assert 2 * 256 * 384 * 400 >= linalg.THREADED_MIN
    np.testing.assert_allclose(linalg._matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert p.rate[mode] > 0.0 and p.rate[1 - mode] == 0.0


def test_matmul_into_writes_out_and_refuses_misfits():
    from ember.backend.cpuc.linalg import matmul_into
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal((7, 5)).astype(np.float32).T   # a transposed operand
    out = np.empty((6, 7), np.float32)
    assert matmul_into(a, b, out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    with pytest.raises(ValueError, match="do not fit"):
        matmul_into(a, b, np.empty((7, 6), np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        matmul_into(a, b, np.empty((6, 7), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        matmul_into(a, b, np.empty((7, 6), np.float32).T)


def test_products_write_pooled_buffers_that_are_reused():
    # a product of 1 MB or more is written into a buffer of the target's pool, taken again once free
    rng = np.random.default_rng(8)
    a = t(rng.standard_normal((256, 64)).astype(np.float32))
    b = t(rng.standard_normal((64, 1024)).astype(np.float32))
    first = (a @ b).numpy()
    p1 = a @ b
    p1.numpy()
    ptr = p1.data_ptr()
    del p1
    p2 = a @ b
    np.testing.assert_allclose(p2.numpy(), first, rtol=1e-6)
    assert p2.data_ptr() == ptr
