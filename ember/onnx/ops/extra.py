"""ONNX operators no other module covers (see _registry.py for the conventions): the recurrent
state ops of opset 27 (CausalConvWithState, LinearAttention), the preview training optimizers
(Adagrad, Adam, Momentum), TfIdfVectorizer, ImageDecoder (through Pillow) and two ai.onnx.ml
feature ops (Binarizer, ArrayFeatureExtractor) and its TreeEnsemble.

>>> import ember
>>> from ember.onnx import ops
>>> ops.binarizer(ember.tensor([-1.0, 0.5]), threshold=0.0)
tensor([0., 1.])
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np

import ember
import ember.nn.functional as F

from ._registry import OnnxOpError, from_host, op, to_host

__all__ = ["causal_conv_with_state", "linear_attention", "adagrad", "adam", "momentum", "binarizer",
           "array_feature_extractor", "tfidf_vectorizer", "image_decoder", "tree_ensemble"]


@op("CausalConvWithState", since=27)
def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation: str = "none"):  # noqa: A002
    """CausalConvWithState: depthwise causal 1-D convolution over ``(batch, channels, length)``,
    left-padded with ``past_state`` (zeros by default); returns ``(output, present_state)`` where
    the state is the last ``k - 1`` positions of the padded input. ``activation``: none/silu/swish."""
    if activation not in ("none", "silu", "swish"):
        raise OnnxOpError(f"CausalConvWithState: activation {activation!r} is not one of none, silu, swish")
    if input.dim() != 3 or weight.dim() != 3:
        raise OnnxOpError(f"CausalConvWithState: ember supports rank-3 input and weight, got "
                          f"{tuple(input.shape)} and {tuple(weight.shape)}")
    b, c, _ = input.shape
    k = weight.shape[2]
    pad = ember.zeros(b, c, k - 1, dtype=input.dtype, device=input.device) if past_state is None else past_state
    padded = ember.cat([pad, input], 2)
    out = F.conv1d(padded, weight, bias, groups=c)
    if activation != "none":   # half types: the activation in float32, as the reference does
        out = F.silu(out if out.dtype == ember.float64 else out.float()).to(input.dtype)
    return out, padded[:, :, padded.shape[2] - (k - 1):]


def _work(x):
    # float32 working precision (float64 stays float64)
    return x if x.dtype == ember.float64 else x.float()


def _heads(x, h: int):
    b, t, hd = x.shape
    if hd % h:
        raise OnnxOpError(f"LinearAttention: last dim {hd} of shape {tuple(x.shape)} is not divisible by {h} heads")
    return _work(x.reshape(b, t, h, hd // h).permute(0, 2, 1, 3))


@op("LinearAttention", since=27)
def linear_attention(query, key, value, past_state=None, decay=None, beta=None, *, chunk_size: int = 64,
                     kv_num_heads: int, q_num_heads: int, scale: float = 0.0,
                     update_rule: str = "gated_delta"):
    """LinearAttention: recurrent linear attention over ``(batch, time, heads*dim)`` inputs with a
    ``(batch, kv_heads, d_k, d_v)`` state; ``update_rule`` linear/gated (decay)/delta (beta)/
    gated_delta. Returns ``(output, present_state)``; computed in float32 (float64 inputs in float64)."""
    if update_rule not in ("linear", "gated", "delta", "gated_delta"):
        raise OnnxOpError(f"LinearAttention: unknown update_rule {update_rule!r}")
    if q_num_heads <= 0 or kv_num_heads <= 0 or q_num_heads % kv_num_heads:
        raise OnnxOpError(f"LinearAttention: q_num_heads {q_num_heads} must be a positive multiple of "
                          f"kv_num_heads {kv_num_heads}")
    gating = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if gating != (decay is not None) or delta != (beta is not None):
        raise OnnxOpError(f"LinearAttention: update_rule {update_rule!r} needs decay={gating}, beta={delta}")
    b, t, _ = query.shape
    q4, k4, v4 = _heads(query, q_num_heads), _heads(key, kv_num_heads), _heads(value, kv_num_heads)
    d_k, d_v = q4.shape[-1], v4.shape[-1]
    group = q_num_heads // kv_num_heads
    if gating:
        if decay.shape[-1] == kv_num_heads:
            g4 = _work(decay.reshape(b, t, kv_num_heads, 1).permute(0, 2, 1, 3))
        elif decay.shape[-1] == kv_num_heads * d_k:
            g4 = _heads(decay, kv_num_heads)
        else:
            raise OnnxOpError(f"LinearAttention: decay shape {tuple(decay.shape)} does not fit the heads")
    if delta:
        if beta.shape[-1] not in (kv_num_heads, 1):
            raise OnnxOpError(f"LinearAttention: beta shape {tuple(beta.shape)} does not fit the heads")
        b4 = _work(beta.reshape(b, t, beta.shape[-1], 1).permute(0, 2, 1, 3))
    state_dtype = query.dtype if past_state is None else past_state.dtype
    state = (ember.zeros(b, kv_num_heads, d_k, d_v, dtype=q4.dtype, device=q4.device) if past_state is None
             else past_state.to(q4.dtype))
    s = 1.0 / math.sqrt(d_k) if not scale else float(scale)
    outs = []
    for i in range(t):
        k_t, v_t = k4[:, :, i], v4[:, :, i]
        if gating:
            state = state * g4[:, :, i].exp()[..., None]
        if delta:
            retrieved = (state * k_t[..., :, None]).sum(-2)
            v_t = b4[:, :, i] * (v_t - retrieved)
        state = state + k_t[..., :, None] * v_t[..., None, :]
        read = state if group == 1 else state.repeat_interleave(group, 1)
        outs.append((q4[:, :, i][..., :, None] * read).sum(-2) * s)
    out = ember.stack(outs, 2).permute(0, 2, 1, 3).reshape(b, t, q_num_heads * d_v)
    return out.to(query.dtype), state.to(state_dtype)


def _scalar(t) -> float:
    return float(t.reshape(()).item()) if isinstance(t, ember.Tensor) else float(t)


def _groups(data: tuple, k: int, what: str) -> tuple[int, list[tuple]]:
    if len(data) < 2 or (len(data) - 2) % k:
        raise OnnxOpError(f"{what}: expected R, T and {k} groups of tensors, got {len(data)} inputs")
    n = (len(data) - 2) // k
    return n, [tuple(data[2 + j * n + i] for j in range(k)) for i in range(n)]


@op("Adagrad", domain="ai.onnx.preview.training")
def adagrad(*data, decay_factor: float = 0.0, epsilon: float = 0.0, norm_coefficient: float = 0.0):
    """Adagrad (preview training): inputs R, T, X..., G..., H...; returns X_new..., H_new..."""
    n, groups = _groups(data, 3, "Adagrad")
    r, t = _scalar(data[0]), _scalar(data[1])
    lr = r / (1 + t * decay_factor)
    xs, hs = [], []
    for x, g, h in groups:
        g = norm_coefficient * x + g
        h = h + g * g
        xs.append(x - lr * g / (h.sqrt() + epsilon))
        hs.append(h)
    return tuple(xs + hs)


@op("Adam", domain="ai.onnx.preview.training")
def adam(*data, alpha: float = 0.9, beta: float = 0.999, epsilon: float = 0.0, norm_coefficient: float = 0.0,
         norm_coefficient_post: float = 0.0):
    """Adam (preview training): inputs R, T, X..., G..., V..., H...; returns X..., V..., H... updated."""
    n, groups = _groups(data, 4, "Adam")
    r, t = _scalar(data[0]), _scalar(data[1])
    lr = r * math.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
    xs, vs, hs = [], [], []
    for x, g, v, h in groups:
        g = norm_coefficient * x + g
        v = alpha * v + (1 - alpha) * g
        h = beta * h + (1 - beta) * (g * g)
        xs.append((1 - norm_coefficient_post) * (x - lr * (v / (h.sqrt() + epsilon))))
        vs.append(v)
        hs.append(h)
    return tuple(xs + vs + hs)


@op("Momentum", domain="ai.onnx.preview.training")
def momentum(*data, alpha: float, beta: float, mode: str, norm_coefficient: float):
    """Momentum (preview training, ``mode`` standard or nesterov): inputs R, T, X..., G..., V...;
    returns X_new..., V_new..."""
    if mode not in ("standard", "nesterov"):
        raise OnnxOpError(f"Momentum: mode {mode!r} is not standard or nesterov")
    n, groups = _groups(data, 3, "Momentum")
    r, t = _scalar(data[0]), _scalar(data[1])
    b = beta if t > 0 else 1.0
    xs, vs = [], []
    for x, g, v in groups:
        g = norm_coefficient * x + g
        v = alpha * v + b * g
        xs.append(x - r * v if mode == "standard" else x - r * (g + alpha * v))
        vs.append(v)
    return tuple(xs + vs)


@op("Binarizer", domain="ai.onnx.ml")
def binarizer(X, *, threshold: float = 0.0):
    """Binarizer (ai.onnx.ml): 1 where ``X > threshold``, else 0, in X's dtype."""
    return (X > threshold).to(X.dtype)


@op("ArrayFeatureExtractor", domain="ai.onnx.ml")
def array_feature_extractor(X, Y):
    """ArrayFeatureExtractor (ai.onnx.ml): the entries of X's last axis at the indices Y (a 1-D
    input gives one row, as onnxruntime does)."""
    idx = Y.reshape(-1).to(ember.int64)
    out = X.index_select(X.dim() - 1, idx)
    return out.reshape(1, -1) if X.dim() == 1 else out


@op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(X, *, max_gram_length: int, max_skip_count: int, min_gram_length: int, mode: str,
                     ngram_counts: Sequence[int], ngram_indexes: Sequence[int],
                     pool_int64s: Sequence[int] | None = None, pool_strings: Sequence[str] | None = None,
                     weights: Sequence[float] | None = None):
    """TfIdfVectorizer: counts of the pool's n-grams (lengths ``min_gram_length`` to
    ``max_gram_length``, items ``skip + 1`` apart for skips up to ``max_skip_count``) in each row of
    integer ``X``; ``mode`` TF (counts), IDF (weight where present) or TFIDF (count * weight).
    Integer data in, float32 out: computed on the host (not differentiable)."""
    if pool_int64s is None:
        raise OnnxOpError("TfIdfVectorizer: string pools are not supported (ember has no string tensors)")
    if mode not in ("TF", "IDF", "TFIDF"):
        raise OnnxOpError(f"TfIdfVectorizer: mode {mode!r} is not TF, IDF or TFIDF")
    pool = list(pool_int64s)
    grams: dict[tuple, int] = {}
    gid = 0
    for i, start in enumerate(ngram_counts):   # the pool holds the 1-grams, then the 2-grams...
        end = ngram_counts[i + 1] if i + 1 < len(ngram_counts) else len(pool)
        n = i + 1
        for j in range(start, end, n):
            if min_gram_length <= n <= max_gram_length:
                grams[tuple(pool[j:j + n])] = gid
            gid += 1
    size = max(ngram_indexes) + 1
    x = to_host(X)
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    counts = np.zeros((rows.shape[0], size), np.float32)
    for r, row in enumerate(rows.tolist()):
        first_n = min_gram_length
        for skip in range(1, max_skip_count + 2):
            for s0 in range(len(row)):
                if s0 + skip * (first_n - 1) >= len(row):
                    break
                for n in range(first_n, max_gram_length + 1):
                    if s0 + skip * (n - 1) >= len(row):
                        break
                    g = grams.get(tuple(row[s0:s0 + skip * (n - 1) + 1:skip]))
                    if g is not None:
                        counts[r, ngram_indexes[g]] += 1
            if first_n == 1:   # unigrams are counted once, not once per skip
                first_n = 2
                if first_n > max_gram_length:
                    break
    w = np.asarray(weights if weights else np.ones(size), np.float32)
    if mode == "IDF":
        counts = (counts > 0) * w
    elif mode == "TFIDF":
        counts = counts * w
    out = counts.astype(np.float32)
    return from_host(out[0] if x.ndim == 1 else out, X)


@op("ImageDecoder", since=20)
def image_decoder(encoded_stream, *, pixel_format: str = "RGB"):
    """ImageDecoder: decode a 1-D uint8 encoded image (PNG, JPEG, BMP, TIFF, WebP... whatever the
    optional Pillow package reads) to ``(H, W, 3)`` RGB/BGR or ``(H, W, 1)`` Grayscale uint8."""
    try:
        from PIL import Image
    except ImportError as e:
        raise OnnxOpError("ImageDecoder needs the Pillow package (pip install pillow)") from e
    if pixel_format not in ("RGB", "BGR", "Grayscale"):
        raise OnnxOpError(f"ImageDecoder: pixel_format {pixel_format!r} is not RGB, BGR or Grayscale")
    try:
        img = Image.open(io.BytesIO(to_host(encoded_stream).tobytes()))
        if pixel_format == "Grayscale":
            a = np.asarray(img.convert("L"))[:, :, None]
        else:
            a = np.asarray(img.convert("RGB") if img.mode not in ("RGB",) else img)
            a = a[:, :, ::-1] if pixel_format == "BGR" else a
    except (OSError, ValueError) as e:
        raise OnnxOpError(f"ImageDecoder: cannot decode the image ({e})") from e
    return from_host(np.array(a, dtype=np.uint8, order="C"), encoded_stream)


def _host(v):
    return to_host(v) if isinstance(v, ember.Tensor) else np.asarray(v)


@op("TreeEnsemble", domain="ai.onnx.ml", since=5)
def tree_ensemble(X, *, nodes_splits, nodes_featureids, nodes_modes, nodes_truenodeids, nodes_falsenodeids,
                  nodes_trueleafs, nodes_falseleafs, leaf_targetids, leaf_weights, tree_roots,
                  post_transform: int = 0, aggregate_function: int = 1, nodes_hitrates=None,
                  nodes_missing_value_tracks_true=None, membership_values=None, n_targets: int | None = None):
    """TreeEnsemble (ai.onnx.ml 5): sum/average/min/max of the leaf weights each tree reaches for each
    row of ``X`` (modes: 0 <=, 1 <, 2 >=, 3 >, 4 ==, 5 !=, 6 set membership). Computed on the host."""
    if post_transform != 0:
        raise OnnxOpError(f"TreeEnsemble: post_transform {post_transform} is not supported (only NONE)")
    if aggregate_function not in (0, 1, 2, 3):
        raise OnnxOpError(f"TreeEnsemble: unknown aggregate_function {aggregate_function}")
    x = to_host(X)
    splits, modes = _host(nodes_splits).astype(np.float64), _host(nodes_modes).astype(int)
    feats, tn, fn = list(nodes_featureids), list(nodes_truenodeids), list(nodes_falsenodeids)
    tl, fl = list(nodes_trueleafs), list(nodes_falseleafs)
    tids, lw = list(leaf_targetids), _host(leaf_weights).astype(np.float64)
    missing = list(nodes_missing_value_tracks_true or [0] * len(feats))
    members: dict[int, set] = {}
    if (modes == 6).any():
        if membership_values is None:
            raise OnnxOpError("TreeEnsemble: set-membership nodes need membership_values")
        vals = iter(_host(membership_values).tolist())
        for i in np.nonzero(modes == 6)[0]:
            sset = set()
            for v in vals:
                if np.isnan(v):
                    break
                sset.add(v)
            members[int(i)] = sset
    tests = {0: np.less_equal, 1: np.less, 2: np.greater_equal, 3: np.greater, 4: np.equal, 5: np.not_equal}

    def reach(row, i: int, leaf: bool) -> int:
        while not leaf:
            v = row[feats[i]]
            go = (v in members[i]) if modes[i] == 6 else bool(tests[modes[i]](v, splits[i]))
            go = go or (bool(missing[i]) and np.isnan(v))
            i, leaf = (tn[i], bool(tl[i])) if go else (fn[i], bool(fl[i]))
        return i

    n_t = int(n_targets or (max(tids) + 1))
    big = float(np.finfo(x.dtype).max) if x.dtype.kind == "f" else np.inf
    init = {0: 0.0, 1: 0.0, 2: big, 3: -big}[aggregate_function]   # as onnxruntime leaves unreached targets
    out = np.full((x.shape[0], n_t), init)
    for r, row in enumerate(x):
        for root in tree_roots:
            is_leaf = bool(tl[root] and fl[root] and tn[root] == fn[root])
            leaf = reach(row, root, is_leaf) if not is_leaf else tn[root]
            t, w = tids[leaf], lw[leaf]
            if aggregate_function == 1:
                out[r, t] += w
            elif aggregate_function == 0:
                out[r, t] += w / len(tree_roots)
            elif aggregate_function == 2:
                out[r, t] = min(out[r, t], w)
            else:
                out[r, t] = max(out[r, t], w)
    return from_host(out.astype(x.dtype), X)
