"""ember.train.metrics against scikit-learn / torch / numpy, accumulated over uneven batches."""

import math
import sys
import types

import numpy as np
import pytest
import torch
from sklearn import metrics as skm

import ember
from ember.train import metrics as M

RNG = np.random.default_rng(0)


def batches(*arrays, sizes=(7, 16, 1, 9, 12)):
    """Split arrays along dim 0 into uneven batches (the epoch has len = sum(sizes))."""
    at = 0
    for s in sizes:
        yield tuple(a[at:at + s] for a in arrays)
        at += s


def feed(metric, out, tgt, sizes=(7, 16, 1, 9, 12), tensors=False):
    for o, t in batches(out, tgt, sizes=sizes):
        if tensors:
            o, t = ember.tensor(o), ember.tensor(t)
        metric.update(o, t)
    return metric.compute()


N, C = 45, 4
LOGITS = RNG.normal(size=(N, C)).astype(np.float32)
LABELS = RNG.integers(0, C, N)
LABELS[:3] = 3      # every class occurs
PRED = LOGITS.argmax(1)


def test_loss_is_example_weighted_mean():
    m = M.Loss()
    m.update(ember.tensor(2.0), 3)
    m.update(4.0, 1)
    assert m.compute() == pytest.approx(2.5)
    m.reset()
    assert math.isnan(m.compute())


@pytest.mark.parametrize("tensors", [False, True])
def test_accuracy_multiclass(tensors):
    assert feed(M.Accuracy(), LOGITS, LABELS, tensors=tensors) == pytest.approx(skm.accuracy_score(LABELS, PRED))


def test_accuracy_bfloat16_tensor_output():
    out = ember.tensor(LOGITS).to(ember.bfloat16)
    m = M.Accuracy()
    m.update(out, ember.tensor(LABELS))
    ref = skm.accuracy_score(LABELS, out.float().numpy().argmax(1))
    assert m.compute() == pytest.approx(ref)


def test_accuracy_binary_probs_logits_and_column():
    z = RNG.normal(size=N)
    y = (RNG.random(N) < 0.5).astype(np.int64)
    ref = skm.accuracy_score(y, (z > 0).astype(int))
    assert feed(M.Accuracy(from_logits=True), z, y) == pytest.approx(ref)              # logits
    assert feed(M.Accuracy(), 1 / (1 + np.exp(-z)), y.astype(np.float32)) == pytest.approx(ref)  # probs, float 0/1
    assert feed(M.Accuracy(from_logits=True), z[:, None], y) == pytest.approx(ref)     # (N, 1) against (N,)
    assert feed(M.Accuracy(), z * 10, y, sizes=(20, 25)) == pytest.approx(ref)         # auto: batches outside [0, 1]
    m = M.Accuracy()                                                                   # auto: a batch inside [0, 1]
    m.update(np.array([0.3, 0.7]), np.array([0, 1]))                                   # ... is taken as probabilities
    assert m.compute() == 1.0


def test_accuracy_sequence_layouts_and_ignore_index():
    logits = RNG.normal(size=(6, 5, 7))            # (N, T, V)
    tgt = RNG.integers(0, 7, (6, 5))
    tgt[0, :2] = -100
    keep = tgt != -100
    ref = (logits.argmax(-1) == tgt)[keep].mean()
    m = M.Accuracy(ignore_index=-100)
    for i in range(0, 6, 4):
        m.update(logits[i:i + 4], tgt[i:i + 4])
    assert m.compute() == pytest.approx(ref)
    m2 = M.Accuracy(ignore_index=-100)              # (N, V, T): cross-entropy layout
    m2.update(np.moveaxis(logits, -1, 1), tgt)
    assert m2.compute() == pytest.approx(ref)


def test_accuracy_one_hot_targets():
    onehot = np.eye(C)[LABELS]
    assert feed(M.Accuracy(), LOGITS, onehot) == pytest.approx(skm.accuracy_score(LABELS, PRED))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_topk_accuracy(k):
    ref = skm.top_k_accuracy_score(LABELS, LOGITS, k=k, labels=range(C))
    m = M.TopKAccuracy(k)
    assert m.name == f"top{k}_accuracy"
    assert feed(m, LOGITS, LABELS) == pytest.approx(ref)


def test_topk_needs_enough_classes():
    with pytest.raises(ValueError, match="k=5"):
        M.TopKAccuracy(5).update(LOGITS, LABELS)


@pytest.mark.parametrize("average", ["macro", "micro", "weighted", None])
@pytest.mark.parametrize("cls,sk,kw", [(M.Precision, skm.precision_score, {}), (M.Recall, skm.recall_score, {}),
                                       (M.F1, skm.f1_score, {}), (M.FBeta, skm.fbeta_score, {"beta": 2.0}),
                                       (M.FBeta, skm.fbeta_score, {"beta": 0.5})])
def test_precision_recall_fbeta_multiclass(cls, sk, kw, average):
    # predictions never use class 2 (zero division for its precision)
    logits = LOGITS.copy()
    logits[:, 2] = -10
    pred = logits.argmax(1)
    ref = sk(LABELS, pred, average=average, zero_division=0, **kw)
    got = feed(cls(average=average, **kw), logits, LABELS)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_macro_over_seen_classes_or_num_classes():
    y = np.array([0, 1, 1, 0, 1])
    p = np.array([[2, 1, 0, 0, 0, 0], [0, 3, 0, 0, 0, 0], [0, 1, 2, 0, 0, 0], [3, 0, 0, 0, 0, 0],
                  [0, 2, 0, 0, 0, 0]], dtype=float)  # 6 output classes, only 0..2 ever seen
    pred = p.argmax(1)
    assert feed(M.F1(average="macro"), p, y, sizes=(2, 3)) == pytest.approx(
        skm.f1_score(y, pred, average="macro", zero_division=0))
    assert feed(M.F1(average="macro", num_classes=6), p, y, sizes=(2, 3)) == pytest.approx(
        skm.f1_score(y, pred, average="macro", labels=range(6), zero_division=0))


def test_binary_precision_recall_f1():
    z = RNG.normal(size=N)
    y = (RNG.random(N) < 0.4).astype(np.int64)
    pred = (z > 0).astype(int)
    for cls, sk in ((M.Precision, skm.precision_score), (M.Recall, skm.recall_score), (M.F1, skm.f1_score)):
        assert feed(cls(from_logits=True), z, y) == pytest.approx(sk(y, pred))          # auto -> binary
        assert feed(cls(average="macro", from_logits=True), z, y) == pytest.approx(sk(y, pred, average="macro"))
    cm = feed(M.ConfusionMatrix(from_logits=True), z, y)
    np.testing.assert_array_equal(cm, skm.confusion_matrix(y, pred))


def test_binary_average_on_multiclass_is_an_error():
    m = M.Precision(average="binary")
    m.update(LOGITS, LABELS)
    with pytest.raises(ValueError, match="binary"):
        m.compute()


def test_confusion_matrix():
    cm = feed(M.ConfusionMatrix(), LOGITS, LABELS)
    np.testing.assert_array_equal(cm, skm.confusion_matrix(LABELS, PRED, labels=range(C)))
    m = M.ConfusionMatrix(num_classes=6)
    m.update(LOGITS, LABELS)
    assert m.compute().shape == (6, 6) and m.compute().sum() == N
    with pytest.raises(ValueError, match="num_classes=3"):
        M.ConfusionMatrix(num_classes=3).update(LOGITS, LABELS)


def test_auroc_binary_with_ties():
    s = np.round(RNG.random(200), 1)        # many ties
    y = (RNG.random(200) < s).astype(np.int64)
    sizes = (50, 3, 97, 50)
    assert feed(M.AUROC(), s, y, sizes=sizes) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    logit = np.log(s + 1e-3) - np.log1p(-s + 1e-3)   # a monotone transform: same AUROC
    assert feed(M.AUROC(), logit, y, sizes=sizes) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    two = np.stack([-logit / 2, logit / 2], 1)        # two-column logits
    assert feed(M.AUROC(), two, y, sizes=sizes) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)


def test_auroc_single_class_is_nan():
    m = M.AUROC()
    m.update(np.array([0.2, 0.7]), np.array([1, 1]))
    assert math.isnan(m.compute())


@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_auroc_multiclass_ovr(average):
    probs = torch.softmax(torch.from_numpy(LOGITS.astype(np.float64)), 1).numpy()
    ref = skm.roc_auc_score(LABELS, probs, multi_class="ovr", average=average)
    assert feed(M.AUROC(average=average), LOGITS, LABELS) == pytest.approx(ref, abs=1e-12)  # from logits
    assert feed(M.AUROC(average=average), probs, LABELS) == pytest.approx(ref, abs=1e-12)   # from probabilities


def test_perplexity_against_torch_cross_entropy():
    logits = RNG.normal(size=(5, 6, 11)).astype(np.float32)
    tgt = RNG.integers(0, 11, (5, 6))
    tgt[1, 3:] = -1
    ref = math.exp(torch.nn.functional.cross_entropy(torch.from_numpy(logits).double().permute(0, 2, 1),
                                                     torch.from_numpy(tgt), ignore_index=-1).item())
    m = M.Perplexity(ignore_index=-1)
    m.update(ember.tensor(logits[:2]), ember.tensor(tgt[:2]))
    m.update(logits[2:], tgt[2:])
    assert m.compute() == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("make", [M.Accuracy, lambda: M.TopKAccuracy(2), M.ConfusionMatrix, M.F1, M.AUROC,
                                  M.Perplexity, lambda: M.Precision(average=None)])
def test_state_dict_roundtrip_mid_epoch(make):
    a = make()
    a.update(LOGITS[:20], LABELS[:20])
    b = make()
    b.load_state_dict(a.state_dict())
    for m in (a, b):
        m.update(LOGITS[20:], LABELS[20:])
    np.testing.assert_allclose(a.compute(), b.compute())


def test_state_dict_accepts_tensors():
    a = M.AUROC()
    a.update(LOGITS, LABELS)
    sd = {k: (ember.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in a.state_dict().items()}
    b = M.AUROC()
    b.load_state_dict(sd)
    assert b.compute() == pytest.approx(a.compute())


def test_input_errors():
    with pytest.raises(ValueError, match="out of range"):
        M.Accuracy().update(LOGITS, np.full(N, 7))
    with pytest.raises(ValueError, match="class indices"):
        M.Accuracy().update(LOGITS[:, :1], RNG.random(N).astype(np.float32))
    with pytest.raises(ValueError, match=r"\(45, 4\).*\(3,\)"):
        M.Accuracy().update(LOGITS, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="0 or 1"):
        M.Accuracy().update(np.zeros(3), np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="per-class logits"):
        M.Perplexity().update(np.zeros(3), np.array([0, 1, 1]))


def test_get_metric_names():
    assert isinstance(M.get_metric("accuracy"), M.Accuracy)
    assert M.get_metric("top5_accuracy").k == 5
    assert M.get_metric("Top3").k == 3
    assert M.get_metric("f2").beta == 2.0 and M.get_metric("f2").name == "f2"
    assert M.get_metric("f1").name == "f1"
    assert M.get_metric("loss") is None and M.get_metric("lr") is None
    acc = M.Accuracy(name="acc")
    assert M.get_metric(acc) is acc
    with pytest.raises(ValueError, match="known names"):
        M.get_metric("bogus")
    with pytest.raises(TypeError):
        M.get_metric(3)


def test_system_metrics(monkeypatch):
    model = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.25)
    assert M.LearningRate(opt).compute() == 0.25
    tp = M.Throughput()
    tp.update(100, 0.5)
    tp.update(50, 0.25)
    assert tp.compute() == pytest.approx(200.0)
    rss = M.CpuMemory().compute()
    assert 1 < rss < 1e6
    gpu = M.GpuMemory()
    assert not gpu.available() and gpu.compute() is None
    fake = types.ModuleType("ember.cuda")
    fake.memory_allocated = lambda: 3 * 2**20
    monkeypatch.setitem(sys.modules, "ember.cuda", fake)
    assert gpu.available() and gpu.compute() == pytest.approx(3.0)
