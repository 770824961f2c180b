"""Margin and embedding losses of ember.nn.functional: cosine_embedding_loss, margin_ranking_loss,
hinge_embedding_loss, soft_margin_loss, triplet_margin_loss (+ with a distance function),
multi_margin_loss, multilabel_margin_loss and multilabel_soft_margin_loss.

Compositions of ember ops (autodiff gives the gradients), with PyTorch's shape rules and errors.

>>> import ember.nn.functional as F
>>> F.margin_ranking_loss(ember.tensor([1.0]), ember.tensor([2.0]), ember.tensor([1.0]))
tensor(1.)
"""

# ruff: noqa: A001 - PyTorch's argument name ``input`` is rebound to its autocast version

from __future__ import annotations

from collections.abc import Callable

from .. import _dtype as dt
from .._autocast_hooks import autocast_inputs
from .._tensor import Tensor
from ._activation import logsigmoid
from ._loss_common import check_tensor, first_bad, float_dtype, legacy_reduction, reduce_loss

__all__ = ["cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss"]

_EPSILON = 1e-12  # added to the squared norms in cosine_embedding_loss, as PyTorch does


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1 (0
    elsewhere); rows of (N, D) inputs with a (N) target, or (D) inputs with a 0-d target.

    >>> x = ember.tensor([[1.0, 0.0]])
    >>> ember.nn.functional.cosine_embedding_loss(x, x, ember.tensor([1.0]))
    tensor(0.)
    """
    op = "cosine_embedding_loss"
    check_tensor(input1, op, "input1")
    check_tensor(input2, op, "input2")
    check_tensor(target, op, "target")
    input1, input2 = autocast_inputs(op, input1, input2)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{op}: {target.ndim}D target tensor expects {want}D input tensors, but found inputs "
                           f"with sizes {list(input1._shape)} and {list(input2._shape)}.")
    d = target.ndim
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + _EPSILON
    mag2 = (input2 * input2).sum(d) + _EPSILON
    cos = prod / (mag1 * mag2).sqrt()
    zero = cos.new_zeros(())
    loss = (1 - cos).where(target == 1, zero) + (cos - float(margin)).clamp_min(0).where(target == -1, zero)
    return reduce_loss(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: target 1 says input1 should rank higher.

    >>> ember.nn.functional.margin_ranking_loss(ember.tensor([3.0]), ember.tensor([1.0]), ember.tensor([-1.0]))
    tensor(2.)
    """
    op = "margin_ranking_loss"
    check_tensor(input1, op, "input1")
    check_tensor(input2, op, "input2")
    check_tensor(target, op, "target")
    input1, input2, target = autocast_inputs(op, input1, input2, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"{op}: all input tensors should have the same number of dims but got sizes: input1: "
                           f"{list(input1._shape)}, input2: {list(input2._shape)}, target: {list(target._shape)}")
    return reduce_loss((-target * (input1 - input2) + float(margin)).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (both terms for other
    target values, as PyTorch computes it); input and target broadcast.

    >>> ember.nn.functional.hinge_embedding_loss(ember.tensor([0.3, 0.3]), ember.tensor([1.0, -1.0]))
    tensor(0.5000)
    """
    op = "hinge_embedding_loss"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    (input,) = autocast_inputs(op, input)
    reduction = legacy_reduction(size_average, reduce, reduction)
    zero = input.new_zeros(())
    loss = (float(margin) - input).clamp_min(0).where(target != 1, zero) + input.where(target != -1, zero)
    return reduce_loss(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` for targets ±1, in the input's dtype; computed stably, so it
    stays finite where PyTorch's ``log1p(exp(.))`` overflows to inf.

    >>> ember.nn.functional.soft_margin_loss(ember.tensor([0.0]), ember.tensor([1.0]))
    tensor(0.6931)
    """
    op = "soft_margin_loss"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    input, target = autocast_inputs(op, input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = input._dtype
    if not d.is_floating_point:
        raise RuntimeError(f"{op}: result type {dt.result_type(input, target).name} can't be cast to the "
                           f"desired output type {d.name} (the input's); pass a floating input")
    return reduce_loss(-logsigmoid((input * target).to(d)), reduction)


def _same_ndim(op: str, anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"{op}: the anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the ``p``-norm pairwise distance;
    ``swap`` uses ``min(d(a, n), d(p, n))`` for the negative distance.

    >>> a = ember.tensor([[0.0, 0.0]])
    >>> ember.nn.functional.triplet_margin_loss(a, a, a + 3.0)
    tensor(0.)
    """
    op = "triplet_margin_loss"
    for t, name in ((anchor, "anchor"), (positive, "positive"), (negative, "negative")):
        check_tensor(t, op, name)
    anchor, positive, negative = autocast_inputs(op, anchor, positive, negative)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    _same_ndim(op, anchor, positive, negative)
    from ._embedding import pairwise_distance
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return reduce_loss((float(margin) + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any ``distance_function(x1, x2)`` (default: pairwise_distance)."""
    op = "triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ValueError(f"{op}: expected margin to be greater than 0, got {margin} instead")
    for t, name in ((anchor, "anchor"), (positive, "positive"), (negative, "negative")):
        check_tensor(t, op, name)
    _same_ndim(op, anchor, positive, negative)
    if distance_function is None:
        from ._embedding import pairwise_distance as distance_function
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance_function(positive, negative))
    loss = (float(margin) + d_pos - d_neg).clamp_min(0)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return reduce_loss(loss, reduction)


def _margin_input(op: str, input: Tensor) -> tuple[int, int]:
    """(N, C) of a multi-class margin loss input: (C), (N, C) or a 0-d single score."""
    if input.ndim > 2 or (input.ndim >= 1 and input._shape[-1] == 0):
        raise RuntimeError(f"{op}: expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input._shape)}")
    n = input._shape[0] if input.ndim == 2 else 1
    c = input._shape[-1] if input.ndim else 1
    return n, c


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])**p / C`` per sample (times
    ``weight[y]``), for scores (C) or (N, C) and class indices (), (N).

    >>> ember.nn.functional.multi_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]), ember.tensor([3]))
    tensor(0.3250)
    """
    op = "multi_margin_loss"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    input, weight = autocast_inputs(op, input, weight)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 supported, got {p}")
    if weight is not None:
        check_tensor(weight, op, "weight")
        if weight.ndim != 1:
            raise ValueError(f"{op}: weight must be one-dimensional, got shape {list(weight._shape)}")
    n, c = _margin_input(op, input)
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError(f"{op}: target tensor should be 1-D with size equal to the number of input samples "
                           f"(batch size). Expected target size [{n}], but got {list(target._shape)}. Input has "
                           f"shape {list(input._shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"{op}: inconsistent weight size, expected {c} but got {list(weight._shape)}")
    if target._dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected target of dtype int64 (Long), but found {target._dtype.name}")
    if weight is not None and weight._dtype is not input._dtype:
        raise RuntimeError(f"{op}: expected weight of dtype {input._dtype.name} like the input, but found "
                           f"{weight._dtype.name}")
    float_dtype(op, input._dtype)
    y = target.reshape(n)
    if first_bad((y < 0) | (y >= c), y) is not None:
        raise RuntimeError(f"{op}: target out of range (the input has {c} classes)")
    x = input.reshape(n, c)
    z = (float(margin) - x.gather(1, y.unsqueeze(1)) + x).clamp_min(0)
    if p == 2:
        z = z.square()
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1)
    from .._creation import arange
    is_target = arange(c, device=y.device).unsqueeze(0) == y.unsqueeze(1)
    loss = z.masked_fill(is_target, 0).sum(1) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``
    per sample. ``target`` (input's shape, int64) lists the target classes first, ended by -1.

    >>> ember.nn.functional.multilabel_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]),
    ...                                            ember.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    op = "multilabel_margin_loss"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    (input,) = autocast_inputs(op, input)
    reduction = legacy_reduction(size_average, reduce, reduction)
    n, c = _margin_input(op, input)
    ok = target._shape == input._shape if input.ndim == 2 else (target.ndim <= 1 and target.numel() == c)
    if not ok:
        raise RuntimeError(f"{op}: inconsistent target size: {list(target._shape)} for input of size: "
                           f"{list(input._shape)}")
    if target._dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected target of dtype int64 (Long), but found {target._dtype.name}")
    float_dtype(op, input._dtype)
    x = input.reshape(n, c)
    t = target.reshape(n, c)
    # the targets of a sample are the entries before its first -1
    listed = (t != -1).to(dt.int64).cumprod(1).bool()
    if first_bad((t < -1) | (t >= c), t) is not None:
        raise RuntimeError(f"{op}: argument #2 'target' is out of range (classes are 0..{c - 1}, -1 ends a list)")
    counts = x.new_zeros((n, c)).scatter_add(1, t.clamp_min(0), listed.to(x._dtype))
    is_target = counts > 0
    # pair (j, i): j a listed target (counted as often as listed), i not a target class
    hinge = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    pair_w = counts.unsqueeze(2) * (~is_target).to(x._dtype).unsqueeze(1)
    loss = (hinge * pair_w).sum((1, 2)) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over the classes (last dim): ``-(t log sigmoid(x) + (1 - t)
    log sigmoid(-x))``, times ``weight`` per class.

    >>> ember.nn.functional.multilabel_soft_margin_loss(ember.tensor([[0.0, 0.0]]), ember.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """
    op = "multilabel_soft_margin_loss"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise IndexError(f"{op}: the input needs a class dim (Dimension specified as -1 but tensor has no "
                         "dimensions)")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        check_tensor(weight, op, "weight")
        loss = loss * weight
    loss = loss.sum(-1) / input._shape[-1]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return reduce_loss(loss, reduction)
