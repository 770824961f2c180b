"""Checkpoints: contents, keep-last/best policies, resume (in process and after SIGKILL), errors."""

import os
import pathlib
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import nn
from ember.data import DataLoader, TensorDataset
from ember.train import Checkpointer, CheckpointError, EarlyStopping, LambdaCallback, Learner, Metric, load_checkpoint
from ember.train.checkpoint import capture_rng, restore_rng

ROOT = pathlib.Path(__file__).resolve().parent.parent


def make(ckdir=None, epochs=3, dropout=0.3, accum=1, amp=None, callbacks=(), **kw):
    """A small classifier with dropout and a shuffling loader: 12 batches of 8 per epoch."""
    ember.manual_seed(0)
    g = ember.Generator().manual_seed(5)
    x = ember.randn(96, 6, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    train = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=ember.Generator().manual_seed(1))
    val = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=16)
    sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.9)
    return Learner(model, opt, nn.CrossEntropyLoss(), train, val, epochs=epochs, scheduler=sched,
                   checkpoint_dir=ckdir, grad_accum_steps=accum, amp=amp, callbacks=list(callbacks), seed=0,
                   metrics=("accuracy", "auroc"), **kw)


def curve(learner):
    return np.array([v for _, v in learner.state.step_losses])


def comparable(records):
    return [{k: v for k, v in r.items() if k not in ("epoch_time", "items_per_sec", "cpu_memory_mb")}
            for r in records]


def stop_at(step):
    return LambdaCallback(on_batch_end=lambda L: L.state.step == step and L.request_stop("test stop"))


def ckpts(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".safetensors"))


def test_rng_capture_restore():
    state = capture_rng()
    a = (ember.rand(3).tolist(), random.random(), np.random.rand())
    restore_rng(state)
    assert (ember.rand(3).tolist(), random.random(), np.random.rand()) == a


def test_checkpoint_contents(tmp_path):
    L = make(tmp_path, epochs=1, amp="float16")
    L.fit()
    ck = load_checkpoint(tmp_path / "ckpt-step00000012-epoch0001.safetensors")
    assert set(ck) == {"format", "version", "model", "optimizer", "scheduler", "scaler", "rng", "loader", "learner"}
    assert set(ck["model"]) == set(L.model.state_dict())
    assert ck["scaler"]["scale"] > 0 and ck["scheduler"]["last_epoch"] == 1
    assert ck["loader"]["epoch"] == 1 and ck["loader"]["batches"] == 0
    st = ck["learner"]
    assert st["epoch"] == 1 and st["batch"] == 0 and st["step"] == 12 and len(st["step_losses"]) == 12
    assert st["history"]["records"][0]["epoch"] == 1
    assert set(ck["rng"]) == {"ember", "python", "numpy"}


def test_keep_last_and_step_checkpoints(tmp_path):
    L = make(tmp_path, epochs=2, checkpoint_every_steps=5, keep_last=2)
    L.fit()
    assert ckpts(tmp_path) == ["best.safetensors", "ckpt-step00000020-epoch0001.safetensors",
                               "ckpt-step00000024-epoch0002.safetensors"]
    L2 = make(tmp_path / "all", epochs=2, checkpoint_every_steps=5, keep_last=None, checkpoint_every_epochs=None)
    L2.fit()
    # steps 5, 10, 15, 20; the final state (step 24) is always written
    assert [int(p[9:17]) for p in ckpts(tmp_path / "all") if p.startswith("ckpt")] == [5, 10, 15, 20, 24]


def test_checkpoint_every_epochs(tmp_path):
    L = make(tmp_path, epochs=4, checkpoint_every_epochs=2, keep_last=None, keep_best=0)
    L.fit()
    assert ckpts(tmp_path) == ["ckpt-step00000024-epoch0002.safetensors", "ckpt-step00000048-epoch0004.safetensors"]


class Scripted(Metric):
    """Returns the next scripted value at each validation."""

    name = "score"
    higher_is_better = True

    def __init__(self, values):
        self.values, self.i = values, [0]

    def __deepcopy__(self, memo):     # the learner copies its metrics per evaluation: share the script
        return self

    def reset(self):
        pass

    def update(self, output, target):
        pass

    def compute(self):
        v = self.values[self.i[0]]
        self.i[0] += 1
        return v


@pytest.mark.parametrize("keep_best", [1, 2])
def test_best_selection(tmp_path, keep_best):
    m = nn.Linear(6, 3)
    x, y = ember.randn(8, 6), ember.randint(0, 3, (8,))
    metric = Scripted([0.5, 0.3, 0.9, 0.4, 0.6])
    L = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), [(x, y)], [(x, y)],
                metrics=[metric], train_metrics=False, epochs=5, checkpoint_dir=tmp_path, keep_best=keep_best,
                monitor="val_score", checkpoint_every_epochs=None)
    L.fit()
    assert L.mode == "max"
    assert load_checkpoint(tmp_path / "best.safetensors")["learner"]["epoch"] == 3
    if keep_best == 1:
        assert ckpts(tmp_path) == ["best.safetensors", "ckpt-step00000005-epoch0005.safetensors"]
    else:
        assert ckpts(tmp_path) == ["best-epoch0003.safetensors", "best-epoch0005.safetensors", "best.safetensors",
                                   "ckpt-step00000005-epoch0005.safetensors"]
        assert os.path.samefile(tmp_path / "best.safetensors", tmp_path / "best-epoch0003.safetensors")
        assert [e[1] for e in L.checkpointer.best] == [3, 5]


def test_checkpointer_standalone(tmp_path):
    ck = Checkpointer(tmp_path, keep_last=1, keep_best=2)
    assert ck.latest() is None
    ck.save_periodic({"a": 1}, epoch=0, step=3)
    ck.save_periodic({"a": 2}, epoch=1, step=5)
    assert [os.path.basename(p) for p in ck.periodic()] == ["ckpt-step00000005-epoch0001.safetensors"]
    assert load_checkpoint(ck.latest())["a"] == 2
    assert ck.save_best({"v": 1}, 1.0, 1, "min") and ck.save_best({"v": 2}, 2.0, 2, "min")
    assert ck.save_best({"v": 3}, 3.0, 3, "min") is None
    assert ck.save_best({"v": 0}, 0.5, 4, "min")
    assert load_checkpoint(ck.best_path)["v"] == 0 and [e[1] for e in ck.best] == [4, 1]
    with pytest.raises(ValueError, match="keep_last"):
        Checkpointer(tmp_path, keep_last=0)


@pytest.mark.parametrize("stop_step,accum", [(17, 1), (12, 1), (10, 2)])
def test_resume_after_stop_reproduces_the_run(tmp_path, stop_step, accum):
    """Stop mid-epoch (17), on an epoch's last batch (12), or with accumulation; resume; compare."""
    full = make(None, accum=accum, dropout=0.3)
    full.fit()
    a = make(tmp_path, accum=accum, callbacks=[stop_at(stop_step)], checkpoint_every_steps=4)
    a.fit()
    assert a.state.step == stop_step and a.state.stop_reason == "test stop"
    assert os.path.basename(a.checkpointer.latest()).startswith(f"ckpt-step{stop_step:08d}")
    b = make(tmp_path, accum=accum)
    _, h = b.fit(resume=True)
    np.testing.assert_allclose(curve(b), curve(full), rtol=1e-6, atol=0)
    assert comparable(h.records) == pytest.approx(comparable(full.history.records), rel=1e-6)


def test_resume_extends_a_finished_run_and_from_a_path(tmp_path):
    full = make(None, epochs=3)
    full.fit()
    a = make(tmp_path, epochs=2)
    a.fit()
    b = make(tmp_path)
    b.fit(epochs=3, resume=str(tmp_path))                 # a directory: its newest checkpoint
    np.testing.assert_allclose(curve(b), curve(full), rtol=1e-6)
    c = make(tmp_path / "other")
    c.fit(resume=tmp_path / "ckpt-step00000024-epoch0002.safetensors")   # a file
    np.testing.assert_allclose(curve(c), curve(full), rtol=1e-6)
    done = make(tmp_path, epochs=3)
    _, h = done.fit(resume=True)                          # already finished: returns the history
    assert len(h) == 3 and done.state.step == 36


def test_early_stopping_counter_survives_resume(tmp_path):
    def build(callbacks=()):
        L = make(tmp_path, epochs=20, callbacks=callbacks)
        for g in L.optimizer.param_groups:
            g["lr"] = 0.0
        L.scheduler = None
        L.early_stopping = EarlyStopping(patience=3)
        L.callbacks.append(L.early_stopping)
        return L
    a = build([LambdaCallback(on_epoch_end=lambda L: L.state.epoch == 2 and L.request_stop("pause"))])
    a.fit()
    assert len(a.history) == 2 and a.early_stopping.wait == 1
    b = build()
    b.fit(resume=True)
    assert b.early_stopping.wait == 3 and len(b.history) == 4 and "early stopping" in b.state.stop_reason


def test_stop_writes_a_checkpoint_even_without_periodic_ones(tmp_path):
    L = make(tmp_path, callbacks=[stop_at(5)], checkpoint_every_epochs=None)
    L.fit()
    assert ckpts(tmp_path) == ["ckpt-step00000005-epoch0000.safetensors"]


def test_resume_errors(tmp_path):
    with pytest.raises(CheckpointError, match="needs checkpoint_dir"):
        make(None).fit(resume=True)
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        make(tmp_path / "empty").fit(resume=True)
    make(tmp_path, epochs=1).fit()
    other = make(tmp_path, epochs=1)
    other.model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 3), nn.Linear(3, 3))
    with pytest.raises(CheckpointError, match=r"different model.*missing from the checkpoint: 4.weight, 4.bias.*"
                                              r"different shapes: 0.weight: checkpoint \(16, 6\) vs model \(8, 6\)"):
        other.fit(resume=True)
    ember.save({"w": ember.ones(2)}, tmp_path / "plain.safetensors")
    with pytest.raises(CheckpointError, match="not an ember.train checkpoint"):
        make(None).fit(resume=tmp_path / "plain.safetensors")
    with pytest.raises(CheckpointError, match="does not exist"):
        make(None).fit(resume=tmp_path / "nope.safetensors")


SCRIPT = """
import json, os, signal, sys
sys.path.insert(0, {root!r})
import ember
from ember import nn
from ember.data import DataLoader, TensorDataset
from ember.train import Callback, Learner

mode, ckdir, out = sys.argv[1:4]
ember.manual_seed(0)
g = ember.Generator().manual_seed(5)
x = ember.randn(96, 6, generator=g)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
opt = ember.optim.Adam(model.parameters(), lr=0.01)
train = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=ember.Generator().manual_seed(1))
val = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=16)
sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.9)


class Kill(Callback):
    def on_batch_end(self, learner):
        if learner.state.step == 17:          # mid-epoch 2; the last checkpoint is at step 15
            os.kill(os.getpid(), signal.SIGKILL)


learner = Learner(model, opt, nn.CrossEntropyLoss(), train, val, epochs=3, scheduler=sched,
                  checkpoint_dir=ckdir, checkpoint_every_steps=5, seed=0,
                  callbacks=[Kill()] if mode == "killed" else [])
model, history = learner.fit(resume=mode == "resume")
with open(out, "w") as f:
    json.dump({{"steps": learner.state.step_losses, "history": history.records}}, f)
"""


def test_sigkill_mid_epoch_then_resume_reproduces_the_loss_curve(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(root=str(ROOT))))
    env = {**os.environ, "PYTHONHASHSEED": "0"}

    def start(mode):
        return subprocess.Popen([sys.executable, str(script), mode, str(tmp_path / f"ck_{mode}"),
                                 str(tmp_path / f"{mode}.json")], env=env, stderr=subprocess.PIPE, text=True)

    full, killed = start("full"), start("killed")
    _, err = full.communicate(timeout=120)
    assert full.returncode == 0, err
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -9, err                   # died of SIGKILL, mid-epoch
    assert not (tmp_path / "killed.json").exists()
    left = ckpts(tmp_path / "ck_killed")
    assert "ckpt-step00000015-epoch0001.safetensors" in left
    assert not any(".tmp" in p for p in os.listdir(tmp_path / "ck_killed"))
    (tmp_path / "ck_resume").symlink_to(tmp_path / "ck_killed")
    resumed = start("resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err

    import json
    a = json.loads((tmp_path / "full.json").read_text())
    b = json.loads((tmp_path / "resume.json").read_text())
    steps_a, steps_b = np.array(a["steps"]), np.array(b["steps"])
    assert steps_a[:, 0].tolist() == list(range(1, 37)) and steps_b[:, 0].tolist() == list(range(1, 37))
    # steps 1..15 come from the checkpoint, 16..36 were computed again after the kill
    np.testing.assert_allclose(steps_b[15:, 1], steps_a[15:, 1], rtol=1e-6, atol=0)
    np.testing.assert_allclose(steps_b[:, 1], steps_a[:, 1], rtol=1e-6, atol=0)
    assert comparable(b["history"]) == pytest.approx(comparable(a["history"]), rel=1e-6)


def test_resume_mid_epoch_with_a_plain_list_replays_the_epoch(tmp_path):
    def build(ckdir, callbacks=()):
        ember.manual_seed(0)
        x = ember.randn(40, 6)
        y = (x[:, 0] > 0).long()
        batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 40, 8)]
        m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 2))
        return Learner(m, ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), nn.CrossEntropyLoss(), batches,
                       epochs=2, checkpoint_dir=ckdir, callbacks=list(callbacks), seed=3)
    full = build(None)
    full.fit()
    build(tmp_path, [stop_at(3)]).fit()
    assert load_checkpoint(tmp_path / "ckpt-step00000003-epoch0000.safetensors")["loader"] is None
    b = build(tmp_path)
    b.fit(resume=True)
    np.testing.assert_allclose(curve(b), curve(full), rtol=1e-6, atol=0)


def test_stream_of_unknown_length_with_accumulation():
    x, y = ember.randn(24, 6), ember.randint(0, 3, (24,))

    class Stream:                       # no __len__: the learner learns the epoch's end from StopIteration
        def __iter__(self):
            return iter([(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)])

    m = nn.Linear(6, 3)
    L = Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), Stream(), epochs=2,
                grad_accum_steps=2)
    _, h = L.fit()
    assert L.state.step == 4 and L.state.batches_per_epoch is None and len(h) == 2   # 2 + 1 leftover per epoch
