"""Progress reporting for ``Learner.fit``: the Textual dashboard and the plain line-per-epoch renderer.

``make_reporter(kind)`` returns the ``Callback`` a Learner appends for ``Learner(..., dashboard=kind)``:

* ``"tui"``: ``TuiReporter``, a live terminal dashboard (Textual; ``pip install "ember[tui]"``). It owns
  the main thread: ``fit`` calls ``run_foreground(train)``, which trains on a worker thread.
* ``"plain"``: ``PlainReporter``, one line per epoch (a rich table row when rich is installed).
* ``"auto"``: "tui" when stdout and stdin are a terminal and Textual imports, else "plain".

Nothing here imports Textual until a dashboard is actually made, so ``ember.train`` works without it.

>>> make_reporter("plain").wants_main_thread
False
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from ..callback import Callback
from .bridge import Bridge, Snapshot, process_memory  # noqa: F401
from .plain import PlainReporter, summary_line

__all__ = ["make_reporter", "TuiReporter", "PlainReporter", "Bridge", "Snapshot", "KILL_EXIT_CODE"]

KILL_EXIT_CODE = 130        # what a shell reports for a process ended by Ctrl+C (128 + SIGINT)
SUMMARY_ROWS = 20          # epochs re-printed as a table when the dashboard closes
TUI_HINT = 'the terminal dashboard needs Textual: pip install "ember[tui]"'


def textual_available() -> bool:
    try:
        import textual  # noqa: F401
    except ImportError:
        return False
    return True


def make_reporter(kind: str = "auto", **options: Any) -> Callback:
    """The progress callback for ``kind`` ("auto", "tui" or "plain"); ``options`` go to its constructor.

    >>> make_reporter("plain", use_rich=False).use_rich
    False
    """
    if kind == "auto":
        # The dashboard needs a terminal to draw on and to read keys from.
        tty = all(f is not None and f.isatty() for f in (sys.stdout, sys.stdin)) and os.environ.get("TERM") != "dumb"
        kind = "tui" if tty and textual_available() else "plain"
    if kind == "tui":
        if not textual_available():
            raise ImportError(TUI_HINT)
        return TuiReporter(**options)
    if kind == "plain":
        return PlainReporter(**options)
    raise ValueError(f'make_reporter: kind must be "auto", "tui" or "plain", got {kind!r}')


def _where(error: BaseException) -> str:
    """'ValueError: boom (app.py:123)' -- the innermost frame of the error, for a one-line notice."""
    frames = traceback.extract_tb(error.__traceback__)
    place = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{place}"


class TuiReporter(Callback):
    """The live terminal dashboard as a ``Callback`` that owns the main thread.

    ``run_foreground(train)`` runs ``train()`` on a worker thread (not a daemon: the process waits for
    it) and the Textual app on the calling thread. The hooks copy ``learner.state`` into a ``Bridge``
    (rate-limited, so training never waits on the UI); the app polls it every ``poll_interval`` seconds.
    When training ends the app exits and ``run_foreground`` returns ``train()``'s result, or re-raises
    its exception with its traceback.

    Quitting: ``q`` opens a dialog. "Stop training cleanly" calls ``learner.request_stop("user")``: the
    learner finishes the step, writes a checkpoint and ``fit`` returns normally; the app exits when it
    does. "Kill" restores the terminal and ends the process at once with ``os._exit(130)`` (no cleanup,
    no checkpoint; the last checkpoint on disk is what a resume starts from). After the dashboard is
    gone (or if it never started), Ctrl+C once requests a clean stop and twice kills.

    If the app crashes or cannot start, the terminal is restored, a one-line notice goes to stderr and
    the rest of the run is reported by a ``PlainReporter``: a UI failure never stops training.
    ``headless=True`` runs the app without a terminal (tests).
    """

    wants_main_thread = True

    def __init__(self, poll_interval: float = 0.2, recent_steps: int | None = None, headless: bool = False,
                 max_captures_per_sec: float = 20.0) -> None:
        self.poll_interval = poll_interval
        self.recent_steps = recent_steps
        self.headless = headless
        self.bridge = Bridge(min_interval=1.0 / max_captures_per_sec)
        self.app: Any = None
        self.last_checkpoint: str | None = None
        self._learner: Any = None
        self._plain: PlainReporter | None = None   # set once the UI has failed
        self._pending_stop: str | None = None
        self._lock = threading.Lock()

    # -- hooks (training thread) -----------------------------------------------------------------------
    def _hook(self, name: str, learner: Any, force: bool) -> None:
        with self._lock:
            self._learner = learner
            pending, self._pending_stop = self._pending_stop, None
        if pending is not None:
            learner.request_stop(pending)
        plain = self._plain
        if plain is not None:
            getattr(plain, name)(learner)
            return
        try:
            self.bridge.capture(learner.state, force=force)
        except Exception as error:
            # Never let the dashboard break training: the app sees the failure and falls back to plain.
            self.bridge.failure = error

    def on_fit_start(self, learner: Any) -> None:
        self._hook("on_fit_start", learner, True)

    def on_epoch_start(self, learner: Any) -> None:
        self._hook("on_epoch_start", learner, True)

    def on_batch_end(self, learner: Any) -> None:
        self._hook("on_batch_end", learner, False)

    def on_validation_start(self, learner: Any) -> None:
        self._hook("on_validation_start", learner, True)

    def on_validation_end(self, learner: Any) -> None:
        self._hook("on_validation_end", learner, True)

    def on_epoch_end(self, learner: Any) -> None:
        self._hook("on_epoch_end", learner, True)

    def on_checkpoint(self, learner: Any, path: str) -> None:
        self.last_checkpoint = str(path)
        plain = self._plain
        if plain is not None:
            plain.on_checkpoint(learner, path)
        else:
            self.bridge.event(f"checkpoint written: {path}")

    def on_fit_end(self, learner: Any) -> None:
        self._hook("on_fit_end", learner, True)

    def on_event(self, learner: Any, message: str) -> None:
        plain = self._plain
        if plain is not None:
            plain.on_event(learner, message)
        else:
            self.bridge.event(message)

    def request_stop(self, reason: str = "user") -> None:
        """Ask the learner to stop after its current step (before fit has started: as soon as it does)."""
        with self._lock:
            learner = self._learner
            if learner is None:
                self._pending_stop = reason
        if learner is not None:
            learner.request_stop(reason)

    # -- main thread -----------------------------------------------------------------------------------
    def run_foreground(self, train: Callable[[], Any]) -> Any:
        outcome: dict[str, Any] = {}
        done = threading.Event()
        # A fresh start for every fit (a Learner may call fit again with the same reporter).
        self.bridge = Bridge(min_interval=self.bridge.min_interval)
        self.app, self._plain, self.last_checkpoint = None, None, None

        def target() -> None:
            try:
                outcome["result"] = train()
            except BaseException as error:    # handed to the caller's thread below
                outcome["error"] = error
            finally:
                done.set()

        thread = threading.Thread(target=target, name="ember-train", daemon=False)
        thread.start()
        try:
            result, failure = self._run_app(done)
        except KeyboardInterrupt as interrupt:   # Ctrl+C before the app had the terminal in raw mode
            self.request_stop("interrupted")
            result, failure = None, interrupt
        if result == "kill":
            self._kill()
        if failure is not None or not done.is_set():
            reason = _where(failure) if failure is not None else "it closed before training ended"
            self._fall_back(f"ember: the dashboard stopped ({reason}); training continues with plain output")
        self._replay_output()
        self._wait(thread)
        if self._plain is None and self._learner is not None and "error" not in outcome:
            self._print_summary()
        if "error" in outcome:
            error = outcome.pop("error")
            raise error       # keeps its traceback (from the training thread), adds this frame
        return outcome.get("result")

    def _run_app(self, done: threading.Event) -> tuple[Any, BaseException | None]:
        """Run the Textual app until it exits; returns (its result, the failure that ended it or None)."""
        try:
            from .app import DashboardApp

            self.app = DashboardApp(self.bridge, on_stop=self.request_stop, is_done=done.is_set,
                                    recent_steps=self.recent_steps, poll_interval=self.poll_interval)
            result = self.app.run(headless=self.headless)
        except Exception as error:          # cannot start (no terminal, import error, ...) or crashed
            return None, error
        failure = self.app.failure
        if failure is None and self.app.return_code not in (0, None):
            failure = RuntimeError(f"the app exited with code {self.app.return_code}")
        return result, failure

    def _fall_back(self, notice: str) -> None:
        """Switch the rest of the run to the plain renderer; it catches up on the epochs printed so far."""
        print(notice, file=sys.stderr, flush=True)
        if os.environ.get("EMBER_DASHBOARD_DEBUG") and self.app is not None and self.app.failure is not None:
            traceback.print_exception(self.app.failure)
        plain = PlainReporter()
        self._plain = plain

    def _replay_output(self) -> None:
        """Print what the training code printed while the app owned the terminal (it was only shown there)."""
        captured = list(getattr(self.app, "captured", []) or [])
        partial = getattr(self.app, "_partial", {})
        captured += [text for text in partial.values() if text]
        for line in captured:
            print(line, flush=True)

    def _wait(self, thread: threading.Thread) -> None:
        interrupted = False
        while thread.is_alive():
            try:
                thread.join(0.25)
            except KeyboardInterrupt:
                if interrupted:
                    self._kill()
                interrupted = True
                print("ember: stopping after the current step (Ctrl+C again kills)", file=sys.stderr, flush=True)
                self.request_stop("interrupted")
        plain = self._plain
        if plain is not None and not plain.ended and self._learner is not None:
            plain.on_fit_end(self._learner)   # training ended before the fallback saw it: finish the output

    def _print_summary(self) -> None:
        """After the app has gone: leave the per-epoch table and a summary line in the terminal."""
        plain = PlainReporter()
        state = self._learner.state
        records = list(state.history)
        if len(records) > SUMMARY_ROWS:
            print(f"... {len(records) - SUMMARY_ROWS} earlier epochs not shown", flush=True)
        for record in records[-SUMMARY_ROWS:]:
            plain.print_row(record, state.epochs)
        print(summary_line(state), flush=True)
        if self.last_checkpoint:
            print(f"last checkpoint: {self.last_checkpoint}", flush=True)

    def _kill(self) -> None:
        try:
            sys.stdout.flush()
        finally:
            print(f"ember: training killed from the dashboard (exit status {KILL_EXIT_CODE})",
                  file=sys.stderr, flush=True)
            os._exit(KILL_EXIT_CODE)
