"""Gradient rules of the conv ops (being written)."""

from .base import rule  # noqa: F401

NONDIFF_CONV: set = set()
