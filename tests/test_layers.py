"""ember.nn layers against torch.nn with the same weights.

Each case builds the layer in both libraries from one description (``make(lib)``), copies torch's
state_dict into the ember layer by key (so the keys and their order must match), and compares the
outputs, the gradients of the inputs and of every parameter, and the buffers afterwards, in train
and eval mode, in float64. Reprs are compared too. The helpers are shared with test_rnn.py and
test_transformer.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = {"ember": ember, "torch": torch}


# ---- harness ------------------------------------------------------------------------------------------
def t2e(t: torch.Tensor) -> ember.Tensor:
    return ember.from_numpy(t.detach().numpy().copy())


def np_of(t) -> np.ndarray:
    return t.detach().numpy()


def transfer(tm: torch.nn.Module, em: ember.nn.Module) -> None:
    """Copy torch's state into the ember module by key; the key lists must be identical."""
    tsd = tm.state_dict()
    assert list(em.state_dict()) == list(tsd)
    res = em.load_state_dict({k: t2e(v) for k, v in tsd.items()})
    assert not res.missing_keys and not res.unexpected_keys


def flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flat(o)]
    return [out]


def _convert(lib, value, grad: bool):
    if isinstance(value, np.ndarray):
        if lib is torch:
            t = torch.from_numpy(value.copy())
            return t.requires_grad_(grad) if grad and t.is_floating_point() else t
        e = ember.from_numpy(value.copy())
        return e.requires_grad_(True) if grad and e.is_floating_point() else e
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(lib, v, grad) for v in value)
    return value


def assert_close(got, want, what: str, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    g = np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != torch {w.shape}"
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != torch {w.dtype}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def compare(make, args=(), kwargs=None, *, modes=("train", "eval"), grad: bool = True, double: bool = True,
            rtol: float = 1e-7, atol: float = 1e-9, seed: int = 0, steps: int = 1):
    """Run the layer ``make(lib)`` on both libraries and compare everything observable.

    ``args``/``kwargs`` hold numpy arrays (floating ones require grad) or plain values.
    Returns the (torch, ember) modules for further checks.
    """
    kwargs = kwargs or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm, em = make(torch), make(ember)
    if double:
        tm, em = tm.double(), em.double()
    transfer(tm, em)
    assert repr(em) == repr(tm)
    rng = np.random.default_rng(seed)
    for mode in modes:
        tm.train(mode == "train")
        em.train(mode == "train")
        for _ in range(steps):
            t_args = [_convert(torch, a, grad) for a in args]
            e_args = [_convert(ember, a, grad) for a in args]
            t_kw = {k: _convert(torch, v, False) for k, v in kwargs.items()}
            e_kw = {k: _convert(ember, v, False) for k, v in kwargs.items()}
            with warnings.catch_warnings():  # torch's deprecation notes (e.g. mixed mask types)
                warnings.simplefilter("ignore")
                tout = flat(tm(*t_args, **t_kw))
            eout = flat(em(*e_args, **e_kw))
            assert len(tout) == len(eout)
            for i, (t, e) in enumerate(zip(tout, eout)):
                if t is None:
                    assert e is None, f"output {i}: torch gives None"
                    continue
                assert_close(np_of(e), np_of(t), f"{mode} output {i}", rtol, atol)
            for (name, tb), (ename, eb) in zip(tm.named_buffers(), em.named_buffers()):
                assert name == ename
                assert_close(np_of(eb), np_of(tb), f"{mode} buffer {name}", rtol, atol)
            if not grad:
                continue
            t_loss, e_loss = 0, 0
            for t, e in zip(tout, eout):
                if t is not None and t.is_floating_point() and t.requires_grad:
                    w = rng.standard_normal(tuple(t.shape))
                    t_loss = t_loss + (t * torch.from_numpy(w).to(t.dtype)).sum()
                    e_loss = e_loss + (e * ember.from_numpy(w).to(e.dtype)).sum()
            if isinstance(t_loss, int):
                continue
            t_loss.backward()
            e_loss.backward()
            for i, (ta, ea) in enumerate(zip(flat(t_args), flat(e_args))):
                if isinstance(ta, torch.Tensor) and ta.requires_grad:
                    if ta.grad is None:
                        assert ea.grad is None or not np.any(np_of(ea.grad))
                    else:
                        assert_close(np_of(ea.grad), np_of(ta.grad), f"{mode} grad of input {i}", rtol, atol)
            eparams = dict(em.named_parameters())
            for name, tp in tm.named_parameters():
                ep = eparams[name]
                if tp.grad is None:
                    assert ep.grad is None or not np.any(np_of(ep.grad)), f"{name}: torch has no grad"
                else:
                    assert ep.grad is not None, f"{mode}: no gradient for parameter {name}"
                    assert_close(np_of(ep.grad), np_of(tp.grad), f"{mode} grad of {name}", rtol, atol)
            tm.zero_grad()
            em.zero_grad()
    return tm, em


def rand(*shape, seed: int = 0, low: float | None = None, high: float | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, shape)
    return rng.standard_normal(shape)


# ---- linear and convolution ----------------------------------------------------------------------------
LINEAR_CONV = [
    ("linear", lambda L: L.nn.Linear(5, 3), [rand(4, 5)]),
    ("linear_nobias_3d", lambda L: L.nn.Linear(5, 3, bias=False), [rand(2, 3, 5)]),
    ("linear_unbatched", lambda L: L.nn.Linear(5, 2), [rand(5)]),
    ("linear_empty_batch", lambda L: L.nn.Linear(5, 2), [rand(0, 5)]),
    ("bilinear", lambda L: L.nn.Bilinear(3, 4, 2), [rand(5, 3), rand(5, 4, seed=1)]),
    ("bilinear_nobias", lambda L: L.nn.Bilinear(3, 4, 2, bias=False), [rand(2, 5, 3), rand(2, 5, 4, seed=1)]),
    ("identity", lambda L: L.nn.Identity(54, unused="x"), [rand(2, 3)]),
    ("conv1d", lambda L: L.nn.Conv1d(2, 4, 3, stride=2, padding=1), [rand(2, 2, 9)]),
    ("conv1d_same_dil", lambda L: L.nn.Conv1d(2, 4, 4, padding="same", dilation=2), [rand(2, 2, 9)]),
    ("conv1d_reflect", lambda L: L.nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), [rand(1, 2, 7)]),
    ("conv1d_circular_same", lambda L: L.nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
     [rand(1, 2, 7)]),
    ("conv1d_unbatched", lambda L: L.nn.Conv1d(2, 3, 3, bias=False), [rand(2, 7)]),
    ("conv2d_groups", lambda L: L.nn.Conv2d(4, 6, 3, padding=1, groups=2, bias=False), [rand(2, 4, 6, 5)]),
    ("conv2d_rect", lambda L: L.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
     [rand(2, 3, 7, 8)]),
    ("conv2d_replicate", lambda L: L.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"),
     [rand(1, 2, 5, 5)]),
    ("conv2d_valid", lambda L: L.nn.Conv2d(2, 3, 3, padding="valid"), [rand(2, 2, 5, 5)]),
    ("conv2d_depthwise", lambda L: L.nn.Conv2d(3, 6, 3, groups=3, padding="same"), [rand(2, 3, 5, 5)]),
    ("conv3d", lambda L: L.nn.Conv3d(2, 3, 2, padding=1, stride=(1, 2, 1)), [rand(1, 2, 4, 4, 3)]),
    ("conv_t1d", lambda L: L.nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1), [rand(2, 2, 5)]),
    ("conv_t2d_groups", lambda L: L.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2, bias=False),
     [rand(1, 4, 3, 4)]),
    ("conv_t2d_unbatched", lambda L: L.nn.ConvTranspose2d(2, 3, (2, 3), stride=(2, 1)), [rand(2, 3, 3)]),
    ("conv_t3d", lambda L: L.nn.ConvTranspose3d(2, 2, 2, stride=2), [rand(1, 2, 2, 3, 2)]),
]


@pytest.mark.parametrize("name,make,args", LINEAR_CONV, ids=[c[0] for c in LINEAR_CONV])
def test_linear_conv(name, make, args):
    compare(make, args)


def test_conv_transpose_output_size():
    make = lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1)  # noqa: E731
    for size in ((10, 12), (1, 3, 11, 11), (12, 10)):
        compare(make, [rand(1, 2, 4, 4)], {"output_size": list(size)}, modes=("train",))
    em = make(ember)
    with pytest.raises(ValueError, match="output size"):
        em(ember.ones(1, 2, 4, 4), output_size=(20, 20))


def test_conv_constructor_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        ember.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="groups"):
        ember.nn.Conv2d(2, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode"):
        ember.nn.Conv2d(2, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="strided"):
        ember.nn.Conv1d(2, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="zeros"):
        ember.nn.ConvTranspose2d(2, 4, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError):  # wrong channel count reaches F.conv2d's check
        ember.nn.Conv2d(2, 4, 3)(ember.ones(1, 3, 5, 5))


def test_default_initialisation_bounds():
    ember.manual_seed(0)
    lin = ember.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert np.abs(b).max() <= bound and abs(w.mean()) < 0.01 * bound * 10
    # uniform: the variance of U(-a, a) is a²/3
    assert abs(w.var() - bound ** 2 / 3) < 0.05 * bound ** 2 / 3
    conv = ember.nn.Conv2d(8, 16, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= cb
    assert np.abs(conv.bias.detach().numpy()).max() <= cb
    convt = ember.nn.ConvTranspose2d(8, 16, 3)  # fan_in from weight (8, 16, 3, 3): 16 * 9
    assert np.abs(convt.bias.detach().numpy()).max() <= 1 / math.sqrt(16 * 9)
    assert np.abs(convt.weight.detach().numpy()).max() > 0.9 / math.sqrt(16 * 9)
    bil = ember.nn.Bilinear(25, 4, 30)
    assert np.abs(bil.weight.detach().numpy()).max() <= 0.2 < np.abs(bil.weight.detach().numpy()).max() / 0.9 * 0.91
    emb = ember.nn.Embedding(2000, 50, padding_idx=3)
    ew = emb.weight.detach().numpy()
    assert np.all(ew[3] == 0) and abs(ew.std() - 1) < 0.02 and abs(ew.mean()) < 0.02
    prelu = ember.nn.PReLU(4, init=0.1)
    np.testing.assert_array_equal(prelu.weight.detach().numpy(), np.full(4, 0.1, np.float32))


def test_linear_dtype_device_arguments():
    lin = ember.nn.Linear(3, 2, dtype=ember.float64)
    assert lin.weight.dtype == ember.float64 and lin.bias.dtype == ember.float64
    assert lin(ember.ones(1, 3, dtype=ember.float64)).dtype == ember.float64
    with pytest.raises(RuntimeError):
        lin(ember.ones(1, 3))  # float32 input, float64 weight: torch refuses too
    lin.reset_parameters()
    assert lin.weight.requires_grad and isinstance(lin.weight, ember.nn.Parameter)


# ---- pooling, fold -----------------------------------------------------------------------------------
POOLS = [
    ("maxpool1d", lambda L: L.nn.MaxPool1d(3, 2, 1), [rand(2, 3, 9)]),
    ("maxpool1d_idx", lambda L: L.nn.MaxPool1d(2, return_indices=True), [rand(2, 3, 8)]),
    ("maxpool2d", lambda L: L.nn.MaxPool2d(2), [rand(2, 3, 6, 7)]),
    ("maxpool2d_ceil", lambda L: L.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), [rand(1, 2, 8, 7)]),
    ("maxpool2d_dil_idx", lambda L: L.nn.MaxPool2d((2, 3), dilation=2, return_indices=True), [rand(1, 2, 8, 9)]),
    ("maxpool3d", lambda L: L.nn.MaxPool3d(2, padding=1), [rand(1, 2, 4, 5, 4)]),
    ("avgpool1d", lambda L: L.nn.AvgPool1d(3, 2, 1), [rand(2, 3, 9)]),
    ("avgpool1d_nopad", lambda L: L.nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False), [rand(2, 3, 8)]),
    ("avgpool2d", lambda L: L.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [rand(2, 2, 7, 6)]),
    ("avgpool2d_div", lambda L: L.nn.AvgPool2d(2, divisor_override=3), [rand(1, 2, 4, 4)]),
    ("avgpool3d", lambda L: L.nn.AvgPool3d(2, ceil_mode=True), [rand(1, 2, 3, 4, 5)]),
    ("adaptive_avg1d", lambda L: L.nn.AdaptiveAvgPool1d(3), [rand(2, 3, 7)]),
    ("adaptive_avg2d", lambda L: L.nn.AdaptiveAvgPool2d((2, 3)), [rand(2, 3, 7, 5)]),
    ("adaptive_avg2d_none", lambda L: L.nn.AdaptiveAvgPool2d((None, 2)), [rand(1, 3, 4, 5)]),
    ("adaptive_avg3d", lambda L: L.nn.AdaptiveAvgPool3d(2), [rand(1, 2, 5, 4, 3)]),
    ("adaptive_max1d", lambda L: L.nn.AdaptiveMaxPool1d(3), [rand(2, 3, 7)]),
    ("adaptive_max2d_idx", lambda L: L.nn.AdaptiveMaxPool2d(2, return_indices=True), [rand(2, 3, 5, 5)]),
    ("adaptive_max3d", lambda L: L.nn.AdaptiveMaxPool3d((1, 2, 2)), [rand(1, 2, 3, 4, 5)]),
    ("lppool1d", lambda L: L.nn.LPPool1d(2, 3), [rand(2, 3, 9)]),
    ("lppool2d", lambda L: L.nn.LPPool2d(1.5, 2, stride=1), [rand(1, 2, 4, 5, low=0.1, high=2.0)]),
    ("lppool3d", lambda L: L.nn.LPPool3d(2, 2), [rand(1, 2, 4, 4, 4)]),
    ("fold", lambda L: L.nn.Fold((4, 5), (2, 2), padding=1, stride=2), [rand(2, 3 * 4, 9)]),
    ("unfold", lambda L: L.nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=1), [rand(2, 3, 4, 5)]),
]


@pytest.mark.parametrize("name,make,args", POOLS, ids=[c[0] for c in POOLS])
def test_pooling(name, make, args):
    compare(make, args)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool(nd):
    shape = {1: (2, 3, 8), 2: (1, 2, 6, 4), 3: (1, 2, 4, 4, 2)}[nd]
    x = rand(*shape)
    out = {}
    for name, lib in LIBS.items():
        pool = getattr(lib.nn, f"MaxPool{nd}d")(2, return_indices=True)
        unpool = getattr(lib.nn, f"MaxUnpool{nd}d")(2)
        assert repr(unpool) == repr(getattr(torch.nn, f"MaxUnpool{nd}d")(2))
        xt = (torch.from_numpy(x) if lib is torch else ember.from_numpy(x)).requires_grad_(True)
        y, idx = pool(xt)
        z = unpool(y, idx, output_size=shape)
        (z * z).sum().backward()
        out[name] = (np_of(z), np_of(xt.grad))
    assert_close(out["ember"][0], out["torch"][0], "unpooled")
    assert_close(out["ember"][1], out["torch"][1], "grad")


# ---- normalisation ------------------------------------------------------------------------------------
NORMS = [
    ("bn1d_2d", lambda L: L.nn.BatchNorm1d(4), [rand(6, 4)]),
    ("bn1d_3d", lambda L: L.nn.BatchNorm1d(3, momentum=0.3, eps=1e-3), [rand(4, 3, 5)]),
    ("bn2d", lambda L: L.nn.BatchNorm2d(3), [rand(4, 3, 5, 2)]),
    ("bn2d_cumulative", lambda L: L.nn.BatchNorm2d(3, momentum=None), [rand(2, 3, 4, 4)]),
    ("bn3d_noaffine", lambda L: L.nn.BatchNorm3d(2, affine=False), [rand(2, 2, 3, 2, 3)]),
    ("bn2d_notrack", lambda L: L.nn.BatchNorm2d(3, track_running_stats=False), [rand(3, 3, 2, 2)]),
    ("in1d", lambda L: L.nn.InstanceNorm1d(3), [rand(2, 3, 6)]),
    ("in1d_unbatched", lambda L: L.nn.InstanceNorm1d(3, affine=True), [rand(3, 6)]),
    ("in2d_track", lambda L: L.nn.InstanceNorm2d(3, affine=True, track_running_stats=True), [rand(2, 3, 4, 5)]),
    ("in3d", lambda L: L.nn.InstanceNorm3d(2, momentum=None, track_running_stats=True), [rand(2, 2, 3, 3, 2)]),
    ("layernorm", lambda L: L.nn.LayerNorm((4, 5)), [rand(3, 4, 5)]),
    ("layernorm_noaffine", lambda L: L.nn.LayerNorm(5, elementwise_affine=False, eps=1e-3), [rand(3, 5)]),
    ("layernorm_nobias", lambda L: L.nn.LayerNorm([5], bias=False), [rand(2, 3, 5)]),
    ("groupnorm", lambda L: L.nn.GroupNorm(2, 4), [rand(3, 4, 5)]),
    ("groupnorm_noaffine", lambda L: L.nn.GroupNorm(1, 3, affine=False, eps=1e-4), [rand(2, 3, 2, 2)]),
    ("rmsnorm", lambda L: L.nn.RMSNorm(5), [rand(3, 5)]),
    ("rmsnorm_eps", lambda L: L.nn.RMSNorm((3, 5), eps=1e-3), [rand(2, 3, 5)]),
    ("rmsnorm_noaffine", lambda L: L.nn.RMSNorm(4, elementwise_affine=False), [rand(4)]),
    ("lrn", lambda L: L.nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0), [rand(2, 5, 4)]),
    ("lrn_2d", lambda L: L.nn.LocalResponseNorm(2), [rand(1, 4, 3, 3)]),
]


@pytest.mark.parametrize("name,make,args", NORMS, ids=[c[0] for c in NORMS])
def test_normalization(name, make, args):
    # three steps per mode: running statistics must keep agreeing (momentum=None averages them)
    compare(make, args, steps=3)


def test_batchnorm_running_stats_float32_sequence():
    """Several different batches through BatchNorm in float32: the running statistics, the batch
    counter and the eval outputs follow torch's."""
    tm, em = torch.nn.BatchNorm2d(4, momentum=None), ember.nn.BatchNorm2d(4, momentum=None)
    transfer(tm, em)
    for i in range(4):
        x = rand(5, 4, 3, 3, seed=i).astype(np.float32) * (i + 1) + i
        tm(torch.from_numpy(x))
        em(ember.from_numpy(x))
    assert int(em.num_batches_tracked.item()) == 4 and em.num_batches_tracked.dtype == ember.int64
    assert_close(np_of(em.running_mean), np_of(tm.running_mean), "running_mean", 1e-5, 1e-6)
    assert_close(np_of(em.running_var), np_of(tm.running_var), "running_var", 1e-5, 1e-6)
    tm.eval()
    em.eval()
    x = rand(2, 4, 3, 3, seed=9).astype(np.float32)
    assert_close(np_of(em(ember.from_numpy(x))), np_of(tm(torch.from_numpy(x))), "eval output", 1e-5, 1e-6)
    em.reset_running_stats()
    assert int(em.num_batches_tracked.item()) == 0
    assert np.all(np_of(em.running_var) == 1) and np.all(np_of(em.running_mean) == 0)


def test_norm_errors():
    with pytest.raises(ValueError, match="expected 4D input"):
        ember.nn.BatchNorm2d(3)(ember.ones(2, 3, 4))
    with pytest.raises(ValueError, match="2D or 3D"):
        ember.nn.BatchNorm1d(3)(ember.ones(2, 3, 4, 4))
    with pytest.raises(ValueError, match="more than 1 value"):
        ember.nn.BatchNorm1d(3)(ember.ones(1, 3))
    with pytest.raises(ValueError, match="divisible"):
        ember.nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="num_features"):
        ember.nn.InstanceNorm1d(4, affine=True)(ember.ones(2, 3, 5))


# ---- activations --------------------------------------------------------------------------------------
ACT_INPUT = np.concatenate([np.linspace(-7.0, 7.0, 29), [-3.0, 3.0, -1.0, 1.0, 0.1, -0.1, 0.5]]).reshape(6, 6)
ACTIVATIONS = [
    ("ReLU", lambda L: L.nn.ReLU()), ("ReLU6", lambda L: L.nn.ReLU6()),
    ("GELU", lambda L: L.nn.GELU()), ("GELU_tanh", lambda L: L.nn.GELU(approximate="tanh")),
    ("SiLU", lambda L: L.nn.SiLU()), ("Mish", lambda L: L.nn.Mish()),
    ("ELU", lambda L: L.nn.ELU(alpha=0.7)), ("SELU", lambda L: L.nn.SELU()), ("CELU", lambda L: L.nn.CELU(1.5)),
    ("LeakyReLU", lambda L: L.nn.LeakyReLU(0.2)), ("Hardtanh", lambda L: L.nn.Hardtanh(-2.5, 2)),
    ("Hardsigmoid", lambda L: L.nn.Hardsigmoid()), ("Hardswish", lambda L: L.nn.Hardswish()),
    ("Softplus", lambda L: L.nn.Softplus(beta=2.0, threshold=5.0)), ("Softsign", lambda L: L.nn.Softsign()),
    ("LogSigmoid", lambda L: L.nn.LogSigmoid()), ("GLU", lambda L: L.nn.GLU(dim=0)),
    ("Tanh", lambda L: L.nn.Tanh()), ("Sigmoid", lambda L: L.nn.Sigmoid()),
    ("Softmax", lambda L: L.nn.Softmax(dim=1)), ("LogSoftmax", lambda L: L.nn.LogSoftmax(dim=0)),
    ("Softmin", lambda L: L.nn.Softmin(dim=-1)), ("Threshold", lambda L: L.nn.Threshold(0.5, -2.0)),
    ("Hardshrink", lambda L: L.nn.Hardshrink(1.0)), ("Softshrink", lambda L: L.nn.Softshrink(0.3)),
    ("Tanhshrink", lambda L: L.nn.Tanhshrink()), ("PReLU", lambda L: L.nn.PReLU()),
    ("PReLU_channels", lambda L: L.nn.PReLU(6, init=0.1)), ("RReLU", lambda L: L.nn.RReLU(0.1, 0.3)),
]


@pytest.mark.parametrize("name,make", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation(name, make):
    # RReLU draws random slopes in training: compare it in eval mode only
    modes = ("eval",) if name == "RReLU" else ("train", "eval")
    compare(make, [ACT_INPUT.copy()], modes=modes)


INPLACE = [("ReLU", lambda L: L.nn.ReLU(inplace=True)), ("ReLU6", lambda L: L.nn.ReLU6(True)),
           ("LeakyReLU", lambda L: L.nn.LeakyReLU(0.1, inplace=True)),
           ("Hardtanh", lambda L: L.nn.Hardtanh(-1, 1, True)), ("ELU", lambda L: L.nn.ELU(inplace=True)),
           ("SELU", lambda L: L.nn.SELU(True)), ("CELU", lambda L: L.nn.CELU(inplace=True)),
           ("SiLU", lambda L: L.nn.SiLU(True)), ("Mish", lambda L: L.nn.Mish(True)),
           ("Hardsigmoid", lambda L: L.nn.Hardsigmoid(True)), ("Hardswish", lambda L: L.nn.Hardswish(True)),
           ("Threshold", lambda L: L.nn.Threshold(0.1, 20.0, True)), ("RReLU", lambda L: L.nn.RReLU(inplace=True))]


@pytest.mark.parametrize("name,make", INPLACE, ids=[a[0] for a in INPLACE])
def test_activation_inplace(name, make):
    tm, em = make(torch), make(ember)
    assert repr(em) == repr(tm)
    em.eval()
    tm.eval()
    te, tt = ember.from_numpy(ACT_INPUT.copy()), torch.from_numpy(ACT_INPUT.copy())
    oe, ot = em(te), tm(tt)
    assert_close(np_of(te), np_of(tt), "written input")
    assert_close(np_of(oe), np_of(ot), "output")


def test_softmax_implicit_dim_and_softmax2d():
    x = rand(2, 3, 4, 5)
    for lib_m in ("Softmax", "LogSoftmax", "Softmin"):
        with pytest.warns(UserWarning, match="Implicit dimension"):
            got = getattr(ember.nn, lib_m)()(ember.from_numpy(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(torch.nn, lib_m)()(torch.from_numpy(x))
        assert_close(np_of(got), np_of(want), lib_m)
    compare(lambda L: L.nn.Softmax2d(), [x])
    compare(lambda L: L.nn.Softmax2d(), [rand(3, 4, 5)])
    with pytest.raises(ValueError):
        ember.nn.Softmax2d()(ember.ones(3, 4))


def test_prelu_channels_on_4d_input():
    compare(lambda L: L.nn.PReLU(3, init=0.2), [rand(2, 3, 4, 4)])


# ---- dropout ----------------------------------------------------------------------------------------------
DROPOUTS = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_eval_is_identity_and_repr(name):
    shape = {"Dropout1d": (2, 3, 4), "Dropout2d": (2, 3, 4, 4), "Dropout3d": (2, 3, 2, 2, 2),
             "FeatureAlphaDropout": (2, 3, 4, 4)}.get(name, (4, 5))
    compare(lambda L: getattr(L.nn, name)(p=0.3), [rand(*shape)], modes=("eval",))
    assert repr(getattr(ember.nn, name)(0.2, True)) == repr(getattr(torch.nn, name)(0.2, True))
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(ember.nn, name)(p=1.5)


def test_dropout_training_statistics():
    ember.manual_seed(0)
    x = ember.ones(200, 500)
    d = ember.nn.Dropout(0.3)
    y = d(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    # whole channels dropped together
    y2 = ember.nn.Dropout2d(0.5)(ember.ones(50, 40, 3, 3)).numpy()
    per_channel = y2.reshape(50, 40, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0.4 < (per_channel[..., 0] == 0).mean() < 0.6
    # p=0 in training is the identity; p=1 zeros everything
    np.testing.assert_array_equal(ember.nn.Dropout(0.0)(x).numpy(), x.numpy())
    np.testing.assert_array_equal(ember.nn.Dropout(1.0)(x).numpy(), np.zeros((200, 500), np.float32))
    # alpha dropout keeps mean ~0 and std ~1 of a standard normal input
    z = ember.nn.AlphaDropout(0.2)(ember.randn(400, 500)).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.03


# ---- embeddings ----------------------------------------------------------------------------------------
IDX = np.array([[1, 2, 4, 5], [4, 3, 2, 9]], np.int64)


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"max_norm": 1.0}, {"max_norm": 1.5, "norm_type": 1.0}],
                         ids=["plain", "padding", "padding_neg", "freq", "max_norm", "max_norm_l1"])
def test_embedding(kwargs):
    idx = IDX if kwargs.get("padding_idx") != -1 else np.array([[9, 1], [9, 9]], np.int64)
    tm, em = compare(lambda L: L.nn.Embedding(10, 3, **kwargs), [idx])
    if "max_norm" in kwargs:  # rows used were renormalised in place, identically
        assert_close(np_of(em.weight), np_of(tm.weight), "renormalised weight")


def test_embedding_padding_row_gets_no_gradient_and_from_pretrained():
    emb = ember.nn.Embedding(5, 2, padding_idx=0)
    assert np.all(np_of(emb.weight)[0] == 0)
    emb(ember.tensor([0, 1, 0])).sum().backward()
    g = np_of(emb.weight.grad)
    assert np.all(g[0] == 0) and np.all(g[1] == 1)
    table = ember.arange(6.0).reshape(3, 2)
    frozen = ember.nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(ember.tensor([2])).numpy(), [[4.0, 5.0]])
    trainable = ember.nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1)
    assert trainable.weight.requires_grad and trainable.padding_idx == 1
    assert repr(trainable) == repr(torch.nn.Embedding.from_pretrained(torch.arange(6.0).reshape(3, 2),
                                                                      padding_idx=1))
    with pytest.raises(AssertionError):
        ember.nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(NotImplementedError):
        ember.nn.Embedding(5, 2, sparse=True)


BAG_INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 2], np.int64)
BAG_OFFSETS = np.array([0, 3, 3, 7], np.int64)  # bags of 3, 0 (empty), 4, 3


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("variant", ["offsets", "last_offset", "padding", "2d", "2d_padding"])
def test_embedding_bag(mode, variant):
    kw, args = {"mode": mode}, [BAG_INPUT, BAG_OFFSETS]
    if variant == "last_offset":
        kw["include_last_offset"] = True
        args = [BAG_INPUT, np.append(BAG_OFFSETS, 10)]
    elif variant == "padding":
        kw["padding_idx"] = 2
    elif variant.startswith("2d"):
        args = [IDX]
        if variant == "2d_padding":
            kw["padding_idx"] = 4
    compare(lambda L: L.nn.EmbeddingBag(10, 3, **kw), args)


def test_embedding_bag_per_sample_weights_and_errors():
    psw = rand(10)
    compare(lambda L: L.nn.EmbeddingBag(10, 3, mode="sum"), [BAG_INPUT, BAG_OFFSETS, psw])
    compare(lambda L: L.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=4), [IDX, None, rand(2, 4)])
    bag = ember.nn.EmbeddingBag(10, 3, mode="mean")
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        bag(ember.from_numpy(BAG_INPUT), ember.from_numpy(BAG_OFFSETS), ember.ones(10))
    with pytest.raises(ValueError, match="offsets"):
        bag(ember.from_numpy(IDX), ember.tensor([0, 2]))
    with pytest.raises(ValueError, match="offsets"):
        bag(ember.from_numpy(BAG_INPUT))
    with pytest.raises(ValueError, match=r"offsets\[0\]"):
        bag(ember.from_numpy(BAG_INPUT), ember.tensor([1, 3]))
    with pytest.raises(ValueError, match="mode"):
        ember.nn.EmbeddingBag(10, 3, mode="median")
    table = ember.arange(6.0).reshape(3, 2)
    pre = ember.nn.EmbeddingBag.from_pretrained(table, mode="max")
    assert not pre.weight.requires_grad
    np.testing.assert_array_equal(pre(ember.tensor([[0, 2]])).numpy(), [[4.0, 5.0]])


# ---- shape, distance and misc layers ------------------------------------------------------------------------
MISC = [
    ("flatten", lambda L: L.nn.Flatten(), [rand(2, 3, 4)]),
    ("flatten_range", lambda L: L.nn.Flatten(0, 1), [rand(2, 3, 4)]),
    ("unflatten", lambda L: L.nn.Unflatten(1, (2, 6)), [rand(3, 12)]),
    ("unflatten_neg", lambda L: L.nn.Unflatten(-1, (2, -1)), [rand(3, 12)]),
    ("upsample_nearest", lambda L: L.nn.Upsample(scale_factor=2), [rand(1, 2, 3, 4)]),
    ("upsample_size", lambda L: L.nn.Upsample(size=(5, 7), mode="bilinear"), [rand(1, 2, 3, 4)]),
    ("upsample_align", lambda L: L.nn.Upsample(scale_factor=(2, 1.5), mode="bilinear", align_corners=True),
     [rand(1, 2, 3, 4)]),
    ("upsample_linear", lambda L: L.nn.Upsample(scale_factor=3, mode="linear"), [rand(2, 2, 5)]),
    ("upsample_trilinear", lambda L: L.nn.Upsample(size=4, mode="trilinear"), [rand(1, 1, 2, 3, 2)]),
    ("upsampling_nearest2d", lambda L: L.nn.UpsamplingNearest2d(scale_factor=2), [rand(1, 2, 3, 3)]),
    ("upsampling_bilinear2d", lambda L: L.nn.UpsamplingBilinear2d(size=(4, 6)), [rand(1, 2, 3, 3)]),
    ("pixel_shuffle", lambda L: L.nn.PixelShuffle(2), [rand(2, 8, 3, 2)]),
    ("pixel_unshuffle", lambda L: L.nn.PixelUnshuffle(2), [rand(2, 2, 4, 6)]),
    ("channel_shuffle", lambda L: L.nn.ChannelShuffle(3), [rand(2, 6, 2, 2)]),
    ("cosine", lambda L: L.nn.CosineSimilarity(), [rand(3, 4, 2), rand(3, 4, 2, seed=1)]),
    ("cosine_dim", lambda L: L.nn.CosineSimilarity(dim=-1, eps=1e-3), [rand(3, 4), rand(1, 4, seed=1)]),
    ("pairwise", lambda L: L.nn.PairwiseDistance(), [rand(3, 4), rand(3, 4, seed=1)]),
    ("pairwise_p1", lambda L: L.nn.PairwiseDistance(p=1.0, keepdim=True), [rand(3, 4), rand(3, 4, seed=1)]),
]


@pytest.mark.parametrize("name,make,args", MISC, ids=[c[0] for c in MISC])
def test_misc(name, make, args):
    if name == "channel_shuffle":  # torch's ChannelShuffle has no autograd kernel on CPU
        compare(make, args, grad=False)
        return
    compare(make, args)


def test_swiglu_convention():
    x = rand(3, 8)
    tx = torch.from_numpy(x).requires_grad_(True)
    ex = ember.from_numpy(x).requires_grad_(True)
    a, b = tx.chunk(2, -1)
    want = a * torch.nn.functional.silu(b)
    got = ember.nn.SwiGLU()(ex)
    assert_close(np_of(got), np_of(want), "swiglu")
    g = rand(3, 4, seed=2)
    want.backward(torch.from_numpy(g))
    got.backward(ember.from_numpy(g))
    assert_close(np_of(ex.grad), np_of(tx.grad), "swiglu grad")
    assert ember.nn.SwiGLU(dim=0)(ember.ones(4, 3)).shape == (2, 3)
    assert repr(ember.nn.SwiGLU()) == "SwiGLU(dim=-1)"
    with pytest.raises(RuntimeError, match="even"):
        ember.nn.SwiGLU()(ember.ones(3))


def test_layers_compose_in_sequential_and_train():
    """A small CNN built from the layer modules trains: Adam steps lower the loss, matching torch's
    trajectory from the same initial weights."""
    def make(L):
        return L.nn.Sequential(L.nn.Conv2d(1, 4, 3, bias=False), L.nn.BatchNorm2d(4), L.nn.ReLU(), L.nn.MaxPool2d(2),
                               L.nn.Flatten(), L.nn.Dropout(0.0), L.nn.Linear(4 * 3 * 3, 3))
    tm, em = make(torch), make(ember)
    transfer(tm, em)
    topt, eopt = torch.optim.Adam(tm.parameters(), 1e-2), ember.optim.Adam(em.parameters(), 1e-2)
    x = rand(8, 1, 8, 8).astype(np.float32)
    y = np.arange(8) % 3
    losses = []
    for _ in range(5):
        tl = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
        lp = ember.nn.functional.log_softmax(em(ember.from_numpy(x)), 1)
        el = -lp.gather(1, ember.from_numpy(y).unsqueeze(1)).mean()
        for opt, loss in ((topt, tl), (eopt, el)):
            opt.zero_grad()
            loss.backward()
            opt.step()
        np.testing.assert_allclose(float(el.item()), float(tl.item()), rtol=1e-4)
        losses.append(float(el.item()))
    assert losses[-1] < losses[0]
    for (name, tp), (_, ep) in zip(tm.state_dict().items(), em.state_dict().items()):
        np.testing.assert_allclose(np_of(ep), np_of(tp), rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("module", ["linear", "conv", "pooling", "normalization", "activation", "dropout", "sparse",
                                    "rnn", "transformer", "positional", "misc"])
def test_docstring_examples(module):
    """The examples in the layer modules' docstrings print what they claim."""
    import doctest
    import importlib
    mod = importlib.import_module(f"ember.nn.modules.{module}")
    ember.manual_seed(0)
    result = doctest.testmod(mod, extraglobs={"ember": ember}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
