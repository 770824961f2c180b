"""A module-level on/off flag set for the span of a ``with`` block (fusion itself, op replay)."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def switched(state: dict, flag: bool):
    """``state["enabled"] = bool(flag)`` inside the block, the old value restored after it (errors too).

    >>> state = {"enabled": True}
    >>> with switched(state, False):
    ...     state["enabled"]
    False
    """
    old = state["enabled"]
    state["enabled"] = bool(flag)
    try:
        yield
    finally:
        state["enabled"] = old
