"""cuDNN convolutions on the CUDA backend (ember/backend/cuda/cudnn.py): the switches without a GPU, and on
a GPU with cuDNN, every convolution direction against the backend's own im2col path and the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.backends
from ember import nn
from ember.backend.cuda import cudnn

HAS_CUDNN = ember.cuda.is_available() and cudnn.available()
gpu_cudnn = pytest.mark.skipif(not HAS_CUDNN, reason="needs CuPy, a CUDA GPU and cuDNN")


def test_flags_have_pytorchs_defaults_and_refuse_non_bools():
    import importlib
    flags = ember.backends.cudnn
    names = ("enabled", "allow_tf32", "benchmark", "deterministic")
    saved = {n: getattr(flags, n) for n in names}  # conftest turns TF32 off for the registry on a GPU
    importlib.reload(flags)
    try:
        assert [getattr(flags, n) for n in names] == [True, True, False, False]
    finally:
        for n, v in saved.items():
            setattr(flags, n, v)
    for name in ("enabled", "allow_tf32", "benchmark", "deterministic"):
        with pytest.raises(TypeError, match=f"cudnn.{name} must be a bool"):
            setattr(flags, name, 1)
    assert isinstance(flags.is_available(), bool)


def test_switched_off_by_the_environment(monkeypatch):
    saved = dict(cudnn._state)
    monkeypatch.setenv("EMBER_CUDNN", "0")
    cudnn._state.clear()
    try:
        assert cudnn.available() is False and cudnn.version() is None
        x, w = np.zeros((1, 2, 5, 5), np.float32), np.zeros((3, 2, 3, 3), np.float32)
        # no library: the backend's own path must take the case
        assert cudnn.conv_forward(x, w, stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1) is None
    finally:
        cudnn._state.clear()
        cudnn._state.update(saved)


def test_a_missing_library_is_not_an_error(monkeypatch):
    saved = dict(cudnn._state)
    monkeypatch.setattr(cudnn, "_candidates", lambda: ["/nonexistent/libcudnn.so.9"])
    cudnn._state.clear()
    try:
        assert cudnn.available() is False
    finally:
        cudnn._state.clear()
        cudnn._state.update(saved)


# ---- on a GPU with cuDNN -----------------------------------------------------------------------------------
CASES = [  # (input shape, weight shape, stride, padding, dilation, groups)
    ((4, 8, 12, 12), (16, 8, 1, 1), 1, 0, 1, 1),
    ((4, 8, 13, 11), (16, 8, 3, 3), 2, 1, 1, 1),
    ((2, 3, 31, 31), (8, 3, 7, 7), 2, 3, 1, 1),
    ((2, 8, 10, 10), (8, 2, 3, 3), 1, 2, 2, 4),
    ((3, 4, 17), (5, 4, 3), 2, 1, 1, 1),
    ((2, 3, 6, 7, 5), (4, 3, 3, 3, 3), 1, 1, 1, 1),
]


def _conv_and_grads(device, dtype, xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal(xs).astype(np.float32), device=device).to(dtype).requires_grad_()
    w = ember.tensor(rng.standard_normal(ws).astype(np.float32) * 0.2, device=device).to(dtype).requires_grad_()
    conv = {3: nn.functional.conv1d, 4: nn.functional.conv2d, 5: nn.functional.conv3d}[len(xs)]
    y = conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    (y.float() * y.float()).sum().backward()
    return [t.float().cpu().numpy() for t in (y.detach(), x.grad, w.grad)]


@gpu_cudnn
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10), ("float16", 2e-2), ("bfloat16", 8e-2)])
@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) + "-" + str(c[1]) for c in CASES])
def test_cudnn_matches_the_cpu(case, dtype, tol):
    d = getattr(ember, dtype)
    flags = ember.backends.cudnn
    old = flags.allow_tf32
    flags.allow_tf32 = False
    try:
        got = _conv_and_grads("cuda", d, *case)
    finally:
        flags.allow_tf32 = old
    want = _conv_and_grads("cpu", ember.float64, *case)
    for g, e in zip(got, want):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol * max(1.0, float(np.abs(e).max())))


@gpu_cudnn
def test_cudnn_is_used_and_agrees_with_the_im2col_path():
    flags = ember.backends.cudnn
    calls = []
    saved = (flags.enabled, flags.allow_tf32)
    real = cudnn._run
    cudnn._run = lambda *a, **k: calls.append(a[0]) or real(*a, **k)
    try:
        flags.allow_tf32 = False
        on = _conv_and_grads("cuda", ember.float32, *CASES[1])
        assert set(calls) == {"fwd", "data", "filter"}
        flags.enabled = False
        calls.clear()
        off = _conv_and_grads("cuda", ember.float32, *CASES[1])
        assert calls == []
    finally:
        cudnn._run = real
        flags.enabled, flags.allow_tf32 = saved
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@gpu_cudnn
def test_conv_transpose_with_output_padding_and_benchmark_mode():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    flags = ember.backends.cudnn
    outs = {}
    saved = (flags.allow_tf32, flags.benchmark)
    flags.allow_tf32, flags.benchmark = False, True
    try:
        for dev in ("cpu", "cuda"):
            y = nn.functional.conv_transpose2d(ember.tensor(x, device=dev), ember.tensor(w, device=dev), stride=2,
                                               padding=1, output_padding=1, groups=2)
            outs[dev] = y.cpu().numpy()
    finally:
        flags.allow_tf32, flags.benchmark = saved
    assert outs["cuda"].shape == outs["cpu"].shape == (2, 8, 10, 10)
    np.testing.assert_allclose(outs["cuda"], outs["cpu"], rtol=1e-4, atol=1e-4)
