"""PNG plots of a training run's curves (matplotlib, an optional extra).

:func:`plot_history` writes one file per metric: ``loss.png`` (train and validation per epoch),
``accuracy.png``, ..., ``lr.png``, ``system.png`` (epoch time, items/s, memory) and
``step_loss.png`` (the loss of every optimizer step). It uses
matplotlib's object API with the Agg canvas, never ``pyplot``, so it changes no global state and needs
no display. :class:`PlotWriter` calls it when ``fit`` ends; without matplotlib it logs one line and
writes nothing.
"""

from __future__ import annotations

import os
from typing import Any

from .callback import Callback
from .history import History

__all__ = ["plot_history", "PlotWriter", "matplotlib_available"]

_NOT_PLOTTED = ("epoch",)


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    except ImportError:
        return False
    return True


_SYSTEM = ("epoch_time", "items_per_sec", "cpu_memory_mb", "gpu_memory_mb")


def _series(history: History) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """metric base name -> {"train"/"val"/"": [(epoch, value), ...]} for every numeric column."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for r in history.records:
        for k, v in r.items():
            if k in _NOT_PLOTTED or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            split, base = ("train", k[6:]) if k.startswith("train_") else ("val", k[4:]) if k.startswith("val_") \
                else ("", k)
            out.setdefault(base, {}).setdefault(split, []).append((r["epoch"], float(v)))
    return out


def _axes(ax, splits: dict[str, list[tuple[int, float]]], title: str, xlabel: str = "epoch") -> None:
    for split, pts in splits.items():
        xs, ys = zip(*pts)
        ax.plot(xs, ys, marker="o" if len(pts) < 30 else None, markersize=3, label=split or title)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # epochs and steps are whole numbers
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(splits) > 1:
        ax.legend()


def plot_history(history: History, directory: str | os.PathLike, step_losses: list | None = None,
                 dpi: int = 100) -> list[str]:
    """Write PNG curves into ``directory`` and return their paths: one file per metric with its train
    and validation curves (``loss.png``, ``accuracy.png``, ...), ``lr.png``, ``system.png`` (epoch
    time, items/s, memory) and ``step_loss.png`` from ``step_losses`` (a list of (step, loss)).
    Raises ImportError without matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    written = []

    def figure(n: int = 1):
        fig = Figure(figsize=(6 * n if n < 3 else 12, 4), layout=None)
        FigureCanvasAgg(fig)
        fig.subplots_adjust(left=0.12 if n == 1 else 0.07, right=0.97, bottom=0.14, top=0.9, wspace=0.3)
        return fig, fig.subplots(1, n, squeeze=False)[0]

    def save(fig, name: str) -> None:
        path = os.path.join(directory, f"{name}.png")
        tmp = path + ".tmp.png"
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
        written.append(path)

    series = _series(history)
    for base, splits in series.items():
        if base in _SYSTEM:
            continue
        fig, (ax,) = figure()
        _axes(ax, splits, base)
        save(fig, base)
    system = [b for b in _SYSTEM if b in series]
    if system:
        fig, axs = figure(len(system))
        for ax, base in zip(axs, system):
            _axes(ax, series[base], base)
        save(fig, "system")
    if step_losses:
        fig, (ax,) = figure()
        _axes(ax, {"": [(int(s), float(v)) for s, v in step_losses]}, "training loss per step", "optimizer step")
        save(fig, "step_loss")
    return written


class PlotWriter(Callback):
    """Writes :func:`plot_history`'s PNGs into ``directory`` when ``fit`` ends (also after a stop)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = os.fspath(directory)
        self.written: list[str] = []

    def on_fit_end(self, learner: Any) -> None:
        if not len(learner.history) and not learner.state.step_losses:
            return
        if not matplotlib_available():
            learner.log_event("plots skipped: matplotlib is not installed (pip install \"ember[plots]\")")
            return
        self.written = plot_history(learner.history, self.directory, learner.state.step_losses)
        learner.log_event(f"plots written: {', '.join(os.path.basename(p) for p in self.written)}")
