"""ember.nn training-step benchmarks against PyTorch eager, in one run.

    python bench/nn.py [--markdown] [--quick]

1. Small CNN on 28x28 inputs, batch 64: Conv2d(1, 32, 3) -> ReLU -> Conv2d(32, 64, 3) -> ReLU ->
   MaxPool2d(2) -> Flatten -> Linear(9216, 128) -> ReLU -> Linear(128, 10), cross-entropy, Adam.
   A training step is forward, loss, zero_grad, backward and the optimizer step: steps per second.
   The same model in eval mode under no_grad (inference) too.
2. LSTM: 2 layers, input 128, hidden 256, sequence 32, batch 32, a Linear(256, 10) head on the last
   step, cross-entropy, Adam: training steps per second.

Both libraries run the same model code (ember uses PyTorch's names) from the same initial weights
(torch's, copied by state_dict key); the first step's losses are checked to agree before timing.
Each figure is the median of calls sampled alternately from ember and torch, so that load from
other processes affects both alike (PyTorch's worker threads are very sensitive to it).
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
    sys.exit("bench/nn.py compares against PyTorch: pip install torch==2.13.0")


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))


class LSTMClassifier:
    """An LSTM over the sequence, then a linear head on the last step's output."""

    def __init__(self, lib, input_size: int, hidden: int, layers: int, classes: int):
        self.lstm = lib.nn.LSTM(input_size, hidden, num_layers=layers, batch_first=True)
        self.head = lib.nn.Linear(hidden, classes)
        self.modules = [self.lstm, self.head]

    def __call__(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])

    def parameters(self):
        return [p for m in self.modules for p in m.parameters()]


def copy_into(src_modules, dst_modules) -> None:
    """torch's initial weights into the ember modules, by state_dict key."""
    for s, d in zip(src_modules, dst_modules):
        d.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in s.state_dict().items()})


def cross_entropy(lib, logits, y):
    F = lib.nn.functional
    if hasattr(F, "cross_entropy"):
        return F.cross_entropy(logits, y)
    return F.nll_loss(F.log_softmax(logits, 1), y)


def make_step(lib, model, opt, x, y):
    def step():
        loss = cross_entropy(lib, model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def interleaved(ember_fn, torch_fn, rounds: int) -> tuple[float, float]:
    """Median seconds per call of each function, sampling them alternately (one call each per
    round) so that load from other processes on the machine hits both alike."""
    median_time(ember_fn, repeats=1, warmup=2)
    median_time(torch_fn, repeats=1, warmup=2)
    e, t = [], []
    for _ in range(rounds):
        e.append(median_time(ember_fn, repeats=1, warmup=0))
        t.append(median_time(torch_fn, repeats=1, warmup=0))
    return float(np.median(e)), float(np.median(t))


def pair(*shape, seed: int, integers: int | None = None):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, integers, shape) if integers else rng.standard_normal(shape, dtype=np.float32)
    return ember.from_numpy(a), torch.from_numpy(a)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and smaller batches, for a smoke test")
    args = ap.parse_args()
    reps = 3 if args.quick else 15
    batch = 16 if args.quick else 64
    torch.manual_seed(0)
    table = Table(f"bench/nn.py — torch {torch.__version__} ({torch.get_num_threads()} threads), "
                  f"{os.cpu_count()} cores, float32")
    table.header()

    # ---- CNN ----------------------------------------------------------------------------------
    tm, em = cnn(torch), cnn(ember)
    copy_into([tm], [em])
    ex, tx = pair(batch, 1, 28, 28, seed=1)
    ey, ty = pair(batch, seed=2, integers=10)
    topt, eopt = torch.optim.Adam(tm.parameters(), 1e-3), ember.optim.Adam(em.parameters(), 1e-3)
    estep, tstep = make_step(ember, em, eopt, ex, ey), make_step(torch, tm, topt, tx, ty)
    el, tl = float(estep().item()), float(tstep().item())
    if not np.isclose(el, tl, rtol=1e-4):
        sys.exit(f"CNN first-step losses differ: ember {el} torch {tl}")
    e, t = interleaved(estep, tstep, reps)
    table.add(f"CNN train step (Adam), batch {batch}", 1 / e, 1 / t, "steps/s", True)

    em.eval()
    tm.eval()
    with ember.no_grad(), torch.no_grad():
        e, t = interleaved(lambda: em(ex), lambda: tm(tx), reps)
    table.add(f"CNN inference (eval, no_grad), batch {batch}", batch / e, batch / t, "images/s", True)

    # ---- LSTM ---------------------------------------------------------------------------------
    seq, lb, hidden = (8, 8, 64) if args.quick else (32, 32, 256)
    tmod, emod = LSTMClassifier(torch, 128, hidden, 2, 10), LSTMClassifier(ember, 128, hidden, 2, 10)
    copy_into(tmod.modules, emod.modules)
    ex, tx = pair(lb, seq, 128, seed=3)
    ey, ty = pair(lb, seed=4, integers=10)
    topt, eopt = torch.optim.Adam(tmod.parameters(), 1e-3), ember.optim.Adam(emod.parameters(), 1e-3)
    estep, tstep = make_step(ember, emod, eopt, ex, ey), make_step(torch, tmod, topt, tx, ty)
    el, tl = float(estep().item()), float(tstep().item())
    if not np.isclose(el, tl, rtol=1e-4):
        sys.exit(f"LSTM first-step losses differ: ember {el} torch {tl}")
    e, t = interleaved(estep, tstep, reps)
    table.add(f"LSTM 2x{hidden} train step (Adam), seq {seq}, batch {lb}", 1 / e, 1 / t, "steps/s", True)

    if args.markdown:
        print()
        print(table.markdown())


if __name__ == "__main__":
    main()
