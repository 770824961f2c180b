"""ONNX operators: recurrent layers, attention, rotary embeddings and losses (see _registry.py).

Written with ember Tensor ops so imported models train::

    >>> import ember
    >>> from ember.onnx import ops
    >>> q = ember.randn(1, 2, 4, 8)
    >>> ops.attention(q, q, q).shape
    ember.Size([1, 2, 4, 8])
"""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
from ember import Tensor

from ._registry import OnnxOpError, op, upgrader
from .nn import _need_float  # nn.py defines it before it imports this module

__all__ = ["rnn", "gru", "lstm", "attention", "rotary_embedding", "negative_log_likelihood_loss",
           "softmax_cross_entropy_loss"]



# ------------------------------------------------------------------------------------------------- RNNs

# activation name -> (function of (x, alpha, beta), number of parameters, default parameters)
_ACTS = {
    "relu": (lambda x, a, b: x.relu(), ()),
    "tanh": (lambda x, a, b: x.tanh(), ()),
    "sigmoid": (lambda x, a, b: x.sigmoid(), ()),
    "affine": (lambda x, a, b: x * a + b, (1.0, 0.0)),
    "leakyrelu": (lambda x, a, b: F.leaky_relu(x, a), (0.01,)),
    "thresholdedrelu": (lambda x, a, b: ember.where(x > a, x, ember.zeros_like(x)), (1.0,)),
    "scaledtanh": (lambda x, a, b: (x * b).tanh() * a, (1.0, 1.0)),
    "hardsigmoid": (lambda x, a, b: (x * a + b).clamp(0.0, 1.0), (0.2, 0.5)),
    "elu": (lambda x, a, b: F.elu(x, a), (1.0,)),
    "softsign": (lambda x, a, b: x / (1 + x.abs()), ()),
    "softplus": (lambda x, a, b: F.softplus(x), ()),
}


def _activations(name, names, alphas, betas, per_dir, defaults, num_dir):
    """The activation callables per direction, consuming alpha/beta lists in order."""
    names = list(names) if names else list(defaults) * num_dir
    if len(names) == len(defaults) and num_dir == 2:
        names = names * 2
    if len(names) != per_dir * num_dir:
        raise OnnxOpError(f"ONNX {name}: {len(names)} activations given, expected {per_dir * num_dir}")
    alphas, betas = list(alphas or ()), list(betas or ())
    fns = []
    for n in names:
        key = n.lower()
        if key not in _ACTS:
            raise OnnxOpError(f"ONNX {name}: activation {n!r} is not supported")
        f, dflt = _ACTS[key]
        a = alphas.pop(0) if len(dflt) >= 1 and alphas else (dflt[0] if dflt else 0.0)
        b = betas.pop(0) if len(dflt) >= 2 and betas else (dflt[1] if len(dflt) > 1 else 0.0)
        fns.append(lambda x, f=f, a=a, b=b: f(x, a, b))
    return [fns[i * per_dir:(i + 1) * per_dir] for i in range(num_dir)]


def _reverse_index(T: int, lens: Tensor | None, B: int, device):
    """Time index per (t, batch) that reverses each sequence within its own length."""
    t = ember.arange(T, dtype=ember.int64, device=device).reshape(T, 1)
    if lens is None:
        return (T - 1 - t).expand(T, B)
    L = lens.to(ember.int64).reshape(1, B)
    return ember.where(t < L, L - 1 - t, t.expand(T, B))


def _time_gather(x: Tensor, idx: Tensor) -> Tensor:
    """x[idx[t, b], b, ...] for a (T, B, ...) tensor."""
    full = idx.reshape(tuple(idx.shape) + (1,) * (x.dim() - 2)).expand(tuple(idx.shape) + tuple(x.shape[2:]))
    return x.gather(0, full)


def _run_recurrence(name, X, lens, step, state0, direction, num_dir, clip, project=None):
    """Run ``step(x_t, state, d) -> (h, state)`` over time for each direction; ``project(X, d)``
    maps the whole (T, B, I) input at once (one big matmul instead of one per step).
    Returns (Y as (T, num_dir, B, H), final states per direction)."""
    T, B = X.shape[0], X.shape[1]
    if direction not in ("forward", "reverse", "bidirectional"):
        raise OnnxOpError(f"ONNX {name}: direction {direction!r} is not forward/reverse/bidirectional")
    dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    if len(dirs) != num_dir:
        raise OnnxOpError(f"ONNX {name}: W has {num_dir} directions but direction is {direction!r}")
    t_idx = ember.arange(T, dtype=ember.int64, device=X.device)
    ys, finals = [], []
    for d, kind in enumerate(dirs):
        xs = X
        rev = None
        if kind == "reverse":
            rev = _reverse_index(T, lens, B, X.device)
            xs = _time_gather(X, rev)
        if project is not None:
            xs = project(xs, d)
        state = state0[d]
        outs = []
        for t in range(T):
            h, new_state = step(xs[t], state, d)
            if lens is not None:
                active = (t_idx[t] < lens.to(ember.int64)).reshape(B, 1)
                new_state = tuple(ember.where(active, n, o) for n, o in zip(new_state, state))
                h = ember.where(active, h, ember.zeros_like(h))
            state = new_state
            outs.append(h)
        y = ember.stack(outs) if outs else ember.zeros((0, B, state[0].shape[-1]), dtype=X.dtype, device=X.device)
        if rev is not None and T:
            y = _time_gather(y, rev)
        ys.append(y)
        finals.append(state)
    return ember.stack(ys, dim=1), finals


def _rnn_prep(name, X, W, R, B, sequence_lens, initial, layout, gates, hidden_size):
    _need_float(name, X, W, R, B)
    if layout:
        X = X.transpose(0, 1)
    num_dir, GH = W.shape[0], W.shape[1]
    H = GH // gates
    if hidden_size is not None and hidden_size != H:
        raise OnnxOpError(f"ONNX {name}: hidden_size {hidden_size} does not match W of shape {tuple(W.shape)}")
    Bsz = X.shape[1]
    if B is None:
        B = ember.zeros((num_dir, 2 * GH), dtype=X.dtype, device=X.device)
    init = [ember.zeros((num_dir, Bsz, H), dtype=X.dtype, device=X.device) if t is None else
            (t.transpose(0, 1) if layout else t) for t in initial]
    return X, num_dir, H, B, init


def _rnn_outputs(Y, finals, layout, n_outputs):
    # Y: (T, num_dir, B, H); finals: per direction tuples of states (B, H)
    states = [ember.stack([f[i] for f in finals]) for i in range(len(finals[0]))]
    if layout:
        Y = Y.permute(2, 0, 1, 3)
        states = [s.transpose(0, 1) for s in states]
    outs = (Y, *states)
    return outs[:n_outputs] if n_outputs > 1 else outs[0]


def _clip(x: Tensor, clip):
    return x.clamp(-clip, clip) if clip is not None else x


@op("RNN")
def rnn(X: Tensor, W: Tensor, R: Tensor, B: Tensor | None = None, sequence_lens: Tensor | None = None,
        initial_h: Tensor | None = None, *, activation_alpha=None, activation_beta=None, activations=None,
        clip: float | None = None, direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        n_outputs: int = 1):
    """ONNX RNN (Elman): ``H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)``. Outputs Y, Y_h."""
    X, nd, H, B, (h0,) = _rnn_prep("RNN", X, W, R, B, sequence_lens, (initial_h,), layout, 1, hidden_size)
    acts = _activations("RNN", activations, activation_alpha, activation_beta, 1, ("Tanh",), nd)

    def step(xw, state, d):
        h = acts[d][0](_clip(xw + state[0] @ R[d].T, clip))
        return h, (h,)
    Y, finals = _run_recurrence("RNN", X, sequence_lens, step, [(h0[d],) for d in range(nd)], direction, nd, clip,
                                lambda x, d: x @ W[d].T + (B[d, :H] + B[d, H:]))
    return _rnn_outputs(Y, finals, layout, n_outputs)


@op("GRU")
def gru(X: Tensor, W: Tensor, R: Tensor, B: Tensor | None = None, sequence_lens: Tensor | None = None,
        initial_h: Tensor | None = None, *, activation_alpha=None, activation_beta=None, activations=None,
        clip: float | None = None, direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        linear_before_reset: int = 0, n_outputs: int = 1):
    """ONNX GRU (gates z, r, h). Outputs Y, Y_h."""
    X, nd, H, B, (h0,) = _rnn_prep("GRU", X, W, R, B, sequence_lens, (initial_h,), layout, 3, hidden_size)
    acts = _activations("GRU", activations, activation_alpha, activation_beta, 2, ("Sigmoid", "Tanh"), nd)

    def step(xw, state, d):
        hp = state[0]
        f, g = acts[d]
        rb = B[d, 3 * H:]
        Rd = R[d]
        hr = hp @ Rd[:2 * H].T + rb[:2 * H]
        z = f(_clip(xw[:, :H] + hr[:, :H], clip))
        r = f(_clip(xw[:, H:2 * H] + hr[:, H:], clip))
        if linear_before_reset:
            hh = g(_clip(xw[:, 2 * H:] + r * (hp @ Rd[2 * H:].T + rb[2 * H:]), clip))
        else:
            hh = g(_clip(xw[:, 2 * H:] + (r * hp) @ Rd[2 * H:].T + rb[2 * H:], clip))
        h = (1 - z) * hh + z * hp
        return h, (h,)
    Y, finals = _run_recurrence("GRU", X, sequence_lens, step, [(h0[d],) for d in range(nd)], direction, nd, clip,
                                lambda x, d: x @ W[d].T + B[d, :3 * H])
    return _rnn_outputs(Y, finals, layout, n_outputs)


@op("LSTM")
def lstm(X: Tensor, W: Tensor, R: Tensor, B: Tensor | None = None, sequence_lens: Tensor | None = None,
         initial_h: Tensor | None = None, initial_c: Tensor | None = None, P: Tensor | None = None, *,
         activation_alpha=None, activation_beta=None, activations=None, clip: float | None = None,
         direction: str = "forward", hidden_size: int | None = None, input_forget: int = 0, layout: int = 0,
         n_outputs: int = 1):
    """ONNX LSTM (gates i, o, f, c; optional peepholes P = (i, o, f)). Outputs Y, Y_h, Y_c."""
    X, nd, H, B, (h0, c0) = _rnn_prep("LSTM", X, W, R, B, sequence_lens, (initial_h, initial_c), layout, 4,
                                      hidden_size)
    acts = _activations("LSTM", activations, activation_alpha, activation_beta, 3, ("Sigmoid", "Tanh", "Tanh"), nd)

    def step(xw, state, d):
        hp, cp = state
        f, g, hact = acts[d]
        gates = xw + hp @ R[d].T
        gi, go, gf, gc = (gates[:, k * H:(k + 1) * H] for k in range(4))
        if P is not None:
            gi = gi + P[d, :H] * cp
            gf = gf + P[d, 2 * H:] * cp
        i = f(_clip(gi, clip))
        fg = 1 - i if input_forget else f(_clip(gf, clip))
        c = fg * cp + i * g(_clip(gc, clip))
        if P is not None:
            go = go + P[d, H:2 * H] * c
        o = f(_clip(go, clip))
        h = o * hact(c)
        return h, (h, c)
    Y, finals = _run_recurrence("LSTM", X, sequence_lens, step, [(h0[d], c0[d]) for d in range(nd)], direction,
                                nd, clip, lambda x, d: x @ W[d].T + (B[d, :4 * H] + B[d, 4 * H:]))
    return _rnn_outputs(Y, finals, layout, n_outputs)



def _drop_output_sequence(node: dict) -> dict:
    # opset 1 recurrent layers had ``output_sequence``; Y is always computed since opset 7
    node["attrs"].pop("output_sequence", None)
    return node


for _name in ("RNN", "GRU", "LSTM"):
    upgrader(_name, below=7)(_drop_output_sequence)

# -------------------------------------------------------------------------------------------- attention

_ONNX_FLOAT_TYPES = {1: ember.float32, 10: ember.float16, 11: ember.float64, 16: ember.bfloat16}


@op("Attention")
def attention(Q: Tensor, K: Tensor, V: Tensor, attn_mask: Tensor | None = None, past_key: Tensor | None = None,
              past_value: Tensor | None = None, nonpad_kv_seqlen: Tensor | None = None, *, is_causal: int = 0,
              kv_num_heads: int | None = None, q_num_heads: int | None = None, qk_matmul_output_mode: int = 0,
              scale: float | None = None, softcap: float = 0.0, softmax_precision: int | None = None,
              left_window_size: int = -1, right_window_size: int = -1, n_outputs: int = 1):
    """ONNX Attention (opset 23-25): scaled dot-product attention with boolean or additive masks,
    causal and sliding-window masking, a KV cache (past_key/past_value -> present_key/value), grouped
    query heads, softcap and the optional intermediate ``qk_matmul_output``. Fully masked rows give 0.
    Outputs Y, present_key, present_value, qk_matmul_output."""
    _need_float("Attention", Q, K, V)
    if (past_key is None) != (past_value is None):
        raise OnnxOpError("ONNX Attention: past_key and past_value must be given together")
    three_d = Q.dim() == 3
    if three_d:
        if not q_num_heads or not kv_num_heads:
            raise OnnxOpError("ONNX Attention: 3-D inputs need q_num_heads and kv_num_heads")
        Bsz = Q.shape[0]

        def heads(t, n):
            return t.reshape(Bsz, t.shape[1], n, t.shape[2] // n).transpose(1, 2)
        Q, K, V = heads(Q, q_num_heads), heads(K, kv_num_heads), heads(V, kv_num_heads)
    elif Q.dim() != 4:
        raise OnnxOpError(f"ONNX Attention: Q must be 3-D or 4-D, got shape {tuple(Q.shape)}")
    dt = Q.dtype
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[3])
    if past_key is not None:
        K = ember.cat([past_key, K], dim=2)
        V = ember.cat([past_value, V], dim=2)
    present_k, present_v = K, V
    Lq, Lk = Q.shape[2], K.shape[2]
    neg = float("-inf")
    dev = Q.device  # every constant beside the inputs (a model may run on any device)
    bias = ember.zeros((Lq, Lk), dtype=dt, device=dev)
    if attn_mask is not None:
        m = attn_mask
        if m.shape[-1] < Lk:  # masks may cover only the new keys' prefix: pad as masked
            grow = Lk - m.shape[-1]
            m = F.pad(m.to(dt) if m.dtype != ember.bool else m.to(ember.float32), (0, grow),
                      value=0.0 if m.dtype == ember.bool else neg)
            if attn_mask.dtype == ember.bool:
                m = m != 0
        if m.dtype == ember.bool:
            m = ember.where(m, ember.zeros((), dtype=dt, device=dev), ember.full((), neg, dtype=dt, device=dev))
        bias = bias + m.to(dt)
    if nonpad_kv_seqlen is not None and past_key is not None:
        raise OnnxOpError("ONNX Attention: nonpad_kv_seqlen cannot be combined with past_key/past_value")
    # the causal / window frontier is bottom-right aligned (offset = cached length)
    if nonpad_kv_seqlen is not None:
        offset = (nonpad_kv_seqlen.to(ember.int64) - Lq).reshape(-1, 1, 1, 1)
    else:
        offset = past_key.shape[2] if past_key is not None else 0
    i = ember.arange(Lq, dtype=ember.int64, device=dev).reshape(Lq, 1)
    j = ember.arange(Lk, dtype=ember.int64, device=dev).reshape(1, Lk)
    allowed = None
    if is_causal:
        allowed = j <= i + offset
    if left_window_size >= 0 or right_window_size >= 0:
        diff = i + offset - j
        w = ember.ones(diff.shape, dtype=ember.bool, device=dev)
        if left_window_size >= 0:
            w = w & (diff <= left_window_size)
        if right_window_size >= 0:
            w = w & (-diff <= right_window_size)
        allowed = w if allowed is None else allowed & w
    if allowed is not None:
        bias = bias + ember.where(allowed, ember.zeros((), dtype=dt, device=dev),
                                  ember.full((), neg, dtype=dt, device=dev))
    if nonpad_kv_seqlen is not None:
        keep = ember.arange(Lk, dtype=ember.int64, device=dev).reshape(1, 1, 1, Lk) < \
            nonpad_kv_seqlen.to(ember.int64).reshape(-1, 1, 1, 1)
        bias = bias + ember.where(keep, ember.zeros((), dtype=dt, device=dev),
                                  ember.full((), neg, dtype=dt, device=dev))
    hq, hk = Q.shape[1], K.shape[1]
    if hq != hk:
        if hq % hk or V.shape[1] != hk:
            raise OnnxOpError(f"ONNX Attention: {hq} query heads cannot share {hk} key/value heads")
        K = K.repeat_interleave(hq // hk, dim=1)
        V = V.repeat_interleave(hq // hk, dim=1)
    s = math.sqrt(scale)
    qk = (Q * s) @ (K * s).transpose(-1, -2)
    if softcap and softcap > 0:
        qk = (qk / softcap).tanh() * softcap
    scores = qk + bias
    qk_out = scores if qk_matmul_output_mode == 2 else qk
    if softmax_precision is not None:
        if softmax_precision not in _ONNX_FLOAT_TYPES:
            raise OnnxOpError(f"ONNX Attention: softmax_precision {softmax_precision} is not a float type")
        scores = scores.to(_ONNX_FLOAT_TYPES[softmax_precision])
    row_max = scores.amax(dim=-1, keepdim=True)
    dead = row_max == neg
    e = (scores - ember.where(dead, ember.zeros_like(row_max), row_max)).exp()
    tot = e.sum(dim=-1, keepdim=True)
    probs = e / ember.where(tot == 0, ember.ones_like(tot), tot)
    bias_dead = bias.amax(dim=-1, keepdim=True) == neg
    probs = ember.where(bias_dead, ember.zeros_like(probs), probs).to(dt)
    if qk_matmul_output_mode == 3:
        qk_out = probs
    elif qk_matmul_output_mode not in (0, 1, 2):
        raise OnnxOpError(f"ONNX Attention: qk_matmul_output_mode {qk_matmul_output_mode} is not 0-3")
    Y = probs @ V
    if three_d:
        Y = Y.transpose(1, 2).reshape(Y.shape[0], Y.shape[2], -1)
    if n_outputs < 2:
        return Y
    return (Y, present_k, present_v, qk_out.to(dt))[:n_outputs]


@op("RotaryEmbedding")
def rotary_embedding(input: Tensor, cos_cache: Tensor, sin_cache: Tensor, position_ids: Tensor | None = None, *,
                     interleaved: int = 0, num_heads: int = 0, rotary_embedding_dim: int = 0) -> Tensor:
    """ONNX RotaryEmbedding: rotate (pairs of) the first ``rotary_embedding_dim`` features of each head
    by the cached cos/sin of its position. Input is (B, heads, S, D) or (B, S, heads * D)."""
    _need_float("RotaryEmbedding", input, cos_cache, sin_cache)
    shape = tuple(input.shape)
    if input.dim() == 4:
        x = input.transpose(1, 2)
    elif input.dim() == 3:
        if not num_heads:
            raise OnnxOpError("ONNX RotaryEmbedding: 3-D input needs num_heads")
        x = input.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    else:
        raise OnnxOpError(f"ONNX RotaryEmbedding: input must be 3-D or 4-D, got shape {shape}")
    D = x.shape[3]
    rd = rotary_embedding_dim or D
    if position_ids is not None:
        cos, sin = cos_cache[position_ids.to(ember.int64)], sin_cache[position_ids.to(ember.int64)]
    else:
        cos, sin = cos_cache, sin_cache
    if cos.shape[-1] != rd // 2 or sin.shape[-1] != rd // 2:
        raise OnnxOpError(f"ONNX RotaryEmbedding: cos/sin caches' last dim {cos.shape[-1]} is not "
                          f"rotary_embedding_dim/2 = {rd // 2}")
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)   # one value per head
    rot, keep = x[..., :rd], x[..., rd:]
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rot = ember.stack([real, imag], dim=-1).reshape(rot.shape)
    else:
        rot = ember.cat([real, imag], dim=-1)
    out = ember.cat([rot, keep], dim=-1)
    return out.reshape(shape) if input.dim() == 3 else out.transpose(1, 2)


# ------------------------------------------------------------------------------------------------ losses

def _nll(name, logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index, reduction: str) -> Tensor:
    if reduction not in ("none", "sum", "mean"):
        raise OnnxOpError(f"ONNX {name}: reduction {reduction!r} is not none/sum/mean")
    if target.dtype not in (ember.int32, ember.int64):
        raise OnnxOpError(f"ONNX {name}: target dtype {target.dtype} is not int32/int64")
    t = target.to(ember.int64)
    C = logp.shape[1]
    valid = ember.ones(t.shape, dtype=ember.bool, device=t.device) if ignore_index is None else t != ignore_index
    safe = ember.where(valid, t, ember.zeros_like(t))
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(logp.dtype)
    if weight is not None:
        if weight.shape != (C,):
            raise OnnxOpError(f"ONNX {name}: weight shape {tuple(weight.shape)} is not ({C},)")
        w = w * weight[safe]
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


@op("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
                                 ignore_index: int | None = None, reduction: str = "mean") -> Tensor:
    """ONNX NegativeLogLikelihoodLoss on (N, C, d...) log-probabilities; "mean" divides by the total
    weight of the non-ignored targets."""
    _need_float("NegativeLogLikelihoodLoss", input, weight)
    return _nll("NegativeLogLikelihoodLoss", input, target, weight, ignore_index, reduction)


@op("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(scores: Tensor, labels: Tensor, weights: Tensor | None = None, *,
                               ignore_index: int | None = None, reduction: str = "mean", n_outputs: int = 1):
    """ONNX SoftmaxCrossEntropyLoss: NLL of log_softmax(scores) over dim 1; the optional second output
    is the log-probabilities."""
    _need_float("SoftmaxCrossEntropyLoss", scores, weights)
    logp = scores.log_softmax(dim=1)
    loss = _nll("SoftmaxCrossEntropyLoss", logp, labels, weights, ignore_index, reduction)
    return (loss, logp) if n_outputs > 1 else loss
