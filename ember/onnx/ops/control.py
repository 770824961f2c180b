"""ONNX operators: control flow, sequences, optionals, Identity and Constant (see _registry.py).

Subgraph attributes (``then_branch``, ``body``...) are Python callables taking the subgraph's inputs
positionally and returning a tuple of its outputs. Sequences are Python lists of Tensors; an empty
optional is ``None``.

>>> import ember
>>> from ember.onnx import ops
>>> ops.if_(ember.tensor(True), then_branch=lambda: (ember.ones(1),),
...         else_branch=lambda: (ember.zeros(1),), n_outputs=1)
(tensor([1.]),)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import ember

from ._registry import OnnxOpError, device_of, op, to_host, upgrader

__all__ = ["first", "identity", "constant", "if_", "loop", "scan", "scan8", "sequence_construct", "sequence_empty",
           "sequence_at", "sequence_insert", "sequence_erase", "sequence_length",
           "split_to_sequence", "concat_from_sequence", "sequence_map", "optional",
           "optional_has_element", "optional_get_element"]


def _int(t, what: str) -> int:
    if isinstance(t, ember.Tensor):
        if t.numel() != 1:
            raise OnnxOpError(f"{what} must hold one value, got shape {tuple(t.shape)}")
        return int(t.reshape(()).item())
    return int(t)


def _bool(t) -> bool:
    return bool(t.reshape(()).item()) if isinstance(t, ember.Tensor) else bool(t)


def first(result):
    """The single output of a node whose op returns a tuple when asked for ``n_outputs=1``
    (and tolerate ops that return the tensor itself)."""
    return result[0] if isinstance(result, tuple) else result


@op("Identity")
def identity(x):
    """Identity: the input itself (tensor, sequence or optional)."""
    return x


@op("Constant")
def constant(*, value=None, value_float=None, value_floats=None, value_int=None, value_ints=None,
             value_string=None, value_strings=None, sparse_value=None):
    """Constant: the tensor given by exactly one of the ``value*`` attributes."""
    if value is not None:
        return value if isinstance(value, ember.Tensor) else ember.from_numpy(np.asarray(value))
    if value_float is not None:
        return ember.tensor(value_float, dtype=ember.float32)
    if value_floats is not None:
        return ember.tensor(list(value_floats), dtype=ember.float32)
    if value_int is not None:
        return ember.tensor(value_int, dtype=ember.int64)
    if value_ints is not None:
        return ember.tensor(list(value_ints), dtype=ember.int64)
    raise OnnxOpError("Constant: string and sparse constants are not supported by ember")


@op("If")
def if_(cond, *, then_branch: Callable, else_branch: Callable, n_outputs: int = 1):
    """If: run ``then_branch()`` or ``else_branch()`` by the (one-element) boolean ``cond``."""
    outs = tuple(then_branch() if _bool(cond) else else_branch())
    if len(outs) != n_outputs:
        raise OnnxOpError(f"If: the branch returned {len(outs)} values, the node has {n_outputs} outputs")
    return outs


def _stack(items: list, device, axis: int = 0):
    if not items:
        return ember.zeros(0, device=device)
    if isinstance(items[0], list) or items[0] is None:
        raise OnnxOpError("scan outputs must be tensors")
    return ember.stack(items, axis)


@op("Loop")
def loop(M=None, cond=None, *v_initial, body: Callable, n_outputs: int = 1):
    """Loop: ``body(i, cond, *v) -> (cond, *v, *scan_outputs)`` while ``i < M`` and ``cond``;
    returns the final loop-carried values then each scan output stacked along a new axis 0."""
    trips = None if M is None else _int(M, "Loop: M")
    keep = True if cond is None else _bool(cond)
    v = list(v_initial)
    n_scan = n_outputs - len(v)
    scans: list[list] = [[] for _ in range(n_scan)]
    dev = device_of(M, cond, *v_initial)   # the iteration number and condition live beside them
    i = 0
    while (trips is None or i < trips) and keep:
        outs = body(ember.tensor(i, dtype=ember.int64, device=dev), ember.tensor(keep, device=dev), *v)
        if len(outs) != 1 + len(v) + n_scan:
            raise OnnxOpError(f"Loop: the body returned {len(outs)} values, expected {1 + len(v) + n_scan}")
        keep = _bool(outs[0])
        v = list(outs[1:1 + len(v)])
        for k in range(n_scan):
            scans[k].append(outs[1 + len(v) + k])
        i += 1
    return tuple(v) + tuple(_stack(s, dev) for s in scans)


@op("Scan", since=9)
def scan(*inputs, body: Callable, num_scan_inputs: int, scan_input_axes: Sequence[int] | None = None,
         scan_input_directions: Sequence[int] | None = None,
         scan_output_axes: Sequence[int] | None = None,
         scan_output_directions: Sequence[int] | None = None, n_outputs: int = 1):
    """Scan (opset 9+): the first ``len(inputs) - num_scan_inputs`` inputs are states; the body runs
    once per slice of the scan inputs and returns ``(*states, *scan_output_slices)``."""
    m = num_scan_inputs
    n = len(inputs) - m
    states, xs = list(inputs[:n]), list(inputs[n:])
    in_axes = list(scan_input_axes or [0] * m)
    in_dirs = list(scan_input_directions or [0] * m)
    in_axes = [a + x.dim() if a < 0 else a for a, x in zip(in_axes, xs)]
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) > 1:
        raise OnnxOpError(f"Scan: scan inputs have different lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else 0
    k = n_outputs - n
    collected: list[list] = [[] for _ in range(k)]
    for t in range(length):
        slices = [x.select(a, length - 1 - t if d else t) for x, a, d in zip(xs, in_axes, in_dirs)]
        outs = body(*states, *slices)
        states = list(outs[:n])
        for j in range(k):
            collected[j].append(outs[n + j])
    out_axes = list(scan_output_axes or [0] * k)
    out_dirs = list(scan_output_directions or [0] * k)
    results = []
    for j in range(k):
        items = collected[j][::-1] if out_dirs[j] else collected[j]
        if not items:
            results.append(ember.zeros(0, device=device_of(inputs)))
            continue
        ax = out_axes[j]
        ax = ax + items[0].dim() + 1 if ax < 0 else ax
        results.append(ember.stack(items, ax))
    return tuple(states) + tuple(results)


@upgrader("Scan", below=9)
def _scan8_to_batched(node: dict) -> dict:
    # Scan-8 has a batch axis and a leading sequence_lens input: run it with ember's Scan8
    node["op_type"], node["domain"] = "Scan8", "ember.internal"
    return node


@op("Scan8", domain="ember.internal", since=8)
def scan8(sequence_lens=None, *inputs, body: Callable, num_scan_inputs: int,
          directions: Sequence[int] | None = None, n_outputs: int = 1):
    """Scan-8 (batched): every input has a leading batch axis (scan inputs scan along axis 1);
    ``sequence_lens`` must be omitted or equal the full length for every batch entry."""
    if not inputs:
        raise OnnxOpError("Scan-8: no inputs")
    batch = inputs[0].shape[0]
    if sequence_lens is not None:
        full = inputs[-1].shape[1]
        lens = to_host(sequence_lens).reshape(-1)
        if (lens != full).any():
            raise OnnxOpError(f"Scan-8: sequence_lens {lens.tolist()} shorter than the scan length {full} "
                              "are not supported")
    per = [scan(*[x[b] for x in inputs], body=body, num_scan_inputs=num_scan_inputs,
                scan_input_directions=directions, n_outputs=n_outputs) for b in range(batch)]
    return tuple(ember.stack([p[j] for p in per]) for j in range(n_outputs))


# -- sequences ----------------------------------------------------------------------------------

@op("SequenceConstruct")
def sequence_construct(*inputs):
    """SequenceConstruct: a sequence (list) of the input tensors."""
    return list(inputs)


@op("SequenceEmpty")
def sequence_empty(*, dtype: int = 1):
    """SequenceEmpty: an empty sequence."""
    return []


def _pos(seq: list, pos, what: str, insert: bool = False) -> int:
    p = _int(pos, f"{what}: position")
    n = len(seq) + (1 if insert else 0)
    if not -n <= p < n:
        raise IndexError(f"{what}: position {p} is out of range for a sequence of {len(seq)}")
    return p + n if p < 0 else p


@op("SequenceAt")
def sequence_at(input_sequence: list, position):
    """SequenceAt: the tensor at ``position`` (negative counts from the end)."""
    return input_sequence[_pos(input_sequence, position, "SequenceAt")]


@op("SequenceInsert")
def sequence_insert(input_sequence: list, tensor, position=None):
    """SequenceInsert: a new sequence with ``tensor`` inserted at ``position`` (default: appended)."""
    out = list(input_sequence)
    if position is None:
        out.append(tensor)
    else:
        out.insert(_pos(input_sequence, position, "SequenceInsert", insert=True), tensor)
    return out


@op("SequenceErase")
def sequence_erase(input_sequence: list, position=None):
    """SequenceErase: a new sequence without the tensor at ``position`` (default: the last)."""
    out = list(input_sequence)
    del out[-1 if position is None else _pos(input_sequence, position, "SequenceErase")]
    return out


@op("SequenceLength")
def sequence_length(input_sequence: list):
    """SequenceLength: the number of tensors, as an int64 scalar."""
    return ember.tensor(len(input_sequence), dtype=ember.int64, device=device_of(input_sequence))


@op("SplitToSequence")
def split_to_sequence(input, split=None, *, axis: int = 0, keepdims: int = 1):
    """SplitToSequence: split along ``axis`` into a sequence (sizes from ``split``: a scalar chunk
    size or a 1-D list of sizes; default: pieces of 1, squeezed unless ``keepdims=0``)."""
    ax = axis + input.dim() if axis < 0 else axis
    if split is None:
        pieces = ember.split(input, 1, ax)
        return [p.squeeze(ax) for p in pieces] if not keepdims else list(pieces)
    s = to_host(split) if isinstance(split, ember.Tensor) else np.asarray(split)
    if s.ndim == 0:
        return list(ember.split(input, int(s), ax))
    return list(ember.split(input, [int(v) for v in s], ax))


@op("ConcatFromSequence")
def concat_from_sequence(input_sequence: list, *, axis: int, new_axis: int = 0):
    """ConcatFromSequence: concatenate (``new_axis=0``) or stack (``new_axis=1``) the sequence."""
    if not input_sequence:
        raise OnnxOpError("ConcatFromSequence: the sequence is empty")
    if new_axis:
        r = input_sequence[0].dim() + 1
        return ember.stack(list(input_sequence), axis + r if axis < 0 else axis)
    return ember.cat(list(input_sequence), axis)


@op("SequenceMap")
def sequence_map(input_sequence: list, *additional_inputs, body: Callable, n_outputs: int = 1):
    """SequenceMap: run ``body`` on each element (sequence inputs are walked in step, tensor inputs
    passed whole); each output is a sequence."""
    outs: list[list] = [[] for _ in range(n_outputs)]
    for i in range(len(input_sequence)):
        extra = [a[i] if isinstance(a, list) else a for a in additional_inputs]
        res = body(input_sequence[i], *extra)
        for j in range(n_outputs):
            outs[j].append(res[j])
    return tuple(outs)


# -- optionals ----------------------------------------------------------------------------------

@op("Optional")
def optional(input=None, *, type: str | None = None):  # noqa: A002 - the ONNX attribute's name
    """Optional: an optional holding ``input`` (``None`` when omitted: an empty optional)."""
    return input


@op("OptionalHasElement")
def optional_has_element(input=None):  # noqa: A002
    """OptionalHasElement: whether the optional (or optional input) holds a value."""
    return ember.tensor(input is not None, device=device_of(input))


@op("OptionalGetElement")
def optional_get_element(input):  # noqa: A002
    """OptionalGetElement: the value held by the optional; an error if it is empty."""
    if input is None:
        raise OnnxOpError("OptionalGetElement: the optional is empty")
    return input
