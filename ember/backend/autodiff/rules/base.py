"""How gradient rules are declared.

A rule is ``backward(F, g, saved, node) -> tuple of input gradients`` (None where an input gets
none), plus ``save``: which inputs (ints) and outputs ('o0', 'o1', ...) the backward needs.
``node.attrs`` are the op's attributes, ``node.in_meta[i]`` the (shape, dtype) of input i.
"""

from __future__ import annotations

RULES: dict = {}


class Rule:
    __slots__ = ("backward", "save", "multi", "nondiff_outputs")

    def __init__(self, backward, save=(), multi=False, nondiff_outputs=()):
        self.backward = backward
        self.save = tuple(save)
        self.multi = multi
        self.nondiff_outputs = tuple(nondiff_outputs)


def rule(*ops: str, save=(), multi: bool = False, nondiff_outputs=()):
    """Register the decorated backward function for ``ops``."""
    def register(fn):
        for op in ops:
            RULES[op] = Rule(fn, save, multi, nondiff_outputs)
        return fn
    return register


def shape_of(node, i):
    m = node.in_meta[i]
    return None if m is None else m[0]


def reduce_to_inputs(F, node, *grads):
    """Sum broadcast gradients back to each tensor input's shape (None for scalar inputs)."""
    out = []
    for i, g in enumerate(grads):
        m = node.in_meta[i] if i < len(node.in_meta) else None
        out.append(None if (g is None or m is None) else F.sum_to(g, m[0]))
    return tuple(out)
