"""Adapters for :func:`~ember.store.load_into`: renaming and converting checkpoint entries.

An adapter has two methods, both optional to override (subclass :class:`Adapter`):

* ``rename(key) -> str | None``: the module key for a checkpoint key (None drops the entry);
* ``convert(key, value, target) -> Tensor``: the value to copy, given the module's tensor
  ``target`` under that (renamed) key.

ember.nn keeps PyTorch's layouts (Linear ``(out, in)``, Conv ``(out, in/groups, *kernel)``,
ConvTranspose ``(in, out/groups, *kernel)``), so torch checkpoints need no layout adapter; the
adapters here cover naming conventions and the one common layout difference, GPT-2's ``Conv1D``.

>>> from ember.store import adapters
>>> a = adapters.chain(adapters.hf(), adapters.rename(lambda k: k.removeprefix("bert.")))
>>> a.rename("bert.embeddings.LayerNorm.gamma")
'embeddings.LayerNorm.weight'
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._tensor import Tensor

__all__ = ["Adapter", "chain", "drop", "hf", "rename", "transpose"]


class Adapter:
    """The identity adapter; subclass and override ``rename`` and/or ``convert``."""

    def rename(self, key: str) -> str | None:
        return key

    def convert(self, key: str, value: Tensor, target: Tensor | None) -> Tensor:
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Chain(Adapter):
    def __init__(self, parts: tuple[Adapter, ...]):
        self.parts = parts

    def rename(self, key):
        for p in self.parts:
            key = p.rename(key)
            if key is None:
                return None
        return key

    def convert(self, key, value, target):
        for p in self.parts:
            value = p.convert(key, value, target)
        return value

    def __repr__(self):
        return f"chain({', '.join(map(repr, self.parts))})"


def chain(*adapters: Adapter) -> Adapter:
    """Apply several adapters in order (renames compose; conversions run one after another)."""
    for a in adapters:
        if not (hasattr(a, "rename") and hasattr(a, "convert")):
            raise TypeError(f"chain: {a!r} is not an adapter (needs rename and convert methods)")
    return _Chain(tuple(adapters))


class _Rename(Adapter):
    def __init__(self, fn: Callable[[str], str | None]):
        self.fn = fn

    def rename(self, key):
        return self.fn(key)

    def __repr__(self):
        return f"rename({getattr(self.fn, '__name__', self.fn)!r})"


def rename(fn: Callable[[str], str | None]) -> Adapter:
    """An adapter from a function of the key (return None to drop the entry)."""
    if not callable(fn):
        raise TypeError(f"rename needs a function, got {type(fn).__name__}")
    return _Rename(fn)


def drop(*patterns: str) -> Adapter:
    """Drop the checkpoint entries whose key matches a regex (reported as skipped, not unexpected):
    e.g. GPT-2's constant ``attn.bias`` causal masks.

    >>> drop(r"\\.attn\\.(bias|masked_bias)$").rename("h.0.attn.bias") is None
    True
    """
    if not patterns:
        raise ValueError("drop needs at least one key pattern")
    return _Drop(tuple(re.compile(p) for p in patterns))


class _Drop(Adapter):
    def __init__(self, patterns: tuple[re.Pattern, ...]):
        self.patterns = patterns

    def rename(self, key):
        return None if any(p.search(key) for p in self.patterns) else key

    def __repr__(self):
        return f"drop({', '.join(repr(p.pattern) for p in self.patterns)})"


_GAMMA_BETA = re.compile(r"(^|\.)(gamma|beta)$")


class _HF(Adapter):
    def __init__(self, layer_norm: str | None):
        self.layer_norm = layer_norm

    def rename(self, key):
        # TF-era checkpoints (original BERT conversions) call LayerNorm's affine parameters gamma/beta
        key = _GAMMA_BETA.sub(lambda m: m.group(1) + ("weight" if m.group(2) == "gamma" else "bias"), key)
        if self.layer_norm is not None:
            key = re.sub(r"(^|\.)LayerNorm(\.|$)", lambda m: m.group(1) + self.layer_norm + m.group(2), key)
        return key

    def __repr__(self):
        return f"hf(layer_norm={self.layer_norm!r})"


def hf(layer_norm: str | None = None) -> Adapter:
    """Hugging Face naming: ``gamma``/``beta`` -> ``weight``/``bias``; with ``layer_norm="norm"`` the
    ``LayerNorm`` module name becomes ``norm`` (HF names its LayerNorm submodules ``LayerNorm``).

    >>> hf(layer_norm="ln").rename("encoder.layer.0.output.LayerNorm.beta")
    'encoder.layer.0.output.ln.bias'
    """
    if layer_norm is not None and (not isinstance(layer_norm, str) or not layer_norm.isidentifier()):
        raise ValueError(f"hf: layer_norm must be a module attribute name, got {layer_norm!r}")
    return _HF(layer_norm)


class _Transpose(Adapter):
    def __init__(self, patterns: tuple[re.Pattern, ...]):
        self.patterns = patterns

    def convert(self, key, value, target):
        if value.ndim == 2 and any(p.search(key) for p in self.patterns):
            return value.t().contiguous()
        return value

    def __repr__(self):
        return f"transpose({', '.join(repr(p.pattern) for p in self.patterns)})"


def transpose(*patterns: str) -> Adapter:
    """Transpose the 2-D entries whose (renamed) key matches a regex: GPT-2's ``Conv1D`` stores
    ``(in, out)`` weights, ``nn.Linear`` wants ``(out, in)``.

    >>> a = transpose(r"attn\\.c_attn\\.weight$")
    >>> a.convert("h.0.attn.c_attn.weight", ember.zeros(4, 12), None).shape
    ember.Size([12, 4])
    """
    if not patterns:
        raise ValueError("transpose needs at least one key pattern")
    return _Transpose(tuple(re.compile(p) for p in patterns))
