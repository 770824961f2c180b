"""Ready-made callbacks: early stopping and a callback built from plain functions.

The loggers (CSV, JSON lines, experiment log) are in :mod:`ember.train.loggers` and the plot writer
in :mod:`ember.train.plots`; all of them are importable from ``ember.train``.

>>> stop = EarlyStopping(monitor="val_accuracy", patience=2)
>>> stop.mode
'max'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .callback import Callback
from .history import better, default_mode

__all__ = ["EarlyStopping", "LambdaCallback", "missing_metric_error"]


def missing_metric_error(who: str, metric: str, available: list[str]) -> KeyError:
    return KeyError(f"{who}: monitored metric {metric!r} is not recorded; available: {', '.join(available)}"
                    + (" (validation metrics need a val_loader)" if metric.startswith("val_") else ""))


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    epochs (``mode``: "min", "max" or "auto": min for losses, max for scores).

    It asks the learner to stop (``learner.request_stop``), so the run ends cleanly: a checkpoint is
    written when the learner has a checkpoint directory, and ``fit`` returns the history. Its counter
    is saved in checkpoints, so a resumed run keeps counting.
    """

    def __init__(self, monitor: str = "val_loss", patience: int = 3, mode: str = "auto", min_delta: float = 0.0):
        if int(patience) < 1:
            raise ValueError(f"EarlyStopping: patience must be >= 1, got {patience}")
        mode = default_mode(monitor) if mode == "auto" else mode
        if mode not in ("min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'min', 'max' or 'auto', got {mode!r}")
        self.monitor, self.patience, self.mode, self.min_delta = monitor, int(patience), mode, abs(float(min_delta))
        self.best: float | None = None
        self.best_epoch = 0
        self.wait = 0
        self.stopped_epoch = 0

    def on_fit_start(self, learner: Any) -> None:
        keys = learner.metric_keys()
        if self.monitor not in keys:
            raise missing_metric_error("EarlyStopping", self.monitor, keys)

    def on_epoch_end(self, learner: Any) -> None:
        record = learner.state.history[-1]
        if self.monitor not in record:
            raise missing_metric_error("EarlyStopping", self.monitor, list(record))
        value = record[self.monitor]
        if better(value, self.best, self.mode, self.min_delta):
            self.best, self.best_epoch, self.wait = value, record["epoch"], 0
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = record["epoch"]
            learner.request_stop(f"early stopping: {self.monitor} did not improve for {self.wait} epochs "
                                 f"(best {self.best:.6g} at epoch {self.best_epoch})")

    def state_dict(self) -> dict[str, Any]:
        best = self.best
        return {"best": None if best is None or (isinstance(best, float) and math.isnan(best)) else float(best),
                "best_epoch": self.best_epoch, "wait": self.wait, "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_epoch = state["best"], int(state["best_epoch"])
        self.wait, self.stopped_epoch = int(state["wait"]), int(state["stopped_epoch"])


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda learner: ...)``; each keyword is
    a hook name and its function gets the same arguments as the hook."""

    _HOOKS = ("on_fit_start", "on_epoch_start", "on_batch_start", "on_batch_end", "on_validation_start",
              "on_validation_end", "on_epoch_end", "on_checkpoint", "on_fit_end", "on_event")

    def __init__(self, **hooks: Callable[..., Any]):
        for name, fn in hooks.items():
            if name not in self._HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {name!r}; hooks are {', '.join(self._HOOKS)}")
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be callable, got {type(fn).__name__}")
            setattr(self, name, fn)
