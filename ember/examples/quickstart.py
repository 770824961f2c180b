"""Quickstart: fit a softmax classifier on synthetic 2-D clusters with ember tensors on the CPU.

    python -m ember.examples.quickstart

Gradients are written out by hand here (cross-entropy of a linear model), so the example runs on
ember's core tensor API alone.
"""

from __future__ import annotations

import math
import time

import ember


def make_clusters(n_per_class: int, classes: int, seed: int = 0):
    """Gaussian clusters on a circle: features (n, 2) float32 and labels (n,) int64."""
    kw = {"generator": ember.Generator().manual_seed(seed)}
    angles = ember.arange(classes, dtype=ember.float32) * (2 * math.pi / classes)
    centres = ember.stack([angles.cos(), angles.sin()], dim=1) * 3.0
    labels = ember.arange(classes).repeat_interleave(n_per_class)
    noise = ember.randn(classes * n_per_class, 2, **kw)
    return centres[labels] + noise, labels


def main(epochs: int = 30, lr: float = 0.5) -> int:
    classes = 4
    x, y = make_clusters(500, classes)
    n = x.shape[0]
    onehot = ember.zeros(n, classes)
    onehot[ember.arange(n), y] = 1.0
    w = ember.zeros(2, classes)
    b = ember.zeros(classes)
    print(f"ember {ember.__version__}: softmax regression on {n} points, {classes} classes, device {x.device}")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        logits = x @ w + b
        p = logits.softmax(dim=1)
        loss = -(onehot * logits.log_softmax(dim=1)).sum() / n
        grad_logits = (p - onehot) / n          # d loss / d logits for softmax + cross-entropy
        w -= lr * (x.T @ grad_logits)
        b -= lr * grad_logits.sum(dim=0)
        acc = (logits.argmax(dim=1) == y).float().mean()
        if epoch == 1 or epoch % 5 == 0:
            print(f"epoch {epoch:3d}  loss {loss.item():.4f}  accuracy {acc.item():.3f}")
    print(f"done in {time.perf_counter() - start:.2f} s; weights:\n{w}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
