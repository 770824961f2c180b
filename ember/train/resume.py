"""Saving a Learner's whole training state into a checkpoint and restoring it (``fit(resume=...)``).

The checkpoint's layout is described in :mod:`ember.train.checkpoint`. Restoring is exact: model,
optimizer, scheduler, GradScaler, the train loader's position, the epoch's metric accumulators,
callback states (early stopping) and, last, every random generator, so the resumed run computes the
same numbers as a run that was never interrupted.
"""

from __future__ import annotations

import os
from typing import Any

from .checkpoint import (
    Checkpointer,
    CheckpointError,
    capture_rng,
    load_checkpoint,
    load_model_state,
    restore_rng,
    unpack_arrays,
)

__all__ = ["learner_payload", "resume_learner"]


def _callback_states(learner: Any) -> dict[str, Any]:
    out, seen = {}, {}
    for cb in learner.callbacks:
        if hasattr(cb, "state_dict") and hasattr(cb, "load_state_dict"):
            name = type(cb).__name__
            k = seen.get(name, 0)
            seen[name] = k + 1
            out[f"{name}#{k}"] = cb.state_dict()
    return out


def learner_payload(learner: Any) -> dict[str, Any]:
    """Everything a checkpoint holds (see ember.train.checkpoint), from a Learner between steps."""
    st = learner.state
    loader = learner.train_loader
    saved_state = {"epoch": st.epoch, "batch": st.batch, "step": st.step, "items_epoch": st.items_epoch,
                   "items_total": st.items_total, "epochs": learner.epochs, "history": learner.history.state_dict(),
                   "step_losses": [list(p) for p in st.step_losses], "train_loss": learner._train_loss.state_dict(),
                   "train_metrics": {m.name: m.state_dict() for m in learner._train_metrics},
                   "epoch_train_time": learner._epoch_train_time, "last_train": dict(st.last_train),
                   "last_val": dict(st.last_val), "train_running": dict(st.train_running),
                   "callbacks": _callback_states(learner),
                   "checkpointer": learner.checkpointer.state_dict() if learner.checkpointer else {}}
    return {"model": learner.model.state_dict(), "optimizer": learner.optimizer.state_dict(),
            "scheduler": learner.scheduler.state_dict() if learner.scheduler is not None else None,
            "scaler": learner.scaler.state_dict() if learner.scaler is not None else None,
            "rng": capture_rng(),
            "loader": loader.state_dict() if hasattr(loader, "state_dict") else None,
            "learner": saved_state}


def resume_learner(learner: Any, resume: bool | str | os.PathLike) -> None:
    """Restore a Learner from the checkpoint ``resume`` names (True: the newest in its directory)."""
    if resume is True:
        if learner.checkpointer is None:
            raise CheckpointError("Learner.fit(resume=True) needs checkpoint_dir (or pass resume=<path>)")
        path = learner.checkpointer.latest()
        if path is None:
            raise CheckpointError(f"Learner.fit(resume=True): no checkpoint in {learner.checkpointer.directory!r} "
                                  "(looked for ckpt-step*-epoch*.safetensors)")
    else:
        path = os.fspath(resume)
        if os.path.isdir(path):
            found = Checkpointer(path, None, 0).latest()
            if found is None:
                raise CheckpointError(f"Learner.fit(resume={path!r}): no checkpoint in that directory")
            path = found
    ck = load_checkpoint(path)
    load_model_state(learner.model, ck["model"], path)
    try:
        learner.optimizer.load_state_dict(ck["optimizer"])
    except (ValueError, KeyError) as e:
        raise CheckpointError(f"checkpoint {path!r}: the optimizer state does not fit this optimizer: {e}") from e
    if learner.scheduler is not None and ck.get("scheduler") is not None:
        learner.scheduler.load_state_dict(ck["scheduler"])
    if learner.scaler is not None and ck.get("scaler"):
        learner.scaler.load_state_dict(ck["scaler"])
    # without a saved position (a plain iterable saved it) the epoch is replayed up to the saved batch
    learner._loader_positioned = ck.get("loader") is not None and hasattr(learner.train_loader, "load_state_dict")
    if learner._loader_positioned:
        learner.train_loader.load_state_dict(ck["loader"])
    ls = unpack_arrays(ck["learner"])
    st = learner.state
    st.epoch, st.batch, st.step = int(ls["epoch"]), int(ls["batch"]), int(ls["step"])
    st.items_epoch, st.items_total = int(ls["items_epoch"]), int(ls["items_total"])
    learner.history.load_state_dict(ls["history"])
    st.history = learner.history.records
    st.step_losses = [(int(s), float(v)) for s, v in ls["step_losses"]]
    learner._train_loss.load_state_dict(ls["train_loss"])
    saved = ls["train_metrics"]
    for m in learner._train_metrics:
        if m.name in saved:
            m.load_state_dict(saved[m.name])
    learner._epoch_train_time = float(ls["epoch_train_time"])
    st.last_train, st.last_val = dict(ls["last_train"]), dict(ls["last_val"])
    st.train_running = dict(ls["train_running"])
    states = ls.get("callbacks", {})
    seen: dict[str, int] = {}
    for cb in learner.callbacks:
        if hasattr(cb, "state_dict") and hasattr(cb, "load_state_dict"):
            name = type(cb).__name__
            k = seen.get(name, 0)
            seen[name] = k + 1
            if f"{name}#{k}" in states:
                cb.load_state_dict(states[f"{name}#{k}"])
    if learner.checkpointer is not None:
        learner.checkpointer.load_state_dict(ls.get("checkpointer", {}))
    st.lr = learner._lr()
    if st.step:   # the optimizer has stepped in this run: a scheduler stepped first must not warn
        learner.optimizer._opt_called = True
    learner._last_ckpt_step = (st.step, st.epoch)
    restore_rng(ck["rng"])    # last: nothing after this may draw random numbers before training resumes
    learner.log_event(f"resumed from {path} at epoch {st.epoch + 1}, batch {st.batch}, step {st.step}")
    if st.epoch >= learner.epochs:
        learner.log_event(f"the checkpoint has already finished {st.epoch} of {learner.epochs} epochs: nothing to do")

