"""ember.onnx: ONNX models as readable ember code (see docs/onnx.md).

``load(path_or_proto)`` builds the model in memory; ``import_model(path_or_proto, out_dir)`` writes
``out_dir/model.py`` (an ``ember.nn.Module`` subclass, one line of ``forward`` per node) and
``out_dir/weights.safetensors``. The ``onnx`` package (``pip install ember[onnx]``) is needed only to
read models; generated code imports only ember.

>>> import ember.onnx
>>> # model = ember.onnx.load("resnet18.onnx"); y = model(ember.randn(1, 3, 224, 224))
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass
from typing import Any

from .ops import OnnxOpError

__all__ = ["OnnxOpError", "convert", "import_model", "load", "Converted"]


@dataclass
class Converted:
    """The result of :func:`convert`: generated source, weights (name -> numpy array), the names
    of trainable weights, the pass statistics and each weight's ONNX name (attribute -> name)."""
    source: str
    weights: dict
    params: set
    stats: dict
    onnx_names: dict


def convert(src: Any, *, fold: bool = True) -> Converted:
    """Parse, upgrade, fold and prune an ONNX model, and generate its ember source."""
    from . import graph as G
    from .codegen import check_supported, generate, unsupported_nodes
    from .importer import parse_model, read_model
    from .upgrade import upgrade_graph

    mp = read_model(src)
    g, opsets = parse_model(mp)
    bad = unsupported_nodes(g)
    if bad and all("ember.onnx covers opset" in b for b in bad):
        # only nodes older than our upgraders reach: let onnx's version converter lift the model
        mp, g, opsets = _convert_version(mp, g, opsets)
    check_supported(g)
    stats = {"nodes": len(g.nodes), "opsets": opsets}
    stats["upgraded"] = upgrade_graph(g)
    params = G.trainable(g)
    if fold:
        stats["folded"] = G.fold_constants(g, params=params)
    G.remove_dead(g)
    stats["nodes_after"] = len(g.nodes)
    producer = f"{mp.producer_name} {mp.producer_version}".strip()
    header = f"{g.name}: ONNX model" + (f" from {producer}" if producer else "") + \
        f", opset {opsets.get('', '?')}"
    source, weights, params, names = generate(g, header=header, params=params)
    return Converted(source, weights, params, stats, names)


def _convert_version(mp, g, opsets):
    """The model converted by ``onnx.version_converter`` to the oldest opset every op covers (or
    unchanged when the converter cannot)."""
    from .importer import parse_model
    from .ops import OPS
    target = max(d.since for n in g.nodes if (d := OPS.get((n.domain, n.op_type))) is not None)
    try:
        from onnx import version_converter
        mp2 = version_converter.convert_version(mp, max(target, opsets.get("", 1)))
    except Exception:  # noqa: BLE001 - the converter refuses many models; the caller reports the nodes
        return mp, g, opsets
    g2, opsets2 = parse_model(mp2)
    return mp2, g2, opsets2


_COUNTER = [0]


def _instantiate(source: str, weights: dict, name: str = "model"):
    import numpy as np

    import ember
    _COUNTER[0] += 1
    filename = f"<ember.onnx:{name}:{_COUNTER[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": f"ember_onnx_generated_{_COUNTER[0]}", "__file__": filename}
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - our own generated code
    tensors = {}
    for k, a in weights.items():
        try:
            tensors[k] = ember.from_numpy(np.array(a, copy=True, order="C"))
        except TypeError as e:
            raise OnnxOpError(f"weight {k!r}: unsupported dtype {a.dtype} ({e})") from None
    return ns["Model"](tensors)


def load(src: Any, *, device=None, fold: bool = True):
    """An ONNX model (path, bytes or ``onnx.ModelProto``) as an ``ember.nn.Module``, in memory.

    >>> # model = ember.onnx.load("model.onnx"); out = model(x)
    """
    c = convert(src, fold=fold)
    model = _instantiate(c.source, c.weights)
    model.onnx_source = c.source
    model.onnx_names = c.onnx_names
    return model if device is None else model.to(device)


def import_model(src: Any, out_dir: str | os.PathLike, *, fold: bool = True) -> str:
    """Write ``out_dir/model.py`` and ``out_dir/weights.safetensors`` (and an ``__init__.py`` so the
    folder imports as a package); returns the path of ``model.py``.

    >>> # import_model("model.onnx", "pkg"); from pkg.model import load; m = load()
    """
    import numpy as np

    import ember
    c = convert(src, fold=fold)
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.py")
    with open(path, "w") as f:
        f.write(c.source)
    init = os.path.join(out_dir, "__init__.py")
    if not os.path.exists(init):
        with open(init, "w") as f:
            f.write('"""An ONNX model imported by ember.onnx."""\n\nfrom .model import Model, load  # noqa: F401\n')
    tensors = {k: ember.from_numpy(np.array(a, copy=True, order="C")) for k, a in c.weights.items()}
    ember.store.save_file(tensors, os.path.join(out_dir, "weights.safetensors"))
    return path
