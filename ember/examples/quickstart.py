"""Quickstart: train a small neural network on the CPU with ember tensors and autograd.

    python -m ember.examples.quickstart

A two-layer MLP learns to classify points of four interleaved spirals; gradients come from
``loss.backward()`` and the update is plain SGD with momentum, written out with tensor ops.
"""

from __future__ import annotations

import math
import time

import ember


def spirals(n_per_class: int, classes: int, generator: ember.Generator):
    """Points on ``classes`` noisy spiral arms: features (n, 2) float32, labels (n,) int64."""
    t = ember.rand(classes, n_per_class, generator=generator) * 3.0 + 0.3           # radius along the arm
    arm = ember.arange(classes, dtype=ember.float32).unsqueeze(1) * (2 * math.pi / classes)
    angle = t * 1.6 + arm + ember.randn(classes, n_per_class, generator=generator) * 0.08
    x = ember.stack([t * angle.cos(), t * angle.sin()], dim=-1).reshape(-1, 2)
    y = ember.arange(classes).repeat_interleave(n_per_class)
    return x, y


def init_linear(fan_in: int, fan_out: int, generator: ember.Generator):
    bound = 1 / math.sqrt(fan_in)
    w = (ember.rand(fan_in, fan_out, generator=generator) * 2 - 1) * bound
    b = (ember.rand(fan_out, generator=generator) * 2 - 1) * bound
    return w.requires_grad_(), b.requires_grad_()


def main(epochs: int = 300, lr: float = 0.1, hidden: int = 64) -> int:
    g = ember.Generator().manual_seed(0)
    x, y = spirals(400, 4, g)
    perm = ember.randperm(x.shape[0], generator=g)
    x, y = x[perm], y[perm]
    x_train, y_train, x_val, y_val = x[:1200], y[:1200], x[1200:], y[1200:]
    params = [*init_linear(2, hidden, g), *init_linear(hidden, hidden, g), *init_linear(hidden, 4, g)]
    velocity = [ember.zeros_like(p) for p in params]

    def forward(inp):
        w1, b1, w2, b2, w3, b3 = params
        h = (inp @ w1 + b1).tanh()
        h = (h @ w2 + b2).tanh()
        return h @ w3 + b3

    print(f"ember {ember.__version__}: MLP 2-{hidden}-{hidden}-4 on {x_train.shape[0]} spiral points "
          f"(device {x.device}, stack {x.device.backend!r})")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        logits = forward(x_train)
        loss = -logits.log_softmax(dim=1).gather(1, y_train.unsqueeze(1)).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p, v in zip(params, velocity):
                v.mul_(0.9).add_(p.grad)
                p -= lr * v
        if epoch == 1 or epoch % 50 == 0:
            with ember.no_grad():
                acc = (forward(x_val).argmax(dim=1) == y_val).float().mean().item()
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  validation accuracy {acc:.3f}")
    print(f"trained in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
