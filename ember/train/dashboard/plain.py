"""The plain renderer: one line per epoch, for logs, CI, pipes and notebooks.

It is an ordinary ``Callback`` (no main thread needed). Each finished epoch prints one row -- the epoch,
every ``train_*``/``val_*`` metric of the history record, the learning rate, the epoch time and the
throughput -- as a ``rich`` table row when rich is installed, else as fixed-width text with ``print``.
A header is printed before the first row (and again if the columns change), and a summary line at the end.

>>> from types import SimpleNamespace
>>> from ember.train import TrainState
>>> learner = SimpleNamespace(state=TrainState(epochs=2))
>>> r = PlainReporter(use_rich=False)
>>> learner.state.history.append({"epoch": 1, "train_loss": 0.5, "val_loss": 0.4, "lr": 0.1,
...                               "epoch_time": 1.5, "items_per_sec": 1000.0})
>>> r.on_epoch_end(learner)
epoch  train_loss  val_loss       lr     time  items/s
  1/2      0.5000    0.4000  1.0e-01     1.5s    1,000
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from ..callback import Callback

# History keys shown in their own columns after the metrics, with their header and formatter.
_TAIL = (("lr", "lr"), ("epoch_time", "time"), ("items_per_sec", "items/s"))


def fmt_metric(v: Any) -> str:
    """A metric value in a table cell: 4 decimals for ordinary sizes, scientific otherwise."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "-" if v is None else str(v)
    v = float(v)
    if not math.isfinite(v):
        return str(v)
    if v == 0 or 1e-3 <= abs(v) < 1e4:
        return f"{v:.4f}"
    return f"{v:.3e}"


def fmt_lr(v: Any) -> str:
    return f"{float(v):.1e}" if isinstance(v, int | float) else "-"


def fmt_duration(seconds: Any) -> str:
    """250ms, 12.3s, 4m05s, 1h02m."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds < 0:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def fmt_rate(v: Any) -> str:
    return f"{v:,.0f}" if isinstance(v, int | float) and math.isfinite(v) else "-"


_FORMAT = {"lr": fmt_lr, "epoch_time": fmt_duration, "items_per_sec": fmt_rate}


def metric_columns(record: dict[str, Any]) -> list[str]:
    """The history keys shown for ``record``: train_* and val_* metrics (paired by name), then lr/time/rate."""
    names: list[str] = []
    for key in record:
        for prefix in ("train_", "val_"):
            if key.startswith(prefix) and key[len(prefix):] not in names:
                names.append(key[len(prefix):])
    cols = [p + n for n in names for p in ("train_", "val_") if p + n in record]
    return cols + [k for k, _ in _TAIL if k in record]


def best_epoch(history: list[dict[str, Any]]) -> tuple[str, float, int] | None:
    """(metric, value, epoch) of the best epoch: by val_accuracy, else val_loss, else train_loss."""
    for key, better in (("val_accuracy", max), ("val_loss", min), ("train_accuracy", max), ("train_loss", min)):
        rows = [(r[key], r.get("epoch", i + 1)) for i, r in enumerate(history)
                if isinstance(r.get(key), int | float) and math.isfinite(r[key])]
        if rows:
            value, epoch = better(rows, key=lambda t: t[0])
            return key, float(value), int(epoch)
    return None


def summary_line(state: Any, error: BaseException | None = None) -> str:
    """One line describing a finished, stopped or failed (``error``) run."""
    history = list(getattr(state, "history", []) or [])
    elapsed = time.time() - getattr(state, "started_at", time.time())
    n = len(history)
    parts = [f"{n} epoch{'s' if n != 1 else ''}", f"{getattr(state, 'step', 0):,} steps", fmt_duration(elapsed)]
    best = best_epoch(history)
    if best is not None:
        parts.append(f"best {best[0]} {fmt_metric(best[1])} (epoch {best[2]})")
    head = "training done"
    if error is not None:
        head = f"training failed ({type(error).__name__}: {error})"
    elif getattr(state, "stop_requested", False):
        reason = getattr(state, "stop_reason", "")
        head = f"training stopped{f' ({reason})' if reason else ''}"
    return f"{head}: " + ", ".join(parts)


class PlainReporter(Callback):
    """Prints one row per epoch and a summary line; optionally a progress line every N steps.

    ``use_rich``: None = rich if it imports; ``progress_every``: print a one-line progress report every
    that many optimizer steps (None, the default, keeps the output to one line per epoch).
    """

    def __init__(self, use_rich: bool | None = None, progress_every: int | None = None) -> None:
        if use_rich is None:
            try:
                import rich  # noqa: F401
                use_rich = True
            except ImportError:
                use_rich = False
        self.use_rich = use_rich
        self.progress_every = progress_every
        self._columns: list[str] | None = None
        self._printed_epochs = 0
        self.ended = False      # on_fit_end has run

    # -- hooks ----------------------------------------------------------------------------------------
    def on_fit_start(self, learner: Any) -> None:
        self._printed_epochs = len(getattr(learner.state, "history", []) or [])   # skip resumed epochs

    def on_batch_end(self, learner: Any) -> None:
        st = learner.state
        if self.progress_every and st.step % self.progress_every == 0:
            total = f"/{st.batches_per_epoch}" if st.batches_per_epoch else ""
            metrics = " ".join(f"{k} {fmt_metric(v)}" for k, v in st.train_running.items())
            self._write(f"  step {st.step:,}  epoch {st.epoch + 1} batch {st.batch}{total}  {metrics}  "
                        f"{fmt_rate(st.items_per_sec)} items/s")

    def on_epoch_end(self, learner: Any) -> None:
        st = learner.state
        history = getattr(st, "history", []) or []
        for record in history[self._printed_epochs:]:
            self.print_row(record, getattr(st, "epochs", 0))
        self._printed_epochs = len(history)

    def on_event(self, learner: Any, message: str) -> None:
        self._write(f"  {message}")       # resumed, new best checkpoint, stop requested: rare and worth a line

    def on_fit_end(self, learner: Any) -> None:
        self.ended = True
        self.on_epoch_end(learner)       # rows not printed yet (a fallback from the dashboard mid-run)
        # on_fit_end also runs when training raised; the Learner keeps that error while the hook runs.
        error = getattr(learner, "error", None)
        self._write(summary_line(learner.state, error if isinstance(error, BaseException) else None))

    # -- output -------------------------------------------------------------------------------------------
    def print_row(self, record: dict[str, Any], epochs: int = 0) -> None:
        columns = metric_columns(record)
        epoch = f"{record.get('epoch', '?')}/{epochs}" if epochs else str(record.get("epoch", "?"))
        cells = [epoch] + [_FORMAT.get(c, fmt_metric)(record.get(c)) for c in columns]
        headers = ["epoch"] + [dict(_TAIL).get(c, c) for c in columns]
        widths = [max(len(h), len(c), 5 if i == 0 else 7) for i, (h, c) in enumerate(zip(headers, cells))]
        show_header = columns != self._columns
        if show_header:
            self._columns = columns
            self._widths = widths
        else:
            widths = [max(a, b) for a, b in zip(self._widths, widths)]
            self._widths = widths
        if self.use_rich:
            self._rich_row(headers, cells, widths, show_header)
        else:
            if show_header:
                self._write("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
            self._write("  ".join(c.rjust(w) for c, w in zip(cells, widths)))

    def _rich_row(self, headers: list[str], cells: list[str], widths: list[int], show_header: bool) -> None:
        from rich import box
        from rich.console import Console
        from rich.table import Table

        # The same box for every row (its column divider is a space), so rows printed apart line up.
        table = Table(box=box.SIMPLE_HEAD, show_header=show_header, show_edge=False,
                      pad_edge=False, padding=(0, 1), header_style="bold")
        for h, w in zip(headers, widths):
            table.add_column(h, justify="right", width=w, no_wrap=True)
        table.add_row(*cells)
        # file=None: write to whatever sys.stdout is now; width: never squeeze the columns to 80 chars.
        console = Console(highlight=False, width=sum(widths) + 3 * len(widths) + 4)
        console.print(table)

    def _write(self, line: str) -> None:
        print(line, file=sys.stdout, flush=True)
