"""The importer's graph IR and the passes that run on it before code generation.

A :class:`Graph` is the ONNX graph with everything decoded into plain Python: attribute values
are numbers, strings, tuples, numpy arrays (TENSOR) or nested :class:`Graph` objects (GRAPH), and
constants (initializers and ``Constant`` nodes) are numpy arrays. The passes:

* :func:`fold_constants` evaluates every node whose inputs are all constants with the ops library
  (shape arithmetic, ``Constant``/``ConstantOfShape``, casts of constants...), so generated code
  keeps only the computation that depends on the model's inputs or trainable weights;
* :func:`remove_dead` drops nodes and constants no graph output depends on;
* :func:`trainable` names the constants that become ``nn.Parameter`` (floating weights of the main
  graph, not used as shapes, scales, bounds or running statistics); every other constant becomes a
  buffer;
* :func:`toposort` orders nodes producers-first (for exporters that write them out of order).

>>> g = Graph("g", nodes=[], inputs=[Value("x")], outputs=[Value("x")])
>>> remove_dead(g); len(g.nodes)
0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Ops whose result is not a function of their inputs (or that run subgraphs): never folded.
NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
           "Multinomial", "Dropout", "If", "Loop", "Scan", "SequenceMap", "Optional",
           "OptionalGetElement", "OptionalHasElement"}
# Folding results bigger than this stay computed at run time (a ConstantOfShape of a big shape
# would otherwise bloat the weights file).
FOLD_LIMIT = 1 << 20


@dataclass
class Value:
    """A graph input/output: its name, ONNX element type (TensorProto enum) and shape (ints for
    fixed dims, strings for named dynamic dims, None for unknown), or ``kind`` for non-tensors."""
    name: str
    elem_type: int | None = None
    shape: tuple | None = None
    kind: str = "tensor"   # "tensor", "sequence", "optional", "map", "unknown"


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    domain: str = ""
    opset: int = 1


@dataclass
class Graph:
    name: str
    nodes: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    constants: dict[str, np.ndarray] = field(default_factory=dict)   # name -> value
    initializers: set[str] = field(default_factory=set)              # the constants that were initializers
    value_info: dict[str, Value] = field(default_factory=dict)       # inferred types of intermediate values
    doc: str = ""

    def subgraphs(self) -> list[Graph]:
        """Every GRAPH attribute of this graph's nodes (one level)."""
        out = []
        for n in self.nodes:
            for v in n.attrs.values():
                if isinstance(v, Graph):
                    out.append(v)
                elif isinstance(v, (list, tuple)) and v and isinstance(v[0], Graph):
                    out.extend(v)
        return out


def free_names(g: Graph) -> set[str]:
    """Names a (sub)graph reads from enclosing scopes: used but neither defined nor its input."""
    defined = {v.name for v in g.inputs} | set(g.constants)
    used: set[str] = set()
    for n in g.nodes:
        used.update(i for i in n.inputs if i and i not in defined)
        for sub in _node_subgraphs(n):
            used.update(x for x in free_names(sub) if x not in defined)
        defined.update(n.outputs)
    used.update(v.name for v in g.outputs if v.name not in defined)
    return used


def _node_subgraphs(n: Node) -> list[Graph]:
    out = []
    for v in n.attrs.values():
        if isinstance(v, Graph):
            out.append(v)
        elif isinstance(v, (list, tuple)) and v and isinstance(v[0], Graph):
            out.extend(v)
    return out


def node_reads(n: Node) -> set[str]:
    """Every value name node ``n`` reads, including its subgraphs' outer-scope references."""
    r = {i for i in n.inputs if i}
    for sub in _node_subgraphs(n):
        r |= free_names(sub)
    return r


def toposort(g: Graph) -> None:
    """Order ``g.nodes`` so every node follows the producers of what it reads (ONNX requires it,
    but some exporters write nodes out of order). Stable: a sorted graph keeps its order."""
    producer = {o: i for i, n in enumerate(g.nodes) for o in n.outputs if o}
    state: dict[int, int] = {}
    order: list[Node] = []
    for start in range(len(g.nodes)):
        stack = [(start, False)]
        while stack:
            i, done = stack.pop()
            if done:
                state[i] = 2
                order.append(g.nodes[i])
                continue
            if state.get(i):
                continue   # placed, or on the current path (a cycle: leave it for the error)
            state[i] = 1
            stack.append((i, True))
            deps = sorted({producer[x] for x in node_reads(g.nodes[i]) if x in producer}, reverse=True)
            stack.extend((d, False) for d in deps if not state.get(d))
    g.nodes = order


def remove_dead(g: Graph, keep: set[str] | None = None) -> None:
    """Drop nodes (and constants) that no output of ``g`` (nor a name in ``keep``) depends on.
    Recurses into subgraphs, each of which keeps what its outputs need."""
    live = {v.name for v in g.outputs} | (keep or set())
    kept: list[Node] = []
    for n in reversed(g.nodes):
        if any(o and o in live for o in n.outputs):
            kept.append(n)
            live |= node_reads(n)
    g.nodes = kept[::-1]
    for name in list(g.constants):
        if name not in live:
            del g.constants[name]
            g.initializers.discard(name)
    for sub in g.subgraphs():
        remove_dead(sub)


# Inputs of these ops are shapes, sizes, scales or bounds, never weights.
_SHAPE_USES = {"Reshape", "Expand", "Tile", "Pad", "Slice", "ConstantOfShape", "Resize", "Upsample",
               "Clip", "Range", "OneHot", "TopK", "Squeeze", "Unsqueeze", "Split", "CenterCropPad"}


def trainable(g: Graph) -> set[str]:
    """Constants of the main graph that become trainable parameters: floating tensors with more
    than one element (initializers, or ``Constant`` nodes as PaddlePaddle exports weights) that no
    node reads as a shape, scale or bound (nor as BatchNormalization running statistics)."""
    shape_use = {i for n in g.nodes if n.op_type in _SHAPE_USES for i in n.inputs[1:]}
    shape_use |= {i for n in g.nodes if n.op_type == "BatchNormalization" for i in n.inputs[3:5]}
    out = set()
    for k, v in g.constants.items():
        a = np.asarray(v)
        if (a.dtype.kind == "f" or str(a.dtype) == "bfloat16") and a.size > 1 and k not in shape_use:
            out.add(k)
    return out


def fold_constants(g: Graph, outer: dict[str, np.ndarray] | None = None,
                   params: set[str] | None = None) -> int:
    """Evaluate nodes whose inputs are all known constants; their outputs become constants.
    Inputs in ``params`` (trainable weights) are not folded through, so that gradients reach them.
    Returns how many nodes were folded."""
    from . import ops as ops_lib
    from .codegen import op_function

    params = params or set()
    known = dict(outer or {})
    known.update(g.constants)
    folded = 0
    keep: list[Node] = []
    for n in g.nodes:
        subs = _node_subgraphs(n)
        for sub in subs:
            folded += fold_constants(sub, known, params)
        if (n.op_type in NO_FOLD or subs or n.domain not in ("", "ai.onnx")
                or any(i and (i not in known or i in params) for i in n.inputs)
                or not all(n.outputs)):
            keep.append(n)
            continue
        try:
            fn, n_out = op_function(n)
            args = [None if not i else _to_ember(known[i]) for i in n.inputs]
            while args and args[-1] is None:
                args.pop()
            kw = {k: (_to_ember(v) if isinstance(v, np.ndarray) else v) for k, v in n.attrs.items()}
            if n_out is not None:
                kw["n_outputs"] = n_out
            res = fn(*args, **kw)
            res = res if isinstance(res, (tuple, list)) and (len(n.outputs) > 1 or n_out is not None) else (res,)
            arrays = [r.numpy() if hasattr(r, "numpy") else None for r in res]
            if (len(arrays) < len(n.outputs) or any(a is None for a in arrays[:len(n.outputs)])
                    or sum(a.size for a in arrays) > FOLD_LIMIT):
                raise ValueError("not foldable")
        except (ops_lib.OnnxOpError, TypeError, ValueError, RuntimeError, IndexError, KeyError,
                NotImplementedError, AttributeError, OverflowError, ZeroDivisionError):
            keep.append(n)   # it will fail (or work) again at run time, with the real error
            continue
        for o, a in zip(n.outputs, arrays):
            g.constants[o] = np.array(a, copy=True)
            known[o] = g.constants[o]
        folded += 1
    g.nodes = keep
    return folded


def _to_ember(a: np.ndarray):
    import ember
    a = np.asarray(a)
    return ember.from_numpy(np.array(a, copy=True, order="C"))
