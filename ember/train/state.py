"""TrainState: what a running ``Learner`` exposes to callbacks and the dashboard.

The Learner owns one ``TrainState`` (``learner.state``) and updates it in place as it trains; callbacks
read it in their hooks. Everything here is plain Python (floats, ints, dicts, lists), so a reporter can
copy a snapshot to another thread without touching tensors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrainState:
    epoch: int = 0                      # index of the current epoch, 0-based
    epochs: int = 0                     # epochs this fit runs to (the last epoch index is epochs - 1)
    batch: int = 0                      # batches finished in the current epoch
    batches_per_epoch: int | None = None  # len(train_loader) when known
    step: int = 0                       # optimizer steps taken over the whole run
    items_epoch: int = 0                # examples seen in the current epoch
    items_total: int = 0                # examples seen over the whole run
    phase: str = "idle"                 # "idle" | "train" | "validate" | "done"
    lr: float = 0.0                     # current learning rate of the first param group
    items_per_sec: float = 0.0          # training throughput over the recent batches
    train_running: dict[str, float] = field(default_factory=dict)  # running means this epoch
    last_train: dict[str, float] = field(default_factory=dict)     # last finished epoch's train metrics
    last_val: dict[str, float] = field(default_factory=dict)       # last validation's metrics
    step_losses: list[tuple[int, float]] = field(default_factory=list)  # (step, loss) for live plots
    history: list[dict[str, Any]] = field(default_factory=list)  # one record per finished epoch
    started_at: float = field(default_factory=time.time)
    stop_requested: bool = False        # set by learner.request_stop(); honoured after the current step
    stop_reason: str = ""
