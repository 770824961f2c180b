"""Learner logs: metrics.csv, metrics.jsonl, experiment.log, PNG plots; History export."""

import csv
import json
import sys

import pytest

import ember
from ember import nn
from ember.train import History, LambdaCallback, Learner, plot_history


def make(log_dir, epochs=2, ckdir=None, callbacks=(), metrics=("accuracy", "confusion_matrix")):
    ember.manual_seed(0)
    x = ember.randn(48, 5)
    y = (x[:, 0] > 0).long()
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 48, 16)]
    m = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    return Learner(m, ember.optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), batches, batches[:1],
                   epochs=epochs, log_dir=log_dir, checkpoint_dir=ckdir, metrics=metrics, callbacks=list(callbacks))


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_log_files(tmp_path):
    L = make(tmp_path)
    _, h = L.fit()
    rows = read_csv(tmp_path / "metrics.csv")
    assert list(rows[0]) == L.metric_keys() == h.keys()
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    assert float(rows[1]["val_loss"]) == h[1]["val_loss"]           # repr of floats: exact round trip
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2
    rec = json.loads(lines[1])
    assert rec["val_accuracy"] == h[1]["val_accuracy"] and rec["epoch"] == 2
    assert rec["val_confusion_matrix"] == h.arrays[1]["val_confusion_matrix"].tolist()
    assert sum(map(sum, rec["train_confusion_matrix"])) == 48
    log = (tmp_path / "experiment.log").read_text()
    assert "fit start; config:" in log and '"optimizer": "SGD"' in log and '"epochs": 2' in log
    assert "epoch 1/2: train_loss=" in log and "epoch 2/2:" in log
    assert "fit end: finished; 2 epochs recorded, 6 optimizer steps" in log
    assert "plots written: loss.png, accuracy.png" in log
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["accuracy.png", "loss.png", "lr.png", "step_loss.png",
                                                              "system.png"]
    for name in ("loss", "accuracy", "lr", "system", "step_loss"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plots_skipped_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import matplotlib raises ImportError
    L = make(tmp_path, epochs=1)
    L.fit()
    log = (tmp_path / "experiment.log").read_text()
    assert log.count("plots skipped: matplotlib is not installed") == 1
    assert not list(tmp_path.glob("*.png"))
    assert (tmp_path / "metrics.csv").exists()


def test_logs_after_stop_and_resume(tmp_path):
    logs, ck = tmp_path / "logs", tmp_path / "ck"
    stop = LambdaCallback(on_epoch_end=lambda L: L.state.epoch == 2 and L.request_stop("pause"))
    make(logs, epochs=4, ckdir=ck, callbacks=[stop]).fit()
    log = (logs / "experiment.log").read_text()
    assert "stop: pause" in log and "fit end: stopped (pause)" in log and "checkpoint written:" in log
    # a killed run may have logged an epoch after its last checkpoint: the resumed run drops it
    with open(logs / "metrics.jsonl", "a") as f:
        f.write('{"epoch": 3, "stale": true}\n')
    _, h = make(logs, epochs=4, ckdir=ck).fit(resume=True)
    assert [int(r["epoch"]) for r in read_csv(logs / "metrics.csv")] == [1, 2, 3, 4]
    lines = [json.loads(s) for s in (logs / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2, 3, 4] and not any("stale" in r for r in lines)
    log = (logs / "experiment.log").read_text()
    assert "resumed from" in log and "at epoch 3, batch 0, step 6" in log
    assert log.index("resumed from") > log.rindex("fit start; config:")


def test_history_object(tmp_path):
    h = History([{"epoch": 1, "val_loss": 0.5, "val_accuracy": 0.7},
                 {"epoch": 2, "val_loss": 0.4, "val_accuracy": 0.6},
                 {"epoch": 3, "val_loss": 0.4, "val_accuracy": 0.9, "lr": 0.1}])
    assert h["val_accuracy"] == [0.7, 0.6, 0.9] and h["lr"] == [None, None, 0.1]
    assert h.best("val_loss")["epoch"] == 2                # ties: the earliest
    assert h.best("val_accuracy")["epoch"] == 3 and h.best("val_accuracy", "min")["epoch"] == 2
    assert "val_loss" in h and len(h) == 3 and h.last["epoch"] == 3
    text = h.to_csv(tmp_path / "h.csv")
    assert text.splitlines()[0] == "epoch,val_loss,val_accuracy,lr"
    assert read_csv(tmp_path / "h.csv")[2]["lr"] == "0.1"
    assert json.loads(h.to_jsonl().splitlines()[0]) == {"epoch": 1, "val_loss": 0.5, "val_accuracy": 0.7}
    with pytest.raises(ValueError, match="mode"):
        h.best("val_loss", "lowest")
    with pytest.raises(KeyError, match="available: epoch, val_loss, val_accuracy, lr"):
        h["loss"]


def test_plot_history_directly(tmp_path):
    h = History([{"epoch": 1, "train_loss": 1.0, "val_loss": 1.2}, {"epoch": 2, "train_loss": 0.5, "val_loss": 0.8}])
    paths = plot_history(h, tmp_path / "p", step_losses=[(1, 1.0), (2, 0.7)])
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["loss.png", "step_loss.png"]
