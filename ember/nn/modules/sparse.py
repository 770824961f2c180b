"""Lookup tables: Embedding and EmbeddingBag, with torch.nn's arguments, initialisation (N(0, 1),
padding row zero) and ``from_pretrained``.

>>> emb = ember.nn.Embedding(10, 3, padding_idx=0)
>>> emb(ember.tensor([[0, 2], [4, 0]])).shape
ember.Size([2, 2, 3])
>>> bool((emb.weight[0] == 0).all())
True
"""

from __future__ import annotations

from ... import _dtype as dt
from ..._creation import arange, empty, ones, zeros
from ..._movement import cat
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    padding_idx = int(padding_idx)
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings if num_embeddings else padding_idx


def _given_weight(_weight, shape: tuple, layer: str):
    if _weight is None:
        return None
    if not isinstance(_weight, Tensor):
        raise TypeError(f"{layer}: _weight must be an ember.Tensor, got {type(_weight).__name__}")
    if tuple(_weight.shape) != shape:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return _weight


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``; ``forward(indices)`` returns
    ``weight[indices]`` (shape ``indices.shape + (embedding_dim,)``).

    ``padding_idx``: that row starts at zero and receives no gradient. ``max_norm``: rows looked up
    are renormalised in place to that ``norm_type``-norm at most. ``scale_grad_by_freq``: gradients
    are divided by each index's count in the batch. ``sparse=True`` is refused (ember has no sparse
    tensors).

    >>> ember.nn.Embedding(5, 2, padding_idx=1)
    Embedding(5, 2, padding_idx=1)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding(sparse=True): ember has no sparse tensors; use sparse=False "
                                      "(the gradient is a dense tensor like the weight)")
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        self.padding_idx = _padding_index(padding_idx, self.num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        given = _given_weight(_weight, (self.num_embeddings, self.embedding_dim), "Embedding")
        if given is None:
            self.weight = Parameter(empty(self.num_embeddings, self.embedding_dim, device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = Parameter(given, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding whose table is ``embeddings`` (2-D, shared, not copied); ``freeze=True``
        turns off its gradient. The padding row is left as given.

        >>> emb = ember.nn.Embedding.from_pretrained(ember.eye(3))
        >>> emb(ember.tensor([1])), emb.weight.requires_grad
        (tensor([[0., 1., 0.]]), False)
        """
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)


_BAG_MODES = ("sum", "mean", "max")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without materialising the per-index lookups
    the caller would otherwise reduce.

    Bags are either the rows of a 2-D ``input`` (B, N), or, for a 1-D ``input``, the segments
    that start at ``offsets`` (B,) (with ``include_last_offset=True`` offsets has B+1 entries, the
    last being ``len(input)``). ``per_sample_weights`` (same shape as input, mode 'sum' only)
    scales each looked-up row. ``padding_idx`` entries are left out of every bag (they count for
    neither the sum, the mean's divisor nor the max); an empty bag gives zeros.

    >>> bag = ember.nn.EmbeddingBag.from_pretrained(ember.arange(6.0).reshape(3, 2), mode="sum")
    >>> bag(ember.tensor([0, 2, 1]), ember.tensor([0, 2]))
    tensor([[4., 6.],
            [2., 3.]])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        if sparse:
            raise NotImplementedError("EmbeddingBag(sparse=True): ember has no sparse tensors; use sparse=False")
        if mode not in _BAG_MODES:
            raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_index(padding_idx, self.num_embeddings)
        given = _given_weight(_weight, (self.num_embeddings, self.embedding_dim), "EmbeddingBag")
        if given is None:
            self.weight = Parameter(empty(self.num_embeddings, self.embedding_dim, device=device, dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = Parameter(given)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        if per_sample_weights is not None:
            if self.mode != "sum":
                raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is "
                                          f"only supported for mode='sum' (got mode='{self.mode}'). Please open a "
                                          "feature request on GitHub.")
            if not isinstance(per_sample_weights, Tensor) or tuple(per_sample_weights.shape) != tuple(input.shape):
                got = getattr(per_sample_weights, "shape", type(per_sample_weights).__name__)
                raise ValueError(f"embedding_bag: If per_sample_weights ({got}) is not None, then it must have the "
                                 f"same shape as the input ({tuple(input.shape)})")
        idx, valid, pos = self._bags(input, offsets)
        if self.padding_idx is not None:
            valid = valid & (idx != self.padding_idx)
        # (B, L, D) lookups of the dense bag layout; the gradient flows through F.embedding
        rows = F.embedding(idx, self.weight, None, self.max_norm, self.norm_type, self.scale_grad_by_freq)
        mask = valid.unsqueeze(-1)
        if self.mode == "max":
            if rows.shape[1] == 0:
                return zeros(rows.shape[0], self.embedding_dim, dtype=rows.dtype, device=rows.device)
            out = rows.masked_fill(~mask, float("-inf")).max(1).values
            return out.masked_fill(~valid.any(1, keepdim=True), 0.0)  # empty bags give zeros
        if per_sample_weights is not None:
            psw = per_sample_weights if pos is None else _gather_positions(per_sample_weights, pos)
            rows = rows * psw.unsqueeze(-1).to(rows.dtype)
        summed = rows.masked_fill(~mask, 0.0).sum(1)
        if self.mode == "sum":
            return summed
        count = valid.sum(1, keepdim=True).clamp_min(1).to(rows.dtype)
        return summed / count

    # -- bag layout -------------------------------------------------------------------------------
    def _segments(self, input: Tensor, offsets) -> tuple[Tensor, Tensor]:
        """(starts, lengths) of the bags of a 1-D input."""
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if not isinstance(offsets, Tensor) or offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if offsets.dtype not in (dt.int64, dt.int32):
            raise RuntimeError(f"embedding_bag: offsets must be int64 or int32, got {offsets.dtype}")
        n = input.shape[0]
        offsets = offsets.to(dt.int64)
        if offsets.shape[0] and int(offsets[0].item()) != 0:
            raise ValueError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                             f"position 0. However, got {int(offsets[0].item())}")
        if self.include_last_offset:
            if offsets.shape[0] == 0:
                raise ValueError("embedding_bag: include_last_offset=True needs at least one offset")
            starts, ends = offsets[:-1], offsets[1:].clamp_max(n)
        else:
            starts = offsets
            ends = cat([offsets[1:], zeros(1, dtype=dt.int64, device=offsets.device) + n])
        if starts.shape[0] and bool(((ends - starts) < 0).any().item()):
            raise ValueError("embedding_bag: offsets must be non-decreasing")
        if starts.shape[0] and int(starts.max().item()) > n:
            raise ValueError(f"embedding_bag: offsets point past the end of the input (length {n})")
        return starts, (ends - starts).clamp_min(0)

    def _bags(self, input: Tensor, offsets) -> tuple[Tensor, Tensor, Tensor | None]:
        """The bags as a dense (B, L) index matrix, a mask of its real entries, and (1-D input) the
        input position of each entry."""
        if not isinstance(input, Tensor):
            raise TypeError(f"EmbeddingBag: input must be an ember.Tensor, got {type(input).__name__}")
        if input.dtype not in (dt.int64, dt.int32):
            raise RuntimeError(f"embedding_bag: expected input of dtype int64 or int32, got {input.dtype}")
        if input.dim() == 2:
            if offsets is not None:
                raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                                 "of fixed length sequences. However, found offsets of type Tensor")
            return input, ones(input.shape, dtype=dt.bool, device=input.device), None
        if input.dim() != 1:
            raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
        starts, lengths = self._segments(input, offsets)
        width = int(lengths.max().item()) if lengths.shape[0] else 0
        cols = arange(width, device=input.device)
        valid = cols.unsqueeze(0) < lengths.unsqueeze(1)
        pos = (starts.unsqueeze(1) + cols.unsqueeze(0)).masked_fill(~valid, 0)
        return _gather_positions(input, pos), valid, pos

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag over the 2-D table ``embeddings``; ``freeze=True`` turns off its gradient."""
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag


def _gather_positions(values: Tensor, pos: Tensor) -> Tensor:
    """values[pos] for a 1-D ``values``; an empty input gives zeros of pos's shape (pos is all 0
    there, pointing at nothing)."""
    if values.shape[0] == 0:
        return zeros(pos.shape, dtype=values.dtype, device=values.device)
    return values[pos]
