"""CUDA graphs (ember.cuda.CUDAGraph / ember.cuda.graph): capture and replay on a GPU, the refusals
inside a capture, and the answers given without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.backend.capture import CaptureSyncError

HAS_CUDA = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")


def test_without_a_capture_nothing_is_capturing():
    assert ember.cuda.is_current_stream_capturing() is False
    with pytest.raises(TypeError, match="expects a CUDAGraph"):
        ember.cuda.graph(object())


@pytest.mark.skipif(HAS_CUDA, reason="checks the answer given without CUDA")
def test_graphs_need_cuda():
    with pytest.raises(ember.BackendUnavailable, match="pip install ember\\[cuda\\]"):
        ember.cuda.CUDAGraph()


@gpu
def test_replay_recomputes_from_the_static_input():
    x = ember.zeros(1000, device="cuda")
    y = x * 2 + 1  # warm-up: the kernels exist before the capture
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="nothing has been captured"):
        g.replay()
    with ember.cuda.graph(g):
        y = (x * 2 + 1).relu()
    for k in range(3):
        new = np.linspace(-k, k, 1000, dtype=np.float32)
        x.copy_(ember.tensor(new, device="cuda"))
        g.replay()
        np.testing.assert_allclose(y.cpu().numpy(), np.maximum(new * 2 + 1, 0), rtol=1e-6)


def _net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 8 * 8, 10)).to("cuda")


@gpu
def test_a_captured_training_step_trains_like_the_eager_one():
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((16, 1, 8, 8)).astype(np.float32) for _ in range(6)]
    ys = [rng.integers(0, 10, 16) for _ in range(6)]
    results = []
    for captured in (False, True):
        net = _net()
        opt = ember.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        sx = ember.zeros(16, 1, 8, 8, device="cuda")
        sy = ember.zeros(16, dtype=ember.int64, device="cuda")

        def step(net=net, opt=opt, loss_fn=loss_fn, sx=sx, sy=sy):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(sx), sy)
            loss.backward()
            opt.step()
            return loss
        losses = []
        for i in range(6):
            sx.copy_(ember.tensor(xs[i], device="cuda"))
            sy.copy_(ember.tensor(ys[i], device="cuda"))
            if not captured or i < 2:  # two eager steps first: kernels, optimizer state
                losses.append(step().item())
                continue
            if i == 2:
                g = ember.cuda.CUDAGraph()
                opt.zero_grad(set_to_none=True)
                with ember.cuda.graph(g):
                    static_loss = step()
            g.replay()
            losses.append(static_loss.item())
        results.append((losses, [p.detach().cpu().numpy() for p in net.parameters()]))
    (le, pe), (lc, pc) = results
    np.testing.assert_allclose(lc, le, rtol=1e-4, atol=1e-5)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@gpu
@pytest.mark.parametrize("what", ["item", "random", "print"])
def test_syncs_and_random_ops_are_refused_inside_a_capture(what):
    x = ember.ones(8, device="cuda")
    g = ember.cuda.CUDAGraph()
    with pytest.raises(CaptureSyncError):
        with ember.cuda.graph(g):
            y = x * 3
            if what == "item":
                y.sum().item()
            elif what == "random":  # an explicit generator's numbers would repeat at every replay
                ember.rand(4, device="cuda", generator=ember.Generator("cuda").manual_seed(1))
            else:
                print(y)
    assert not ember.cuda.is_current_stream_capturing()
    np.testing.assert_allclose((x + 1).cpu().numpy(), 2.0)  # the device still works
    with pytest.raises(RuntimeError, match="nothing has been captured"):
        g.replay()


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_the_capture_time_matmul_matches_cupys(dtype):
    """Inside a capture matmul runs through ember's own cuBLAS call (CuPy refuses cuBLAS there): numpy's
    matmul semantics, checked here outside a capture against CuPy's."""
    import cupy

    from ember.backend.cuda import cublas
    assert cublas.available()
    rng = np.random.default_rng(1)
    shapes = [((5, 7), (7, 3)), ((4, 5, 7), (7, 3)), ((5, 7), (4, 7, 3)), ((2, 1, 5, 7), (3, 7, 2)), ((7,), (7, 3)),
              ((5, 7), (7,)), ((0, 7), (7, 3)), ((5, 0), (0, 3))]
    dt = np.dtype(ember.as_dtype(dtype).np) if hasattr(ember, "as_dtype") else getattr(ember, dtype).np
    for sa, sb in shapes:
        a = cupy.asarray(rng.standard_normal(sa).astype(np.float32)).astype(dt)
        b = cupy.asarray(rng.standard_normal(sb).astype(np.float32)).astype(dt)
        got = cublas.matmul(a, b)
        want = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
        assert got.shape == want.shape and got.dtype == dt
        tol = 1e-10 if dtype == "float64" else 1e-4 if dtype == "float32" else 3e-2
        np.testing.assert_allclose(cupy.asnumpy(got.astype(np.float64)), cupy.asnumpy(want), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack_inside_a_capture_copy_piece_by_piece(dim):
    """CuPy's one-kernel concatenate uploads a pointer table from the host, which a capture refuses
    (found with SGD's packed update of ResNet-50's 161 parameters); inside a capture the CUDA op code
    copies each piece into the output instead. Checked on the op code run with numpy."""
    from ember.backend import capture
    from ember.backend.cuda import Cuda
    b = Cuda._with_array_module(np)
    rng = np.random.default_rng(0)
    pieces = [rng.standard_normal((3, k + 1, 4)).astype(np.float32) for k in range(40)]
    same = [rng.standard_normal((3, 2, 4)).astype(np.float32) for _ in range(40)]
    capture.enter()
    try:
        got_cat = b.run("cat", tuple(pieces if dim == 1 else same), {"dim": dim})
        got_stack = b.run("stack", tuple(same), {"dim": dim})
    finally:
        capture.leave()
    np.testing.assert_array_equal(got_cat, np.concatenate(pieces if dim == 1 else same, axis=dim))
    np.testing.assert_array_equal(got_stack, np.stack(same, axis=dim))


@gpu
@pytest.mark.parametrize("draw", ["rand", "randn", "bernoulli", "dropout"])
def test_captured_random_ops_draw_what_eager_would_at_each_replay(draw):
    """Graph-safe random numbers: replay k of a captured draw gives the numbers the k-th eager draw
    gives after the same manual_seed (new numbers every replay, the generator moved on each time)."""
    p = ember.full((64, 33), 0.3, device="cuda")
    fns = {"rand": lambda: ember.rand(64, 33, device="cuda"), "randn": lambda: ember.randn(64, 33, device="cuda"),
           "bernoulli": lambda: ember.bernoulli(p), "dropout": lambda: nn.functional.dropout(p, 0.5, True)}
    fn = fns[draw]
    ember.manual_seed(7)
    eager = [fn().cpu().numpy() for _ in range(3)]
    after_eager = ember.rand(5, device="cuda").cpu().numpy()
    ember.manual_seed(7)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        out = fn()
    got = []
    for _ in range(3):
        g.replay()
        got.append(out.cpu().numpy())
    for a, b in zip(eager, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)  # randn: the same kernels both ways
    assert not np.array_equal(got[0], got[1])
    np.testing.assert_array_equal(ember.rand(5, device="cuda").cpu().numpy(), after_eager)


@gpu
def test_compiled_step_with_dropout_matches_eager():
    """ember.compile on "cuda" (a CUDA graph) of a training step with dropout: the same losses and
    parameters as the eager step after the same seed (each replay draws the eager step's masks)."""
    def make():
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3)).to("cuda")
        return m, ember.optim.SGD(m.parameters(), lr=0.1)

    def step_of(m, opt):
        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    rng = np.random.default_rng(3)
    data = [(ember.tensor(rng.standard_normal((16, 12)).astype(np.float32), device="cuda"),
             ember.tensor(rng.integers(0, 3, 16), device="cuda")) for _ in range(6)]
    m1, o1 = make()
    ember.manual_seed(11)
    eager = [step_of(m1, o1)(x, y).item() for x, y in data]
    m2, o2 = make()
    ember.manual_seed(11)
    comp = ember.compile(step_of(m2, o2))
    got = [comp(x, y).item() for x, y in data]
    assert comp.stats["replays"] >= 2, comp.stats
    np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-6)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
