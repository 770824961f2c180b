"""Whether work is being captured into something replayable: a CUDA graph, or an ``ember.compile`` tape.

While a capture is open, the work issued is recorded (a CUDA graph) or run and recorded (Fusion's tape
on the CPU, see ember/backend/fusion/tape.py) so that later *replays* repeat it without running the
Python that issued it. Nothing inside may therefore depend on values read back to the host: backends
refuse host reads with :class:`CaptureSyncError`, and the frontend skips the checks that would need
one (index ranges, class targets), as PyTorch does on CUDA.

Two kinds of capture, one open at a time:

* ``"cuda"``: ``ember.cuda.graph`` (ember/backend/cuda/graphs.py). The CUDA backend reads ``_depth``
  on every op.
* ``"compile"``: ``ember.compile`` recording a Fusion device's work (ember/_compile.py). It can be
  *tainted*: something in the function can't be replayed (work on another device, an optimizer
  that keeps its step count on the host); the capture then stops recording, the rest of the call
  runs eagerly (so its results are right) and ``ember.compile`` runs that function eagerly.
"""

from __future__ import annotations

__all__ = ["CaptureSyncError", "capturing", "capturing_on", "refuse", "taint", "note_optimizer", "random_source",
           "graph_random_state", "set_graph_random"]

_depth = [0]  # open CUDA graph captures (read directly by the CUDA backend: a list lookup per op)
_compile: list = [None]  # the open ember.compile capture (an object with .device, .taint(), .optimizers)
_graph_random: list = [None]  # while a CUDA graph captures: (seed, offset) -> device array or None


class CaptureSyncError(RuntimeError):
    """A host sync (a read of tensor values) inside a capture (a CUDA graph or ``ember.compile``)."""


_replays = [0]  # replays of captured work so far (CUDA graphs and ember.compile tapes)


def note_replay() -> None:
    """Captured work is being replayed: tensors it writes change without the ops that track versions."""
    _replays[0] += 1


def replays() -> int:
    """How many replays of captured work have run in this process (see :func:`note_replay`)."""
    return _replays[0]


def capturing() -> bool:
    """Whether a capture (CUDA graph or ``ember.compile``) is open and recording."""
    return _depth[0] > 0 or _compile[0] is not None


def capturing_on(device) -> bool:
    """Whether a capture records the work of ``device`` (checks that read values there are skipped)."""
    if _depth[0] > 0 and device.type == "cuda":
        return True
    c = _compile[0]
    return c is not None and c.device == device


def enter() -> None:
    _depth[0] += 1


def leave() -> None:
    _depth[0] = max(0, _depth[0] - 1)


def enter_compile(cap, over_cuda: bool = False) -> None:
    """Open an ``ember.compile`` capture (``cap``: the recorder; captures don't nest, except that
    ember.compile's CUDA path opens it inside the CUDA graph capture it makes, ``over_cuda``)."""
    if _compile[0] is not None or (_depth[0] > 0) != over_cuda:
        raise RuntimeError("ember.compile: another capture is open (a compiled function called inside a "
                           "compiled function's capture, or inside ember.cuda.graph); captures don't nest")
    _compile[0] = cap


def leave_compile() -> None:
    _compile[0] = None


def taint(reason: str) -> bool:
    """Inside an ``ember.compile`` capture: stop recording (the rest of the call runs eagerly) and have
    the function run eagerly from now on, for ``reason``. True when a capture was tainted, False when
    none is open (a CUDA graph capture can't fall back: the caller then refuses as it would)."""
    c = _compile[0]
    if c is None:
        return False
    c.taint(reason)
    return True


def random_source(seed, offset):
    """(generator, counters used) of a random op whose arguments are ``seed``/``offset``, found by the
    open ``ember.compile`` capture among the default generators (the frontend owns them); None when
    none handed them out (an explicit generator) or no capture is open."""
    c = _compile[0]
    return None if c is None else c.random_source(seed, offset)


def graph_random_state(seed, offset):
    """The device array a random op captured into a CUDA graph reads its key and counter shift from at
    every replay (the graph's owner writes it before each replay, see ember.cuda.CUDAGraph), or None
    when ``seed``/``offset`` weren't handed out by the generator the open capture follows."""
    f = _graph_random[0]
    return None if f is None else f(seed, offset)


def set_graph_random(fn) -> None:
    """Install (or, with None, remove) the open CUDA graph capture's answer to graph_random_state."""
    _graph_random[0] = fn


def note_optimizer(opt) -> None:
    """An optimizer stepped inside the open ``ember.compile`` capture: its options are checked before
    each replay (a changed learning rate captures again instead of replaying a stale one)."""
    c = _compile[0]
    if c is not None:
        c.note_optimizer(opt)


def refuse(what: str) -> None:
    """Raise the error for ``what`` (e.g. "reading a tensor") inside a capture."""
    if _compile[0] is not None and _depth[0] == 0:
        raise CaptureSyncError(
            f"{what} needs tensor values on the host, which ember.compile can't allow while it captures a "
            "function: a replay runs the recorded work without running the function's Python, so a value "
            "read (and anything decided from it) would be frozen. Read results after the compiled call "
            "returns (its outputs hold each replay's values), or move the read out of the compiled function.")
    raise CaptureSyncError(
        f"{what} needs the GPU's results on the host, which is not possible while a CUDA graph is being "
        "captured (ember.cuda.graph): the work is recorded, not run. Move it before or after the captured "
        "region (read outputs after g.replay()).")
