"""Dropout as one backend op (``dropout``: one kernel on the GPU) against the composition every stack can run:
``x * ((rand(x.shape) >= p).to(x.dtype) * (1 / (1 - p)))`` at the same generator state, bit for bit, with
the gradient (the mask) and the generator's position after the call. Devices: the numpy backend, the CUDA
backend's code on numpy ("cudasim"), cpu:fused (which keeps the composition: it fuses) and a GPU if present."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn import functional as F
from tests import test_cuda_sim  # noqa: F401 - registers "cudasim" (the CUDA backend's code on numpy)

DEVICES = ["cpu", "cudasim", "cpu:fused"] + (["cuda"] if ember.cuda.is_available() else [])
DTYPES = ["float32", "bfloat16", "float16", "float64"]


def _composed(x, p, seed):
    ember.manual_seed(seed)
    draw = ember.float64 if x.dtype == ember.float64 else ember.float32
    u = ember.rand(*x.shape, device=x.device, dtype=draw)
    mask = (u >= p).to(x.dtype) * (1.0 / (1.0 - p))
    return x * mask, mask, ember.rand(5, device=x.device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 53), (4, 8, 64), (0, 3)])
def test_dropout_matches_its_composition(device, dtype, shape):
    d = getattr(ember, dtype)
    x = (ember.randn(*shape, device=device) * 3).to(d)
    if x.numel():
        x.view(-1)[:2] = ember.tensor([float("inf"), float("nan")], device=device).to(d)
    want, mask, after = _composed(x, 0.3, 11)
    xg = x.clone().requires_grad_()
    ember.manual_seed(11)
    got = F.dropout(xg, 0.3)
    next_draw = ember.rand(5, device=device)
    assert got.dtype == d and tuple(got.shape) == shape
    np.testing.assert_array_equal(got.detach().float().cpu().numpy(), want.float().cpu().numpy())
    np.testing.assert_array_equal(next_draw.cpu().numpy(), after.cpu().numpy())  # the same words reserved
    got.backward(ember.ones_like(got))
    np.testing.assert_array_equal(xg.grad.float().cpu().numpy(), mask.float().cpu().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_in_place_views_and_second_order(device):
    x = ember.randn(6, 8, device=device, dtype=ember.float64)
    want, mask, _ = _composed(x.t(), 0.5, 3)              # a transposed (non-contiguous) input
    ember.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x.t(), 0.5).cpu().numpy(), want.cpu().numpy())
    y = x.clone()
    ember.manual_seed(3)
    F.dropout(y.t(), 0.5, inplace=True)
    np.testing.assert_array_equal(y.t().cpu().numpy(), want.cpu().numpy())
    a = x.clone().requires_grad_()
    ember.manual_seed(3)
    (g,) = ember.autograd.grad((F.dropout(a.t(), 0.5) ** 2).sum(), a, create_graph=True)
    g.sum().backward()                                    # d/da sum(2 * (a m) * m) = 2 m^2
    np.testing.assert_allclose(a.grad.t().cpu().numpy(), (2 * mask * mask).cpu().numpy())


def test_dropout_op_is_used_where_supported(monkeypatch):
    """The numpy stack runs the one op; Fusion on the CPU keeps the composition (it fuses into
    neighbouring kernels)."""
    ran = []
    for device in ("cpu:numpy", "cpu:fused"):
        inner = ember.device(device).backend.inner
        orig = inner.run
        def run(op, inputs, attrs, orig=orig, d=device):
            ran.append((d, op))
            return orig(op, inputs, attrs)
        monkeypatch.setattr(inner, "run", run)
        F.dropout(ember.ones(64, device=device), 0.25).sum().item()
    assert ("cpu:numpy", "dropout") in ran and ("cpu:numpy", "rand") not in ran
    assert ("cpu:fused", "dropout") not in ran
