"""``EmberBackend``: ember as an ``onnx.backend.base.Backend`` (used to run ONNX's node test suite).

``device`` is ONNX's device string ("CPU", "CUDA:0") or an ember device ("cuda", "cudasim"): the
model's weights and the inputs are placed there (``"CPU"`` keeps ember's default device).

>>> # from ember.onnx.backend import EmberBackend
>>> # outputs = EmberBackend.run_model(model_proto, [np.ones((2, 3), np.float32)])
>>> # outputs = EmberBackend.run_model(model_proto, [np.ones((2, 3), np.float32)], device="CUDA")
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper
from onnx.backend.base import Backend, BackendRep

import ember

from . import load


def ember_device(device: Any = "CPU"):
    """The ember device for ONNX's device string (``"CUDA:0"`` -> ``cuda:0``) or an ember device
    spec; None for ``"CPU"`` (ember's default device)."""
    if device is None or isinstance(device, ember.Device):
        return device
    kind, sep, index = str(device).partition(":")
    if kind == "CPU" and not index:
        return None
    return ember.device((kind.lower() if kind.isupper() else kind) + sep + index)


def to_ember(x: Any, device=None):
    """A numpy array (or list of them, or None) as ember values (on ``device``; default: ember's)."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [to_ember(v, device) for v in x]
    t = x if isinstance(x, ember.Tensor) else ember.from_numpy(np.array(x, copy=True, order="C"))
    return t if device is None else t.to(device)


def to_numpy(x: Any):
    """ember outputs (tensors, sequences, empty optionals) as numpy values."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [to_numpy(v) for v in x]
    return x.detach().cpu().numpy() if isinstance(x, ember.Tensor) else np.asarray(x)


class EmberRep(BackendRep):
    """A prepared model: ``run(inputs)`` -> list of numpy outputs."""

    def __init__(self, module, n_inputs: int, input_names: list[str], device=None):
        self.module = module
        self.n_inputs = n_inputs
        self.input_names = input_names
        self.device = device   # where inputs go (None: as given / ember's default device)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, dict):
            args = [inputs.get(n) for n in self.input_names]
        elif isinstance(inputs, (list, tuple)):
            args = list(inputs)
        else:
            args = [inputs]
        args = args + [None] * (self.n_inputs - len(args))
        with ember.no_grad():
            out = self.module(*[to_ember(a, self.device) for a in args])
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(to_numpy(o) for o in outs)


class EmberBackend(Backend):
    """Runs ONNX models with ember (CPU device by default; see :func:`ember_device`)."""

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> EmberRep:
        if kwargs.pop("check", True):
            super().prepare(model, device, **kwargs)
        dev = ember_device(device)
        module = load(model, device=dev)
        inits = {t.name for t in model.graph.initializer}
        names = [v.name for v in model.graph.input if v.name not in inits]
        return EmberRep(module, len(names), names, dev)

    @classmethod
    def run_model(cls, model: ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: NodeProto, inputs: Any, device: str = "CPU", outputs_info=None,
                 **kwargs: Any) -> tuple:
        ins = [helper.make_empty_tensor_value_info(n) for n in node.input if n]
        outs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "node", ins, outs)
        opset = kwargs.get("opset_version")
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] if opset else None)
        return cls.prepare(model, device, check=False).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        if str(device).upper().startswith("CPU"):
            return True
        try:
            ember_device(device)
        except Exception:  # noqa: BLE001 - an unknown or unavailable device
            return False
        return True


prepare = EmberBackend.prepare
run_model = EmberBackend.run_model
run_node = EmberBackend.run_node
supports_device = EmberBackend.supports_device
