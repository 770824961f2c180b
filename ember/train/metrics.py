"""Metrics that accumulate exactly over the batches of an epoch.

A metric keeps sufficient statistics (counts, sums, a confusion matrix, the scores themselves
for AUROC), never a mean of per-batch means, so a last batch of a different size or classes that
appear in only some batches give the same value as computing on the whole epoch at once.

``update(output, target)`` takes the model's output and the targets (ember tensors or numpy
arrays; they are copied to the host in float64), ``compute()`` returns the value, ``reset()``
starts over. Class outputs may be logits or probabilities, shaped ``(N, C)``, ``(N, C, d1, ...)``
(cross-entropy layout) or ``(N, d1, ..., C)`` (language models); binary outputs are ``(N,)`` or
``(N, 1)`` scores with 0/1 targets: logits with ``from_logits=True``, probabilities with ``False``;
the default ``None`` takes a batch as probabilities when all its scores lie in [0, 1] (pass
``from_logits=True`` with ``BCEWithLogitsLoss``: a small batch of logits may all lie in [0, 1]).

>>> acc = Accuracy()
>>> acc.update(np.array([[2.0, 0.1], [0.3, 0.9]]), np.array([0, 0]))
>>> acc.update(np.array([[0.1, 0.5]]), np.array([1]))
>>> acc.compute()
0.6666666666666666
"""

from __future__ import annotations

import math
import os
import re
import resource
import sys
from typing import Any

import numpy as np

from .._tensor import Tensor

__all__ = ["Metric", "Loss", "Accuracy", "TopKAccuracy", "Precision", "Recall", "FBeta", "F1", "AUROC",
           "ConfusionMatrix", "Perplexity", "LearningRate", "Throughput", "CpuMemory", "GpuMemory",
           "get_metric", "to_numpy"]


def to_numpy(x: Any) -> np.ndarray:
    """A host copy of a tensor (low-precision floats widened to float32) or anything numpy takes."""
    if isinstance(x, Tensor):
        x = x.detach()
        if x.dtype.is_floating_point and x.dtype.itemsize < 4:
            x = x.float()  # numpy has no bfloat16 arithmetic we want to rely on
        return x.numpy(force=True)
    return np.asarray(x)


class Metric:
    """Base class. Subclasses set ``name`` and ``higher_is_better`` and implement ``update``,
    ``compute`` and ``reset``; ``_state`` names the attributes that ``state_dict`` saves (so a
    checkpoint taken mid-epoch resumes the epoch's statistics exactly).

    ``running``: whether the learner may compute the value after every batch for live display
    (False for metrics whose ``compute`` costs time proportional to the data seen).
    """

    name: str = "metric"
    higher_is_better: bool | None = None
    running: bool = True
    scalar: bool = True        # compute() returns a number (False: an array, kept out of history columns)
    _state: tuple[str, ...] = ()

    def reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def update(self, output: Any, target: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement update(output, target)")

    def compute(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement compute()")

    def state_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k in self._state:
            v = state[k]
            cur = getattr(self, k)
            if isinstance(cur, np.ndarray) or isinstance(v, Tensor):
                v = to_numpy(v).astype(cur.dtype if isinstance(cur, np.ndarray) else None, copy=True)
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


# ---- loss ---------------------------------------------------------------------------------------
class Loss(Metric):
    """The mean of a per-batch mean loss, weighted by batch size (the exact mean over examples
    when the loss averages over the batch). ``update(value, n)``.

    >>> m = Loss(); m.update(1.0, 3); m.update(3.0, 1); m.compute()
    1.5
    """

    name = "loss"
    higher_is_better = False
    _state = ("total", "count")

    def __init__(self, name: str = "loss"):
        self.name = name
        self.reset()

    def reset(self) -> None:
        self.total, self.count = 0.0, 0

    def update(self, value: Any, n: Any = 1) -> None:  # type: ignore[override]
        n = int(n)
        self.total += float(to_numpy(value)) * n
        self.count += n

    def compute(self) -> float:
        return self.total / self.count if self.count else math.nan


# ---- input normalisation ------------------------------------------------------------------------
def _as_labels(t: np.ndarray, who: str) -> np.ndarray:
    if t.dtype.kind in "iub":
        return t.astype(np.int64)
    if t.dtype.kind == "f":
        if t.size and not np.all(np.isfinite(t) & (t == np.round(t))):
            raise ValueError(f"{who}: targets must be class indices (integers), got non-integer floats; for "
                             "regression pass metrics=() to the Learner")
        return t.astype(np.int64)
    raise TypeError(f"{who}: targets must be integer class indices, got dtype {t.dtype}")


def _classes(output: Any, target: Any, who: str, ignore_index: int | None = None):
    """Flatten to ``(scores, labels, binary)``: scores (M, C) float64 for C classes, or (M,) for a
    binary problem; labels (M,) int64. Positions whose label is ``ignore_index`` are dropped."""
    o = to_numpy(output).astype(np.float64)
    t = to_numpy(target)
    if o.ndim == t.ndim + 1 and o.ndim >= 2:
        if o.shape[:-1] == t.shape:           # (N, ..., C): classes last
            scores = o.reshape(-1, o.shape[-1])
        elif o.shape[0] == t.shape[0] and o.shape[2:] == t.shape[1:]:  # (N, C, ...): classes on dim 1
            scores = np.moveaxis(o, 1, -1).reshape(-1, o.shape[1])
        else:
            raise ValueError(f"{who}: output shape {tuple(o.shape)} does not match target shape {tuple(t.shape)} "
                             "(expected the output to have one more dim, the classes, than the target)")
        labels = _as_labels(t, who).reshape(-1)
        binary = scores.shape[1] == 1
        if binary:
            scores = scores[:, 0]
    elif o.shape == t.shape:
        if o.ndim >= 2 and o.shape[-1] > 1:   # one-hot or probability targets
            scores = o.reshape(-1, o.shape[-1])
            dist = t.reshape(-1, t.shape[-1]).astype(np.float64)
            if dist.size and (dist.min() < 0 or not np.allclose(dist.sum(axis=1), 1.0, atol=1e-4)):
                raise ValueError(f"{who}: targets shaped like the output {tuple(o.shape)} must be one-hot or class "
                                 "probabilities (rows summing to 1); for regression pass metrics=() to the Learner")
            labels = dist.argmax(axis=1).astype(np.int64)
            binary = False
        else:
            scores, labels, binary = o.reshape(-1), _as_labels(t, who).reshape(-1), True
    elif o.ndim == 2 and o.shape[1] == 1 and t.shape == o.shape[:1]:
        scores, labels, binary = o[:, 0], _as_labels(t, who), True
    else:
        raise ValueError(f"{who}: can't match output shape {tuple(o.shape)} with target shape {tuple(t.shape)}; "
                         "expected (N, C) scores with (N,) class indices, (N,) binary scores with (N,) 0/1 targets, "
                         "or (N, C, ...) / (N, ..., C) with (N, ...)")
    if ignore_index is not None:
        keep = labels != ignore_index
        scores, labels = scores[keep], labels[keep]
    if binary:
        if labels.size and not np.isin(labels, (0, 1)).all():
            raise ValueError(f"{who}: binary targets must be 0 or 1, got values {np.unique(labels)[:10].tolist()}")
    elif labels.size and (labels.min() < 0 or labels.max() >= scores.shape[1]):
        raise ValueError(f"{who}: target class {int(labels.min() if labels.min() < 0 else labels.max())} is out of "
                         f"range for an output with {scores.shape[1]} classes")
    return scores, labels, binary


def _binary_pred(scores: np.ndarray, threshold: float, from_logits: bool | None) -> np.ndarray:
    # from_logits=None decides per batch: probabilities when every score lies in [0, 1], else logits
    if from_logits is None:
        from_logits = bool(scores.size) and (scores.min() < 0 or scores.max() > 1)
    if from_logits:
        scores = 1.0 / (1.0 + np.exp(-scores))
    return (scores > threshold).astype(np.int64)


def _softmax(scores: np.ndarray) -> np.ndarray:
    """Rows as probabilities: kept when they already are (non-negative, summing to 1), else softmax."""
    if scores.size and scores.min() >= 0 and np.allclose(scores.sum(axis=1), 1.0, atol=1e-5):
        return scores
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# ---- accuracy -----------------------------------------------------------------------------------
class Accuracy(Metric):
    """Fraction of correct predictions: argmax of class scores, or ``score > threshold`` for binary
    outputs (``from_logits``: see the module docstring). ``ignore_index`` drops targets with that
    value (padding tokens)."""

    name = "accuracy"
    higher_is_better = True
    _state = ("correct", "total")

    def __init__(self, threshold: float = 0.5, ignore_index: int | None = None, name: str = "accuracy",
                 from_logits: bool | None = None):
        self.threshold, self.ignore_index, self.name = float(threshold), ignore_index, name
        self.from_logits = from_logits
        self.reset()

    def reset(self) -> None:
        self.correct, self.total = 0, 0

    def update(self, output: Any, target: Any) -> None:
        scores, labels, binary = _classes(output, target, self.name, self.ignore_index)
        pred = _binary_pred(scores, self.threshold, self.from_logits) if binary else scores.argmax(axis=1)
        self.correct += int((pred == labels).sum())
        self.total += int(labels.size)

    def compute(self) -> float:
        return self.correct / self.total if self.total else math.nan


class TopKAccuracy(Metric):
    """Fraction of examples whose target class is among the ``k`` highest scores (a tie with the
    k-th score counts as a hit)."""

    higher_is_better = True
    _state = ("correct", "total")

    def __init__(self, k: int = 5, ignore_index: int | None = None, name: str | None = None):
        if int(k) < 1:
            raise ValueError(f"TopKAccuracy: k must be >= 1, got {k}")
        self.k, self.ignore_index = int(k), ignore_index
        self.name = name or f"top{self.k}_accuracy"
        self.reset()

    def reset(self) -> None:
        self.correct, self.total = 0, 0

    def update(self, output: Any, target: Any) -> None:
        scores, labels, binary = _classes(output, target, self.name, self.ignore_index)
        if binary or self.k > scores.shape[1]:
            raise ValueError(f"{self.name}: k={self.k} needs class scores with at least {self.k} classes, got output "
                             f"shape {tuple(to_numpy(output).shape)}")
        mine = scores[np.arange(labels.size), labels]
        better = (scores > mine[:, None]).sum(axis=1)
        self.correct += int((better < self.k).sum())
        self.total += int(labels.size)

    def compute(self) -> float:
        return self.correct / self.total if self.total else math.nan


# ---- confusion-matrix metrics -------------------------------------------------------------------
class ConfusionMatrix(Metric):
    """Counts ``matrix[true, predicted]`` (rows: targets, columns: predictions, as scikit-learn).
    ``num_classes`` fixes the size; without it the matrix grows to the largest class seen.
    ``compute()`` returns an int64 numpy array (not a scalar: it is kept out of the history's
    columns and returned by ``evaluate``)."""

    name = "confusion_matrix"
    higher_is_better = None
    scalar = False
    _state = ("matrix", "binary")

    def __init__(self, num_classes: int | None = None, threshold: float = 0.5, ignore_index: int | None = None,
                 name: str = "confusion_matrix", from_logits: bool | None = None):
        self.num_classes = None if num_classes is None else int(num_classes)
        self.threshold, self.ignore_index, self.name = float(threshold), ignore_index, name
        self.from_logits = from_logits
        self.reset()

    def reset(self) -> None:
        n = self.num_classes or 0
        self.matrix = np.zeros((n, n), dtype=np.int64)
        self.binary = False

    def update(self, output: Any, target: Any) -> None:
        scores, labels, binary = _classes(output, target, self.name, self.ignore_index)
        self.binary = binary
        if binary:
            pred, size = _binary_pred(scores, self.threshold, self.from_logits), 2
        else:
            pred, size = scores.argmax(axis=1), scores.shape[1]
        if self.num_classes is not None and size > self.num_classes:
            raise ValueError(f"{self.name}: the output has {size} classes but num_classes={self.num_classes}")
        size = max(size, self.matrix.shape[0])
        if size > self.matrix.shape[0]:
            grown = np.zeros((size, size), dtype=np.int64)
            k = self.matrix.shape[0]
            grown[:k, :k] = self.matrix
            self.matrix = grown
        np.add.at(self.matrix, (labels, pred), 1)

    def compute(self) -> np.ndarray:
        return self.matrix.copy()


_AVERAGES = ("auto", "binary", "micro", "macro", "weighted", "none", None)


class FBeta(ConfusionMatrix):
    """F-beta score ``(1 + b²)·tp / ((1 + b²)·tp + b²·fn + fp)`` from the epoch's confusion matrix.

    ``average``: "binary" (the positive class 1), "micro", "macro" (unweighted mean over classes),
    "weighted" (mean weighted by each class's number of targets), None (per-class array), or "auto"
    (binary for binary outputs, macro otherwise). Classes are those that occur in the targets or
    predictions, or all ``num_classes`` when given (scikit-learn's ``labels=``). A class with an empty
    denominator scores 0 (scikit-learn's ``zero_division=0``).
    """

    higher_is_better = True
    _kind = "f"

    def __init__(self, beta: float = 1.0, average: str | None = "auto", num_classes: int | None = None,
                 threshold: float = 0.5, ignore_index: int | None = None, name: str | None = None,
                 from_logits: bool | None = None):
        if average not in _AVERAGES:
            raise ValueError(f"{type(self).__name__}: average must be one of {_AVERAGES}, got {average!r}")
        if float(beta) < 0:
            raise ValueError(f"FBeta: beta must be >= 0, got {beta}")
        self.beta, self.average = float(beta), average
        default = {"f": "f1" if self.beta == 1 else f"f{beta:g}", "p": "precision", "r": "recall"}[self._kind]
        super().__init__(num_classes, threshold, ignore_index, name or default, from_logits)

    @property
    def scalar(self) -> bool:  # type: ignore[override]
        return self.average not in (None, "none")

    def _per_class(self, tp, fp, fn) -> np.ndarray:
        b2 = self.beta ** 2
        num, den = (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)

    def compute(self) -> Any:  # type: ignore[override]
        m = self.matrix.astype(np.float64)
        tp = np.diag(m)
        fp = m.sum(axis=0) - tp
        fn = m.sum(axis=1) - tp
        average = self.average
        if average == "auto":
            average = "binary" if self.binary else "macro"
        if average == "binary":
            if m.shape[0] > 2:
                raise ValueError(f"{self.name}: average='binary' needs binary outputs, got {m.shape[0]} classes; "
                                 "use 'macro', 'micro' or 'weighted'")
            if m.shape[0] < 2:
                return 0.0
            return float(self._per_class(tp[1:], fp[1:], fn[1:])[0])
        if average == "micro":
            return float(self._per_class(np.array([tp.sum()]), np.array([fp.sum()]), np.array([fn.sum()]))[0])
        scores = self._per_class(tp, fp, fn)
        present = np.ones(m.shape[0], bool) if self.num_classes else (m.sum(axis=0) + m.sum(axis=1)) > 0
        if average in (None, "none"):
            return scores
        if not present.any():
            return math.nan
        if average == "macro":
            return float(scores[present].mean())
        support = m.sum(axis=1)[present]
        return float((scores[present] * support).sum() / support.sum()) if support.sum() else 0.0


class Precision(FBeta):
    """Precision ``tp / (tp + fp)``; ``average`` as for :class:`FBeta`."""

    _kind = "p"

    def __init__(self, average: str | None = "auto", num_classes: int | None = None, threshold: float = 0.5,
                 ignore_index: int | None = None, name: str | None = None, from_logits: bool | None = None):
        super().__init__(1.0, average, num_classes, threshold, ignore_index, name, from_logits)

    def _per_class(self, tp, fp, fn) -> np.ndarray:
        den = tp + fp
        return np.divide(tp, den, out=np.zeros_like(tp), where=den > 0)


class Recall(Precision):
    """Recall ``tp / (tp + fn)``; ``average`` as for :class:`FBeta`."""

    _kind = "r"

    def _per_class(self, tp, fp, fn) -> np.ndarray:
        den = tp + fn
        return np.divide(tp, den, out=np.zeros_like(tp), where=den > 0)


class F1(FBeta):
    """F1 score: :class:`FBeta` with ``beta=1``."""

    def __init__(self, average: str | None = "auto", num_classes: int | None = None, threshold: float = 0.5,
                 ignore_index: int | None = None, name: str | None = None, from_logits: bool | None = None):
        super().__init__(1.0, average, num_classes, threshold, ignore_index, name, from_logits)


# ---- AUROC --------------------------------------------------------------------------------------
def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    s = x[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], s.size]
    avg = (starts + ends + 1) / 2.0               # mean of ranks starts+1 .. ends
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def binary_auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve from the Mann-Whitney rank statistic (exact, ties count one half);
    NaN when only one class is present."""
    pos = labels == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    r = _ranks(np.asarray(scores, dtype=np.float64))
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


class AUROC(Metric):
    """Area under the ROC curve, exact (rank-based, ties count one half). Binary outputs use the
    score itself (a logit, a probability, or for two-column outputs the difference of the two);
    multiclass outputs use one-vs-rest over the softmax probabilities, averaged over the classes that
    have positives and negatives (``average="macro"``, or ``"weighted"`` by class frequency).
    Keeps every score of the epoch, so it is not computed after every batch."""

    name = "auroc"
    higher_is_better = True
    running = False

    def __init__(self, average: str = "macro", ignore_index: int | None = None, name: str = "auroc"):
        if average not in ("macro", "weighted"):
            raise ValueError(f"AUROC: average must be 'macro' or 'weighted', got {average!r}")
        self.average, self.ignore_index, self.name = average, ignore_index, name
        self.reset()

    def reset(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray]] = []
        self._width: int | None = None

    def state_dict(self) -> dict[str, Any]:
        self._merge()
        scores, labels = self._parts[0] if self._parts else (np.zeros((0,)), np.zeros((0,), dtype=np.int64))
        return {"scores": scores, "labels": labels, "width": -1 if self._width is None else self._width}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        scores = to_numpy(state["scores"]).astype(np.float64)
        labels = to_numpy(state["labels"]).astype(np.int64)
        self._parts = [(scores, labels)] if labels.size else []
        self._width = None if int(state["width"]) < 0 else int(state["width"])

    def _merge(self) -> None:
        if len(self._parts) > 1:
            self._parts = [(np.concatenate([p[0] for p in self._parts]), np.concatenate([p[1] for p in self._parts]))]

    def update(self, output: Any, target: Any) -> None:
        scores, labels, binary = _classes(output, target, self.name, self.ignore_index)
        if not binary and scores.shape[1] == 2:     # two-column binary: the logit (or probability) margin
            p = _softmax(scores)
            scores, binary = p[:, 1] - p[:, 0], True
        width = 0 if binary else scores.shape[1]
        if self._width is not None and width != self._width:
            raise ValueError(f"{self.name}: outputs changed from {self._width or 'binary'} to {width or 'binary'} "
                             "classes within one epoch")
        self._width = width
        if not binary:
            scores = _softmax(scores)
        self._parts.append((scores, labels))

    def compute(self) -> float:
        if not self._parts:
            return math.nan
        self._merge()
        scores, labels = self._parts[0]
        if scores.ndim == 1:
            return binary_auroc(scores, labels)
        aucs, weights = [], []
        for c in range(scores.shape[1]):
            a = binary_auroc(scores[:, c], (labels == c).astype(np.int64))
            if not math.isnan(a):
                aucs.append(a)
                weights.append(float((labels == c).sum()))
        if not aucs:
            return math.nan
        if self.average == "weighted":
            return float(np.average(aucs, weights=weights))
        return float(np.mean(aucs))


# ---- perplexity ---------------------------------------------------------------------------------
class Perplexity(Metric):
    """``exp`` of the mean negative log-likelihood per token, from logits (or log-probabilities)
    shaped ``(N, T, V)`` or ``(N, V, T)`` against ``(N, T)`` token ids; ``ignore_index`` drops padding."""

    name = "perplexity"
    higher_is_better = False
    _state = ("nll", "tokens")

    def __init__(self, ignore_index: int | None = None, name: str = "perplexity"):
        self.ignore_index, self.name = ignore_index, name
        self.reset()

    def reset(self) -> None:
        self.nll, self.tokens = 0.0, 0

    def update(self, output: Any, target: Any) -> None:
        scores, labels, binary = _classes(output, target, self.name, self.ignore_index)
        if binary:
            raise ValueError(f"{self.name}: needs per-class logits (N, ..., V), got output shape "
                             f"{tuple(to_numpy(output).shape)}")
        z = scores - scores.max(axis=1, keepdims=True)
        logp = z[np.arange(labels.size), labels] - np.log(np.exp(z).sum(axis=1))
        self.nll -= float(logp.sum())
        self.tokens += int(labels.size)

    def compute(self) -> float:
        return math.exp(self.nll / self.tokens) if self.tokens else math.nan


# ---- system metrics (read by the learner, not computed from outputs) ----------------------------
class LearningRate:
    """The learning rate of one parameter group of an optimizer."""

    name = "lr"

    def __init__(self, optimizer: Any, group: int = 0):
        self.optimizer, self.group = optimizer, int(group)

    def compute(self) -> float:
        return float(to_numpy(self.optimizer.param_groups[self.group]["lr"]))


class Throughput:
    """Items per second: ``update(items, seconds)`` adds a measured stretch, ``compute()`` the rate."""

    name = "items_per_sec"

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.items, self.seconds = 0, 0.0

    def update(self, items: int, seconds: float) -> None:
        self.items += int(items)
        self.seconds += float(seconds)

    def compute(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


class CpuMemory:
    """The process's resident memory in MiB (``/proc/self/statm`` where it exists, else the peak from
    ``getrusage``)."""

    name = "cpu_memory_mb"

    def compute(self) -> float:
        try:
            with open("/proc/self/statm") as f:
                pages = int(f.read().split()[1])
            return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, IndexError):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


class GpuMemory:
    """GPU memory allocated by ember in MiB, when an ``ember.cuda`` module with ``memory_allocated``
    exists; ``available()`` says whether it does (the learner omits the metric otherwise)."""

    name = "gpu_memory_mb"

    @staticmethod
    def _fn():
        mod = sys.modules.get("ember.cuda")
        if mod is None:
            import ember
            mod = getattr(ember, "cuda", None)
        fn = getattr(mod, "memory_allocated", None)
        avail = getattr(mod, "is_available", None)
        if fn is None or (avail is not None and not avail()):
            return None
        return fn

    def available(self) -> bool:
        return self._fn() is not None

    def compute(self) -> float | None:
        fn = self._fn()
        return None if fn is None else float(fn()) / 2**20


# ---- names --------------------------------------------------------------------------------------
_NAMED = {"accuracy": Accuracy, "acc": Accuracy, "precision": Precision, "recall": Recall, "f1": F1,
          "auroc": AUROC, "auc": AUROC, "roc_auc": AUROC, "confusion_matrix": ConfusionMatrix,
          "perplexity": Perplexity, "ppl": Perplexity}
_SYSTEM = ("lr", "items_per_sec", "throughput", "cpu_memory", "cpu_memory_mb", "gpu_memory", "gpu_memory_mb")


def get_metric(spec: str | Metric) -> Metric | None:
    """A metric from a name ("accuracy", "top5_accuracy", "precision", "recall", "f1", "f2",
    "auroc", "confusion_matrix", "perplexity") or a Metric (returned as is). Returns None for names
    the learner always records ("loss", "lr", "items_per_sec", "cpu_memory", "gpu_memory").

    >>> get_metric("top3_accuracy").name
    'top3_accuracy'
    """
    if isinstance(spec, Metric):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"metrics must be names or Metric objects, got {type(spec).__name__}")
    key = spec.strip().lower()
    if key == "loss" or key in _SYSTEM:
        return None
    if key in _NAMED:
        return _NAMED[key]()
    m = re.fullmatch(r"top_?(\d+)(_?acc(uracy)?)?", key)
    if m:
        return TopKAccuracy(int(m.group(1)))
    m = re.fullmatch(r"f(\d+(\.\d+)?)", key)
    if m:
        return FBeta(float(m.group(1)))
    raise ValueError(f"unknown metric {spec!r}; known names: loss, accuracy, topK_accuracy (e.g. top5_accuracy), "
                     "precision, recall, f1, fBETA (e.g. f2), auroc, confusion_matrix, perplexity, lr, "
                     "items_per_sec, cpu_memory, gpu_memory, or pass a Metric object")
