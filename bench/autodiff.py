"""Autodiff benchmarks: ember's Autodiff(Numpy) stack against PyTorch eager, in one run.

    python bench/autodiff.py [--markdown] [--quick]

1. MLP 784-512-512-10 training step (forward, cross-entropy, backward, SGD update), batch 128:
   steps per second.
2. Backward overhead per op: a chain of 200 tiny ops (4 elements) recorded, then backward; the
   backward time divided by the number of ops (µs per op).

The same model code runs on both libraries (ember uses PyTorch's names).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/autodiff.py compares against PyTorch: pip install torch==2.13.0")


def make_mlp(lib, rng):
    sizes = [784, 512, 512, 10]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        b = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
        params += [lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)]
    return params


def train_step(lib, params, x, y, lr=0.01):
    w1, b1, w2, b2, w3, b3 = params
    h = (x @ w1 + b1).clamp(min=0)
    h = (h @ w2 + b2).clamp(min=0)
    logits = h @ w3 + b3
    loss = -logits.log_softmax(dim=1).gather(1, y.unsqueeze(1)).mean()
    loss.backward()
    with lib.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss


def op_chain(lib, x, n):
    for _ in range(n // 2):
        x = (x * 1.0001).sin()
    return x.sum()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    table = Table(f"bench/autodiff.py — torch {torch.__version__} ({torch.get_num_threads()} threads), "
                  f"{os.cpu_count()} cores")
    table.header()

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((128, 784)).astype(np.float32)
    yn = rng.integers(0, 10, 128)
    ep, tp = make_mlp(ember, np.random.default_rng(1)), make_mlp(torch, np.random.default_rng(1))
    ex, ey, tx, ty = ember.tensor(xn), ember.tensor(yn), torch.tensor(xn), torch.tensor(yn)
    # same weights, same data: the losses must agree before we time anything
    le, lt = train_step(ember, ep, ex, ey).item(), train_step(torch, tp, tx, ty).item()
    assert abs(le - lt) < 1e-4 * max(1.0, abs(lt)), (le, lt)
    reps = 5 if args.quick else 15
    e = median_time(lambda: train_step(ember, ep, ex, ey), inner=3, repeats=reps)
    t = median_time(lambda: train_step(torch, tp, tx, ty), inner=3, repeats=reps)
    table.add("MLP 784-512-512-10 train step, batch 128", 1 / e, 1 / t, "steps/s", True)

    n = 200
    ev = ember.ones(4, requires_grad=True)
    tv = torch.ones(4, requires_grad=True)

    def backward_only(lib, v):
        out = op_chain(lib, v, n)
        return out

    def time_backward(lib, v):
        samples = []
        for _ in range(reps):
            outs = [backward_only(lib, v) for _ in range(5)]
            import time
            t0 = time.perf_counter()
            for o in outs:
                o.backward()
            samples.append((time.perf_counter() - t0) / (5 * n))
        return float(np.median(samples))

    e = time_backward(ember, ev)
    t = time_backward(torch, tv)
    table.add("backward overhead per op (4 elements)", e * 1e6, t * 1e6, "us/op", False)
    e = median_time(lambda: op_chain(ember, ev, n), repeats=reps) / n
    t = median_time(lambda: op_chain(torch, tv, n), repeats=reps) / n
    table.add("forward overhead per recorded op (4 elements)", e * 1e6, t * 1e6, "us/op", False)
    if args.markdown:
        print()
        print(table.markdown())


if __name__ == "__main__":
    main()
