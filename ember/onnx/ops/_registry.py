"""The ONNX operator registry: op type -> the ember function that computes it.

Every supported ONNX operator is a plain function in one of this package's modules, registered
with :func:`op`. Generated model code calls them by their Python name (``ops.conv(x, w, b,
strides=(1, 1))``), so the functions are the readable runtime library of imported models.

Conventions (shared by every op module):

* Positional parameters are the node's inputs in ONNX order, as ember Tensors; an omitted optional
  input is ``None`` (trailing omitted inputs are simply not passed).
* Keyword parameters are the node's attributes under their ONNX names (``kernel_shape``,
  ``auto_pad``, ``axis``...), with ONNX's defaults as Python defaults. Ints and floats are Python
  numbers, ints/floats lists are tuples, strings are ``str``, a TENSOR attribute is an ember Tensor,
  a GRAPH attribute is a callable subgraph (control flow only).
* Functions implement the NEWEST opset's semantics of their op. Older nodes are rewritten to the
  newest form before code generation by upgraders registered with :func:`upgrader` (for example
  Clip-6's ``min``/``max`` attributes become inputs, Squeeze-1's ``axes`` attribute becomes an input).
* An op with a variable number of outputs takes a keyword ``n_outputs`` (the code generator passes
  the node's output count) and returns a tuple; otherwise it returns one Tensor, or a tuple when the
  op always has several outputs.
* Anything the op cannot do (a dtype ember lacks, an attribute value outside the spec) raises
  ``OnnxOpError`` naming the op and the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


class OnnxOpError(RuntimeError):
    """An ONNX node ember cannot run: unsupported op, opset, dtype or attribute value."""


@dataclass
class OpDef:
    onnx_name: str              # "Conv"
    fn: Callable                # ember implementation (newest semantics)
    domain: str = ""            # "" (ai.onnx) or "com.microsoft", ...
    since: int = 1              # the oldest opset this function (with upgraders) covers
    upgraders: list[tuple[int, Callable]] = field(default_factory=list)  # (below_version, fn(node_dict) -> node_dict)


OPS: dict[tuple[str, str], OpDef] = {}


def op(onnx_name: str, *, domain: str = "", since: int = 1) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the implementation of ONNX ``onnx_name`` (newest semantics)."""
    def register(fn: Callable) -> Callable:
        key = (domain, onnx_name)
        if key in OPS:
            raise RuntimeError(f"ONNX op {domain or 'ai.onnx'}::{onnx_name} registered twice "
                               f"({OPS[key].fn.__module__}.{OPS[key].fn.__name__} and {fn.__module__}.{fn.__name__})")
        prev = _PENDING_UPGRADERS.pop(key, [])
        OPS[key] = OpDef(onnx_name, fn, domain, since, prev)
        return fn
    return register


_PENDING_UPGRADERS: dict[tuple[str, str], list[tuple[int, Callable]]] = {}


def upgrader(onnx_name: str, *, below: int, domain: str = "") -> Callable[[Callable], Callable]:
    """Register ``fn(node) -> node`` that rewrites a node of an opset older than ``below`` into the
    newer form. ``node`` is a dict: {"op_type", "inputs": [names], "outputs": [names], "attrs": {name: value},
    "opset": int, "constants": {input name: numpy array for inputs known at import time}}; an upgrader may
    add constant inputs by putting numpy arrays in ``node["new_constants"]`` ({name: array}) and naming
    them in ``inputs``."""
    def register(fn: Callable) -> Callable:
        key = (domain, onnx_name)
        target = OPS[key].upgraders if key in OPS else _PENDING_UPGRADERS.setdefault(key, [])
        target.append((below, fn))
        target.sort(key=lambda t: t[0])
        return fn
    return register


def lookup(onnx_name: str, domain: str = "") -> OpDef:
    """The OpDef for an op type, or OnnxOpError naming it."""
    d = "" if domain in ("", "ai.onnx") else domain
    try:
        return OPS[(d, onnx_name)]
    except KeyError:
        raise OnnxOpError(f"ONNX operator {d or 'ai.onnx'}::{onnx_name} is not supported by ember.onnx") from None
