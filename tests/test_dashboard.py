"""The training dashboard: bridge snapshots, the braille chart, the plain renderer, the Textual app (driven
with Textual's pilot) and ``TuiReporter.run_foreground`` (headless), all with a fake learner.

The real-terminal test under tmux is in test_dashboard_tmux.py; it reuses ``FakeLearner`` from here.
"""

from __future__ import annotations

import asyncio
import math
import pathlib
import sys
import threading
import time
import traceback
from types import SimpleNamespace

import pytest

from ember.train import Callback, TrainState
from ember.train.dashboard import PlainReporter, TuiReporter, make_reporter
from ember.train.dashboard.bridge import MAX_PENDING, Bridge, Snapshot
from ember.train.dashboard.plain import best_epoch, metric_columns, summary_line

# Textual (and rich) are optional (ember[tui]): the bridge and plain-text tests run without them.
try:
    import textual  # noqa: F401
except ImportError:
    HAVE_TEXTUAL = False
else:
    HAVE_TEXTUAL = True
    from ember.train.dashboard.app import DashboardApp, QuitScreen, metric_names, progress_info
    from ember.train.dashboard.plot import Points, Series, render_chart
try:
    import rich  # noqa: F401
except ImportError:
    HAVE_RICH = False
else:
    HAVE_RICH = True
needs_textual = pytest.mark.skipif(not HAVE_TEXTUAL, reason="textual is not installed (ember[tui])")


# ---------------------------------------------------------------------------------------------------------
# A fake learner that follows the Learner/TrainState contract of issue 6
# ---------------------------------------------------------------------------------------------------------
class FakeLearner:
    """Updates ``state`` like the real Learner and calls the hooks; ``fit`` hands itself to a main-thread UI.

    ``delay`` sleeps per step; ``fail_at`` raises ValueError at that step; ``gate`` (a threading.Event)
    is awaited before every step, so a test can hold training where it wants it.
    """

    def __init__(self, callbacks=(), epochs=3, batches=20, delay=0.0, fail_at=None, gate=None, batch_size=32):
        self.state = TrainState(epochs=epochs, batches_per_epoch=batches)
        self.callbacks = list(callbacks)
        self.delay, self.fail_at, self.gate, self.batch_size = delay, fail_at, gate, batch_size
        self.stop_calls: list[str] = []
        self.checkpoints: list[str] = []

    def request_stop(self, reason: str = "") -> None:
        self.stop_calls.append(reason)
        self.state.stop_reason = reason
        self.state.stop_requested = True

    def _call(self, hook, *args):
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def _run_fit(self):
        st = self.state
        st.phase = "train"
        self._call("on_fit_start")
        for e in range(st.epoch, st.epochs):
            st.epoch, st.batch, st.items_epoch, st.phase, st.train_running = e, 0, 0, "train", {}
            self._call("on_epoch_start")
            for _ in range(st.batches_per_epoch):
                self._call("on_batch_start")
                if self.gate is not None:
                    self.gate.wait(10)
                if self.delay:
                    time.sleep(self.delay)
                if self.fail_at is not None and st.step == self.fail_at:
                    raise ValueError("fake training failed")
                st.batch += 1
                st.step += 1
                st.items_epoch += self.batch_size
                st.items_total += self.batch_size
                loss = 2.0 / (1 + 0.05 * st.step) + 0.05 * math.sin(st.step)
                st.step_losses.append((st.step, loss))
                n, run = st.batch, st.train_running
                st.train_running = {"loss": (run.get("loss", 0.0) * (n - 1) + loss) / n, "accuracy": 1 - loss / 3}
                st.lr = 0.1 * 0.9 ** e
                st.items_per_sec = 1000.0
                self._call("on_batch_end")
                if st.stop_requested:
                    self.checkpoints.append(f"ckpt-step{st.step}")
                    self._call("on_checkpoint", self.checkpoints[-1])
                    st.phase = "done"
                    self._call("on_fit_end")
                    return "stopped"
            st.phase = "validate"
            self._call("on_validation_start")
            st.last_val = {"loss": st.train_running["loss"] * 1.1, "accuracy": 0.5 + 0.1 * e}
            self._call("on_validation_end")
            st.last_train = dict(st.train_running)
            st.history.append({"epoch": e + 1, "train_loss": st.last_train["loss"],
                               "train_accuracy": st.last_train["accuracy"], "val_loss": st.last_val["loss"],
                               "val_accuracy": st.last_val["accuracy"], "lr": st.lr, "epoch_time": 0.5,
                               "items_per_sec": 1000.0})
            self._call("on_epoch_end")
        st.phase = "done"
        self._call("on_fit_end")
        return "finished"

    def fit(self):
        ui = next((c for c in self.callbacks if c.wants_main_thread), None)
        return ui.run_foreground(self._run_fit) if ui is not None else self._run_fit()


class Capture(Callback):
    """Feeds a Bridge on every hook, unthrottled (what TuiReporter does, minus the rate limit)."""

    def __init__(self, bridge):
        self.bridge = bridge

    def _cap(self, learner, *args):
        self.bridge.capture(learner.state, force=True)

    on_fit_start = on_epoch_start = on_batch_end = on_validation_end = on_epoch_end = on_fit_end = _cap


class OnBatch(Callback):
    """Calls ``fn(learner)`` after every step."""

    def __init__(self, fn):
        self.fn = fn

    def on_batch_end(self, learner):
        self.fn(learner)


class Freeze(Exception):
    """Raised by a test callback to leave the fake learner with its state mid-run."""


def trained_bridge(epochs=2, batches=10):
    bridge = Bridge(min_interval=0.0)
    learner = FakeLearner([Capture(bridge)], epochs=epochs, batches=batches)
    learner.fit()
    return bridge, learner


# ---------------------------------------------------------------------------------------------------------
# make_reporter
# ---------------------------------------------------------------------------------------------------------
@needs_textual
def test_make_reporter_kinds(monkeypatch, capsys):
    assert isinstance(make_reporter("plain"), PlainReporter)
    tui = make_reporter("tui")
    assert isinstance(tui, TuiReporter) and tui.wants_main_thread
    assert isinstance(make_reporter("auto"), PlainReporter)    # pytest's stdout is not a terminal
    terminal = SimpleNamespace(isatty=lambda: True, write=None)
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert isinstance(make_reporter("auto"), PlainReporter)   # stdin is still no terminal: no keys
    monkeypatch.setattr(sys, "stdin", terminal)
    assert isinstance(make_reporter("auto"), TuiReporter)
    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(make_reporter("auto"), PlainReporter)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setitem(sys.modules, "textual", None)         # as if Textual were not installed
    assert isinstance(make_reporter("auto"), PlainReporter)
    with pytest.raises(ImportError, match=r'pip install "ember\[tui\]"'):
        make_reporter("tui")
    with pytest.raises(ValueError, match="auto"):
        make_reporter("fancy")


def test_dashboard_imports_without_textual(monkeypatch):
    # Re-import the package with every textual module blocked: a top-level `import textual` would fail.
    import importlib

    import ember.train

    monkeypatch.setattr(ember.train, "dashboard", ember.train.dashboard)    # restored afterwards
    for name in list(sys.modules):
        if name.startswith("ember.train.dashboard"):
            monkeypatch.delitem(sys.modules, name)
        if name == "textual" or name.startswith("textual."):
            monkeypatch.setitem(sys.modules, name, None)
    fresh = importlib.import_module("ember.train.dashboard")
    assert fresh.make_reporter is not make_reporter          # really a fresh import
    assert type(fresh.make_reporter("plain")).__name__ == "PlainReporter"
    assert type(fresh.make_reporter("auto")).__name__ == "PlainReporter"
    with pytest.raises(ImportError, match=r'pip install "ember\[tui\]"'):
        fresh.make_reporter("tui")


# ---------------------------------------------------------------------------------------------------------
# Bridge
# ---------------------------------------------------------------------------------------------------------
def test_bridge_copies_only_new_points():
    b = Bridge(min_interval=0.0)
    st = TrainState(epochs=2, batches_per_epoch=4)
    assert b.take() is None
    st.step_losses += [(1, 1.0), (2, 0.9)]
    st.step, st.train_running = 2, {"loss": 0.95, "accuracy": 0.5}
    assert b.capture(st)
    snap = b.take()
    assert snap.new_points == {"loss": [(1, 1.0), (2, 0.9)], "accuracy": [(2, 0.5)]}
    assert b.take() is None
    st.step_losses.append((3, 0.8))
    st.step, st.train_running = 3, {"loss": 0.9, "accuracy": 0.6}
    b.capture(st)
    b.capture(st)     # same step again: no duplicate points
    snap = b.take()
    assert snap.new_points == {"loss": [(3, 0.8)], "accuracy": [(3, 0.6)]}
    # The snapshot owns its values: changing the state later does not change it.
    st.train_running["accuracy"] = 0.0
    assert snap.train_running["accuracy"] == 0.6
    # A learner that trims its list keeps working (only steps after the last copied one are new).
    st.step_losses[:] = [(3, 0.8), (4, 0.7)]
    st.step = 4
    b.capture(st)
    assert b.take().new_points["loss"] == [(4, 0.7)]
    # A run that starts again from an earlier step: its points are all new.
    st.step_losses[:] = [(1, 2.0), (2, 1.5)]
    st.step = 2
    b.capture(st)
    assert b.take().new_points["loss"] == [(1, 2.0), (2, 1.5)]


def test_bridge_rate_limit_and_force():
    b = Bridge(min_interval=3600.0)
    st = TrainState()
    assert b.capture(st) is True
    st.step_losses.append((1, 0.5))
    st.step = 1
    assert b.capture(st) is False            # throttled: nothing copied
    assert b.take().step == 0
    assert b.capture(st, force=True) is True  # epoch boundaries force a copy; the skipped point is not lost
    snap = b.take()
    assert snap.step == 1 and snap.new_points["loss"] == [(1, 0.5)]


def test_bridge_history_epochs_and_events():
    bridge, learner = trained_bridge(epochs=3, batches=5)
    bridge.event("checkpoint written: x")
    snap = bridge.take()
    assert [r["epoch"] for r in snap.history] == [1, 2, 3]
    assert snap.history[0] == learner.state.history[0] and snap.history[0] is not learner.state.history[0]
    assert snap.epoch_end_steps == {1: 5, 2: 10, 3: 15}
    assert snap.phase == "done" and snap.step == 15
    assert [s for s, _ in snap.new_points["loss"]] == list(range(1, 16))
    assert snap.events == ["checkpoint written: x"]
    assert bridge.take() is None


def test_bridge_thins_points_when_nobody_takes():
    b = Bridge(min_interval=0.0)
    st = TrainState()
    st.step_losses = [(i, 1.0) for i in range(1, MAX_PENDING + 11)]
    st.step = MAX_PENDING + 10
    b.capture(st)
    pts = b.take().new_points["loss"]
    assert len(pts) < MAX_PENDING and pts[-1] == (MAX_PENDING + 10, 1.0)
    assert [s for s, _ in pts] == sorted(s for s, _ in pts)


# ---------------------------------------------------------------------------------------------------------
# The braille chart
# ---------------------------------------------------------------------------------------------------------
def _dots(lines, lw):
    """Set of (column, row) cells with any braille dot, right of the y-axis labels."""
    return {(c, r) for r, line in enumerate(lines[:-2]) for c, ch in enumerate(line.plain[lw + 1:])
            if "\u2801" <= ch <= "\u28ff"}


@needs_textual
def test_chart_shape_and_direction():
    falling = [(x, 10.0 - x) for x in range(11)]
    lines = render_chart([Series("t", falling)], width=40, height=10, x_label="step")
    assert len(lines) == 10 and all(len(line.plain) == 40 for line in lines)
    lw = lines[0].plain.index("┤")
    cells = _dots(lines, lw)
    assert (0, 0) in cells                                   # starts top left
    assert max(c for c, _ in cells if _ == 7) >= 30          # ends bottom right
    assert lines[0].plain[:lw].strip() == "10.5" and lines[7].plain[:lw].strip() == "0"
    assert "step" in lines[-1].plain and lines[-1].plain.split()[0] == "0" and lines[-1].plain.split()[-1] == "10"
    # Connected: every dot column between the ends holds a dot.
    assert {c for c, _ in cells} == set(range(min(c for c, _ in cells), max(c for c, _ in cells) + 1))


@needs_textual
def test_chart_flat_markers_range_and_nan():
    lines = render_chart([Series("t", [(0, 2.0), (5, 2.0), (9, float("nan")), (10, 2.0)])], width=30, height=6)
    lw = lines[0].plain.index("┤")
    assert len({r for _, r in _dots(lines, lw)}) == 1         # a constant series is one straight row
    lines = render_chart([Series("t", [(0, 1.0), (10, 0.0)]), Series("v", [(5, 0.5)], marker="●")], 30, 6)
    assert sum(line.plain.count("●") for line in lines) == 1
    clipped = render_chart([Series("t", [(x, float(x)) for x in range(100)])], 30, 6, x_range=(90, 99))
    assert clipped[-1].plain.split()[0] == "90" and clipped[0].plain.split("┤")[0].strip() == "99.45"


@needs_textual
def test_points_buffer():
    p = Points()
    p.extend([(i, float(i) / 10) for i in range(1, 101)])
    p.extend([])
    assert len(p) == 100 and p.last_x == 100.0 and p.y[-1] == 10.0
    p.keep_before(51)                     # a restart at step 51
    assert len(p) == 50 and p.last_x == 50.0
    p.thin()
    assert len(p) == 13 + 25 and p.x[-25:].tolist() == list(range(26, 51))
    assert p.x.tolist() == sorted(p.x.tolist())
    lines = render_chart([Series("t", p)], 30, 6)
    assert lines[-1].plain.split()[-1] == "50"


# ---------------------------------------------------------------------------------------------------------
# The plain renderer
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_rich", [False, pytest.param(True, marks=pytest.mark.skipif(not HAVE_RICH,
                                                                                          reason="no rich"))])
def test_plain_renderer_lines(use_rich, capsys):
    learner = FakeLearner([PlainReporter(use_rich=use_rich)], epochs=3, batches=4)
    assert learner.fit() == "finished"
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip() and set(line) != {"─"}]
    assert len(lines) == 5                                     # header, 3 epochs, summary
    assert lines[0].split() == ["epoch", "train_loss", "val_loss", "train_accuracy", "val_accuracy",
                                "lr", "time", "items/s"]
    h = learner.state.history
    for i, line in enumerate(lines[1:4]):
        cells = line.split()
        assert cells[0] == f"{i + 1}/3"
        assert float(cells[1]) == pytest.approx(h[i]["train_loss"], abs=1e-4)
        assert float(cells[4]) == pytest.approx(h[i]["val_accuracy"], abs=1e-4)
        assert cells[5:] == [f"{h[i]['lr']:.1e}", "500ms", "1,000"]
    assert lines[4].startswith("training done: 3 epochs, 12 steps")
    assert "best val_accuracy 0.7000 (epoch 3)" in lines[4]


def test_plain_renderer_progress_stop_and_helpers(capsys):
    stop_at_13 = OnBatch(lambda lr: lr.state.step == 13 and lr.request_stop("patience"))
    learner = FakeLearner([stop_at_13, PlainReporter(use_rich=False, progress_every=5)], epochs=2, batches=10)
    assert learner.fit() == "stopped"
    out = capsys.readouterr().out.splitlines()
    progress = [line for line in out if line.strip().startswith("step")]
    assert [line.split()[1] for line in progress] == ["5", "10"]
    assert "epoch 1 batch 5/10" in progress[0] and "items/s" in progress[0]
    assert out[-1].startswith("training stopped (patience): 1 epoch, 13 steps")
    assert metric_columns({"epoch": 1, "val_f1": 1, "train_loss": 2, "lr": 0.1, "val_loss": 3}) == \
        ["val_f1", "train_loss", "val_loss", "lr"]
    assert best_epoch([{"val_loss": 0.5}, {"val_loss": 0.3}, {"val_loss": 0.4}]) == ("val_loss", 0.3, 2)
    assert best_epoch([]) is None
    assert summary_line(TrainState()).startswith("training done: 0 epochs, 0 steps")
    assert summary_line(TrainState(), ValueError("nan loss")).startswith("training failed (ValueError: nan loss)")


# ---------------------------------------------------------------------------------------------------------
# The Textual app, driven by the pilot
# ---------------------------------------------------------------------------------------------------------
def run_pilot(coro_fn, bridge, size=(110, 34), **kw):
    """Run ``coro_fn(app, pilot, stops)`` in Textual's pilot; ``stops`` collects the app's on_stop calls."""
    stops: list[str] = []
    app = DashboardApp(bridge, on_stop=stops.append, poll_interval=3600, **kw)   # the test polls by hand

    async def main():
        async with app.run_test(size=size) as pilot:
            await coro_fn(app, pilot, stops)

    asyncio.run(main())
    return app, stops


@needs_textual
def test_app_widgets_follow_snapshots():
    from textual.widgets import Label, ProgressBar, Static

    bridge = Bridge(min_interval=0.0)

    def freeze(lr):
        if lr.state.step == 14:
            raise Freeze

    learner = FakeLearner([Capture(bridge), OnBatch(freeze)], epochs=3, batches=10)
    st = learner.state

    async def check(app, pilot, stops):
        app.poll()
        await pilot.pause()
        assert app.metrics == [] and "waiting" in str(app.query_one("#plot").render())
        with pytest.raises(Freeze):      # one epoch and 4 batches of the next, then stop there
            learner.fit()
        app.poll()
        await pilot.pause()
        assert app.metrics == ["loss", "accuracy"] and app.metric == "loss"
        assert app.series["loss"].x.tolist() == list(range(1, 15))
        assert app.value_rows[0][0] == "loss"
        assert float(app.value_rows[0][1]) == pytest.approx(st.train_running["loss"], abs=1e-4)
        assert float(app.value_rows[0][2]) == pytest.approx(st.last_train["loss"], abs=1e-4)
        assert float(app.value_rows[1][3]) == pytest.approx(st.last_val["accuracy"], abs=1e-4)
        info = dict(app.info_rows)
        assert info["items/s"] == "1,000" and info["lr"] == "9.0e-02" and "MiB" in info["memory"]
        bar = app.query_one("#epoch-bar", ProgressBar)
        assert (bar.progress, bar.total) == (4, 10)
        assert str(app.query_one("#epoch-info", Label).content).startswith("4/10")
        assert "items/s" in str(app.query_one("#epoch-info", Label).content)
        run_info = str(app.query_one("#run-info", Label).content)
        assert "epoch 2/3" in run_info and "ETA" in run_info
        assert app.query_one("#run-bar", ProgressBar).progress == round(1000 * 1.4 / 3)
        assert "epoch 2/3 · step 14" in str(app.query_one("#status", Static).content)
        assert app.val_points("loss") == [(10.0, pytest.approx(st.history[0]["val_loss"]))]
        assert app.query_one("#plotbox").border_title == "loss (1/2) · full history"
        rendered = str(app.query_one("#plot").render())
        assert "●" in rendered and any("\u2801" <= ch <= "\u28ff" for ch in rendered)

    run_pilot(check, bridge)


@needs_textual
def test_app_keys_switch_metric_and_mode():
    bridge, _ = trained_bridge(epochs=3, batches=100)

    async def keys(app, pilot, stops):
        app.poll()
        await pilot.pause()
        box = app.query_one("#plotbox")
        assert app.metric == "loss" and box.border_title == "loss (1/2) · full history"
        await pilot.press("right")
        assert app.metric == "accuracy" and box.border_title.startswith("accuracy (2/2)")
        await pilot.press("right")
        assert app.metric == "loss"
        await pilot.press("left")
        assert app.metric == "accuracy"
        await pilot.press("down")
        assert app.mode == "recent" and box.border_title == "accuracy (2/2) · recent: last 100 steps"
        plot = app.query_one("#plot")
        assert plot.x_range == (201, 300)
        await pilot.press("up")
        assert app.mode == "full" and box.border_title.endswith("full history") and plot.x_range is None
        shown = " ".join(b.description for b in app.BINDINGS)
        assert "metric" in shown and "recent" in shown and "quit" in shown

    run_pilot(keys, bridge)


@needs_textual
def test_app_quit_dialog_stop_cancel_kill():
    bridge, _ = trained_bridge(epochs=1, batches=5)

    async def dialog(app, pilot, stops):
        app.poll()
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.click("#cancel")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen) and stops == []
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen) and stops == []
        await pilot.press("ctrl+q")                 # Textual's own quit key asks too
        await pilot.pause()
        assert isinstance(app.screen, QuitScreen)
        await pilot.click("#stop")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen) and stops == ["user"] and app.stopping
        assert "stopping" in str(app.query_one("#status").content)
        assert app.is_running                        # it waits for training to end
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()

    app, stops = run_pilot(dialog, bridge)
    assert stops == ["user"] and app.return_value == "kill"


@needs_textual
def test_app_exits_when_training_done_and_captures_prints():
    bridge, _ = trained_bridge(epochs=1, batches=3)
    done = {"flag": False}

    async def finish(app, pilot, stops):
        print("hello from training")
        await pilot.pause()
        app.poll()
        assert app.is_running
        done["flag"] = True
        app.poll()
        await pilot.pause()

    app, _ = run_pilot(finish, bridge, is_done=lambda: done["flag"])
    assert app.return_value == "done"
    assert "hello from training" in app.captured


@needs_textual
def test_helpers_metric_names_and_progress():
    snap = Snapshot(train_running={"accuracy": 0.5, "loss": 1.0}, last_val={"confusion_matrix": [[1, 0], [0, 1]]},
                    history=[{"epoch": 1, "val_f1": 0.2, "val_confusion_matrix": [[1, 0], [0, 1]]}])
    assert metric_names(snap, []) == ["loss", "accuracy", "f1"]
    assert metric_names(snap, ["f1"]) == ["f1", "loss", "accuracy"]
    now = 1000.0
    snap = Snapshot(epoch=1, epochs=4, batch=5, batches_per_epoch=10, phase="train", started_at=now - 30,
                    epoch_started_at=now - 10, epoch_start_batch=0, history=[{"epoch_time": 20.0}])
    p = progress_info(snap, now)
    assert p["epoch_frac"] == 0.5 and p["run_frac"] == pytest.approx(1.5 / 4)
    assert p["epoch_eta"] == pytest.approx(10.0)          # 5 batches left at 2 s each
    assert p["run_eta"] == pytest.approx(10.0 + 2 * 20.0)  # plus two more epochs of 20 s
    assert p["elapsed"] == pytest.approx(30.0)


# ---------------------------------------------------------------------------------------------------------
# run_foreground (headless Textual app, real threads)
# ---------------------------------------------------------------------------------------------------------
@needs_textual
def test_run_foreground_returns_result(capsys):
    reporter = TuiReporter(headless=True, poll_interval=0.05)
    main = threading.current_thread()
    seen = []
    where = OnBatch(lambda lr: seen.append(threading.current_thread() is main))
    learner = FakeLearner([reporter, where], epochs=2, batches=5, delay=0.005)
    assert learner.fit() == "finished"
    assert seen and not any(seen)                      # training ran off the main thread
    out = capsys.readouterr().out
    assert "training done: 2 epochs, 10 steps" in out    # the summary left in the terminal afterwards
    assert reporter.app.return_value == "done"


@needs_textual
def test_run_foreground_reraises_training_error():
    reporter = TuiReporter(headless=True, poll_interval=0.05)
    learner = FakeLearner([reporter], epochs=2, batches=5, fail_at=3)
    with pytest.raises(ValueError, match="fake training failed") as info:
        learner.fit()
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_run_fit" in names                         # the training thread's frames are kept


@needs_textual
@pytest.mark.parametrize("how", ["crash", "no_start", "capture"])
def test_ui_failure_falls_back_to_plain(how, monkeypatch, capsys):
    gate = threading.Event()
    if how == "capture":           # copying the state fails on the training thread
        def broken_capture(self, state, force=False):
            raise RuntimeError("odd state")
        monkeypatch.setattr(Bridge, "capture", broken_capture)
        gate.set()
    elif how == "crash":
        def broken_apply(self, snap):
            gate.set()                   # let training go on only once the UI is up
            raise RuntimeError("widget exploded")
        monkeypatch.setattr(DashboardApp, "apply", broken_apply)
    else:
        def no_terminal(self, **kw):
            raise OSError("no terminal")
        monkeypatch.setattr(DashboardApp, "run", no_terminal)
        gate.set()
    reporter = TuiReporter(headless=True, poll_interval=0.05)
    learner = FakeLearner([reporter], epochs=3, batches=4, gate=gate)
    assert learner.fit() == "finished"                 # training survived the UI
    captured = capsys.readouterr()
    notice = [line for line in captured.err.splitlines() if line.startswith("ember: the dashboard stopped")]
    expected = {"crash": "RuntimeError: widget exploded", "no_start": "OSError: no terminal",
                "capture": "RuntimeError: odd state"}[how]
    assert len(notice) == 1 and expected in notice[0] and "plain output" in notice[0]
    rows = [line.split()[0] for line in captured.out.splitlines() if line.strip()[:1].isdigit()]
    assert rows == ["1/3", "2/3", "3/3"]               # the plain renderer caught up and finished
    assert "training done: 3 epochs, 12 steps" in captured.out


def test_stop_requested_before_fit_start_is_applied():
    reporter = TuiReporter(headless=True)
    reporter.request_stop("user")
    learner = FakeLearner([reporter], epochs=2, batches=5)
    assert learner._run_fit() == "stopped"             # hooks called directly: no UI needed
    assert learner.stop_calls == ["user"] and learner.state.step == 1


# ---------------------------------------------------------------------------------------------------------
# With the real Learner
# ---------------------------------------------------------------------------------------------------------
def small_learner(epochs=3, **kw):
    import ember
    from ember import nn
    from ember.train import Learner

    ember.manual_seed(0)
    x = ember.randn(96, 4)
    y = (x[:, 0] > 0).long()
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 96, 16)]
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return Learner(model, ember.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), batches,
                   batches[:2], epochs=epochs, **kw)


@pytest.mark.parametrize("kind", ["plain", "auto"])
def test_real_learner_plain(kind, capsys):
    learner = small_learner(dashboard=kind)           # "auto": pytest's stdout is no terminal -> plain
    _, history = learner.fit()
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip() and set(line) != {"─"}]
    assert lines[0].split()[:5] == ["epoch", "train_loss", "val_loss", "train_accuracy", "val_accuracy"]
    assert [line.split()[0] for line in lines[1:4]] == ["1/3", "2/3", "3/3"]
    for line, record in zip(lines[1:4], history.records):
        assert float(line.split()[2]) == pytest.approx(record["val_loss"], abs=1e-4)
    assert lines[-1].startswith("training done: 3 epochs, 18 steps")


@needs_textual
def test_real_learner_tui_stop_and_error(tmp_path, capsys):
    # The dialog's "stop cleanly" is reporter.request_stop("user"); here a callback presses it at step 8.
    reporter = TuiReporter(headless=True, poll_interval=0.05)
    press = OnBatch(lambda lr: lr.state.step == 8 and reporter.request_stop("user"))
    learner = small_learner(epochs=50, callbacks=[press, reporter], checkpoint_dir=tmp_path / "ck")
    model, history = learner.fit()                       # returns normally
    assert learner.state.stop_requested and learner.state.stop_reason == "user"
    assert learner.state.step < 50 * 6 and reporter.app.return_value == "done"
    assert reporter.last_checkpoint is not None and pathlib.Path(reporter.last_checkpoint).exists()
    out = capsys.readouterr().out
    assert "training stopped (user)" in out and "last checkpoint:" in out
    first_app = reporter.app
    press.fn = lambda lr: None
    _, history = learner.fit(epochs=2)                    # the same reporter serves a second fit
    assert len(history) == 2 and reporter.app is not first_app and reporter.app.return_value == "done"
    assert "training done: 2 epochs, 12 steps" in capsys.readouterr().out

    def bad_loss(output, target):
        raise FloatingPointError("loss went bad")

    learner = small_learner(epochs=2, callbacks=[TuiReporter(headless=True, poll_interval=0.05)])
    learner.loss_fn = bad_loss
    with pytest.raises(FloatingPointError, match="loss went bad") as info:
        learner.fit()
    assert "bad_loss" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]
