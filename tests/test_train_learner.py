"""ember.train.Learner: the loop, metrics in history, accumulation, clipping, amp, stopping, errors."""

import math
import sys
import threading
import types

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.data import DataLoader, TensorDataset
from ember.train import Callback, EarlyStopping, LambdaCallback, Learner


def data(n=64, d=6, classes=3, seed=0):
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(n, d, generator=g)
    y = ((x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()).clamp(max=classes - 1)
    return x, y


def loaders(n=64, batch_size=16, shuffle=True, seed=0):
    x, y = data(n, seed=seed)
    train = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle,
                       generator=ember.Generator().manual_seed(seed))
    val = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=16)
    return train, val


def mlp(seed=0, dropout=0.0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))


def learner(model=None, lr=0.05, epochs=2, **kw):
    model = model or mlp()
    train, val = loaders()
    kw.setdefault("val_loader", val)
    return Learner(model, ember.optim.SGD(model.parameters(), lr=lr, momentum=0.9), nn.CrossEntropyLoss(),
                   train, epochs=epochs, **kw)


class Recorder(Callback):
    def __init__(self):
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")
            return lambda learner, *a: calls.append((name, learner.state.epoch, learner.state.batch,
                                                     learner.state.step))
        return object.__getattribute__(self, name)


def test_fit_returns_model_and_history_with_all_keys():
    L = learner(metrics=("accuracy", "top2_accuracy", "f1", "auroc", "confusion_matrix"))
    model, h = L.fit()
    assert model is L.model and len(h) == 2
    rec = h[-1]
    assert list(rec) == L.metric_keys()
    for k in ("train_loss", "val_loss", "train_accuracy", "val_top2_accuracy", "val_f1", "val_auroc"):
        assert 0 <= rec[k] < 10
    assert rec["epoch"] == 2 and rec["lr"] == 0.05 and rec["epoch_time"] > 0 and rec["items_per_sec"] > 0
    assert rec["cpu_memory_mb"] > 1 and "gpu_memory_mb" not in rec
    assert h["val_loss"] == [r["val_loss"] for r in h.records]
    assert h.best("val_loss")["val_loss"] == min(h["val_loss"])
    assert h.arrays[-1]["val_confusion_matrix"].sum() == 32
    st = L.state
    assert st.step == 8 and st.epoch == 2 and st.phase == "done" and len(st.step_losses) == 8
    assert st.history is h.records and st.last_val["loss"] == rec["val_loss"]
    assert set(st.train_running) == {"loss", "accuracy", "top2_accuracy", "f1"}   # auroc is epoch-end only
    with pytest.raises(KeyError, match="available: epoch, train_loss"):
        h["val_bogus"]


def test_history_values_are_exact_epoch_metrics():
    L = learner(epochs=1, metrics=("accuracy",))
    L.fit()
    # the recorded validation metrics equal a direct computation over the whole validation set
    x, y = data()
    L.model.eval()
    with ember.no_grad():
        out = L.model(x[:32])
    ref_loss = torch.nn.functional.cross_entropy(torch.from_numpy(out.numpy()), torch.from_numpy(y[:32].numpy()))
    assert L.history[-1]["val_loss"] == pytest.approx(ref_loss.item(), rel=1e-6)
    assert L.history[-1]["val_accuracy"] == pytest.approx((out.argmax(1) == y[:32]).float().mean().item())
    assert L.evaluate()["loss"] == pytest.approx(ref_loss.item(), rel=1e-6)


def test_hooks_order_and_state_before_hooks():
    rec = Recorder()
    L = learner(epochs=1, callbacks=[rec])
    L.fit()
    names = [c[0] for c in rec.calls]
    assert names[0] == "on_fit_start" and names[1] == "on_epoch_start" and names[-1] == "on_fit_end"
    assert names.count("on_batch_start") == names.count("on_batch_end") == 4
    assert names[-4:-1] == ["on_validation_start", "on_validation_end", "on_epoch_end"]
    batch_ends = [c for c in rec.calls if c[0] == "on_batch_end"]
    assert [(c[2], c[3]) for c in batch_ends] == [(1, 1), (2, 2), (3, 3), (4, 4)]  # updated before the hook
    assert [c for c in rec.calls if c[0] == "on_epoch_end"][0][1] == 1


def test_train_eval_modes_and_no_grad_in_validation():
    seen = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 3)

        def forward(self, x):
            seen.append((self.training, ember.is_grad_enabled()))
            return self.lin(x)

    L = learner(model=Probe(), epochs=1)
    L.fit()
    assert seen[:4] == [(True, True)] * 4 and seen[4:] == [(False, False)] * 2
    assert L.model.training


def test_grad_accumulation_equals_full_batch():
    x, y = data(32)
    ember.manual_seed(3)
    a = nn.Linear(6, 3)
    b = nn.Linear(6, 3)
    b.load_state_dict(a.state_dict())
    La = Learner(a, ember.optim.SGD(a.parameters(), lr=0.5), nn.CrossEntropyLoss(),
                 [(x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8)], grad_accum_steps=2, metrics=())
    Lb = Learner(b, ember.optim.SGD(b.parameters(), lr=0.5), nn.CrossEntropyLoss(),
                 [(x[:16], y[:16]), (x[16:], y[16:])], metrics=())
    La.fit(epochs=2)
    Lb.fit(epochs=2)
    assert La.state.step == Lb.state.step == 4
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(pa.detach().numpy(), pb.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([v for _, v in La.state.step_losses], [v for _, v in Lb.state.step_losses],
                               rtol=1e-5)


def test_grad_accumulation_short_last_group_against_torch():
    # 3 batches with accumulation 2: the last step averages over its single batch
    x, y = data(24)
    ember.manual_seed(1)
    m = nn.Linear(6, 3)
    tm = torch.nn.Linear(6, 3)
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(m.weight.detach().numpy()))
        tm.bias.copy_(torch.from_numpy(m.bias.detach().numpy()))
    L = Learner(m, ember.optim.SGD(m.parameters(), lr=0.3), nn.CrossEntropyLoss(),
                [(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)], grad_accum_steps=2, metrics=())
    L.fit()
    topt = torch.optim.SGD(tm.parameters(), lr=0.3)
    tx, ty = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())
    for group in ([0, 8], [16]):
        for i in group:
            (torch.nn.functional.cross_entropy(tm(tx[i:i + 8]), ty[i:i + 8]) / len(group)).backward()
        topt.step()
        topt.zero_grad()
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert L.state.step == 2 and L.state.batch == 0 and L.history[-1]["epoch"] == 1


@pytest.mark.parametrize("kind", ["norm", "value"])
def test_gradient_clipping(kind):
    x, y = data(16)
    ember.manual_seed(2)
    m = nn.Linear(6, 3)
    ref = nn.Linear(6, 3)
    ref.load_state_dict(m.state_dict())
    kw = {"clip_grad_norm": 0.01} if kind == "norm" else {"clip_grad_value": 0.001}
    Learner(m, ember.optim.SGD(m.parameters(), lr=1.0), nn.CrossEntropyLoss(), [(x, y)], metrics=(), **kw).fit()
    nn.CrossEntropyLoss()(ref(x), y).backward()
    grads = [p.grad.numpy() for p in ref.parameters()]
    if kind == "norm":
        total = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
        assert total > 0.01
        expected = [g * 0.01 / (total + 1e-6) for g in grads]
    else:
        expected = [np.clip(g, -0.001, 0.001) for g in grads]
    for p, r, g in zip(m.parameters(), ref.parameters(), expected):
        np.testing.assert_allclose(r.detach().numpy() - p.detach().numpy(), g, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("amp", ["bfloat16", "float16"])
def test_amp_runs(amp):
    L = learner(amp=amp, epochs=2, lr=0.1, clip_grad_norm=1.0)
    _, h = L.fit()
    assert all(math.isfinite(v) for v in h["train_loss"] + h["val_loss"])
    assert (L.scaler is not None) == (amp == "float16")
    assert all(p.dtype == ember.float32 for p in L.model.parameters())
    if amp == "float16":
        assert L.scaler.get_scale() > 0


def test_amp_autocasts_the_forward():
    dtypes = []
    L = learner(epochs=1, amp="bfloat16", forward_fn=lambda m, b: (dtypes.append(m(b[0]).dtype) or m(b[0]), b[1]))
    L.fit()
    assert set(dtypes) == {ember.bfloat16}


def test_device_moves_model_and_batches():
    L = learner(epochs=1, device="cpu")
    L.fit()
    assert L.device == ember.device("cpu") and L.state.step == 4


def test_scheduler_epoch_and_step():
    L = learner(epochs=3)
    L.scheduler = ember.optim.lr_scheduler.StepLR(L.optimizer, step_size=1, gamma=0.5)
    _, h = L.fit()
    assert h["lr"] == pytest.approx([0.05, 0.025, 0.0125])
    L2 = learner(epochs=1, scheduler_step="step")
    L2.scheduler = ember.optim.lr_scheduler.ExponentialLR(L2.optimizer, gamma=0.5)
    L2.fit()
    assert L2.history[-1]["lr"] == pytest.approx(0.05 * 0.5 ** 4)


def test_reduce_lr_on_plateau_gets_the_monitored_metric():
    m = mlp()
    opt = ember.optim.SGD(m.parameters(), lr=0.0)   # nothing changes: val_loss never improves
    for g in opt.param_groups:
        g["lr"] = 0.0
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    calls = []
    orig = sched.step
    sched.step = lambda metric: (calls.append(metric), orig(metric))
    train, val = loaders()
    L = Learner(m, opt, nn.CrossEntropyLoss(), train, val, epochs=2, scheduler=sched)
    _, h = L.fit()
    assert calls == h["val_loss"]
    with pytest.raises(ValueError, match="once per epoch"):
        Learner(m, opt, nn.CrossEntropyLoss(), train, val, scheduler=sched, scheduler_step="step")


def test_request_stop_from_callback_and_code_after_fit_runs():
    ended = []
    cb = LambdaCallback(on_batch_end=lambda L: L.state.step == 3 and L.request_stop("enough"),
                        on_fit_end=lambda L: ended.append(L.state.step))
    L = learner(epochs=5, callbacks=[cb])
    model, h = L.fit()
    assert L.state.step == 3 and ended == [3] and len(h) == 0
    assert L.state.stop_requested and L.state.stop_reason == "enough"


def test_request_stop_from_another_thread():
    L = learner(epochs=100_000)
    started = threading.Event()
    L.callbacks.append(LambdaCallback(on_batch_end=lambda L: L.state.step >= 5 and started.set()))

    def stopper():
        started.wait(60)
        L.request_stop("from a thread")

    t = threading.Thread(target=stopper)
    t.start()
    L.fit()
    t.join()
    assert L.state.stop_reason == "from a thread" and 5 <= L.state.step < 1000
    # a new fit clears the request
    L.fit(epochs=1)
    assert not L.state.stop_requested and len(L.history) == 1


def test_early_stopping_patience():
    L = learner(epochs=10, lr=0.0, early_stopping=2)   # lr 0: val_loss never improves after epoch 1
    _, h = L.fit()
    assert len(h) == 3 and "early stopping: val_loss" in L.state.stop_reason
    es = EarlyStopping("val_accuracy", patience=1)
    L2 = learner(epochs=10, lr=0.0, callbacks=[es])
    L2.fit()
    assert len(L2.history) == 2 and es.stopped_epoch == 2 and es.best_epoch == 1 and es.mode == "max"


def test_early_stopping_unknown_metric():
    L = learner(epochs=1, callbacks=[EarlyStopping("val_f1")])
    with pytest.raises(KeyError, match=r"'val_f1' is not recorded; available: epoch, train_loss, train_accuracy"):
        L.fit()


def test_forward_fn_and_step_fn_for_other_batch_layouts():
    x, y = data(32)
    dict_batches = [{"features": x[i:i + 16], "label": y[i:i + 16]} for i in (0, 16)]
    m = mlp()
    L = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), dict_batches, dict_batches,
                forward_fn=lambda model, b: (model(b["features"]), b["label"]))
    _, h = L.fit()
    assert 0 <= h[-1]["val_accuracy"] <= 1
    assert L.predict(dict_batches).shape == (32, 3)

    def step(model, b):
        out = model(b["features"])
        return nn.functional.cross_entropy(out, b["label"]) + 0.0 * out.sum(), out, b["label"]

    L2 = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), None, dict_batches, step_fn=step)
    assert L2.fit()[1][-1]["train_accuracy"] >= 0
    L3 = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), None, dict_batches,
                 step_fn=lambda model, b: nn.functional.cross_entropy(model(b["features"]), b["label"]))
    with pytest.raises(ValueError, match="metrics=()"):
        L3.fit()
    L3.metrics = []
    assert L3.fit()[1]["train_loss"][0] > 0


def test_predict_and_evaluate():
    L = learner(epochs=1, metrics=("accuracy", "confusion_matrix"))
    L.fit()
    x, y = data()
    out = L.predict([x[:10], x[10:20]])
    L.model.eval()
    np.testing.assert_allclose(out.numpy(), L.model(x[:20]).detach().numpy(), rtol=1e-6)
    r = L.evaluate([(x, y)])
    assert set(r) == {"loss", "accuracy", "confusion_matrix"} and r["confusion_matrix"].sum() == 64


def test_seed_makes_runs_identical():
    a = learner(model=mlp(dropout=0.5), seed=7)
    b = learner(model=mlp(dropout=0.5), seed=7)
    a.fit()
    b.fit()
    assert a.state.step_losses == b.state.step_losses


def test_gpu_memory_recorded_when_ember_cuda_exists(monkeypatch):
    fake = types.ModuleType("ember.cuda")
    fake.memory_allocated = lambda: 5 * 2**20
    monkeypatch.setitem(sys.modules, "ember.cuda", fake)
    L = learner(epochs=1)
    L.fit()
    assert L.history[-1]["gpu_memory_mb"] == pytest.approx(5.0)


def test_errors_are_clear():
    x, y = data(16)
    m = mlp()
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"scalar.*shape \(16,\)"):
        Learner(m, opt, nn.CrossEntropyLoss(reduction="none"), [(x, y)]).fit()
    with pytest.raises(ValueError, match="yielded no batches in epoch 1"):
        Learner(m, opt, nn.CrossEntropyLoss(), []).fit()
    with pytest.raises(ValueError, match="validation loader yielded no batches"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y)], []).fit()
    with pytest.raises(TypeError, match="forward_fn"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y, y)]).fit()
    with pytest.raises(ValueError, match="regression"):
        Learner(m, opt, nn.MSELoss(), [(x, ember.randn(16, 3).round() + 0.5)]).fit()
    with pytest.raises(ValueError, match="amp"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y)], amp="int8")
    with pytest.raises(ValueError, match="two metrics are named 'accuracy'"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y)], metrics=("accuracy", "acc"))
    with pytest.raises(TypeError, match="loss_fn"):
        Learner(m, opt, None, [(x, y)])
    with pytest.raises(ValueError, match="no val_loader"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y)]).evaluate()
    with pytest.raises(KeyError, match=r"'val_f1' is not recorded; available: .*val_accuracy"):
        Learner(m, opt, nn.CrossEntropyLoss(), [(x, y)], [(x, y)], monitor="val_f1",
                checkpoint_dir=None, scheduler=ember.optim.lr_scheduler.ReduceLROnPlateau(opt)).fit()


def test_regression_without_metrics():
    x = ember.randn(32, 6)
    t = x[:, :1] * 2 + 1
    m = nn.Linear(6, 1)
    L = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), nn.MSELoss(), [(x[:16], t[:16]), (x[16:], t[16:])],
                [(x, t)], metrics=(), epochs=20)
    _, h = L.fit()
    assert h["val_loss"][-1] < h["val_loss"][0] / 4


def test_docstring_examples_run():
    import doctest
    import os

    import ember.train as T
    from ember.train import callback, callbacks, checkpoint, history, learner, loggers, metrics, plots
    for mod in (T, callback, callbacks, checkpoint, history, learner, loggers, metrics, plots):
        r = doctest.testmod(mod, extraglobs={"ember": ember, "np": np, "os": os})
        assert r.failed == 0, mod.__name__
