"""Text generation for the causal language models (GPT-2, Llama): a key/value cache and a
decoding loop with greedy, temperature, top-k and top-p (nucleus) sampling.

A model plugs in by accepting ``model(input_ids, attention_mask=..., position_ids=...,
past_key_values=cache, use_cache=...)`` and returning an object with ``.logits`` (batch, seq,
vocab) and ``.past_key_values``.

>>> cache = KVCache()
>>> k, v = cache.update(0, ember.zeros(1, 2, 3, 4), ember.zeros(1, 2, 3, 4))
>>> cache.get_seq_length()
3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .. import _dtype as dt
from .._creation import ones, ones_like, tensor
from .._movement import cat
from .._random import multinomial
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._common import positions_from_mask


class CausalLMOutput(NamedTuple):
    """What the language models return: ``logits`` (batch, seq, vocab) and the cache (or None)."""

    logits: Tensor
    past_key_values: KVCache | None


class KVCache:
    """The keys and values every attention layer has seen, each (batch, kv_heads, seq, head_dim).

    ``update(layer, k, v)`` appends the new positions of one layer and returns all of them, so a
    decoding step only computes the new token's keys and values.
    """

    def __init__(self) -> None:
        self.keys: list[Tensor] = []
        self.values: list[Tensor] = []

    def update(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        if layer == len(self.keys):
            self.keys.append(key)
            self.values.append(value)
        elif layer < len(self.keys):
            self.keys[layer] = cat([self.keys[layer], key], dim=-2)
            self.values[layer] = cat([self.values[layer], value], dim=-2)
        else:
            raise IndexError(f"KVCache.update: layer {layer} updated before layer {len(self.keys)}")
        return self.keys[layer], self.values[layer]

    def get_seq_length(self) -> int:
        """How many positions are cached (0 when empty)."""
        return int(self.keys[0].shape[-2]) if self.keys else 0

    def __len__(self) -> int:
        return len(self.keys)


def _filter_logits(logits: Tensor, top_k: int | None, top_p: float | None) -> Tensor:
    """Logits outside the top ``k`` / the smallest set whose probability reaches ``top_p`` set to -inf."""
    if top_k is not None:
        k = min(int(top_k), logits.shape[-1])
        kth = logits.topk(k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        ordered, order = logits.sort(dim=-1, descending=True)
        probs = ordered.softmax(-1)
        before = probs.cumsum(-1) - probs  # probability of the tokens ranked above each one
        drop_sorted = before >= top_p  # the first token is always kept (before = 0)
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def next_token(logits: Tensor, *, do_sample: bool, temperature: float, top_k: int | None, top_p: float | None,
               generator=None) -> Tensor:
    """One token id per row of ``logits`` (batch, vocab): the argmax, or a sample from the
    temperature-scaled, top-k/top-p filtered softmax."""
    if not do_sample:
        return logits.argmax(-1)
    if temperature <= 0:
        raise ValueError(f"generate: temperature must be positive when sampling, got {temperature}")
    logits = _filter_logits(logits.float() / float(temperature), top_k, top_p)
    return multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


def generate(model, input_ids: Tensor, max_new_tokens: int = 20, *, attention_mask: Tensor | None = None,
             do_sample: bool = False, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             eos_token_id: int | Sequence[int] | None = None, pad_token_id: int | None = None, use_cache: bool = True,
             generator=None) -> Tensor:
    """Extend ``input_ids`` (batch, seq) by up to ``max_new_tokens`` tokens; returns (batch, seq + n).

    Greedy unless ``do_sample`` (then ``temperature``, ``top_k``, ``top_p`` and ``generator``
    apply). Batches of different lengths are left-padded, with ``attention_mask`` marking the
    real tokens (1) and the padding (0). A row that produced ``eos_token_id`` continues with
    ``pad_token_id`` (default: the eos id); generation stops when every row has finished.
    ``eos_token_id`` may be a list of ids (any of them ends a row).
    ``use_cache=False`` recomputes the whole sequence each step (same tokens, slower).
    """
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2:
        raise ValueError("generate: input_ids must be a (batch, seq) ember.Tensor of token ids")
    if input_ids.shape[1] == 0:
        raise ValueError("generate: input_ids needs at least one token per row")
    if max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be >= 0, got {max_new_tokens}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"generate: top_k must be >= 1, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"generate: top_p must be in (0, 1], got {top_p}")
    ids = input_ids.to(dt.int64)
    mask = ones_like(ids) if attention_mask is None else attention_mask.to(dt.int64)
    if mask.shape != ids.shape:
        raise ValueError(f"generate: attention_mask {list(mask.shape)} must match input_ids {list(ids.shape)}")
    padded = attention_mask is not None and not bool(mask.all())
    eos = [] if eos_token_id is None else [int(eos_token_id)] if isinstance(eos_token_id, int) else \
        [int(e) for e in eos_token_id]
    pad = (eos[0] if eos else 0) if pad_token_id is None else int(pad_token_id)
    eos_ids = tensor(eos, dtype=dt.int64, device=ids.device) if eos else None
    finished = None
    cache = None
    with no_grad():
        for step in range(max_new_tokens):
            new = ids[:, -1:] if (use_cache and step > 0) else ids
            out = model(new, attention_mask=mask if padded else None,
                        position_ids=positions_from_mask(mask, new.shape[1]) if padded else None,
                        past_key_values=cache, use_cache=use_cache)
            cache = out.past_key_values if use_cache else None
            token = next_token(out.logits[:, -1, :], do_sample=do_sample, temperature=temperature, top_k=top_k,
                               top_p=top_p, generator=generator)
            if eos_ids is not None:
                if finished is not None:
                    token = token.masked_fill(finished, pad)
                ended = (token.unsqueeze(-1) == eos_ids).any(-1)
                finished = ended if finished is None else finished | ended
            ids = cat([ids, token.unsqueeze(1)], dim=1)
            mask = cat([mask, ones(mask.shape[0], 1, dtype=dt.int64, device=mask.device)], dim=1)
            if finished is not None and bool(finished.all()):
                break
    return ids
