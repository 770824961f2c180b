"""Callback: hooks a ``Learner`` calls while it trains.

Every hook receives the learner; ``learner.state`` (a ``TrainState``) holds the progress and metric
values. Hooks run on the training thread, between steps, so they must be quick.

>>> class PrintEpochs(Callback):
...     def on_epoch_end(self, learner):
...         print(learner.state.epoch, learner.state.last_val.get("loss"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Callback:
    """Override the hooks you need; the defaults do nothing.

    A callback that must own the main thread (a terminal UI) sets ``wants_main_thread = True`` and
    implements ``run_foreground(train)``: it runs ``train()`` (the whole fit loop) on another thread,
    drives its UI on the calling thread, and returns ``train()``'s result or re-raises its exception.
    A failing UI must not stop training: it falls back to plain output and keeps waiting for ``train``.
    """

    wants_main_thread: bool = False

    def on_fit_start(self, learner: Any) -> None: ...
    def on_epoch_start(self, learner: Any) -> None: ...
    def on_batch_start(self, learner: Any) -> None: ...
    def on_batch_end(self, learner: Any) -> None: ...        # after each batch (and its optimizer step)
    def on_validation_start(self, learner: Any) -> None: ...
    def on_validation_end(self, learner: Any) -> None: ...   # state.last_val is filled
    def on_epoch_end(self, learner: Any) -> None: ...        # state.history[-1] is this epoch's record
    def on_checkpoint(self, learner: Any, path: str) -> None: ...
    def on_fit_end(self, learner: Any) -> None: ...          # also after a requested stop or an error
    def on_event(self, learner: Any, message: str) -> None: ...  # a line for the log: resumed, best, stop, ...

    def run_foreground(self, train: Callable[[], Any]) -> Any:
        return train()
