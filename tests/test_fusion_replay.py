"""Op replay (ember/backend/fusion/replay.py): a window recorded before is recorded again from memos,
without building its graph, and must give what recording gives: values against numpy/torch, the
same kernels, fresh scalar values, views and storage identity, in-place writes and windows that
leave the known path."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backend import fusion
from ember.backend.fusion import Fusion

try:
    from ember.cube.runtime.c import compiler
    compiler()
except Exception:  # noqa: BLE001
    pytest.skip("Fusion on the CPU needs a C compiler", allow_module_level=True)


def _devices() -> list:
    out = ["cpu:fused"]
    try:
        ember.device("cuda:fused")
        out.append("cuda:fused")
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: the CPU target only
        pass
    return out


DEV = "cpu:fused"


@pytest.fixture(params=_devices(), autouse=True)
def dev(request):
    """Every test runs on each fused device here (replay is the same code on every target)."""
    global DEV
    old, DEV = DEV, request.param
    yield request.param
    DEV = old


def _fusion() -> Fusion:
    be = ember.device(DEV).backend
    while not isinstance(be, Fusion):
        be = be.inner
    return be


def t(a, **kw):
    return ember.tensor(np.asarray(a), device=DEV, **kw)


def _close(got, want, tol=None):
    """Values against numpy, within float32 tolerances (wider on a GPU: float32 sums accumulate in float32)."""
    tol = tol or (2e-5 if DEV.startswith("cpu") else 1e-4)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


W0 = np.random.default_rng(1).standard_normal((24, 8)).astype(np.float32)
B0 = np.random.default_rng(2).standard_normal(8).astype(np.float32)

# name -> (ember function of (x, s), numpy reference of (x, s)); s is a Python float that changes each call
CASES = {
    "chain": (lambda x, s: ((x * s + 0.5).tanh() * x.sigmoid() + x * x) * 0.5,
              lambda x, s: (np.tanh(x * s + 0.5) * _sigmoid(x) + x * x) * 0.5),
    "lone op on memory": (lambda x, s: x + s, lambda x, s: x + s),
    "layer norm": (lambda x, s: F.layer_norm(x * s, (24,), t(W0[:, 0].copy()), t(W0[:, 1].copy()), eps=1e-5),
                   lambda x, s: _layer_norm(x * s, W0[:, 0], W0[:, 1], 1e-5)),
    "softmax": (lambda x, s: F.softmax(x * s, dim=-1), lambda x, s: _softmax(x * s)),
    "view of a pending value": (lambda x, s: (x * s).t()[2:] * 2 + 1, lambda x, s: (x * s).T[2:] * 2 + 1),
    "reductions": (lambda x, s: (x * s).sum(0) + (x - s).amax(0), lambda x, s: (x * s).sum(0) + (x - s).max(0)),
    "cast": (lambda x, s: (x * s).to(ember.float64) + s, lambda x, s: (x * s).astype(np.float64) + s),
    "clamp and masked_fill": (lambda x, s: x.clamp(min=-s).masked_fill(x > s, s),
                              lambda x, s: np.where(x > s, s, np.maximum(x, -s))),
    "matmul epilogue": (lambda x, s: ((x @ t(W0)) * s + t(B0)).relu(), lambda x, s: np.maximum((x @ W0) * s + B0, 0)),
    "x ** 2 (value-dependent recording)": (lambda x, s: (x * s) ** 2 + 1, lambda x, s: (x * s) ** 2 + 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_repeated_window_is_replayed_and_matches_numpy(name):
    fn, ref = CASES[name]
    fu = _fusion()
    rng = np.random.default_rng(3)
    replayed = []
    for k in range(4):
        x0 = rng.standard_normal((10, 24)).astype(np.float32)
        s = 0.75 + 0.5 * k  # a new scalar value each call: a kernel argument, bound anew
        fu.flush()
        before = fu.stats["ops_replayed"]
        got = fn(t(x0), s).cpu().numpy()
        replayed.append(fu.stats["ops_replayed"] - before)
        _close(got, ref(x0, s))
    assert replayed[-1] > 0, f"{name}: the fourth window replayed nothing"


def test_replay_switch_gives_the_same_values_and_kernels():
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((10, 24)).astype(np.float32)
    fu = _fusion()
    out = {}
    for flag in (True, False):
        fu.flush()
        with fusion.replaying(flag):
            for _ in range(3):
                fu.flush()
                k0, r0 = fu.stats["kernels"], fu.stats["ops_replayed"]
                got = F.layer_norm(F.softmax(t(x0) * 3, dim=-1), (24,)).cpu().numpy()
            out[flag] = (got, fu.stats["kernels"] - k0, fu.stats["ops_replayed"] - r0)
    assert out[True][2] > 0 and out[False][2] == 0
    np.testing.assert_array_equal(out[True][0], out[False][0])
    assert out[True][1] == out[False][1]


def test_layer_norm_eps_is_structure():
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((6, 16)).astype(np.float32) * 1e-2
    for k in range(6):
        eps = (1e-5, 1e-2)[k % 2]  # an attribute: windows with different eps are different windows
        got = F.layer_norm(t(x0), (16,), eps=eps).cpu().numpy()
        _close(got, _layer_norm(x0, 1.0, 0.0, eps), tol=1e-4)


def test_kept_intermediates_change_what_is_written():
    rng = np.random.default_rng(6)
    for k in range(6):
        x0 = rng.standard_normal((5, 7)).astype(np.float32)
        a = t(x0) * 2
        b = a.exp() + 1
        if k % 2:  # a still held at the flush: it is written too (another plan), and correct
            _close(b.cpu().numpy(), np.exp(x0 * 2) + 1)
            _close(a.cpu().numpy(), x0 * 2)
        else:
            del a
            _close(b.cpu().numpy(), np.exp(x0 * 2) + 1)


def test_window_leaving_the_replayed_path():
    rng = np.random.default_rng(7)
    for k in range(6):
        x0 = rng.standard_normal((5, 7)).astype(np.float32)
        y = (t(x0) * 2).exp()  # the same prefix every time
        if k % 3 == 0:
            z, want = y + 1, np.exp(x0 * 2) + 1
        elif k % 3 == 1:
            z, want = y.sum(0), np.exp(x0 * 2).sum(0)
        else:
            z, want = y.t() * y.mean(), np.exp(x0 * 2).T * np.exp(x0 * 2).mean()
        _close(z.cpu().numpy(), want)
        _close(y.cpu().numpy(), np.exp(x0 * 2))


def test_in_place_writes_after_replayed_ops():
    rng = np.random.default_rng(8)
    for k in range(4):
        x0 = rng.standard_normal((3, 4)).astype(np.float32)
        y = t(x0) * 2 + k
        v = y.t()  # a view of the pending value, then an in-place write into it: v sees the write
        y.add_(1)
        _close(y.cpu().numpy(), x0 * 2 + k + 1)
        _close(v.cpu().numpy(), (x0 * 2 + k + 1).T)
        w = t(x0)
        w.mul_(3)  # in place into memory after a replayed window's ops
        _close(w.cpu().numpy(), x0 * 3)


def test_views_share_their_base_storage_when_replayed():
    be = ember.device(DEV).backend
    fu = _fusion()
    x = t(np.arange(12, dtype=np.float32).reshape(3, 4))
    for k in range(3):
        fu.flush()
        r0 = fu.stats["ops_replayed"]
        y = x * (k + 1)
        v = y.t()
        s = be.storage(y._h)
        assert be.storage(v._h) is s
        np.testing.assert_array_equal(v.cpu().numpy(), (np.arange(12).reshape(3, 4) * (k + 1)).T)
        assert be.storage(y._h) is s and be.storage(v._h) is s
        assert v.stride() == (1, 4)
    assert fu.stats["ops_replayed"] - r0 == 2


def test_training_steps_identical_with_and_without_replay():
    nn = ember.nn
    rng = np.random.default_rng(9)
    x = t(rng.standard_normal((16, 12)).astype(np.float32))
    y = t(rng.integers(0, 3, 16))
    fu = _fusion()
    runs = {}
    for flag in (True, False):
        with fusion.replaying(flag):
            fu.flush()
            ember.manual_seed(0)
            model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 3)).to(DEV)
            opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
            r0 = fu.stats["ops_replayed"]
            losses = []
            for _ in range(5):
                opt.zero_grad()
                loss = F.cross_entropy(F.dropout(model(x), 0.1), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            runs[flag] = (losses, [p.detach().cpu().numpy().copy() for p in model.parameters()],
                          fu.stats["ops_replayed"] - r0)
    assert runs[True][2] > 0 and runs[False][2] == 0
    assert runs[True][0] == runs[False][0]
    for a, b in zip(runs[True][1], runs[False][1]):
        np.testing.assert_array_equal(a, b)
    assert runs[True][0][-1] < runs[True][0][0]


def test_lifted_array_memo_never_answers_for_another_array():
    # Fusion remembers an inner array's geometry by id() behind a weak reference: an entry for a dead array
    # whose id a new array reuses must be ignored, and arrays freed and made again in a loop read correctly
    import weakref

    from ember.backend.fusion import backend
    from ember.backend.fusion.graph import FH
    fu = _fusion()
    rng = np.random.default_rng(10)

    class Gone:
        pass

    for k in range(8):
        shape = (3, 5) if k % 2 else (5, 3)
        x0 = rng.standard_normal(shape).astype(np.float32)
        x = t(x0)
        arr = x._h
        dead = weakref.ref(Gone())  # an entry left by an array that died, under this array's id
        stale = backend._Lifted(dead, FH((7, 7), ember.float64, (7, 1)), dead, None, 0)
        fu._known[id(arr)] = stale
        _close((x * 2 + 1).sum(0).cpu().numpy(), (x0 * 2 + 1).sum(0))
        assert fu._known[id(arr)].shape == shape  # re-learned from the array itself
        del x, arr


def test_in_place_updates_are_replayed_with_fresh_scalars():
    # an optimizer-like window: reads before a write see the old value, reads after it the new one
    fu = _fusion()
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((6, 5)).astype(np.float32)
    w, want = t(w0), w0.copy()
    replayed = []
    for k in range(5):
        g0 = rng.standard_normal((6, 5)).astype(np.float32)
        lr = 0.1 / (k + 1)
        fu.flush()
        r0 = fu.stats["ops_replayed"]
        g = t(g0)
        before = w * 1.0
        w.add_(g * lr)  # a write into the whole storage
        w.mul_(0.5)  # a write into what the previous write's handle stands for
        after = w + 0.0
        got_before, got_after = before.cpu().numpy(), after.cpu().numpy()
        replayed.append(fu.stats["ops_replayed"] - r0)
        _close(got_before, want)
        want = (want + g0 * np.float32(lr)) * np.float32(0.5)
        _close(got_after, want)
        _close(w.cpu().numpy(), want)
    assert replayed[-1] >= 5, replayed  # the reads, the product, both writes


def test_write_into_part_of_a_storage_is_not_replayed_as_a_whole_write():
    # a (4,) view of an (8,) buffer has the signature of a whole (4,) array (the geometry of what is read,
    # not the storage's size): its write must run on the inner backend as recording decides, not be
    # replayed from the whole array's memo as a pending whole-storage write
    fu = _fusion()
    for k in range(4):
        if k % 2 == 0:
            dst = t(np.arange(4, dtype=np.float32))
            big = dst
        else:
            big = t(np.arange(8, dtype=np.float32))
            dst = big[:4]
        fu.flush()
        dst.add_(10.0)
        y = big * 2  # read after the write, in the same window
        n = 4 if k % 2 == 0 else 8
        want = np.arange(n, dtype=np.float32)
        want[:4] += 10
        _close(y.cpu().numpy(), want * 2)
        _close(big.cpu().numpy(), want)


def test_ops_described_by_an_object_id_are_not_remembered():
    # an unhashable attribute is named by id(), which a later object may reuse: such an op is never replayed
    from ember.backend.fusion import replay
    from ember.backend.fusion.backend import _freeze
    assert replay._opaque(("op", (0,), _freeze({"table": np.zeros(3)})))
    assert not replay._opaque(("op", (0,), _freeze({"dim": [1, 2], "keepdim": True})))
    assert _freeze({"dim": [1, 2]}) == _freeze({"dim": (1, 2)})
