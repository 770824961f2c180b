"""Position encodings for attention models: RotaryEmbedding (RoPE) and SinusoidalPositionalEncoding.
PyTorch has neither as a module, so their conventions are stated here.

RotaryEmbedding (Su et al., "RoFormer", 2021)
    Rotates pairs of features of a query or key by an angle proportional to the token's position,
    so that ``q_i · k_j`` depends on the positions only through ``i - j``. For feature pair ``m``
    (0 <= m < dim/2) the frequency is ``base ** (-2m / dim)`` and the angle at position ``p`` is
    ``p * base ** (-2m / dim)``.

    * Layout: the input is (..., seq, dim) -- sequence in dim -2, features last -- which is
      scaled_dot_product_attention's (batch, heads, seq, head_dim). ``seq_dim`` picks another
      sequence dim, e.g. ``seq_dim=1`` for (batch, seq, heads, head_dim).
    * Pairing: by default pair ``m`` is features (m, m + dim/2) ("rotate half", the layout of
      GPT-NeoX and of Llama checkpoints in Hugging Face format); ``interleaved=True`` pairs
      (2m, 2m + 1) as in the paper, GPT-J and Meta's original Llama code.
    * Partial rotary: when the input has more than ``dim`` features only the first ``dim`` are
      rotated; the rest pass through (GPT-NeoX's ``rotary_pct``).
    * Positions: ``offset`` (default 0) is added to 0..seq-1, e.g. the cache length during
      incremental decoding, or ``positions`` gives them explicitly ((seq,) or broadcastable to the
      input without its feature dim).
    * Angles are computed in float32 (float64 for float64 input), then cos/sin are cast to the
      input's dtype.

SinusoidalPositionalEncoding (Vaswani et al., "Attention Is All You Need", 2017)
    Adds ``pe[p, 2i] = sin(p / base ** (2i / d_model))`` and
    ``pe[p, 2i + 1] = cos(p / base ** (2i / d_model))`` to the input (sin and cos interleaved, the
    paper's and the PyTorch tutorial's layout), then applies dropout. The input is
    (seq, batch, d_model) like nn.Transformer's default, (batch, seq, d_model) with
    ``batch_first=True``, or (seq, d_model). The table (``max_len`` rows) is a non-persistent
    buffer: it is recomputed, never stored in a state_dict.
"""

from __future__ import annotations

from ... import _dtype as dt
from ..._creation import arange
from ..._movement import cat, stack
from ..._tensor import Tensor
from ..module import Module
from .dropout import Dropout

__all__ = ["RotaryEmbedding", "SinusoidalPositionalEncoding", "apply_rotary_emb"]


def _rotate(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool) -> Tensor:
    """Rotate the feature pairs of ``x`` (last dim, even size) by the angles whose cos/sin
    (..., dim/2) broadcast against it."""
    half = x.shape[-1] // 2
    if interleaved:
        pairs = x.unflatten(-1, (half, 2))
        a, b = pairs[..., 0], pairs[..., 1]
        return stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return cat([a * cos - b * sin, a * sin + b * cos], -1)


def apply_rotary_emb(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    """Rotate the first ``2 * cos.shape[-1]`` features of ``x`` by the given angles (cos/sin are
    (..., dim/2), broadcast against ``x`` without its feature dim); the rest pass through.

    >>> x = ember.tensor([[1.0, 0.0]])
    >>> ember.nn.apply_rotary_emb(x, ember.tensor([[0.0]]), ember.tensor([[1.0]]))
    tensor([[0., 1.]])
    """
    rot = 2 * cos.shape[-1]
    if rot > x.shape[-1]:
        raise RuntimeError(f"apply_rotary_emb: the angles cover {rot} features but x has only {x.shape[-1]}")
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    if rot == x.shape[-1]:
        return _rotate(x, cos, sin, interleaved)
    return cat([_rotate(x[..., :rot], cos, sin, interleaved), x[..., rot:]], -1)


class RotaryEmbedding(Module):
    """Rotary position embedding (RoPE) for the first ``dim`` features of queries and keys; see the
    module docstring for the exact convention.

    ``forward(x, offset=0, positions=None)`` returns x with its features rotated.

    >>> rope = ember.nn.RotaryEmbedding(4)
    >>> q = ember.randn(2, 3, 5, 4)          # (batch, heads, seq, head_dim)
    >>> rope(q).shape
    ember.Size([2, 3, 5, 4])
    >>> rope
    RotaryEmbedding(dim=4, base=10000.0, interleaved=False)
    """

    def __init__(self, dim: int, base: float = 10000.0, interleaved: bool = False, seq_dim: int = -2,
                 device=None) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0 or dim % 2:
            raise ValueError(f"RotaryEmbedding: dim must be a positive even int, got {dim!r}")
        self.dim = dim
        self.base = float(base)
        self.interleaved = interleaved
        self.seq_dim = seq_dim
        self.device = device

    def inv_freq(self, dtype=dt.float32, device=None) -> Tensor:
        """The dim/2 frequencies ``base ** (-2m / dim)``, computed in float64 and rounded to
        ``dtype`` (no buffer: the table is tiny, and a buffer would be cast by ``module.half()``)."""
        exponents = arange(0, self.dim, 2, dtype=dt.float64, device=device or self.device) / self.dim
        return (self.base ** -exponents).to(dtype)

    def angles(self, positions: Tensor, dtype=None) -> tuple[Tensor, Tensor]:
        """cos and sin of ``positions[..., None] * inv_freq``: shape positions.shape + (dim/2,)."""
        work = dt.float64 if dtype is dt.float64 else dt.float32
        theta = positions.to(work).unsqueeze(-1) * self.inv_freq(work, positions.device)
        return theta.cos(), theta.sin()

    def forward(self, x: Tensor, offset: int = 0, positions: Tensor | None = None) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"RotaryEmbedding: x must be an ember.Tensor, got {type(x).__name__}")
        if x.dim() < 2:
            raise RuntimeError(f"RotaryEmbedding: expected input of shape (..., seq, features), got {list(x.shape)}")
        if x.shape[-1] < self.dim:
            raise RuntimeError(f"RotaryEmbedding: input has {x.shape[-1]} features, fewer than dim={self.dim}")
        if not x.is_floating_point():
            raise RuntimeError(f"RotaryEmbedding: expected a floating-point input, got {x.dtype}")
        sd = self.seq_dim % x.dim()
        if sd == x.dim() - 1:
            raise RuntimeError("RotaryEmbedding: seq_dim cannot be the feature dim")
        if positions is None:
            pos = arange(x.shape[sd], device=x.device) + int(offset)
            # line positions up with the sequence dim: (seq, 1, ..., 1) for the dims between it and features
            pos = pos.reshape((x.shape[sd],) + (1,) * (x.dim() - 2 - sd))
        else:
            if not isinstance(positions, Tensor):
                raise TypeError("RotaryEmbedding: positions must be an ember.Tensor")
            pos = positions
            if pos.dim() == 1 and x.dim() - 2 - sd > 0:
                pos = pos.reshape((pos.shape[0],) + (1,) * (x.dim() - 2 - sd))
        cos, sin = self.angles(pos, x.dtype)
        return apply_rotary_emb(x, cos, sin, self.interleaved)

    def extra_repr(self) -> str:
        s = f"dim={self.dim}, base={self.base}, interleaved={self.interleaved}"
        return s if self.seq_dim == -2 else s + f", seq_dim={self.seq_dim}"


class SinusoidalPositionalEncoding(Module):
    """Add the fixed sin/cos position table of "Attention Is All You Need", then dropout; see the
    module docstring for the exact convention.

    >>> pe = ember.nn.SinusoidalPositionalEncoding(6, max_len=50)
    >>> pe(ember.zeros(4, 2, 6))[1, 0, :2]          # position 1: sin(1), cos(1)
    tensor([0.8415, 0.5403])
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0, batch_first: bool = False,
                 base: float = 10000.0, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"SinusoidalPositionalEncoding: d_model must be a positive int, got {d_model!r}")
        self.d_model = d_model
        self.max_len = int(max_len)
        self.batch_first = batch_first
        self.base = float(base)
        self.dropout = Dropout(dropout)
        pos = arange(self.max_len, dtype=dt.float64, device=device).unsqueeze(1)
        freq = self.base ** (-arange(0, d_model, 2, dtype=dt.float64, device=device) / d_model)
        angle = pos * freq                                          # (max_len, ceil(d/2))
        table = stack([angle.sin(), angle.cos()], -1).flatten(1)[:, :d_model]  # sin, cos interleaved
        self.register_buffer("pe", table.to(dtype if dtype is not None else dt.get_default_dtype()),
                             persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"SinusoidalPositionalEncoding: x must be an ember.Tensor, got {type(x).__name__}")
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_model:
            raise RuntimeError(f"SinusoidalPositionalEncoding: expected input (seq, [batch,] {self.d_model}) "
                               f"(or (batch, seq, {self.d_model}) with batch_first), got {list(x.shape)}")
        seq_dim = 1 if self.batch_first and x.dim() == 3 else 0
        n = x.shape[seq_dim]
        if n > self.max_len:
            raise RuntimeError(f"SinusoidalPositionalEncoding: sequence length {n} exceeds max_len={self.max_len}")
        pe = self.pe[:n].to(x.dtype)
        if x.dim() == 3 and seq_dim == 0:
            pe = pe.unsqueeze(1)
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, batch_first={self.batch_first}"
