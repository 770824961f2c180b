"""Tokenization for ``ember.models`` through Hugging Face's ``tokenizers`` library (the optional
extra ``pip install ember[text]``): a ``tokenizer.json`` becomes batches of ember tensors.

>>> Tokenizer.from_pretrained("/nonexistent")  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
FileNotFoundError: no tokenizer.json in '/nonexistent'...
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import _dtype as dt
from .._creation import tensor
from .._tensor import Tensor


def _tokenizers():
    try:
        import tokenizers
    except ImportError:
        raise ImportError("ember.models tokenization needs the 'tokenizers' package: pip install ember[text] "
                          "(or pip install tokenizers)") from None
    return tokenizers


class Tokenizer:
    """A ``tokenizers.Tokenizer`` that returns ember tensors.

    ``tok(texts, padding=True, truncation=True, max_length=None)`` gives a dict of (batch, seq)
    int64 tensors ``input_ids``, ``attention_mask`` and ``token_type_ids``; ``encode(text)`` /
    ``decode(ids)`` work on one text. Padding is on the side the tokenizer file says (right for
    BERT); pass ``padding_side="left"`` for batched generation with decoder models.
    """

    def __init__(self, tokenizer) -> None:
        self._tok = tokenizer
        padding = tokenizer.padding or {}
        truncation = tokenizer.truncation or {}
        self.pad_token_id: int | None = padding.get("pad_id")
        self.pad_token: str | None = padding.get("pad_token")
        self.padding_side: str = padding.get("direction", "right").lower()
        self.model_max_length: int | None = truncation.get("max_length")
        # the file's own padding/truncation would fight the per-call arguments: switch them off
        tokenizer.no_padding()
        tokenizer.no_truncation()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Tokenizer:
        """Load a ``tokenizer.json``."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no tokenizer file {path!r}")
        return cls(_tokenizers().Tokenizer.from_file(path))

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike) -> Tokenizer:
        """Load ``tokenizer.json`` from a model directory (or the file itself)."""
        path = os.fspath(path)
        file = os.path.join(path, "tokenizer.json") if not path.endswith(".json") else path
        if not os.path.isfile(file):
            held = sorted(os.listdir(path)) if os.path.isdir(path) else []
            raise FileNotFoundError(f"no tokenizer.json in {path!r} (holds {held}); ember.models reads the fast "
                                    "tokenizer file that Hugging Face model repositories ship as tokenizer.json")
        return cls.from_file(file)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of one text."""
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int] | Tensor, skip_special_tokens: bool = True) -> str:
        """The text of a sequence of ids (a list or a 1-d tensor)."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def __call__(self, texts: str | Sequence[str], *, padding: bool = True, truncation: bool = True,
                 max_length: int | None = None, add_special_tokens: bool = True,
                 padding_side: str | None = None) -> dict[str, Tensor]:
        """Encode a batch of texts (a single string is a batch of one) to (batch, seq) int64 tensors.

        ``padding`` pads to the longest text (required when lengths differ); ``truncation`` cuts
        each text to ``max_length`` (default: the tokenizer file's maximum, if it has one).
        """
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not texts:
            raise ValueError("Tokenizer: no texts given")
        limit = max_length if max_length is not None else self.model_max_length
        encodings = self._encode(texts, add_special_tokens, int(limit) if truncation and limit is not None else None)
        longest = max(len(e.ids) for e in encodings)
        side = (padding_side or self.padding_side).lower()
        if side not in ("left", "right"):
            raise ValueError(f"Tokenizer: padding_side must be 'left' or 'right', got {side!r}")
        if not padding and any(len(e.ids) != longest for e in encodings):
            raise ValueError("Tokenizer: texts of different lengths need padding=True to form a batch")
        pad_id = self.pad_token_id if self.pad_token_id is not None else 0
        columns: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": [], "token_type_ids": []}
        for e in encodings:
            fill = longest - len(e.ids)
            rows = (e.ids, e.attention_mask, e.type_ids)
            pads = (pad_id, 0, 0)
            for column, row, p in zip(columns.values(), rows, pads):
                column.append([p] * fill + list(row) if side == "left" else list(row) + [p] * fill)
        return {k: tensor(v, dtype=dt.int64) for k, v in columns.items()}

    def _encode(self, texts: list[str], add_special_tokens: bool, limit: int | None) -> list:
        """Encodings of ``texts``, cut to ``limit`` tokens the way ``transformers`` cuts them: the
        special tokens ([CLS] ... [SEP]) stay and the text loses its end."""
        tok = self._tok
        if limit is None:
            return tok.encode_batch(texts, add_special_tokens=add_special_tokens)
        tok.enable_truncation(limit)
        try:
            return tok.encode_batch(texts, add_special_tokens=add_special_tokens)
        finally:
            tok.no_truncation()
