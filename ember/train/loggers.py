"""Loggers: per-epoch metrics as CSV and JSON lines, and a human-readable ``experiment.log``.

``Learner(..., log_dir="runs/exp1")`` adds all three (plus the plot writer) for you:

* ``metrics.csv``: one row per epoch, one column per history key;
* ``metrics.jsonl``: one JSON object per epoch, with non-scalar metrics (confusion matrices) as
  nested lists;
* ``experiment.log``: the configuration at the start, then timestamped events (epochs, checkpoints,
  best values, stops, resumes).

On a resumed run the metric files are rewritten from the checkpoint's history first, so epochs that a
killed run logged after its last checkpoint do not appear twice.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from typing import Any

import numpy as np

from .callback import Callback
from .history import _write_atomic

__all__ = ["CSVLogger", "JSONLLogger", "ExperimentLog"]


def _json_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return _json_value(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class CSVLogger(Callback):
    """Writes ``learner.history`` to ``path`` as CSV after every epoch (atomically: the whole file is
    rewritten, so columns that first appear later still get a header)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)

    def _write(self, learner: Any) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        learner.history.to_csv(self.path)

    def on_fit_start(self, learner: Any) -> None:
        if len(learner.history):
            self._write(learner)

    def on_epoch_end(self, learner: Any) -> None:
        self._write(learner)


class JSONLLogger(Callback):
    """Appends one JSON line per epoch to ``path``: the history record plus its non-scalar metrics."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)

    @staticmethod
    def line(record: dict[str, Any], arrays: dict[str, Any]) -> str:
        return json.dumps({k: _json_value(v) for k, v in {**record, **arrays}.items()}) + "\n"

    def on_fit_start(self, learner: Any) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        h = learner.history
        _write_atomic(self.path, "".join(self.line(r, a) for r, a in zip(h.records, h.arrays)))

    def on_epoch_end(self, learner: Any) -> None:
        h = learner.history
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(self.line(h.records[-1], h.arrays[-1]))


class ExperimentLog(Callback):
    """A plain-text log: the run's configuration, then one timestamped line per event."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)

    def write(self, text: str) -> None:
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            for ln in text.splitlines() or [""]:
                f.write(f"{stamp} {ln}\n")

    def on_fit_start(self, learner: Any) -> None:
        cfg = learner.config()
        model = cfg.pop("model_repr", None)
        self.write("fit start; config:\n" + json.dumps(cfg, indent=2, default=str)
                   + (f"\nmodel:\n{model}" if model else ""))

    def on_event(self, learner: Any, message: str) -> None:
        self.write(message)

    def on_epoch_end(self, learner: Any) -> None:
        r = learner.history.records[-1]
        parts = [f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items() if k != "epoch"]
        self.write(f"epoch {r['epoch']}/{learner.state.epochs}: " + " ".join(parts))

    def on_checkpoint(self, learner: Any, path: str) -> None:
        self.write(f"checkpoint written: {path}")

    def on_fit_end(self, learner: Any) -> None:
        st = learner.state
        how = f"stopped ({st.stop_reason})" if st.stop_requested else "finished"
        if getattr(learner, "_error", None) is not None:
            how = f"failed: {type(learner._error).__name__}: {learner._error}"
        self.write(f"fit end: {how}; {len(learner.history)} epochs recorded, {st.step} optimizer steps")
