"""ember.models transformers (BERT, GPT-2, Llama) against plain-torch reference forwards written here,
at tiny configs with random weights; generation with and without the key/value cache; loading
Hugging Face-style model directories (config.json + safetensors) without torch; tokenization.
The real all-MiniLM-L6-v2 check is in test_models_minilm.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.models as models
from ember.models import BertConfig, GPT2Config, LlamaConfig


def to_torch(module: ember.nn.Module) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in module.state_dict().items()}


def e2n(t: ember.Tensor) -> np.ndarray:
    return t.detach().numpy()


def close(got: ember.Tensor, want: torch.Tensor, tol: float = 1e-4) -> None:
    np.testing.assert_allclose(e2n(got), want.numpy(), rtol=tol, atol=tol)


def save_dir(tmp_path, config: dict, state: dict[str, np.ndarray], name: str = "model.safetensors"):
    from safetensors.numpy import save_file
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file(state, str(tmp_path / name))
    return tmp_path


# ---- BERT ---------------------------------------------------------------------------------------------
BERT_CFG = dict(vocab_size=60, hidden_size=24, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                max_position_embeddings=32, type_vocab_size=2, hidden_act="gelu")


def torch_bert(sd: dict, cfg: dict, ids, mask, types):
    """Hugging Face's BERT forward written out in torch: returns (last_hidden_state, pooler_output)."""
    h, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12)
    d = h // heads
    ln = lambda x, p: TF.layer_norm(x, (h,), sd[p + ".weight"], sd[p + ".bias"], eps)  # noqa: E731
    lin = lambda x, p: TF.linear(x, sd[p + ".weight"], sd[p + ".bias"])  # noqa: E731
    b, s = ids.shape
    x = sd["embeddings.word_embeddings.weight"][ids] + sd["embeddings.token_type_embeddings.weight"][types]
    x = ln(x + sd["embeddings.position_embeddings.weight"][torch.arange(s)], "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        split = lambda t: t.view(b, s, heads, d).transpose(1, 2)  # noqa: E731
        q, k, v = (split(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, -1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inner = TF.gelu(lin(x, p + "intermediate.dense"))
        x = ln(lin(inner, p + "output.dense") + x, p + "output.LayerNorm")
    return x, torch.tanh(lin(x[:, 0], "pooler.dense"))


def bert_inputs(seed=0):
    g = np.random.default_rng(seed)
    ids = g.integers(1, BERT_CFG["vocab_size"], (3, 9))
    mask = np.ones((3, 9), dtype=np.int64)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    ids[mask == 0] = 0
    types = (np.arange(9)[None, :] >= 5).astype(np.int64).repeat(3, 0)
    return ids, mask, types


def test_bert_matches_torch_reference():
    ember.manual_seed(0)
    model = models.BertModel(BertConfig(**BERT_CFG)).eval()
    ids, mask, types = bert_inputs()
    with ember.no_grad():
        out = model(ember.from_numpy(ids), attention_mask=ember.from_numpy(mask),
                    token_type_ids=ember.from_numpy(types))
    want_h, want_p = torch_bert(to_torch(model), BERT_CFG, torch.from_numpy(ids), torch.from_numpy(mask),
                                torch.from_numpy(types))
    close(out.last_hidden_state, want_h)
    close(out.pooler_output, want_p)


def test_bert_from_pretrained_prefixed_checkpoint(tmp_path):
    """A task-model checkpoint (``bert.`` prefix, a head, the old ``position_ids`` buffer) loads."""
    ember.manual_seed(1)
    src = models.BertModel(BertConfig(**BERT_CFG))
    state = {"bert." + k: e2n(v) for k, v in src.state_dict().items()}
    state["bert.embeddings.position_ids"] = np.arange(32, dtype=np.int64)[None]
    state["cls.predictions.bias"] = np.zeros(60, np.float32)
    model = models.BertModel.from_pretrained(save_dir(tmp_path, dict(BERT_CFG, architectures=["BertForMaskedLM"]),
                                                      state))
    assert not model.training
    ids, mask, types = bert_inputs(1)
    with ember.no_grad():
        got = model(ember.from_numpy(ids), attention_mask=ember.from_numpy(mask)).last_hidden_state
        want = src.eval()(ember.from_numpy(ids), attention_mask=ember.from_numpy(mask)).last_hidden_state
    np.testing.assert_array_equal(e2n(got), e2n(want))


def test_bert_errors(tmp_path):
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        BertConfig(hidden_size=10, num_attention_heads=3)
    with pytest.raises(ValueError, match="relative_key"):
        BertConfig(position_embedding_type="relative_key")
    with pytest.raises(ValueError, match="unsupported activation"):
        BertConfig(hidden_act="mish2")
    model = models.BertModel(BertConfig(**BERT_CFG))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(ember.zeros(1, 40, dtype=ember.int64))
    with pytest.raises(FileNotFoundError, match="config.json"):
        models.BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(BERT_CFG))
    with pytest.raises(FileNotFoundError, match="no weights"):
        models.BertModel.from_pretrained(tmp_path)


def test_mean_pooling_ignores_padding():
    h = ember.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert models.mean_pooling(h, ember.tensor([[1, 1, 0]])).tolist() == [[2.0, 3.0]]


# ---- GPT-2 --------------------------------------------------------------------------------------------
GPT2_CFG = dict(vocab_size=50, n_positions=40, n_embd=16, n_layer=2, n_head=2, eos_token_id=49, bos_token_id=49)


def torch_gpt2(sd: dict, cfg: dict, ids):
    """Hugging Face's GPT-2 forward in torch (Conv1D weights are (in, out)): logits."""
    e, heads = cfg["n_embd"], cfg["n_head"]
    d = e // heads
    b, s = ids.shape
    conv = lambda x, p: x @ sd[p + ".weight"] + sd[p + ".bias"]  # noqa: E731
    ln = lambda x, p: TF.layer_norm(x, (e,), sd[p + ".weight"], sd[p + ".bias"], 1e-5)  # noqa: E731
    x = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][torch.arange(s)]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        q, k, v = conv(ln(x, p + "ln_1"), p + "attn.c_attn").split(e, -1)
        q, k, v = (t.view(b, s, heads, d).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + conv((att @ v).transpose(1, 2).reshape(b, s, e), p + "attn.c_proj")
        x = x + conv(TF.gelu(conv(ln(x, p + "ln_2"), p + "mlp.c_fc"), approximate="tanh"), p + "mlp.c_proj")
    return ln(x, "transformer.ln_f") @ sd["transformer.wte.weight"].T


def gpt2(seed=0) -> models.GPT2LMHeadModel:
    ember.manual_seed(seed)
    return models.GPT2LMHeadModel(GPT2Config(**GPT2_CFG)).eval()


def torch_greedy(forward, ids: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        ids = torch.cat([ids, forward(ids)[:, -1].argmax(-1, keepdim=True)], 1)
    return ids


def test_gpt2_logits_and_greedy_generation_match_torch():
    model = gpt2()
    sd = to_torch(model)
    assert "lm_head.weight" in sd and model.lm_head.weight is model.transformer.wte.weight
    ids = np.random.default_rng(0).integers(0, 48, (2, 7))
    with ember.no_grad():
        logits = model(ember.from_numpy(ids)).logits
    close(logits, torch_gpt2(sd, GPT2_CFG, torch.from_numpy(ids)))
    want = torch_greedy(lambda t: torch_gpt2(sd, GPT2_CFG, t), torch.from_numpy(ids), 8)
    for use_cache in (True, False):
        got = model.generate(ember.from_numpy(ids), max_new_tokens=8, use_cache=use_cache, eos_token_id=None)
        np.testing.assert_array_equal(e2n(got), want.numpy())


def test_gpt2_cached_logits_equal_full_forward():
    model = gpt2(2)
    ids = ember.from_numpy(np.random.default_rng(3).integers(0, 48, (2, 10)))
    with ember.no_grad():
        full = model(ids).logits
        out = model(ids[:, :6], use_cache=True)
        steps = [out.logits]
        for i in range(6, 10):
            out = model(ids[:, i:i + 1], past_key_values=out.past_key_values, use_cache=True)
            steps.append(out.logits)
    assert out.past_key_values.get_seq_length() == 10
    np.testing.assert_allclose(e2n(ember.cat(steps, 1)), e2n(full), rtol=1e-5, atol=1e-5)


def test_gpt2_sampling():
    model = gpt2(4)
    ids = ember.tensor([[3, 4, 5]])
    greedy = model.generate(ids, 6, eos_token_id=None)
    assert model.generate(ids, 6, do_sample=True, top_k=1, eos_token_id=None).tolist() == greedy.tolist()
    run = lambda seed, **kw: model.generate(ids, 6, do_sample=True, eos_token_id=None,  # noqa: E731
                                            generator=ember.Generator().manual_seed(seed), **kw).tolist()
    assert run(7, temperature=0.8) == run(7, temperature=0.8)
    # top-k: every sampled token is among the k most likely given its prefix
    out = ember.tensor(run(11, top_k=3, temperature=5.0))
    sd = to_torch(model)
    logits = torch_gpt2(sd, GPT2_CFG, torch.from_numpy(e2n(out)))
    for pos in range(3, out.shape[1]):
        top = set(logits[0, pos - 1].topk(3).indices.tolist())
        assert int(out[0, pos].item()) in top
    # top-p tiny: only the most likely token survives, so sampling is greedy
    assert model.generate(ids, 6, do_sample=True, top_p=1e-6, eos_token_id=None).tolist() == greedy.tolist()
    with pytest.raises(ValueError, match="temperature"):
        model.generate(ids, 2, do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(ids, 2, top_k=0)


def test_gpt2_eos_stops_and_pads():
    model = gpt2(5)
    ids = ember.tensor([[1, 2], [7, 8]])
    free = model.generate(ids, 5, eos_token_id=None)
    eos = int(free[0, 3].item())  # row 0's second new token plays the end of sequence
    out = model.generate(ids, 5, eos_token_id=eos, pad_token_id=0)
    row0 = out[0].tolist()
    first = row0.index(eos, 2)
    assert all(t == 0 for t in row0[first + 1:])
    assert out[0, :first + 1].tolist() == free[0, :first + 1].tolist()


def test_gpt2_left_padded_batch_equals_single_rows():
    model = gpt2(6)
    a, b = [5, 9, 13, 2, 8], [4, 11, 3]
    batch = ember.tensor([a, [0, 0] + b])
    mask = ember.tensor([[1] * 5, [0, 0, 1, 1, 1]])
    out = model.generate(batch, 4, attention_mask=mask, eos_token_id=None)
    for row, seq, pad in ((0, a, 0), (1, b, 2)):
        single = model.generate(ember.tensor([seq]), 4, eos_token_id=None)
        assert out[row, pad:].tolist() == single[0].tolist()


def test_gpt2_from_pretrained_original_layout(tmp_path):
    """The original ``gpt2`` checkpoint layout: no ``transformer.`` prefix, no lm_head, mask buffers."""
    src = gpt2(8)
    state = {k.removeprefix("transformer."): e2n(v) for k, v in src.state_dict().items() if k != "lm_head.weight"}
    for i in range(2):
        state[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 40, 40), np.float32))
    model = models.GPT2LMHeadModel.from_pretrained(save_dir(tmp_path, GPT2_CFG, state))
    assert model.lm_head.weight is model.transformer.wte.weight
    ids = ember.tensor([[1, 2, 3, 4]])
    with ember.no_grad():
        np.testing.assert_array_equal(e2n(model(ids).logits), e2n(src(ids).logits))
    with pytest.raises(ValueError, match="n_positions"):
        model(ember.zeros(1, 41, dtype=ember.int64))


def test_conv1d_layout():
    layer = models.Conv1D(5, 3)
    assert layer.weight.shape == (3, 5)
    x = ember.randn(2, 3)
    np.testing.assert_allclose(e2n(layer(x)), e2n(x) @ e2n(layer.weight) + e2n(layer.bias), rtol=1e-6)


# ---- Llama --------------------------------------------------------------------------------------------
LLAMA_CFG = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=500.0, eos_token_id=63, bos_token_id=1)


def torch_llama(sd: dict, cfg: dict, ids, positions=None):
    """Hugging Face's Llama forward in torch: RMSNorm, rotate-half RoPE, GQA by repeating kv heads."""
    h, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads
    b, s = ids.shape
    eps = cfg["rms_norm_eps"]

    def rms(x, p):
        return sd[p + ".weight"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    pos = torch.arange(s)[None].expand(b, s) if positions is None else positions
    inv = 1.0 / cfg["rope_theta"] ** (torch.arange(0, d, 2).float() / d)
    scaling = cfg.get("rope_scaling")
    if scaling:
        inv = inv / scaling["factor"]
    ang = pos[..., None].float() * inv
    ang = torch.cat([ang, ang], -1)[:, None]
    cos, sin = ang.cos(), ang.sin()
    rot = lambda t: torch.cat([-t[..., d // 2:], t[..., :d // 2]], -1)  # noqa: E731
    x = sd["model.embed_tokens.weight"][ids]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        y = rms(x, p + "input_layernorm")
        q = TF.linear(y, sd[p + "self_attn.q_proj.weight"]).view(b, s, heads, d).transpose(1, 2)
        k = TF.linear(y, sd[p + "self_attn.k_proj.weight"]).view(b, s, kv, d).transpose(1, 2)
        v = TF.linear(y, sd[p + "self_attn.v_proj.weight"]).view(b, s, kv, d).transpose(1, 2)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k, v = k.repeat_interleave(heads // kv, 1), v.repeat_interleave(heads // kv, 1)
        att = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + TF.linear((att @ v).transpose(1, 2).reshape(b, s, h), sd[p + "self_attn.o_proj.weight"])
        y = rms(x, p + "post_attention_layernorm")
        gate = TF.silu(TF.linear(y, sd[p + "mlp.gate_proj.weight"])) * TF.linear(y, sd[p + "mlp.up_proj.weight"])
        x = x + TF.linear(gate, sd[p + "mlp.down_proj.weight"])
    return TF.linear(rms(x, "model.norm"), sd["lm_head.weight"])


def llama(seed=0, **over) -> models.LlamaForCausalLM:
    ember.manual_seed(seed)
    return models.LlamaForCausalLM(LlamaConfig(**dict(LLAMA_CFG, **over))).eval()


@pytest.mark.parametrize("over", [{}, {"num_key_value_heads": 4, "rope_scaling": {"type": "linear", "factor": 2.0}},
                                  {"num_key_value_heads": 1}])
def test_llama_logits_match_torch(over):
    model = llama(**over)
    ids = np.random.default_rng(0).integers(0, 62, (2, 9))
    with ember.no_grad():
        got = model(ember.from_numpy(ids)).logits
    close(got, torch_llama(to_torch(model), dict(LLAMA_CFG, **over), torch.from_numpy(ids)))


def test_llama_generation_with_cache_equals_without():
    model = llama(1)
    ids = ember.from_numpy(np.random.default_rng(1).integers(0, 62, (2, 5)))
    cached = model.generate(ids, 10, eos_token_id=None)
    plain = model.generate(ids, 10, eos_token_id=None, use_cache=False)
    assert cached.tolist() == plain.tolist()
    want = torch_greedy(lambda t: torch_llama(to_torch(model), LLAMA_CFG, t), torch.from_numpy(e2n(ids)), 10)
    np.testing.assert_array_equal(e2n(cached), want.numpy())
    with ember.no_grad():  # and the logits of every cached step are the full forward's
        full = model(cached).logits
        out = model(cached[:, :5], use_cache=True)
        steps = [out.logits]
        for i in range(5, cached.shape[1]):
            out = model(cached[:, i:i + 1], past_key_values=out.past_key_values, use_cache=True)
            steps.append(out.logits)
    np.testing.assert_allclose(e2n(ember.cat(steps, 1)), e2n(full), rtol=1e-4, atol=1e-5)


def test_llama_left_padded_batch_and_eos_list():
    model = llama(2)
    a, b = [3, 9, 27, 5], [8, 2]
    out = model.generate(ember.tensor([a, [0, 0] + b]), 5, attention_mask=ember.tensor([[1] * 4, [0, 0, 1, 1]]),
                         eos_token_id=None)
    assert out[0].tolist() == model.generate(ember.tensor([a]), 5, eos_token_id=None)[0].tolist()
    assert out[1, 2:].tolist() == model.generate(ember.tensor([b]), 5, eos_token_id=None)[0].tolist()
    free = model.generate(ember.tensor([a]), 5, eos_token_id=None)[0].tolist()
    stop = model.generate(ember.tensor([a]), 5, eos_token_id=[60, free[5]])[0].tolist()
    assert stop == free[:6]  # the only row ended, so generation stopped


def test_llama_from_pretrained_sharded_bf16(tmp_path):
    """Sharded bfloat16 safetensors with a weight-map index and tied embeddings load and upcast."""
    import ml_dtypes
    from safetensors.numpy import save_file
    cfg = dict(LLAMA_CFG, tie_word_embeddings=True, architectures=["LlamaForCausalLM"], torch_dtype="bfloat16")
    src = llama(3, tie_word_embeddings=True)
    assert src.lm_head.weight is src.model.embed_tokens.weight
    state = {k: e2n(v).astype(ml_dtypes.bfloat16) for k, v in src.state_dict().items() if k != "lm_head.weight"}
    keys = sorted(state)
    shards = {"model-00001-of-00002.safetensors": keys[: len(keys) // 2],
              "model-00002-of-00002.safetensors": keys[len(keys) // 2:]}
    for name, ks in shards.items():
        save_file({k: state[k] for k in ks}, str(tmp_path / name))
    index = {"metadata": {}, "weight_map": {k: n for n, ks in shards.items() for k in ks}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = models.LlamaForCausalLM.from_pretrained(tmp_path)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert model.model.layers[0].self_attn.q_proj.weight.dtype == ember.float32
    ref = {k: torch.from_numpy(v.astype(np.float32)) for k, v in state.items()}
    ref["lm_head.weight"] = ref["model.embed_tokens.weight"]
    ids = np.array([[1, 5, 9, 33]])
    with ember.no_grad():
        close(model(ember.from_numpy(ids)).logits, torch_llama(ref, LLAMA_CFG, torch.from_numpy(ids)))
    low = models.LlamaForCausalLM.from_pretrained(tmp_path, dtype=ember.bfloat16)
    assert low.lm_head.weight.dtype == ember.bfloat16
    with ember.no_grad():
        assert low(ember.from_numpy(ids)).logits.shape == (1, 4, 64)


def test_llama_config_checks():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="rope_scaling type 'yarn'"):
        LlamaConfig(rope_scaling={"rope_type": "yarn", "factor": 4.0})
    cfg = LlamaConfig(hidden_size=64, num_attention_heads=4, rope_theta=10000.0,
                      rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    freqs = models.llama.rope_frequencies(cfg)
    base = [1.0 / 10000.0 ** (i / 16) for i in range(0, 16, 2)]
    assert freqs[0] == base[0] and math.isclose(freqs[-1], base[-1] / 8.0)  # short waves kept, long divided


def test_rms_norm_and_rotate_half():
    from ember.models.llama import LlamaRMSNorm, rotate_half
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    norm = LlamaRMSNorm(8, eps=1e-6)
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(e2n(norm(ember.from_numpy(x))), want, rtol=1e-5, atol=1e-6)
    assert rotate_half(ember.tensor([1.0, 2.0, 3.0, 4.0])).tolist() == [-3.0, -4.0, 1.0, 2.0]


# ---- tokenizer and docstrings ------------------------------------------------------------------------
def word_tokenizer(tmp_path):
    """A small word-level tokenizer.json with [CLS] x [SEP] template and right padding."""
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from tokenizers import models as tm
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat"])}
    tok = Tokenizer(tm.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                                 ("[SEP]", 3)])
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(6)
    tok.save(str(tmp_path / "tokenizer.json"))
    return models.Tokenizer.from_pretrained(tmp_path)


def test_tokenizer_batches(tmp_path):
    tok = word_tokenizer(tmp_path)
    assert tok.model_max_length == 6 and tok.pad_token_id == 0
    batch = tok(["the cat sat", "the cat sat on the mat mat mat"])
    assert batch["input_ids"].tolist() == [[2, 4, 5, 6, 3, 0], [2, 4, 5, 6, 7, 3]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1, 0], [1] * 6]
    assert batch["input_ids"].dtype == ember.int64 and batch["token_type_ids"].tolist() == [[0] * 6] * 2
    left = tok(["the cat", "the cat sat"], padding_side="left", max_length=10)
    assert left["input_ids"].tolist() == [[0, 2, 4, 5, 3], [2, 4, 5, 6, 3]]
    assert left["attention_mask"].tolist() == [[0, 1, 1, 1, 1], [1] * 5]
    assert tok.decode(ember.tensor([2, 4, 5, 3])) == "the cat"
    assert tok.encode("cat mat", add_special_tokens=False) == [5, 8]
    with pytest.raises(ValueError, match="padding=True"):
        tok(["the", "the cat"], padding=False)


def test_tokenizer_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        models.Tokenizer.from_pretrained(tmp_path)
    word_tokenizer(tmp_path)
    monkeypatch.setitem(__import__("sys").modules, "tokenizers", None)
    with pytest.raises(ImportError, match=r"pip install ember\[text\]"):
        models.Tokenizer.from_pretrained(tmp_path)


@pytest.mark.parametrize("module", ["_common", "_hub", "_generate", "bert", "gpt2", "llama", "tokenizer", "resnet",
                                    "mobilenet", "vit"])
def test_docstring_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"ember.models.{module}")
    ember.manual_seed(0)
    result = doctest.testmod(mod, extraglobs={"ember": ember}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
