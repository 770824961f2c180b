"""The backward pass: walk the graph from the roots in dependency order and run each node's rule.

Nodes run once all their consumers have delivered gradients (dependency counts), newest first
among the ready ones; gradients for the same input are summed. With ``retain_graph=False`` each
node drops what it saved as soon as it has run, so the graph's memory is released during the pass.
"""

from __future__ import annotations

import heapq
import sys

import numpy as np

from .fn import F
from .graph import STATE, AccumulateGrad, Node, Var, version
from .pieces import SliceGrads


def _unpack(node: Node, create_graph: bool):
    if node.freed:
        raise RuntimeError(
            "Trying to backward through the graph a second time (or directly access saved tensors after they "
            "have already been freed). Saved intermediate values of the graph are freed when you call "
            ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
            "graph a second time or if you need to access saved tensors after calling backward.")
    out = []
    for entry in node.saved or ():
        kind = entry[0]
        if kind == "s":
            out.append(entry[1])
            continue
        obj, storage, ver, meta = entry[1], entry[2], entry[3], entry[4]
        if storage is not None and version(storage) != ver:
            shape, dtype = meta
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{dtype.name} {list(shape)}], which is output {0} of {node.name()}, is at version "
                f"{version(storage)}; expected version {ver} instead. Hint: clone the tensor before modifying it "
                f"in place, or avoid the in-place operation.")
        if kind == "o":
            value = obj
            out.append(Var(value, True, node, entry[5]) if create_graph else value)
        else:
            out.append(obj if create_graph or obj.__class__ is not Var else obj.value)
    return out


def _accumulate(fb: F, buf: list, i: int, g):
    cur = buf[i]
    if cur is None:
        buf[i] = g
        return
    if cur.__class__ is SliceGrads or g.__class__ is SliceGrads:
        both = cur.merge(g) if cur.__class__ is g.__class__ else None
        if both is not None:
            buf[i] = both
            return
        cur, g = _read(fb, cur), _read(fb, g)
    buf[i] = fb.add(cur, g)


def _read(fb: F, g):
    """A gradient as a backend handle (slice gradients kept in pieces are summed here)."""
    return g.value(fb) if g.__class__ is SliceGrads else g


def _has_nan(inner, h) -> bool:
    v = h.value if h.__class__ is Var else h
    d = inner.dtype(v)
    if not d.is_floating_point:
        return False
    arr = np.asarray(inner.read(v))
    return bool(np.isnan(arr.astype(np.float32) if arr.dtype.itemsize == 2 else arr).any())


def _discover(root_nodes):
    """Every node reachable from the roots, and how many edges point at each."""
    deps: dict = {}
    seen = set()
    stack = list(root_nodes)
    for n in root_nodes:
        seen.add(n)
    while stack:
        n = stack.pop()
        for e in n.edges:
            if e is None:
                continue
            child = e[0]
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen, deps


def _needed(nodes, targets):
    """Nodes from which a target node can be reached (others need not run in autograd.grad)."""
    memo: dict = {}
    for start in nodes:
        if start in memo:
            continue
        stack = [(start, iter(start.edges))]
        memo[start] = start in targets
        while stack:
            n, it = stack[-1]
            advanced = False
            for e in it:
                if e is None:
                    continue
                c = e[0]
                if c not in memo:
                    memo[c] = c in targets
                    stack.append((c, iter(c.edges)))
                    advanced = True
                    break
                if memo[c]:
                    memo[n] = True
            if not advanced:
                stack.pop()
                if stack and memo[n]:
                    memo[stack[-1][0]] = True
    return {n for n, v in memo.items() if v}


def run_backward(ad, roots, grads, *, retain_graph: bool, create_graph: bool, inputs=None,
                 accumulate: bool = True, allow_unused: bool = False):
    """Propagate ``grads`` from ``roots`` (Vars). With ``inputs`` (Vars), returns their gradients
    (autograd.grad) and, unless ``accumulate``, leaves every ``.grad`` untouched."""
    inner = ad.inner
    fb = F(ad if create_graph else inner)
    root_edges = []
    for i, r in enumerate(roots):
        e = r.edge() if r.__class__ is Var else None
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append(e)
    root_nodes = list({e[0]: None for e in root_edges})
    nodes, deps = _discover(root_nodes)

    capture: dict = {}       # (node, index) -> position in inputs
    if inputs is not None:
        for k, v in enumerate(inputs):
            e = v.edge() if v.__class__ is Var else None
            if e is None:
                if not allow_unused:
                    raise RuntimeError(f"One of the differentiated Tensors (input {k}) does not require grad")
                continue
            capture[e] = k
        targets = {e[0] for e in capture}
        needed = _needed(root_nodes, targets)
        deps = {}
        for n in needed:
            for e in n.edges:
                if e is not None and e[0] in needed:
                    deps[e[0]] = deps.get(e[0], 0) + 1
        nodes = needed
    results = [None] * (len(inputs) if inputs is not None else 0)

    buffers: dict = {}
    stored = {id(g) for g in grads}   # handles a leaf must not keep without copying
    for e, g in zip(root_edges, grads):
        node, idx = e
        if node not in nodes:
            continue
        buf = buffers.setdefault(node, [None] * _n_out(node))
        _accumulate(fb, buf, idx, g)

    ready = [(-n.seq, id(n), n) for n in root_nodes if n in nodes and deps.get(n, 0) == 0]
    heapq.heapify(ready)
    prev = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            gs = buffers.pop(node, None) or [None] * _n_out(node)
            gs = [_read(fb, g) for g in gs]
            if node.pre_hooks:
                for idx, hooks in node.pre_hooks.items():
                    for h in hooks:
                        if gs[idx] is not None:
                            r = h(gs[idx])
                            if r is not None:
                                gs[idx] = r
            if node.retained:
                for idx, ref in node.retained.items():
                    v = ref()
                    if v is not None and gs[idx] is not None:
                        v.grad = gs[idx] if v.grad is None else fb.add(v.grad, gs[idx])
            for idx in range(len(gs)):
                k = capture.get((node, idx))
                if k is not None and gs[idx] is not None:
                    results[k] = gs[idx] if results[k] is None else fb.add(results[k], gs[idx])
            if node.__class__ is AccumulateGrad:
                if accumulate and gs[0] is not None and (inputs is None or (node, 0) in capture):
                    _to_leaf(ad, fb, node.var, gs[0], create_graph, stored)
                continue
            if all(g is None for g in gs):
                in_grads = (None,) * len(node.edges)
            else:
                saved = _unpack(node, create_graph)
                rule = node.rule
                in_grads = rule.backward(fb, gs if rule.multi else gs[0], saved, node)
                if STATE.anomaly:
                    for g in in_grads:
                        if g is not None and g.__class__ is not SliceGrads and _has_nan(inner, g):
                            trace = "".join(node.trace or ())
                            raise RuntimeError(f"Function '{node.name()}' returned nan values in its gradient output."
                                               + (f"\nThe forward call that created it:\n{trace}" if trace else ""))
            if not retain_graph:
                node.saved = None
                node.freed = True
            for e, g, meta in zip(node.edges, in_grads, node.in_meta):
                if e is None:
                    continue
                child, idx = e
                if child not in nodes:
                    continue
                if g is not None:
                    if g.__class__ is not SliceGrads:
                        g = _as_input_dtype(fb, g, meta)
                    buf = buffers.setdefault(child, [None] * _n_out(child))
                    _accumulate(fb, buf, idx, g)
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(ready, (-child.seq, id(child), child))
    finally:
        STATE.grad_enabled = prev
    if inputs is not None and not allow_unused:
        for k, r in enumerate(results):
            if r is None and inputs[k].__class__ is Var and inputs[k].edge() is not None:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
    return results


def _as_input_dtype(fb: F, g, meta):
    """``g`` in its input's floating dtype, as PyTorch's engine casts a gradient to its input's dtype:
    the float32 gradient reaching a bfloat16 branch of ``x_f32 + y_bf16`` flows on in bfloat16, so
    the products behind it run at bfloat16 speed and the branch's grads keep its dtype."""
    want = meta[1] if meta is not None else None
    if want is None or not want.is_floating_point:
        return g
    have = fb.dtype(g)
    if have is want or not have.is_floating_point:
        return g
    return fb.cast(g, want)


def _n_out(node) -> int:
    return 1 if node.__class__ is AccumulateGrad else len(node.out_meta)


def _to_leaf(ad, fb: F, var: Var, g, create_graph: bool, stored: set):
    if var.hooks:
        for h in var.hooks:
            r = h(g)
            if r is not None:
                g = r
    inner = ad.inner
    if var.grad is None:
        raw = g.value if g.__class__ is Var else g
        # never let a leaf's .grad alias another buffer (a view, the caller's gradient, another leaf's)
        if not create_graph and (id(raw) in stored or not _owns_its_memory(inner, raw) or not _writable(raw)):
            g = inner.run("copy", (raw,), {})
        stored.add(id(g))
        var.grad = g
    elif create_graph or var.grad.__class__ is Var or g.__class__ is Var:
        var.grad = fb.add(var.grad, g)
    else:
        inner.run("add_", (var.grad, g), {})


def _owns_its_memory(inner, raw) -> bool:
    """Whether ``raw`` can be a leaf's .grad without aliasing anything: it owns its storage, or it is a
    whole-buffer view (a batch-norm weight's gradient reshaped from (C, 1, 1) to (C,)) of a storage that
    nothing else refers to. The second case asks CPython's reference count, on backends whose handles
    are plain arrays (numpy, CuPy), so that a reshape does not cost a copy per parameter per step."""
    st = inner.storage(raw)
    if st is raw:
        return True
    if not getattr(type(inner), "plain_array_views", False):
        return False
    if raw.size != st.size or raw.dtype != st.dtype or not raw.flags.c_contiguous or not st.flags.c_contiguous:
        return False
    # references to the storage: raw's base, the local ``st``, getrefcount's argument; any other holder
    # (another view, a saved tensor, the caller) makes it more
    return raw.base is st and sys.getrefcount(st) <= 3


def _writable(h) -> bool:
    flags = getattr(h, "flags", None)
    # CuPy's flags have no 'writeable' (its arrays always are)
    return True if flags is None else bool(getattr(flags, "writeable", True))
