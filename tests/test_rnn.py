"""ember.nn.RNN / LSTM / GRU and their cells against torch.nn with the same weights: outputs, final
states, gradients of the input, the initial states and every parameter, in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
from tests.test_layers import compare, np_of, rand, transfer

CONFIGS = [
    ("1layer", {}),
    ("2layer_bidir_batchfirst", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("3layer_nobias", {"num_layers": 3, "bias": False}),
    ("bidir_dropout", {"num_layers": 2, "bidirectional": True, "dropout": 0.5}),
]


def _input(kw, T=5, N=3, C=4, seed=0):
    return rand(N, T, C, seed=seed) if kw.get("batch_first") else rand(T, N, C, seed=seed)


def _modes(kw):
    # inter-layer dropout draws different masks in each library: compare those in eval mode only
    return ("eval",) if kw.get("dropout") else ("train", "eval")


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_recurrent_layers(kind, name, kw):
    compare(lambda L: getattr(L.nn, kind)(4, 6, **kw), [_input(kw)], modes=_modes(kw))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("name,kw", CONFIGS[:2], ids=[c[0] for c in CONFIGS[:2]])
def test_initial_states(kind, name, kw):
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h0 = rand(layers, 3, 6, seed=1)
    hx = (h0, rand(layers, 3, 6, seed=2)) if kind == "LSTM" else h0
    # the initial states require grad too (compare() turns every float array into a leaf)
    compare(lambda L: getattr(L.nn, kind)(4, 6, **kw), [_input(kw), hx])


def test_rnn_relu_and_unbatched():
    compare(lambda L: L.nn.RNN(4, 5, nonlinearity="relu", num_layers=2), [rand(6, 2, 4)])
    for kind in ("RNN", "GRU", "LSTM"):
        hx = rand(2, 5, seed=3)
        hx = (hx, rand(2, 5, seed=4)) if kind == "LSTM" else hx
        compare(lambda L, kind=kind: getattr(L.nn, kind)(4, 5, num_layers=2), [rand(6, 4), hx])
        compare(lambda L, kind=kind: getattr(L.nn, kind)(4, 5, bidirectional=True, batch_first=True), [rand(6, 4)])


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True}],
                         ids=["plain", "2layer_bidir"])
def test_lstm_projection(kw):
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    hx = (rand(layers, 3, 2, seed=1), rand(layers, 3, 6, seed=2))
    _, em = compare(lambda L: L.nn.LSTM(4, 6, proj_size=2, **kw), [_input(kw), hx])
    assert em.weight_hr_l0.shape == (2, 6)


def test_float32_long_sequence():
    """A 2-layer LSTM over 40 steps in float32 stays within float32 rounding of torch."""
    compare(lambda L: L.nn.LSTM(8, 16, num_layers=2), [rand(40, 4, 8).astype(np.float32)], double=False,
            rtol=1e-4, atol=1e-5, modes=("train",))


def test_zero_length_sequence_and_empty_batch():
    for kind in ("RNN", "GRU", "LSTM"):
        tm, em = getattr(torch.nn, kind)(3, 4), getattr(ember.nn, kind)(3, 4)
        transfer(tm, em)
        x = rand(5, 0, 3).astype(np.float32)
        tout, eout = tm(torch.from_numpy(x)), em(ember.from_numpy(x))
        for t, e in zip(_leaves(tout), _leaves(eout)):
            assert tuple(e.shape) == tuple(t.shape)
        with pytest.raises(RuntimeError, match="sequence length"):
            tm(torch.zeros(0, 2, 3))
        with pytest.raises(RuntimeError, match="sequence length"):
            em(ember.zeros(0, 2, 3))


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    return [x]


@pytest.mark.parametrize("kind", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cells(kind):
    compare(lambda L: getattr(L.nn, kind)(4, 5), [rand(3, 4)])
    hx = rand(3, 5, seed=1)
    hx = (hx, rand(3, 5, seed=2)) if kind == "LSTMCell" else hx
    compare(lambda L: getattr(L.nn, kind)(4, 5, bias=False), [rand(3, 4), hx])
    compare(lambda L: getattr(L.nn, kind)(4, 5), [rand(4)])
    if kind == "RNNCell":
        compare(lambda L: L.nn.RNNCell(4, 5, nonlinearity="relu"), [rand(3, 4), hx])


def test_parameter_names_shapes_and_init():
    tm = torch.nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=4)
    em = ember.nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=4)
    assert [(k, tuple(v.shape)) for k, v in em.named_parameters()] == \
           [(k, tuple(v.shape)) for k, v in tm.named_parameters()]
    bound = 1 / math.sqrt(8)
    for p in em.parameters():
        a = np.abs(np_of(p))
        assert a.max() <= bound
    big = ember.nn.GRU(10, 100)
    w = np_of(big.weight_hh_l0)
    assert w.max() > 0.95 * 0.1 and w.min() < -0.95 * 0.1  # U(-1/sqrt(100), 1/sqrt(100)) fills its range
    assert len(em.all_weights) == 4 and len(em.all_weights[0]) == 5
    em.flatten_parameters()  # accepted for compatibility
    assert repr(em) == repr(tm)


def test_dropout_between_layers_in_training():
    """With dropout=1 every inter-layer activation is zeroed in training, so the second layer sees
    only its biases; in eval mode dropout is off."""
    ember.manual_seed(0)
    m = ember.nn.GRU(3, 4, num_layers=2, dropout=1.0)
    x = ember.randn(5, 2, 3)
    out_train, _ = m(x)
    ref = ember.nn.GRU(4, 4)
    ref.load_state_dict({k.replace("_l1", "_l0"): v for k, v in m.state_dict().items() if "_l1" in k})
    want, _ = ref(ember.zeros(5, 2, 4))
    np.testing.assert_allclose(out_train.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    m.eval()
    out_eval, _ = m(x)
    assert not np.allclose(out_eval.detach().numpy(), want.detach().numpy())


def test_errors():
    lstm = ember.nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match="input_size"):
        lstm(ember.ones(5, 2, 7))
    with pytest.raises(ValueError, match="2D or 3D"):
        lstm(ember.ones(5, 2, 3, 1))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        lstm(ember.ones(5, 2, 3), (ember.zeros(1, 2, 4), ember.zeros(2, 2, 4)))
    with pytest.raises(RuntimeError, match="hx should also be 2-D"):
        lstm(ember.ones(5, 3), (ember.zeros(2, 2, 4), ember.zeros(2, 2, 4)))
    with pytest.raises(ValueError, match="proj_size"):
        ember.nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size"):
        ember.nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="nonlinearity"):
        ember.nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout"):
        ember.nn.GRU(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        ember.nn.GRU(3, 4, dropout=0.2)
    with pytest.raises(RuntimeError, match="input_size"):
        ember.nn.GRUCell(3, 4)(ember.ones(2, 5))
