"""Real models through ember.onnx, compared with onnxruntime on the same inputs.

* the three PaddleOCR CNNs that rapidocr-onnxruntime ships (detection, recognition, direction);
* models exported here with torch.onnx.export from plain-torch definitions: a ResNet-18-shaped
  CNN (at opsets 7, 13, 17 and 20), a transformer encoder and a 2-layer LSTM (opsets 9 and 17),
  with dynamic batch axes that stay dynamic (each imported model is run at two batch sizes);
* fine-tuning: an exported CNN is imported, its gradients match torch's for the original model,
  and a few ember.optim steps make its loss fall.

Tolerance: rtol 1e-4 relative to each value, plus atol 1e-4 of the output's largest magnitude (at
least 1e-6: the float32 chains of both runtimes differ in summation order, and onnxruntime's
sigmoid flushes probabilities below ~1e-10 to 0).
"""

import importlib.util
import io
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import ember  # noqa: E402
import ember.onnx as eo  # noqa: E402
from ember.onnx.codegen import ident  # noqa: E402

tnn = torch.nn


def _close(out, ref, what):
    out = out.numpy() if isinstance(out, ember.Tensor) else np.asarray(out)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} vs onnxruntime {ref.shape}"
    assert out.dtype == ref.dtype, f"{what}: dtype {out.dtype} vs onnxruntime {ref.dtype}"
    scale = max(float(np.abs(ref).max()), 1e-2)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * scale, err_msg=what)


def _compare(model_bytes_or_path, feeds: list[dict], what: str, model=None):
    sess = ort.InferenceSession(model_bytes_or_path, providers=["CPUExecutionProvider"])
    model = model or eo.load(model_bytes_or_path)
    for feed in feeds:
        refs = sess.run(None, feed)
        with ember.no_grad():
            outs = model(*[ember.from_numpy(v) for v in feed.values()])
        outs = outs if isinstance(outs, tuple) else (outs,)
        assert len(outs) == len(refs)
        for i, (o, r) in enumerate(zip(outs, refs)):
            _close(o, r, f"{what} output {i} for input shapes {[v.shape for v in feed.values()]}")
    return model


# -- rapidocr's PaddleOCR models ------------------------------------------------------------------

def _ocr_dir():
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or spec.origin is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    return os.path.join(os.path.dirname(spec.origin), "models")


def _image(shape, seed):
    """A synthetic page: light background with dark bars of 'text', normalised like PaddleOCR's
    preprocessing ((pixel - 0.5) / 0.5), plus a little noise."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    img = np.full(shape, 0.9)
    for k in range(n):
        for _ in range(6):
            y0, x0 = rng.integers(0, h - 6), rng.integers(0, w - 12)
            img[k, :, y0:y0 + rng.integers(3, 8), x0:x0 + rng.integers(6, w // 2)] = 0.1
    img += 0.05 * rng.standard_normal(shape)
    return ((img - 0.5) / 0.5).astype(np.float32)


@pytest.mark.parametrize("name,shapes", [
    ("ch_PP-OCRv4_det_infer.onnx", [(1, 3, 64, 96), (2, 3, 96, 64)]),
    ("ch_PP-OCRv4_rec_infer.onnx", [(1, 3, 48, 160), (2, 3, 48, 96)]),
    ("ch_ppocr_mobile_v2.0_cls_infer.onnx", [(1, 3, 48, 192), (3, 3, 48, 192)]),
])
def test_rapidocr_models_match_onnxruntime(name, shapes):
    path = os.path.join(_ocr_dir(), name)
    if not os.path.exists(path):
        pytest.skip(f"{name} is not in this rapidocr-onnxruntime release")
    feeds = [{"x": _image(s, i)} for i, s in enumerate(shapes)]
    model = _compare(path, feeds, name)
    params = list(model.parameters())
    assert sum(p.numel() for p in params) > 10_000   # weights became trainable parameters
    out = model(ember.from_numpy(feeds[0]["x"]))      # and every one of them gets a finite gradient
    out.sum().backward()
    assert all(p.grad is not None and np.isfinite(p.grad.numpy()).all() for p in params)


# -- torch.onnx.export'ed models ------------------------------------------------------------------

def _export(model, args, names, dynamic_axes, opset=17) -> bytes:
    f = io.BytesIO()
    torch.onnx.export(model.eval(), args, f, input_names=names, output_names=["out"],
                      dynamic_axes=dynamic_axes, opset_version=opset, dynamo=False)
    return f.getvalue()


class _Block(tnn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.down = (tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else tnn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.down(x))


class _ResNet18(tnn.Module):
    """ResNet-18's layout (stem, 4 stages of 2 basic blocks, pooled linear head), narrow."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = tnn.Sequential(tnn.Conv2d(3, width, 7, 2, 3, bias=False), tnn.BatchNorm2d(width),
                                   tnn.ReLU(), tnn.MaxPool2d(3, 2, 1))
        blocks, c = [], width
        for i, m in enumerate([1, 2, 4, 8]):
            blocks += [_Block(c, width * m, 1 if i == 0 else 2), _Block(width * m, width * m, 1)]
            c = width * m
        self.layers = tnn.Sequential(*blocks)
        self.fc = tnn.Linear(c, classes)

    def forward(self, x):
        y = tnn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
        return self.fc(torch.flatten(y, 1))


@pytest.mark.parametrize("opset", [7, 13, 17, 20])
def test_resnet18_export_matches_onnxruntime(opset):
    torch.manual_seed(0)
    net = _ResNet18()
    for m in net.modules():   # non-trivial running statistics
        if isinstance(m, tnn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 64, 64)
    b = _export(net, (x,), ["x"], {"x": {0: "batch"}, "out": {0: "batch"}}, opset=opset)
    rng = np.random.default_rng(0)
    _compare(b, [{"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32)} for n in (2, 3)], "resnet18")


def test_transformer_encoder_export_matches_onnxruntime():
    torch.manual_seed(1)
    enc = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), 2,
                                 enable_nested_tensor=False)
    x = torch.randn(2, 7, 32)
    b = _export(enc, (x,), ["x"], {"x": {0: "batch", 1: "seq"}, "out": {0: "batch", 1: "seq"}})
    rng = np.random.default_rng(1)
    # torch's TorchScript exporter bakes the sequence length into one Reshape; the batch stays dynamic
    feeds = [{"x": rng.standard_normal(s).astype(np.float32)} for s in [(2, 7, 32), (3, 7, 32)]]
    _compare(b, feeds, "transformer encoder")


class _LSTMNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = tnn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = tnn.Linear(16, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y)


@pytest.mark.parametrize("opset", [9, 17])
def test_lstm_dynamic_batch_matches_onnxruntime(opset):
    torch.manual_seed(2)
    net = _LSTMNet()
    x = torch.randn(2, 5, 8)
    b = _export(net, (x,), ["x"], {"x": {0: "batch"}, "out": {0: "batch"}}, opset=opset)
    rng = np.random.default_rng(2)
    _compare(b, [{"x": rng.standard_normal((n, 5, 8)).astype(np.float32)} for n in (2, 4)], "lstm")


# -- fine-tuning ----------------------------------------------------------------------------------

class _SmallCNN(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = tnn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = tnn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.fc = tnn.Linear(8 * 4 * 4, 3)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y))
        return self.fc(torch.flatten(y, 1))


def test_fine_tune_imported_model_gradients_match_torch_and_loss_falls():
    torch.manual_seed(3)
    net = _SmallCNN()
    b = _export(net, (torch.randn(2, 1, 8, 8),), ["x"], {"x": {0: "batch"}, "out": {0: "batch"}})
    model = eo.load(b)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, 6)

    # gradients of the same loss, imported model vs the original torch model
    tl = tnn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y))
    tl.backward()
    el = ember.nn.functional.cross_entropy(model(ember.from_numpy(x)), ember.from_numpy(y))
    el.backward()
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-5)
    torch_params = dict(net.named_parameters())
    names = dict(model.named_parameters())
    assert len(names) == len(torch_params)
    for attr, p in names.items():
        tp = torch_params[model.onnx_names[attr]]
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=attr)
    assert {ident(k) for k in torch_params} == set(names)

    # a few optimiser steps: the loss falls
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(ember.from_numpy(x)), ember.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
