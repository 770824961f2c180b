"""The main job against PyTorch: the MNIST CNN of `ember train`, same data, same recipe, one run.

    python bench/train.py [--epochs 12] [--markdown]

ember trains through its Learner exactly as `ember train` does (DataLoader, Adam, one-cycle
schedule, random shifts, validation every epoch, checkpoints and logs in a temporary directory,
no dashboard). PyTorch trains the same architecture from the same initial weights with a
hand-written loop over torch.utils.data.DataLoader on the same 4,000 / 1,000 images. Printed:
the median training-epoch time (the train loop, without validation), the whole run's wall time,
and the final validation accuracy of each. Run it on a quiet machine: both libraries use every
core, and other load distorts the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from bench._harness import Table  # noqa: E402
from ember.examples import mnist  # noqa: E402
from ember.train import Callback  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/train.py compares against PyTorch: pip install torch==2.13.0")


class EpochTimer(Callback):
    """Seconds of each epoch's training loop (from epoch start to validation start)."""

    def __init__(self):
        self.times: list[float] = []
        self._t0 = 0.0

    def on_epoch_start(self, learner) -> None:
        self._t0 = time.perf_counter()

    def on_validation_start(self, learner) -> None:
        self.times.append(time.perf_counter() - self._t0)


def torch_model():
    """MnistCNN in torch; an Identity holds the shift layer's place (the loop shifts the batch)."""
    nn = torch.nn
    return nn.Sequential(
        nn.Identity(), nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def torch_shift(x, pixels: int = 2):
    """RandomShift's computation with torch ops."""
    n, c, h, w = x.shape
    padded = torch.nn.functional.pad(x, (pixels,) * 4)
    dy, dx = torch.randint(0, 2 * pixels + 1, (2, n, 1)).unbind(0)
    rows = (dy + torch.arange(h)).reshape(n, 1, h, 1)
    cols = (dx + torch.arange(w)).reshape(n, 1, 1, w)
    return padded[torch.arange(n).reshape(n, 1, 1, 1), torch.arange(c).reshape(1, c, 1, 1), rows, cols]


def run_ember(epochs: int, out: str):
    args = mnist.parser().parse_args(["--epochs", str(epochs), "--dashboard", "none", "--out", out])
    learner, model = mnist.build(args)
    timer = EpochTimer()
    learner.callbacks.append(timer)
    t0 = time.perf_counter()
    _, history = learner.fit()
    wall = time.perf_counter() - t0
    return model, timer.times, wall, history["val_accuracy"][-1]


def run_torch(epochs: int, init_state: dict, batch_size: int = 64, lr: float = 3e-3):
    torch.manual_seed(0)
    train, val = mnist.datasets()
    xs = torch.from_numpy(np.stack([train[i][0] for i in range(len(train))]))
    ys = torch.from_numpy(np.asarray([train[i][1] for i in range(len(train))], np.int64))
    xv = torch.from_numpy(np.stack([val[i][0] for i in range(len(val))]))
    yv = torch.from_numpy(np.asarray([val[i][1] for i in range(len(val))], np.int64))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=batch_size,
                                         shuffle=True, drop_last=True)
    model = torch_model()
    model.load_state_dict(init_state)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * len(loader))
    loss_fn = torch.nn.CrossEntropyLoss()
    times, t_run = [], time.perf_counter()
    acc = 0.0
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.train()
        for x, y in loader:
            loss = loss_fn(model(torch_shift(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        times.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():
            acc = sum((model(xv[i:i + 500]).argmax(1) == yv[i:i + 500]).sum().item()
                      for i in range(0, len(xv), 500)) / len(xv)
    return times, time.perf_counter() - t_run, acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    table = Table(f"MNIST CNN, the main job: {args.epochs} epochs on 4,000 images, batch 64 (CPU, "
                  f"{os.cpu_count()} cores)")
    table.header()
    with tempfile.TemporaryDirectory() as out:
        ember.manual_seed(0)
        init = {k: torch.from_numpy(v.numpy().copy())
                for k, v in mnist.MnistCNN().state_dict().items()}  # build() seeds 0 too: same weights
        model, e_times, e_wall, e_acc = run_ember(args.epochs, out)
    t_times, t_wall, t_acc = run_torch(args.epochs, init)
    table.add("training epoch time (median)", statistics.median(e_times), statistics.median(t_times), "s", False)
    table.add("whole run incl. validation, checkpoints, logs", e_wall, t_wall, "s", False)
    print(f"final validation accuracy: ember {e_acc:.2%}, torch {t_acc:.2%}")
    if args.markdown:
        print()
        print(table.markdown())
        print(f"\nFinal validation accuracy: ember {e_acc:.2%}, torch {t_acc:.2%}.")


if __name__ == "__main__":
    main()
