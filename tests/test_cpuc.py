"""CpuC (device "cpu:compiled"): each C kernel against the numpy backend on odd shapes (empty, size-1,
non-contiguous, padded/strided/dilated geometry, sizes that engage the OpenMP threads), float32 and
float64, plus the device itself (stack, fallbacks, errors). The op registry runs on cpu:compiled too
(tests/test_registry.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._errors import BackendUnavailable

cpuc = pytest.importorskip("ember.backend.cpuc")
try:
    C = cpuc.CpuC()
except BackendUnavailable as e:  # no C compiler on this machine
    pytest.skip(str(e), allow_module_level=True)

from ember.backend.cpuc import _lib, elementwise, rows  # noqa: E402
from ember.backend.numpy import Numpy  # noqa: E402

N = Numpy()
DTYPES = (np.float32, np.float64)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-11)}


def _same(op, inputs, attrs, dt, tol=None):
    """Run op on both backends and compare every output (values, shape, dtype)."""
    want = N.run(op, inputs, attrs)
    got = C.run(op, inputs, attrs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (op, g.shape, w.shape)
        assert g.dtype == w.dtype, (op, g.dtype, w.dtype)
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=op)
        else:
            np.testing.assert_allclose(g, w, **(tol or TOL[dt]), err_msg=op, equal_nan=True)
    return got


def _rand(rng, shape, dt, layout="contiguous"):
    if layout == "transposed":  # same logical shape, non-contiguous memory
        a = rng.standard_normal(shape[::-1]).astype(dt).T
    elif layout == "sliced":
        a = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dt)[..., ::2]
    else:
        a = rng.standard_normal(shape).astype(dt)
    return a


# ---- the device ----------------------------------------------------------------------------------
def test_device_stack_and_interop():
    dev = ember.device("cpu:compiled")
    assert dev.type == "cpu" and str(dev) == "cpu:compiled"
    assert type(dev.backend.inner).__name__ == "CpuC"
    x = ember.arange(6.0, device="cpu:compiled").reshape(2, 3)
    assert x.device == dev
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))  # numpy handles: shared storage
    y = x.t()
    assert y.stride() == (1, 3)
    assert x.to("cpu").device == ember.device("cpu")


def test_compiled_ops_listed():
    names = cpuc.compiled_ops()
    assert {"conv", "max_pool", "norm_affine", "softmax", "sum", "where"} <= names
    assert all(C.supports(n) for n in names)
    assert C.supports("sort")  # the numpy backend's ops are all there


def test_other_dtypes_fall_back():
    x = np.arange(24, dtype=np.int32).reshape(1, 2, 3, 4)
    pool = dict(kernel_size=(2, 2), stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1))
    _same("max_pool", (x,), pool, np.float32)
    import ml_dtypes
    h = np.linspace(-2, 2, 40000).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(C.run("relu", (h,), {}).astype(np.float32), np.maximum(h.astype(np.float32), 0))


def test_no_compiler_is_a_clear_error(monkeypatch):
    from ember.cube.errors import CompilerUnavailable
    monkeypatch.setattr(_lib, "_entry", None)
    monkeypatch.setattr(_lib, "_error", CompilerUnavailable("no C compiler found"))
    with pytest.raises(BackendUnavailable, match="install gcc or clang"):
        cpuc.CpuC()


def test_training_step_matches_numpy():
    from ember.examples import mnist
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((6, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, 6)
    losses, grads = [], []
    for dev in ("cpu", "cpu:compiled"):
        ember.manual_seed(0)
        model = mnist.MnistCNN(width=4, hidden=8, dropout=0.0, shift=0).to(dev).train()
        loss = ember.nn.functional.cross_entropy(model(ember.tensor(xs, device=dev)), ember.tensor(ys, device=dev))
        loss.backward()
        losses.append(loss.item())
        grads.append([p.grad.numpy() for p in model.parameters()])
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


# ---- convolution -----------------------------------------------------------------------------------
CONV_CASES = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 9, 7), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((3, 2, 8, 10), (5, 2, 3, 2), (2, 3), ((0, 1), (2, 0)), (1, 1), 1),
    ((1, 4, 11, 9), (6, 2, 3, 3), (1, 2), ((2, 2), (1, 1)), (2, 1), 2),
    ((2, 1, 5, 5), (3, 1, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 1, 1, 1), (2, 1, 1, 1), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 2, 7, 8), (3, 2, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1),       # 'same', dilated: span copies
    ((2, 2, 5, 8), (3, 2, 2, 4), (1, 1), ((0, 1), (1, 2)), (1, 1), 1),       # 'same', even kernel
    ((1, 1, 3, 2), (1, 1, 3, 3), (1, 1), ((4, 4), (1, 1)), (1, 1), 1),       # padding taller than the image
    ((2, 3, 13), (4, 3, 3), (2,), ((1, 2),), (2,), 1),                         # 1-d
    ((2, 3, 13), (4, 3, 5), (1,), ((2, 2),), (1,), 1),                         # 1-d 'same'
    ((0, 3, 6, 6), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),       # empty batch
    ((16, 8, 20, 20), (16, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),    # threads, several chunks
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv_family(case, dt):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    x, w = _rand(rng, xs, dt), _rand(rng, ws, dt)
    b = _rand(rng, (ws[0],), dt)
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else None
    (y,) = _same("conv", (x, w, b), attrs, dt, tol)
    _same("conv", (x, w), attrs, dt, tol)
    g = _rand(rng, y.shape, dt)
    _same("conv_weight", (x, g), dict(kernel_size=ws[2:], **attrs), dt, tol)
    # conv's input gradient is a conv_transpose of g whose crop gives back x's size
    nd = len(ws) - 2
    lo_hi = tuple((p[0], n - ((o - 1) * s + d * (k - 1) + 1 - p[0]))
                  for p, n, o, s, d, k in zip(padding, xs[2:], y.shape[2:], stride, dilation, ws[2:]))
    _same("conv_transpose", (g, w), dict(stride=stride, padding=lo_hi, dilation=dilation, groups=groups), dt, tol)
    if groups == 1:
        geo = dict(kernel_size=ws[2:], dilation=dilation, padding=padding, stride=stride)
        (cols,) = _same("im2col", (x,), geo, dt)
        _same("col2im", (cols,), dict(output_size=xs[2:], **geo), dt, tol)
    assert nd in (1, 2)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_conv_non_contiguous(layout):
    rng = np.random.default_rng(2)
    x = _rand(rng, (3, 4, 7, 6), np.float64, layout)
    w = _rand(rng, (5, 4, 3, 3), np.float64, layout)
    _same("conv", (x, w), dict(stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1), np.float64)
    cols = _rand(rng, (3, 4 * 9, 30), np.float64, layout)
    _same("col2im", (cols,), dict(output_size=(6, 7), kernel_size=(3, 3), dilation=(1, 1),
                                  padding=((1, 1), (0, 0)), stride=(1, 1)), np.float64)


def test_conv_weight_first_layer_large():
    # the thin-product C path (C*K <= 64) with enough images for several threads
    rng = np.random.default_rng(3)
    x, g = _rand(rng, (64, 1, 28, 28), np.float32), _rand(rng, (64, 8, 28, 28), np.float32)
    _same("conv_weight", (x, g), dict(kernel_size=(3, 3), stride=(1, 1), padding=((1, 1), (1, 1)),
                                      dilation=(1, 1), groups=1), np.float32, dict(rtol=1e-4, atol=2e-3))


# ---- pooling -------------------------------------------------------------------------------------
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),     # the 2x2 fast path
    ((2, 3, 9, 7), (2, 2), (2, 2), ((0, 1), (0, 1)), (1, 1)),     # ceil_mode's overhang
    ((1, 2, 10, 9), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),
    ((1, 2, 10, 9), (3, 2), (1, 2), ((1, 0), (0, 1)), (2, 3)),
    ((2, 2, 17), (3,), (2,), ((1, 1),), (1,)),                    # 1-d
    ((1, 1, 1, 1), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((0, 2, 4, 4), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((64, 16, 24, 24), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),  # threads
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
def test_max_pool(case, dt):
    xs, k, s, p, d = case
    rng = np.random.default_rng(4)
    x = _rand(rng, xs, dt)
    if x.size > 4:   # ties (first max wins), NaN (last NaN wins) and -inf
        flat = x.reshape(-1)
        flat[::7] = 0.5
        flat[3::11] = np.nan
        flat[5::13] = -np.inf
    attrs = dict(kernel_size=k, stride=s, padding=p, dilation=d)
    vals, idx = _same("max_pool", (x,), attrs, dt)
    _same("max_pool_values", (x,), attrs, dt)
    g = _rand(rng, vals.shape, dt)
    for disjoint in (False, True):
        if disjoint and any(si < (ki - 1) * di + 1 for si, ki, di in zip(s, k, d)):
            continue
        _same("max_pool_backward", (g, idx), dict(input_size=xs[2:], disjoint=disjoint), dt)


def test_max_pool_non_contiguous():
    rng = np.random.default_rng(5)
    x = _rand(rng, (2, 3, 6, 8), np.float32, "transposed")
    attrs = dict(kernel_size=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1))
    vals, idx = _same("max_pool", (x,), attrs, np.float32)
    g = _rand(rng, vals.shape, np.float32, "transposed")
    _same("max_pool_backward", (g, idx), dict(input_size=(6, 8), disjoint=True), np.float32)


# ---- normalisation -------------------------------------------------------------------------------
NORM_CASES = [
    # (x shape, dims, param shape or None)
    ((4, 3, 5, 5), (0, 2, 3), (1, 3, 1, 1)),    # batch norm
    ((2, 3), (0,), (3,)),
    ((64, 32, 14, 14), (0, 2, 3), (1, 32, 1, 1)),  # threads
    ((1, 1, 1), (0, 2), None),
    ((5, 7), (1,), (7,)),                        # layer norm
    ((3, 4, 6), (1, 2), (4, 6)),
    ((300, 257), (1,), None),
    ((2, 1), (1,), (1,)),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", NORM_CASES, ids=[str(i) for i in range(len(NORM_CASES))])
def test_norm_affine(case, dt):
    xs, dims, ps = case
    rng = np.random.default_rng(6)
    x = _rand(rng, xs, dt) * 3 + 1
    w = None if ps is None else _rand(rng, ps, dt)
    b = None if ps is None else _rand(rng, ps, dt)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else dict(rtol=1e-9, atol=1e-9)
    _same("norm_affine", (x, w, b), dict(dim=dims, eps=1e-5), dt, tol)
    _same("norm_affine", (x, w, None), dict(dim=dims, eps=0.1), dt, tol)
    g = _rand(rng, xs, dt)
    _same("norm_affine_backward", (x, w, g), dict(dim=dims, eps=1e-5, bias_shape=ps), dt, tol)
    _same("norm_affine_backward", (x, None, g), dict(dim=dims, eps=1e-5, bias_shape=None), dt, tol)


def test_norm_non_contiguous_and_empty():
    rng = np.random.default_rng(7)
    x = _rand(rng, (4, 3, 5), np.float64, "transposed")
    _same("norm_affine", (x, None, None), dict(dim=(0, 2), eps=1e-5), np.float64)
    e = np.zeros((0, 3, 4), np.float32)
    _same("norm_affine", (e, None, None), dict(dim=(0, 2), eps=1e-5), np.float32)


# ---- rows: softmax and reductions -----------------------------------------------------------------
@pytest.fixture
def no_small(monkeypatch):
    """Send even tiny inputs to the C kernels (their numpy shortcut would hide them)."""
    monkeypatch.setattr(rows, "SMALL", 0)
    monkeypatch.setattr(rows, "SMALL_REDUCE", 0)
    monkeypatch.setattr(elementwise, "SMALL", 0)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (4, 2, 33), (700, 300), (2, 0)])
def test_softmax(shape, dt, no_small):
    rng = np.random.default_rng(8)
    x = _rand(rng, shape, dt) * 5
    if x.size > 6:
        x.reshape(-1)[1] = np.nan
        x[-1, ...] = -np.inf
        x.reshape(-1)[4] = np.inf
    for op in ("softmax", "log_softmax"):
        if x.size:   # (the numpy backend refuses empty softmax rows; the frontend never sends them)
            _same(op, (x,), dict(dim=x.ndim - 1), dt)
        if x.ndim > 1 and x.size:
            _same(op, (x,), dict(dim=0), dt)   # not the last dim: numpy's code


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,dim", [((5, 6, 7), (2,)), ((5, 6, 7), (0,)), ((5, 6, 7), (1,)), ((5, 6, 7), (0, 1)),
                                       ((5, 6, 7), (1, 2)), ((5, 6, 7), None), ((5, 6, 7), (0, 2)), ((1,), (0,)),
                                       ((300, 600), (0,)), ((300, 600), (1,)), ((4, 0, 3), (2,)),
                                       ((3, 9000), (1,)), ((2, 5000), None)])
def test_reductions(shape, dim, dt, no_small):
    rng = np.random.default_rng(9)
    x = _rand(rng, shape, dt)
    if x.size > 20:
        x.reshape(-1)[17] = np.nan
    edt = ember.float32 if dt == np.float32 else ember.float64
    for keepdim in (False, True):
        tol = dict(rtol=1e-5, atol=1e-4) if dt == np.float32 else None
        _same("sum", (x,), dict(dim=dim, keepdim=keepdim, dtype=edt), dt, tol)
        _same("mean", (x,), dict(dim=dim, keepdim=keepdim, dtype=edt), dt, tol)
        if x.size:
            _same("amax", (x,), dict(dim=dim, keepdim=keepdim), dt)
            _same("amin", (x,), dict(dim=dim, keepdim=keepdim), dt)
    _same("sum", (x.T,), dict(dim=None, keepdim=False, dtype=edt), dt, dict(rtol=1e-4, atol=1e-3))
    for correction in (0, 1, 10 ** 6):   # the last divides by 0: inf or NaN, as PyTorch
        _same("var", (x,), dict(dim=dim, correction=correction, keepdim=True), dt, dict(rtol=1e-4, atol=1e-5))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 300), (300, 3), (4, 5, 6), (2, 0, 3)])
def test_cumsum(shape, dt, no_small):
    rng = np.random.default_rng(12)
    x = _rand(rng, shape, dt)
    edt = ember.float32 if dt == np.float32 else ember.float64
    for dim in range(x.ndim):
        _same("cumsum", (x,), dict(dim=dim, dtype=edt), dt, dict(rtol=1e-4, atol=1e-4))
    _same("cumsum", (x.T,), dict(dim=0, dtype=edt), dt, dict(rtol=1e-4, atol=1e-4))


# ---- elementwise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (3, 4), (513, 129), (0, 4)])
def test_elementwise(shape, dt, no_small):
    rng = np.random.default_rng(10)
    x, y = _rand(rng, shape, dt), _rand(rng, shape, dt)
    if x.size > 3:
        x.reshape(-1)[2] = np.nan
        x.reshape(-1)[0] = -0.0
    cond = x > 0
    _same("relu", (x,), {}, dt)
    for a, b in ((x, y), (0.0, y), (x, 2.5), (1.0, -1.0)):
        _same("where", (cond, a, b), {}, dt)
    for lo, hi in ((-0.5, 0.5), (None, 0.1), (-0.1, None), (1.0, -1.0)):
        _same("clamp", (x, lo, hi), {}, dt)
    for op in ("lt", "le", "gt", "ge", "eq", "ne"):
        _same(op, (x, 0.0), {}, dt)
        _same(op, (x, y), {}, dt)   # two arrays: numpy's code
    _same("relu", (x.T,), {}, dt)
    _same("where", (cond, x[None], y), {}, dt)   # broadcasting: numpy's code


def _child_relu(x, q):
    q.put(float(C.run("relu", (x,), {}).sum()))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_forked_child_runs_kernels():
    # GNU OpenMP's threads don't survive fork: a child must not hang in a parallel region
    import multiprocessing as mp
    x = np.random.default_rng(11).standard_normal(1 << 18).astype(np.float32)
    want = float(np.maximum(x, 0).sum())
    C.run("relu", (x,), {})   # the parent starts its OpenMP threads
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_relu, args=(x, q))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        pytest.fail("a CpuC kernel hung in a forked child")
    assert q.get(timeout=5) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
                                   ((1, 2, 3), (6, 3, 4)), ((0, 3), (3, 2)), ((512, 1024), (1024, 1024))])
def test_matmul(sa, sb):
    # small products run on one BLAS thread, big ones (the last) on all of them: the same results
    rng = np.random.default_rng(13)
    a, b = _rand(rng, sa, np.float64), _rand(rng, sb, np.float64)
    _same("matmul", (a, b), {}, np.float64, dict(rtol=1e-10, atol=1e-9))


# ---- optimizer step ------------------------------------------------------------------------------
def _adam_run(device, opt_cls, kw, dtype, make=None):
    import ember
    ember.manual_seed(3)
    ps = [ember.nn.Parameter(ember.randn(300, 70, device=device, dtype=dtype)),
          ember.nn.Parameter(ember.randn(70, 300, device=device, dtype=dtype).t()),   # a strided parameter
          ember.nn.Parameter(ember.randn(5, device=device, dtype=dtype))]
    opt = opt_cls(ps, lr=0.02, **kw)
    for i in range(4):
        opt.zero_grad()
        loss = sum(((p * (i + 1)).tanh() ** 2).sum() for p in ps)
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in ps] + [opt.state[p][k].numpy() for p in ps for k in ("exp_avg", "exp_avg_sq")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", [("Adam", {}), ("Adam", {"weight_decay": 0.1}), ("AdamW", {}),
                                     ("AdamW", {"weight_decay": 0.5, "betas": (0.2, 0.5)}),
                                     ("Adam", {"betas": (0.6, 0.9), "maximize": True})])
def test_adam_step_is_the_loop_bit_for_bit(name, kw, dtype):
    # the one-pass kernel computes the optimizer loop's formulas in its order: the numpy stack's numbers
    import ember
    calls = []
    from ember.backend.cpuc import optim as copt
    real = copt.call
    copt.call = lambda *a: (calls.append(a[0]), real(*a))
    try:
        got = _adam_run("cpu:compiled", getattr(ember.optim, name), kw, getattr(ember, dtype))
    finally:
        copt.call = real
    want = _adam_run("cpu:numpy", getattr(ember.optim, name), kw, getattr(ember, dtype))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert calls and set(calls) == {"adam_" + ("f32" if dtype == "float32" else "f64")}


def test_adam_step_matches_torch_and_refuses_mismatched_moments():
    import torch

    import ember
    w = np.random.default_rng(0).standard_normal((64, 40)).astype(np.float32)
    p, tp = ember.nn.Parameter(ember.tensor(w, device="cpu:compiled")), torch.nn.Parameter(torch.tensor(w))
    opt, topt = ember.optim.AdamW([p], lr=0.05, weight_decay=0.2), torch.optim.AdamW([tp], lr=0.05, weight_decay=0.2)
    for i in range(5):
        for q, o in ((p, opt), (tp, topt)):
            o.zero_grad()
            (q * q * (i + 1)).sum().backward()
            o.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="share shape and dtype"):
        C.run("adam_step_", (x, x, np.zeros(5, np.float32), x), dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                                                                     weight_decay=0.0, decoupled=False, step=1.0))
