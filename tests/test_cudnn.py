"""cuDNN convolutions on the CUDA backend (ember/backend/cuda/cudnn.py): the switches without a GPU, and on
a GPU with cuDNN, every convolution direction against the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

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


def _cpu_reference(xs, ws, stride, padding, dilation, groups, gy=None):
    """(y, dx, dw) in float64 on the CPU for the output gradient ``gy`` (ones when None)."""
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal(xs)).requires_grad_()
    w = ember.tensor(rng.standard_normal(ws) * 0.2).requires_grad_()
    conv = {3: nn.functional.conv1d, 4: nn.functional.conv2d, 5: nn.functional.conv3d}[len(xs)]
    y = conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    g = np.random.default_rng(5).standard_normal(tuple(y.shape))
    (y * ember.tensor(g)).sum().backward()
    return x.detach().numpy(), w.detach().numpy(), g, y.detach().numpy(), x.grad.numpy(), w.grad.numpy()


@pytest.fixture(params=["graph", "legacy"])
def api(request):
    """cuDNN's graph API (cached execution plans; the backend's route) or its long-standing calls."""
    lib = cudnn._lib()
    if lib is None:
        pytest.skip("needs cuDNN")
    if request.param == "graph" and not lib.graph:
        pytest.skip("this cuDNN has no graph API")
    old = lib.graph
    lib.graph = request.param == "graph"
    try:
        yield request.param
    finally:
        lib.graph = old


@gpu_cudnn
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10), ("float16", 2e-2), ("bfloat16", 8e-2)])
@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) + "-" + str(c[1]) for c in CASES])
def test_cudnn_matches_the_cpu(case, dtype, tol, api):
    import cupy
    xs, ws, stride, padding, dilation, groups = case
    nd = len(xs) - 2
    st, dl = (stride,) * nd, (dilation,) * nd
    pads = ((padding, padding),) * nd
    x, w, g, y, dx, dw = _cpu_reference(*case)
    d = ember.backends.cudnn
    old, d.allow_tf32 = d.allow_tf32, False
    npdt = getattr(ember, dtype).np
    try:
        # float64 keeps the reference's inputs; the narrower dtypes round them (within their tolerance)
        cx, cw, cg = (cupy.asarray(a).astype(npdt) for a in (x, w, g))
        rem = tuple((n + 2 * padding - dilation * (k - 1) - 1) % stride for n, k in zip(xs[2:], ws[2:]))
        got = (cudnn.conv_forward(cx, cw, stride=st, padding=pads, dilation=dl, groups=groups),
               cudnn.conv_backward_data(cg, cw, stride=st, padding=tuple((padding, padding - r) for r in rem),
                                        dilation=dl, groups=groups),
               cudnn.conv_backward_filter(cx, cg, kernel_size=ws[2:], stride=st, padding=pads, dilation=dl,
                                          groups=groups))
    finally:
        d.allow_tf32 = old
    for mine, want in zip(got, (y, dx, dw)):
        assert mine is not None and mine.shape == want.shape
        np.testing.assert_allclose(cupy.asnumpy(mine.astype(np.float64)), want, rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(want).max())))


@gpu_cudnn
def test_conv_transpose_with_output_padding_and_benchmark_mode():
    import cupy
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    want = nn.functional.conv_transpose2d(ember.tensor(x), ember.tensor(w), stride=2, padding=1, output_padding=1,
                                          groups=2).numpy()
    flags = ember.backends.cudnn
    saved = (flags.allow_tf32, flags.benchmark)
    flags.allow_tf32, flags.benchmark = False, True
    try:
        got = cudnn.conv_backward_data(cupy.asarray(x), cupy.asarray(w), stride=(2, 2), padding=((1, 0), (1, 0)),
                                       dilation=(1, 1), groups=2)
    finally:
        flags.allow_tf32, flags.benchmark = saved
    assert got.shape == want.shape == (2, 8, 10, 10)
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-4, atol=1e-4)


@gpu_cudnn
def test_graph_api_pads_asymmetrically():
    """padding='same' with an even kernel pads one more after than before: the graph API takes it (the
    legacy descriptors pad symmetrically and decline), in all three directions."""
    import cupy
    if not cudnn._lib().graph:
        pytest.skip("this cuDNN has no graph API")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 9, 8))
    w = rng.standard_normal((4, 3, 4, 2)) * 0.3
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, padding="same")
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    pads = ((1, 2), (0, 1))
    cx, cw, cg = cupy.asarray(x), cupy.asarray(w), cupy.asarray(g)
    y = cudnn.conv_forward(cx, cw, stride=(1, 1), padding=pads, dilation=(1, 1), groups=1)
    dx = cudnn.conv_backward_data(cg, cw, stride=(1, 1), padding=pads, dilation=(1, 1), groups=1)
    dw = cudnn.conv_backward_filter(cx, cg, kernel_size=(4, 2), stride=(1, 1), padding=pads, dilation=(1, 1),
                                    groups=1)
    for mine, want in ((y, ty), (dx, tx.grad), (dw, tw.grad)):
        assert mine is not None
        np.testing.assert_allclose(cupy.asnumpy(mine), want.detach().numpy(), rtol=1e-10, atol=1e-10)
