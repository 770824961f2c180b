"""Padding (``ember.nn.functional.pad``): constant, reflect, replicate and circular modes.

Non-negative widths go to the backend's ``pad`` primitive; negative widths crop (constant mode)
or become an explicit gather of source positions (the other modes), as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._movement import _EMPTY, _slice_dim
from ._tensor import Tensor, run

__all__ = ["pad"]


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_index(n: int, size: int, before: int, mode: str) -> list[int]:
    """Source positions along one dim for a reflect/replicate pad whose widths may be negative:
    output j reads input coordinate j - before, folded back into [0, n) by the mode."""
    out = []
    for j in range(size):
        c = j - before
        if mode == "replicate":
            c = min(max(c, 0), n - 1)
        elif n > 1:  # reflect about the edge elements, period 2(n - 1)
            c = abs(c) % (2 * (n - 1))
            c = c if c < n else 2 * (n - 1) - c
        else:
            c = 0
        out.append(c)
    return out


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dims: ``pad = (left, right, top, bottom, ...)`` from the last dim backwards.

    Modes: constant (fill with ``value``; negative pads crop), reflect (mirror without repeating
    the edge), replicate (repeat the edge), circular (wrap around). PyTorch's
    ``torch.nn.functional.pad``; ember also accepts non-constant modes on inputs of any rank.

    >>> ember.nn.functional.pad(ember.tensor([1, 2, 3]), (1, 2)).tolist()
    [0, 1, 2, 3, 0, 0]
    """
    pad = tuple(pad)
    for p in pad:
        if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
            raise TypeError(f"pad(): argument 'pad' must be a tuple of ints, but found element of type "
                            f"{type(p).__name__} in {pad}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"pad: Padding length must be divisible by 2, got {len(pad)}")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError(f"pad: Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: Unrecognised padding mode {mode!r} (expected one of {', '.join(_PAD_MODES)})")
    widths = [(0, 0)] * input.ndim
    for i in range(k):
        widths[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    shape = tuple(n + a + b for n, (a, b) in zip(input._shape, widths))
    for d, ((a, b), n) in enumerate(zip(widths, input._shape)):
        if n + a + b < 0 or (mode == "constant" and n - max(-a, 0) - max(-b, 0) < 0):
            raise RuntimeError(f"pad: padding ({a}, {b}) at dimension {d} crops more than the size {n} of input "
                               f"{list(input._shape)}")
    if mode == "constant":
        from ._creation import _py
        fill = _py(0.0 if value is None else float(value), input._dtype, "pad")  # torch takes a float value
        x = input
        if any(a < 0 or b < 0 for a, b in widths):  # negative pads crop first (a view)
            for d, (a, b) in enumerate(widths):
                if a < 0 or b < 0:
                    n = x._shape[d]
                    x = _slice_dim(x, d, max(-a, 0), n - max(-b, 0), 1)
            widths = [(max(a, 0), max(b, 0)) for a, b in widths]
        if not any(a or b for a, b in widths):
            return run("copy", (x,), _EMPTY, x._shape, x._dtype)
        return run("pad", (x,), {"pad": tuple(widths), "mode": mode, "value": fill}, shape, x._dtype)
    if value is not None and value != 0:
        raise RuntimeError(f"pad: Padding mode {mode!r} doesn't take in value argument (got {value})")
    for d, ((a, b), n) in enumerate(zip(widths, input._shape)):
        if not (a or b):
            continue
        where = f"padding ({a}, {b}) at dimension {d} of input {list(input._shape)}"
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(f"pad: Padding size should be less than the corresponding input dimension, but got: "
                               f"{where}")
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError(f"pad: Padding value causes wrapping around more than once: {where}")
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"pad: can't replicate-pad an empty dimension: {where}")
        if mode != "circular" and n + a + b == 0:
            raise RuntimeError(f"pad: input is too small: {where} gives an empty output dimension")
    x, fresh = input, False  # the result must never alias the input, even when it only crops
    simple = []
    for d, (a, b) in enumerate(widths):
        if a >= 0 and b >= 0:
            simple.append((a, b))
            continue
        if mode == "circular":  # PyTorch crops first, then wraps around the cropped dim
            n = x._shape[d]
            x = _slice_dim(x, d, max(-a, 0), n - max(-b, 0), 1)
            a, b = max(a, 0), max(b, 0)
            if a > x._shape[d] or b > x._shape[d]:
                raise RuntimeError(f"pad: Padding value causes wrapping around more than once: padding ({a}, {b}) "
                                   f"at dimension {d} after cropping to size {x._shape[d]}")
            simple.append((a, b))
            continue
        # a negative width next to a non-constant mode: gather the source positions explicitly
        from ._creation import tensor
        index = tensor(_pad_index(x._shape[d], x._shape[d] + a + b, a, mode), dtype=dt.int64, device=x._device)
        x, fresh = x.index_select(d, index), True
        simple.append((0, 0))
    if any(a or b for a, b in simple):
        return run("pad", (x,), {"pad": tuple(simple), "mode": mode, "value": 0}, shape, x._dtype)
    return x if fresh else run("copy", (x,), _EMPTY, x._shape, x._dtype)
