"""Gradients of tensors cut into parts (unbind, split, chunk, slices): the engine sums the parts'
gradients once, as one cat where they tile a dim, and the values match PyTorch's."""

import numpy as np
import pytest
import torch

import ember

CASES = {
    "unbind": lambda t: sum(((p * p) * (i + 1)).sum() for i, p in enumerate(t.unbind(0))),
    "split_sizes": lambda t: sum((p.exp() * (i + 1)).sum() for i, p in enumerate(t.split([1, 3], 1))),
    "chunk_last": lambda t: sum((p.sin() * (i + 2)).sum() for i, p in enumerate(t.chunk(2, -1))),
    "gaps": lambda t: (t[:, 1:2] * 3).sum() + (t[:, 3:] * 2).sum(),
    "overlap": lambda t: (t[:, 1:3] * 3).sum() + (t[:, 2:] * 2).sum(),
    "two_dims": lambda t: (t[0, 1:3] * 3).sum() + (t[1:, 2:] * 2).sum(),
    "steps": lambda t: (t[:, ::2] * 3).sum() + (t[:, 1::2] * 2).sum(),
    "part_and_whole": lambda t: (t[1] * 3).sum() + (t * t).sum(),
    "reversed_use": lambda t: (t[2] * t[0]).sum() + t[1].tanh().sum(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_parts_gradient_matches_torch(name):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    a, b = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    CASES[name](a).backward()
    CASES[name](b).backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert a.grad.dtype == ember.float32 and tuple(a.grad.shape) == (3, 4, 5)


def test_second_order_through_parts():
    x = np.random.default_rng(1).standard_normal((3, 2, 4)).astype(np.float64)
    grads = []
    for t, lib in ((ember.tensor(x, requires_grad=True), ember), (torch.tensor(x, requires_grad=True), torch)):
        q, k, v = t.unbind(0)
        (g,) = lib.autograd.grad((q * k * v.exp()).sum(), t, create_graph=True)
        (g * g).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)


def test_hook_sees_the_summed_parts():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    seen = []
    a = ember.tensor(x, requires_grad=True)
    y = a * 1.0
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    p, q = y.unbind(0)
    (p * 2 + q * 5).sum().backward()
    np.testing.assert_array_equal(seen[0], [[2, 2, 2], [5, 5, 5]])
    np.testing.assert_array_equal(a.grad.numpy(), [[2, 2, 2], [5, 5, 5]])


def test_qkv_split_is_one_cat(monkeypatch):
    """GPT-2's q, k, v = qkv.unbind(0): one cat of the three gradients, no zero-filled scatters."""
    inner = ember.device("cpu").backend.inner
    x = ember.randn(2, 5, 3 * 8, requires_grad=True)
    qkv = (x * 1.0).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    loss = ((q @ k.transpose(-2, -1)) @ v).sum()
    ops = []
    orig = inner.run

    def run(op, inputs, attrs):
        ops.append(op)
        return orig(op, inputs, attrs)

    monkeypatch.setattr(inner, "run", run)
    loss.backward()
    monkeypatch.setattr(inner, "run", orig)
    assert ops.count("cat") == 1 and "slice_scatter" not in ops
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    tq = (t * 1.0).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    ((tq[0] @ tq[1].transpose(-2, -1)) @ tq[2]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
