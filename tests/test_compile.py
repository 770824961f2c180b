"""ember.compile: a captured step replays to the same numbers as the eager step (cpu:fused tape).

Compiled and eager runs of the same model/optimizer are compared after every step (losses,
parameters, gradients), and the parameters against PyTorch; the rules are checked (host reads
refused inside, random ops replayed with fresh numbers, new signatures and changed optimizer
options capture again, unreplayable functions fall back to eager), and replays are checked to run
no Fusion recording. The CUDA test needs a GPU (it runs the CUDA graph path).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember._compile import compile as ember_compile
from ember.backend.capture import CaptureSyncError, capturing
from ember.backend.fusion import kernel_count

FUSED = "cpu:fused"
try:
    ember.device(FUSED)
except Exception:  # noqa: BLE001 - the device could not be built here
    FUSED = None

HAS_CUDA = ember.cuda.is_available()


@pytest.fixture(autouse=True)
def _fused_or_skip(request):
    if FUSED is None and "cuda" not in request.node.name:
        pytest.skip("cpu:fused is not available here")


RNG = np.random.default_rng(0)
XS = [RNG.standard_normal((32, 20)).astype(np.float32) for _ in range(6)]
YS = [RNG.integers(0, 5, 32) for _ in range(6)]
W0 = [RNG.standard_normal(s).astype(np.float32) * 0.3 for s in ((16, 20), (16,), (5, 16), (5,))]


def _model(dev):
    nn = ember.nn
    m = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5)).to(dev)
    with ember.no_grad():
        for p, w in zip(m.parameters(), W0):
            p.copy_(ember.tensor(w, device=dev))
    return m


def _opt(name, params, lr):
    if name == "sgd":
        return ember.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=1e-3)
    if name == "adam":
        return ember.optim.Adam(params, lr=lr, weight_decay=1e-3)
    return ember.optim.AdamW(params, lr=lr, weight_decay=1e-2)


def _step_fn(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _torch_params(name, lr, steps):
    torch = pytest.importorskip("torch")
    m = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
    with torch.no_grad():
        for p, w in zip(m.parameters(), W0):
            p.copy_(torch.from_numpy(w))
    opt = {"sgd": lambda: torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9, weight_decay=1e-3),
           "adam": lambda: torch.optim.Adam(m.parameters(), lr=lr, weight_decay=1e-3),
           "adamw": lambda: torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=1e-2)}[name]()
    for i in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(torch.from_numpy(XS[i])), torch.from_numpy(YS[i])).backward()
        opt.step()
    return [p.detach().numpy() for p in m.parameters()]


@pytest.mark.parametrize("name,lr", [("sgd", 0.1), ("adam", 0.01), ("adamw", 0.01)])
def test_training_step_matches_eager_and_torch(name, lr):
    m_eager, m_comp = _model(FUSED), _model(FUSED)
    o_eager, o_comp = _opt(name, m_eager.parameters(), lr), _opt(name, m_comp.parameters(), lr)
    eager, comp = _step_fn(m_eager, o_eager), ember_compile(_step_fn(m_comp, o_comp))
    for i in range(6):
        x, y = ember.tensor(XS[i], device=FUSED), ember.tensor(YS[i], device=FUSED)
        le, lc = eager(x, y).item(), comp(x, y).item()  # a new x each call: the static input copy
        assert lc == pytest.approx(le, rel=1e-5, abs=1e-6)
        for p, q in zip(m_eager.parameters(), m_comp.parameters()):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert comp.stats["replays"] >= 3, comp.stats  # warm-up, two captures, then replays
    for p, t in zip(m_comp.parameters(), _torch_params(name, lr, 6)):
        np.testing.assert_allclose(p.detach().numpy(), t, rtol=1e-4, atol=1e-5)
    if name != "sgd":
        st = o_comp.state[next(iter(m_comp.parameters()))]["step"]
        assert st.item() == 6.0  # replays advanced the step count kept in its tensor


def test_replay_runs_no_recording_and_returns_static_outputs():
    model = _model(FUSED)
    comp = ember_compile(_step_fn(model, _opt("sgd", model.parameters(), 0.1)))
    x, y = ember.tensor(XS[0], device=FUSED), ember.tensor(YS[0], device=FUSED)
    for _ in range(3):
        comp(x, y)
    assert comp.stats == {"eager": 1, "captures": 2, "replays": 0}
    before = dict(kernel_count(FUSED))
    out1 = comp(ember.tensor(XS[1], device=FUSED), y)
    l1 = out1.item()
    out2 = comp(ember.tensor(XS[2], device=FUSED), y)
    after = kernel_count(FUSED)
    assert comp.stats["replays"] == 2
    # no Fusion recording, flush, plan or kernel generation ran during the replays (the tape calls the
    # compiled kernels directly, so not even the launch counter moves)
    for k in ("flushes", "plans", "plan_hits", "kernels", "inner_ops"):
        assert after[k] == before[k], (k, before, after)
    assert out2 is out1  # a static output, overwritten by each replay
    assert out2.item() != l1


def test_new_shape_captures_again():
    def f(x, w):
        return (x @ w).relu().sum(dim=0) * 0.5
    comp = ember_compile(f)
    w = ember.tensor(W0[0].T.copy(), device=FUSED)
    for rows in (8, 8, 8, 8, 3, 3, 3, 3, 8):
        x0 = RNG.standard_normal((rows, 20)).astype(np.float32)
        got = comp(ember.tensor(x0, device=FUSED), w).numpy()
        np.testing.assert_allclose(got, np.maximum(x0 @ W0[0].T, 0).sum(0) * 0.5, rtol=1e-5, atol=1e-5)
    assert comp.stats == {"eager": 2, "captures": 4, "replays": 3}  # per shape: warm-up, 2 captures


def test_non_tensor_arguments_are_part_of_the_signature():
    comp = ember_compile(lambda x, scale: x * scale + 1)
    x = ember.ones(4, device=FUSED)
    for s in (2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0):
        assert comp(x, s).tolist() == [s + 1] * 4
    assert comp.stats["replays"] == 3


def test_item_inside_raises_capture_sync_error():
    comp = ember_compile(lambda x: x * float((x.sum() > 0).item()))
    x = ember.ones(3, device=FUSED)
    comp(x)  # the eager warm-up call reads freely
    with pytest.raises(CaptureSyncError, match="ember.compile"):
        comp(x)
    assert not capturing()
    shown = ember_compile(lambda x: print(x * 2))
    shown(x)
    with pytest.raises(CaptureSyncError, match="reading a tensor"):
        shown(x)


def test_bool_inside_raises():
    def f(x):
        return x + 1 if bool(x.sum() > 0) else x - 1
    comp = ember_compile(f)
    x = ember.ones(3, device=FUSED)
    comp(x)
    with pytest.raises(CaptureSyncError):
        comp(x)


def test_dropout_replays_fresh_numbers_like_eager():
    # each replay draws the default generator's next numbers and moves it on, as an eager call does
    def run(compiled):
        ember.manual_seed(0)
        m = _model(FUSED)
        m.insert(1, ember.nn.Dropout(0.3))
        step = _step_fn(m, _opt("adamw", m.parameters(), 0.01))
        if compiled:
            step = ember_compile(step)
        losses = []
        for i in range(6):
            losses.append(step(ember.tensor(XS[i], device=FUSED), ember.tensor(YS[i], device=FUSED)).item())
        after = ember.rand(3, device=FUSED).tolist()  # the generator is where the eager run left it
        return losses, [p.detach().numpy() for p in m.parameters()], after, step
    le, pe, ae, _ = run(False)
    lc, pc, ac, step = run(True)
    assert step.stats["replays"] == 3
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    for p, q in zip(pe, pc):
        np.testing.assert_allclose(q, p, rtol=1e-5, atol=1e-6)
    assert ac == ae


def test_random_op_with_an_explicit_generator_is_refused():
    g = ember.Generator().manual_seed(1)
    comp = ember_compile(lambda x: x + ember.rand(x.shape, generator=g, device=FUSED))
    x = ember.ones(64, device=FUSED)
    comp(x)
    with pytest.raises(CaptureSyncError, match="random op"):
        comp(x)
    assert not capturing()


def test_changed_learning_rate_captures_again():
    m_eager, m_comp = _model(FUSED), _model(FUSED)
    o_eager, o_comp = _opt("sgd", m_eager.parameters(), 0.1), _opt("sgd", m_comp.parameters(), 0.1)
    eager, comp = _step_fn(m_eager, o_eager), ember_compile(_step_fn(m_comp, o_comp))
    s_eager = ember.optim.lr_scheduler.StepLR(o_eager, step_size=4, gamma=0.5)
    s_comp = ember.optim.lr_scheduler.StepLR(o_comp, step_size=4, gamma=0.5)
    x, y = ember.tensor(XS[0], device=FUSED), ember.tensor(YS[0], device=FUSED)
    for _ in range(12):
        eager(x, y)
        comp(x, y)
        s_eager.step()
        s_comp.step()
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert comp.stats["captures"] >= 4 and comp.stats["replays"] >= 2, comp.stats


def test_gradient_accumulation_matches_eager():
    # no zero_grad inside: gradients accumulate across calls (in place), which a replay must follow
    m_eager, m_comp = _model(FUSED), _model(FUSED)

    def make(m):
        def f(x, y):
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            return loss
        return f
    eager, comp = make(m_eager), ember_compile(make(m_comp))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(6):
            x, y = ember.tensor(XS[i], device=FUSED), ember.tensor(YS[i], device=FUSED)
            eager(x, y)
            comp(x, y)
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_optimizer_without_replayable_step_runs_eagerly():
    m_eager, m_comp = _model(FUSED), _model(FUSED)
    o_eager = ember.optim.RMSprop(m_eager.parameters(), lr=0.01)
    o_comp = ember.optim.RMSprop(m_comp.parameters(), lr=0.01)
    eager, comp = _step_fn(m_eager, o_eager), ember_compile(_step_fn(m_comp, o_comp))
    x, y = ember.tensor(XS[0], device=FUSED), ember.tensor(YS[0], device=FUSED)
    with pytest.warns(UserWarning, match="RMSprop"):
        for _ in range(4):
            assert comp(x, y).item() == pytest.approx(eager(x, y).item(), rel=1e-6)
    assert comp.stats["replays"] == 0
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("from_start", [True, False])
def test_work_on_another_device_runs_eagerly(from_start):
    side = ember.zeros(3, device="cpu")
    calls = [0]

    def f(x):
        calls[0] += 1
        if from_start or calls[0] > 1:  # work on the numpy "cpu" device, which the tape can't record
            side.add_(1)
        return x * 2
    comp = ember_compile(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        for _ in range(4):
            assert comp(ember.ones(3, device=FUSED)).tolist() == [2.0] * 3
    assert side.tolist() == [4.0 if from_start else 3.0] * 3  # every call ran the side effect
    assert comp.stats["replays"] == 0


@pytest.mark.parametrize("phase", [1, 2])  # the device first made in the warm-up call / in the first capture
@pytest.mark.parametrize("used", [False, True])
def test_device_made_inside_the_function_counts_only_when_used(phase, used):
    """Naming a device inside fn (``autocast("cuda")`` while the work is on cuda:fused) doesn't stop the
    capture; work on a device made inside fn does (eager results, never a replay that skips it)."""
    from ember.backend.autodiff import Autodiff
    from ember.backend.numpy import Numpy
    kind = f"madeinside{phase}{int(used)}"
    ember.register_device(kind, lambda index: Autodiff(Numpy()))
    calls = [0]
    seen = []

    def f(x):
        calls[0] += 1
        if calls[0] >= phase:
            dev = ember.device(kind)
            if used:
                seen.append(ember.ones(2, device=dev).sum().item())
        return x * 2
    comp = ember_compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(5):
            assert comp(ember.ones(3, device=FUSED)).tolist() == [2.0] * 3
    if used:
        assert comp.stats["replays"] == 0 and len(seen) == 5 - (phase - 1)
    else:
        assert comp.stats["replays"] >= 2


def test_a_stack_without_fusion_runs_eagerly_with_the_same_results():
    m_eager, m_comp = _model("cpu:numpy"), _model("cpu:numpy")
    eager = _step_fn(m_eager, _opt("adamw", m_eager.parameters(), 0.01))
    comp = ember_compile(_step_fn(m_comp, _opt("adamw", m_comp.parameters(), 0.01)))
    for i in range(4):
        x, y = ember.tensor(XS[i], device="cpu:numpy"), ember.tensor(YS[i], device="cpu:numpy")
        assert comp(x, y).item() == eager(x, y).item()
    assert comp.stats == {"eager": 4, "captures": 0, "replays": 0}
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_decorator_closure_and_argument_errors():
    w = ember.full((3,), 2.0, device=FUSED)

    @ember_compile
    def f():
        return (w * 3).sum()
    assert [f().item() for _ in range(4)] == [18.0] * 4
    assert f.stats["replays"] == 1
    with ember.no_grad():
        w.fill_(1.0)  # the replay reads w's memory as it is now
    assert f().item() == 9.0
    with pytest.raises(TypeError, match="callable"):
        ember_compile(3)
    with pytest.raises(ValueError, match="warmup"):
        ember_compile(f, warmup=0)


def test_requires_grad_argument_runs_eagerly():
    comp = ember_compile(lambda x: (x * x).sum())
    x = ember.ones(3, device=FUSED, requires_grad=True)
    for _ in range(4):
        comp(x).backward()
    assert x.grad.tolist() == [8.0] * 3
    assert comp.stats["eager"] == 4


def test_replaced_parameter_memory_and_gradients_outside():
    m_eager, m_comp = _model(FUSED), _model(FUSED)
    o_eager, o_comp = _opt("sgd", m_eager.parameters(), 0.1), _opt("sgd", m_comp.parameters(), 0.1)
    eager, comp = _step_fn(m_eager, o_eager), ember_compile(_step_fn(m_comp, o_comp))
    x, y = ember.tensor(XS[0], device=FUSED), ember.tensor(YS[0], device=FUSED)
    for i in range(10):
        if i == 5:  # new memory for a parameter: the recording's would be stale, so it captures again
            for m in (m_eager, m_comp):
                w = m[0].weight
                w.data = w.detach().clone() * 0.5
        if i == 7:  # gradients dropped outside: the step makes new ones, as it would eagerly
            o_eager.zero_grad()
            o_comp.zero_grad()
        eager(x, y)
        comp(x, y)
        for p, q in zip(m_eager.parameters(), m_comp.parameters()):
            # tolist copies: .numpy() would share the memory with numpy, and ops on shared memory run in
            # program order, unfused, which changes the next capture's work (one capture more)
            np.testing.assert_allclose(q.detach().tolist(), p.detach().tolist(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(q.grad.tolist(), p.grad.tolist(), rtol=1e-5, atol=1e-6)
    # SGD packs the parameters into one buffer (ember.optim._flat): the step after a parameter's memory
    # was replaced packs again, which replaces the memory once more, so that memory change costs a capture
    packed = 1 if o_comp.__dict__.get("_packs") else 0
    assert comp.stats["captures"] == 4 + packed and comp.stats["replays"] >= 3, comp.stats


def test_snapshot_of_a_written_buffer_is_taken_before_the_write():
    # a pending write read by a later write kernel: the reader sees the value the window recorded
    # (the snapshot used to be copied after the write had run; Adam's captured update hit it)
    p = ember.tensor(np.arange(5, dtype=np.float32), device=FUSED)
    st = ember.zeros((), device=FUSED)
    st.add_(1)
    p.sub_((st * 3).mul_(2))
    assert p.tolist() == [-6.0, -5.0, -4.0, -3.0, -2.0]
    assert st.item() == 1.0


def test_argument_modified_in_place_is_written_back():
    def f(x, w):
        x.mul_(2)  # modifies the caller's tensor, eagerly and compiled alike
        return (x * w).sum()
    comp = ember_compile(f)
    w = ember.tensor([1.0, 2.0, 3.0], device=FUSED)
    for i in range(5):
        x = ember.full((3,), float(i), device=FUSED)
        assert comp(x, w).item() == 12.0 * i
        assert x.tolist() == [2.0 * i] * 3
    assert comp.stats["replays"] == 2


def test_constants_made_inside_and_python_numbers_that_change():
    def f(x):
        c = ember.tensor([1.0, 2.0, 3.0], device=FUSED)
        c.mul_(2)  # in place on a constant: each replay starts again from the captured data
        return x * c
    comp = ember_compile(f)
    for i in range(5):
        assert comp(ember.full((3,), float(i), device=FUSED)).tolist() == [2.0 * i, 4.0 * i, 6.0 * i]
    assert comp.stats["replays"] == 2

    calls = [0]

    def g(x):
        calls[0] += 1  # a Python number baked into each capture: no two captures agree
        return x * ember.tensor(float(calls[0]), device=FUSED)
    comp = ember_compile(g)
    x = ember.ones(2, device=FUSED)
    with pytest.warns(UserWarning, match="steady state"):
        for i in range(1, 8):
            assert comp(x).tolist() == [float(i)] * 2
    assert comp.stats == {"eager": 3, "captures": 4, "replays": 0}


def test_zero_grad_at_the_end_of_the_step():
    m_eager, m_comp = _model(FUSED), _model(FUSED)
    o_eager, o_comp = _opt("adam", m_eager.parameters(), 0.01), _opt("adam", m_comp.parameters(), 0.01)

    def make(m, opt):
        def step(x, y):
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step
    eager, comp = make(m_eager, o_eager), ember_compile(make(m_comp, o_comp))
    for i in range(6):
        x, y = ember.tensor(XS[i], device=FUSED), ember.tensor(YS[i], device=FUSED)
        assert comp(x, y).item() == pytest.approx(eager(x, y).item(), rel=1e-5)
        assert all(p.grad is None for p in m_comp.parameters())
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert comp.stats["replays"] == 3


def test_grad_mode_is_part_of_the_signature():
    w = ember.nn.Parameter(ember.ones(3, device=FUSED))
    comp = ember_compile(lambda x: (x * w).sum())
    x = ember.ones(3, device=FUSED)
    for _ in range(3):
        assert comp(x).requires_grad
    with ember.no_grad():
        for _ in range(3):
            assert comp(x).item() == 3.0
    assert comp(x).requires_grad
    assert len(comp._entries) == 2


def test_kernels_without_a_packed_argument_block_replay_too(monkeypatch):
    # the tape's other launch path: kernels whose argument layout the packer doesn't cover
    from ember.backend.fusion import target as target_mod
    from ember.backend.fusion.tape import Tape
    fu = ember.device(FUSED).backend.inner
    monkeypatch.setattr(target_mod, "_packer", lambda layout, arrays: None)
    monkeypatch.setattr(fu.target, "_bound", {})
    comp = ember_compile(lambda x, w: ((x * 1.5).tanh() * w + x).sum(dim=0))
    w = ember.tensor(W0[1], device=FUSED)
    for i in range(5):
        x0 = XS[i][:, :16]
        got = comp(ember.tensor(x0, device=FUSED), w).numpy()
        np.testing.assert_allclose(got, (np.tanh(x0 * 1.5) * W0[1] + x0).sum(0), rtol=1e-5, atol=1e-5)
    assert comp.stats["replays"] == 2
    tape = next(iter(comp._entries.values())).rec
    assert isinstance(tape, Tape) and tape.n_kernels >= 1
    assert all(f.__name__ != "cb_entry" for f, _ in tape.steps)


@pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
def test_cuda_training_step_replays_a_cuda_graph():
    m_eager, m_comp = _model("cuda"), _model("cuda")
    o_eager, o_comp = _opt("adamw", m_eager.parameters(), 0.01), _opt("adamw", m_comp.parameters(), 0.01)
    eager, comp = _step_fn(m_eager, o_eager), ember_compile(_step_fn(m_comp, o_comp))
    for i in range(6):
        x, y = ember.tensor(XS[i], device="cuda"), ember.tensor(YS[i], device="cuda")
        assert comp(x, y).item() == pytest.approx(eager(x, y).item(), rel=1e-4, abs=1e-5)
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    assert comp.stats["replays"] >= 3, comp.stats


def test_the_same_ops_wired_differently_are_not_a_steady_state():
    # captures that run the same ops on the same memory but in another order (a Python counter picks
    # it) must not replay one of them for the other
    calls = [0]
    a, b = ember.tensor([5.0, 7.0], device=FUSED), ember.tensor([1.0, 2.0], device=FUSED)

    def f():
        calls[0] += 1
        x, y = (a, b) if calls[0] % 2 else (b, a)
        return ember.sub(x, y, alpha=1) @ ember.ones(2, 1, device=FUSED)
    comp = ember_compile(f)
    with pytest.warns(UserWarning, match="steady state"):
        for i in range(1, 9):
            assert comp().tolist() == [9.0 if i % 2 else -9.0]
    assert comp.stats["replays"] == 0


@pytest.mark.parametrize("variant", ["clip", "keep_grads", "scheduler_inside"])
def test_step_variants_match_eager(variant):
    ms = [_model(FUSED) for _ in range(2)]
    opts = [_opt("sgd", m.parameters(), 0.1) for m in ms]
    scheds = [ember.optim.lr_scheduler.StepLR(o, 2, 0.5) for o in opts]

    def make(m, opt, sched):
        def step(x, y):
            opt.zero_grad(set_to_none=variant != "keep_grads")
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            if variant == "clip":
                ember.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            if variant == "scheduler_inside":  # changes lr after the step used it: not replayable
                sched.step()
            return loss
        return step
    eager, comp = make(ms[0], opts[0], scheds[0]), ember_compile(make(ms[1], opts[1], scheds[1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(8):
            x, y = ember.tensor(XS[i % 6], device=FUSED), ember.tensor(YS[i % 6], device=FUSED)
            assert comp(x, y).item() == pytest.approx(eager(x, y).item(), rel=1e-5)
    for p, q in zip(ms[0].parameters(), ms[1].parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    if variant == "scheduler_inside":
        assert comp.stats["replays"] == 0 and any("scheduler" in str(w.message) for w in caught)
    else:
        assert comp.stats["replays"] == 5
