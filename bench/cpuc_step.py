"""One training step of the MNIST CNN of `ember train` (batch 128) on "cpu" (numpy) and "cpu:compiled"
(CpuC) against PyTorch, median ms per step from one run, the libraries interleaved round by round so
machine load hits all of them; ``--profile`` prints where each ember device spends its step, per op.

    python bench/cpuc_step.py [--batch 128] [--rounds 5] [--steps 5] [--profile]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from bench._harness import Table  # noqa: E402
from ember.examples import mnist  # noqa: E402


def ember_step(dev: str, xs, ys):
    ember.manual_seed(0)
    model = mnist.MnistCNN().to(dev).train()
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x, y = ember.tensor(xs, device=dev), ember.tensor(ys, device=dev)

    def step():
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def torch_step(xs, ys):
    import torch
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(   # MnistCNN without the random shift (a gather, the same on every backend)
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.from_numpy(xs), torch.from_numpy(ys)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def median_ms(step, n: int) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def profile(dev: str, step, n: int = 5) -> None:
    inner = ember.device(dev).backend.inner
    orig = inner.run
    tot: dict = collections.defaultdict(float)
    cnt: collections.Counter = collections.Counter()

    def run(op, inputs, attrs):
        t0 = time.perf_counter()
        r = orig(op, inputs, attrs)
        tot[op] += time.perf_counter() - t0
        cnt[op] += 1
        return r
    inner.run = run
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    wall = (time.perf_counter() - t0) / n * 1e3
    del inner.run
    print(f"== {dev}: {wall:.1f} ms/step, {sum(tot.values()) / n * 1e3:.1f} ms of it in backend ops")
    for op, t in sorted(tot.items(), key=lambda kv: -kv[1])[:16]:
        print(f"  {op:<24} {t / n * 1e3:8.2f} ms  x{cnt[op] // n}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5, help="steps per library per round")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((args.batch, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, args.batch)
    steps = {d: ember_step(d, xs, ys) for d in ("cpu", "cpu:compiled")}
    if args.profile:
        for d, s in steps.items():
            s()
            profile(d, s)
        return
    try:
        steps["torch"] = torch_step(xs, ys)
    except ImportError:
        sys.exit("bench/cpuc_step.py compares against PyTorch: pip install torch")
    for s in steps.values():
        for _ in range(3):
            s()
    res: dict = collections.defaultdict(list)
    for _ in range(args.rounds):
        for d, s in steps.items():
            res[d].append(median_ms(s, args.steps))
    med = {d: statistics.median(v) for d, v in res.items()}
    table = Table(f"MNIST CNN training step, batch {args.batch} (CPU, {os.cpu_count()} cores)")
    table.header()
    table.add("step, numpy backend (cpu)", med["cpu"], med["torch"], "ms", False)
    table.add("step, CpuC (cpu:compiled)", med["cpu:compiled"], med["torch"], "ms", False)


if __name__ == "__main__":
    main()
