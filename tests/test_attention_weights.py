"""scaled_dot_product_attention through the backends' ``attention_weights`` op (the scaled, causal softmax and
dropout in one pass, one pass back): the same numbers as the composed attention at the same generator state
(same dropped weights), PyTorch's without dropout, and on a GPU the CUDA kernels against the numpy op."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.nn._attention import _composite
from tests import test_cuda_sim  # noqa: F401 - registers "cudasim" (the CUDA backend's code on numpy)

HAS_CUDA = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")
DEVICES = ["cpu", "cpu:fused", "cudasim"] + (["cuda", "cuda:fused"] if HAS_CUDA else [])


def _inputs(dtype, rng, q_shape=(2, 3, 5, 8), k_shape=(2, 3, 7, 8), v_shape=(2, 3, 7, 4)):
    return [rng.standard_normal(s).astype(dtype) for s in (q_shape, k_shape, v_shape)]


def _run(fn, arrays, go, device, seed=3):
    ts = [ember.tensor(a, device=device, requires_grad=True) for a in arrays]
    ember.manual_seed(seed)
    out = fn(*ts)
    after = ember.rand(4, device=device).cpu().numpy()  # where the generator stands afterwards
    out.backward(ember.tensor(go, device=device))
    return out.detach().cpu().numpy(), [t.grad.cpu().numpy() for t in ts], after


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal,p", [(False, 0.3), (True, 0.3), (True, 0.0), (False, 0.9)])
def test_dropout_attention_matches_the_composition_at_the_same_seed(device, dtype, causal, p):
    """The fused path drops the weights dropout() would drop, leaves the generator where it would, and gives
    the composed attention's values and gradients."""
    rng = np.random.default_rng(0)
    arrays = _inputs(dtype, rng)
    go = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    got, got_g, got_after = _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                                 dropout_p=p), arrays, go, device)
    want, want_g, want_after = _run(lambda q, k, v: _composite(q, k, v, None, 1 / math.sqrt(8), causal, p),
                                    arrays, go, device)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_array_equal(got_after, want_after)


def test_the_fused_path_is_taken_with_dropout_and_draws_a_mask():
    """With dropout the backend op runs (not the composition), drops about p of the weights, and two calls
    drop different ones."""
    seen = []
    be = ember.device("cpu").backend
    inner_run = be.inner.run

    def spy(op, inputs, attrs):
        seen.append(op)
        return inner_run(op, inputs, attrs)
    be.inner.run = spy
    try:
        q = ember.ones(4, 64, 16)
        v = ember.eye(64).expand(4, 64, 64)  # out = the dropped weights themselves
        a = F.scaled_dot_product_attention(q, q, v, dropout_p=0.25).numpy()
        b = F.scaled_dot_product_attention(q, q, v, dropout_p=0.25).numpy()
    finally:
        be.inner.run = inner_run
    assert "attention_weights" in seen and "softmax" not in seen
    kept = a != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(a[kept], np.float32(np.float32(1 / 64) * np.float32(1 / 0.75)), rtol=1e-6)
    assert (kept != (b != 0)).any()


@pytest.mark.parametrize("causal", [False, True])
def test_without_dropout_the_cuda_code_matches_torch(causal):
    """Without dropout "cuda" takes the weights op too (it has no whole-attention op): PyTorch's values and
    gradients, including broadcast batch dims."""
    rng = np.random.default_rng(1)
    arrays = _inputs("float32", rng, (2, 3, 6, 8), (3, 6, 8), (1, 3, 6, 5))
    go = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    got, got_g, _ = _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3),
                         arrays, go, "cudasim")
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = torch.nn.functional.scaled_dot_product_attention(*ts, is_causal=causal, scale=0.3)
    want.backward(torch.tensor(go))
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, t in zip(got_g, ts):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_second_order_gradients_take_the_rule_formula():
    """create_graph=True differentiates the rule's composition (the backward op is first-order only): the
    composed attention's second derivatives at the same mask."""
    rng = np.random.default_rng(2)
    arrays = _inputs("float64", rng, (1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3))

    def second(fn):
        ts = [ember.tensor(a, requires_grad=True) for a in arrays]
        ember.manual_seed(11)
        out = fn(*ts)
        g = ember.autograd.grad((out * out).sum(), ts[0], create_graph=True)[0]
        return ember.autograd.grad(g.sum(), ts)

    got = second(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.5))
    want = second(lambda q, k, v: _composite(q, k, v, None, 1 / math.sqrt(3), True, 0.5))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_compiled_dropout_attention_draws_fresh_masks_like_eager():
    """ember.compile's replays draw each call's mask as an eager call would (cpu:fused: Fusion's tape)."""
    q = ember.tensor(np.random.default_rng(3).standard_normal((2, 2, 6, 8)).astype(np.float32), device="cpu:fused")

    def f(q):
        return F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.4)
    compiled = ember.compile(f)
    ember.manual_seed(1)
    eager = [f(q).cpu().numpy() for _ in range(5)]
    ember.manual_seed(1)
    replays = [compiled(q).cpu().numpy() for _ in range(5)]
    for a, b in zip(eager, replays):
        np.testing.assert_array_equal(a, b)
    assert (eager[3] != eager[4]).any()


@gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("causal,p", [(False, 0.0), (True, 0.1), (False, 0.5)])
@pytest.mark.parametrize("shape", [(3, 2, 33, 1030), (2, 3, 40, 1024), (1, 2, 7, 64)])
def test_cuda_kernels_match_the_numpy_op(dtype, causal, p, shape):
    """The GPU kernels (a block per row for 1030 keys, a warp per row for 1024 and 64) against the numpy op:
    the same dropped weights, values to the 16-bit rounding; the backward kernels likewise."""
    import cupy

    from ember.backend.cuda import attention as ca
    from ember.backend.numpy import attention as ref
    npd = ember.float32.np if dtype == "float32" else getattr(ember, dtype).np
    rng = np.random.default_rng(4)
    scores = (rng.standard_normal(shape) * 2).astype(npd)
    ops = ca.build(cupy)
    seed, offset = 12345, 77
    w, d = ops["attention_weights"](cupy.asarray(scores), 0.125, causal, p, seed, offset)
    want_w, want_d = ref.attention_weights(scores, 0.125, causal, p, seed, offset)
    tol = 1e-6 if dtype == "float32" else 1e-2
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    np.testing.assert_allclose(f32(cupy.asnumpy(w)), f32(want_w), rtol=tol, atol=tol)
    np.testing.assert_array_equal(f32(cupy.asnumpy(d)) == 0, f32(want_d) == 0)
    g = rng.standard_normal(scores.shape).astype(npd)
    got = ops["attention_weights_backward"](w, d, cupy.asarray(g), 0.125, p)
    want = ref.attention_weights_backward(cupy.asnumpy(w), cupy.asnumpy(d), g, 0.125, p)
    np.testing.assert_allclose(f32(cupy.asnumpy(got)), f32(want), rtol=tol, atol=tol)


@gpu
def test_captured_dropout_attention_replays_draw_what_eager_would():
    """Inside a CUDA graph the kernel reads the generator's key and counter shift from device memory: replay
    k drops what the k-th eager call drops."""
    q = ember.tensor(np.random.default_rng(5).standard_normal((2, 4, 64, 32)).astype(np.float32), device="cuda")

    def f():
        return F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.2)
    f()  # builds the kernels before the capture
    ember.manual_seed(9)
    eager = [f().cpu().numpy() for _ in range(3)]
    ember.manual_seed(9)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        out = f()
    for want in eager:
        g.replay()
        np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
