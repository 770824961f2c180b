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
* A model runs on whatever device its inputs (and weights) are on, so every tensor an op makes
  itself (zeros, an index, a mask, a host-computed result) is created on its input's device:
  ``ember.zeros(n, dtype=x.dtype, device=x.device)``. :func:`device_of`, :func:`to_host`,
  :func:`from_host` and :func:`generator` below cover the cases a ``device=`` alone does not.
  An op with no tensor input at all (RandomNormal, an empty optional's OptionalHasElement) makes
  its result on ember's default device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import ember


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


# -- devices ----------------------------------------------------------------------------------------

def device_of(*values):
    """The device of the first tensor among ``values`` (searching sequences too), or None (ember's
    default device) when there is none: for ops whose tensor inputs may all be omitted.

    >>> device_of(None, [ember.zeros(1)])
    device(type='cpu')
    """
    for v in values:
        if isinstance(v, ember.Tensor):
            return v.device
        if isinstance(v, (list, tuple)):
            d = device_of(*v)
            if d is not None:
                return d
    return None


def to_host(t) -> np.ndarray:
    """A tensor's values as a numpy array, whatever its device (for ops computed on the host)."""
    return t.detach().cpu().numpy()


def from_host(a, like):
    """A host-computed numpy array as a tensor on the device of ``like`` (a tensor, a device or
    None for the default device); on the CPU it shares the array's memory."""
    dev = like.device if isinstance(like, ember.Tensor) else like
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")   # (np.ascontiguousarray would turn 0-d arrays into 1-d ones)
    t = ember.from_numpy(a)
    return t if dev is None or t.device == dev else t.to(dev)


def generator(seed, device=None):
    """A private generator seeded with ONNX's (float) ``seed`` attribute for ``device``, or None
    (the device's default generator) when the node has no seed: a seeded node must not reseed the
    global generator."""
    if seed is None:
        return None
    return ember.Generator(device if device is not None else ember.get_default_device()).manual_seed(int(seed))
