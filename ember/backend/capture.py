"""Whether a backend is capturing its work into a replayable graph (a CUDA graph).

While a capture is open, GPU work is recorded instead of run, so nothing may wait for results:
backends refuse host reads with :class:`CaptureSyncError`, and the frontend skips the checks that
would need one (index ranges, class targets), as PyTorch does on CUDA. One process-wide depth
counter: captures are opened by ``ember.cuda.graph`` (see ember/backend/cuda/graphs.py).
"""

from __future__ import annotations

__all__ = ["CaptureSyncError", "capturing", "refuse"]

_depth = [0]


class CaptureSyncError(RuntimeError):
    """A host sync (a read of device values) inside a graph capture."""


def capturing() -> bool:
    """Whether a graph capture is open."""
    return _depth[0] > 0


def enter() -> None:
    _depth[0] += 1


def leave() -> None:
    _depth[0] = max(0, _depth[0] - 1)


def refuse(what: str) -> None:
    """Raise the error for ``what`` (e.g. "reading a tensor") inside a capture."""
    raise CaptureSyncError(
        f"{what} needs the GPU's results on the host, which is not possible while a CUDA graph is being "
        "captured (ember.cuda.graph): the work is recorded, not run. Move it before or after the captured "
        "region (read outputs after g.replay()).")
