"""PyTorch-style tensor printing: ``repr(t)``, ``str(t)`` and :func:`set_printoptions`.

The text matches PyTorch's, with ``ember`` where PyTorch writes ``torch``. The rules, as observed
from PyTorch's output:

* Integer and bool elements print as Python prints them, right-aligned to the widest element.
* Floating elements share one style, chosen from the finite nonzero values: whole numbers print
  as ``3.``; otherwise fixed point with ``precision`` decimals; scientific notation when the
  largest/smallest magnitude ratio exceeds 1000, the largest exceeds 1e8, or (for non-whole
  values) the smallest is below 1e-4. ``sci_mode`` forces the choice either way. Elements are
  right-aligned to the widest finite nonzero element.
* Above ``threshold`` elements, each dim longer than ``2 * edgeitems`` shows only its first and
  last ``edgeitems`` entries, with ``...`` between.
* Rows wrap so that a line holds as many elements as fit in ``linewidth``.

Printing is a sync point: only the elements that will be shown are moved to the host.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions"]


@dataclass
class _Options:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

OPTIONS = _Options()


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print (torch.set_printoptions).

    ``profile`` ('default', 'short', 'full') sets precision, threshold, edgeitems and linewidth
    first; explicit arguments override it. ``sci_mode`` is always set: None (the default) lets the
    values decide, True/False forces scientific/fixed notation.

    >>> ember.set_printoptions(precision=2); ember.tensor([1.2345])
    tensor([1.23])
    """
    if profile is not None:
        try:
            chosen = _PROFILES[profile]
        except KeyError:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; "
                             f"choose from {', '.join(_PROFILES)}") from None
        for k, v in chosen.items():
            setattr(OPTIONS, k, v)
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change print options: ``with printoptions(precision=2): print(t)``."""
    saved = {f.name: getattr(OPTIONS, f.name) for f in fields(OPTIONS)}
    try:
        set_printoptions(**kwargs)
        yield
    finally:
        for k, v in saved.items():
            setattr(OPTIONS, k, v)


# ---- element formatting -----------------------------------------------------------------------
class _Style:
    """How every element of one tensor is written, and the common width."""

    __slots__ = ("kind", "width", "precision")

    def __init__(self, kind: str, width: int, precision: int):
        self.kind, self.width, self.precision = kind, width, precision

    def __call__(self, v) -> str:
        k = self.kind
        if k == "plain":
            s = str(v)
        elif k == "sci":
            s = f"{v:.{self.precision}e}"
        elif k == "whole":
            s = f"{v:.0f}" + ("." if math.isfinite(v) else "")
        else:
            s = f"{v:.{self.precision}f}"
        return s.rjust(self.width)


def _choose_style(values: list, floating: bool, opts: _Options) -> _Style:
    """The style for a tensor whose shown elements are ``values`` (Python numbers)."""
    p = opts.precision
    if not floating:
        return _Style("plain", max([1, *(len(str(v)) for v in values)]), p)
    shown = [v for v in values if v != 0 and math.isfinite(v)]
    if not shown:  # only zeros, NaN and inf: whole-number style, nothing to align to
        return _Style("whole", 1, p)
    whole = all(v == math.ceil(v) for v in shown)
    mags = [abs(v) for v in shown]
    lo, hi = min(mags), max(mags)
    sci = hi / lo > 1000.0 or hi > 1.0e8 or (not whole and lo < 1.0e-4)
    if opts.sci_mode is not None:
        sci = opts.sci_mode
    if sci:
        width = max(len(f"{v:.{p}e}") for v in shown)
        return _Style("sci", width, p)
    if whole:
        return _Style("whole", max(len(f"{v:.0f}") + 1 for v in shown), p)
    return _Style("fixed", max(len(f"{v:.{p}f}") for v in shown), p)


# ---- layout -----------------------------------------------------------------------------------
def _shown_part(t, opts: _Options):
    """The elements that will be printed, as a host array, and which dims were cut.

    A cut dim keeps its first and last ``edgeitems`` entries; slicing happens on the tensor's own
    device so a large tensor is never copied to the host whole.
    """
    from ._movement import cat, narrow

    e = opts.edgeitems
    cut = []
    for d, n in enumerate(t._shape):
        if n > 2 * e:
            t = cat([narrow(t, d, 0, e), narrow(t, d, n - e, e)], d)
            cut.append(True)
        else:
            cut.append(False)
    host = np.asarray(t.numpy(force=True))
    if t._dtype is dt.bfloat16 or t._dtype is dt.float16:
        host = host.astype(np.float32)
    return host, tuple(cut)


def _block(strs: np.ndarray, cut: tuple, indent: int, width: int, opts: _Options) -> str:
    """Bracketed text of an array of formatted elements; ``indent`` is the column of '['."""
    e = opts.edgeitems
    if strs.ndim == 1:
        items = list(strs)
        if cut[0]:
            items[e:e] = [" ..."]
        per_line = max(1, (opts.linewidth - indent) // (width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_block(strs[i], cut[1:], indent + 1, width, opts) for i in range(strs.shape[0])]
    if cut[0]:
        rows[e:e] = ["..."]
    return "[" + ("," + "\n" * (strs.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _body(t, indent: int, opts: _Options) -> str:
    """The bracketed elements of a non-empty tensor."""
    summarize = t.numel() > opts.threshold
    if summarize and opts.edgeitems == 0:
        return "[...]"
    if summarize:
        host, cut = _shown_part(t, opts)
    else:
        host = np.asarray(t.numpy(force=True))
        if t._dtype is dt.bfloat16 or t._dtype is dt.float16:
            host = host.astype(np.float32)
        cut = (False,) * host.ndim
    floating = t._dtype.is_floating_point
    values = host.astype(np.float64) if floating else host
    flat = values.reshape(-1).tolist()
    style = _choose_style(flat, floating, opts)
    if host.ndim == 0:
        return style(flat[0])
    strs = np.array([style(v) for v in flat], dtype=object).reshape(host.shape)
    return _block(strs, cut, indent, style.width, opts)


def _join_suffixes(text: str, suffixes: list[str], indent: int, linewidth: int) -> str:
    """Append ``, suffix`` parts, starting a new line when one would pass ``linewidth``."""
    parts = [text]
    col = len(text) - text.rfind("\n") + 1  # as PyTorch counts it: the line's length plus one
    for s in suffixes:
        if col + len(s) + 2 > linewidth:
            parts.append(",\n" + " " * indent + s)
            col = indent + len(s)
        else:
            parts.append(", " + s)
            col += len(s) + 2
    return "".join(parts) + ")"


def tensor_repr(t) -> str:
    """The text ``repr(t)`` shows; see the module docstring for the rules."""
    opts = OPTIONS
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    dev = t._device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    default_float = dt.get_default_dtype()
    if t.numel() == 0:
        body = "[]"
        if len(t._shape) != 1:
            suffixes.append(f"size={tuple(t._shape)}")
        if t._dtype is not default_float:
            suffixes.append(f"dtype={t._dtype!r}")
    else:
        body = _body(t, indent, opts)
        if opts.edgeitems == 0:  # elements may be hidden, so the size is spelled out
            suffixes.append(f"size={tuple(t._shape)}")
        if t._dtype not in (default_float, dt.int64, dt.bool):
            suffixes.append(f"dtype={t._dtype!r}")
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        name = grad_fn.name() if callable(getattr(grad_fn, "name", None)) else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _join_suffixes(prefix + body, suffixes, indent, opts.linewidth)
