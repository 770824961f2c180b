"""Pieces the transformer models share: configs read from Hugging Face ``config.json`` dicts,
activation names, and the attention masks of causal decoders with a key/value cache.

>>> from ember.models._common import activation
>>> activation("gelu_new")(ember.zeros(2)).tolist()
[0.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _dtype as dt
from .._creation import arange
from .._tensor import Tensor
from ..nn import functional as F

C = TypeVar("C")


def config_from_dict(cls: type[C], values: dict[str, Any]) -> C:
    """An instance of the dataclass ``cls`` from a config dict; keys the dataclass does not know
    (Hugging Face configs carry many: ``architectures``, ``torch_dtype``, ...) are ignored."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def read_config(path: str | os.PathLike) -> dict[str, Any]:
    """The dict in ``config.json`` of a model directory (or the given json file)."""
    path = os.fspath(path)
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    if not os.path.exists(file):
        raise FileNotFoundError(f"no config.json in {path!r}: a pretrained model directory needs the model's "
                                "config.json next to its weights")
    with open(file, encoding="utf-8") as f:
        return json.load(f)


def _gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


# Hugging Face's ``hidden_act`` / ``activation_function`` names
_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": F.gelu,
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_fast": _gelu_tanh,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": Tensor.tanh,
}


def activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation function a Hugging Face config names (``gelu``, ``gelu_new``, ``silu``, ...)."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unsupported activation {name!r}; ember.models knows {sorted(_ACTIVATIONS)}") from None


def decoder_mask(q_len: int, past: int, attention_mask: Tensor | None, device) -> tuple[Tensor | None, bool]:
    """The attention mask of a causal decoder: ``(bool mask or None, is_causal)`` for
    ``scaled_dot_product_attention``.

    Query ``i`` (absolute position ``past + i``) sees keys ``0 .. past + i``; ``attention_mask``
    (batch, past + q_len) of 1/0 also hides padding keys. Without padding, a prompt without a
    cache uses ``is_causal`` and a single new token needs no mask at all.
    """
    total = past + q_len
    if attention_mask is None:
        if past == 0:
            return None, q_len > 1
        if q_len == 1:
            return None, False
    keys = arange(total, device=device)
    queries = arange(past, total, device=device)
    mask = keys.unsqueeze(0) <= queries.unsqueeze(1)  # (L, S)
    if attention_mask is not None:
        if attention_mask.dim() != 2 or attention_mask.shape[1] != total:
            raise ValueError(f"attention_mask must be (batch, {total}) for {past} cached and {q_len} new tokens, "
                             f"got {list(attention_mask.shape)}")
        pad = attention_mask.to(dt.bool)[:, None, None, :]  # (B, 1, 1, S)
        mask = mask & pad
    return mask, False


def padding_mask(attention_mask: Tensor | None) -> Tensor | None:
    """A (batch, seq) 1/0 mask as the bool (batch, 1, 1, seq) mask of ``scaled_dot_product_attention``
    (True = may attend); None stays None."""
    if attention_mask is None:
        return None
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must be (batch, seq), got {list(attention_mask.shape)}")
    return attention_mask.to(dt.bool)[:, None, None, :]


def positions_from_mask(attention_mask: Tensor, q_len: int) -> Tensor:
    """Position ids of the last ``q_len`` tokens when sequences are left-padded: each real
    token's position counts the real tokens before it (padding gets position 0)."""
    pos = attention_mask.to(dt.int64).cumsum(-1) - 1
    pos = pos.clamp(min=0)
    return pos[:, -q_len:]
