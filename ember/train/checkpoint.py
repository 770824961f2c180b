"""Training checkpoints: what they hold, where they go, which ones are kept.

A checkpoint is one ``ember.save`` file (safetensors; written to a temporary file, fsynced and
renamed, so a crash leaves the old file or the new one, never half of one) holding::

    {"format": "ember.train.checkpoint", "version": 1,
     "model": model.state_dict(), "optimizer": ..., "scheduler": ... | None, "scaler": ... | None,
     "rng": {"ember": {"cpu": uint8 state, ...}, "python": random.getstate(), "numpy": np.random.get_state()},
     "loader": train_loader.state_dict() | None,
     "learner": {epoch, batch, step, history, best value, metric accumulators, callback states, ...}}

:class:`Checkpointer` names and prunes the files in a directory:

* ``ckpt-step00000120-epoch0002.safetensors``: periodic checkpoints (every N epochs or steps, and on a
  requested stop); ``epoch`` counts the finished epochs. The newest ``keep_last`` are kept.
* ``best.safetensors``: the checkpoint with the best monitored value (``keep_best=1``). With
  ``keep_best=k > 1`` the best k are kept as ``best-epoch0007.safetensors`` and ``best.safetensors``
  is a hard link to the top one.

>>> import tempfile
>>> ck = Checkpointer(tempfile.mkdtemp(), keep_last=2)
>>> for step in (10, 20, 30):
...     _ = ck.save_periodic({"step": step}, epoch=0, step=step)
>>> [os.path.basename(p) for p in ck.periodic()]
['ckpt-step00000020-epoch0000.safetensors', 'ckpt-step00000030-epoch0000.safetensors']
"""

from __future__ import annotations

import os
import random
import re
from typing import Any

import numpy as np

from .._tensor import Tensor
from .history import better

__all__ = ["Checkpointer", "save_checkpoint", "load_checkpoint", "capture_rng", "restore_rng",
           "load_model_state", "CheckpointError", "FORMAT"]

FORMAT = "ember.train.checkpoint"
VERSION = 1
_PERIODIC = re.compile(r"^ckpt-step(\d+)-epoch(\d+)\.safetensors$")
_BEST = re.compile(r"^best-epoch(\d+)\.safetensors$")


class CheckpointError(RuntimeError):
    """A checkpoint that can't be used: missing, not a training checkpoint, or from another model."""


# ---- RNG ----------------------------------------------------------------------------------------
def capture_rng() -> dict[str, Any]:
    """The state of every random-number source a training step may draw from: ember's default
    generators (one per device type), Python's ``random`` and numpy's global generator."""
    from .. import _random
    py = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"ember": {k: g.get_state() for k, g in _random._DEFAULTS.items()},
            "python": [py[0], list(py[1]), py[2]],
            "numpy": [name, np.asarray(keys).tolist(), int(pos), int(has_gauss), float(cached)]}


def restore_rng(state: dict[str, Any]) -> None:
    """Undo :func:`capture_rng`: every generator continues exactly where it was captured."""
    from .. import _random
    from .._device import device
    for kind, s in state["ember"].items():
        g = _random._DEFAULTS.get(kind)
        if g is None:
            try:
                g = _random._default_for(device(kind))
            except Exception:  # that device type is not available in this process: nothing draws from it
                continue
        g.set_state(s)
    v, keys, gauss = state["python"]
    random.setstate((int(v), tuple(int(k) for k in keys), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached)))


# ---- files --------------------------------------------------------------------------------------
def _pack(obj: Any) -> Any:
    """numpy values -> what ember.save stores (arrays as tensors, scalars as Python numbers)."""
    if isinstance(obj, np.ndarray):
        from .._creation import tensor
        return tensor(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _pack(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_pack(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_pack(v) for v in obj)
    return obj


def unpack_arrays(obj: Any) -> Any:
    """Tensors -> numpy arrays, recursively (for the learner's own, tensor-free state)."""
    if isinstance(obj, Tensor):
        return obj.numpy(force=True).copy()
    if isinstance(obj, dict):
        return {k: unpack_arrays(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unpack_arrays(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(unpack_arrays(v) for v in obj)
    return obj


def save_checkpoint(payload: dict[str, Any], path: str | os.PathLike) -> str:
    """Write ``payload`` (see the module docstring) atomically to ``path``; returns the path."""
    from ..serialization import save
    save(_pack({"format": FORMAT, "version": VERSION, **payload}), path)
    return os.fspath(path)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a training checkpoint written by :func:`save_checkpoint`."""
    from ..serialization import load
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    obj = load(path)
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CheckpointError(f"{path!r} is not an ember.train checkpoint (it has no 'format': {FORMAT!r} entry; "
                              "a bare state dict loads with ember.load + model.load_state_dict)")
    if int(obj.get("version", 0)) > VERSION:
        raise CheckpointError(f"{path!r} was written by a newer ember (checkpoint version {obj['version']})")
    return obj


def load_model_state(model: Any, state: dict[str, Any], path: str) -> None:
    """``model.load_state_dict(state)`` with an error that names every key and shape that differs."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [f"{k}: checkpoint {tuple(state[k].shape)} vs model {tuple(own[k].shape)}" for k in own
              if k in state and isinstance(state[k], Tensor) and isinstance(own[k], Tensor)
              and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing from the checkpoint: {', '.join(missing)}")
        if unexpected:
            parts.append(f"not in the model: {', '.join(unexpected)}")
        if shapes:
            parts.append(f"different shapes: {'; '.join(shapes)}")
        raise CheckpointError(f"checkpoint {path!r} was saved from a different model ({type(model).__name__}): "
                              + " | ".join(parts))
    model.load_state_dict(state)


class Checkpointer:
    """Names, writes and prunes the checkpoints of one run in ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike, keep_last: int | None = 3, keep_best: int = 1):
        if keep_last is not None and int(keep_last) < 1:
            raise ValueError(f"keep_last must be >= 1 or None (keep all), got {keep_last}")
        if int(keep_best) < 0:
            raise ValueError(f"keep_best must be >= 0, got {keep_best}")
        self.directory = os.fspath(directory)
        self.keep_last = None if keep_last is None else int(keep_last)
        self.keep_best = int(keep_best)
        # (value, epoch, path) of the kept best checkpoints, best first; saved in the learner's state
        self.best: list[tuple[float, int, str]] = []
        os.makedirs(self.directory, exist_ok=True)

    # ---- periodic ----
    def periodic(self) -> list[str]:
        """The periodic checkpoints on disk, oldest first."""
        found = []
        for name in os.listdir(self.directory):
            m = _PERIODIC.match(name)
            if m:
                found.append(((int(m.group(1)), int(m.group(2))), os.path.join(self.directory, name)))
        return [p for _, p in sorted(found)]

    def latest(self) -> str | None:
        """The newest periodic checkpoint (most steps, then most epochs), or None."""
        found = self.periodic()
        return found[-1] if found else None

    def save_periodic(self, payload: dict[str, Any], epoch: int, step: int) -> str:
        path = os.path.join(self.directory, f"ckpt-step{step:08d}-epoch{epoch:04d}.safetensors")
        save_checkpoint(payload, path)
        if self.keep_last is not None:
            for old in self.periodic()[:-self.keep_last]:
                _remove(old)
        return path

    # ---- best ----
    @property
    def best_path(self) -> str:
        return os.path.join(self.directory, "best.safetensors")

    def is_better(self, value: float, mode: str) -> bool:
        """Whether ``value`` would enter the kept best checkpoints."""
        if self.keep_best == 0:
            return False
        if len(self.best) < self.keep_best:
            return better(value, None, mode)
        return better(value, self.best[-1][0], mode)

    def plan_best(self, value: float, epoch: int, mode: str) -> tuple[str, list[str]] | None:
        """Enter ``value`` into the kept best list (call before building the payload, so the
        checkpoint records itself); returns (path to write, files to delete), or None when ``value``
        does not rank. :meth:`write_best` then writes the file."""
        if not self.is_better(value, mode):
            return None
        if self.keep_best == 1:
            self.best = [(value, epoch, self.best_path)]
            return self.best_path, []
        path = os.path.join(self.directory, f"best-epoch{epoch:04d}.safetensors")
        entries = [e for e in self.best if e[2] != path] + [(value, epoch, path)]
        # a stable sort keeps the earlier epoch first among equal values
        entries.sort(key=lambda e: e[0] if mode == "min" else -e[0])
        self.best = entries[:self.keep_best]
        return path, [p for _, _, p in entries[self.keep_best:]]

    def write_best(self, payload: dict[str, Any], plan: tuple[str, list[str]]) -> str:
        path, dropped = plan
        save_checkpoint(payload, path)
        for old in dropped:
            _remove(old)
        if path != self.best_path:
            _link(self.best[0][2], self.best_path)
        return path

    def save_best(self, payload: dict[str, Any], value: float, epoch: int, mode: str) -> str | None:
        """Keep this checkpoint if ``value`` ranks among the best ``keep_best``; returns its path or None."""
        plan = self.plan_best(value, epoch, mode)
        return None if plan is None else self.write_best(payload, plan)

    def state_dict(self) -> dict[str, Any]:
        return {"best": [list(e) for e in self.best]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best = [(float(v), int(e), str(p)) for v, e, p in state.get("best", [])]
        # best files of epochs after this checkpoint belong to the abandoned future of the killed run
        kept = {os.path.basename(p) for _, _, p in self.best}
        for name in os.listdir(self.directory):
            if _BEST.match(name) and name not in kept:
                _remove(os.path.join(self.directory, name))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _link(src: str, dst: str) -> None:
    """Point ``dst`` at ``src``'s contents atomically: a hard link where possible, else a copy."""
    tmp = f"{dst}.tmp{os.getpid()}"
    _remove(tmp)
    try:
        os.link(src, tmp)
    except OSError:
        import shutil
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
