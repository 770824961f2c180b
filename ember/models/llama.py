"""A Llama-style decoder with Hugging Face's names (``model.embed_tokens``, ``model.layers.N.self_attn.q_proj``,
``mlp.gate_proj``, ``model.norm``, ``lm_head``): RMSNorm, rotary position embeddings (Hugging
Face's rotate-half convention, ``rope_theta``, linear and llama3 ``rope_scaling``), a SwiGLU
feed-forward, grouped-query attention (``num_key_value_heads``) and a key/value cache.

>>> cfg = LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
...                   num_attention_heads=4, num_key_value_heads=2)
>>> model = LlamaForCausalLM(cfg).eval()
>>> model(ember.tensor([[1, 2, 3]])).logits.shape
ember.Size([1, 3, 40])
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from .. import _dtype as dt
from .._creation import arange, ones, tensor
from .._movement import cat
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import Embedding, Linear, Module, ModuleList, Parameter, init
from ..nn import functional as F
from ._common import activation, config_from_dict, decoder_mask, read_config
from ._generate import CausalLMOutput, KVCache, generate
from ._hub import load_checkpoint, load_weights

__all__ = ["LlamaConfig", "LlamaRMSNorm", "LlamaModel", "LlamaForCausalLM", "rotate_half", "apply_rotary_pos_emb"]


@dataclasses.dataclass
class LlamaConfig:
    """The fields of a Hugging Face Llama ``config.json`` that shape the model (defaults: Llama-2-7B)."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None  # None: as many as attention heads (no grouping)
    head_dim: int | None = None  # None: hidden_size // num_attention_heads
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    attention_bias: bool = False
    mlp_bias: bool = False
    tie_word_embeddings: bool = False
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2

    def __post_init__(self) -> None:
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            if self.hidden_size % self.num_attention_heads:
                raise ValueError(f"LlamaConfig: hidden_size {self.hidden_size} is not a multiple of "
                                 f"num_attention_heads {self.num_attention_heads}")
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"LlamaConfig: num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        if self.head_dim % 2:
            raise ValueError(f"LlamaConfig: rotary embeddings need an even head_dim, got {self.head_dim}")
        activation(self.hidden_act)
        _rope_kind(self.rope_scaling)

    @classmethod
    def from_dict(cls, values: dict) -> LlamaConfig:
        return config_from_dict(cls, values)


# ---- rotary position embeddings -------------------------------------------------------------------
def _rope_kind(scaling: dict | None) -> str:
    kind = "default" if scaling is None else scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ("default", "linear", "llama3"):
        raise ValueError(f"LlamaConfig: rope_scaling type {kind!r} is not supported (default, linear, llama3)")
    return kind


def rope_frequencies(config: LlamaConfig) -> list[float]:
    """The inverse frequencies ``theta ** (-2i / head_dim)`` of the rotary embedding, adjusted by
    ``rope_scaling`` (linear: divided by ``factor``; llama3: long wavelengths divided by
    ``factor``, short ones kept, a smooth blend between)."""
    d = config.head_dim
    inv = [1.0 / (config.rope_theta ** (i / d)) for i in range(0, d, 2)]
    scaling = config.rope_scaling or {}
    kind = _rope_kind(config.rope_scaling)
    if kind == "linear":
        return [f / scaling["factor"] for f in inv]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        context = scaling["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen < context / high:
                out.append(f)
            elif wavelen > context / low:
                out.append(f / factor)
            else:
                smooth = (context / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return out
    return inv


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim."""
    half = x.shape[-1] // 2
    return cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    """Rotate (batch, heads, seq, head_dim) queries and keys by angles whose cos/sin are
    (batch, seq, head_dim)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class LlamaRotaryEmbedding(Module):
    """cos/sin of position * frequency for given position ids, in the halves-duplicated layout."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        # plain floats, not a buffer: ``model.to(bfloat16)`` must not round the frequencies
        self.inv_freq = rope_frequencies(config)

    def forward(self, position_ids: Tensor, dtype) -> tuple[Tensor, Tensor]:
        inv_freq = tensor(self.inv_freq, dtype=dt.float32, device=position_ids.device)
        freqs = position_ids.to(dt.float32).unsqueeze(-1) * inv_freq  # (B, S, D/2)
        angles = cat([freqs, freqs], dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)


# ---- layers -----------------------------------------------------------------------------------
class LlamaRMSNorm(Module):
    """``weight * x / sqrt(mean(x²) + eps)``, normalised in float32 and cast back before the weight
    (as Hugging Face does, which matters for bfloat16 weights).

    >>> LlamaRMSNorm(4)(ember.full((2, 4), 3.0)).round().tolist()[0]
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = Parameter(ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: Tensor) -> Tensor:
        normed = F.rms_norm(x.to(dt.float32), (x.shape[-1],), eps=self.variance_epsilon)
        return self.weight * normed.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class LlamaAttention(Module):
    """Grouped-query self-attention: ``num_key_value_heads`` key/value heads each serve
    ``num_attention_heads / num_key_value_heads`` query heads; rotary embeddings on q and k."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads, self.num_kv_heads, self.head_dim = (config.num_attention_heads, config.num_key_value_heads,
                                                            config.head_dim)
        h, bias = config.hidden_size, config.attention_bias
        self.q_proj = Linear(h, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = Linear(h, self.num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = Linear(h, self.num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = Linear(self.num_heads * self.head_dim, h, bias=bias)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], cache: KVCache | None, mask: Tensor | None,
                is_causal: bool) -> Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, *rope)
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                             enable_gqa=self.num_kv_heads != self.num_heads)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.num_heads * self.head_dim))


class LlamaMLP(Module):
    """SwiGLU: ``down_proj(act(gate_proj(x)) * up_proj(x))`` with act = SiLU."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        h, i, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = Linear(h, i, bias=bias)
        self.up_proj = Linear(h, i, bias=bias)
        self.down_proj = Linear(i, h, bias=bias)
        self.act = activation(config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(Module):
    """Pre-norm block: ``x + self_attn(input_layernorm(x))``, then ``x + mlp(post_attention_layernorm(x))``."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x: Tensor, rope, cache, mask, is_causal) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope, cache, mask, is_causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(Module):
    """The decoder trunk: ``embed_tokens``, ``layers.N``, ``norm``.

    ``forward(input_ids, attention_mask=None, position_ids=None, past_key_values=None,
    use_cache=False)`` returns ``(hidden_states, cache)``.
    """

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size)
        self.layers = ModuleList(LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                past_key_values: KVCache | None = None, use_cache: bool = False) -> tuple[Tensor, KVCache | None]:
        if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
            raise ValueError("LlamaModel: input_ids must be a (batch, seq) ember.Tensor of token ids")
        cache = past_key_values if past_key_values is not None else (KVCache() if use_cache else None)
        past = cache.get_seq_length() if cache is not None else 0
        seq = input_ids.shape[1]
        if position_ids is None:
            position_ids = arange(past, past + seq, device=input_ids.device).unsqueeze(0)
        x = self.embed_tokens(input_ids)
        rope = self.rotary_emb(position_ids, x.dtype)
        mask, is_causal = decoder_mask(seq, past, attention_mask, x.device)
        for layer in self.layers:
            x = layer(x, rope, cache, mask, is_causal)
        return self.norm(x), cache


class LlamaForCausalLM(Module):
    """The decoder with its language-model head: ``model`` (a LlamaModel) and ``lm_head`` (tied to
    ``model.embed_tokens`` when the config says ``tie_word_embeddings``).

    ``forward(...)`` returns ``CausalLMOutput(logits, past_key_values)``; ``generate`` decodes
    with a key/value cache (the same tokens as recomputing everything each step).
    """

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self._init_weights()

    def _init_weights(self) -> None:
        std = self.config.initializer_range
        with no_grad():
            for m in self.modules():
                if isinstance(m, (Linear, Embedding)):
                    init.normal_(m.weight, 0.0, std)
                    if isinstance(m, Linear) and m.bias is not None:
                        init.zeros_(m.bias)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                past_key_values: KVCache | None = None, use_cache: bool = False) -> CausalLMOutput:
        hidden, cache = self.model(input_ids, attention_mask, position_ids, past_key_values, use_cache)
        return CausalLMOutput(self.lm_head(hidden), cache)

    def generate(self, input_ids: Tensor, max_new_tokens: int = 20, **kwargs) -> Tensor:
        """Continue ``input_ids``; see ``ember.models.generate`` for the options. Stops at the
        config's ``eos_token_id`` (one id or a list) unless ``eos_token_id=None`` is passed."""
        kwargs.setdefault("eos_token_id", self.config.eos_token_id)
        return generate(self, input_ids, max_new_tokens, **kwargs)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, dtype=None, strict: bool = True) -> LlamaForCausalLM:
        """A Llama-style model from a Hugging Face directory (``config.json`` + safetensors or
        PyTorch weights, sharded or not), read without torch. ``dtype`` (e.g. ``ember.bfloat16``)
        keeps the weights in that dtype; by default they are float32. The ``rotary_emb.inv_freq``
        buffers old checkpoints carry are skipped (they are recomputed). Returned in eval mode."""
        config = LlamaConfig.from_dict(read_config(path))
        model = cls(config)
        if dtype is not None:
            model.to(dtype)
        state = load_checkpoint(path)
        state = {k: v for k, v in state.items() if not k.endswith("rotary_emb.inv_freq")}
        if config.tie_word_embeddings:
            state.pop("lm_head.weight", None)
            if "model.embed_tokens.weight" in state:
                state["lm_head.weight"] = state["model.embed_tokens.weight"]
        load_weights(model, state, strict=strict)
        return model.eval()
