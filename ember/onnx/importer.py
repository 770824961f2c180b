"""ONNX ModelProto -> :class:`ember.onnx.graph.Graph` (the ``onnx`` package is used only here).

:func:`read_model` accepts a path (external-data weights next to it are loaded), bytes or a
``ModelProto``; :func:`parse_model` decodes it: attributes to Python values, initializers and
``Constant`` nodes to numpy arrays, subgraphs recursively, model-local functions inlined, and the
types ONNX shape inference finds recorded in ``value_info``.

>>> # g, opsets = parse_model(read_model("model.onnx"))
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .graph import Graph, Node, Value, toposort
from .ops._registry import OnnxOpError


def _onnx():
    try:
        import onnx
    except ImportError as e:  # the optional extra
        raise ImportError("ember.onnx needs the 'onnx' package to read models: pip install ember[onnx]") from e
    return onnx


def read_model(src: Any):
    """A ModelProto from a path, bytes or a ModelProto (external data is resolved)."""
    onnx = _onnx()
    if isinstance(src, onnx.ModelProto):
        return src
    if isinstance(src, (bytes, bytearray)):
        return onnx.load_model_from_string(bytes(src))
    path = os.fspath(src)
    if not os.path.exists(path):
        raise FileNotFoundError(f"ember.onnx: no model file {path!r}")
    return onnx.load(path, load_external_data=True)


def to_array(t) -> np.ndarray:
    """A TensorProto as a numpy array (bfloat16 through ml_dtypes); strings stay an object array."""
    from onnx import TensorProto, numpy_helper
    if t.data_location == TensorProto.EXTERNAL and not t.raw_data:
        where = {e.key: e.value for e in t.external_data}.get("location", "?")
        raise OnnxOpError(f"tensor {t.name!r} keeps its data in the external file {where!r}: load the model "
                          "from its path (or call onnx.load_external_data_for_model first)")
    a = numpy_helper.to_array(t)
    return np.asarray(a)


def _type_of(name: str, tp) -> Value:
    which = tp.WhichOneof("value") if tp is not None else None
    if which == "tensor_type":
        tt = tp.tensor_type
        shape = None
        if tt.HasField("shape"):
            shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                          for d in tt.shape.dim)
        return Value(name, tt.elem_type, shape)
    if which == "sequence_type":
        return Value(name, kind="sequence")
    if which == "optional_type":
        return Value(name, kind="optional")
    if which == "map_type":
        return Value(name, kind="map")
    return Value(name, kind="unknown")


def type_str(tp) -> str:
    """A TypeProto as ONNX writes it: ``tensor(float)``, ``seq(tensor(int64))``, ``optional(...)``."""
    from onnx import helper
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return f"tensor({helper.tensor_dtype_to_np_dtype(tp.tensor_type.elem_type).name})" \
            if tp.tensor_type.elem_type else "tensor"
    if which == "sequence_type":
        return f"seq({type_str(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({type_str(tp.optional_type.elem_type)})"
    return which or "unknown"


def _attr_value(a, opsets: dict[str, int], where: str, functions: dict | None = None) -> Any:
    onnx = _onnx()
    A = onnx.AttributeProto
    t = a.type
    if t == A.FLOAT:
        return float(a.f)
    if t == A.INT:
        return int(a.i)
    if t == A.STRING:
        return a.s.decode("utf-8", "replace")
    if t == A.TENSOR:
        return to_array(a.t)
    if t == A.GRAPH:
        return parse_graph(a.g, opsets, functions)
    if t == A.FLOATS:
        return tuple(float(x) for x in a.floats)
    if t == A.INTS:
        return tuple(int(x) for x in a.ints)
    if t == A.STRINGS:
        return tuple(s.decode("utf-8", "replace") for s in a.strings)
    if t == A.TENSORS:
        return tuple(to_array(x) for x in a.tensors)
    if t == A.GRAPHS:
        return [parse_graph(x, opsets, functions) for x in a.graphs]
    if t == A.TYPE_PROTO:
        return type_str(a.tp)
    if t == A.TYPE_PROTOS:
        return tuple(type_str(x) for x in a.type_protos)
    raise OnnxOpError(f"{where}: attribute {a.name!r} has type {A.AttributeType.Name(t)}, "
                      "which ember.onnx does not support")


def constant_value(attrs: dict[str, Any], where: str) -> np.ndarray:
    """The value of a ``Constant`` node from its (decoded) attributes."""
    if "value" in attrs:
        return np.asarray(attrs["value"])
    if "value_float" in attrs:
        return np.array(attrs["value_float"], np.float32)
    if "value_floats" in attrs:
        return np.array(attrs["value_floats"], np.float32)
    if "value_int" in attrs:
        return np.array(attrs["value_int"], np.int64)
    if "value_ints" in attrs:
        return np.array(attrs["value_ints"], np.int64)
    if "value_string" in attrs:
        return np.array(attrs["value_string"], dtype=object)
    if "value_strings" in attrs:
        return np.array(attrs["value_strings"], dtype=object)
    raise OnnxOpError(f"{where}: Constant with attributes {sorted(attrs)} is not supported "
                      "(sparse constants are not)")


def parse_graph(gp, opsets: dict[str, int], functions: dict | None = None) -> Graph:
    """Decode a GraphProto (recursively); ``Constant`` nodes become constants."""
    functions = functions or {}
    g = Graph(gp.name or "graph", [], [], [], doc=gp.doc_string)
    for t in gp.initializer:
        g.constants[t.name] = to_array(t)
        g.initializers.add(t.name)
    for t in gp.sparse_initializer:
        raise OnnxOpError(f"graph {gp.name!r}: sparse initializer {t.values.name!r} is not supported")
    types = {v.name: v.type for v in list(gp.input) + list(gp.value_info) + list(gp.output)}
    for t in gp.initializer:
        types.setdefault(t.name, _onnx().helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    g.inputs = [_type_of(v.name, v.type) for v in gp.input if v.name not in g.constants]
    g.outputs = [_type_of(v.name, v.type) for v in gp.output]
    for v in gp.value_info:
        g.value_info[v.name] = _type_of(v.name, v.type)
    _add_nodes(g, gp.node, opsets, functions, {}, "", types=types)
    toposort(g)
    return g


def _schema_function(node, opset: int, types: dict):
    """The FunctionProto ONNX defines ``node``'s op with (static, or built for the node's input
    types), or None: lets ember run ops it has no function for through their definition."""
    onnx = _onnx()
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        if schema.has_function:
            raw = schema.get_function_with_opset_version(opset)
        elif schema.has_context_dependent_function:
            if any(x and x not in types for x in node.input):
                return None
            tps = [types[x].SerializeToString() if x else onnx.TypeProto().SerializeToString()
                   for x in node.input]
            raw = schema.get_context_dependent_function_with_opset_version(opset, node.SerializeToString(), tps)
        else:
            return None
        return onnx.FunctionProto.FromString(raw) if raw else None
    except Exception:  # noqa: BLE001 - no definition: the op is reported unsupported
        return None


def _add_nodes(g: Graph, nodes, opsets, functions, rename: dict[str, str], prefix: str,
               fn_attrs: dict[str, Any] | None = None, types: dict | None = None) -> None:
    for i, np_ in enumerate(nodes):
        domain = "" if np_.domain in ("", "ai.onnx") else np_.domain
        where = f"node {np_.name or np_.op_type!r} ({np_.op_type})"
        attrs = {}
        for a in np_.attribute:
            if a.ref_attr_name:   # inside a function body: the caller's attribute
                if fn_attrs is not None and a.ref_attr_name in fn_attrs:
                    attrs[a.name] = fn_attrs[a.ref_attr_name]
                continue
            attrs[a.name] = _attr_value(a, opsets, where, functions)
        ins = [rename.get(x, x) if x else "" for x in np_.input]
        outs = [rename.setdefault(x, prefix + x) if (x and prefix) else x for x in np_.output]
        key = (np_.domain, np_.op_type)
        fp = None
        if not _registered(domain, np_.op_type):
            fp = functions.get(key) or _schema_function(np_, opsets.get(domain, 1), types or {})
        if fp is not None:
            inner = {formal: actual for formal, actual in zip(fp.input, ins)}
            inner.update({formal: "" for formal in fp.input[len(ins):]})   # omitted optional inputs
            inner.update({formal: actual for formal, actual in zip(fp.output, outs)})
            defaults = {a.name: _attr_value(a, opsets, where) for a in fp.attribute_proto}
            defaults.update(attrs)
            sub_opsets = dict(opsets)
            sub_opsets.update({o.domain: o.version for o in fp.opset_import})
            _add_nodes(g, fp.node, sub_opsets, functions, inner,
                       f"{prefix}{np_.name or np_.op_type}_{i}__", defaults)
            continue
        if np_.op_type == "Constant" and domain == "":
            g.constants[outs[0]] = constant_value(attrs, where)
            continue
        g.nodes.append(Node(np_.op_type, ins, outs, attrs, prefix + np_.name, domain,
                            opsets.get(domain, 1)))


def _registered(domain: str, op_type: str) -> bool:
    from . import ops
    return (domain, op_type) in ops.OPS


def parse_model(mp) -> tuple[Graph, dict[str, int]]:
    """Decode a ModelProto: the main graph (with shape-inferred ``value_info``) and the opsets."""
    onnx = _onnx()
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in mp.opset_import}
    if "" not in opsets:
        opsets[""] = 1
    try:  # types of intermediate values: used by passes and written as comments
        inferred = onnx.shape_inference.infer_shapes(mp, strict_mode=False)
        gp = inferred.graph
        if len(gp.node) != len(mp.graph.node):
            gp = mp.graph
    except Exception:  # inference is advisory: a model it rejects may still import
        gp = mp.graph
    functions = {(f.domain, f.name): f for f in mp.functions}
    g = parse_graph(gp, opsets, functions)
    g.name = mp.graph.name or "model"
    return g, opsets
