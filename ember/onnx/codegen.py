"""Graph IR -> the Python source of an ``ember.nn.Module`` (one line of ``forward`` per node).

The generated module imports only ember. Its ``Model.__init__(weights)`` registers every
initializer as an ``nn.Parameter`` (trainable float weights) or a buffer (integer tensors,
constants, folded values, tensor attributes) under a sanitized name; ``forward`` takes the graph
inputs and calls ``ops.<function>`` for each node; subgraphs of control-flow nodes (If, Loop, Scan)
become nested functions that read the enclosing values by closure. ``load(path)`` reads the weights
from ``weights.safetensors`` next to the module.

>>> src, weights, params, names = generate(graph)   # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import keyword
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import ops as ops_lib
from .graph import Graph, Node, trainable
from .ops._registry import OnnxOpError, lookup

_RESERVED = {"self", "ops", "ember", "nn", "os", "weights", "path", "device", "Model", "load",
             "None", "True", "False", "float", "super", "annotations"}


def op_function(n: Node) -> tuple[Callable, int | None]:
    """The ember function implementing node ``n`` and the ``n_outputs`` to pass (None when the
    function takes no such keyword)."""
    fn = lookup(n.op_type, n.domain).fn
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    return fn, (len(n.outputs) if "n_outputs" in params else None)


def unsupported_nodes(g: Graph) -> list[str]:
    """One line per node (recursively) whose op ember.onnx lacks: op type, opset and name."""
    out = []
    for n in g.nodes:
        d = ops_lib.OPS.get((n.domain, n.op_type))
        dom = n.domain or "ai.onnx"
        if d is None:
            out.append(f"{dom}::{n.op_type} (opset {n.opset}) node {n.name!r}")
        elif n.opset < d.since and not any(n.opset < below for below, _ in d.upgraders):
            out.append(f"{dom}::{n.op_type} (opset {n.opset}; ember.onnx covers opset {d.since} and newer) "
                       f"node {n.name!r}")
        for sub in _subs(n):
            out.extend(unsupported_nodes(sub))
    return out


def _subs(n: Node) -> list[Graph]:
    res = []
    for v in n.attrs.values():
        if isinstance(v, Graph):
            res.append(v)
        elif isinstance(v, list) and v and isinstance(v[0], Graph):
            res.extend(v)
    return res


def check_supported(g: Graph) -> None:
    """Raise OnnxOpError listing every unsupported node (not just the first)."""
    bad = unsupported_nodes(g)
    if bad:
        raise OnnxOpError(f"{len(bad)} ONNX node(s) use operators ember.onnx does not support:\n  "
                          + "\n  ".join(bad))


def ident(name: str) -> str:
    """A Python identifier close to an ONNX name (``/conv1/Conv_output_0`` -> ``conv1_Conv_output_0``)."""
    s = re.sub(r"\W+", "_", name).strip("_")
    if not s or s[0].isdigit():
        s = "v_" + s
    if keyword.iskeyword(s) or s in _RESERVED:
        s += "_"
    return s


def value_name(name: str) -> str:
    """A short identifier for an ONNX value name: exporters' scoped names lose their redundant parts
    (``/layer1/layer1.0/conv1/Conv_output_0`` -> ``layer1_0_conv1_Conv``)."""
    parts = [p for p in name.strip("/").split("/") if p]
    if len(parts) > 1 or name.startswith("/"):
        if parts:
            parts[-1] = re.sub(r"_output_0$", "", parts[-1])
        kept = [p for i, p in enumerate(parts)
                if not (i + 1 < len(parts) and parts[i + 1].startswith(p))]
        name = "_".join(kept) or name
    return ident(name)


@dataclass
class _Names:
    used: set[str] = field(default_factory=set)

    def fresh(self, base: str) -> str:
        b = ident(base)
        name, k = b, 1
        while name in self.used:
            k += 1
            name = f"{b}_{k}"
        self.used.add(name)
        return name


def _float_lit(x: float) -> str:
    if math.isnan(x):
        return "float('nan')"
    if math.isinf(x):
        return "float('inf')" if x > 0 else "-float('inf')"
    return repr(x)


class _Gen:
    def __init__(self, g: Graph, params: set[str] | None):
        self.g = g
        from ember import nn
        # module attribute (weight) names: never one of nn.Module's own attributes ("forward"...)
        self.attr_names = _Names({a for a in dir(nn.Module)} | {"training"})
        self.weights: dict[str, np.ndarray] = {}
        self.params: set[str] = set()
        self.onnx_names: dict[str, str] = {}   # module attribute -> ONNX constant name
        self.init_lines: list[str] = []
        self.trainable = trainable(g) if params is None else params
        self.types: dict = {}   # value name -> inferred Value, over every (sub)graph: for comments

        def collect(gr: Graph) -> None:
            self.types.update(gr.value_info)
            self.types.update({v.name: v for v in gr.outputs})
            for n in gr.nodes:
                for sub in _subs(n):
                    collect(sub)
        collect(g)

    # -- weights -----------------------------------------------------------------------------
    def add_weight(self, onnx_name: str, value: np.ndarray, param: bool) -> str:
        a = self.attr_names.fresh(onnx_name)
        arr = np.asarray(value)
        if arr.dtype == object:
            raise OnnxOpError(f"constant {onnx_name!r} has dtype string, which ember tensors do not support")
        self.weights[a] = arr
        self.onnx_names[a] = onnx_name
        note = onnx_name != a
        shape = "x".join(str(d) for d in arr.shape) or "scalar"
        if param:
            self.params.add(a)
            self.init_lines.append(f"self.{a} = nn.Parameter(weights[{a!r}])  # {shape} {arr.dtype}"
                                   + (f", {onnx_name}" if note else ""))
        else:
            self.init_lines.append(f"self.register_buffer({a!r}, weights[{a!r}])  # {shape} {arr.dtype}"
                                   + (f", {onnx_name}" if note else ""))
        return f"self.{a}"

    # -- literals ----------------------------------------------------------------------------
    def lit(self, v, where: str) -> str:
        if isinstance(v, bool):
            return repr(v)
        if isinstance(v, int):
            return repr(v)
        if isinstance(v, float):
            return _float_lit(v)
        if isinstance(v, str):
            return repr(v)
        if isinstance(v, np.ndarray):
            return self.add_weight(where, v, False)
        if isinstance(v, tuple):
            items = [self.lit(x, f"{where}_{i}") for i, x in enumerate(v)]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        raise OnnxOpError(f"{where}: attribute value {v!r} cannot be written as code")

    # -- graphs ------------------------------------------------------------------------------
    def graph_body(self, g: Graph, scope: dict[str, str], names: _Names, indent: str,
                   main: bool) -> list[str]:
        lines: list[str] = []
        for cname, value in g.constants.items():
            scope[cname] = self.add_weight(cname, value, main and cname in self.trainable)
        for n in g.nodes:
            lines.extend(self.node_lines(n, scope, names, indent))
        return lines

    def node_lines(self, n: Node, scope: dict[str, str], names: _Names, indent: str) -> list[str]:
        fn, n_out = op_function(n)
        lines: list[str] = []
        base = n.name or (n.outputs[0] if n.outputs else n.op_type)
        args = []
        for i in n.inputs:
            if not i:
                args.append("None")
            elif i in scope:
                args.append(scope[i])
            else:
                raise OnnxOpError(f"node {n.name!r} ({n.op_type}) reads {i!r}, which no node, input or "
                                  "initializer defines")
        while args and args[-1] == "None":
            args.pop()
        kws = []
        for k, v in n.attrs.items():
            if isinstance(v, Graph) or (isinstance(v, list) and v and isinstance(v[0], Graph)):
                subs = [v] if isinstance(v, Graph) else v
                fnames = []
                for j, sub in enumerate(subs):
                    fname = names.fresh(f"{base}_{k}" + (f"_{j}" if len(subs) > 1 else ""))
                    fnames.append(fname)
                    lines.extend(self.subgraph_def(sub, fname, scope, names, indent))
                kws.append(f"{k}={fnames[0] if isinstance(v, Graph) else '[' + ', '.join(fnames) + ']'}")
            else:
                kws.append(f"{k}={self.lit(v, ident(base) + '_' + k)}")
        if n_out is not None:
            kws.append(f"n_outputs={n_out}")
        outs = []
        for o in n.outputs:
            if o:
                scope[o] = names.fresh(value_name(o))
                outs.append(scope[o])
            else:
                outs.append("_")
        call = f"{self.fn_ref(fn)}({', '.join(args + kws)})"
        if not outs:
            target = "_"
        elif len(outs) == 1 and n_out is None:
            target = outs[0]
        elif len(outs) == 1:
            target, call = outs[0], f"ops.first({call})"
        else:
            target = ", ".join(outs) + ("," if len(outs) == 1 else "")
        notes = [n.name] if n.name and ident(n.name) != outs[0] else []
        shapes = [_shape_doc(self.types.get(o)) for o in n.outputs if o]
        if any(shapes):
            notes.append(", ".join(sh or "?" for sh in shapes))
        comment = f"  # {': '.join(notes)}" if notes else ""
        lines.append(f"{indent}{target} = {call}{comment}")
        return lines

    def subgraph_def(self, sub: Graph, fname: str, scope: dict[str, str], names: _Names,
                     indent: str) -> list[str]:
        inner = dict(scope)
        params = []
        for v in sub.inputs:
            inner[v.name] = names.fresh(v.name)
            params.append(inner[v.name])
        body = self.graph_body(sub, inner, names, indent + "    ", main=False)
        rets = []
        for v in sub.outputs:
            if v.name not in inner:
                raise OnnxOpError(f"subgraph {sub.name!r} output {v.name!r} is never defined")
            rets.append(inner[v.name])
        lines = [f"{indent}def {fname}({', '.join(params)}):  # subgraph {sub.name!r}"]
        lines.extend(body)
        lines.append(f"{indent}    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
        return lines

    @staticmethod
    def fn_ref(fn: Callable) -> str:
        if getattr(ops_lib, fn.__name__, None) is fn:
            return f"ops.{fn.__name__}"
        mod = fn.__module__.rsplit(".", 1)[-1]
        if getattr(getattr(ops_lib, mod, None), fn.__name__, None) is fn:
            return f"ops.{mod}.{fn.__name__}"
        raise OnnxOpError(f"op function {fn.__module__}.{fn.__name__} is not reachable from ember.onnx.ops")


def generate(g: Graph, *, header: str = "", params: set[str] | None = None
             ) -> tuple[str, dict[str, np.ndarray], set[str], dict[str, str]]:
    """Python source of the module for graph ``g``, its weights (attribute name -> array), the
    names of the trainable ones and each weight's ONNX name. ``params``: the constants to make parameters (default:
    :func:`ember.onnx.graph.trainable`)."""
    check_supported(g)
    gen = _Gen(g, params)
    names = _Names(set(_RESERVED))
    scope: dict[str, str] = {}
    args = []
    for v in g.inputs:
        scope[v.name] = names.fresh(v.name)
        args.append(scope[v.name])
    body = gen.graph_body(g, scope, names, " " * 8, main=True)
    rets = []
    for v in g.outputs:
        if v.name not in scope:
            raise OnnxOpError(f"graph output {v.name!r} is never defined")
        rets.append(scope[v.name])
    doc_in = ", ".join(f"{scope[v.name]}: {_type_doc(v)}" for v in g.inputs)
    doc_out = ", ".join(f"{scope[v.name]}: {_type_doc(v)}" for v in g.outputs)
    src = [f'"""{header or g.name} (generated by ember.onnx; edit freely)."""', "",
           "from __future__ import annotations", "", "import os", "", "import ember",
           "from ember import nn", "from ember.onnx import ops", "", "",
           "class Model(nn.Module):",
           f'    """Inputs: {doc_in or "none"}.\n\n    Outputs: {doc_out}.\n    """', "",
           "    def __init__(self, weights: dict[str, ember.Tensor]) -> None:",
           "        super().__init__()"]
    src += ["        " + ln for ln in gen.init_lines]
    src += ["", f"    def forward(self{''.join(', ' + a for a in args)}):"]
    src += body or []
    src.append(f"        return {', '.join(rets)}" if rets else "        return None")
    src += ["", "", "def load(path: str | None = None, device=None) -> Model:",
            '    """The model with its weights (``weights.safetensors`` next to this file by default)."""',
            "    if path is None:",
            "        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'weights.safetensors')",
            "    model = Model(ember.store.load_file(path))",
            "    return model if device is None else model.to(device)", ""]
    return "\n".join(src), gen.weights, gen.params, gen.onnx_names


def _shape_doc(v) -> str:
    """``[batch, 64, 56, 56]`` for an inferred tensor value ('' when unknown)."""
    if v is None or v.kind != "tensor" or v.shape is None:
        return ""
    return "[" + ", ".join("?" if d is None else str(d) for d in v.shape) + "]"


def _type_doc(v) -> str:
    if v.kind != "tensor":
        return v.kind
    try:
        from onnx import helper
        dt = helper.tensor_dtype_to_np_dtype(v.elem_type).name if v.elem_type else "?"
    except Exception:  # noqa: BLE001 - only a docstring
        dt = "?"
    shape = "[" + ", ".join("?" if d is None else str(d) for d in v.shape) + "]" if v.shape is not None else "[?]"
    return f"{dt}{shape}"
