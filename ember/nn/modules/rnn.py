"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, inter-layer dropout,
initial states, LSTM projections) and the single-step RNNCell, LSTMCell, GRUCell.

Parameter names, shapes, gate order and initialisation are PyTorch's, so a torch state_dict loads
by key: ``weight_ih_l{k}{_reverse}`` (gates*H, input), ``weight_hh_l{k}`` (gates*H, H_out),
``bias_ih_l{k}``, ``bias_hh_l{k}`` and, for an LSTM with ``proj_size``, ``weight_hr_l{k}``
(proj_size, H). Gates are stacked i, f, g, o (LSTM) and r, z, n (GRU). Every weight starts
U(-1/sqrt(H), 1/sqrt(H)).

The recurrences are compositions of ember ops (autodiff differentiates them). The input-to-hidden
products of a whole layer are one matmul before the time loop; only the hidden-to-hidden product
runs per step.

>>> lstm = ember.nn.LSTM(4, 8, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(ember.randn(3, 5, 4))
>>> out.shape, h.shape
(ember.Size([3, 5, 8]), ember.Size([2, 3, 8]))
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..._creation import empty, zeros
from ..._movement import cat, stack
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- one time step of each cell (x_part: the input product with its biases already added) ----------
def _hidden(base: Tensor | None, h: Tensor, w_hh_t: Tensor) -> Tensor:
    """base + h @ w_hh_t (w_hh_t: the transposed weight, taken once per sequence, not per step)."""
    return h @ w_hh_t if base is None else base + h @ w_hh_t


def _rnn_step(x_part: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, relu: bool) -> Tensor:
    pre = _hidden(x_part if b_hh is None else x_part + b_hh, h, w_hh_t)
    return pre.relu() if relu else pre.tanh()


def _lstm_step(x_part: Tensor, h: Tensor, c: Tensor, w_hh_t: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None) -> tuple[Tensor, Tensor]:
    gates = _hidden(x_part if b_hh is None else x_part + b_hh, h, w_hh_t)
    n = c.shape[-1]
    # i, f, o share one sigmoid pass: sigmoid over all four blocks costs less than three calls
    sig = gates.sigmoid()
    i, f, o = sig.narrow(-1, 0, n), sig.narrow(-1, n, n), sig.narrow(-1, 3 * n, n)
    g = gates.narrow(-1, 2 * n, n).tanh()
    c = f * c + i * g
    h = o * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(x_part: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None) -> Tensor:
    hh = _hidden(b_hh, h, w_hh_t)
    n = h.shape[-1]
    rz = (x_part.narrow(-1, 0, 2 * n) + hh.narrow(-1, 0, 2 * n)).sigmoid()
    r, z = rz.narrow(-1, 0, n), rz.narrow(-1, n, n)
    cand = (x_part.narrow(-1, 2 * n, n) + r * hh.narrow(-1, 2 * n, n)).tanh()
    return cand + z * (h - cand)  # (1 - z) * n + z * h


def _check_sizes(input_size, hidden_size, layer: str) -> tuple[int, int]:
    for v, name in ((input_size, "input_size"), (hidden_size, "hidden_size")):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{layer}: {name} should be of type int, got: {type(v).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    return int(input_size), int(hidden_size)


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU (``mode`` is 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU')."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        input_size, hidden_size = _check_sizes(input_size, hidden_size, name)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers <= 0:
            raise ValueError("num_layers must be greater than zero" if isinstance(num_layers, int)
                             else f"num_layers should be of type int, got: {type(num_layers).__name__}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * dirs
            for direction in range(dirs):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    pname = f"{base}_l{layer}{suffix}"
                    setattr(self, pname, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(pname)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as in PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Kept for PyTorch compatibility: ember's weights need no re-packing (cuDNN's need does not
        arise), so there is nothing to do."""

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """Per (layer, direction): [weight_ih, weight_hh, (bias_ih, bias_hh), (weight_hr)]."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------------------------------
    def _weights(self, layer: int, direction: int) -> tuple:
        names = self._all_weights[layer * (2 if self.bidirectional else 1) + direction]
        ws = [getattr(self, n) for n in names]
        w_ih, w_hh = ws[0], ws[1]
        b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
        w_hr = ws[-1] if self.proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _prepare(self, input, hx, hidden_sizes: tuple) -> tuple[Tensor, list, bool]:
        """Validate ``input`` and the initial states; returns the input as (T, N, C), the states as
        (layers*dirs, N, H) tensors (zeros when not given) and whether the input was unbatched."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be an ember.Tensor, got {type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        if not input.is_floating_point():
            raise RuntimeError(f"{name}: expected a floating-point input, got {input.dtype}")
        unbatched = input.dim() == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
        if x.shape[0] == 0:
            raise RuntimeError(f"Expected sequence length to be larger than 0 in {name}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        w = self._flat_weights[0]
        if x.dtype != w.dtype:
            raise RuntimeError(f"{name}: input dtype {x.dtype} and parameter dtype {w.dtype} must be the same")
        dirs = 2 if self.bidirectional else 1
        batch = x.shape[1]
        states = []
        given = (None,) * len(hidden_sizes) if hx is None else hx
        for h, size in zip(given, hidden_sizes):
            want = (self.num_layers * dirs, batch, size)
            if h is None:
                states.append(zeros(want, dtype=x.dtype, device=x.device))
                continue
            if not isinstance(h, Tensor):
                raise TypeError(f"{name}: hidden states must be ember.Tensors, got {type(h).__name__}")
            if unbatched:
                if h.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h.dim()}-D tensor")
                h = h.unsqueeze(1)
            elif h.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h.dim()}-D tensor")
            if tuple(h.shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {tuple(h.shape)}")
            if h.dtype != x.dtype:
                raise RuntimeError(f"{name}: hidden state dtype {h.dtype} must match the input dtype {x.dtype}")
            states.append(h)
        return x, states, unbatched

    def _run(self, x: Tensor, states: list) -> tuple[Tensor, list]:
        """All layers and directions over time-major ``x``; returns the last layer's output and the
        final states, each stacked as (layers*dirs, N, H)."""
        dirs = 2 if self.bidirectional else 1
        steps = x.shape[0]
        finals: list[list[Tensor]] = [[] for _ in states]
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for direction in range(dirs):
                k = layer * dirs + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)
                # all time steps' input products at once; for LSTM and RNN both biases fold in here
                # (GRU keeps b_hh inside, since r multiplies the hidden part of the candidate)
                if self.mode != "GRU" and b_ih is not None:
                    xs = F.linear(layer_in, w_ih, b_ih + b_hh)
                    b_step = None
                else:
                    xs = F.linear(layer_in, w_ih, b_ih)
                    b_step = b_hh
                order = range(steps - 1, -1, -1) if direction == 1 else range(steps)
                xt = xs.unbind(0)
                st = [s[k] for s in states]
                seq: list[Tensor | None] = [None] * steps
                w_hh_t = w_hh.mT
                for t in order:
                    if self.mode == "LSTM":
                        st = list(_lstm_step(xt[t], st[0], st[1], w_hh_t, b_step, w_hr))
                    elif self.mode == "GRU":
                        st = [_gru_step(xt[t], st[0], w_hh_t, b_step)]
                    else:
                        st = [_rnn_step(xt[t], st[0], w_hh_t, b_step, self.mode == "RNN_RELU")]
                    seq[t] = st[0]
                for f, s in zip(finals, st):
                    f.append(s)
                outs.append(stack(seq, 0))
            layer_out = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_out = F.dropout(layer_out, self.dropout, True)
            layer_in = layer_out
        return layer_in, [stack(f, 0) for f in finals]

    def _finish(self, out: Tensor, states: list, unbatched: bool) -> tuple[Tensor, list]:
        if unbatched:
            return out.squeeze(1), [s.squeeze(1) for s in states]
        if self.batch_first:
            out = out.transpose(0, 1)
        return out, states


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (``nonlinearity='relu'``
    for relu), stacked ``num_layers`` deep.

    ``forward(input, hx=None)``: input (T, N, C) (or (N, T, C) with batch_first, or unbatched
    (T, C)); hx (layers*dirs, N, H). Returns (output (T, N, dirs*H), h_n).

    >>> out, h = ember.nn.RNN(3, 5, bidirectional=True)(ember.randn(7, 2, 3))
    >>> out.shape, h.shape
    (ember.Size([7, 2, 10]), ember.Size([2, 2, 5]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        x, states, unbatched = self._prepare(input, None if hx is None else (hx,), (self.hidden_size,))
        out, finals = self._run(x, states)
        out, finals = self._finish(out, finals, unbatched)
        return out, finals[0]


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o:
    c_t = f*c_{t-1} + i*g, h_t = o*tanh(c_t) (then h_t W_hr^T when ``proj_size`` > 0).

    ``forward(input, (h0, c0)=None)`` returns ``(output, (h_n, c_n))``; h has size proj_size when
    projecting, c always hidden_size.

    >>> out, (h, c) = ember.nn.LSTM(3, 6, proj_size=2)(ember.randn(4, 1, 3))
    >>> out.shape, h.shape, c.shape
    (ember.Size([4, 1, 2]), ember.Size([1, 1, 2]), ember.Size([1, 1, 6]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
        out_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        x, states, unbatched = self._prepare(input, hx, (out_size, self.hidden_size))
        out, finals = self._run(x, states)
        out, finals = self._finish(out, finals, unbatched)
        return out, (finals[0], finals[1])


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n:
    n = tanh(x W_in^T + b_in + r*(h W_hn^T + b_hn)), h_t = (1 - z)*n + z*h_{t-1}.

    >>> out, h = ember.nn.GRU(3, 4, num_layers=2)(ember.randn(5, 2, 3))
    >>> out.shape, h.shape
    (ember.Size([5, 2, 4]), ember.Size([2, 2, 4]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        x, states, unbatched = self._prepare(input, None if hx is None else (hx,), (self.hidden_size,))
        out, finals = self._run(x, states)
        out, finals = self._finish(out, finals, unbatched)
        return out, finals[0]


# ---- cells ----------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters of the one-step cells: weight_ih, weight_hh, bias_ih, bias_hh."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        input_size, hidden_size = _check_sizes(input_size, hidden_size, type(self).__name__)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, count: int) -> tuple[Tensor, list, bool]:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be an ember.Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        states = []
        for h in (hx if hx is not None else (None,) * count):
            if h is None:
                states.append(zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device))
                continue
            if h.dim() != input.dim():
                raise RuntimeError(f"{name}: Expected hidden to be {input.dim()}D to match the input, got {h.dim()}D")
            h = h.unsqueeze(0) if unbatched else h
            if tuple(h.shape) != (x.shape[0], self.hidden_size):
                raise RuntimeError(f"hidden has inconsistent size: got {tuple(h.shape)}, expected "
                                   f"{(x.shape[0], self.hidden_size)}")
            states.append(h)
        return x, states, unbatched


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    >>> ember.nn.RNNCell(3, 4)(ember.randn(2, 3)).shape
    ember.Size([2, 4])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._prepare(input, None if hx is None else (hx,), 1)
        h = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh.mT, self.bias_hh,
                      self.nonlinearity == "relu")
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None) -> (h', c')``.

    >>> h, c = ember.nn.LSTMCell(3, 4)(ember.randn(2, 3))
    >>> h.shape, c.shape
    (ember.Size([2, 4]), ember.Size([2, 4]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, (h, c), unbatched = self._prepare(input, hx, 2)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh.mT, self.bias_hh, None)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h=None) -> h'``.

    >>> ember.nn.GRUCell(3, 4)(ember.randn(3)).shape
    ember.Size([4])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._prepare(input, None if hx is None else (hx,), 1)
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh.mT, self.bias_hh)
        return h.squeeze(0) if unbatched else h
