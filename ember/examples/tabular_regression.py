"""Tabular regression: an MLP predicts diabetes progression from ten clinical measurements.

    python -m ember.examples.tabular_regression

The data are scikit-learn's diabetes table (442 patients; age, sex, BMI, blood pressure and six
blood serum measurements; the target is a disease-progression score one year later), read
straight from the file scikit-learn ships (``pip install scikit-learn``; nothing of scikit-learn
is imported). Features and target are standardised with the training split's statistics; the
MLP trains with AdamW and early stopping on the validation loss, and reports R² and the mean
absolute error beside an ordinary least-squares fit of the same split.
"""

from __future__ import annotations

import argparse
import gzip
import sys

import numpy as np

import ember
from ember import nn
from ember.data import DataLoader, TensorDataset
from ember.data.sources.shipped import package_data_path
from ember.train import Learner
from ember.train.metrics import Metric, to_numpy

FEATURES = ["age", "sex", "bmi", "blood pressure", "s1 (tc)", "s2 (ldl)", "s3 (hdl)", "s4 (tch)", "s5 (ltg)",
            "s6 (glu)"]


def load_diabetes() -> tuple[np.ndarray, np.ndarray]:
    """(features float32 (442, 10), target float32 (442,)) from scikit-learn's data files."""
    data = package_data_path("sklearn", "datasets", "data", "diabetes_data_raw.csv.gz",
                             install="pip install scikit-learn")
    target = package_data_path("sklearn", "datasets", "data", "diabetes_target.csv.gz",
                               install="pip install scikit-learn")
    with gzip.open(data, "rt") as f:
        x = np.loadtxt(f, dtype=np.float32)
    with gzip.open(target, "rt") as f:
        y = np.loadtxt(f, dtype=np.float32)
    if x.shape != (442, 10) or y.shape != (442,):
        raise ValueError(f"{data}: expected 442 rows of 10 features and 442 targets, got {x.shape}, {y.shape}")
    return x, y


class R2(Metric):
    """The coefficient of determination, 1 - SS_res / SS_tot, over everything seen this epoch."""

    name, higher_is_better = "r2", True
    _state = ("n", "sum_y", "sum_y2", "ss_res")

    def __init__(self, scale: float = 1.0):
        self.scale = scale  # targets are standardised; R² does not depend on the scale anyway
        self.reset()

    def reset(self) -> None:
        self.n, self.sum_y, self.sum_y2, self.ss_res = 0, 0.0, 0.0, 0.0

    def update(self, output, target) -> None:
        pred, y = to_numpy(output).reshape(-1).astype(np.float64), to_numpy(target).reshape(-1).astype(np.float64)
        self.n += y.size
        self.sum_y += float(y.sum())
        self.sum_y2 += float((y * y).sum())
        self.ss_res += float(((y - pred) ** 2).sum())

    def compute(self) -> float:
        ss_tot = self.sum_y2 - self.sum_y ** 2 / self.n if self.n else 0.0
        return 1.0 - self.ss_res / ss_tot if ss_tot > 0 else float("nan")


class MAE(Metric):
    """Mean absolute error in the target's original units (``scale`` undoes the standardisation)."""

    name, higher_is_better = "mae", False
    _state = ("n", "total")

    def __init__(self, scale: float = 1.0):
        self.scale = scale
        self.reset()

    def reset(self) -> None:
        self.n, self.total = 0, 0.0

    def update(self, output, target) -> None:
        diff = to_numpy(output).reshape(-1).astype(np.float64) - to_numpy(target).reshape(-1).astype(np.float64)
        self.n += diff.size
        self.total += float(np.abs(diff).sum()) * self.scale

    def compute(self) -> float:
        return self.total / self.n if self.n else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dashboard", choices=("auto", "tui", "plain", "none"), default="plain")
    args = p.parse_args(argv)

    x, y = load_diabetes()
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(x))
    tr, va = order[:354], order[354:]  # 80 / 20
    mu, sd = x[tr].mean(0), x[tr].std(0)
    ymu, ysd = float(y[tr].mean()), float(y[tr].std())
    xs, ys = (x - mu) / sd, (y - ymu) / ysd

    ember.manual_seed(args.seed)
    t = ember.from_numpy
    train = TensorDataset(t(xs[tr]), t(ys[tr, None]))
    val = TensorDataset(t(xs[va]), t(ys[va, None]))
    model = nn.Sequential(nn.Linear(10, 64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, 64), nn.GELU(),
                          nn.Linear(64, 1))
    opt = ember.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    learner = Learner(model, opt, nn.MSELoss(), DataLoader(train, batch_size=32, shuffle=True),
                      DataLoader(val, batch_size=len(val)), epochs=args.epochs, metrics=(R2(), MAE(ysd)),
                      monitor="val_loss", early_stopping=25, seed=args.seed,
                      dashboard=None if args.dashboard == "none" else args.dashboard)
    model, history = learner.fit()

    # the baseline: ordinary least squares on the same standardised split
    a = np.c_[xs[tr], np.ones(len(tr))]
    coef, *_ = np.linalg.lstsq(a, ys[tr], rcond=None)
    pred = np.c_[xs[va], np.ones(len(va))] @ coef
    ols_r2 = 1 - ((ys[va] - pred) ** 2).sum() / ((ys[va] - ys[va].mean()) ** 2).sum()
    ols_mae = float(np.abs(ys[va] - pred).mean() * ysd)
    best = int(np.argmin(history["val_loss"]))
    print(f"MLP after {len(history)} epochs (best epoch {best + 1}): validation R² {history['val_r2'][best]:.3f}, "
          f"MAE {history['val_mae'][best]:.1f}")
    print(f"least squares on the same split:            validation R² {ols_r2:.3f}, MAE {ols_mae:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
