"""Convolution and pooling beyond the registry: inputs big enough for the chunked, multi-threaded
numpy paths, double backward against PyTorch, finite differences, adjointness, thread safety and
the places where ember deliberately differs from PyTorch."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backend.numpy import conv as npconv

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(shape, rng, dtype=np.float64, low=-1.0, high=1.0):
    a = rng.uniform(low, high, shape).astype(dtype)
    return ember.tensor(a), torch.from_numpy(a.copy())


def _close(e, t, rtol=1e-5, atol=1e-5):
    if isinstance(t, tuple):
        for a, b in zip(e, t):
            _close(a, b, rtol, atol)
        return
    a = e.detach().numpy() if hasattr(e, "detach") else e.numpy()
    b = t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    assert a.shape == b.shape, (a.shape, b.shape)
    if b.dtype.kind in "iu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


# ---- the chunked / threaded paths (registry samples are too small to reach them) -----------------
BIG_CONVS = [
    ("conv2d", (8, 16, 24, 20), (32, 16, 3, 3), dict(padding=1)),
    ("conv2d", (9, 16, 24, 20), (32, 8, 3, 3), dict(padding=(2, 1), stride=2, dilation=(2, 1), groups=2)),
    ("conv2d", (8, 16, 24, 20), (32, 1, 3, 3), dict(padding=1, groups=16)),
    ("conv2d", (8, 16, 24, 20), (24, 16, 1, 1), {}),
    ("conv1d", (8, 32, 300), (48, 32, 5), dict(padding="same")),
    ("conv3d", (3, 8, 10, 12, 11), (16, 8, 3, 3, 3), dict(stride=(1, 2, 1), padding=1)),
]


@pytest.mark.parametrize("op,xs,ws,kw", BIG_CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BIG_CONVS)])
def test_big_conv_matches_torch_forward_and_backward(op, xs, ws, kw):
    rng = np.random.default_rng(0)
    (ex, tx), (ew, tw), (eb, tb) = _pair(xs, rng), _pair(ws, rng), _pair(ws[:1], rng)
    for t in (ex, ew, eb):
        t.requires_grad_(True)
    for t in (tx, tw, tb):
        t.requires_grad_(True)
    eo, to = getattr(F, op)(ex, ew, eb, **kw), getattr(TF, op)(tx, tw, tb, **kw)
    _close(eo, to, 1e-9, 1e-9)
    cot = rng.standard_normal(tuple(to.shape))
    eg = ember.autograd.grad(eo, [ex, ew, eb], ember.tensor(cot))
    tg = torch.autograd.grad(to, [tx, tw, tb], torch.from_numpy(cot))
    for a, b in zip(eg, tg):
        _close(a, b, 1e-9, 1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_big_conv_low_precision(dtype):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (8, 16, 20, 20)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, (32, 16, 3, 3)).astype(np.float32)
    tdt = getattr(torch, dtype)
    e = F.conv2d(ember.tensor(x).to(getattr(ember, dtype)), ember.tensor(w).to(getattr(ember, dtype)), padding=1)
    t = TF.conv2d(torch.from_numpy(x).to(tdt), torch.from_numpy(w).to(tdt), padding=1)
    assert e.dtype is getattr(ember, dtype)
    tol = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 6e-2}[dtype]
    _close(e, t, tol, tol)


def test_big_conv_transpose_and_weight_grad():
    rng = np.random.default_rng(2)
    (ex, tx), (ew, tw) = _pair((8, 32, 12, 10), rng), _pair((32, 8, 4, 4), rng)
    ex.requires_grad_(True), ew.requires_grad_(True), tx.requires_grad_(True), tw.requires_grad_(True)
    kw = dict(stride=2, padding=1, output_padding=1, groups=2)
    eo, to = F.conv_transpose2d(ex, ew, **kw), TF.conv_transpose2d(tx, tw, **kw)
    _close(eo, to, 1e-9, 1e-9)
    cot = rng.standard_normal(tuple(to.shape))
    for a, b in zip(ember.autograd.grad(eo, [ex, ew], ember.tensor(cot)),
                    torch.autograd.grad(to, [tx, tw], torch.from_numpy(cot))):
        _close(a, b, 1e-9, 1e-9)


@pytest.mark.parametrize("args", [(3, 2, 1), (2, 2, 0), ((3, 2), (1, 2), (1, 0))])
def test_big_pools_match_torch(args):
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 4, (8, 64, 40, 36)).astype(np.float32)     # ties everywhere
    a.reshape(-1)[::997] = np.nan
    ex, tx = ember.tensor(a), torch.from_numpy(a.copy())
    for ceil in (False, True):
        _close(F.max_pool2d(ex, *args, ceil_mode=ceil, return_indices=True),
               TF.max_pool2d(tx, *args, ceil_mode=ceil, return_indices=True))
        _close(F.max_pool2d(ex, *args, ceil_mode=ceil), TF.max_pool2d(tx, *args, ceil_mode=ceil))
        _close(F.avg_pool2d(ex, *args, ceil_mode=ceil, count_include_pad=False),
               TF.avg_pool2d(tx, *args, ceil_mode=ceil, count_include_pad=False))


def test_big_pool_backward():
    rng = np.random.default_rng(4)
    (ex, tx) = _pair((4, 32, 40, 36), rng)
    ex.requires_grad_(True), tx.requires_grad_(True)
    for ef, tf in [(lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: TF.max_pool2d(x, 3, 2, 1)),
                   (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), lambda x: TF.avg_pool2d(x, 3, 2, 1, True))]:
        eo, to = ef(ex), tf(tx)
        cot = rng.standard_normal(tuple(to.shape))
        (a,) = ember.autograd.grad(eo, [ex], ember.tensor(cot))
        (b,) = torch.autograd.grad(to, [tx], torch.from_numpy(cot))
        _close(a, b, 1e-9, 1e-9)


def test_serial_fallback_gives_the_same_results(monkeypatch):
    """Without a controllable BLAS (or on one core) everything runs inline: same numbers."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((8, 16, 20, 20)), rng.standard_normal((32, 16, 3, 3))
    attrs = dict(stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1)
    xb = rng.integers(-3, 3, (8, 64, 40, 36)).astype(np.float64)
    pool = dict(kernel_size=(3, 3), stride=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1))
    threaded = npconv._conv(x, w, **attrs)
    pooled = npconv._max_pool(xb, **pool)
    monkeypatch.setattr(npconv, "BLAS", None)
    monkeypatch.setattr(npconv, "_WORKERS", 1)
    np.testing.assert_allclose(npconv._conv(x, w, **attrs), threaded, rtol=1e-12, atol=1e-12)
    serial = npconv._max_pool(xb, **pool)
    np.testing.assert_array_equal(serial[0], pooled[0])
    np.testing.assert_array_equal(serial[1], pooled[1])


def test_concurrent_convs_and_blas_threads_restored():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((8, 16, 20, 20)), rng.standard_normal((32, 16, 3, 3))
    want = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    before = npconv.BLAS[0]() if npconv.BLAS else None
    errors = []

    def job():
        try:
            for _ in range(3):
                got = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy()
                np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=job) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    if before is not None:
        assert npconv.BLAS[0]() == before


# ---- gradients -----------------------------------------------------------------------------------
SECOND_ORDER = [
    ("conv2d", lambda F, x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
     [(2, 4, 7, 6), (6, 2, 3, 2), (6,)]),
    ("conv2d-same", lambda F, x, w: F.conv2d(x, w, padding="same"), [(2, 3, 6, 5), (4, 3, 2, 4)]),
    ("depthwise", lambda F, x, w: F.conv2d(x, w, padding=1, groups=4, stride=2), [(2, 4, 7, 6), (8, 1, 3, 3)]),
    ("conv_transpose2d", lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                              output_padding=(1, 2), groups=2, dilation=(1, 2)),
     [(2, 4, 4, 3), (4, 3, 3, 2), (6,)]),
    ("conv_transpose1d", lambda F, x, w: F.conv_transpose1d(x, w, dilation=3, output_padding=2),
     [(2, 3, 5), (3, 2, 3)]),
    ("conv3d", lambda F, x, w: F.conv3d(x, w, stride=2, padding=1), [(1, 2, 4, 5, 3), (3, 2, 2, 3, 2)]),
    ("max_pool2d", lambda F, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(2, 3, 7, 6)]),
    ("adaptive_max_pool2d", lambda F, x: F.adaptive_max_pool2d(x, (3, 4)), [(2, 3, 7, 6)]),
    ("lp_pool2d", lambda F, x: F.lp_pool2d(x, 3, 2), [(2, 3, 6, 6)]),
]


@pytest.mark.parametrize("name,fn,shapes", SECOND_ORDER, ids=[s[0] for s in SECOND_ORDER])
def test_double_backward_matches_torch(name, fn, shapes):
    """Gradients of gradients (create_graph=True): the rules are closed under differentiation."""
    rng = np.random.default_rng(7)
    arrs = [rng.uniform(0.2, 1.5, s) if name == "lp_pool2d" else rng.standard_normal(s) for s in shapes]
    et = [ember.tensor(a, requires_grad=True) for a in arrs]
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    eo, to = fn(F, *et), fn(TF, *tt)
    cot = rng.standard_normal(tuple(to.shape))
    eg = ember.autograd.grad(eo, et, ember.tensor(cot), create_graph=True)
    tg = torch.autograd.grad(to, tt, torch.from_numpy(cot), create_graph=True)
    for a, b in zip(eg, tg):
        _close(a, b, 1e-9, 1e-9)
    es = sum((g * g).sum() for g in eg)
    ts = sum((g * g).sum() for g in tg)
    e2 = ember.autograd.grad(es, et, allow_unused=True)
    t2 = torch.autograd.grad(ts, tt, allow_unused=True)
    for a, b in zip(e2, t2):
        # a zero gradient may come back as None in one library and as zeros in the other (max pools:
        # PyTorch's backward op also takes the input, ember's only the indices)
        if a is None or b is None:
            assert (a is None or np.allclose(a.numpy(), 0)) and (b is None or np.allclose(b.numpy(), 0))
        else:
            _close(a, b, 1e-8, 1e-8)


@pytest.mark.parametrize("fn,shapes,second", [
    (lambda x, w: F.conv2d(x, w, stride=2, padding=1), [(1, 2, 5, 4), (3, 2, 3, 3)], True),
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), [(1, 2, 3, 3), (2, 2, 3, 3)],
     True),
    (lambda x, w: F.conv1d(x, w, padding="same", dilation=2, groups=2), [(2, 4, 6), (2, 2, 2)], True),
    # linear in x: the first derivative is constant, so only first order
    (lambda x: F.fold(F.unfold(x, 2, padding=1), (4, 5), 2, padding=1), [(1, 2, 4, 5)], False),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(1, 2, 6, 5)], False),
    (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [(1, 2, 7, 5)], False),
])
def test_finite_differences(fn, shapes, second):
    rng = np.random.default_rng(8)
    args = [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert ember.autograd.gradcheck(fn, args)
    if second:
        assert ember.autograd.gradgradcheck(fn, args)


def test_max_pool_values_op_recomputes_indices_for_backward():
    """max_pool_values (the no-index fast path) is differentiable on its own, for backends and
    callers that dispatch it with a tensor that needs gradients."""
    from ember._tensor import run
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 3, 6, 5))
    x = ember.tensor(a, requires_grad=True)
    attrs = {"kernel_size": (3, 3), "stride": (2, 2), "padding": ((1, 1), (1, 1)), "dilation": (1, 1)}
    y = run("max_pool_values", (x,), attrs, (2, 3, 3, 3), x.dtype)
    (g,) = ember.autograd.grad(y.sum(), [x])
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(TF.max_pool2d(tx, 3, 2, 1).sum(), [tx])
    _close(g, tg, 0, 0)


# ---- properties ----------------------------------------------------------------------------------
def test_unfold_and_fold_are_adjoint():
    rng = np.random.default_rng(10)
    x = ember.tensor(rng.standard_normal((2, 3, 7, 6)))
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 1))
    cols = F.unfold(x, **kw)
    y = ember.tensor(rng.standard_normal(tuple(cols.shape)))
    lhs = (cols * y).sum().item()
    rhs = (x * F.fold(y, (7, 6), **kw)).sum().item()
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))


def test_conv_is_unfold_matmul():
    rng = np.random.default_rng(11)
    x, w = ember.tensor(rng.standard_normal((2, 3, 6, 5))), ember.tensor(rng.standard_normal((4, 3, 3, 2)))
    direct = F.conv2d(x, w, padding=1)
    via = (w.reshape(4, -1) @ F.unfold(x, (3, 2), padding=1)).reshape(2, 4, 6, 6)
    np.testing.assert_allclose(direct.numpy(), via.numpy(), rtol=1e-12, atol=1e-12)


def test_zero_input_channels_give_bias():
    """PyTorch 2.13 returns an (N, 0, ...) tensor here, dropping the weight's out channels and the
    bias; ember returns what the sum over zero channels is: the bias (zeros without one)."""
    w, b = ember.ones(4, 0, 3, 3), ember.tensor([1.0, 2.0, 3.0, 4.0])
    out = F.conv2d(ember.ones(2, 0, 5, 5), w, b)
    assert tuple(out.shape) == (2, 4, 3, 3)
    np.testing.assert_array_equal(out.numpy()[0, :, 0, 0], [1, 2, 3, 4])
    assert float(F.conv2d(ember.ones(2, 0, 5, 5), w).abs().sum()) == 0.0


def test_integer_inputs_beyond_torch_dtypes():
    """ember pools and convolves every integer dtype (PyTorch's CPU kernels take some only)."""
    a = np.arange(-8, 8, dtype=np.int32).reshape(1, 1, 4, 4)
    x = ember.tensor(a)
    assert F.max_pool2d(x, 2).dtype is ember.int32
    np.testing.assert_array_equal(F.max_pool2d(x, 2).numpy(), [[[[-3, -1], [5, 7]]]])
    np.testing.assert_array_equal(F.avg_pool2d(x, 2).numpy(), [[[[-5, -3], [2, 4]]]])   # truncated division
    c = F.conv2d(ember.tensor(a.astype(np.int8)), ember.ones(1, 1, 2, 2, dtype=ember.int8))
    np.testing.assert_array_equal(c.numpy(), TF.conv2d(torch.from_numpy(a.astype(np.int8)),
                                                       torch.ones(1, 1, 2, 2, dtype=torch.int8)).numpy())


def test_errors_name_the_op_and_shapes():
    x = ember.ones(2, 4, 5, 5)
    with pytest.raises(RuntimeError, match=r"conv2d.*\[6, 3, 3, 3\].*4 channels"):
        F.conv2d(x, ember.ones(6, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"conv2d.*same dtype"):
        F.conv2d(x, ember.ones(6, 4, 3, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"max_pool2d.*pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match=r"max_unpool2d.*invalid max index"):
        F.max_unpool2d(ember.ones(1, 1, 2, 2), ember.full((1, 1, 2, 2), 99, dtype=ember.int64), 2)
    with pytest.raises(NotImplementedError, match="bool"):
        F.max_pool2d(x > 0, 2)


def test_unbatched_and_views_keep_shapes_and_values():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 9, 8))
    base = ember.tensor(a.transpose(2, 1, 0).copy()).permute(2, 1, 0)   # non-contiguous (C, H, W)
    w = ember.tensor(rng.standard_normal((5, 4, 3, 3)))
    got = F.conv2d(base, w, padding=1, stride=2)
    want = TF.conv2d(torch.from_numpy(a), torch.from_numpy(w.numpy()), padding=1, stride=2)
    _close(got, want, 1e-12, 1e-12)
    v, i = F.max_pool2d(base, 2, return_indices=True)
    _close((v, i), TF.max_pool2d(torch.from_numpy(a), 2, return_indices=True))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_threaded_conv_in_forked_child():
    """A forked child (DataLoader workers) gets a fresh worker pool instead of the parent's dead one."""
    import multiprocessing as mp
    rng = np.random.default_rng(13)
    x, w = rng.standard_normal((8, 16, 20, 20)), rng.standard_normal((32, 16, 3, 3))
    want = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy()   # starts the pool here
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_conv, args=(q, x, w))
    p.start()
    got = q.get(timeout=30)
    p.join(timeout=30)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _child_conv(q, x, w):
    q.put(F.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy())


def test_conv_geometry_cache_keeps_results_and_errors():
    """A repeated call skips the geometry checks (cached by shapes, dtypes, devices and arguments): results
    stay torch's, batched and unbatched calls of one weight don't mix, and a new bad argument still raises."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 7, 7)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), stride=2, padding=1).numpy()
    for _ in range(3):
        got = ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), stride=2, padding=1)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    for _ in range(2):
        one = ember.nn.functional.conv2d(ember.tensor(x[0]), ember.tensor(w), stride=2, padding=1)
        assert tuple(one.shape) == want.shape[1:]
        np.testing.assert_allclose(one.numpy(), want[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="expected input"):
        ember.nn.functional.conv2d(ember.tensor(x[:, :3]), ember.tensor(w), stride=2, padding=1)
