"""The Textual dashboard: live plots, current values, progress bars and a quit dialog.

``DashboardApp`` only reads ``Snapshot``s from a ``Bridge`` (it never touches the learner), so it can be
driven by Textual's pilot in tests. ``ember.train.dashboard.TuiReporter`` runs it on the main thread while
the training runs on another.

Keys: ←/→ metric, ↑ full history, ↓ recent history, q quit dialog (stop cleanly / kill / cancel).

>>> from ember.train.dashboard.bridge import Bridge
>>> app = DashboardApp(Bridge(), on_stop=lambda reason: None)
>>> app.mode
'full'
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Log, ProgressBar, Static

from .bridge import MAX_PENDING, Bridge, Snapshot, process_memory
from .plain import fmt_duration, fmt_lr, fmt_metric, fmt_rate
from .plot import LinePlot, Points, Series

# Hex colours: both rich and Textual's markup parse them (a rich-only colour name costs Textual a failed
# lookup with a spelling suggestion on every redraw).
TRAIN_STYLE, VAL_STYLE = "#1e90ff", "#ff8c00"


def fmt_bytes(n: float | None) -> str:
    if n is None or not math.isfinite(n):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "-"


def metric_names(snap: Snapshot, known: list[str], history_from: int = 0) -> list[str]:
    """Metric names seen so far, ``known`` first (so the selection stays put), loss before the rest.
    Only the history records from ``history_from`` on are scanned (the earlier ones gave ``known``)."""
    names = list(known)
    found: list[str] = []

    def scalar(v: Any) -> bool:     # a confusion matrix has no curve
        return isinstance(v, int | float) and not isinstance(v, bool)

    for d in (snap.train_running, snap.last_train, snap.last_val):
        found.extend(k for k, v in d.items() if scalar(v))
    for record in snap.history[history_from:]:
        for key, value in record.items():
            for prefix in ("train_", "val_"):
                if key.startswith(prefix) and scalar(value):
                    found.append(key[len(prefix):])
    found.extend(snap.new_points)
    first = {n: i for i, n in reversed(list(enumerate(found)))}
    for name in sorted(first, key=lambda n: (n != "loss", first[n])):
        if name not in names:
            names.append(name)
    return names


def progress_info(snap: Snapshot, now: float) -> dict[str, Any]:
    """Epoch and run progress: fractions (None when unknown), ETAs in seconds (None when unknown)."""
    bpe = snap.batches_per_epoch
    done = snap.batch - snap.epoch_start_batch
    sec_per_batch = (now - snap.epoch_started_at) / done if done > 0 and snap.epoch_started_at else None
    epoch_eta = None
    if bpe and sec_per_batch is not None and snap.phase == "train":
        epoch_eta = max(bpe - snap.batch, 0) * sec_per_batch
    times = [r["epoch_time"] for r in snap.history[-3:] if isinstance(r.get("epoch_time"), int | float)]
    per_epoch = sum(times) / len(times) if times else (bpe * sec_per_batch if bpe and sec_per_batch else None)
    remaining = max(snap.epochs - snap.epoch - 1, 0)
    run_eta = None
    if snap.phase == "done":
        run_eta = 0.0
    elif per_epoch is not None:
        run_eta = (epoch_eta or 0.0) + remaining * per_epoch
    epoch_frac = min(snap.batch / bpe, 1.0) if bpe else None
    if snap.phase == "done":
        run_frac = 1.0
    elif snap.epochs:
        run_frac = min((snap.epoch + (epoch_frac or 0.0)) / snap.epochs, 1.0)
    else:
        run_frac = None
    return {"epoch_frac": epoch_frac, "run_frac": run_frac, "epoch_eta": epoch_eta, "run_eta": run_eta,
            "elapsed": now - snap.started_at if snap.started_at else None}


class QuitScreen(ModalScreen[str | None]):
    """Asks how to quit: stop cleanly (finish the step, checkpoint, fit returns), kill, or cancel."""

    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    #dialog { width: 72; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    #dialog Static { margin-bottom: 1; }
    #buttons { height: auto; align: center middle; }
    #buttons Button { margin: 0 1; }
    """
    BINDINGS = [
        Binding("s", "choose('stop')", "stop cleanly"),
        Binding("k", "choose('kill')", "kill"),
        Binding("escape,c,q", "choose('cancel')", "cancel"),
    ]

    def __init__(self, stopping: bool = False) -> None:
        super().__init__()
        self.stopping = stopping

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("[b]Quit training?[/b]" + ("  (a clean stop is already under way)" if self.stopping else ""))
            yield Static(
                "[b]Stop training cleanly[/b]: the current step finishes, a checkpoint is written (when the "
                "learner has a checkpoint directory) and fit returns, so the code after it runs.\n"
                "[b]Kill[/b]: exit right away with status 130; nothing more is saved.\n"
                "[b]Cancel[/b]: keep training."
            )
            with Horizontal(id="buttons"):
                yield Button("Stop training cleanly", id="stop", variant="primary")
                yield Button("Kill", id="kill", variant="error")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stop", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class EventLog(Log, can_focus=False):
    """Messages from the run (checkpoints, stop requests) and anything the training code printed."""


class DashboardApp(App[str]):
    """Live view of a training run fed by ``bridge``; ``on_stop(reason)`` asks the learner to stop.

    ``is_done()`` tells the app that training has finished: it then exits with the result "done". Quitting
    through the dialog's Kill exits with "kill" (the caller ends the process). ``recent_steps`` is the
    width of the "recent" plot window (default: one epoch, at least 50 steps; 200 while unknown).
    """

    TITLE = "ember"
    ENABLE_COMMAND_PALETTE = False      # its commands (quit, themes) would bypass the quit dialog
    CSS = """
    Screen { layout: vertical; }
    #status { height: 1; padding: 0 1; background: $boost; }
    #main { height: 1fr; }
    #plotbox { width: 3fr; border: round $primary; padding: 0 1; }
    #values { width: 2fr; min-width: 40; max-width: 64; border: round $secondary; padding: 0 1; }
    .prow { height: 1; padding: 0 1; }
    .prow .pname { width: 7; }
    .prow ProgressBar { width: auto; }
    .prow .pinfo { width: 1fr; padding-left: 1; }
    #log { height: 4; border-top: solid $panel; }
    """
    BINDINGS = [
        Binding("left", "metric(-1)", "◀ metric"),
        Binding("right", "metric(1)", "metric ▶"),
        Binding("up", "mode('full')", "full history"),
        Binding("down", "mode('recent')", "recent"),
        Binding("q", "quit_dialog", "quit…"),
    ]

    def __init__(self, bridge: Bridge, on_stop: Callable[[str], Any], is_done: Callable[[], bool] | None = None,
                 recent_steps: int | None = None, poll_interval: float = 0.2) -> None:
        super().__init__()
        self.bridge = bridge
        self.on_stop = on_stop
        self.is_done = is_done
        self.recent_steps = recent_steps
        self.poll_interval = poll_interval
        self.snap = Snapshot()
        self.series: dict[str, Points] = {}   # train points per metric, (step, value)
        self.metrics: list[str] = []
        self.metric_index = 0
        self.mode = "full"
        self.stopping = False
        self.failure: BaseException | None = None
        self.captured: list[str] = []       # lines printed while the app owned the terminal
        self._partial = {False: "", True: ""}
        self.value_rows: list[tuple[str, str, str, str]] = []
        self._memory: dict[str, float] = {}
        self._memory_at = float("-inf")
        self._history_seen = 0                     # history records already scanned for metric names
        self._shown: dict[str, Any] = {}           # what each Static shows now (see _show)
        self.info_rows: list[tuple[str, str]] = []

    # -- layout ----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("starting...", id="status")
        with Horizontal(id="main"):
            with Vertical(id="plotbox"):
                yield LinePlot(id="plot")
            yield Static("", id="values")
        with Horizontal(classes="prow"):
            yield Label("epoch", classes="pname")
            yield ProgressBar(id="epoch-bar", show_eta=False)
            yield Label("", id="epoch-info", classes="pinfo")
        with Horizontal(classes="prow"):
            yield Label("run", classes="pname")
            yield ProgressBar(id="run-bar", show_eta=False)
            yield Label("", id="run-info", classes="pinfo")
        yield EventLog(id="log", max_lines=200)
        yield Footer()

    def on_mount(self) -> None:
        values = self.query_one("#values")
        values.border_title = "now"
        values.border_subtitle = "train, val: last epoch"
        self.query_one("#plotbox").border_subtitle = f"[{TRAIN_STYLE}]━ train[/]  [{VAL_STYLE}]● val[/]"
        self.begin_capture_print(self)
        self._update_plot()
        self.set_interval(self.poll_interval, self.poll)

    # -- data ------------------------------------------------------------------------------------------
    def poll(self) -> None:
        """Take the bridge's newest snapshot (if any) and redraw; exit once training is done."""
        if self.bridge.failure is not None:
            raise self.bridge.failure       # a capture on the training thread failed: fall back to plain
        snap = self.bridge.take()
        if snap is not None:
            self.apply(snap)
        else:
            self._update_progress()      # the clocks move even when no step finished
        if self.is_done is not None and self.is_done():
            final = self.bridge.take()
            if final is not None:
                self.apply(final)
            self.exit("done")

    def apply(self, snap: Snapshot) -> None:
        """Fold one snapshot into the app's series and refresh every widget."""
        self.snap = snap
        for name, points in snap.new_points.items():
            series = self.series.setdefault(name, Points())
            if points and series.last_x is not None and points[0][0] <= series.last_x:
                series.keep_before(points[0][0])   # the step went back (a restarted run)
            series.extend(points)
            if len(series) > 4 * MAX_PENDING:
                series.thin()
        for message in snap.events:
            self._log_line(message)
        current = self.metric
        self.metrics = metric_names(snap, self.metrics, min(self._history_seen, len(snap.history)))
        self._history_seen = len(snap.history)
        if current is None and self.metrics:
            self.metric_index = 0
        if snap.stop_requested and not self.stopping:
            self.stopping = True
        self._update_status()
        self._update_plot()
        self._update_values()
        self._update_progress()

    @property
    def metric(self) -> str | None:
        return self.metrics[self.metric_index] if self.metrics else None

    def window(self) -> int:
        if self.recent_steps:
            return self.recent_steps
        bpe = self.snap.batches_per_epoch
        return max(bpe, 50) if bpe else 200

    def val_points(self, name: str) -> list[tuple[float, float]]:
        """Per-epoch validation values of ``name`` at the step where each epoch ended."""
        snap = self.snap
        known = sorted(snap.epoch_end_steps.items())
        per_epoch = None
        if known:
            per_epoch = known[-1][1] / max(known[-1][0], 1)
        elif snap.step and (snap.epoch or snap.batch):
            per_epoch = snap.step / (snap.epoch + (snap.batch / snap.batches_per_epoch
                                                   if snap.batches_per_epoch else 0) or 1)
        out = []
        for i, record in enumerate(snap.history):
            value = record.get("val_" + name)
            if not isinstance(value, int | float):
                continue
            epoch = int(record.get("epoch", i + 1))
            x = record.get("step", snap.epoch_end_steps.get(epoch))
            if x is None and per_epoch is not None:
                x = epoch * per_epoch
            if x is not None:
                out.append((float(x), float(value)))
        return out

    def plot_title(self) -> str:
        name = self.metric or "loss"
        n = len(self.metrics)
        pos = f" ({self.metric_index + 1}/{n})" if n > 1 else ""
        if self.mode == "recent":
            return f"{name}{pos} · recent: last {self.window():,} steps"
        return f"{name}{pos} · full history"

    # -- widgets ---------------------------------------------------------------------------------------
    def _update_status(self) -> None:
        s = self.snap
        parts = ["[b]ember[/b]", s.phase]
        if s.epochs:
            parts.append(f"epoch {min(s.epoch + 1, s.epochs)}/{s.epochs}")
        parts.append(f"step {s.step:,}")
        if self.stopping:
            reason = f" ({s.stop_reason})" if s.stop_reason else ""
            parts.append(f"[b #ffd700]stopping{reason}: finishing the step and writing a checkpoint[/]")
        self._show("#status", " · ".join(parts))

    def _update_plot(self) -> None:
        name = self.metric or "loss"
        train = self.series.get(name) or Points()
        val = self.val_points(name)
        x_range = None
        last = max(train.last_x or 0, self.snap.step)
        if self.mode == "recent" and last:
            x_range = (max(last - self.window() + 1, 0), last)
        plot = self.query_one("#plot", LinePlot)
        plot.set_data([Series("train", train, TRAIN_STYLE), Series("val", val, VAL_STYLE, marker="●")],
                      x_range=x_range, x_label="step")
        box = self.query_one("#plotbox")
        if box.border_title != self.plot_title():
            box.border_title = self.plot_title()

    def _update_values(self) -> None:
        s = self.snap
        self.value_rows = [(m, fmt_metric(s.train_running.get(m)) if m in s.train_running else "-",
                            fmt_metric(s.last_train.get(m)) if m in s.last_train else "-",
                            fmt_metric(s.last_val.get(m)) if m in s.last_val else "-") for m in self.metrics]
        table = Table(box=None, pad_edge=False, expand=True, header_style="bold")
        for h in ("metric", "running", "train", "val"):
            table.add_column(h, justify="left" if h == "metric" else "right", no_wrap=True)
        for row in self.value_rows:
            style = "reverse" if row[0] == self.metric else ""
            table.add_row(*row, style=style)
        now = time.monotonic()
        if now - self._memory_at >= 1.0:          # a file read: once a second is plenty
            self._memory, self._memory_at = process_memory(), now
        mem = self._memory
        self.info_rows = [("lr", fmt_lr(s.lr)), ("items/s", fmt_rate(s.items_per_sec)),
                          ("items", f"{s.items_total:,}"), ("memory", fmt_bytes(mem.get("rss"))),
                          ("peak memory", fmt_bytes(mem.get("peak")))]
        # Other memory figures the learner records (GPU memory per epoch, in MiB when the key ends in _mb);
        # the process's own memory is read live above.
        for key, value in list(s.extra.items()) + list((s.history[-1] if s.history else {}).items()):
            if "memory" in key and not key.startswith("cpu_") and isinstance(value, int | float):
                label = key.removesuffix("_mb").replace("_", " ")
                self.info_rows.append((label, fmt_bytes(value * 2**20 if key.endswith("_mb") else value)))
        info = Table(box=None, pad_edge=False, show_header=False, expand=True)
        info.add_column(no_wrap=True)
        info.add_column(justify="right", no_wrap=True)
        for row in self.info_rows:
            info.add_row(*row)
        self._show("#values", Group(table, Text(""), info), key=(self.value_rows, self.info_rows, self.metric))

    def _update_progress(self) -> None:
        s = self.snap
        p = progress_info(s, time.time())
        bar = self.query_one("#epoch-bar", ProgressBar)
        if s.batches_per_epoch:
            bar.update(total=s.batches_per_epoch, progress=min(s.batch, s.batches_per_epoch))
        else:
            bar.update(total=None)
        count = f"{s.batch:,}/{s.batches_per_epoch:,}" if s.batches_per_epoch else f"{s.batch:,} batches"
        phase = "  validating" if s.phase == "validate" else ""
        eta = f" · ETA {fmt_duration(p['epoch_eta'])}" if p["epoch_eta"] is not None else ""
        self._show("#epoch-info", f"{count}{eta} · {fmt_rate(s.items_per_sec)} items/s{phase}")
        run = self.query_one("#run-bar", ProgressBar)
        if p["run_frac"] is not None:
            run.update(total=1000, progress=round(1000 * p["run_frac"]))
        else:
            run.update(total=None)
        epoch = f"epoch {min(s.epoch + 1, s.epochs)}/{s.epochs}" if s.epochs else f"epoch {s.epoch + 1}"
        eta = f" · ETA {fmt_duration(p['run_eta'])}" if p["run_eta"] is not None else ""
        self._show("#run-info", f"{epoch}{eta} · elapsed {fmt_duration(p['elapsed'])}")

    def _show(self, selector: str, content: Any, key: Any = None) -> None:
        """Update a Static/Label only when its content changed, and without a layout pass (sizes are
        fixed by the CSS): redraws stay cheap, so the UI thread leaves the GIL to training."""
        key = content if key is None else key
        if self._shown.get(selector) == key:
            return
        self._shown[selector] = key
        widget = self.query_one(selector, Static)
        try:
            widget.update(content, layout=False)
        except TypeError:        # a Textual without the layout argument
            widget.update(content)

    def _log_line(self, line: str) -> None:
        self.query_one("#log", EventLog).write_line(line)

    # -- captured output -------------------------------------------------------------------------------
    def on_print(self, event: events.Print) -> None:
        text = self._partial[event.stderr] + event.text
        *lines, self._partial[event.stderr] = text.split("\n")
        for line in lines:
            self.captured.append(line)
            self._log_line(line)

    # -- keys ------------------------------------------------------------------------------------------
    def action_metric(self, delta: int) -> None:
        if self.metrics:
            self.metric_index = (self.metric_index + delta) % len(self.metrics)
            self._update_plot()
            self._update_values()

    def action_mode(self, mode: str) -> None:
        self.mode = mode
        self._update_plot()

    def action_quit_dialog(self) -> None:
        if not isinstance(self.screen, QuitScreen):
            self.push_screen(QuitScreen(self.stopping), self._on_quit_choice)

    # ctrl+q and ctrl+c ask too: quitting the UI must never silently abandon the run.
    async def action_quit(self) -> None:
        self.action_quit_dialog()

    def action_help_quit(self) -> None:
        self.action_quit_dialog()

    def _on_quit_choice(self, choice: str | None) -> None:
        if choice == "stop":
            if not self.stopping:
                self.stopping = True
                self.on_stop("user")
                self._log_line("stop requested: finishing the current step, then checkpoint and return from fit")
            self._update_status()
        elif choice == "kill":
            self.exit("kill")

    # -- failures --------------------------------------------------------------------------------------
    def _handle_exception(self, error: Exception) -> None:
        # The reporter prints a one-line notice and carries on with plain output; Textual's full
        # traceback is kept only when EMBER_DASHBOARD_DEBUG is set.
        if self.failure is None:
            self.failure = error
        super()._handle_exception(error)
        renderables = getattr(self, "_exit_renderables", None)   # Textual's own traceback, printed at exit
        if not os.environ.get("EMBER_DASHBOARD_DEBUG") and isinstance(renderables, list):
            renderables.clear()
