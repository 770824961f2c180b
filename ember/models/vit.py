"""Vision transformers with torchvision's module and parameter names (``conv_proj``, ``class_token``,
``encoder.pos_embedding``, ``encoder.layers.encoder_layer_N.{ln_1, self_attention, ln_2, mlp.0,
mlp.3}``, ``encoder.ln``, ``heads.head``), so torchvision ``vit_b_16``-style checkpoints load key
by key. Every size is a constructor argument, so small ones are cheap to build.

>>> model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
...                           mlp_dim=32, num_classes=10).eval()
>>> model(ember.randn(2, 3, 32, 32)).shape
ember.Size([2, 10])
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict

from .._creation import empty, zeros
from .._movement import cat
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import GELU, Conv2d, Dropout, LayerNorm, Linear, Module, MultiheadAttention, Parameter, Sequential, Tanh, init
from ._hub import from_file

__all__ = ["VisionTransformer", "EncoderBlock", "Encoder", "vit_b_16", "vit_b_32", "vit_l_16"]


class MLPBlock(Sequential):
    """``Sequential(Linear, GELU, Dropout, Linear, Dropout)``: parameters ``0.*`` and ``3.*``."""

    def __init__(self, dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(Linear(dim, mlp_dim), GELU(), Dropout(dropout), Linear(mlp_dim, dim), Dropout(dropout))
        with no_grad():
            for m in (self[0], self[3]):
                init.xavier_uniform_(m.weight)
                init.normal_(m.bias, std=1e-6)


class EncoderBlock(Module):
    """Pre-norm transformer block: ``x + self_attention(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 eps: float = 1e-6) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(hidden_dim, eps=eps)
        self.self_attention = MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = Dropout(dropout)
        self.ln_2 = LayerNorm(hidden_dim, eps=eps)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, x: Tensor) -> Tensor:
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + self.dropout(y)
        return x + self.mlp(self.ln_2(x))


class Encoder(Module):
    """Learned position embedding (``pos_embedding``, (1, seq, hidden)), dropout, the blocks
    (``layers.encoder_layer_N``) and a final LayerNorm (``ln``)."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float, eps: float = 1e-6) -> None:
        super().__init__()
        self.pos_embedding = Parameter(empty(1, seq_length, hidden_dim))
        with no_grad():
            init.normal_(self.pos_embedding, std=0.02)
        self.dropout = Dropout(dropout)
        self.layers = Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, eps))
            for i in range(num_layers)))
        self.ln = LayerNorm(hidden_dim, eps=eps)

    def forward(self, x: Tensor) -> Tensor:
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(Module):
    """ViT: ``conv_proj`` cuts the image into ``patch_size`` patches and embeds each; a learned
    ``class_token`` is prepended; the encoder runs; ``heads`` classify the class token's output
    (``heads.head``, or ``pre_logits`` + tanh + ``head`` with ``representation_size``).

    Inputs must be ``image_size`` square (the position embedding has one entry per patch).
    """

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None) -> None:
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"VisionTransformer: image_size {image_size} is not a multiple of patch_size "
                             f"{patch_size}")
        self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, hidden_dim
        self.mlp_dim, self.num_classes, self.representation_size = mlp_dim, num_classes, representation_size
        self.conv_proj = Conv2d(3, hidden_dim, patch_size, stride=patch_size)
        self.class_token = Parameter(zeros(1, 1, hidden_dim))
        seq_length = (image_size // patch_size) ** 2 + 1
        self.seq_length = seq_length
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
        heads: OrderedDict[str, Module] = OrderedDict()
        if representation_size is None:
            heads["head"] = Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = Linear(hidden_dim, representation_size)
            heads["act"] = Tanh()
            heads["head"] = Linear(representation_size, num_classes)
        self.heads = Sequential(heads)
        with no_grad():
            fan_in = 3 * patch_size * patch_size
            init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            init.zeros_(self.conv_proj.bias)
            if representation_size is not None:
                init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
                init.zeros_(self.heads.pre_logits.bias)
            init.zeros_(self.heads.head.weight)
            init.zeros_(self.heads.head.bias)

    def _patches(self, x: Tensor) -> Tensor:
        if x.dim() != 4 or x.shape[1] != 3 or x.shape[2] != self.image_size or x.shape[3] != self.image_size:
            raise ValueError(f"VisionTransformer: expected images (N, 3, {self.image_size}, {self.image_size}), "
                             f"got {list(x.shape)}")
        n = x.shape[0]
        x = self.conv_proj(x)  # (N, hidden, H/p, W/p)
        return x.reshape(n, self.hidden_dim, -1).permute(0, 2, 1)  # (N, patches, hidden)

    def forward(self, x: Tensor) -> Tensor:
        x = self._patches(x)
        token = self.class_token.expand(x.shape[0], -1, -1)
        x = self.encoder(cat([token, x], dim=1))
        return self.heads(x[:, 0])


def _build(weights, **kwargs) -> VisionTransformer:
    model = VisionTransformer(**kwargs)
    if weights is not None:
        from_file(model, weights)
        model.eval()
    return model


def vit_b_16(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, image_size: int = 224,
             **kwargs) -> VisionTransformer:
    """ViT-B/16: 16x16 patches, 12 layers, 12 heads, width 768, MLP 3072 (86M parameters).
    ``weights``: a torchvision checkpoint file to load, read without torch (then eval mode)."""
    return _build(weights, image_size=image_size, patch_size=16, num_layers=12, num_heads=12, hidden_dim=768,
                  mlp_dim=3072, num_classes=num_classes, **kwargs)


def vit_b_32(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, image_size: int = 224,
             **kwargs) -> VisionTransformer:
    """ViT-B/32: as ViT-B/16 with 32x32 patches."""
    return _build(weights, image_size=image_size, patch_size=32, num_layers=12, num_heads=12, hidden_dim=768,
                  mlp_dim=3072, num_classes=num_classes, **kwargs)


def vit_l_16(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, image_size: int = 224,
             **kwargs) -> VisionTransformer:
    """ViT-L/16: 24 layers, 16 heads, width 1024, MLP 4096 (304M parameters)."""
    return _build(weights, image_size=image_size, patch_size=16, num_layers=24, num_heads=16, hidden_dim=1024,
                  mlp_dim=4096, num_classes=num_classes, **kwargs)
