"""Rewrite nodes of older opsets into the form the ops library implements (the newest).

Each op's upgraders (registered with :func:`ember.onnx.ops.upgrader`) are applied in order of their
``below`` version to every node whose model opset is older; each turns the node into the form of
version ``below`` (for example Squeeze-11's ``axes`` attribute becomes Squeeze-13's ``axes`` input).

>>> from ember.onnx.graph import Graph, Node
>>> g = Graph("g", [Node("Identity", ["x"], ["y"], opset=13)], [], [])
>>> upgrade_graph(g)
0
"""

from __future__ import annotations

import numpy as np

from .graph import Graph, Node
from .ops._registry import OPS


def upgrade_node(n: Node, constants: dict[str, np.ndarray]) -> bool:
    """Apply the registered upgraders to ``n`` in place; new constant inputs go into ``constants``.
    Returns whether anything was applied."""
    d = OPS.get((n.domain, n.op_type))
    if d is None or not d.upgraders:
        return False
    changed = False
    for below, fn in d.upgraders:
        if n.opset >= below:
            continue
        node = {"op_type": n.op_type, "inputs": list(n.inputs), "outputs": list(n.outputs),
                "attrs": dict(n.attrs), "opset": n.opset, "name": n.name, "domain": n.domain,
                "constants": {i: constants[i] for i in n.inputs if i and i in constants}}
        node = fn(node) or node
        for name, value in (node.get("new_constants") or {}).items():
            constants[name] = np.asarray(value)
        n.op_type = node.get("op_type", n.op_type)
        n.domain = node.get("domain", n.domain)
        n.inputs = list(node["inputs"])
        n.outputs = list(node["outputs"])
        n.attrs = dict(node["attrs"])
        n.opset = below
        changed = True
        d2 = OPS.get((n.domain, n.op_type))
        if d2 is not d:   # the upgrader turned it into another op (e.g. Upsample -> Resize)
            upgrade_node(n, constants)
            break
    return changed


def upgrade_graph(g: Graph) -> int:
    """Upgrade every node of ``g`` and its subgraphs; returns how many were rewritten.
    Constant inputs an upgrader adds are named uniquely (the node's output name + suffix)."""
    count = 0
    for n in g.nodes:
        for v in n.attrs.values():
            subs = [v] if isinstance(v, Graph) else (v if isinstance(v, list) and v and isinstance(v[0], Graph) else [])
            for sub in subs:
                count += upgrade_graph(sub)
        count += upgrade_node(n, g.constants)
    return count
