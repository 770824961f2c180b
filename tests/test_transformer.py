"""MultiheadAttention and the Transformer layers against torch.nn with the same weights (float64,
outputs, attention weights and gradients, train mode with dropout 0 and eval mode), plus
RotaryEmbedding and SinusoidalPositionalEncoding against numpy references of their documented
conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
from tests.test_layers import assert_close, compare, np_of, rand, transfer

E, H = 8, 2


def bool_mask(*shape, seed=0, p=0.3):
    m = np.random.default_rng(seed).random(shape) < p
    m[..., 0] = False  # every query keeps at least one key (fully masked rows are NaN in torch's weights)
    return m


def causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


# ---- MultiheadAttention ---------------------------------------------------------------------------------
MHA_CASES = [
    ("self_seqfirst", {}, lambda: [rand(5, 3, E)] * 3, {}),
    ("cross_batchfirst", {"batch_first": True}, lambda: [rand(3, 4, E), rand(3, 6, E, seed=1), rand(3, 6, E, seed=2)],
     {}),
    ("kv_same", {"batch_first": True}, lambda: [rand(2, 4, E)] + [rand(2, 6, E, seed=1)] * 2, {}),
    ("kdim_vdim", {"kdim": 5, "vdim": 3}, lambda: [rand(4, 2, E), rand(6, 2, 5, seed=1), rand(6, 2, 3, seed=2)], {}),
    ("bool_attn_mask", {}, lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)],
     {"attn_mask": bool_mask(4, 6)}),
    ("float_attn_mask_3d", {"batch_first": True}, lambda: [rand(2, 4, E), rand(2, 6, E, seed=1), rand(2, 6, E, seed=2)],
     {"attn_mask": rand(2 * H, 4, 6, seed=5)}),
    ("key_padding", {}, lambda: [rand(4, 3, E), rand(6, 3, E, seed=1), rand(6, 3, E, seed=2)],
     {"key_padding_mask": bool_mask(3, 6, seed=3)}),
    ("both_masks_causal", {"batch_first": True}, lambda: [rand(3, 5, E)] * 3,
     {"attn_mask": causal(5), "key_padding_mask": bool_mask(3, 5, seed=4)}),
    ("float_kpm", {}, lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)],
     {"key_padding_mask": rand(2, 6, seed=6)}),
    ("per_head_weights", {}, lambda: [rand(4, 2, E)] * 3, {"average_attn_weights": False}),
    ("no_weights", {}, lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)],
     {"need_weights": False, "attn_mask": bool_mask(4, 6, seed=7)}),
    ("no_bias", {"bias": False}, lambda: [rand(4, 2, E)] * 3, {}),
    ("bias_kv", {"add_bias_kv": True}, lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)],
     {"attn_mask": bool_mask(4, 6), "key_padding_mask": bool_mask(2, 6, seed=2)}),
    ("zero_attn", {"add_zero_attn": True}, lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)],
     {"key_padding_mask": bool_mask(2, 6, seed=2)}),
    ("bias_kv_zero_attn_noweights", {"add_bias_kv": True, "add_zero_attn": True},
     lambda: [rand(4, 2, E), rand(6, 2, E, seed=1), rand(6, 2, E, seed=2)], {"need_weights": False}),
    ("unbatched", {}, lambda: [rand(4, E), rand(6, E, seed=1), rand(6, E, seed=2)],
     {"key_padding_mask": bool_mask(6, seed=1)}),
    ("is_causal_hint", {"batch_first": True}, lambda: [rand(2, 5, E)] * 3,
     {"attn_mask": causal(5), "is_causal": True, "need_weights": False}),
]


@pytest.mark.parametrize("name,kw,args,call_kw", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention(name, kw, args, call_kw):
    tm, em = compare(lambda L: L.nn.MultiheadAttention(E, H, **kw), args(), call_kw)
    assert list(dict(em.named_parameters())) == list(dict(tm.named_parameters()))


def test_mha_self_attention_identity_path_and_dropout():
    """q, k, v given as the same tensor take ember's one-matmul path; the gradient flowing to that
    shared tensor is the sum of the three branches, as in torch."""
    x = rand(2, 5, E)
    out = {}
    for name, lib in (("torch", torch), ("ember", ember)):
        m = lib.nn.MultiheadAttention(E, H, batch_first=True).double()
        if lib is torch:
            tm = m
        else:
            transfer(tm, m)
        t = (torch.from_numpy(x) if lib is torch else ember.from_numpy(x)).requires_grad_(True)
        y, w = m(t, t, t)
        (y.sum() + (w * w).sum()).backward()
        out[name] = (np_of(y), np_of(t.grad))
    assert_close(out["ember"][0], out["torch"][0], "output")
    assert_close(out["ember"][1], out["torch"][1], "grad")
    # dropout on the attention weights in training: rows no longer sum to one, eval restores it
    ember.manual_seed(0)
    m = ember.nn.MultiheadAttention(E, H, dropout=0.5)
    q = ember.randn(6, 2, E)
    _, w = m(q, q, q, average_attn_weights=False)
    sums = w.sum(-1).detach().numpy()
    assert not np.allclose(sums, 1.0)
    m.eval()
    _, w = m(q, q, q)
    np.testing.assert_allclose(w.sum(-1).detach().numpy(), 1.0, rtol=1e-5)


def test_mha_errors_and_init():
    with pytest.raises(AssertionError, match="divisible"):
        ember.nn.MultiheadAttention(10, 3)
    m = ember.nn.MultiheadAttention(E, H)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(ember.ones(3, 1, E), ember.ones(3, 1, E), ember.ones(3, 1, E), is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(ember.ones(3, 1, E), ember.ones(4, 1, E), ember.ones(4, 1, E), attn_mask=ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="3D attn_mask"):
        m(ember.ones(3, 1, E), ember.ones(4, 1, E), ember.ones(4, 1, E), attn_mask=ember.zeros(1, 3, 4))
    with pytest.raises(AssertionError, match="key_padding_mask"):
        m(ember.ones(3, 2, E), ember.ones(4, 2, E), ember.ones(4, 2, E), key_padding_mask=ember.zeros(2, 3))
    big = ember.nn.MultiheadAttention(64, 4, add_bias_kv=True)
    bound = math.sqrt(6 / (64 + 192))  # xavier_uniform_ over the packed (3E, E) matrix
    w = np_of(big.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert not np.any(np_of(big.in_proj_bias)) and not np.any(np_of(big.out_proj.bias))
    assert big.bias_k.shape == (1, 1, 64) and np.any(np_of(big.bias_k))
    sep = ember.nn.MultiheadAttention(8, 2, kdim=4, vdim=6)
    assert sep.in_proj_weight is None and sep.k_proj_weight.shape == (8, 4) and sep.v_proj_weight.shape == (8, 6)


# ---- transformer layers ------------------------------------------------------------------------------------
def _layer_kw(**kw):
    return {"dim_feedforward": 16, "dropout": 0.0, **kw}


ENCODER_CASES = [
    ("post_norm", _layer_kw(), False),
    ("pre_norm_gelu_batchfirst", _layer_kw(norm_first=True, activation="gelu", batch_first=True), True),
    ("callable_activation_nobias", _layer_kw(activation=torch.nn.functional.silu, bias=False, layer_norm_eps=1e-3),
     False),
]


def _act(kw, lib):
    """The activation argument in lib's terms (a torch callable is mapped to ember's)."""
    a = kw.get("activation")
    if callable(a) and lib is ember:
        return {**kw, "activation": getattr(ember.nn.functional, a.__name__)}
    return kw


@pytest.mark.parametrize("name,kw,bf", ENCODER_CASES, ids=[c[0] for c in ENCODER_CASES])
def test_encoder_layer(name, kw, bf):
    src = rand(3, 5, E) if bf else rand(5, 3, E)
    masks = {"src_mask": causal(5), "src_key_padding_mask": bool_mask(3, 5, seed=2)}
    make = lambda L: L.nn.TransformerEncoderLayer(E, H, **_act(kw, L))  # noqa: E731
    compare(make, [src])
    compare(make, [src], masks)


@pytest.mark.parametrize("name,kw,bf", ENCODER_CASES, ids=[c[0] for c in ENCODER_CASES])
def test_decoder_layer(name, kw, bf):
    tgt, mem = (rand(3, 4, E), rand(3, 6, E, seed=1)) if bf else (rand(4, 3, E), rand(6, 3, E, seed=1))
    make = lambda L: L.nn.TransformerDecoderLayer(E, H, **_act(kw, L))  # noqa: E731
    compare(make, [tgt, mem])
    masks = {"tgt_mask": causal(4), "memory_mask": bool_mask(4, 6, seed=3),
             "tgt_key_padding_mask": bool_mask(3, 4, seed=4), "memory_key_padding_mask": bool_mask(3, 6, seed=5)}
    compare(make, [tgt, mem], masks)


def test_encoder_decoder_stacks():
    def enc(L):
        layer = L.nn.TransformerEncoderLayer(E, H, **_layer_kw(batch_first=True))
        return L.nn.TransformerEncoder(layer, 2, norm=L.nn.LayerNorm(E), enable_nested_tensor=False)

    compare(enc, [rand(2, 5, E)], {"mask": causal(5), "src_key_padding_mask": bool_mask(2, 5)})
    compare(enc, [rand(2, 5, E)], {"mask": causal(5), "is_causal": True})

    def dec(L):
        return L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(E, H, **_layer_kw(norm_first=True)), 2)

    compare(dec, [rand(4, 2, E), rand(6, 2, E, seed=1)], {"tgt_mask": causal(4)})


@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "norm_first": True, "activation": "gelu"}],
                         ids=["default", "batchfirst_prenorm"])
def test_transformer(kw):
    def make(L):
        return L.nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12,
                                dropout=0.0, **kw)

    bf = kw.get("batch_first", False)
    src, tgt = (rand(2, 6, E), rand(2, 4, E, seed=1)) if bf else (rand(6, 2, E), rand(4, 2, E, seed=1))
    masks = {"tgt_mask": causal(4), "src_key_padding_mask": bool_mask(2, 6, seed=2),
             "memory_key_padding_mask": bool_mask(2, 6, seed=2)}
    tm, em = compare(make, [src, tgt], masks)
    assert len(list(em.state_dict())) == len(list(tm.state_dict()))
    # every matrix was re-drawn xavier-uniform
    w = np_of(em.encoder.layers[0].linear1.weight)
    assert np.abs(w).max() <= math.sqrt(6 / (E + 12))


def test_transformer_mask_helper_and_errors():
    got = ember.nn.Transformer.generate_square_subsequent_mask(4)
    want = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(np_of(got), np_of(want), "square subsequent mask")
    model = ember.nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="batch number"):
        model(ember.ones(5, 2, E), ember.ones(4, 3, E))
    with pytest.raises(RuntimeError, match="d_model"):
        model(ember.ones(5, 2, E + 1), ember.ones(4, 2, E + 1))
    with pytest.raises(RuntimeError, match="relu/gelu"):
        ember.nn.TransformerEncoderLayer(E, H, activation="tanh")


def test_dropout_in_training_changes_output_and_eval_is_deterministic():
    ember.manual_seed(1)
    layer = ember.nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.5)
    x = ember.randn(5, 2, E)
    a, b = layer(x).detach().numpy(), layer(x).detach().numpy()
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


# ---- positional encodings ----------------------------------------------------------------------------------
def rope_reference(x: np.ndarray, dim: int, base: float, interleaved: bool, positions: np.ndarray) -> np.ndarray:
    """The documented RoPE convention written out with numpy: positions along x's dim -2."""
    out = x.copy()
    for m in range(dim // 2):
        theta = positions * base ** (-2 * m / dim)
        c, s = np.cos(theta)[:, None], np.sin(theta)[:, None]
        i, j = (2 * m, 2 * m + 1) if interleaved else (m, m + dim // 2)
        a, b = x[..., i:i + 1], x[..., j:j + 1]
        out[..., i:i + 1] = a * c - b * s
        out[..., j:j + 1] = a * s + b * c
    return out


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("width", [8, 12], ids=["full", "partial"])
def test_rotary_matches_reference(interleaved, width):
    x = rand(2, 3, 5, width)
    rope = ember.nn.RotaryEmbedding(8, base=500.0, interleaved=interleaved)
    got = rope(ember.from_numpy(x), offset=3)
    want = rope_reference(x, 8, 500.0, interleaved, np.arange(5) + 3.0)
    assert_close(np_of(got), want, "rope", 1e-12, 1e-12)
    # explicit positions, and sequence in dim 1 of (batch, seq, heads, head_dim)
    pos = np.array([4, 0, 2, 9, 1])
    got = rope(ember.from_numpy(x), positions=ember.tensor(pos))
    assert_close(np_of(got), rope_reference(x, 8, 500.0, interleaved, pos.astype(float)), "rope positions",
                 1e-12, 1e-12)
    rope1 = ember.nn.RotaryEmbedding(8, base=500.0, interleaved=interleaved, seq_dim=1)
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    got = rope1(ember.from_numpy(xt)).numpy().transpose(0, 2, 1, 3)
    assert_close(got, rope_reference(x, 8, 500.0, interleaved, np.arange(5.0)), "rope seq_dim=1", 1e-12, 1e-12)


def test_rotary_relative_property_gradient_and_errors():
    """q_i·k_j after RoPE depends only on i - j; the rotation preserves norms; gradients flow."""
    rope = ember.nn.RotaryEmbedding(16)
    q = ember.from_numpy(np.tile(rand(1, 16), (6, 1)))  # the same vector at every position
    k = ember.from_numpy(np.tile(rand(1, 16, seed=1), (6, 1)))
    qr, kr = rope(q).numpy(), rope(k).numpy()
    scores = qr @ kr.T
    for d in range(-3, 4):
        diag = np.diagonal(scores, d)
        np.testing.assert_allclose(diag, diag[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(qr, axis=-1), np.linalg.norm(q.numpy(), axis=-1), rtol=1e-5)
    x = ember.randn(2, 4, 16, requires_grad=True)
    (rope(x) ** 2).sum().backward()  # rotation is orthogonal: d/dx |Rx|² = 2x
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert rope(ember.ones(3, 16, dtype=ember.float64)).dtype == ember.float64
    assert list(rope.state_dict()) == []  # the frequencies are recomputed, not saved
    with pytest.raises(ValueError, match="even"):
        ember.nn.RotaryEmbedding(7)
    with pytest.raises(RuntimeError, match="features"):
        rope(ember.ones(3, 8))


@pytest.mark.parametrize("d_model", [6, 7])
def test_sinusoidal_positional_encoding(d_model):
    pe = ember.nn.SinusoidalPositionalEncoding(d_model, max_len=20, dtype=ember.float64)
    x = rand(5, 2, d_model)
    ref = np.zeros((5, d_model))
    for p in range(5):
        for i in range(0, d_model, 2):
            ref[p, i] = math.sin(p / 10000 ** (i / d_model))
            if i + 1 < d_model:
                ref[p, i + 1] = math.cos(p / 10000 ** (i / d_model))
    assert_close(np_of(pe(ember.from_numpy(x))), x + ref[:, None, :], "seq-first", 1e-12, 1e-12)
    bf = ember.nn.SinusoidalPositionalEncoding(d_model, max_len=20, batch_first=True, dtype=ember.float64)
    xb = rand(2, 5, d_model)
    assert_close(np_of(bf(ember.from_numpy(xb))), xb + ref[None], "batch-first", 1e-12, 1e-12)
    assert_close(np_of(pe(ember.from_numpy(x[:, 0]))), x[:, 0] + ref, "unbatched", 1e-12, 1e-12)
    assert list(pe.state_dict()) == []
    with pytest.raises(RuntimeError, match="max_len"):
        pe(ember.zeros(21, 1, d_model, dtype=ember.float64))
