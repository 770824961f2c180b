"""A line chart drawn with Unicode braille dots, and the Textual widget that shows it.

Each character cell holds a 2x4 grid of braille dots, so a 60x12 cell chart has 120x48 dots. Long
series are drawn per dot column as the span of the values that fall into it (so spikes stay visible),
joined to the neighbouring columns; a series can also mark its points with a character.

>>> lines = render_chart([Series("train", [(0, 1.0), (5, 0.5), (10, 0.25)])], width=30, height=8)
>>> len(lines), all(len(line.plain) == 30 for line in lines)
(8, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual.widget import Widget

# Bit of the braille dot at (column 0..1, row 0..3) of a cell (Unicode braille patterns, U+2800 base).
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
_BRAILLE = 0x2800


class Points:
    """A growable (x, y) array pair: appending is amortised O(1) and drawing needs no list-to-array copy.

    >>> p = Points()
    >>> p.extend([(1, 0.5), (2, 0.25)])
    >>> len(p), p.x.tolist(), p.last_x
    (2, [1.0, 2.0], 2.0)
    """

    def __init__(self, points: Sequence[tuple[float, float]] = ()) -> None:
        self._data = np.empty((max(len(points), 64), 2), dtype=np.float64)
        self._n = 0
        self.extend(points)

    def extend(self, points: Sequence[tuple[float, float]]) -> None:
        k = len(points)
        if not k:
            return
        if self._n + k > len(self._data):
            grown = np.empty((max(2 * len(self._data), self._n + k), 2), dtype=np.float64)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n: self._n + k] = np.asarray(points, dtype=np.float64).reshape(k, 2)
        self._n += k

    def keep_before(self, x: float) -> None:
        """Drop every point at or after ``x`` (a run that went back to an earlier step)."""
        self._n = int(np.searchsorted(self._data[: self._n, 0], x, side="left"))

    def thin(self) -> None:
        """Halve the older half (every second point), keeping the newest half whole."""
        half = self._n // 2
        older = self._data[:half:2].copy()
        newer = self._data[half: self._n].copy()
        self._n = 0
        self.extend(older)
        self.extend(newer)

    def __len__(self) -> int:
        return self._n

    @property
    def x(self) -> np.ndarray:
        return self._data[: self._n, 0]

    @property
    def y(self) -> np.ndarray:
        return self._data[: self._n, 1]

    @property
    def last_x(self) -> float | None:
        return float(self._data[self._n - 1, 0]) if self._n else None

    def tolist(self) -> list[tuple[float, float]]:
        return [(float(a), float(b)) for a, b in self._data[: self._n]]


@dataclass
class Series:
    """One curve: ``points`` are (x, y) pairs sorted by x (a sequence or ``Points``); ``marker`` marks
    each point with a character."""

    name: str
    points: Sequence[tuple[float, float]] | Points
    style: str = "cyan"
    marker: str | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(self.points, Points):
            return self.points.x, self.points.y
        a = np.asarray(self.points, dtype=np.float64).reshape(-1, 2)
        return a[:, 0], a[:, 1]


class Canvas:
    """A grid of braille cells; each cell remembers the style of the last series that drew in it."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.bits = [[0] * cols for _ in range(rows)]
        self.styles: list[list[str | None]] = [[None] * cols for _ in range(rows)]
        self.chars: list[list[str | None]] = [[None] * cols for _ in range(rows)]  # marker overrides

    @property
    def width(self) -> int:      # in dots
        return self.cols * 2

    @property
    def height(self) -> int:
        return self.rows * 4

    def dot(self, x: int, y: int, style: str) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            c, r = x // 2, y // 4
            self.bits[r][c] |= _DOTS[x % 2][y % 4]
            self.styles[r][c] = style

    def vline(self, x: int, y0: int, y1: int, style: str) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.dot(x, y, style)

    def line(self, x0: int, y0: int, x1: int, y1: int, style: str) -> None:
        # Bresenham: every dot between the two ends, so steep segments stay connected.
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.dot(x0, y0, style)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def mark(self, x: int, y: int, char: str, style: str) -> None:
        c, r = x // 2, y // 4
        if 0 <= c < self.cols and 0 <= r < self.rows:
            self.chars[r][c] = char
            self.styles[r][c] = style

    def row_text(self, r: int) -> Text:
        text = Text()
        chars, bits, styles = self.chars[r], self.bits[r], self.styles[r]
        run, run_style = [], styles[0] if self.cols else None
        for c in range(self.cols):
            if styles[c] != run_style:      # one span per run of equal style: rendering stays cheap
                text.append("".join(run), style=run_style or "")
                run, run_style = [], styles[c]
            run.append(chars[c] or chr(_BRAILLE + bits[c]))
        text.append("".join(run), style=run_style or "")
        return text


def format_number(v: float, width: int = 8) -> str:
    """A short label for an axis tick: 4 significant digits, scientific when very large or small."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    if 1e-3 <= abs(v) < 1e5:
        s = f"{v:.4g}"
    else:
        s = f"{v:.2e}"
    return s[:width]


def _bounds(arrays: Sequence[tuple[np.ndarray, np.ndarray]],
            x_range: tuple[float, float] | None) -> tuple[float, float, float, float]:
    xs = [x for x, _ in arrays if len(x)]
    if x_range is not None:
        x0, x1 = x_range
    elif xs:
        x0, x1 = min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)
    else:
        x0, x1 = 0.0, 1.0
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x0 + 0.5
    lo, hi = math.inf, -math.inf
    for x, y in arrays:
        if x_range is not None:     # x is sorted: slice the window
            y = y[np.searchsorted(x, x0, side="left"): np.searchsorted(x, x1, side="right")]
        y = y[np.isfinite(y)]
        if len(y):
            lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
    y0, y1 = (lo, hi) if lo <= hi else (0.0, 1.0)
    pad = (y1 - y0) * 0.05 if y1 > y0 else max(abs(y0) * 0.1, 0.5)
    # Losses and accuracies are never negative: do not pad a non-negative curve below zero.
    lo = y0 - pad if y0 - pad >= 0 or y0 < 0 else 0.0
    return float(x0), float(x1), float(lo), float(y1 + pad)


def render_chart(series: Sequence[Series], width: int, height: int,
                 x_range: tuple[float, float] | None = None, x_label: str = "") -> list[Text]:
    """Draw ``series`` into ``height`` lines of ``width`` characters: y labels, plot, axis, x labels.

    ``x_range`` (lo, hi) shows only that part of the x axis (points outside are clipped); by default the
    axis spans every point. Non-finite values are skipped.
    """
    width, height = max(width, 12), max(height, 4)
    arrays = [s.arrays() for s in series]
    x0, x1, y0, y1 = _bounds(arrays, x_range)
    rows = height - 2
    # Label the top, middle and bottom rows with the value at the middle of their dots.
    dots_h = rows * 4 - 1
    label_rows = {r: format_number(y1 - (y1 - y0) * min(r * 4 + 1.5, dots_h) / dots_h)
                  for r in (0, (rows - 1) // 2, rows - 1)}
    label_rows[0] = format_number(y1)
    label_rows[rows - 1] = format_number(y0)
    lw = max(len(s) for s in label_rows.values())
    canvas = Canvas(width - lw - 1, rows)
    sx = (canvas.width - 1) / (x1 - x0)
    sy = dots_h / (y1 - y0)

    for s, (xs, ys) in zip(series, arrays):
        if not len(xs):
            continue
        if x_range is not None:
            # Points are sorted by x: slice the window instead of masking the whole series.
            i0, i1 = np.searchsorted(xs, x0, side="left"), np.searchsorted(xs, x1, side="right")
            xs, ys = xs[i0:i1], ys[i0:i1]
        keep = np.isfinite(ys)
        if not keep.all():
            xs, ys = xs[keep], ys[keep]
        if not len(xs):
            continue
        px = np.clip(np.rint((xs - x0) * sx), 0, canvas.width - 1).astype(np.int64)
        py = np.clip(np.rint((y1 - ys) * sy), 0, canvas.height - 1).astype(np.int64)
        if len(px) > 1 and (np.diff(px) < 0).any():
            order = np.argsort(px, kind="stable")
            px, py = px[order], py[order]
        # Per dot column (px is sorted): the first, last, lowest and highest point.
        first = np.r_[0, np.flatnonzero(np.diff(px)) + 1]
        cols = px[first]
        last = np.r_[first[1:] - 1, len(px) - 1]
        lo = np.minimum.reduceat(py, first)
        hi = np.maximum.reduceat(py, first)
        prev: tuple[int, int] | None = None
        for c, f, la, a, b in zip(cols.tolist(), first.tolist(), last.tolist(), lo.tolist(), hi.tolist()):
            if prev is not None:
                canvas.line(prev[0], prev[1], c, int(py[f]), s.style)
            canvas.vline(c, a, b, s.style)
            prev = (c, int(py[la]))
        if s.marker:
            for x, y in zip(px.tolist(), py.tolist()):
                canvas.mark(x, y, s.marker, s.style)

    out: list[Text] = []
    for r in range(rows):
        line = Text(label_rows.get(r, "").rjust(lw), style="dim")
        line.append("┤" if r in label_rows else "│", style="dim")
        line.append_text(canvas.row_text(r))
        out.append(line)
    out.append(Text(" " * lw + "└" + "─" * canvas.cols, style="dim"))
    left, right = format_number(x0, 10), format_number(x1, 10)
    middle = x_label
    gap = canvas.cols - len(left) - len(right)
    if gap < len(middle) + 2:
        middle = ""
    pad_l = max(gap - len(middle), 0) // 2
    bottom = " " * (lw + 1) + left + " " * pad_l + middle + " " * max(gap - len(middle) - pad_l, 1) + right
    out.append(Text(bottom[:width].ljust(width), style="dim"))
    return out


class LinePlot(Widget):
    """A Textual widget showing ``render_chart`` of its series at its current size.

    >>> plot = LinePlot()
    >>> plot.set_data([Series("train", [(1, 0.5), (2, 0.4)])], x_label="step")
    """

    DEFAULT_CSS = """
    LinePlot { height: 1fr; min-height: 6; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.series: list[Series] = []
        self.x_range: tuple[float, float] | None = None
        self.x_label = ""
        self.message = "waiting for the first step..."

    def set_data(self, series: Sequence[Series], x_range: tuple[float, float] | None = None,
                 x_label: str = "") -> None:
        self.series, self.x_range, self.x_label = list(series), x_range, x_label
        self.refresh()

    def render(self) -> Text:
        w, h = self.content_size.width, self.content_size.height
        if not any(len(s.points) for s in self.series) or w < 12 or h < 4:
            return Text(self.message, style="dim")
        return Text("\n").join(render_chart(self.series, w, h, self.x_range, self.x_label))
