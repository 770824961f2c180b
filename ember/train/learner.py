"""Learner: trains and validates a model, with metrics, checkpoints, logs and callbacks.

>>> import ember
>>> from ember import nn
>>> _ = ember.manual_seed(0)
>>> x, y = ember.randn(64, 4), ember.randint(0, 3, (64,))
>>> batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
>>> model = nn.Linear(4, 3)
>>> learner = Learner(model, ember.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
...                   batches, batches, epochs=2)
>>> model, history = learner.fit()
>>> len(history), sorted(history[0])[:3]
(2, ['cpu_memory_mb', 'epoch', 'epoch_time'])

Batches are ``(input, target)`` pairs by default; ``forward_fn(model, batch) -> (output, target)``
handles any other batch layout, and ``step_fn(model, batch)`` computes the loss itself (returning
the loss, or ``(loss, output, target)`` / a dict with those keys for the metrics).
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor
from .callback import Callback
from .callbacks import EarlyStopping, missing_metric_error
from .checkpoint import Checkpointer, capture_rng, restore_rng
from .history import History, default_mode
from .metrics import CpuMemory, GpuMemory, Loss, Metric, Throughput, get_metric, to_numpy
from .resume import learner_payload, resume_learner
from .state import TrainState

__all__ = ["Learner"]

_AMP = {None: None, "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
        "half": "float16"}


def _to_device(obj: Any, device: Any) -> Any:
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_to_device(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(v, device) for v in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _first_tensor(obj: Any) -> Tensor | None:
    if isinstance(obj, Tensor):
        return obj
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    for v in items:
        t = _first_tensor(v)
        if t is not None:
            return t
    return None


def _length(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None


class Learner:
    """Fit a model: the training loop, validation, metrics, checkpoints, logs and callbacks.

    model, optimizer, loss_fn: as in a hand-written loop (``loss_fn(output, target)`` returns a scalar).
    train_loader, val_loader: iterables of batches (``ember.data.DataLoader`` or anything iterable;
    a loader with ``state_dict``/``load_state_dict`` resumes mid-epoch exactly).
    epochs: epochs ``fit`` runs to. scheduler: an ``ember.optim.lr_scheduler`` scheduler, stepped every
    epoch or every optimizer step (``scheduler_step``); ``ReduceLROnPlateau`` gets the ``monitor`` value.
    metrics: names ("accuracy", "top5_accuracy", "precision", "recall", "f1", "auroc",
    "confusion_matrix", "perplexity") or :class:`~ember.train.metrics.Metric` objects; the loss,
    learning rate, throughput and memory are always recorded. ``train_metrics=False`` computes the
    metrics on validation only.
    grad_accum_steps: batches per optimizer step (the loss is averaged over them).
    clip_grad_norm / clip_grad_value: clip gradients before each step.
    amp: None, "bfloat16" (autocast) or "float16" (autocast and a GradScaler).
    device: moves the model and every batch there.
    checkpoint_dir: where checkpoints go; ``checkpoint_every_epochs`` (default 1) and
    ``checkpoint_every_steps`` say when; ``keep_last`` periodic ones and the ``keep_best`` best by
    ``monitor`` (mode "min", "max" or "auto") are kept. early_stopping: a patience in epochs on
    ``monitor``, or an :class:`EarlyStopping`. log_dir: CSV, JSON lines, experiment.log and PNG plots.
    dashboard: None, "auto", "tui" or "plain" (``ember.train.dashboard``). seed: seeds ember, ``random``
    and numpy at the start of a fresh ``fit``.
    """

    def __init__(self, model: Any, optimizer: Any, loss_fn: Callable | None, train_loader: Iterable,
                 val_loader: Iterable | None = None, *, epochs: int = 1, scheduler: Any = None,
                 scheduler_step: str = "epoch", metrics: Sequence[str | Metric] = ("accuracy",),
                 train_metrics: bool = True, grad_accum_steps: int = 1, clip_grad_norm: float | None = None,
                 clip_grad_value: float | None = None, amp: str | None = None, device: Any = None,
                 callbacks: Sequence[Callback] = (), checkpoint_dir: str | os.PathLike | None = None,
                 checkpoint_every_epochs: int | None = 1, checkpoint_every_steps: int | None = None,
                 keep_last: int | None = 3, keep_best: int = 1, monitor: str | None = None, mode: str = "auto",
                 early_stopping: int | EarlyStopping | None = None, log_dir: str | os.PathLike | None = None,
                 dashboard: str | None = None, seed: int | None = None,
                 forward_fn: Callable[[Any, Any], tuple[Any, Any]] | None = None,
                 step_fn: Callable[[Any, Any], Any] | None = None):
        from ..optim.lr_scheduler import ReduceLROnPlateau
        if loss_fn is None and step_fn is None:
            raise TypeError("Learner: pass a loss_fn (or a step_fn that computes the loss)")
        if scheduler_step not in ("epoch", "step"):
            raise ValueError(f"Learner: scheduler_step must be 'epoch' or 'step', got {scheduler_step!r}")
        if isinstance(scheduler, ReduceLROnPlateau) and scheduler_step == "step":
            raise ValueError("Learner: ReduceLROnPlateau steps on a validation metric, once per epoch; use "
                             "scheduler_step='epoch'")
        if amp not in _AMP:
            raise ValueError(f"Learner: amp must be None, 'bfloat16' or 'float16', got {amp!r}")
        if int(grad_accum_steps) < 1:
            raise ValueError(f"Learner: grad_accum_steps must be >= 1, got {grad_accum_steps}")
        for name, v in (("epochs", epochs), ("checkpoint_every_epochs", checkpoint_every_epochs),
                        ("checkpoint_every_steps", checkpoint_every_steps)):
            if v is not None and int(v) < 1:
                raise ValueError(f"Learner: {name} must be >= 1, got {v}")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.train_loader, self.val_loader = train_loader, val_loader
        self.epochs = int(epochs)
        self.scheduler, self.scheduler_step = scheduler, scheduler_step
        self._plateau = isinstance(scheduler, ReduceLROnPlateau)
        self.metrics: list[Metric] = []
        for spec in metrics:
            m = get_metric(spec)
            if m is not None:
                if m.name == "loss" or any(o.name == m.name for o in self.metrics):
                    raise ValueError(f"Learner: two metrics are named {m.name!r}; give one a different name=")
                self.metrics.append(m)
        self.train_metrics = bool(train_metrics)
        self.grad_accum_steps = int(grad_accum_steps)
        self.clip_grad_norm, self.clip_grad_value = clip_grad_norm, clip_grad_value
        self.amp = _AMP[amp]
        self.device = None
        if device is not None:
            from .._device import device as as_device
            self.device = as_device(device)
            self.model.to(self.device)
        self.scaler = None
        if self.amp == "float16":
            from ..amp import GradScaler
            self.scaler = GradScaler(self._device_type())
        self.forward_fn, self.step_fn = forward_fn, step_fn
        self.seed = seed
        self.monitor = monitor or ("val_loss" if val_loader is not None else "train_loss")
        self.mode = default_mode(self.monitor) if mode == "auto" else mode
        if self.mode not in ("min", "max"):
            raise ValueError(f"Learner: mode must be 'min', 'max' or 'auto', got {mode!r}")
        self.checkpoint_every_epochs = checkpoint_every_epochs
        self.checkpoint_every_steps = checkpoint_every_steps
        self.checkpointer = Checkpointer(checkpoint_dir, keep_last, keep_best) if checkpoint_dir is not None else None
        self.callbacks: list[Any] = list(callbacks)
        if early_stopping is not None:
            es = early_stopping if isinstance(early_stopping, EarlyStopping) else \
                EarlyStopping(self.monitor, int(early_stopping), self.mode)
            self.callbacks.append(es)
        self.log_dir = None if log_dir is None else os.fspath(log_dir)
        if self.log_dir is not None:
            from .loggers import CSVLogger, ExperimentLog, JSONLLogger
            from .plots import PlotWriter
            self.callbacks += [CSVLogger(os.path.join(self.log_dir, "metrics.csv")),
                               JSONLLogger(os.path.join(self.log_dir, "metrics.jsonl")),
                               PlotWriter(self.log_dir), ExperimentLog(os.path.join(self.log_dir, "experiment.log"))]
        self.dashboard = dashboard
        self._reporter_added = False
        self.state = TrainState()
        self.history = History()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._gpu = GpuMemory()
        self._reset_run()

    # ---- public API -----------------------------------------------------------------------------
    def fit(self, epochs: int | None = None, resume: bool | str | os.PathLike = False) -> tuple[Any, History]:
        """Train to ``epochs`` (default: the constructor's) and return ``(model, history)``.

        ``resume=True`` continues from the newest checkpoint in ``checkpoint_dir``; a path (a file, or
        a directory to take the newest from) continues from that checkpoint. Without ``resume`` a fit
        starts a new run (the model keeps its current weights).
        """
        if epochs is not None:
            if int(epochs) < 1:
                raise ValueError(f"Learner.fit: epochs must be >= 1, got {epochs}")
            self.epochs = int(epochs)
        self._reset_run()
        if resume is not False and resume is not None:
            self._resume(resume)
        elif self.seed is not None:
            from .._random import manual_seed
            manual_seed(self.seed)
            random.seed(self.seed)
            np.random.seed(self.seed % 2**32)
        self._add_reporter()
        for cb in self.callbacks:
            if getattr(cb, "wants_main_thread", False):
                return cb.run_foreground(self._run_fit)
        return self._run_fit()

    def evaluate(self, loader: Iterable | None = None) -> dict[str, Any]:
        """Loss and metrics over ``loader`` (default: the validation loader), in eval mode without
        gradients. Returns ``{"loss": ..., "accuracy": ..., ...}``; non-scalar metrics are numpy arrays."""
        loader = self.val_loader if loader is None else loader
        if loader is None:
            raise ValueError("Learner.evaluate: no loader given and the Learner has no val_loader")
        scalars, arrays = self._evaluate(loader, "evaluate")
        return {**scalars, **arrays}

    def predict(self, loader: Iterable) -> Tensor:
        """The model's outputs over ``loader``, concatenated along dim 0 (eval mode, no gradients).
        Batches may be inputs alone or ``(input, ...)`` tuples; with ``forward_fn`` its output is used."""
        from .._movement import cat
        from ..autograd.grad_mode import no_grad
        outs = []
        was_training = getattr(self.model, "training", True)
        self.model.eval()
        rng = capture_rng()
        try:
            with no_grad(), self._autocast():
                for batch in loader:
                    batch = self._move(batch)
                    if self.forward_fn is not None:
                        out = self.forward_fn(self.model, batch)[0]
                    else:
                        out = self.model(batch[0] if isinstance(batch, (list, tuple)) else batch)
                    outs.append(out.detach())
        finally:
            restore_rng(rng)
            self.model.train(was_training)
        if not outs:
            raise ValueError("Learner.predict: the loader yielded no batches")
        return cat(outs, 0)

    @property
    def error(self) -> BaseException | None:
        """The exception that ended the last ``fit``, or None (reporters say "training failed" with it)."""
        return self._error

    def request_stop(self, reason: str = "") -> None:
        """Ask training to stop after the current optimizer step (thread-safe). A checkpoint is written
        when a checkpoint directory is configured, ``on_fit_end`` runs and ``fit`` returns normally."""
        if not self._stop.is_set():
            self.state.stop_reason = reason or "stop requested"
            self._stop.set()
        self.state.stop_requested = True

    def log_event(self, message: str) -> None:
        """Send a line to every callback's ``on_event`` (the experiment log, the dashboard)."""
        if self._pending_events is not None:   # before on_fit_start: held until the loggers have started
            self._pending_events.append(message)
            return
        self._call("on_event", message)

    def metric_keys(self) -> list[str]:
        """The scalar keys every history record of this learner will have."""
        names = ["loss"] + [m.name for m in self.metrics if m.scalar]
        keys = ["epoch"] + [f"train_{n}" for n in (names if self.train_metrics else ["loss"])]
        if self.val_loader is not None:
            keys += [f"val_{n}" for n in names]
        keys += ["lr", "epoch_time", "items_per_sec", "cpu_memory_mb"]
        if self._gpu.available():
            keys.append("gpu_memory_mb")
        return keys

    def config(self) -> dict[str, Any]:
        """The run's settings as plain values (written to experiment.log)."""
        opt = self.optimizer
        params = sum(int(p.numel()) for p in self.model.parameters())
        return {"model": type(self.model).__name__, "parameters": params, "model_repr": repr(self.model),
                "optimizer": type(opt).__name__,
                "optimizer_defaults": {k: v for k, v in getattr(opt, "defaults", {}).items()
                                       if isinstance(v, (int, float, str, bool, tuple, type(None)))},
                "loss_fn": type(self.loss_fn).__name__ if self.loss_fn is not None else None,
                "scheduler": type(self.scheduler).__name__ if self.scheduler is not None else None,
                "scheduler_step": self.scheduler_step, "epochs": self.epochs,
                "metrics": [m.name for m in self.metrics], "grad_accum_steps": self.grad_accum_steps,
                "clip_grad_norm": self.clip_grad_norm, "clip_grad_value": self.clip_grad_value, "amp": self.amp,
                "device": str(self.device) if self.device is not None else None, "seed": self.seed,
                "batches_per_epoch": _length(self.train_loader),
                "val_batches": _length(self.val_loader) if self.val_loader is not None else None,
                "monitor": self.monitor, "mode": self.mode,
                "checkpoint_dir": self.checkpointer.directory if self.checkpointer else None,
                "checkpoint_every_epochs": self.checkpoint_every_epochs,
                "checkpoint_every_steps": self.checkpoint_every_steps}

    # ---- setup ----------------------------------------------------------------------------------
    def _reset_run(self) -> None:
        st = self.state
        fresh = TrainState()
        for k, v in vars(fresh).items():
            setattr(st, k, v)
        st.epochs = self.epochs
        st.batches_per_epoch = _length(self.train_loader)
        self.history = History()
        st.history = self.history.records
        self._stop.clear()
        self._error = None
        self._train_loss = Loss()
        self._train_metrics = self._fresh_metrics()
        self._epoch_train_time = 0.0
        self._group_losses: list[float] = []
        self._loader_positioned = True   # False after resuming mid-epoch without a saved loader position
        if self.checkpointer is not None:
            self.checkpointer.best = []
        self._last_ckpt_step: tuple[int, int] | None = None
        self._pending_events: list[str] | None = []

    def _fresh_metrics(self) -> list[Metric]:
        out = []
        for m in self.metrics:
            c = copy.deepcopy(m)
            c.reset()
            out.append(c)
        return out

    def _add_reporter(self) -> None:
        if self.dashboard is None or self._reporter_added:
            return
        from .dashboard import make_reporter
        self.callbacks.append(make_reporter(self.dashboard))
        self._reporter_added = True

    def _device_type(self) -> str:
        if self.device is not None:
            return self.device.type
        for p in self.model.parameters():
            return p.device.type
        return "cpu"

    def _autocast(self):
        if self.amp is None:
            return contextlib.nullcontext()
        from .. import _dtype as dt
        from ..amp import autocast
        return autocast(self._device_type(), dtype=dt.bfloat16 if self.amp == "bfloat16" else dt.float16)

    def _move(self, batch: Any) -> Any:
        return batch if self.device is None else _to_device(batch, self.device)

    def _call(self, hook: str, *args: Any) -> None:
        for cb in list(self.callbacks):
            fn = getattr(cb, hook, None)
            if fn is not None:
                fn(self, *args)

    def _lr(self) -> float:
        return float(to_numpy(self.optimizer.param_groups[0]["lr"]))

    # ---- the loop -------------------------------------------------------------------------------
    def _run_fit(self) -> tuple[Any, History]:
        st = self.state
        st.epochs = self.epochs
        st.lr = self._lr()
        try:
            self._check_monitor()
            self._call("on_fit_start")
            pending, self._pending_events = self._pending_events or [], None
            for message in pending:
                self._call("on_event", message)
            self.optimizer.zero_grad(set_to_none=True)
            while st.epoch < self.epochs and not self._stop.is_set():
                self._call("on_epoch_start")
                stopped = self._train_epoch()
                if stopped:
                    break
                self._end_epoch()
            if self._stop.is_set():
                self.log_event(f"stop: {st.stop_reason}")
                self._checkpoint_now()
            elif self.checkpointer is not None and self.history.records:
                self._checkpoint_now()   # the final state, so fit(resume=True) can extend the run
        except BaseException as e:
            self._error = e
            raise
        finally:
            st.phase = "done"
            self._call("on_fit_end")
        return self.model, self.history

    def _check_monitor(self) -> None:
        if self.checkpointer is None and not self._plateau:
            return
        keys = self.metric_keys()
        if self.monitor not in keys:
            raise missing_metric_error("Learner", self.monitor, keys)

    def _forward(self, batch: Any) -> tuple[Tensor, Any, Any]:
        """(loss, output, target) for one batch; output and target are None when a step_fn gives only a loss."""
        if self.step_fn is not None:
            r = self.step_fn(self.model, batch)
            if isinstance(r, dict):
                loss, out, tgt = r["loss"], r.get("output"), r.get("target")
            elif isinstance(r, (tuple, list)):
                if len(r) != 3:
                    raise ValueError(f"Learner: step_fn must return a loss, (loss, output, target) or a dict; got a "
                                     f"{type(r).__name__} of {len(r)}")
                loss, out, tgt = r
            else:
                loss, out, tgt = r, None, None
        else:
            if self.forward_fn is not None:
                out, tgt = self.forward_fn(self.model, batch)
            else:
                if not isinstance(batch, (tuple, list)) or len(batch) != 2:
                    what = f"a {type(batch).__name__}" + (f" of {len(batch)}" if isinstance(batch, (tuple, list))
                                                          else "")
                    raise TypeError(f"Learner: batches must be (input, target) pairs, got {what}; pass "
                                    "forward_fn=lambda model, batch: (output, target) or a step_fn for other layouts")
                x, tgt = batch
                out = self.model(x)
            loss = self.loss_fn(out, tgt)
        if not isinstance(loss, Tensor):
            raise TypeError(f"Learner: the loss must be an ember tensor, got {type(loss).__name__}")
        if loss.numel() != 1:
            raise ValueError(f"Learner: the loss must be a scalar (one element), got shape {tuple(loss.shape)}; "
                             "use a reduction such as 'mean'")
        return loss, out, tgt

    @staticmethod
    def _count(batch: Any, target: Any) -> int:
        t = target if isinstance(target, Tensor) and target.ndim > 0 else _first_tensor(batch)
        if isinstance(t, Tensor) and t.ndim > 0:
            return int(t.shape[0])
        try:
            return len(target)
        except TypeError:
            return 1

    def _update_metrics(self, metrics: list[Metric], out: Any, tgt: Any, who: str) -> None:
        if not metrics:
            return
        if out is None or tgt is None:
            raise ValueError(f"Learner: {who} metrics ({', '.join(m.name for m in metrics)}) need the output and "
                             "target, but step_fn returned only a loss; return (loss, output, target) or pass "
                             "metrics=()")
        for m in metrics:
            m.update(out, tgt)

    def _train_epoch(self) -> bool:
        """One epoch of training (from the resume position when resuming); True when a stop was honoured."""
        st = self.state
        st.phase = "train"
        self.model.train()
        n_batches = _length(self.train_loader)
        st.batches_per_epoch = n_batches
        done_before = st.batch
        if done_before == 0:
            self._train_loss.reset()
            for m in self._train_metrics:
                m.reset()
            st.items_epoch = 0
            st.train_running = {}
            self._epoch_train_time = 0.0
        resumable = self._loader_positioned
        self._loader_positioned = True     # after this epoch every loader is where the next epoch starts
        if done_before and not resumable and n_batches is not None and done_before >= n_batches:
            return self._stop.is_set()
        # a resumable loader continues from its saved position (yielding nothing when that was the end of
        # the epoch, which moves it on to the next one); a plain iterable replays the epoch up to there
        it = iter(self.train_loader)
        if done_before and not resumable:
            for _ in range(done_before):
                next(it, None)
        accum = self.grad_accum_steps
        window: deque[tuple[float, int]] = deque(maxlen=20)
        t_prev = time.perf_counter()
        window.append((t_prev, 0))
        scalar_metrics = [m for m in self._train_metrics if m.running and m.scalar] if self.train_metrics else []
        for batch in it:
            self._call("on_batch_start")
            batch = self._move(batch)
            pos = st.batch % accum
            # the last group of an epoch may be shorter: its batches are averaged over its own size
            group = accum if n_batches is None else max(1, min(accum, n_batches - (st.batch - pos)))
            with self._autocast():
                loss, out, tgt = self._forward(batch)
            value = float(loss.detach().float().item())
            scaled = loss / group if group > 1 else loss
            (self.scaler.scale(scaled) if self.scaler is not None else scaled).backward()
            n = self._count(batch, tgt)
            self._train_loss.update(value, n)
            if self.train_metrics:
                self._update_metrics(self._train_metrics, out, tgt, "train")
            self._group_losses.append(value)
            st.batch += 1
            st.items_epoch += n
            st.items_total += n
            stepped = len(self._group_losses) == group
            if stepped:
                self._optimizer_step()
            now = time.perf_counter()
            self._epoch_train_time += now - t_prev
            t_prev = now
            window.append((now, st.items_epoch))
            span = window[-1][0] - window[0][0]
            st.items_per_sec = (window[-1][1] - window[0][1]) / span if span > 0 else 0.0
            st.lr = self._lr()
            st.train_running = {"loss": self._train_loss.compute(),
                                **{m.name: float(m.compute()) for m in scalar_metrics}}
            self._call("on_batch_end")
            if stepped and self._after_step(n_batches):
                return True
        if st.batch == done_before and done_before == 0:
            raise ValueError(f"Learner: the train loader yielded no batches in epoch {st.epoch + 1}")
        if self._group_losses:      # an iterable of unknown length ended inside an accumulation group
            self._optimizer_step()
            if self._after_step(n_batches):
                return True
        return False

    def _optimizer_step(self) -> None:
        from ..nn.utils import clip_grad_norm_, clip_grad_value_
        st = self.state
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        if self.scaler is not None and (self.clip_grad_norm is not None or self.clip_grad_value is not None):
            self.scaler.unscale_(self.optimizer)
        if self.clip_grad_norm is not None:
            clip_grad_norm_(params, self.clip_grad_norm)
        if self.clip_grad_value is not None:
            clip_grad_value_(params, self.clip_grad_value)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.scheduler is not None and self.scheduler_step == "step":
            self.scheduler.step()
        st.step += 1
        st.step_losses.append((st.step, sum(self._group_losses) / len(self._group_losses)))
        self._group_losses = []

    def _after_step(self, n_batches: int | None) -> bool:
        """Step checkpoints and the stop check; True when training must stop now."""
        st = self.state
        every = self.checkpoint_every_steps
        last_of_epoch = n_batches is not None and st.batch >= n_batches
        # a checkpoint due on the epoch's last batch waits for the epoch end (after validation), so a
        # resumed run never has to restart on an exhausted epoch
        if self.checkpointer is not None and every and st.step % every == 0 and not last_of_epoch:
            self._checkpoint_now()
        if self._stop.is_set():
            return True
        return False

    def _end_epoch(self) -> None:
        st = self.state
        train_scalars, train_arrays = self._results(self._train_loss, self._train_metrics if self.train_metrics
                                                    else [])
        st.last_train = train_scalars
        val_scalars, val_arrays = {}, {}
        val_time = 0.0
        if self.val_loader is not None:
            st.phase = "validate"
            self._call("on_validation_start")
            t0 = time.perf_counter()
            val_scalars, val_arrays = self._evaluate(self.val_loader, "validation")
            val_time = time.perf_counter() - t0
            st.last_val = val_scalars
            self._call("on_validation_end")
        record: dict[str, Any] = {"epoch": st.epoch + 1}
        record.update({f"train_{k}": v for k, v in train_scalars.items()})
        record.update({f"val_{k}": v for k, v in val_scalars.items()})
        tp = Throughput()
        tp.update(st.items_epoch, self._epoch_train_time)
        record.update({"lr": self._lr(), "epoch_time": self._epoch_train_time + val_time,
                       "items_per_sec": tp.compute(), "cpu_memory_mb": CpuMemory().compute()})
        gpu = self._gpu.compute()
        if gpu is not None:
            record["gpu_memory_mb"] = gpu
        arrays = {f"train_{k}": v for k, v in train_arrays.items()}
        arrays.update({f"val_{k}": v for k, v in val_arrays.items()})
        self.history.append(record, arrays)
        if self.scheduler is not None and self.scheduler_step == "epoch":
            if self._plateau:
                self.scheduler.step(self._monitored(record))
            else:
                self.scheduler.step()
        st.lr = self._lr()
        st.epoch += 1
        st.batch = 0
        st.phase = "train"
        self._call("on_epoch_end")
        self._epoch_checkpoints(record)

    def _monitored(self, record: dict[str, Any]) -> float:
        if self.monitor not in record:
            raise missing_metric_error("Learner", self.monitor, list(record))
        return record[self.monitor]

    def _results(self, loss: Loss, metrics: list[Metric]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        scalars: dict[str, float] = {"loss": loss.compute()}
        arrays: dict[str, np.ndarray] = {}
        for m in metrics:
            v = m.compute()
            if isinstance(v, np.ndarray):
                arrays[m.name] = v
            else:
                scalars[m.name] = float(v)
        return scalars, arrays

    def _evaluate(self, loader: Iterable, who: str) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        from ..autograd.grad_mode import no_grad
        loss, metrics = Loss(), self._fresh_metrics()
        was_training = getattr(self.model, "training", True)
        self.model.eval()
        rng = capture_rng()
        try:
            # validation leaves every random generator as it found it (a loader drawing its seed, a random
            # transform), so training draws the same numbers with or without it, and after a resume
            with no_grad(), self._autocast():
                for batch in loader:
                    batch = self._move(batch)
                    value, out, tgt = self._forward(batch)
                    loss.update(float(value.detach().float().item()), self._count(batch, tgt))
                    self._update_metrics(metrics, out, tgt, who)
        finally:
            restore_rng(rng)
            self.model.train(was_training)
        if loss.count == 0:
            raise ValueError(f"Learner: the {who} loader yielded no batches")
        return self._results(loss, metrics)

    # ---- checkpoints ----------------------------------------------------------------------------
    def _epoch_checkpoints(self, record: dict[str, Any]) -> None:
        ck = self.checkpointer
        if ck is None:
            return
        st = self.state
        every_e, every_s = self.checkpoint_every_epochs, self.checkpoint_every_steps
        due = (every_e and st.epoch % every_e == 0) or (every_s and st.step % every_s == 0) or self._stop.is_set()
        value = record.get(self.monitor)
        improves = value is not None and ck.is_better(value, self.mode)
        if not due and not improves:
            return
        plan = ck.plan_best(value, st.epoch, self.mode) if improves else None
        payload = self._payload()
        if plan is not None:
            path = ck.write_best(payload, plan)
            self.log_event(f"new best {self.monitor}={value:.6g} at epoch {st.epoch}: {os.path.basename(path)}")
            self._call("on_checkpoint", path)
        if due:
            self._write_periodic(payload)

    def _checkpoint_now(self) -> None:
        if self.checkpointer is None:
            return
        if self._last_ckpt_step == (self.state.step, self.state.epoch):
            return
        self._write_periodic(self._payload())

    def _write_periodic(self, payload: dict[str, Any]) -> None:
        st = self.state
        path = self.checkpointer.save_periodic(payload, st.epoch, st.step)
        self._last_ckpt_step = (st.step, st.epoch)
        self._call("on_checkpoint", path)

    def _payload(self) -> dict[str, Any]:
        return learner_payload(self)

    def _resume(self, resume: bool | str | os.PathLike) -> None:
        resume_learner(self, resume)
