"""Gradients of slices, kept as pieces until someone reads them.

The gradient of a slice is zeros with the slice's gradient written in. When a tensor is split into
parts that are all used (``q, k, v = qkv.unbind(0)``, ``x.split(n, dim=-1)``, ``x.chunk(4)``, a loop
over ``x[i]``), summing those zero-filled tensors costs a full-size zeros, a scatter and an add per
part. The engine instead collects the parts' gradients as :class:`SliceGrads` and builds the sum once,
when the gradient is read: parts that tile one dim (gaps filled with zeros) become one ``cat``;
anything else (overlapping slices, slices along several dims) falls back to the sum of scatters.
PyTorch's autograd does the same for ``unbind``/``split`` (their backward is a stack/cat); here it
falls out of the slices themselves, so any way of cutting a tensor into parts gets it. The ``slice`` rule
returns a :class:`SliceGrads`; the engine merges them where they meet and reads the sum (``value``) before a
rule, hook or leaf sees it.
"""

from __future__ import annotations


class SliceGrads:
    """The gradient of a tensor of ``shape``/``dtype``, as a sum of (slice index, gradient of that slice)."""

    __slots__ = ("shape", "dtype", "parts")

    def __init__(self, shape: tuple, dtype, parts: list):
        self.shape = shape
        self.dtype = dtype
        self.parts = parts

    @classmethod
    def of(cls, node, g) -> SliceGrads:
        """The gradient that the slice ``node`` sends to its input, given its output's gradient ``g``."""
        shape, dtype = node.in_meta[0]
        return cls(tuple(shape), dtype, [(node.attrs["index"], g)])

    def merge(self, other: SliceGrads) -> SliceGrads | None:
        """Both sums as one, or None when they describe different tensors."""
        if other.shape != self.shape or other.dtype is not self.dtype:
            return None
        return SliceGrads(self.shape, self.dtype, self.parts + other.parts)

    def value(self, F):
        """The gradient as one handle of the backend ``F`` runs on."""
        if len(self.parts) > 1:
            joined = self._joined(F)
            if joined is not None:
                return joined
        total = None
        for index, g in self.parts:
            if all(r == (0, n, 1) for r, n in zip(index, self.shape)):
                term = g
            else:
                term = F.run("slice_scatter", F.zeros(self.shape, self.dtype), g, index=index)
            total = term if total is None else F.add(total, term)
        return total

    def _joined(self, F):
        """One ``cat`` along the only dim the parts slice, when they are disjoint unit-step ranges."""
        dim = None
        for index, _ in self.parts:
            for d, (r, n) in enumerate(zip(index, self.shape)):
                if r == (0, n, 1):
                    continue
                if r[2] != 1 or (dim is not None and d != dim):
                    return None
                dim = d
        if dim is None:  # every part is the whole tensor
            return None
        ranges = sorted(((index[dim][0], index[dim][1]), i) for i, (index, _) in enumerate(self.parts))
        pieces, at = [], 0
        for (start, stop), i in ranges:
            if start < at:  # overlapping parts add up: the general path
                return None
            if start > at:
                pieces.append(self._zeros(F, dim, start - at))
            if stop > start:
                pieces.append(self.parts[i][1])
            at = stop
        if at < self.shape[dim]:
            pieces.append(self._zeros(F, dim, self.shape[dim] - at))
        return pieces[0] if len(pieces) == 1 else F.run("cat", *pieces, dim=dim)

    def _zeros(self, F, dim: int, size: int):
        shape = list(self.shape)
        shape[dim] = size
        return F.zeros(tuple(shape), self.dtype)
