"""Autodiff(inner): the backend decorator that adds reverse-mode differentiation to any backend.

Ops on raw inner handles go straight to ``inner`` (one type check per input). When an input is a
:class:`Var` and grad mode is on, the op is run on the inner values and recorded as a
:class:`Node` whose rule (``rules``) computes input gradients with ordinary backend ops.
"""

from __future__ import annotations

import traceback

from ..base import OPS
from .engine import run_backward
from .graph import STATE, Node, Var, bump, version
from .rules import NONDIFF, RULES, Rule

_INPLACE_FUNCTIONAL = {"assign": "_assign", "index_put_": "index_put"}
# the catalogue's in-place ops with a differentiable out-of-place form (relu_, hardtanh_, ...): candidates
# for running in place under autograd
_INPLACE_ACTIVATIONS = frozenset(op for op in OPS if op[-1] == "_" and op not in _INPLACE_FUNCTIONAL
                                 and op[:-1] in RULES)


def _functional(op: str) -> str:
    return _INPLACE_FUNCTIONAL.get(op) or op[:-1]


_SCALARS = frozenset({bool, int, float, str, tuple, type(None)})


def _is_handle(x) -> bool:
    return x.__class__ not in _SCALARS


class Autodiff:
    """Reverse-mode autodiff over ``inner`` (any backend): ``Autodiff(Numpy())``."""

    def __init__(self, inner):
        self.inner = inner
        self.name = f"autodiff({inner.name})"
        self.device_type = inner.device_type
        # (shape, dtype) of a handle in one call when the inner backend offers it
        self._meta = getattr(inner, "meta", None) or (lambda h: (inner.shape(h), inner.dtype(h)))

    # ---- protocol ------------------------------------------------------------------------------
    def run(self, op: str, inputs: tuple, attrs: dict):
        for x in inputs:
            if x.__class__ is Var:
                return self._run_tracked(op, inputs, attrs)
        if op[-1] == "_" or op == "assign":  # in-place on raw handles: bump the storage's version
            out = self.inner.run(op, inputs, attrs)
            bump(self.inner.storage(inputs[0]))
            return out
        return self.inner.run(op, inputs, attrs)

    def supports(self, op: str) -> bool:
        if not self.inner.supports(op):
            return False
        return op in RULES or op in NONDIFF or op[-1] == "_"

    def write(self, array):
        return self.inner.write(array)

    def read(self, h):
        return self.inner.read(h.value if h.__class__ is Var else h)

    def strides(self, h):
        return self.inner.strides(h.value if h.__class__ is Var else h)

    def shape(self, h):
        return self.inner.shape(h.value if h.__class__ is Var else h)

    def dtype(self, h):
        return self.inner.dtype(h.value if h.__class__ is Var else h)

    def storage(self, h):
        return self.inner.storage(h.value if h.__class__ is Var else h)

    def __getattr__(self, name):  # storage_offset, data_ptr, ... of the inner backend
        inner_attr = getattr(self.inner, name)
        if callable(inner_attr):
            return lambda h, *a, **k: inner_attr(h.value if h.__class__ is Var else h, *a, **k)
        return inner_attr

    # ---- recording -----------------------------------------------------------------------------
    def _run_tracked(self, op, inputs, attrs):
        vals = []
        requires = False
        for x in inputs:
            if x.__class__ is Var:
                vals.append(x.value)
                requires = requires or x.requires_grad
            else:
                vals.append(x)
        vals = tuple(vals)
        if op[-1] == "_" or op == "assign":
            return self._inplace(op, inputs, vals, attrs)
        out = self._compute(op, vals, attrs)
        if not requires or not STATE.grad_enabled:
            return out
        rule = RULES.get(op)
        if rule is None:
            if op in NONDIFF:
                return out
            raise RuntimeError(f"the derivative for '{op}' is not implemented")
        return self._record(op, rule, inputs, vals, attrs, out)

    def _compute(self, op, vals, attrs):
        if op == "_assign":  # functional assign: a copy of dst with src written over it
            new = self.inner.run("copy", (vals[0],), {})
            self.inner.run("assign", (new, vals[1]), {})
            return new
        return self.inner.run(op, vals, attrs)

    def _record(self, op, rule, inputs, vals, attrs, out):
        inner = self.inner
        meta = self._meta
        edges = tuple([x.edge() if x.__class__ is Var else None for x in inputs])
        in_meta = tuple([None if v.__class__ in _SCALARS else meta(v) for v in vals])
        multi = out.__class__ is tuple
        outs = out if multi else (out,)
        out_meta = tuple([meta(o) for o in outs])
        node = Node(op, attrs, rule, edges, in_meta, out_meta)
        saved = []
        for item in rule.save:
            if item.__class__ is int:
                if item >= len(inputs):  # rules of variadic ops name more inputs than a call may have
                    saved.append(("s", None))
                    continue
                v = vals[item]
                if v.__class__ in _SCALARS:
                    saved.append(("s", v))
                else:
                    st = inner.storage(v)
                    saved.append(("v", inputs[item], st, version(st), in_meta[item]))
            else:
                k = int(item[1:])
                o = outs[k]
                st = inner.storage(o)
                saved.append(("o", o, st, version(st), out_meta[k], k))
        node.saved = saved
        if STATE.anomaly:
            node.trace = traceback.format_stack()[:-3]
        nondiff = rule.nondiff_outputs
        wrapped = []
        for k, o in enumerate(outs):
            wrapped.append(Var(o, True, node, k) if out_meta[k][1].is_floating_point and k not in nondiff else o)
        return tuple(wrapped) if multi else wrapped[0]

    def _inplace(self, op, inputs, vals, attrs):
        inner = self.inner
        dst = inputs[0]
        tracked = STATE.grad_enabled and any(x.__class__ is Var and x.requires_grad for x in inputs)
        if not tracked:
            inner.run(op, vals, attrs)
            bump(inner.storage(vals[0]))
            return dst
        if dst.__class__ is Var and dst.node is None and dst.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        fop = _functional(op)
        rule = RULES.get(fop)
        if rule is None:
            raise RuntimeError(f"the derivative for in-place '{op}' is not implemented")
        if (op in _INPLACE_ACTIVATIONS and 0 not in rule.save and inner.supports(op)
                and all(x.__class__ in _SCALARS for x in inputs[1:])):
            # a unary in-place op whose rule needs only its result (relu_): run it in place and record
            # the node on the written buffer, instead of computing out of place and assigning back
            inner.run(op, vals, attrs)
            bump(inner.storage(vals[0]))
            new = self._record(fop, rule, inputs, vals, attrs, vals[0])
            if dst.__class__ is Var:
                dst.node, dst.out_index, dst.requires_grad = new.node, new.out_index, True
                return dst
            return new
        first = dst
        if 0 in rule.save:  # the rule needs the old value, which the write below destroys: keep a copy
            old = inner.run("copy", (vals[0],), {})
            first = Var(old, True, dst.node, dst.out_index) if dst.__class__ is Var else old
        new = self.run(fop, (first,) + tuple(inputs[1:]), attrs)
        inner.run("assign", (vals[0], new.value if new.__class__ is Var else new), {})
        bump(inner.storage(vals[0]))
        if new.__class__ is not Var:
            return dst
        if dst.__class__ is Var:
            dst.node, dst.out_index, dst.requires_grad = new.node, new.out_index, True
            return dst
        return Var(vals[0], True, new.node, new.out_index)

    # ---- the autograd API the frontend calls ---------------------------------------------------
    def requires_grad(self, h) -> bool:
        return h.__class__ is Var and h.requires_grad

    def set_requires_grad(self, h, flag: bool):
        if h.__class__ is Var:
            if not flag and h.node is not None:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                                   "a computed variable in a subgraph that doesn't require differentiation use "
                                   "var_no_grad = var.detach().")
            h.requires_grad = flag
            return h
        if not flag:
            return h
        d = self.inner.dtype(h)
        if not d.is_floating_point:
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients (got {d.name})")
        return Var(h, True)

    def detach(self, h):
        return h.value if h.__class__ is Var else h

    def grad(self, h):
        return h.grad if h.__class__ is Var else None

    def set_grad(self, h, g):
        if h.__class__ is not Var:
            if g is None:
                return h
            h = Var(h, False)
        h.grad = g
        return h

    def grad_fn(self, h):
        return h.node if h.__class__ is Var else None

    def is_leaf(self, h) -> bool:
        return h.__class__ is not Var or h.node is None

    def retain_grad(self, h):
        if h.__class__ is not Var or not h.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if h.node is None:
            return
        import weakref
        if h.node.retained is None:
            h.node.retained = {}
        h.node.retained[h.out_index] = weakref.ref(h)
        h.retains_grad = True

    def register_hook(self, h, fn):
        """fn(grad handle) -> handle | None, run when h's gradient is computed; returns a remover."""
        if h.__class__ is not Var or not h.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if h.node is None:
            if h.hooks is None:
                h.hooks = []
            hooks = h.hooks
        else:
            if h.node.pre_hooks is None:
                h.node.pre_hooks = {}
            hooks = h.node.pre_hooks.setdefault(h.out_index, [])
        hooks.append(fn)
        return _HookHandle(hooks, fn)

    def backward(self, roots, grads, retain_graph: bool = False, create_graph: bool = False, inputs=None):
        run_backward(self, roots, grads, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs,
                     accumulate=True, allow_unused=True)

    def grad_of(self, outputs, inputs, grad_outputs, retain_graph: bool, create_graph: bool, allow_unused: bool):
        return run_backward(self, outputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                            inputs=inputs, accumulate=False, allow_unused=allow_unused)

    def custom(self, name: str, inputs: tuple, outputs: tuple, backward_fn, nondiff_outputs=()) -> tuple:
        """Record a user-defined op (autograd.Function): ``backward_fn(output grads) -> input grads``.

        ``inputs``/``outputs`` are handles; returns the outputs as handles connected to the graph."""
        inner = self.inner
        raw_in = tuple(x.value if x.__class__ is Var else x for x in inputs)
        raw_out = tuple(o.value if o.__class__ is Var else o for o in outputs)
        if not STATE.grad_enabled or not any(x.__class__ is Var and x.requires_grad for x in inputs):
            return raw_out
        edges = tuple(x.edge() if x.__class__ is Var else None for x in inputs)
        in_meta = tuple((inner.shape(v), inner.dtype(v)) for v in raw_in)
        out_meta = tuple((inner.shape(o), inner.dtype(o)) for o in raw_out)
        node = Node(name, {}, Rule(lambda F, gs, s, n: backward_fn(gs), multi=True), edges, in_meta, out_meta)
        node.saved = []
        return tuple(Var(o, True, node, k) if m[1].is_floating_point and k not in nondiff_outputs else o
                     for k, (o, m) in enumerate(zip(raw_out, out_meta)))

    def __repr__(self) -> str:
        return f"Autodiff({self.inner!r})"


class _HookHandle:
    """What register_hook returns: ``.remove()`` unregisters the hook."""

    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)
