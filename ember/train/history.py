"""History: the per-epoch records of a training run.

Each record is a flat dict of plain values: ``{"epoch": 1, "train_loss": ..., "val_loss": ...,
"train_accuracy": ..., "val_accuracy": ..., "lr": ..., "epoch_time": ..., "items_per_sec": ...}``.
Non-scalar results (a confusion matrix, per-class scores) are kept beside the records, in
``history.arrays`` (one dict per epoch), so every column of the records is a number.

>>> h = History([{"epoch": 1, "val_loss": 0.9}, {"epoch": 2, "val_loss": 0.7}])
>>> h["val_loss"]
[0.9, 0.7]
>>> h.best("val_loss")["epoch"]
2
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["History", "better", "default_mode"]

_LOWER_IS_BETTER = ("loss", "perplexity", "error", "mse", "mae", "rmse", "time", "memory")


def default_mode(metric: str) -> str:
    """"min" for losses, perplexity, errors, times and memory; "max" for everything else."""
    name = metric.lower()
    return "min" if any(w in name for w in _LOWER_IS_BETTER) else "max"


def better(a: float, b: float | None, mode: str, min_delta: float = 0.0) -> bool:
    """Whether ``a`` improves on ``b`` by more than ``min_delta`` (NaN never improves)."""
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return False
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return True
    return a < b - min_delta if mode == "min" else a > b + min_delta


class History:
    """Per-epoch metric records with column access, best-epoch lookup and CSV export."""

    def __init__(self, records: list[dict[str, Any]] | None = None, arrays: list[dict[str, Any]] | None = None):
        self.records: list[dict[str, Any]] = list(records or [])
        self.arrays: list[dict[str, Any]] = list(arrays or [{} for _ in self.records])

    def append(self, record: dict[str, Any], arrays: dict[str, Any] | None = None) -> None:
        self.records.append(record)
        self.arrays.append(arrays or {})

    def keys(self) -> list[str]:
        """Every column, in first-seen order."""
        seen: dict[str, None] = {}
        for r in self.records:
            for k in r:
                seen.setdefault(k)
        return list(seen)

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return self.records[key]
        if key not in self.keys():
            raise KeyError(f"no metric {key!r} in the history; available: {', '.join(self.keys()) or '(none yet)'}")
        return [r.get(key) for r in self.records]

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records)

    @property
    def last(self) -> dict[str, Any] | None:
        return self.records[-1] if self.records else None

    def best(self, metric: str, mode: str = "auto") -> dict[str, Any]:
        """The record of the epoch with the best value of ``metric`` (mode "min", "max" or "auto":
        min for losses, max for scores). The earliest epoch wins ties."""
        values = self[metric]
        mode = default_mode(metric) if mode == "auto" else mode
        if mode not in ("min", "max"):
            raise ValueError(f"History.best: mode must be 'min', 'max' or 'auto', got {mode!r}")
        best_i = None
        for i, v in enumerate(values):
            if v is not None and better(v, None if best_i is None else values[best_i], mode):
                best_i = i
        if best_i is None:
            raise ValueError(f"History.best: {metric!r} has no values")
        return self.records[best_i]

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """The records as CSV (one column per key, in first-seen order); written to ``path`` when given.
        Returns the text."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.keys(), lineterminator="\n")
        w.writeheader()
        for r in self.records:
            w.writerow({k: _fmt(v) for k, v in r.items()})
        text = buf.getvalue()
        if path is not None:
            _write_atomic(path, text)
        return text

    def to_jsonl(self, path: str | os.PathLike | None = None) -> str:
        """The records as JSON lines (non-finite floats as null); written to ``path`` when given."""
        text = "".join(json.dumps(_jsonable(r)) + "\n" for r in self.records)
        if path is not None:
            _write_atomic(path, text)
        return text

    def state_dict(self) -> dict[str, Any]:
        return {"records": [dict(r) for r in self.records], "arrays": [dict(a) for a in self.arrays]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.records = [dict(r) for r in state["records"]]
        self.arrays = [dict(a) for a in state.get("arrays", [{} for _ in self.records])]

    def __repr__(self) -> str:
        return f"History({len(self.records)} epochs, keys={self.keys()})"


def _fmt(v: Any) -> Any:
    return repr(v) if isinstance(v, float) else v


def _jsonable(r: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}


def _write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write through a temporary file and rename it, so a reader never sees half a file."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
