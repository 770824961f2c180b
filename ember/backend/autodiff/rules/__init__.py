"""Gradient rules for every differentiable primitive, collected into RULES."""

from . import elementwise, indexing, linalg, movement, reduce  # noqa: F401 - registration
from .base import RULES, Rule, rule  # noqa: F401

NONDIFF = frozenset(elementwise.NONDIFF_ELEMENTWISE | reduce.NONDIFF_REDUCE | indexing.NONDIFF_INDEXING)
