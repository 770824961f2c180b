"""Timing helpers shared by the bench scripts: medians of repeated runs, one table format."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], *, inner: int = 1, repeats: int = 7, warmup: int = 2,
                sync: Callable[[], object] | None = None) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` samples of ``inner`` calls each."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        if sync:
            sync()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


class Table:
    """Rows of (what, ember figure, torch figure, unit, higher_is_better) printed with the ratio."""

    def __init__(self, title: str):
        self.title = title
        self.rows: list[tuple[str, float, float, str, bool]] = []

    def add(self, what: str, ember_value: float, torch_value: float, unit: str, higher_is_better: bool) -> None:
        self.rows.append((what, ember_value, torch_value, unit, higher_is_better))
        print(self._line(self.rows[-1]), flush=True)

    @staticmethod
    def _line(row) -> str:
        what, e, t, unit, hib = row
        ratio = (e / t) if hib else (t / e)
        return (f"{what:<44} ember {e:>10.3f} {unit:<9} torch {t:>10.3f} {unit:<9} "
                f"ember/torch speed {ratio:5.2f}x")

    def header(self) -> None:
        print(f"# {self.title}")
        print("# 'ember/torch speed' > 1 means ember is faster; medians of repeated runs, same process")

    def markdown(self) -> str:
        out = [f"### {self.title}", "", "| what | ember | torch | unit | ember/torch speed |",
               "|---|---:|---:|---|---:|"]
        for what, e, t, unit, hib in self.rows:
            ratio = (e / t) if hib else (t / e)
            out.append(f"| {what} | {e:.3f} | {t:.3f} | {unit} | {ratio:.2f}x |")
        return "\n".join(out)
