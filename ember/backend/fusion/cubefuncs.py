"""Cube helpers that fused kernels call (a generated kernel's globals include this module's names)."""

from __future__ import annotations

from ... import cube


@cube.func
def _sigmoid(x):
    # exp(-|x|) never overflows; the branches meet at x = 0 (e / (1 + e) as e * r: one division)
    e = cube.exp(-abs(x))
    r = 1.0 / (1.0 + e)
    return cube.where(x >= 0.0, r, e * r)
