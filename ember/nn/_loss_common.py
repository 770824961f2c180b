"""Helpers shared by the loss functions: argument checks, reductions, PyTorch's legacy
``size_average``/``reduce`` arguments and the data-dependent range checks."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from .._tensor import Tensor
from ..backend.capture import capturing_on
from ._activation import check_tensor

__all__ = ["check_tensor", "legacy_reduction", "check_reduction", "reduce_loss", "warn_size", "float_dtype",
           "first_bad", "class_weight"]

REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """The reduction PyTorch's deprecated ``size_average``/``reduce`` pair stands for (with its warning)."""
    if size_average is None and reduce is None:
        return reduction
    avg = True if size_average is None else bool(size_average)
    red = True if reduce is None else bool(reduce)
    out = "none" if not red else ("mean" if avg else "sum")
    warnings.warn(f"size_average and reduce are deprecated; pass reduction='{out}' instead.", stacklevel=3)
    return out


def check_reduction(reduction) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected 'none', 'mean' or 'sum')")
    return reduction


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """loss itself, its mean or its sum (the mean of no elements is NaN, as in PyTorch)."""
    check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def warn_size(op: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's warning for regression losses whose target broadcasts against the input (issued
    two calls below the user's: loss function -> argument check -> here)."""
    if input._shape != target._shape:
        warnings.warn(f"{op}: using a target size ({list(target._shape)}) that is different to the input size "
                      f"({list(input._shape)}); the two broadcast, which is likely not what you want. Make "
                      "them the same size.", stacklevel=4)


def float_dtype(op: str, d: dt.dtype) -> dt.dtype:
    """Refuse a non-floating computation dtype as PyTorch's kernels do (NotImplementedError)."""
    if not d.is_floating_point:
        raise dt.unsupported(op, d, "losses need floating inputs (e.g. x.float())")
    return d


def first_bad(bad: Tensor, values: Tensor):
    """The first of ``values`` where ``bad`` holds, or None (a sync point: PyTorch checks these
    data-dependent conditions in its kernels and raises, so ember does too). Inside a capture (a CUDA
    graph, ember.compile) nothing can be read back, so the check is skipped there, as on PyTorch's
    CUDA kernels without device asserts."""
    if bad.numel() == 0 or capturing_on(bad._device) or not bool(bad.any()):
        return None
    return values.reshape(-1)[int(bad.reshape(-1).nonzero()[0, 0])].item()


def class_weight(op: str, weight: Tensor | None, n_classes: int, input: Tensor, same_dtype: bool = True):
    """Check a per-class weight: 1-d with one entry per class (and, where PyTorch's kernel requires
    it, the input's dtype)."""
    if weight is None:
        return None
    check_tensor(weight, op, "weight")
    if weight.ndim != 1 or weight.numel() != n_classes:
        raise RuntimeError(f"{op}: weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight._shape)}")
    if same_dtype and weight._dtype is not input._dtype and input._dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected weight of dtype {input._dtype.name} like the input, but found "
                           f"{weight._dtype.name}")
    return weight
