"""Gradient rules for every differentiable primitive, collected into RULES."""

from . import conv, elementwise, indexing, linalg, movement, nn, reduce  # noqa: F401 - registration
from .base import RULES, Rule, rule  # noqa: F401

NONDIFF = frozenset(elementwise.NONDIFF_ELEMENTWISE | reduce.NONDIFF_REDUCE | indexing.NONDIFF_INDEXING
                    | conv.NONDIFF_CONV | nn.NONDIFF_NN)
