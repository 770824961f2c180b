"""Parameter counts and a layer-by-layer model summary (like Keras' ``model.summary()``).

>>> model = ember.nn.Sequential(ember.nn.Identity())
>>> print(ember.nn.utils.summary(model, (2, 3)))
Layer (type)    Output Shape  Param #
=====================================
Sequential      [2, 3]              0
  0 (Identity)  [2, 3]              0
=====================================
Total params: 0
Trainable params: 0
Non-trainable params: 0
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..module import Module

__all__ = ["num_params", "summary", "ModelSummary", "LayerRow"]


def num_params(module: Module, trainable_only: bool = True) -> int:
    """The number of parameter elements of ``module`` (shared parameters counted once); only those
    that require grad unless ``trainable_only=False``.

    >>> ember.nn.utils.num_params(ember.nn.ParameterList([ember.zeros(2, 3)]))
    6
    """
    if not isinstance(module, Module):
        raise TypeError(f"num_params expects an nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


@dataclass
class LayerRow:
    """One module call in a summary: its dotted name, class, depth, output shape(s), own parameters."""

    name: str
    type: str
    depth: int
    output_shape: object = None
    params: int = 0


@dataclass
class ModelSummary:
    """What :func:`summary` returns: the rows and totals; ``str()`` renders the table."""

    rows: list[LayerRow] = field(default_factory=list)
    total_params: int = 0
    trainable_params: int = 0

    @property
    def non_trainable_params(self) -> int:
        return self.total_params - self.trainable_params

    def __str__(self) -> str:
        header = ("Layer (type)", "Output Shape", "Param #")
        body = []
        for r in self.rows:
            label = r.type if r.depth == 0 else f"{r.name.rsplit('.', 1)[-1]} ({r.type})"
            body.append(("  " * r.depth + label, _fmt_shape(r.output_shape), f"{r.params:,}"))
        w0 = max(len(header[0]), *(len(b[0]) for b in body)) if body else len(header[0])
        w1 = max(len(header[1]), *(len(b[1]) for b in body)) if body else len(header[1])
        w2 = max(len(header[2]), *(len(b[2]) for b in body)) if body else len(header[2])
        width = w0 + w1 + w2 + 4

        def line(a: str, b: str, c: str) -> str:
            return f"{a:<{w0}}  {b:<{w1}}  {c:>{w2}}"
        out = [line(*header), "=" * width, *(line(*b) for b in body), "=" * width,
               f"Total params: {self.total_params:,}", f"Trainable params: {self.trainable_params:,}",
               f"Non-trainable params: {self.non_trainable_params:,}"]
        return "\n".join(out)

    __repr__ = __str__


def _fmt_shape(shape) -> str:
    if shape is None:
        return "-"
    if isinstance(shape, list) and shape and isinstance(shape[0], list):
        return ", ".join(str(s) for s in shape)
    return str(shape)


def _shape_of(out):
    """The output's shape as a list; several shapes for a tuple/list of tensors; None otherwise."""
    if isinstance(out, Tensor):
        return list(out.shape)
    if isinstance(out, (tuple, list)):
        shapes = [list(o.shape) for o in out if isinstance(o, Tensor)]
        return shapes or None
    if isinstance(out, dict):
        shapes = [list(o.shape) for o in out.values() if isinstance(o, Tensor)]
        return shapes or None
    return None


def _make_inputs(spec, dtype, device) -> tuple:
    """The forward arguments from a tensor, tuple of tensors, a size, or a list of sizes."""
    from ..._random import randn
    if isinstance(spec, Tensor):
        return (spec,)
    if isinstance(spec, (tuple, list)):
        if all(isinstance(s, int) for s in spec):  # one input size, batch dim included
            return (randn(*spec, dtype=dtype, device=device),)
        out = []
        for s in spec:
            if isinstance(s, Tensor):
                out.append(s)
            elif isinstance(s, (tuple, list)) and all(isinstance(n, int) for n in s):
                out.append(randn(*s, dtype=dtype, device=device))
            else:
                raise TypeError(f"summary: each input must be a Tensor or a size tuple, got {s!r}")
        return tuple(out)
    raise TypeError(f"summary: input must be a Tensor, a size tuple, or a list of either, got {type(spec).__name__}")


def summary(module: Module, input_size_or_data, *, dtype=None, device=None, depth: int | None = None,
            **forward_kwargs) -> ModelSummary:
    """Run one forward pass (under no_grad) and tabulate each module call: name and type, output
    shape, and the module's own parameter count (so the column sums to the total).

    ``input_size_or_data`` is an example input tensor, a tuple of tensors, an input size with the
    batch dim (random normal data of ``dtype`` on ``device`` is used), or a list of sizes for a
    multi-input forward. ``depth`` hides rows nested deeper than that. The module's training mode is
    left as it is.
    """
    if not isinstance(module, Module):
        raise TypeError(f"summary expects an nn.Module, got {type(module).__name__}")
    if device is None:
        first = next(module.parameters(), None)
        device = first.device if first is not None else None
    inputs = _make_inputs(input_size_or_data, dtype, device)
    result = ModelSummary()
    seen_params: set[int] = set()
    handles = []

    def pre_hook(name: str, depth_: int):
        def hook(mod, args):
            own = 0
            for p in mod.parameters(recurse=False):
                if id(p) not in seen_params:  # a shared or re-called module counts its parameters once
                    seen_params.add(id(p))
                    own += p.numel()
            result.rows.append(LayerRow(name, type(mod).__name__, depth_, None, own))
            stack.append(len(result.rows) - 1)
        return hook

    def post_hook(mod, args, out):
        result.rows[stack.pop()].output_shape = _shape_of(out)

    stack: list[int] = []
    try:
        for name, mod in module.named_modules():
            d = 0 if name == "" else name.count(".") + 1
            handles.append(mod.register_forward_pre_hook(pre_hook(name, d)))
            handles.append(mod.register_forward_hook(post_hook))
        with no_grad():
            module(*inputs, **forward_kwargs)
    finally:
        for h in handles:
            h.remove()
    if depth is not None:
        result.rows = [r for r in result.rows if r.depth <= depth]
    result.total_params = num_params(module, trainable_only=False)
    result.trainable_params = num_params(module)
    return result
