"""The autodiff graph: Var (a handle that carries history), Node (one recorded op, the
``grad_fn``), AccumulateGrad (the sink of a leaf), grad-mode state and version counters.

Vars exist only for values that take part in differentiation; everything else stays a raw inner
handle, so code that never asks for gradients pays one type check per op.
"""

from __future__ import annotations

import threading
import weakref


class _State(threading.local):
    """Per-thread switches (PyTorch's grad mode is thread-local too)."""

    def __init__(self):
        self.grad_enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_check_nan = True


STATE = _State()


class Var:
    """An autodiff handle: an inner-backend ``value`` plus its place in the graph.

    A leaf (``node is None``) accumulates its gradient in ``grad``; a non-leaf is output
    ``out_index`` of ``node``. Vars are mutable identities: an in-place op rebases ``node``.
    """

    __slots__ = ("value", "requires_grad", "node", "out_index", "grad", "retains_grad", "hooks",
                 "_acc", "__weakref__")

    def __init__(self, value, requires_grad: bool = True, node=None, out_index: int = 0):
        self.value = value
        self.requires_grad = requires_grad
        self.node = node
        self.out_index = out_index
        self.grad = None
        self.retains_grad = False
        self.hooks = None      # leaf tensor hooks, run before accumulation
        self._acc = None       # weak reference to this leaf's AccumulateGrad

    @property
    def is_leaf(self) -> bool:
        return self.node is None

    def edge(self):
        """(node, index) that receives this Var's gradient, or None when it needs none."""
        if not self.requires_grad:
            return None
        if self.node is not None:
            return (self.node, self.out_index)
        acc = self._acc() if self._acc is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._acc = weakref.ref(acc)
        return (acc, 0)


class Node:
    """One recorded op (PyTorch's grad_fn): the rule to run, what it saved, and the edges to the
    nodes of its inputs. It holds no reference to its outputs (no cycles, prompt freeing)."""

    __slots__ = ("op", "attrs", "rule", "saved", "edges", "in_meta", "out_meta", "pre_hooks",
                 "retained", "freed", "seq", "trace", "__weakref__")

    _counter = 0

    def __init__(self, op, attrs, rule, edges, in_meta, out_meta):
        self.op = op
        self.attrs = attrs
        self.rule = rule
        self.saved = None
        self.edges = edges          # per input: (node, index) or None
        self.in_meta = in_meta      # per input: (shape, dtype) or None for non-tensor inputs
        self.out_meta = out_meta    # per output: (shape, dtype)
        self.pre_hooks = None       # {out_index: [fn(grad) -> grad | None]}
        self.retained = None        # {out_index: weakref to Var} for retain_grad()
        self.freed = False
        Node._counter += 1
        self.seq = Node._counter    # creation order: later nodes run first in backward
        self.trace = None           # forward stack in anomaly mode

    def name(self) -> str:
        if self.op[:1].isupper():  # a user-defined autograd.Function, named after its class
            return f"{self.op}Backward"
        return "".join(p.capitalize() for p in self.op.lstrip("_").rstrip("_").split("_")) + "Backward0"

    @property
    def next_functions(self):
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.edges)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after this node ran (PyTorch's Node.register_hook)."""
        raise NotImplementedError("Node hooks are not supported; use Tensor.register_hook")

    def __repr__(self) -> str:
        return f"<{self.name()} object>"


class AccumulateGrad:
    """The sink of a leaf Var: adds incoming gradients to ``var.grad``."""

    __slots__ = ("var", "seq", "__weakref__")
    edges = ()
    pre_hooks = None
    retained = None

    _counter = 0

    def __init__(self, var: Var):
        self.var = var
        # after every real node (seq >= 1), and among sinks in creation order, not by address: a
        # repeated training step then writes its gradients in the same order (Fusion's plan cache)
        AccumulateGrad._counter += 1
        self.seq = -AccumulateGrad._counter

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def next_functions(self):
        return ()

    @property
    def variable(self):
        return self.var

    def __repr__(self) -> str:
        return "<AccumulateGrad object>"


# ---- version counters --------------------------------------------------------------------------
# Keyed by the storage object of a handle (the array that owns the memory), so every view of a
# storage shares one counter. Entries hold a weak reference to the storage and are pruned when it dies.
_versions: dict[int, list] = {}


def version(storage) -> int:
    entry = _versions.get(id(storage))
    if entry is None or entry[0]() is not storage:
        return 0
    return entry[1]


def bump(storage) -> None:
    key = id(storage)
    entry = _versions.get(key)
    if entry is None or entry[0]() is not storage:
        if len(_versions) > 4096:
            for k in [k for k, e in _versions.items() if e[0]() is None]:
                del _versions[k]
        try:
            _versions[key] = [weakref.ref(storage), 1]
        except TypeError:  # storage objects that can't be weakly referenced are not tracked
            return
    else:
        entry[1] += 1
