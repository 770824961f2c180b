"""F: the small vocabulary gradient rules are written in, over backend handles.

Rules run on the inner backend when no graph is being built (plain backward), and on the
Autodiff backend itself for ``create_graph=True``, so higher-order gradients come from running
the same rules again. F knows shapes through the backend, so rules can broadcast and reduce.
"""

from __future__ import annotations

import math

from ... import _dtype as dt
from .graph import Var

_E: dict = {}


class F:
    __slots__ = ("b",)

    def __init__(self, backend):
        self.b = backend

    # raw access ---------------------------------------------------------------------------------
    def run(self, op, *inputs, **attrs):
        return self.b.run(op, inputs, attrs)

    def shape(self, h) -> tuple:
        return tuple(self.b.shape(h))

    def dtype(self, h):
        return self.b.dtype(h)

    def detach(self, h):
        """h as a constant of the graph being built (itself when no graph is built): for
        piecewise-constant factors such as rounded quotients, whose derivative is zero."""
        return h.value if h.__class__ is Var else h

    # creation -----------------------------------------------------------------------------------
    def full(self, shape, value, dtype):
        return self.b.run("full", (), {"shape": tuple(shape), "value": value, "dtype": dtype})

    def zeros(self, shape, dtype):
        return self.full(shape, 0, dtype)

    def zeros_like(self, h):
        return self.full(self.shape(h), 0, self.dtype(h))

    # elementwise --------------------------------------------------------------------------------
    def add(self, a, b):
        return self.b.run("add", (a, b), _E)

    def sub(self, a, b):
        return self.b.run("sub", (a, b), _E)

    def mul(self, a, b):
        return self.b.run("mul", (a, b), _E)

    def div(self, a, b):
        return self.b.run("div", (a, b), _E)

    def neg(self, a):
        return self.b.run("neg", (a,), _E)

    def un(self, op, a):
        return self.b.run(op, (a,), _E)

    def where(self, c, a, b):
        return self.b.run("where", (c, a, b), _E)

    def cast(self, a, dtype):
        return a if self.dtype(a) is dtype else self.b.run("cast", (a,), {"dtype": dtype})

    def cmp(self, op, a, b):
        return self.b.run(op, (a, b), _E)

    # shapes -------------------------------------------------------------------------------------
    def reshape(self, a, shape):
        shape = tuple(shape)
        return a if self.shape(a) == shape else self.b.run("reshape", (a,), {"shape": shape})

    def expand(self, a, shape):
        shape = tuple(shape)
        return a if self.shape(a) == shape else self.b.run("expand", (a,), {"shape": shape})

    def permute(self, a, dims):
        return self.b.run("permute", (a,), {"dims": tuple(dims)})

    def transpose(self, a):
        """Swap the last two dims."""
        n = len(self.shape(a))
        dims = list(range(n))
        dims[-1], dims[-2] = dims[-2], dims[-1]
        return self.permute(a, dims)

    def sum(self, a, dims, keepdim=False):
        return self.b.run("sum", (a,), {"dim": tuple(dims) if dims is not None else None, "keepdim": keepdim,
                                        "dtype": self.dtype(a)})

    def sum_to(self, g, shape):
        """Reduce a broadcast gradient back to ``shape`` (the inverse of broadcasting)."""
        shape = tuple(shape)
        gs = self.shape(g)
        if gs == shape:
            return g
        lead = len(gs) - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and gs[lead + i] != 1)
        if dims:
            g = self.sum(g, dims, keepdim=True)
        return self.reshape(g, shape)

    def unreduce(self, g, in_shape, dim, keepdim):
        """Broadcast the gradient of a reduction back over the reduced dims."""
        in_shape = tuple(in_shape)
        if not keepdim:
            dims = range(len(in_shape)) if dim is None else dim
            kshape = tuple(1 if i in dims else n for i, n in enumerate(in_shape))
            g = self.reshape(g, kshape)
        return self.expand(g, in_shape)

    def numel(self, shape) -> int:
        return math.prod(shape)

    def matmul(self, a, b):
        return self.b.run("matmul", (a, b), _E)

    def is_float(self, h) -> bool:
        return self.dtype(h).is_floating_point

    def float_dtype(self, h):
        d = self.dtype(h)
        return d if d.is_floating_point else dt.get_default_dtype()
