"""The main job against PyTorch: the MNIST CNN of `ember train`, same data, same recipe, one run.

    python bench/train.py [--epochs 12] [--markdown]

ember trains through its Learner exactly as `ember train` does (DataLoader, Adam, one-cycle
schedule, random shifts, validation every epoch, checkpoints and logs in a temporary directory,
no dashboard). PyTorch trains the same architecture from the same initial weights with a
hand-written loop over torch.utils.data.DataLoader on the same 4,000 / 1,000 images. The epochs
alternate (ember's first, then PyTorch's first, ...), so load from elsewhere hits both. Printed:
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


class Interleave(Callback):
    """Times each ember training epoch (epoch start to validation start) and, after each ember
    epoch, runs one PyTorch epoch, so both libraries see the same machine load epoch by epoch."""

    def __init__(self, other: TorchRun):
        self.other = other
        self.times: list[float] = []
        self.other_seconds = 0.0  # time spent in PyTorch's epochs, taken out of ember's wall time
        self._t0 = 0.0

    def on_epoch_start(self, learner) -> None:
        self._t0 = time.perf_counter()

    def on_validation_start(self, learner) -> None:
        self.times.append(time.perf_counter() - self._t0)

    def on_epoch_end(self, learner) -> None:
        t0 = time.perf_counter()
        self.other.epoch()
        self.other_seconds += time.perf_counter() - t0


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


class TorchRun:
    """The same training in PyTorch, one epoch per call: train loop, then validation."""

    def __init__(self, epochs: int, init_state: dict, batch_size: int = 64, lr: float = 3e-3):
        torch.manual_seed(0)
        train, val = mnist.datasets()
        xs = torch.from_numpy(np.stack([train[i][0] for i in range(len(train))]))
        ys = torch.from_numpy(np.asarray([train[i][1] for i in range(len(train))], np.int64))
        self.xv = torch.from_numpy(np.stack([val[i][0] for i in range(len(val))]))
        self.yv = torch.from_numpy(np.asarray([val[i][1] for i in range(len(val))], np.int64))
        self.loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=batch_size,
                                                  shuffle=True, drop_last=True)
        self.model = torch_model()
        self.model.load_state_dict(init_state)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=lr, total_steps=epochs * len(self.loader))
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.times: list[float] = []
        self.wall = 0.0
        self.accuracy = 0.0

    def epoch(self) -> None:
        t0 = time.perf_counter()
        model = self.model.train()
        for x, y in self.loader:
            loss = self.loss_fn(model(torch_shift(x)), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.sched.step()
        self.times.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():
            correct = sum((model(self.xv[i:i + 500]).argmax(1) == self.yv[i:i + 500]).sum().item()
                          for i in range(0, len(self.xv), 500))
        self.accuracy = correct / len(self.xv)
        self.wall += time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--device", default="cpu", help="ember's device (cpu, cpu:compiled, cpu:fused, ...)")
    args = ap.parse_args()
    table = Table(f"MNIST CNN, the main job: {args.epochs} epochs on 4,000 images, batch 64 (ember on "
                  f"{args.device}, PyTorch on the CPU, {os.cpu_count()} cores)")
    table.header()
    ember.manual_seed(0)  # build() seeds 0 too: both libraries start from the same weights
    init = {k: torch.from_numpy(v.numpy().copy()) for k, v in mnist.MnistCNN().state_dict().items()}
    other = TorchRun(args.epochs, init)
    with tempfile.TemporaryDirectory() as out:
        learner, _ = mnist.build(mnist.parser().parse_args(["--epochs", str(args.epochs), "--dashboard", "none",
                                                            "--out", out, "--device", args.device]))
        timer = Interleave(other)
        learner.callbacks.append(timer)
        t0 = time.perf_counter()
        _, history = learner.fit()
        e_wall = time.perf_counter() - t0 - timer.other_seconds
    e_acc, t_acc = history["val_accuracy"][-1], other.accuracy
    table.add("training epoch time (median)", statistics.median(timer.times), statistics.median(other.times), "s",
              False)
    table.add("whole run incl. validation, checkpoints, logs", e_wall, other.wall, "s", False)
    print(f"final validation accuracy: ember {e_acc:.2%}, torch {t_acc:.2%}")
    if args.markdown:
        print()
        print(table.markdown())
        print(f"\nFinal validation accuracy: ember {e_acc:.2%}, torch {t_acc:.2%}.")


if __name__ == "__main__":
    main()
