"""BERT encoders with Hugging Face's module and parameter names, so ``transformers`` checkpoints
(``bert-base-uncased``, ``sentence-transformers/all-MiniLM-L6-v2``, ...) load key by key, and
sentence embeddings (mean pooling over the real tokens, then L2 normalisation).

>>> cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
...                  intermediate_size=32, max_position_embeddings=20)
>>> model = BertModel(cfg).eval()
>>> out = model(ember.tensor([[1, 5, 7, 2]]))
>>> out.last_hidden_state.shape, out.pooler_output.shape
(ember.Size([1, 4, 16]), ember.Size([1, 16]))
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import NamedTuple

from .. import _dtype as dt
from .._creation import arange, zeros_like
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, init
from ..nn import functional as F
from ._common import activation, config_from_dict, padding_mask, read_config
from ._hub import load_checkpoint, load_weights

__all__ = ["BertConfig", "BertModel", "BertModelOutput", "SentenceEncoder", "mean_pooling"]


@dataclasses.dataclass
class BertConfig:
    """The fields of a Hugging Face BERT ``config.json`` that shape the model (defaults: bert-base)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig: hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.position_embedding_type != "absolute":
            raise ValueError(f"BertConfig: position_embedding_type {self.position_embedding_type!r} is not "
                             "supported (only 'absolute')")
        activation(self.hidden_act)  # fail early on an unknown name

    @classmethod
    def from_dict(cls, values: dict) -> BertConfig:
        return config_from_dict(cls, values)


class BertModelOutput(NamedTuple):
    last_hidden_state: Tensor  # (batch, seq, hidden)
    pooler_output: Tensor | None  # (batch, hidden): tanh(dense(first token)), None without a pooler


class BertEmbeddings(Module):
    """Word + position + token-type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        seq = input_ids.shape[1]
        if seq > self.position_embeddings.num_embeddings:
            raise ValueError(f"BertModel: sequence of {seq} tokens is longer than max_position_embeddings "
                             f"{self.position_embeddings.num_embeddings}")
        if position_ids is None:
            position_ids = arange(seq, device=input_ids.device).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(Module):
    """Multi-head scaled dot-product attention with separate ``query``/``key``/``value`` projections."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = Linear(config.hidden_size, config.hidden_size)
        self.key = Linear(config.hidden_size, config.hidden_size)
        self.value = Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.view(b, s, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

    def forward(self, hidden: Tensor, mask: Tensor | None) -> Tensor:
        q, k, v = self._heads(self.query(hidden)), self._heads(self.key(hidden)), self._heads(self.value(hidden))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout_p if self.training else 0.0)
        b, _, s, _ = out.shape
        return out.transpose(1, 2).reshape(b, s, self.num_attention_heads * self.attention_head_size)


class BertSelfOutput(Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden: Tensor, mask: Tensor | None) -> Tensor:
        return self.output(self.self(hidden, mask), hidden)


class BertIntermediate(Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.act = activation(config.hidden_act)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.act(self.dense(hidden))


class BertOutput(BertSelfOutput):
    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.dense = Linear(config.intermediate_size, config.hidden_size)


class BertLayer(Module):
    """Post-norm transformer block: attention, then the feed-forward (intermediate + output)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden: Tensor, mask: Tensor | None) -> Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, hidden: Tensor, mask: Tensor | None) -> Tensor:
        for layer in self.layer:
            hidden = layer(hidden, mask)
        return hidden


class BertPooler(Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.dense(hidden[:, 0]).tanh()


class BertModel(Module):
    """The BERT encoder: ``embeddings``, ``encoder.layer.N``, ``pooler``, Hugging Face's names.

    ``forward(input_ids, attention_mask=None, token_type_ids=None, position_ids=None)`` takes
    (batch, seq) int tensors (``attention_mask``: 1 for real tokens, 0 for padding) and returns
    ``BertModelOutput(last_hidden_state, pooler_output)``. Weights start as Hugging Face's
    (normal(0, initializer_range), LayerNorm ones/zeros); ``from_pretrained`` loads a checkpoint.
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self._init_weights()

    def _init_weights(self) -> None:
        std = self.config.initializer_range
        with no_grad():
            for m in self.modules():
                if isinstance(m, Linear):
                    init.normal_(m.weight, 0.0, std)
                    init.zeros_(m.bias)
                elif isinstance(m, Embedding):
                    init.normal_(m.weight, 0.0, std)
                    if m.padding_idx is not None:
                        m.weight[m.padding_idx].zero_()

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None) -> BertModelOutput:
        if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
            raise ValueError("BertModel: input_ids must be a (batch, seq) ember.Tensor of token ids")
        if attention_mask is not None and attention_mask.shape != input_ids.shape:
            raise ValueError(f"BertModel: attention_mask {list(attention_mask.shape)} must match input_ids "
                             f"{list(input_ids.shape)}")
        hidden = self.embeddings(input_ids, token_type_ids, position_ids)
        if attention_mask is not None and bool(attention_mask.all()):
            attention_mask = None  # nothing is padding: attention without a mask takes the faster path
        hidden = self.encoder(hidden, padding_mask(attention_mask))
        pooled = self.pooler(hidden) if self.pooler is not None else None
        return BertModelOutput(hidden, pooled)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, add_pooling_layer: bool = True,
                        strict: bool = True) -> BertModel:
        """A BertModel from a Hugging Face model directory: ``config.json`` plus
        ``model.safetensors`` (or ``pytorch_model.bin``, or shards), read without torch.

        Keys of task models (``bert.encoder...``) lose their ``bert.`` prefix; their heads and the
        ``position_ids`` buffer older checkpoints carry are skipped. Returned in eval mode.
        """
        config = BertConfig.from_dict(read_config(path))
        model = cls(config, add_pooling_layer=add_pooling_layer)
        state = load_checkpoint(path)
        prefixed = any(k.startswith("bert.") for k in state)

        def rename(key: str) -> str | None:
            if prefixed:
                if not key.startswith("bert."):
                    return None  # a task head (cls.predictions..., classifier...)
                key = key[len("bert."):]
            if key.endswith("position_ids") or (not add_pooling_layer and key.startswith("pooler.")):
                return None
            return key

        load_weights(model, state, rename=rename, strict=strict)
        return model.eval()


def mean_pooling(last_hidden_state: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """The mean of each sequence's token vectors over its real tokens (attention_mask 1):
    (batch, seq, hidden) -> (batch, hidden).

    >>> mean_pooling(ember.ones(1, 3, 2), ember.tensor([[1, 1, 0]])).tolist()
    [[1.0, 1.0]]
    """
    if attention_mask is None:
        return last_hidden_state.mean(1)
    weights = attention_mask.to(last_hidden_state.dtype).unsqueeze(-1)
    total = (last_hidden_state * weights).sum(1)
    return total / weights.sum(1).clamp(min=1e-9)


class SentenceEncoder:
    """Sentence embeddings the sentence-transformers way: tokenize, run BERT, mean-pool the real
    tokens and L2-normalise, e.g. with all-MiniLM-L6-v2's files.

    ``SentenceEncoder.from_pretrained(dir)`` reads ``config.json``, the weights and
    ``tokenizer.json`` (needs the ``tokenizers`` package: ``pip install ember[text]``);
    ``encode(sentences)`` returns a (n, hidden) float32 tensor whose rows have unit length, so
    ``a @ b.T`` are cosine similarities.
    """

    def __init__(self, model: BertModel, tokenizer, max_seq_length: int | None = None,
                 normalize: bool = True) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length or model.config.max_position_embeddings
        self.normalize = normalize

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, max_seq_length: int | None = None) -> SentenceEncoder:
        """Model, tokenizer and (if present) sentence-transformers' ``sentence_bert_config.json``
        maximum length from one directory."""
        import json

        from .tokenizer import Tokenizer
        model = BertModel.from_pretrained(path, add_pooling_layer=False)
        tokenizer = Tokenizer.from_pretrained(path)
        st_config = os.path.join(os.fspath(path), "sentence_bert_config.json")
        if max_seq_length is None and os.path.exists(st_config):
            with open(st_config, encoding="utf-8") as f:
                max_seq_length = json.load(f).get("max_seq_length")
        return cls(model, tokenizer, max_seq_length)

    def tokenize(self, sentences: Sequence[str]) -> dict[str, Tensor]:
        """``input_ids``, ``attention_mask`` and ``token_type_ids`` (batch, longest) for ``sentences``."""
        return self.tokenizer(list(sentences), padding=True, truncation=True, max_length=self.max_seq_length)

    def encode(self, sentences: str | Sequence[str], batch_size: int = 32) -> Tensor:
        """Embeddings of ``sentences`` (a string gives one row), computed ``batch_size`` at a time."""
        from .._movement import cat
        if isinstance(sentences, str):
            sentences = [sentences]
        if not sentences:
            raise ValueError("SentenceEncoder.encode: no sentences given")
        rows = []
        with no_grad():
            for i in range(0, len(sentences), batch_size):
                batch = self.tokenize(sentences[i:i + batch_size])
                out = self.model(batch["input_ids"], attention_mask=batch["attention_mask"],
                                 token_type_ids=batch["token_type_ids"])
                pooled = mean_pooling(out.last_hidden_state, batch["attention_mask"])
                rows.append(F.normalize(pooled, p=2.0, dim=1) if self.normalize else pooled)
        return cat(rows, 0).to(dt.float32)
