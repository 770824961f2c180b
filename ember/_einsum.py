"""einsum, written on top of ember ops (diagonal, sum, permute, reshape, matmul, mul).

The equation is parsed into one label list per operand (ellipsis dims become labels of their own,
aligned from the right), then:

1. labels repeated inside one operand take a diagonal;
2. labels that occur in one operand only and not in the output are summed away early;
3. operands are contracted left to right: shared labels still needed later are batch dims,
   shared labels needed nowhere else are contracted by one ``matmul``; a pair without
   contracted labels is a broadcasting multiply;
4. the result is permuted into the output order.

Labels of size 1 broadcast against other sizes, as in PyTorch.
"""

from __future__ import annotations

import math

from . import _dtype as dt
from ._tensor import Tensor

__all__ = ["einsum"]

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_equation(args) -> tuple[str, list]:
    """einsum(op0, [0, 1], op1, [1, 2], [0, 2]) -> ("ab,bc->ac", [op0, op1])."""
    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(_LETTERS[s])
            else:
                raise RuntimeError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), "
                                   f"got {s!r}")
        return "".join(out)
    ops = list(args[0::2])
    subs = list(args[1::2])
    out = None
    if len(ops) > len(subs):  # an odd count: the last item is the output sublist
        out = ops.pop()
    eq = ",".join(term(s) for s in subs)
    if out is not None:
        eq += "->" + term(out)
    return eq, ops


def _parse_term(term: str, index: int, what: str) -> list:
    """Labels of one term; '...' becomes the marker None."""
    labels: list = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {what} {index} that is not part of any ellipsis")
            if None in labels:
                raise RuntimeError(f"einsum(): found '.' for {what} {index} for which an ellipsis was already found")
            labels.append(None)
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript {c!r} in the equation for {what} {index}; "
                               "subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _parse(equation: str, operands: list):
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise RuntimeError(f"einsum(): the equation {equation!r} has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    parsed = [_parse_term(t, i, "operand") for i, t in enumerate(terms)]
    # expand each ellipsis into labels (ints) shared across operands, aligned from the right
    ell = 0
    for i, (labels, x) in enumerate(zip(parsed, operands)):
        named = len(labels) - (None in labels)
        if None not in labels and named != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({x.ndim}) for operand {i} and no ellipsis was given")
        if None in labels and named > x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                               f"number of dimensions ({x.ndim}) for operand {i}")
        ell = max(ell, x.ndim - named if None in labels else 0)
    full = []
    for labels, x in zip(parsed, operands):
        out = []
        for lab in labels:
            if lab is None:
                k = x.ndim - (len(labels) - 1)
                out.extend(range(ell - k, ell))
            else:
                out.append(lab)
        full.append(out)
    present = {lab for labels in full for lab in labels}
    if arrow:
        out_terms = _parse_term(rhs, 0, "output")
        output = []
        for lab in out_terms:
            if lab is None:
                output.extend(range(ell))
                continue
            if lab not in present:
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the equation for any "
                                   "input operand")
            if lab in output:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in the output")
            output.append(lab)
    else:  # implicit output: ellipsis dims, then the letters seen exactly once, in ASCII order
        counts: dict = {}
        for labels in full:
            for lab in labels:
                if isinstance(lab, str):
                    counts[lab] = counts.get(lab, 0) + 1
        output = list(range(ell)) + sorted(lab for lab, c in counts.items() if c == 1)
    return full, output


def _sizes(full, operands) -> dict:
    sizes: dict = {}
    for i, (labels, x) in enumerate(zip(full, operands)):
        for lab, n in zip(labels, x._shape):
            cur = sizes.get(lab)
            if cur is None or cur == 1:
                sizes[lab] = n
            elif n != cur and n != 1:
                what = f"subscript {lab}" if isinstance(lab, str) else "a dimension covered by the ellipsis"
                raise RuntimeError(f"einsum(): {what} has size {n} for operand {i} which does not broadcast with "
                                   f"previously seen size {cur}")
    return sizes


def _take_diagonals(x: Tensor, labels: list) -> tuple[Tensor, list]:
    labels = list(labels)
    while True:
        dup = next((lab for i, lab in enumerate(labels) if lab in labels[i + 1:]), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        x = x.diagonal(0, i, j)  # the diagonal becomes the last dim
        labels = [lab for k, lab in enumerate(labels) if k not in (i, j)] + [dup]


def _align(x: Tensor, labels: list, order: list) -> Tensor:
    """x permuted to ``order`` (a superset of labels), with size-1 dims for missing labels."""
    perm = [labels.index(lab) for lab in order if lab in labels]
    x = x.permute(perm) if perm != list(range(len(perm))) else x
    shape, it = [], iter(x._shape)
    for lab in order:
        shape.append(next(it) if lab in labels else 1)
    return x.reshape(tuple(shape)) if tuple(shape) != x._shape else x


def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep: set, sizes: dict) -> tuple[Tensor, list]:
    batch = [lab for lab in la if lab in lb and lab in keep]
    summed = [lab for lab in la if lab in lb and lab not in keep]
    only_a = [lab for lab in la if lab not in lb]
    only_b = [lab for lab in lb if lab not in la]
    if a._dtype is not b._dtype:  # an early sum made one side int64 (PyTorch does the same)
        d = dt.promote_types(a._dtype, b._dtype)
        a, b = a.to(d), b.to(d)
    if not summed:
        order = batch + only_a + only_b
        return _align(a, la, order) * _align(b, lb, order), order
    a = _align(a, la, batch + only_a + summed)
    b = _align(b, lb, batch + summed + only_b)
    k = [sizes[lab] for lab in summed]
    # a contracted label of size 1 on one side broadcasts: expand it so the inner dims agree
    nb = len(batch)
    if list(a._shape[nb + len(only_a):]) != k:
        a = a.expand(a._shape[:nb + len(only_a)] + tuple(k))
    if list(b._shape[nb:nb + len(summed)]) != k:
        b = b.expand(b._shape[:nb] + tuple(k) + b._shape[nb + len(summed):])
    a_batch, b_batch = a._shape[:nb], b._shape[:nb]
    pa = math.prod(a._shape[nb:nb + len(only_a)])
    pb = math.prod(b._shape[nb + len(summed):])
    pk = math.prod(k)
    out = a.reshape(a_batch + (pa, pk)) @ b.reshape(b_batch + (pk, pb))
    shape = out._shape[:nb] + a._shape[nb:nb + len(only_a)] + b._shape[nb + len(summed):]
    return out.reshape(shape), batch + only_a + only_b


def einsum(*args) -> Tensor:
    """Sum of products over the labelled dims of the operands, PyTorch's ``torch.einsum``.

    Accepts ``einsum(equation, *operands)``, ``einsum(equation, [operands])`` and the sublist form
    ``einsum(op0, [0, 1], op1, [1, 2], [0, 2])``.

    >>> a, b = ember.ones(2, 3), ember.ones(3, 4)
    >>> ember.einsum("ij,jk->ik", a, b).shape
    ember.Size([2, 4])
    >>> ember.einsum("ii", ember.eye(3))
    tensor(3.)
    """
    if not args:
        raise TypeError("einsum(): expected an equation and operands")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(x).__name__}")
    for x in operands[1:]:
        if x._dtype is not operands[0]._dtype:
            raise RuntimeError(f"einsum(): expected all operands to have the same dtype, but found "
                               f"{operands[0]._dtype.name} and {x._dtype.name}")
    full, output = _parse(equation, operands)
    sizes = _sizes(full, operands)

    work = []
    for i, (x, labels) in enumerate(zip(operands, full)):
        x, labels = _take_diagonals(x, labels)
        elsewhere = set(output).union(*(set(f) for j, f in enumerate(full) if j != i))
        lonely = [d for d, lab in enumerate(labels) if lab not in elsewhere]
        if lonely:
            x = x.sum(lonely)
            labels = [lab for lab in labels if lab in elsewhere]
        work.append((x, labels))

    acc, la = work[0]
    for k in range(1, len(work)):
        b, lb = work[k]
        keep = set(output).union(*(set(f) for f in full[k + 1:]))
        acc, la = _contract(acc, la, b, lb, keep, sizes)
    return _align(acc, la, output) if la != output else acc
