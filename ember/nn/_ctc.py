"""ctc_loss: Connectionist Temporal Classification, the forward algorithm in log space.

For each sample the target ``l`` (length S) is extended with blanks, ``l' = (b, l1, b, l2, ..., lS, b)``
(length 2S+1), and ``alpha[t, s]`` is the log-probability of all alignments of the first t+1 frames
that end in ``l'[s]``::

    alpha[t, s] = logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2] if l'[s] != blank and
                            l'[s] != l'[s-2]) + log_probs[t, l'[s]]

and the loss is ``-logsumexp(alpha[T-1, 2S], alpha[T-1, 2S-1])``. The recursion is vectorised over the
batch and the label positions, with a Python loop over time only; autodiff differentiates it (the
log-sum-exp below is written so unreachable states, at -inf, pass back zeros instead of NaN).

>>> import ember.nn.functional as F
>>> lp = ember.full((2, 1, 2), 0.5).log()           # T=2 frames, one sample, {blank, 'a'}
>>> F.ctc_loss(lp, ember.tensor([[1]]), [2], [1])   # paths "aa", "a-", "-a": p = 3/4
tensor(0.2877)
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._autocast_hooks import autocast_inputs
from .._tensor import Tensor
from ._loss_common import check_reduction, check_tensor, first_bad, float_dtype

__all__ = ["ctc_loss"]

_NEG_INF = -math.inf


def _lengths(value, name: str) -> list[int]:
    """Lengths as host ints (they decide the loop's extent, so they are read here: a sync point)."""
    if isinstance(value, Tensor):
        if value._dtype.is_floating_point or value._dtype is dt.bool:
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {value._dtype.name}")
        out = value.reshape(-1).tolist()
        return out if value.ndim else out[:1]
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    try:
        return [int(v) for v in value]
    except TypeError:
        raise TypeError(f"ctc_loss: {name} must be a tensor or a sequence of ints, got {type(value).__name__}") \
            from None


def _logsumexp(*xs: Tensor) -> Tensor:
    """log(sum(exp(x))) of same-shape tensors, -inf where all are -inf, with finite gradients there
    (the library logsumexp gives NaN gradients for an all -inf slice)."""
    m = xs[0]
    for x in xs[1:]:
        m = m.maximum(x)
    m = m.detach()
    shift = m.masked_fill(m == _NEG_INF, 0.0)  # the value of the shift drops out of the gradient
    total = (xs[0] - shift).exp()
    for x in xs[1:]:
        total = total + (x - shift).exp()
    empty = total == 0
    return (total.masked_fill(empty, 1.0).log() + shift).masked_fill(empty, _NEG_INF)


def _check(log_probs: Tensor, targets: Tensor, il: list, tl: list, blank: int) -> tuple[int, int, int]:
    t_max, n, c = log_probs._shape
    if not 0 <= blank < c:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {c}), got {blank}")
    if len(il) != n:
        raise RuntimeError(f"ctc_loss: input_lengths must be of size batch_size ({n}), got {len(il)}")
    if len(tl) != n:
        raise RuntimeError(f"ctc_loss: target_lengths must be of size batch_size ({n}), got {len(tl)}")
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"ctc_loss: expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for "
                           "argument #2 'targets'")
    s_max = max(tl, default=0)
    if targets.ndim == 2:
        if targets._shape[0] != n:
            raise RuntimeError(f"ctc_loss: expected padded targets to have size {n} at dimension 0, but got size "
                               f"{targets._shape[0]}")
        if targets._shape[1] < s_max:
            raise RuntimeError(f"ctc_loss: expected padded targets to have size at least {s_max} at dimension 1, "
                               f"but got size {targets._shape[1]}")
    elif targets._shape[0] != sum(tl):
        raise RuntimeError(f"ctc_loss: expected concatenated targets to have size {sum(tl)} (the sum of "
                           f"target_lengths) at dimension 0, but got size {targets._shape[0]}")
    for name, vals, hi in (("input_lengths", il, t_max), ("target_lengths", tl, None)):
        for v in vals:
            if v < 0:
                raise RuntimeError(f"ctc_loss: expected {name} to have value at least 0, but got value {v}")
            if hi is not None and v > hi:
                raise RuntimeError(f"ctc_loss: expected {name} to have value at most {hi}, but got value {v}")
    return t_max, n, c


def _padded(targets: Tensor, tl: list, s_max: int) -> Tensor:
    """(N, S) int64 targets; concatenated targets are cut into rows (padding with 0 past each length)."""
    targets = targets.to(dt.int64)
    if targets.ndim == 2:
        return targets[:, :s_max]
    from .._creation import tensor
    starts = [sum(tl[:i]) for i in range(len(tl))]
    index = [[st + min(j, ln - 1) if ln else 0 for j in range(s_max)] for st, ln in zip(starts, tl)]
    if not targets.numel():
        return targets.new_zeros((len(tl), s_max))
    idx = tensor(index, dtype=dt.int64, device=targets.device).reshape(len(tl), s_max)
    return targets.take(idx)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``log_probs`` (T, N, C) (log-softmax outputs; (T, C) for one sequence) against
    ``targets``: padded (N, S) or concatenated (sum(target_lengths),) class indices (never
    ``blank``). ``input_lengths``/``target_lengths``: one per sample (tensor or sequence of ints).
    'mean' divides each loss by its target length, then averages over the batch; ``zero_infinity``
    turns the infinite losses of impossible alignments (and their gradients) into zeros.
    """
    check_tensor(log_probs, "ctc_loss", "log_probs")
    check_tensor(targets, "ctc_loss", "targets")
    (log_probs,) = autocast_inputs("ctc_loss", log_probs)
    check_reduction(reduction)
    float_dtype("ctc_loss", log_probs._dtype)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected 3-dimensional log_probs (T, N, C), but got {log_probs.ndim}-"
                           "dimensional tensor")
    if log_probs.numel() == 0:
        raise RuntimeError(f"ctc_loss: log_probs tensor must not be empty, got shape {list(log_probs._shape)}")
    t_max, n, c = _check(log_probs, targets, il, tl, blank)
    s_max = max(tl, default=0)
    lab = _padded(targets, tl, s_max)
    from .._creation import arange, full, tensor
    dev = log_probs.device
    lengths_t = tensor(tl, dtype=dt.int64, device=dev)
    used = arange(s_max, device=dev).unsqueeze(0) < lengths_t.unsqueeze(1)
    if first_bad(used & ((lab < 0) | (lab >= c)), lab) is not None:
        raise RuntimeError(f"ctc_loss: targets must be class indices in [0, {c})")
    # extended labels (N, 2S+1): blank, l1, blank, l2, ..., lS, blank
    ext = _interleave(lab.new_full((n, s_max + 1), blank), lab)
    width = 2 * s_max + 1
    pos = arange(width, device=dev).unsqueeze(0)
    # s-2 -> s is allowed onto a label (odd s) that differs from the label two back
    prev2 = ext.roll(2, 1)
    skip = (pos % 2 == 1) & (pos >= 2) & (ext != prev2)
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(t_max, n, width))   # (T, N, 2S+1)
    il_t = tensor(il, dtype=dt.int64, device=dev).unsqueeze(1)
    alpha = emit[0].masked_fill((pos >= 2) | (il_t == 0), _NEG_INF)
    neg = full((n, 1), _NEG_INF, dtype=alpha.dtype, device=dev)
    neg2 = full((n, 2), _NEG_INF, dtype=alpha.dtype, device=dev)
    from .._movement import cat
    for t in range(1, max(il, default=0)):
        a1 = cat([neg, alpha[:, :-1]], 1)
        a2 = cat([neg2, alpha[:, :-2]], 1).masked_fill(~skip, _NEG_INF) if width > 2 else neg.expand(n, width)
        step = _logsumexp(alpha, a1, a2) + emit[t]
        alpha = step.where(il_t > t, alpha)  # a finished sequence keeps its last alpha
    end = (2 * lengths_t).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = alpha.gather(1, (end - 1).clamp_min(0)).squeeze(1).masked_fill(lengths_t == 0, _NEG_INF)
    loss = -_logsumexp(last, before)
    # no frames: the empty target has probability 1, any other 0
    no_frames = tensor([i == 0 for i in il], dtype=dt.bool, device=dev)
    loss = loss.masked_fill(no_frames & (lengths_t == 0), 0.0).masked_fill(no_frames & (lengths_t > 0), math.inf)
    if zero_infinity:
        loss = loss.masked_fill(loss == math.inf, 0.0)
    if reduction == "mean":
        return (loss / lengths_t.clamp_min(1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape(()) if unbatched else loss


def _interleave(blanks: Tensor, lab: Tensor) -> Tensor:
    """(blank, l1, blank, l2, ..., lS, blank) rows from (N, S+1) blanks and (N, S) labels."""
    from .._movement import cat, stack
    n, s = lab._shape
    pairs = stack([blanks[:, :s], lab], 2).reshape(n, 2 * s)
    return cat([pairs, blanks[:, s:]], 1)
