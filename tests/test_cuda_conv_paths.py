"""The CUDA backend's convolution, batch-norm and max-pool code paths against PyTorch (CPU).

Every case runs on "cudasim" (the CUDA op code on numpy, registered by tests/test_cuda_sim.py) and,
where CuPy and a GPU are present, on "cuda" too, where it exercises the GPU-only kernels: the per-sample
im2col layout, col2im as one gather kernel, the cuBLAS strided-batched GEMM (``kernels.gemm_batched``),
the two-launch batch-norm kernels and the max-pool kernels. The shapes pick each path: 1x1 convolutions
(plain, strided downsample, grouped), general kernels (padded, strided, dilated, grouped, 1-d and 3-d),
conv_transpose with output_padding, the weight gradient's two strategies (per-sample products summed, or
one GEMM over N*L), batch norm with and without affine parameters and with a large mean offset.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.backends
from ember.backend.cuda import kernels
from tests import test_cuda_sim  # noqa: F401 - registers "cudasim" (one registration for every test module)

DEVICES = ["cudasim"] + (["cuda"] if ember.cuda.is_available() else [])
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _pair(shape, dev, dtype=np.float64, seed=0, offset=0.0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype) + offset
    e = ember.tensor(a, device=dev, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    return e, t


@pytest.fixture(params=["gemm", "cudnn"])
def route(request, dev):
    """Which convolution path the CUDA device takes: ember's GEMMs (cuDNN switched off) or cuDNN (when it
    is installed; on "cudasim" there is only the GEMM path)."""
    from ember.backend.cuda import cudnn
    if request.param == "cudnn" and (dev != "cuda" or not cudnn.routes((3, 3))):
        pytest.skip("cuDNN routing needs a GPU and cuDNN with its graph API")
    flags = ember.backends.cudnn
    old = flags.enabled
    flags.enabled = request.param == "cudnn"
    try:
        yield request.param
    finally:
        flags.enabled = old


def _close(e, t, tol):
    got = e.detach().cpu().float().numpy() if e.dtype is not ember.float64 else e.detach().cpu().numpy()
    np.testing.assert_allclose(got, t.detach().double().numpy(), rtol=tol, atol=tol)


# (x shape, w shape, stride, padding, dilation, groups)
CONVS = [
    ((2, 8, 7, 6), (12, 8, 1, 1), 1, 0, 1, 1),        # 1x1: batched GEMM, NCHW out, no im2col
    ((2, 8, 7, 6), (12, 8, 1, 1), 2, 0, 1, 1),        # strided 1x1 (ResNet's downsample)
    ((3, 8, 5, 5), (6, 4, 1, 1), 1, 0, 1, 2),         # grouped 1x1
    ((2, 4, 8, 7), (5, 4, 3, 3), 1, 1, 1, 1),         # 3x3 padded
    ((2, 3, 11, 10), (4, 3, 7, 7), 2, 3, 1, 1),       # ResNet's stem: 7x7 stride 2
    ((2, 4, 9, 9), (6, 4, 3, 3), 2, 1, 1, 1),         # 3x3 stride 2 (input gradient crops)
    ((2, 4, 9, 8), (6, 4, 3, 2), 1, (2, 1), 2, 1),    # dilated, rectangular kernel
    ((2, 6, 7, 7), (6, 2, 3, 3), 1, 1, 1, 3),         # grouped 3x3
    ((2, 6, 7, 7), (6, 1, 3, 3), 2, 1, 1, 6),         # depthwise, strided
    ((1, 2, 40, 40), (3, 2, 1, 1), 1, 0, 1, 1),       # 1x1 with L >> C: weight grad by per-sample products
    ((2, 3, 20, 20), (2, 3, 3, 3), 1, 1, 1, 1),       # 3x3 with O*C*K < L*O: per-sample products
    ((2, 3, 9), (4, 3, 3), 2, 1, 1, 1),               # 1-d
    ((1, 2, 5, 4, 5), (3, 2, 3, 1, 2), 1, (1, 0, 1), 1, 1),   # 3-d
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", CONVS, ids=[f"{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-g{c[5]}" for c in CONVS])
def test_conv_and_gradients_match_torch(dev, case, route):
    xs, ws, stride, padding, dilation, groups = case
    nd = len(xs) - 2
    fe = getattr(ember.nn.functional, f"conv{nd}d")
    ft = getattr(torch.nn.functional, f"conv{nd}d")
    x, tx = _pair(xs, dev, seed=1)
    w, tw = _pair(ws, dev, seed=2)
    b, tb = _pair((ws[0],), dev, seed=3)
    y = fe(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    ty = ft(tx, tw, tb, stride=stride, padding=padding, dilation=dilation, groups=groups)
    assert tuple(y.shape) == tuple(ty.shape)
    _close(y, ty, 1e-9)
    g, tg = _pair(tuple(ty.shape), dev, seed=4)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    for e, t in ((x, tx), (w, tw), (b, tb)):
        assert tuple(e.grad.shape) == tuple(t.grad.shape)
        _close(e.grad, t.grad, 1e-9)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", [((2, 6, 5, 5), (6, 4, 3, 3), 2, 1, 1, 1), ((2, 4, 4, 5), (4, 3, 1, 1), 2, 0, 1, 1),
                                  ((2, 4, 4, 4), (4, 2, 3, 3), 2, 1, 1, 2), ((1, 2, 5, 5), (2, 3, 2, 2), 1, 0, 2, 1)])
def test_conv_transpose_matches_torch(dev, case, route):
    """conv_transpose2d with output_padding (a negative crop: zeros appended) and groups: the gather kernel."""
    xs, ws, stride, padding, dilation, groups = case
    x, tx = _pair(xs, dev, seed=5)
    w, tw = _pair(ws, dev, seed=6)
    op = 1 if stride > 1 else 0
    y = ember.nn.functional.conv_transpose2d(x, w, None, stride, padding, op, groups, dilation)
    ty = torch.nn.functional.conv_transpose2d(tx, tw, None, stride, padding, op, groups, dilation)
    _close(y, ty, 1e-9)
    y.sum().backward()
    ty.sum().backward()
    _close(x.grad, tx.grad, 1e-9)
    _close(w.grad, tw.grad, 1e-9)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_conv_low_precision_dtypes(dev, dtype, route):
    nd = getattr(np, dtype)
    x, tx = _pair((2, 4, 6, 6), dev, nd, seed=7)
    w, tw = _pair((5, 4, 3, 3), dev, nd, seed=8)
    w1, tw1 = _pair((3, 5, 1, 1), dev, nd, seed=9)
    y = ember.nn.functional.conv2d(ember.nn.functional.conv2d(x, w, padding=1), w1)
    ty = torch.nn.functional.conv2d(torch.nn.functional.conv2d(tx.float(), tw.float(), padding=1), tw1.float())
    assert y.dtype is getattr(ember, dtype)
    _close(y, ty, 2e-2 if dtype == "float16" else 1e-4)
    y.float().sum().backward()
    ty.sum().backward()
    _close(x.grad, tx.grad, 5e-2 if dtype == "float16" else 1e-4)


BN_SHAPES = [(4, 3, 5, 6), (2, 5, 7), (3, 4, 2, 3, 2), (64, 2, 40, 40), (2, 300, 1, 1)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", BN_SHAPES, ids=[str(s) for s in BN_SHAPES])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_forward_backward_match_torch(dev, shape, affine, dtype):
    nd = getattr(np, dtype)
    tol = 1e-9 if dtype == "float64" else 2e-4
    x, tx = _pair(shape, dev, nd, seed=10, offset=30.0)  # a large mean: the one-pass sums must not cancel
    c = shape[1]
    kw, tkw = {}, {}
    if affine:
        w, tw = _pair((c,), dev, nd, seed=11)
        b, tb = _pair((c,), dev, nd, seed=12)
        kw, tkw = {"weight": w, "bias": b}, {"weight": tw, "bias": tb}
    rm, rv = ember.zeros(c, dtype=getattr(ember, dtype), device=dev), ember.ones(c, dtype=getattr(ember, dtype),
                                                                                  device=dev)
    trm, trv = torch.zeros(c, dtype=tx.dtype), torch.ones(c, dtype=tx.dtype)
    y = ember.nn.functional.batch_norm(x, rm, rv, training=True, **kw)
    ty = torch.nn.functional.batch_norm(tx, trm, trv, training=True, **tkw)
    _close(y, ty, tol)
    _close(rm, trm, tol)
    _close(rv, trv, tol)
    g, tg = _pair(shape, dev, nd, seed=13)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    _close(x.grad, tx.grad, tol * 10)
    if affine:
        _close(kw["weight"].grad, tkw["weight"].grad, tol * 10)
        _close(kw["bias"].grad, tkw["bias"].grad, tol * 10)


POOLS = [((2, 3, 9, 8), 3, 2, 1, 1), ((1, 2, 6, 6), 2, 2, 0, 1), ((2, 2, 7, 7), 3, 1, 1, 2),
         ((1, 1, 5, 7), (2, 3), (1, 2), (1, 1), 1)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", POOLS, ids=[str(c[1:]) for c in POOLS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_matches_torch(dev, case, dtype):
    xs, k, s, p, d = case
    a = np.random.default_rng(14).integers(-3, 4, xs).astype(dtype)  # ties: the first maximum wins
    x = ember.tensor(a, device=dev, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y, i = ember.nn.functional.max_pool2d(x, k, s, p, d, return_indices=True)
    ty, ti = torch.nn.functional.max_pool2d(tx, k, s, p, d, return_indices=True)
    _close(y, ty, 0)
    np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())
    g, tg = _pair(tuple(ty.shape), dev, getattr(np, dtype), seed=15)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    _close(x.grad, tx.grad, 1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_max_pool2d_propagates_nan(dev):
    a = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    a[0, 0, 1, 2] = np.nan
    y = ember.nn.functional.max_pool2d(ember.tensor(a, device=dev), 2)
    ty = torch.nn.functional.max_pool2d(torch.tensor(a), 2)
    np.testing.assert_array_equal(y.cpu().numpy(), ty.numpy())


def _gemm_cases(xp):
    rng = np.random.default_rng(16)

    def m(*shape):
        return xp.asarray(rng.standard_normal(shape))
    return [
        (m(3, 4), m(5, 4, 6), False, False),            # shared weight, batch of matrices
        (m(4, 3), m(5, 4, 6), True, False),             # shared weight transposed
        (m(5, 3, 4), m(5, 6, 4), False, True),          # both batched, b transposed
        (m(5, 4, 3).transpose(0, 2, 1), m(4, 6), False, False),   # a column-major view: no copy, flipped flag
        (m(5, 3, 8)[:, :, ::2], m(5, 4, 2), False, False),        # a strided view: copied
    ]


def test_gemm_batched_on_numpy():
    for a, b, ta, tb in _gemm_cases(np):
        want = np.matmul(a.swapaxes(-1, -2) if ta else a, b.swapaxes(-1, -2) if tb else b)
        np.testing.assert_allclose(kernels.gemm_batched(np, a, b, ta, tb), want.reshape((-1,) + want.shape[-2:]))


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_gemm_batched_on_the_gpu_matches_numpy(dtype):
    import cupy
    for a, b, ta, tb in _gemm_cases(np):
        a, b = a.astype(dtype), b.astype(dtype)
        want = np.matmul(a.swapaxes(-1, -2) if ta else a, b.swapaxes(-1, -2) if tb else b).astype(np.float64)
        got = kernels.gemm_batched(cupy, cupy.asarray(a), cupy.asarray(b), ta, tb)
        tol = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-2}[dtype]
        np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), want.reshape((-1,) + want.shape[-2:]),
                                   rtol=tol, atol=tol)
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        a, b = cupy.ones((64, 64), cupy.float32), cupy.ones((2, 64, 64), cupy.float32)
        assert float(kernels.gemm_batched(cupy, a, b)[1, 5, 7]) == 64.0
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a CUDA GPU")
def test_conv_paths_replay_in_a_cuda_graph():
    """The GPU paths are capturable: kernels on the current stream, GEMMs through ember's ctypes cuBLAS call
    while a capture is open (CuPy refuses its own cuBLAS wrappers then)."""
    F = ember.nn.functional
    x = ember.randn(4, 8, 12, 12, device="cuda")
    w3, w1 = ember.randn(8, 8, 3, 3, device="cuda"), ember.randn(16, 8, 1, 1, device="cuda")
    bw, bb = ember.ones(16, device="cuda"), ember.zeros(16, device="cuda")

    def step():
        h = F.conv2d(x, w3, padding=1, stride=2)
        h = F.batch_norm(F.conv2d(h, w1), None, None, bw, bb, training=True)
        return F.max_pool2d(F.relu(h), 2)
    step()  # warm-up: kernels compiled, handles created outside the capture
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        got = step()
    x.copy_(ember.randn(4, 8, 12, 12, device="cuda"))
    g.replay()
    np.testing.assert_allclose(got.cpu().numpy(), step().cpu().numpy(), rtol=1e-4, atol=1e-4)
