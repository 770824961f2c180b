"""Thread-safe snapshots of a ``TrainState`` for a UI running on another thread.

The training thread calls ``Bridge.capture(state)`` from its callback hooks; the call is cheap (it is
rate-limited, copies only the scalars and the *new* loss points) and never waits on the UI. The UI thread
calls ``Bridge.take()`` now and then and gets a ``Snapshot`` with the latest values plus every plot point
recorded since its previous ``take``.

>>> from ember.train import TrainState
>>> b = Bridge(min_interval=0.0)
>>> s = TrainState(epochs=2, step=3, step_losses=[(1, 0.9), (2, 0.7), (3, 0.6)])
>>> b.capture(s)
True
>>> snap = b.take()
>>> snap.step, snap.new_points["loss"]
(3, [(1, 0.9), (2, 0.7), (3, 0.6)])
>>> b.take() is None          # nothing new since the last take
True
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# Pending plot points per metric before the oldest are thinned out (a UI that stopped taking must not
# make the training process grow without bound).
MAX_PENDING = 100_000


@dataclass
class Snapshot:
    """What the UI needs for one redraw; every field is a plain value owned by the snapshot."""

    seq: int = 0
    captured_at: float = 0.0            # time.time() of the capture
    epoch: int = 0
    epochs: int = 0
    batch: int = 0
    batches_per_epoch: int | None = None
    step: int = 0
    items_epoch: int = 0
    items_total: int = 0
    phase: str = "idle"
    lr: float = 0.0
    items_per_sec: float = 0.0
    train_running: dict[str, float] = field(default_factory=dict)
    last_train: dict[str, float] = field(default_factory=dict)
    last_val: dict[str, float] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    started_at: float = 0.0
    stop_requested: bool = False
    stop_reason: str = ""
    epoch_started_at: float = 0.0       # when the current epoch began (or when we first saw it)
    epoch_start_batch: int = 0          # state.batch at that moment (non-zero after a mid-epoch resume)
    epoch_end_steps: dict[int, int] = field(default_factory=dict)  # 1-based epoch -> step at its end
    new_points: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # train points since last take
    events: list[str] = field(default_factory=list)  # messages since last take ("checkpoint written: ...")
    extra: dict[str, Any] = field(default_factory=dict)  # other plain scalar fields a Learner may add


_SCALARS = ("epoch", "epochs", "batch", "batches_per_epoch", "step", "items_epoch", "items_total", "phase",
            "lr", "items_per_sec", "started_at", "stop_requested", "stop_reason")
_KNOWN = set(_SCALARS) | {"train_running", "last_train", "last_val", "step_losses", "history"}


class Bridge:
    """Hands ``TrainState`` values from the training thread to a UI thread.

    ``min_interval`` (seconds) limits how often ``capture`` copies during training (batch ends);
    ``force=True`` captures regardless (epoch and validation boundaries, fit start and end).
    """

    def __init__(self, min_interval: float = 0.05) -> None:
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._last_capture = float("-inf")
        self._seq = 0
        self._taken_seq = 0
        self._latest: Snapshot | None = None
        self._pending: dict[str, list[tuple[int, float]]] = {}
        self._events: list[str] = []
        self._last_loss_step = float("-inf")     # newest step copied from state.step_losses
        self._last_running_step: dict[str, int] = {}
        self._history: list[dict[str, Any]] = []
        self._epoch_end_steps: dict[int, int] = {}
        self._epoch_seen = (-1, 0.0, 0)          # (epoch index, time it started, batch at that time)
        self.failure: BaseException | None = None  # set by the reporter when a capture raised

    # -- training thread -------------------------------------------------------------------------------
    def capture(self, state: Any, force: bool = False) -> bool:
        """Copy what changed in ``state``; returns False when skipped by the rate limit."""
        now = time.monotonic()
        if not force and now - self._last_capture < self.min_interval:
            return False
        self._last_capture = now
        snap = Snapshot(captured_at=time.time())
        for name in _SCALARS:
            if hasattr(state, name):
                setattr(snap, name, getattr(state, name))
        snap.train_running = dict(getattr(state, "train_running", {}) or {})
        snap.last_train = dict(getattr(state, "last_train", {}) or {})
        snap.last_val = dict(getattr(state, "last_val", {}) or {})
        # A Learner may extend TrainState (memory, ...): pass on any other plain scalar field.
        for name, value in getattr(state, "__dict__", {}).items():
            if name not in _KNOWN and not name.startswith("_") and isinstance(value, int | float | str | bool):
                snap.extra[name] = value
        points = self._new_points(state)
        history = getattr(state, "history", None) or []
        with self._lock:
            if snap.epoch != self._epoch_seen[0]:
                self._epoch_seen = (snap.epoch, snap.captured_at, snap.batch)
            snap.epoch_started_at, snap.epoch_start_batch = self._epoch_seen[1], self._epoch_seen[2]
            if len(history) != len(self._history):
                # Records are only appended (or all replaced on resume): copy the new ones.
                grew_by_one = len(history) == len(self._history) + 1
                if len(history) < len(self._history):
                    self._history = []
                self._history.extend(dict(r) for r in history[len(self._history):])
                if grew_by_one:
                    # The epoch just ended at this step; records loaded on resume get estimated positions.
                    last = self._history[-1]
                    self._epoch_end_steps[int(last.get("epoch", len(self._history)))] = snap.step
            snap.history = list(self._history)       # the records are shared read-only, the list is not
            snap.epoch_end_steps = dict(self._epoch_end_steps)
            for name, new in points.items():
                pend = self._pending.setdefault(name, [])
                pend.extend(new)
                if len(pend) > MAX_PENDING:
                    del pend[: len(pend) // 2 : 2]     # thin the older half
            self._seq += 1
            snap.seq = self._seq
            self._latest = snap
        return True

    def _new_points(self, state: Any) -> dict[str, list[tuple[int, float]]]:
        step = int(getattr(state, "step", 0))
        out: dict[str, list[tuple[int, float]]] = {}
        losses = getattr(state, "step_losses", None) or []
        if losses and losses[-1][0] < self._last_loss_step:
            self._last_loss_step = float("-inf")   # the run restarted from an earlier step: take it all
        # Walk back from the end to the first point already copied: O(new points), and robust to a
        # Learner that trims the list or restarts it.
        i = len(losses)
        while i > 0 and losses[i - 1][0] > self._last_loss_step:
            i -= 1
        if i < len(losses):
            out["loss"] = [(int(s), float(v)) for s, v in losses[i:]]
            self._last_loss_step = losses[-1][0]
        for name, value in (getattr(state, "train_running", None) or {}).items():
            if name == "loss" and losses:
                continue   # the per-step losses are the better curve
            if self._last_running_step.get(name) == step or not isinstance(value, int | float):
                continue
            self._last_running_step[name] = step
            out.setdefault(name, []).append((step, float(value)))
        return out

    def event(self, message: str) -> None:
        """Queue a message for the UI (checkpoint written, stop requested, ...)."""
        with self._lock:
            self._events.append(message)
            self._seq += 1
            if self._latest is not None:
                self._latest.seq = self._seq

    # -- UI thread -------------------------------------------------------------------------------------
    def take(self) -> Snapshot | None:
        """The latest snapshot with the points and events since the previous take; None if nothing new."""
        with self._lock:
            if self._seq == self._taken_seq:
                return None
            self._taken_seq = self._seq
            snap = self._latest if self._latest is not None else Snapshot()
            # Hand the pending points over and start new lists, so the snapshot owns what it holds.
            out = Snapshot(**{k: getattr(snap, k) for k in snap.__dataclass_fields__})
            out.new_points, self._pending = self._pending, {}
            out.events, self._events = self._events, []
            out.seq = self._seq
            return out


def process_memory() -> dict[str, float]:
    """Resident and peak memory of this process in bytes (best effort, {} where unknown)."""
    out: dict[str, float] = {}
    try:
        with open("/proc/self/statm") as f:
            out["rss"] = float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import resource

        peak = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        out["peak"] = peak if sys.platform == "darwin" else peak * 1024   # Linux reports KiB
        out["peak"] = max(out["peak"], out.get("rss", 0.0))   # the two are read at different moments
    except (ImportError, OSError):
        pass
    return out
