"""ember.nn.functional behaviour the op registry does not reach: the frontend decompositions used
by backends without the fused nn ops, dropout's random masks, running statistics over several
steps, second derivatives, attention's blocked path, in-place activations under autograd, and
nearest-neighbour index parity over many size ratios."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backend import ops_nn
from ember.backend.numpy import _OPS as NUMPY_OPS
from tests.opinfo import nn as nn_registry
from tests.opinfo.core import as_numpy, assert_close, run_ember, run_torch

torch = pytest.importorskip("torch")
TF = torch.nn.functional


# ---- the decompositions (what a backend without the nn ops runs) -------------------------------------------
@pytest.fixture
def no_fused_ops(monkeypatch):
    """The numpy backend ("cpu:numpy") without its nn ops: the frontend must decompose every one of them."""
    for op in ops_nn.OPS:
        if op in NUMPY_OPS:
            monkeypatch.delitem(NUMPY_OPS, op)
    assert not ember.device("cpu:numpy").backend.supports("gelu")


_DECOMPOSED = [op for op in nn_registry.OPS if op.name in {
    "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "elu", "selu", "celu",
    "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid", "layer_norm", "rms_norm",
    "group_norm", "batch_norm", "instance_norm", "scaled_dot_product_attention"}]


@pytest.mark.parametrize("op", _DECOMPOSED, ids=[op.name for op in _DECOMPOSED])
def test_decomposition_matches_torch(op, no_fused_ops):
    rng = np.random.default_rng(3)
    checked = 0
    for s in op.samples("float64", rng):
        if s.raises is not None:
            continue
        want = as_numpy(run_torch(op, s))
        got = as_numpy(run_ember(op, s, "cpu:numpy"))
        assert_close(got, want, "float64", op, f"{op.name} decomposed, sample {s.name!r}")
        checked += 1
    assert checked


@pytest.mark.parametrize("name,kw", [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
                                     ("elu", {"alpha": 0.7}), ("softplus", {"beta": 2.0}), ("logsigmoid", {})])
def test_decomposition_gradients(name, kw, no_fused_ops):
    x = np.random.default_rng(0).uniform(-4, 4, 50)
    tx = torch.tensor(x, requires_grad=True)
    getattr(TF, name)(tx, **kw).sum().backward()
    ex = ember.tensor(x, requires_grad=True, device="cpu:numpy")
    getattr(F, name)(ex, **kw).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- second derivatives of the gradient rules ----------------------------------------------------------------
def _gg(fn, *shapes, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    xs = [ember.tensor(rng.uniform(0.5 if positive else -2, 2, s), dtype=ember.float64, requires_grad=True)
          for s in shapes]
    assert ember.autograd.gradcheck(fn, xs)
    assert ember.autograd.gradgradcheck(fn, xs)


# (piecewise-linear ones have first derivatives that do not depend on x: nothing to check there)
@pytest.mark.parametrize("name", ["gelu", "silu", "mish", "elu", "selu", "softplus", "logsigmoid", "hardswish"])
def test_activation_second_derivatives(name):
    _gg(lambda x: getattr(F, name)(x), (3, 4))


def test_gelu_tanh_second_derivative():
    _gg(lambda x: F.gelu(x, approximate="tanh"), (5,))


def test_norm_second_derivatives():
    # (a bias's gradient depends on the cotangent only, which gradgradcheck holds fixed: no bias here)
    _gg(lambda x, w: F.layer_norm(x, (4,), w), (3, 4), (4,))
    _gg(lambda x, w: F.rms_norm(x, (4,), w), (3, 4), (4,))
    _gg(lambda x, w: F.group_norm(x, 2, w), (2, 4, 3), (4,))
    _gg(lambda x: F.batch_norm(x, None, None, training=True), (4, 3, 2))


def test_attention_second_derivatives():
    mask = ember.tensor(np.random.default_rng(1).random((3, 5)) > 0.3)
    _gg(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (2, 3, 4), (2, 5, 4), (2, 5, 3))
    _gg(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (1, 4, 2), (1, 4, 2), (1, 4, 2))


# ---- attention's blocked numpy path -------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_attention_row_blocks_match_torch(causal):
    """Sequences long enough that the numpy kernel splits the query rows into blocks."""
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((1, 1100, 8)), rng.standard_normal((1, 1000, 8))
    v = rng.standard_normal((1, 1000, 3))
    mask = None if causal else rng.random((1100, 1000)) > 0.1
    want = TF.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                           attn_mask=None if mask is None else torch.from_numpy(mask), is_causal=causal)
    got = F.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)),
                                         attn_mask=None if mask is None else ember.tensor(mask), is_causal=causal)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_attention_dropout_is_seeded_and_scaled():
    q = k = v = ember.ones(2, 4, 8)
    ember.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    ember.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert ember.equal(a, b)
    # uniform weights 1/4, kept ones scaled by 2: each output is (number kept) / 2
    vals = set(np.unique(a.numpy()).tolist())
    assert vals <= {0.0, 0.5, 1.0, 1.5, 2.0}


def test_attention_gradient_through_float_mask_matches_torch():
    rng = np.random.default_rng(2)
    arrs = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 2), (3, 5))]
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    TF.scaled_dot_product_attention(*tt[:3], attn_mask=tt[3]).square().sum().backward()
    et = [ember.tensor(a, requires_grad=True) for a in arrs]
    F.scaled_dot_product_attention(*et[:3], attn_mask=et[3]).square().sum().backward()
    for e, t in zip(et, tt):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- dropout -----------------------------------------------------------------------------------------------
def test_dropout_statistics_and_scaling():
    x = ember.ones(200_000)
    y = F.dropout(x, 0.3).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1.0) / np.float32(0.7))}
    assert abs((y == 0).mean() - 0.3) < 0.01


def test_dropout_reproducible_with_manual_seed():
    x = ember.randn(64, 16)
    ember.manual_seed(11)
    a = F.dropout(x, 0.5)
    ember.manual_seed(11)
    b = F.dropout(x, 0.5)
    c = F.dropout(x, 0.5)
    assert ember.equal(a, b) and not ember.equal(b, c)


def test_dropout_gradient_is_the_mask():
    x = ember.ones(1000, requires_grad=True)
    y = F.dropout(x, 0.4)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_dropout_inplace_writes_input():
    x = ember.ones(100)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x and set(np.unique(x.numpy()).tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("fn,shape,mask_dims", [
    (F.dropout1d, (4, 8, 5), (0, 1)), (F.dropout1d, (8, 5), (0,)), (F.dropout2d, (4, 8, 3, 3), (0, 1)),
    (F.dropout3d, (2, 8, 2, 2, 2), (0, 1)), (F.dropout3d, (8, 2, 2, 2), (0,)),
    (F.feature_alpha_dropout, (4, 8, 5), (0, 1))])
def test_channel_dropout_masks_whole_channels(fn, shape, mask_dims):
    x = ember.ones(*shape)
    kw = {"training": True} if fn is F.feature_alpha_dropout else {}
    y = fn(x, 0.5, **kw).numpy()
    per_channel = y.reshape(tuple(shape[d] for d in mask_dims) + (-1,))
    assert (per_channel == per_channel[..., :1]).all()  # one value per channel
    assert len(np.unique(per_channel[..., 0])) == 2  # and some channels differ


def test_dropout2d_3d_input_warns_and_drops_channels():
    with pytest.warns(UserWarning, match="channel-wise 1D"):
        y = F.dropout2d(ember.ones(3, 6, 4), 0.5).numpy()
    assert (y == y[..., :1]).all()


def test_alpha_dropout_keeps_mean_and_variance():
    ember.manual_seed(0)
    x = ember.randn(400_000)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False


def test_rrelu_training_slopes_in_range_and_seeded():
    x = -ember.ones(10_000)
    ember.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert (-y >= 0.1 - 1e-7).all() and (-y <= 0.3 + 1e-7).all() and y.std() > 0.03
    ember.manual_seed(3)
    assert np.array_equal(F.rrelu(x, 0.1, 0.3, training=True).numpy(), y)
    np.testing.assert_array_equal(F.rrelu(ember.ones(3), training=True).numpy(), np.ones(3))


# ---- running statistics over several steps -----------------------------------------------------------------
def test_batch_norm_running_stats_over_steps_match_torch():
    rng = np.random.default_rng(0)
    erm, erv = ember.zeros(3), ember.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    for step in range(4):
        x = rng.standard_normal((5, 3, 2)).astype(np.float32) * (step + 1) + step
        e = F.batch_norm(ember.tensor(x), erm, erv, training=True, momentum=0.2)
        t = TF.batch_norm(torch.from_numpy(x), trm, trv, training=True, momentum=0.2)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-6)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-6)
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(F.batch_norm(ember.tensor(x), erm, erv).numpy(),
                               TF.batch_norm(torch.from_numpy(x), trm, trv).numpy(), rtol=1e-5, atol=1e-6)


def test_batch_norm_running_stats_stay_out_of_autograd():
    x = ember.randn(4, 3, requires_grad=True)
    rm, rv = ember.zeros(3), ember.ones(3)
    w = ember.ones(3, requires_grad=True)
    F.batch_norm(x, rm, rv, w, training=True).sum().backward()
    assert not rm.requires_grad and not rv.requires_grad and x.grad is not None and w.grad is not None


# ---- in-place activations under autograd ---------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [("relu_", {}), ("hardtanh_", {}), ("leaky_relu_", {"negative_slope": 0.2}),
                                     ("elu_", {}), ("celu_", {"alpha": 2.0}), ("threshold_", {"threshold": 0.5,
                                                                                             "value": -1.0})])
def test_inplace_activation_on_a_view_backpropagates_like_torch(name, kw):
    data = np.random.default_rng(0).uniform(-2, 2, (3, 4))
    grads = []
    for lib in (torch, ember):
        leaf = lib.tensor(data, requires_grad=True)
        y = leaf * 2
        getattr(lib.nn.functional, name)(y[1:], **kw)  # writes into a view of y
        (y * y).sum().backward()
        grads.append(np.asarray(leaf.grad.numpy()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_inplace_on_leaf_requiring_grad_refused():
    with pytest.raises(RuntimeError):
        F.relu_(ember.ones(3, requires_grad=True))


# ---- embedding -------------------------------------------------------------------------------------------------
def test_embedding_max_norm_renormalises_weight_like_torch():
    w = np.random.default_rng(0).uniform(-3, 3, (5, 4))
    idx = np.array([[0, 3], [3, 1]])
    tw, ew = torch.tensor(w), ember.tensor(w)
    t = TF.embedding(torch.from_numpy(idx), tw, max_norm=1.0)
    e = F.embedding(ember.tensor(idx), ew, max_norm=1.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-12)  # rows 0, 1, 3 rescaled in place


def test_embedding_sparse_refused_clearly():
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(ember.tensor([0]), ember.ones(2, 2), sparse=True)


# ---- interpolate index parity --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_indices_match_torch_for_many_ratios(mode):
    x = np.arange(37, dtype=np.float32)[None, None]
    for n_in in (1, 3, 7, 10, 37):
        for n_out in (1, 2, 5, 9, 14, 20, 31, 50, 74, 111):
            t = TF.interpolate(torch.from_numpy(x[..., :n_in]), size=n_out, mode=mode).numpy()
            e = F.interpolate(ember.tensor(x[..., :n_in]), size=n_out, mode=mode).numpy()
            np.testing.assert_array_equal(e, t, err_msg=f"{n_in}->{n_out}")
        for sf in (0.3, 0.7, 1.3, 2.5, 3.0):
            if int(n_in * sf) == 0:
                continue
            t = TF.interpolate(torch.from_numpy(x[..., :n_in]), scale_factor=sf, mode=mode)
            e = F.interpolate(ember.tensor(x[..., :n_in]), scale_factor=sf, mode=mode)
            np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=f"{n_in}x{sf}")


def test_interpolate_gradients_match_torch():
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    for kw in ({"size": (7, 3), "mode": "bicubic"}, {"scale_factor": 0.5, "mode": "area"},
               {"size": (3, 2), "mode": "bilinear", "antialias": True}):
        tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
        (TF.interpolate(tx, **kw) ** 2).sum().backward()
        (F.interpolate(ex, **kw) ** 2).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(kw))


# ---- API surface -------------------------------------------------------------------------------------------
def test_functional_names_and_tensor_methods():
    for name in ("relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu",
                 "leaky_relu_", "hardtanh", "hardtanh_", "gelu", "silu", "mish", "softplus", "hardsigmoid",
                 "hardswish", "logsigmoid", "softsign", "glu", "prelu", "sigmoid", "tanh", "softmin", "threshold",
                 "threshold_", "embedding", "one_hot", "linear", "bilinear", "dropout", "dropout1d", "dropout2d",
                 "dropout3d", "alpha_dropout", "cosine_similarity", "pairwise_distance", "layer_norm", "group_norm",
                 "batch_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize",
                 "scaled_dot_product_attention", "interpolate", "grid_sample", "affine_grid", "pixel_shuffle",
                 "pixel_unshuffle", "upsample", "upsample_nearest", "upsample_bilinear"):
        assert callable(getattr(F, name)), name
    x = ember.tensor([-1.0, 2.0])
    assert x.relu().tolist() == [0.0, 2.0] and x.hardshrink(1.5).tolist() == [0.0, 2.0]
    assert x.prelu(ember.tensor([0.5])).tolist() == [-0.5, 2.0]


def test_softmin_implicit_dim_warns_like_torch():
    x = np.random.default_rng(0).standard_normal((2, 3))
    with pytest.warns(UserWarning):
        e = F.softmin(ember.tensor(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = TF.softmin(torch.from_numpy(x))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


# ---- second derivatives of every differentiable nn registry op, against PyTorch --------------------------
_SECOND = [op for op in nn_registry.OPS if op.differentiable and "float64" in op.dtypes]


# Where the point is singular PyTorch's second derivative is NaN/inf (or a one-sided 0) and ember's
# finite: a zero vector in normalize/cosine_similarity, ±inf through glu, prelu's mixed
# input/weight derivative exactly at x = 0.
_SECOND_ORDER_DIFFERENT = {("normalize", "zero rows (eps)"), ("cosine_similarity", "zero vector"),
                           ("glu", "nan-inf"), ("prelu", "kinks"), ("Tensor.prelu", "kinks")}


@pytest.mark.parametrize("op", _SECOND, ids=[op.name for op in _SECOND])
def test_second_order_matches_torch(op):
    import dataclasses

    from tests.test_registry_grad import test_second_order_matches_torch as check

    def samples(dtype, rng):
        return (s for s in op.samples(dtype, rng) if (op.name, s.name) not in _SECOND_ORDER_DIFFERENT)
    check(dataclasses.replace(op, samples=samples), "cpu")


# ---- the numpy kernels' chunked, threaded paths (inputs above the parallel threshold) ----------------------
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_large_inputs_take_the_threaded_paths(dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(-5, 5, (300, 1001)).astype(dtype)
    x[0, :3] = [np.nan, -np.inf, 1e4]  # (+inf: PyTorch's float32 gelu gives NaN there, ember inf)
    tx, ex = torch.from_numpy(x), ember.tensor(x)
    tol = {"float32": (2e-6, 1e-5), "float16": (2e-3, 2e-3)}[dtype]
    for name, kw in [("relu", {}), ("gelu", {}), ("silu", {}), ("elu", {}), ("leaky_relu", {"negative_slope": 0.1}),
                     ("softplus", {}), ("hardswish", {}), ("mish", {}), ("logsigmoid", {}), ("hardtanh", {})]:
        want = getattr(TF, name)(tx, **kw).float().numpy()
        got = getattr(F, name)(ex, **kw).float().numpy()
        np.testing.assert_allclose(got, want, *tol, err_msg=name)
    w = rng.uniform(0.5, 1.5, 1001).astype(dtype)
    xs = np.nan_to_num(x, nan=0.0, posinf=4.0, neginf=-4.0)
    np.testing.assert_allclose(F.layer_norm(ember.tensor(xs), (1001,), ember.tensor(w)).float().numpy(),
                               TF.layer_norm(torch.from_numpy(xs), (1001,), torch.from_numpy(w)).float().numpy(),
                               rtol=tol[0] * 5, atol=tol[1] * 5)
    np.testing.assert_allclose(F.rms_norm(ember.tensor(xs), (1001,), ember.tensor(w)).float().numpy(),
                               TF.rms_norm(torch.from_numpy(xs), (1001,), torch.from_numpy(w)).float().numpy(),
                               rtol=tol[0] * 5, atol=tol[1] * 5)


@pytest.mark.parametrize("shape,ns", [((64, 70, 96), (96,)), ((40, 30, 20, 12), (20, 12))])
def test_large_norm_gradients_match_torch(shape, ns):
    rng = np.random.default_rng(1)
    arrs = [rng.standard_normal(shape), rng.uniform(0.5, 1.5, ns), rng.standard_normal(ns), rng.standard_normal(shape)]
    for name in ("layer_norm", "rms_norm"):
        tt = [torch.tensor(a, requires_grad=i < 3) for i, a in enumerate(arrs)]
        et = [ember.tensor(a, requires_grad=i < 3) for i, a in enumerate(arrs)]
        if name == "layer_norm":
            (TF.layer_norm(tt[0], ns, tt[1], tt[2]) * tt[3]).sum().backward()
            (F.layer_norm(et[0], ns, et[1], et[2]) * et[3]).sum().backward()
        else:
            (TF.rms_norm(tt[0], ns, tt[1]) * tt[3]).sum().backward()
            (F.rms_norm(et[0], ns, et[1]) * et[3]).sum().backward()
        for e, t in zip(et[:3], tt[:3]):
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-9, err_msg=name)


def test_large_attention_gradients_match_torch():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 4, 300, 16)) for _ in range(3))
    for causal in (False, True):
        tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        et = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
        TF.scaled_dot_product_attention(*tt, is_causal=causal).square().sum().backward()
        F.scaled_dot_product_attention(*et, is_causal=causal).square().sum().backward()
        for e, t in zip(et, tt):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)


def _gelu_sum_in_child(queue):
    queue.put(float(F.gelu(ember.ones(1 << 19)).sum().item()))


def test_thread_pool_survives_fork():
    """A forked child (a DataLoader worker) must not wait on the parent's pool threads."""
    import multiprocessing as mp
    F.gelu(ember.ones(1 << 19))  # the parent's pool exists now
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_gelu_sum_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == pytest.approx((1 << 19) * 0.8413447, rel=1e-5)


def test_large_interpolation_matches_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 150, 130)).astype(np.float32)
    for kw in ({"scale_factor": 2, "mode": "bilinear"}, {"size": (97, 301), "mode": "bicubic", "align_corners": True}):
        np.testing.assert_allclose(F.interpolate(ember.tensor(x), **kw).numpy(),
                                   TF.interpolate(torch.from_numpy(x), **kw).numpy(), rtol=1e-5, atol=1e-5)
