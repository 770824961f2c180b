"""Loss functions of ember.nn.functional (torch.nn.functional's names, arguments and semantics).

Every loss is a composition of ember ops, so autodiff differentiates it (gradients with respect to
targets and weights included). ``reduction`` is 'none', 'mean' or 'sum'; PyTorch's deprecated
``size_average``/``reduce`` pair is still accepted (with a warning). Under ``ember.autocast`` the
losses run in float32 like PyTorch's (each calls the autocast hook first).

Here: regression (l1, mse, smooth_l1, huber), probabilistic (kl_div, binary cross entropy with and
without logits, poisson_nll, gaussian_nll) and class-index losses (nll_loss, cross_entropy). The
margin and embedding losses are in ``_loss_margin``, ctc_loss in ``_ctc``.

>>> import ember.nn.functional as F
>>> F.mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 4.0]))
tensor(2.)
"""

# ruff: noqa: A001 - PyTorch's argument name ``input`` is rebound to its autocast version

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._autocast_hooks import autocast_inputs
from .._shape import broadcast_shapes
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._activation import logsigmoid
from ._ctc import ctc_loss
from ._loss_common import (
    check_reduction,
    check_tensor,
    class_weight,
    first_bad,
    float_dtype,
    legacy_reduction,
    reduce_loss,
    warn_size,
)
from ._loss_margin import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)

__all__ = [
    "l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "poisson_nll_loss", "gaussian_nll_loss", "nll_loss", "cross_entropy",
    "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "ctc_loss",
]


# ---- regression -------------------------------------------------------------------------------------
def _pair(op: str, input, target) -> tuple[Tensor, Tensor]:
    check_tensor(input, op)
    check_tensor(target, op, "target")
    warn_size(op, input, target)
    return input, target


def _elementwise_weight(op: str, loss: Tensor, weight, input: Tensor, reduction: str, mean_by_weight: bool):
    """PyTorch's optional per-element ``weight`` of mse/l1/huber: same size as the input; 'mean'
    divides by the weights' sum (mse, l1) or by the element count (huber)."""
    if weight is None:
        return reduce_loss(loss, reduction)
    check_tensor(weight, op, "weight")
    if weight._shape != input._shape:
        raise ValueError(f"{op}: weights and input must have the same size, got {list(weight._shape)} and "
                         f"{list(input._shape)}")
    loss = loss * weight
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    if reduction == "none":
        return loss
    if reduction == "sum" or not mean_by_weight:
        return loss.sum() if reduction == "sum" else loss.mean()
    return loss.sum() / weight.sum()


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or each) of ``|input - target|``; the two broadcast (with a warning).

    >>> ember.nn.functional.l1_loss(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 4.0]))
    tensor(1.5000)
    """
    input, target, weight = autocast_inputs("l1_loss", *_pair("l1_loss", input, target), weight)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        check_reduction(reduction)
    loss = (input - target).abs()
    return _elementwise_weight("l1_loss", loss, weight, input, reduction, True)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or each) of ``(input - target)**2``; the two broadcast (with a warning).

    >>> ember.nn.functional.mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 4.0]))
    tensor(2.5000)
    """
    input, target, weight = autocast_inputs("mse_loss", *_pair("mse_loss", input, target), weight)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        check_reduction(reduction)
    float_dtype("mse_loss", dt.result_type(input, target))
    loss = (input - target).square()
    return _elementwise_weight("mse_loss", loss, weight, input, reduction, True)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - beta/2`` (``d = input - target``);
    ``beta=0`` is the L1 loss.

    >>> ember.nn.functional.smooth_l1_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]))
    tensor(1.3125)
    """
    input, target = autocast_inputs("smooth_l1_loss", *_pair("smooth_l1_loss", input, target))
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    beta = float(beta)
    if beta == 0.0:
        return reduce_loss((input - target).abs(), reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    float_dtype("smooth_l1_loss", dt.result_type(input, target))
    z = (input - target).abs()
    return reduce_loss(_two_piece(z, beta, 0.5 / beta, 1.0), reduction)


def _two_piece(z: Tensor, cut: float, quad_scale: float, lin_scale: float) -> Tensor:
    """``quad_scale * z**2`` below ``cut``, ``lin_scale * (z - cut / 2)`` from it on (z >= 0). The
    quadratic branch sees 0 where the linear one is taken, so an infinite z sends no 0 * inf = NaN
    back through it; a NaN z takes the quadratic branch and its gradient is NaN, as in PyTorch."""
    far = z >= cut
    quad = quad_scale * z.masked_fill(far, 0.0).square()
    return (lin_scale * (z - 0.5 * cut)).where(far, quad)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - delta/2)``; the result has the input's dtype.

    >>> ember.nn.functional.huber_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]), delta=2.0)
    tensor(2.0625)
    """
    input, target, weight = autocast_inputs("huber_loss", *_pair("huber_loss", input, target), weight)
    if weight is None:
        check_reduction(reduction)
    delta = float(delta)
    if not delta > 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}")
    float_dtype("huber_loss", input._dtype)
    z = (input - target).abs()
    loss = _two_piece(z, delta, 0.5, delta).to(input._dtype)
    return _elementwise_weight("huber_loss", loss, weight, input, reduction, False)


# ---- probabilistic --------------------------------------------------------------------------------
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` with ``input`` given as
    log-probabilities (``log_target=True``: target too). 'batchmean' divides the sum by the batch
    size, the mathematically meaningful mean; 'mean' divides by the element count (with PyTorch's warning).

    >>> p = ember.tensor([0.5, 0.5])
    >>> ember.nn.functional.kl_div(p.log(), p, reduction="sum")
    tensor(0.)
    """
    check_tensor(input, "kl_div")
    check_tensor(target, "kl_div", "target")
    input, target = autocast_inputs("kl_div", input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides the total loss by both the batch size and the support "
                      "size; 'batchmean' divides by the batch size only, which is the KL divergence's definition. "
                      "'mean' will behave like 'batchmean' in a future PyTorch release.", stacklevel=2)
    if reduction != "batchmean":
        check_reduction(reduction)
    if not input._dtype.is_floating_point or not target._dtype.is_floating_point:
        raise RuntimeError(f"kl_div: Integral inputs not supported (got {input._dtype.name} and "
                           f"{target._dtype.name}); convert them to a floating dtype")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy: 0 * log(0) is 0, so zero-probability targets contribute nothing
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input._shape[0] if input.ndim else total
    return reduce_loss(loss, reduction)


def _check_unit_interval(op: str, x: Tensor, what: str) -> None:
    if x.numel() == 0:
        return
    with no_grad():
        x = x.detach()
        if not bool(((x >= 0) & (x <= 1)).all()):
            raise RuntimeError(f"{op}: all elements of {what} should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``-w (t log(x) + (1 - t) log(1 - x))`` for probabilities ``x`` in [0, 1]; each log is clamped
    at -100 as in PyTorch, so a confident wrong answer costs 100, not inf.

    Where ``x`` is exactly 0 or 1 the gradient is that of the clamped loss (0); PyTorch's kernel
    returns ``w (x - t) / 1e-12`` there instead.

    >>> ember.nn.functional.binary_cross_entropy(ember.tensor([0.5]), ember.tensor([1.0]))
    tensor(0.6931)
    """
    check_tensor(input, "binary_cross_entropy")
    check_tensor(target, "binary_cross_entropy", "target")
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if target._shape != input._shape:
        raise ValueError(f"binary_cross_entropy: using a target size ({list(target._shape)}) that is different to "
                         f"the input size ({list(input._shape)}) is not supported; make them the same size")
    input, target, weight = autocast_inputs("binary_cross_entropy", input, target, weight)
    if target._dtype is not input._dtype:
        raise RuntimeError(f"binary_cross_entropy: found target of dtype {target._dtype.name} but expected "
                           f"{input._dtype.name} (the input's)")
    d = float_dtype("binary_cross_entropy", input._dtype)
    if weight is not None:
        check_tensor(weight, "binary_cross_entropy", "weight")
        if broadcast_shapes(weight._shape, input._shape) != input._shape:
            raise RuntimeError(f"binary_cross_entropy: weight of shape {list(weight._shape)} doesn't broadcast to "
                               f"the input shape {list(input._shape)}")
        weight = weight.to(d)
    _check_unit_interval("binary_cross_entropy", input, "input")
    _check_unit_interval("binary_cross_entropy", target, "target")
    # log of x where x > 0; elsewhere a harmless 1, so the gradient stays finite (not 0 * inf)
    log_x = input.masked_fill(input == 0, 1.0).log().masked_fill(input == 0, -100.0).clamp_min(-100.0)
    log_1mx = input.masked_fill(input == 1, 0.0).neg().log1p().masked_fill(input == 1, -100.0).clamp_min(-100.0)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits:
    ``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``. ``pos_weight`` (broadcast along the last,
    class dim) weighs the positive examples.

    >>> ember.nn.functional.binary_cross_entropy_with_logits(ember.tensor([0.0]), ember.tensor([1.0]))
    tensor(0.6931)
    """
    op = "binary_cross_entropy_with_logits"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if target._shape != input._shape:
        raise ValueError(f"{op}: target size ({list(target._shape)}) must be the same as input size "
                         f"({list(input._shape)})")
    input, target, weight, pos_weight = autocast_inputs(op, input, target, weight, pos_weight)
    float_dtype(op, input._dtype)
    if not target._dtype.is_floating_point:
        raise RuntimeError(f"{op}: the target must be a floating tensor (got {target._dtype.name}); the result "
                           "can't be cast to it")
    d = target._dtype  # PyTorch writes the loss in the target's dtype
    shape = input._shape
    for t, name in ((weight, "weight"), (pos_weight, "pos_weight")):
        if t is not None:
            check_tensor(t, op, name)
            if broadcast_shapes(t._shape, shape) != shape:
                raise RuntimeError(f"{op}: {name} of shape {list(t._shape)} doesn't broadcast to the input "
                                   f"shape {list(shape)}")
    softplus_neg = -logsigmoid(input)  # softplus(-x), exact for large |x| and with the exact gradient at 0
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight.to(d) - 1) * target) * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight.to(d)
    return reduce_loss(loss.to(d), reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target ~ Poisson(rate)``: ``exp(input) - target * input`` with
    ``log_input`` (input is the log-rate), else ``input - target * log(input + eps)``. ``full`` adds
    Stirling's approximation of ``log(target!)`` where target > 1.

    >>> ember.nn.functional.poisson_nll_loss(ember.tensor([0.0]), ember.tensor([1.0]))
    tensor(1.)
    """
    check_tensor(input, "poisson_nll_loss")
    check_tensor(target, "poisson_nll_loss", "target")
    input, target = autocast_inputs("poisson_nll_loss", input, target)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target ~ Normal(input, var)``: ``0.5 (log(var) + (input -
    target)**2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``). ``var`` has the input's shape, or lacks
    (or has size 1 in) one dim, or is a number; values below ``eps`` are clamped (the gradient passes
    through the clamp, as in PyTorch).

    >>> ember.nn.functional.gaussian_nll_loss(ember.tensor([1.0]), ember.tensor([1.0]), 1.0)
    tensor(0.)
    """
    check_tensor(input, "gaussian_nll_loss")
    check_tensor(target, "gaussian_nll_loss", "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = input.new_ones(input._shape) * float(var)
    else:
        check_tensor(var, "gaussian_nll_loss", "var")
        if bool((var.detach() < 0).any()):
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    if var._shape != input._shape:
        if input._shape[:-1] == var._shape:  # one variance per sample: broadcast it over the last dim
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(v for i, v in zip(input._shape, var._shape) if i != v) == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size {list(var._shape)} for an input of "
                             f"shape {list(input._shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    var = var.clone()
    with no_grad():  # clamp the value only: the gradient flows as if unclamped, like PyTorch's
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


# ---- class-index losses -----------------------------------------------------------------------------
def _check_nll_shapes(op: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's shape rules: input (C), (N, C) or (N, C, d1, ...); target (), (N) or (N, d1, ...)."""
    if input.ndim < 1:
        raise ValueError(f"{op}: expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and input._shape[0] != (target._shape[0] if target.ndim else 0):
        raise ValueError(f"{op}: expected input batch_size ({input._shape[0]}) to match target batch_size "
                         f"({target._shape[0] if target.ndim else 0}).")
    if input.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported (got "
                               f"target of shape {list(target._shape)})")
        if input.ndim == 1 and target.ndim == 1 and target._shape[0] != 1:
            raise ValueError(f"{op}: for 1D input, 1D target must have size 1, but got target size: "
                             f"{target._shape[0]}")
    elif target._shape != input._shape[:1] + input._shape[2:]:
        raise RuntimeError(f"{op}: expected target size {list(input._shape[:1] + input._shape[2:])}, got "
                           f"{list(target._shape)} (input shape {list(input._shape)})")


def _class_targets(op: str, input: Tensor, target: Tensor, ignore_index: int):
    """(class dim, class count, int64 target, ignored mask, target with ignored entries set to 0),
    after PyTorch's dtype and range checks."""
    if target._dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(f"{op}: expected target dtype to be Long or Byte, but got {target._dtype.name}")
    float_dtype(op, input._dtype)
    cdim = 0 if input.ndim == 1 else 1
    n_classes = input._shape[cdim]
    t = target.to(dt.int64)
    ignored = t == ignore_index
    bad = first_bad(((t < 0) | (t >= n_classes)) & ~ignored, t)
    if bad is not None:
        raise IndexError(f"{op}: Target {bad} is out of bounds (the input has {n_classes} classes).")
    return cdim, n_classes, t, ignored, t.masked_fill(ignored, 0)


def _picked(input: Tensor, safe: Tensor, cdim: int) -> Tensor:
    """input[target] along the class dim (the target's shape; 0-d for a 1-d input)."""
    if input._shape[cdim] == 0:  # no classes (every target ignored): nothing to pick
        return input.new_zeros(safe._shape if input.ndim > 1 else ())
    if input.ndim == 1:
        return input.gather(0, safe.reshape(1)).reshape(())
    return input.gather(1, safe.unsqueeze(1)).squeeze(1)


def _target_weights(weight: Tensor | None, safe: Tensor, ignored: Tensor, like: Tensor) -> Tensor:
    """weight[target] with 0 where the target is ignored."""
    if weight is None:
        w = (~ignored).to(like._dtype)
    else:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe._shape).masked_fill(ignored, 0)
    return w.reshape(like._shape)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices: ``-weight[t] * input[n, t]`` for log-probabilities
    ``input`` (C), (N, C) or (N, C, d1, ...) and targets (), (N) or (N, d1, ...). Targets equal to
    ``ignore_index`` contribute 0; 'mean' divides by the sum of the weights of the counted targets.

    >>> logp = ember.tensor([[0.0, -2.0], [-1.0, -0.5]])
    >>> ember.nn.functional.nll_loss(logp, ember.tensor([0, 1]))
    tensor(0.2500)
    """
    check_tensor(input, "nll_loss")
    check_tensor(target, "nll_loss", "target")
    input, weight = autocast_inputs("nll_loss", input, weight)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    _check_nll_shapes("nll_loss", input, target)
    cdim, n_classes, _t, ignored, safe = _class_targets("nll_loss", input, target, ignore_index)
    weight = class_weight("nll_loss", weight, n_classes, input)
    picked = _picked(input, safe, cdim)
    w = _target_weights(weight, safe, ignored, picked)
    # masked: an ignored entry is 0 even where the input at class 0 is NaN or inf
    loss = (-picked * w).masked_fill(ignored.reshape(picked._shape), 0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def _smoothing(label_smoothing) -> float:
    ls = float(label_smoothing)
    if ls > 1.0:
        raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {ls}")
    return ls


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between the softmax of logits ``input`` (C), (N, C) or (N, C, d1, ...) and
    ``target``: class indices (shape without the class dim; ``ignore_index`` entries skipped), or
    class probabilities (the input's shape, floating). ``weight`` weighs classes;
    ``label_smoothing`` mixes the target with the uniform distribution.

    >>> logits = ember.tensor([[2.0, 0.0, -1.0]])
    >>> ember.nn.functional.cross_entropy(logits, ember.tensor([0]))
    tensor(0.1698)
    """
    check_tensor(input, "cross_entropy")
    check_tensor(target, "cross_entropy", "target")
    input, target, weight = autocast_inputs("cross_entropy", input, target, weight)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if input._shape == target._shape:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing)
    ls = _smoothing(label_smoothing)
    _check_nll_shapes("cross_entropy", input, target)
    float_dtype("cross_entropy", input._dtype)
    cdim = 0 if input.ndim == 1 else 1
    logp = input.log_softmax(cdim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if ls <= 0:
        return nll
    n_classes = input._shape[cdim]
    ignored = target.to(dt.int64) == ignore_index
    if weight is not None:
        view = [1] * input.ndim
        view[cdim] = n_classes
        smooth = -(logp * weight.reshape(view)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(ignored, 0)
    if reduction == "mean":
        safe = target.to(dt.int64).masked_fill(ignored, 0)
        smooth = smooth.sum() / _target_weights(weight, safe, ignored, smooth).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - ls) * nll + smooth * (ls / n_classes)


def _cross_entropy_probs(input: Tensor, target: Tensor, weight, ignore_index: int, reduction: str,
                         label_smoothing) -> Tensor:
    """cross_entropy with class-probability targets (the input's shape)."""
    if not target._dtype.is_floating_point:
        raise RuntimeError(f"cross_entropy: expected floating point type for target with class probabilities, "
                           f"got {target._dtype.name}")
    if ignore_index >= 0:
        raise RuntimeError("cross_entropy: ignore_index is not supported for floating point target")
    float_dtype("cross_entropy", input._dtype)
    if input.ndim == 0:
        raise IndexError("cross_entropy: Dimension specified as 1 but tensor has no dimensions (the input needs a "
                         "class dim)")
    cdim = 0 if input.ndim == 1 else 1
    n_classes = input._shape[cdim]
    ls = _smoothing(label_smoothing)
    if ls > 0:
        target = target * (1 - ls) + ls / n_classes
    weight = class_weight("cross_entropy", weight, n_classes, input, same_dtype=False)
    logp = input.log_softmax(cdim)
    prod = logp * target
    if weight is not None:
        view = [1] * input.ndim
        view[cdim] = n_classes
        prod = prod * weight.reshape(view)
    loss = -prod.sum(cdim)
    if reduction == "mean":
        count = math.prod(n for i, n in enumerate(input._shape) if i != cdim)
        return loss.sum() / count if count else loss.sum() / 0.0
    return reduce_loss(loss, reduction)
