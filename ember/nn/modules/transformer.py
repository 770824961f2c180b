"""Attention and transformer layers: MultiheadAttention, TransformerEncoderLayer/Encoder,
TransformerDecoderLayer/Decoder and Transformer, with torch.nn's arguments, submodule and
parameter names (a torch state_dict loads by key), mask conventions and ``norm_first``.

Masks follow PyTorch: a bool ``attn_mask`` / ``key_padding_mask`` marks positions that may NOT be
attended (True = masked); a float mask is added to the attention scores.

>>> layer = ember.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
>>> enc = ember.nn.TransformerEncoder(layer, num_layers=2)
>>> enc(ember.randn(3, 5, 8)).shape
ember.Size([3, 5, 8])
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

from ... import _dtype as dt
from ..._creation import empty, ones, zeros
from ..._movement import cat
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..container import ModuleList
from ..module import Module
from ..parameter import Parameter
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


# ---- masks ------------------------------------------------------------------------------------------
def _additive(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A bool mask (True = masked) as 0/-inf of ``dtype``; a float mask as is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be an ember.Tensor or None, got {type(mask).__name__}")
    if mask.dtype is dt.bool:
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """One more (unmasked) key column, for the extra key of add_bias_kv / add_zero_attn."""
    return None if mask is None else F.pad(mask, (0, 1))


class MultiheadAttention(Module):
    """Multi-head attention: ``out_proj(concat_h softmax(q_h k_hᵀ / sqrt(d) + mask) v_h)``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights)``; inputs are
    (L, N, E) (or (N, L, E) with ``batch_first``, or unbatched (L, E)); ``attn_mask`` is (L, S)
    or (N*num_heads, L, S); ``key_padding_mask`` (N, S). Weights are (N, L, S) averaged over
    heads, (N, num_heads, L, S) otherwise, or None when ``need_weights=False`` (which takes the
    fused scaled_dot_product_attention path). ``is_causal`` is only a hint that ``attn_mask`` is
    causal, as in PyTorch: the mask is still required.

    With ``kdim``/``vdim`` different from ``embed_dim`` the projections are separate
    ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``; otherwise one packed
    ``in_proj_weight`` (3E, E). ``add_bias_kv`` appends learnt ``bias_k``/``bias_v`` to the keys
    and values; ``add_zero_attn`` a zero key/value.

    >>> mha = ember.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> out, w = mha(ember.randn(2, 3, 8), ember.randn(2, 5, 8), ember.randn(2, 5, 8))
    >>> out.shape, w.shape
    (ember.Size([2, 3, 8]), ember.Size([2, 3, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's scheme: xavier-uniform input projections, zero biases, xavier-normal bias_k/v
        (out_proj's weight keeps Linear's default)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        E = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        if not self._qkv_same_embed_dim:
            return (F.linear(query, self.q_proj_weight, bq), F.linear(key, self.k_proj_weight, bk),
                    F.linear(value, self.v_proj_weight, bv))
        w = self.in_proj_weight
        if query is key and key is value:  # self-attention: one matmul for q, k and v
            qkv = F.linear(query, w, b)
            return qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
        if key is value:
            kv = F.linear(key, w[E:], None if b is None else b[E:])
            return F.linear(query, w[:E], bq), kv[..., :E], kv[..., E:]
        return F.linear(query, w[:E], bq), F.linear(key, w[E:2 * E], bk), F.linear(value, w[2 * E:], bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        for t, name in ((query, "query"), (key, "key"), (value, "value")):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be an ember.Tensor, got {type(t).__name__}")
        if query.dim() not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                                 "query tensor")
        batched = query.dim() == 3
        if key.dim() != query.dim() or value.dim() != query.dim():
            raise AssertionError(f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected `key` "
                                 f"and `value` to be {query.dim()}-D, but found {key.dim()}-D and {value.dim()}-D "
                                 "tensors respectively")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        same_kv = key is value
        self_attn = query is key and same_kv
        # work batch-first, (N, L, E), whatever the caller's layout
        if not batched:
            q_in, k_in, v_in = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                if key_padding_mask.dim() != 1:
                    raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or "
                                         f"1-D but found {key_padding_mask.dim()}-D tensor instead")
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            q_in, k_in, v_in = query, key, value
        else:
            q_in, k_in, v_in = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if self_attn:
            k_in = v_in = q_in
        elif same_kv:
            v_in = k_in
        N, L, E = q_in.shape
        S = k_in.shape[1]
        H, hd = self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        if k_in.shape[:2] != v_in.shape[:2]:
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
        mask = self._attn_mask(attn_mask, batched, N, L, S, q_in.dtype)
        kpm = _additive(key_padding_mask, "key_padding_mask", q_in.dtype)
        if kpm is not None and tuple(kpm.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got {tuple(kpm.shape)}")
        q, k, v = self._project(q_in, k_in, v_in)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(N, 1, E)], 1)
            v = cat([v, self.bias_v.expand(N, 1, E)], 1)
            mask, kpm = _pad_last(mask), _pad_last(kpm)
        elif self.bias_v is not None:
            raise AssertionError("bias_k and bias_v must both be set or both be None")
        q = q.reshape(N, L, H, hd).transpose(1, 2)
        k = k.reshape(N, k.shape[1], H, hd).transpose(1, 2)
        v = v.reshape(N, v.shape[1], H, hd).transpose(1, 2)
        if self.add_zero_attn:
            k = cat([k, zeros(N, H, 1, hd, dtype=k.dtype, device=k.device)], 2)
            v = cat([v, zeros(N, H, 1, hd, dtype=v.dtype, device=v.device)], 2)
            mask, kpm = _pad_last(mask), _pad_last(kpm)
        if kpm is not None:
            kpm = kpm.reshape(N, 1, 1, kpm.shape[-1])
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(hd))) @ k.mT
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, -1)
            if p > 0.0:
                weights = F.dropout(weights, p, True)
            out = weights @ v
        else:
            weights = None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = self.out_proj(out.transpose(1, 2).reshape(N, L, E))
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            return out.squeeze(0), None if weights is None else weights.squeeze(0)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _attn_mask(self, attn_mask, batched: bool, N: int, L: int, S: int, dtype) -> Tensor | None:
        """attn_mask as an additive mask broadcastable to (N, H, L, S)."""
        mask = _additive(attn_mask, "attn_mask", dtype)
        if mask is None:
            return None
        if mask.dim() == 2:
            if tuple(mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(mask.shape)}, but should be {(L, S)}.")
            return mask
        if mask.dim() == 3:
            want = (N * self.num_heads, L, S)
            if tuple(mask.shape) != want:
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(mask.shape)}, but should be {want}.")
            return mask.reshape(N, self.num_heads, L, S)
        raise RuntimeError(f"attn_mask's dimension {mask.dim()} is not supported")


# ---- transformer layers -------------------------------------------------------------------------------
def _activation(activation) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str) or not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and a
    LayerNorm: post-norm ``x = norm(x + block(x))`` by default, pre-norm
    ``x = x + block(norm(x))`` with ``norm_first=True``.

    ``activation`` is 'relu', 'gelu' or any callable (a Module is registered as a submodule).
    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.

    >>> ember.nn.TransformerEncoderLayer(8, 2, 16)(ember.randn(5, 3, 8)).shape
    ember.Size([5, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention over the target, cross-attention to ``memory``, then a feed-forward block,
    each with dropout, residual and LayerNorm (post-norm, or pre-norm with ``norm_first``).

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``.

    >>> layer = ember.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    >>> layer(ember.randn(2, 4, 8), ember.randn(2, 6, 8)).shape
    ember.Size([2, 4, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _causal_hint(mask: Tensor | None, is_causal: bool | None, size: int | None = None) -> bool:
    """PyTorch's rule for an unspecified ``is_causal``: True when the given mask is exactly the
    square causal mask (only a hint; the mask itself is still applied)."""
    if is_causal is not None:
        return bool(is_causal)
    if mask is None or mask.dim() != 2:
        return False
    n = size if size is not None else mask.shape[-2]
    if tuple(mask.shape) != (n, n):
        return False
    causal = Transformer.generate_square_subsequent_mask(n, device=mask.device, dtype=mask.dtype) \
        if mask.dtype is not dt.bool else ones(n, n, dtype=dt.bool, device=mask.device).triu(1)
    return bool(mask.equal(causal))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` (deep copies: independent weights, all
    equal to the given layer's at construction), then an optional final ``norm``.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.
    ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch compatibility; ember has no
    nested-tensor fast path, so padded positions are computed like every other (PyTorch's fast
    path in eval mode returns zeros there instead).
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        first = self.layers[0] if len(self.layers) else None
        seq_dim = 1 if first is not None and first.self_attn.batch_first and src.dim() == 3 else 0
        causal = _causal_hint(mask, is_causal, src.shape[seq_dim])
        x = src
        for mod in self.layers:
            x = mod(x, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            x = self.norm(x)
        return x


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer``, then an optional final ``norm``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        first = self.layers[0] if len(self.layers) else None
        seq_dim = 1 if first is not None and first.self_attn.batch_first and tgt.dim() == 3 else 0
        causal = _causal_hint(tgt_mask, tgt_is_causal, tgt.shape[seq_dim])
        x = tgt
        for mod in self.layers:
            x = mod(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                    tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                    tgt_is_causal=causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            x = self.norm(x)
        return x


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need": ``num_encoder_layers``
    encoder layers with a final LayerNorm, ``num_decoder_layers`` decoder layers with a final
    LayerNorm (``custom_encoder`` / ``custom_decoder`` replace either). Every parameter with more
    than one dim is re-drawn xavier-uniform, as PyTorch does.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
    tgt_is_causal=None, memory_is_causal=False)``.

    >>> model = ember.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
    ...                              dim_feedforward=16)
    >>> model(ember.randn(6, 2, 8), ember.randn(4, 2, 8)).shape
    ember.Size([4, 2, 8])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.dim() == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.shape[0] != tgt.shape[0] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """(sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees 0..i).

        >>> ember.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        upper = ones(sz, sz, dtype=dt.bool, device=device).triu(1)
        return zeros(sz, sz, dtype=dtype, device=device).masked_fill(upper, float("-inf"))

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
