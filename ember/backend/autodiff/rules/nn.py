"""Gradient rules of the nn ops (being written)."""

from .base import rule  # noqa: F401

NONDIFF_NN: set = set()
