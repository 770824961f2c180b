"""GPT-2 with Hugging Face's module and parameter names (``transformer.wte``, ``transformer.h.N.attn.c_attn``,
..., ``lm_head`` tied to ``wte``), so ``gpt2`` checkpoints load key by key, and text generation
with a key/value cache.

GPT-2's projections are ``Conv1D`` layers whose weight is stored (in_features, out_features), the
transpose of ``nn.Linear``'s; ember's ``Conv1D`` keeps that layout, so checkpoints load unchanged.

>>> cfg = GPT2Config(vocab_size=40, n_positions=16, n_embd=8, n_layer=2, n_head=2)
>>> model = GPT2LMHeadModel(cfg).eval()
>>> model(ember.tensor([[1, 2, 3]])).logits.shape
ember.Size([1, 3, 40])
>>> model.generate(ember.tensor([[1, 2, 3]]), max_new_tokens=4).shape
ember.Size([1, 7])
"""

from __future__ import annotations

import dataclasses
import math
import os

from .._creation import arange, empty
from .._linalg_ops import addmm
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, Parameter, init
from ..nn import functional as F
from ._common import activation, config_from_dict, decoder_mask, read_config
from ._generate import CausalLMOutput, KVCache, generate
from ._hub import load_checkpoint, load_weights

__all__ = ["GPT2Config", "Conv1D", "GPT2Model", "GPT2LMHeadModel"]


@dataclasses.dataclass
class GPT2Config:
    """The fields of a Hugging Face GPT-2 ``config.json`` that shape the model (defaults: gpt2, 124M)."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None  # feed-forward width; None means 4 * n_embd
    activation_function: str = "gelu_new"
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    bos_token_id: int = 50256
    eos_token_id: int = 50256
    tie_word_embeddings: bool = True

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"GPT2Config: n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")
        activation(self.activation_function)

    @classmethod
    def from_dict(cls, values: dict) -> GPT2Config:
        return config_from_dict(cls, values)


class Conv1D(Module):
    """GPT-2's linear layer: ``y = x @ weight + bias`` with ``weight`` of shape (nx, nf) =
    (in_features, out_features), the transpose of ``nn.Linear.weight``.

    >>> Conv1D(6, 4).weight.shape
    ember.Size([4, 6])
    """

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf, self.nx = nf, nx
        self.weight = Parameter(empty(nx, nf))
        self.bias = Parameter(empty(nf))
        init.normal_(self.weight, 0.0, 0.02)
        init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        # x @ weight as it is stored (as Hugging Face's addmm): the gradient comes out in the weight's own
        # layout, where F.linear(x, weight.T) would make it transposed (and copied into place)
        out = addmm(self.bias, x.reshape(-1, self.nx), self.weight)
        return out.view(*x.shape[:-1], self.nf)

    def extra_repr(self) -> str:
        return f"nf={self.nf}, nx={self.nx}"


class GPT2Attention(Module):
    """Causal multi-head self-attention; ``c_attn`` projects to q, k, v at once."""

    def __init__(self, config: GPT2Config, layer_idx: int) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.n_embd // config.n_head
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * config.n_embd, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_embd)
        self.attn_dropout_p = config.attn_pdrop
        self.resid_dropout = Dropout(config.resid_pdrop)
        scale = 1.0 / math.sqrt(self.head_dim) if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scale /= layer_idx + 1
        self.scale = scale

    def forward(self, x: Tensor, cache: KVCache | None, mask: Tensor | None, is_causal: bool) -> Tensor:
        b, s, e = x.shape
        qkv = self.c_attn(x).view(b, s, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=self.scale,
                                             dropout_p=self.attn_dropout_p if self.training else 0.0)
        return self.resid_dropout(self.c_proj(out.transpose(1, 2).reshape(b, s, e)))


class GPT2MLP(Module):
    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        inner = config.n_inner or 4 * config.n_embd
        self.c_fc = Conv1D(inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, inner)
        self.act = activation(config.activation_function)
        self.dropout = Dropout(config.resid_pdrop)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(Module):
    """Pre-norm block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, config: GPT2Config, layer_idx: int) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config)

    def forward(self, x: Tensor, cache: KVCache | None, mask: Tensor | None, is_causal: bool) -> Tensor:
        x = x + self.attn(self.ln_1(x), cache, mask, is_causal)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(Module):
    """The GPT-2 trunk: token (``wte``) and position (``wpe``) embeddings, blocks ``h.N``, ``ln_f``.

    ``forward(input_ids, attention_mask=None, position_ids=None, past_key_values=None,
    use_cache=False)`` returns ``(hidden_states, cache)``.
    """

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.wte = Embedding(config.vocab_size, config.n_embd)
        self.wpe = Embedding(config.n_positions, config.n_embd)
        self.drop = Dropout(config.embd_pdrop)
        self.h = ModuleList(GPT2Block(config, i) for i in range(config.n_layer))
        self.ln_f = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self._init_weights()

    def _init_weights(self) -> None:
        # Hugging Face's scheme: normal(0.02) everywhere, the residual projections shrunk by depth
        std = self.config.initializer_range
        with no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    init.normal_(p, 0.0, std / math.sqrt(2 * self.config.n_layer))
                elif name.endswith("weight") and p.dim() == 2:
                    init.normal_(p, 0.0, std)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                past_key_values: KVCache | None = None, use_cache: bool = False) -> tuple[Tensor, KVCache | None]:
        if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
            raise ValueError("GPT2Model: input_ids must be a (batch, seq) ember.Tensor of token ids")
        cache = past_key_values if past_key_values is not None else (KVCache() if use_cache else None)
        past = cache.get_seq_length() if cache is not None else 0
        seq = input_ids.shape[1]
        if past + seq > self.config.n_positions:
            raise ValueError(f"GPT2Model: {past + seq} positions exceed n_positions {self.config.n_positions}")
        if position_ids is None:
            position_ids = arange(past, past + seq, device=input_ids.device).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        mask, is_causal = decoder_mask(seq, past, attention_mask, x.device)
        for block in self.h:
            x = block(x, cache, mask, is_causal)
        return self.ln_f(x), cache


class GPT2LMHeadModel(Module):
    """GPT-2 with its language-model head: ``transformer`` (a GPT2Model) and ``lm_head``, whose
    weight is ``transformer.wte.weight`` (tied).

    ``forward(...)`` returns ``CausalLMOutput(logits, past_key_values)``; ``generate`` decodes
    (greedy, or sampling with temperature / top-k / top-p) with a key/value cache.
    """

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config)
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight
        else:
            with no_grad():
                init.normal_(self.lm_head.weight, 0.0, config.initializer_range)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                past_key_values: KVCache | None = None, use_cache: bool = False) -> CausalLMOutput:
        hidden, cache = self.transformer(input_ids, attention_mask, position_ids, past_key_values, use_cache)
        return CausalLMOutput(self.lm_head(hidden), cache)

    def generate(self, input_ids: Tensor, max_new_tokens: int = 20, **kwargs) -> Tensor:
        """Continue ``input_ids``; see ``ember.models.generate`` for the options. Stops at the
        config's ``eos_token_id`` unless ``eos_token_id=None`` is passed."""
        kwargs.setdefault("eos_token_id", self.config.eos_token_id)
        return generate(self, input_ids, max_new_tokens, **kwargs)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, strict: bool = True) -> GPT2LMHeadModel:
        """GPT-2 from a Hugging Face model directory (``config.json`` + ``model.safetensors`` or
        ``pytorch_model.bin``), read without torch. Keys with or without the ``transformer.``
        prefix load; the causal-mask buffers old checkpoints carry (``attn.bias``,
        ``attn.masked_bias``) are skipped. Returned in eval mode."""
        config = GPT2Config.from_dict(read_config(path))
        model = cls(config)
        state = load_checkpoint(path)

        def rename(key: str) -> str | None:
            if key.endswith((".attn.bias", ".attn.masked_bias")):
                return None
            if not key.startswith(("transformer.", "lm_head.")):
                key = "transformer." + key
            return key

        state = {rename(k): v for k, v in state.items() if rename(k) is not None}
        if config.tie_word_embeddings:
            # the head is the embedding: a checkpoint may store it twice, once, or not at all
            state.pop("lm_head.weight", None)
            state["lm_head.weight"] = state.get("transformer.wte.weight")
        load_weights(model, {k: v for k, v in state.items() if v is not None}, strict=strict)
        return model.eval()
