"""Gradient rules of the nn ops (activations, normalisations, attention).

Each rule is written with backend ops only (through ``F``), so ``create_graph=True`` records the
backward too. Where PyTorch's derivative picks a side at a kink (relu at 0, hardtanh at its
bounds), the rules pick the same side, and NaN inputs give the gradients PyTorch gives.
"""

from __future__ import annotations

import math

from .... import _dtype as dt
from .base import rule

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _or(F, a, b):
    return F.run("logical_or", a, b)


def _and(F, a, b):
    return F.run("logical_and", a, b)


# ---- activations ------------------------------------------------------------------------------------
@rule("relu", save=("o0",))
def _relu(F, g, s, n):
    # PyTorch: the result <= 0 (or 0 at x = 0) passes no gradient; NaN passes it
    if F.b.supports("relu_backward"):  # one launch instead of two (first-order only, like norm_affine's)
        return (F.run("relu_backward", s[0], g),)
    return (F.where(F.cmp("le", s[0], 0.0), 0.0, g),)


@rule("leaky_relu", save=(0,))
def _leaky_relu(F, g, s, n):
    return (F.where(F.cmp("gt", s[0], 0.0), g, F.mul(g, n.attrs["negative_slope"])),)


@rule("hardtanh", save=(0,))
def _hardtanh(F, g, s, n):
    x, a = s[0], n.attrs
    out = _or(F, F.cmp("le", x, a["min_val"]), F.cmp("ge", x, a["max_val"]))
    return (F.where(out, 0.0, g),)


@rule("elu", save=(0,))
def _elu(F, g, s, n):
    x, a = s[0], n.attrs
    scale, alpha, ins = a["scale"], a["alpha"], a["input_scale"]
    # exp of x below 0, of 0 elsewhere: the positive branch is discarded and must not overflow
    # (inf * 0 = NaN in a second derivative); a select, not a clamp, so that the second derivative
    # at 0 is the right side's (0), as PyTorch's
    neg_x = F.where(F.cmp("lt", x, 0.0), x, 0.0)
    neg = F.mul(F.un("exp", F.mul(neg_x, ins)), alpha * scale * ins)
    return (F.mul(g, F.where(F.cmp("le", x, 0.0), neg, scale)),)


@rule("gelu", save=(0,))
def _gelu(F, g, s, n):
    x = s[0]
    if F.b.supports("gelu_backward"):  # one launch instead of ~16 (first-order only, like relu's)
        return (F.run("gelu_backward", x, g, approximate=n.attrs["approximate"]),)
    if n.attrs["approximate"] == "tanh":
        x2 = F.mul(x, x)
        t = F.un("tanh", F.mul(F.add(x, F.mul(F.mul(x2, x), _GELU_KAPPA)), _GELU_BETA))
        left = F.mul(F.add(t, 1.0), 0.5)
        right = F.mul(F.mul(F.mul(x, 0.5), F.sub(1.0, F.mul(t, t))),
                      F.mul(F.add(F.mul(x2, 3.0 * _GELU_KAPPA), 1.0), _GELU_BETA))
        return (F.mul(g, F.add(left, right)),)
    cdf = F.mul(F.add(F.un("erf", F.mul(x, _SQRT1_2)), 1.0), 0.5)
    pdf = F.mul(F.un("exp", F.mul(F.mul(x, x), -0.5)), _INV_SQRT_2PI)
    return (F.mul(g, F.add(cdf, F.mul(x, pdf))),)


@rule("silu", save=(0,))
def _silu(F, g, s, n):
    x = s[0]
    sg = F.un("sigmoid", x)
    return (F.mul(g, F.mul(sg, F.add(F.mul(x, F.sub(1.0, sg)), 1.0))),)


@rule("mish", save=(0,))
def _mish(F, g, s, n):
    x = s[0]
    # tanh(softplus(x)) from sg = sigmoid(x): with u = 1 + eˣ = 1/(1 - sg), tanh(log u) =
    # (u² - 1)/(u² + 1) = sg(2 - sg) / (1 + (1 - sg)²): no overflow, no cancellation, and smooth
    # (so its derivative, the second derivative of mish, is right everywhere, 0 included)
    sg = F.un("sigmoid", x)
    one_minus = F.sub(1.0, sg)
    t = F.div(F.mul(sg, F.sub(2.0, sg)), F.add(F.mul(one_minus, one_minus), 1.0))
    return (F.mul(g, F.add(t, F.mul(F.mul(x, sg), F.sub(1.0, F.mul(t, t))))),)


@rule("softplus", save=(0,))
def _softplus(F, g, s, n):
    x, a = s[0], n.attrs
    beta, th = a["beta"], a["threshold"]
    xb = F.mul(x, beta)
    # at beta x == threshold the slope is sigmoid(threshold), a constant there: PyTorch's second
    # derivative is 0 at that point, which the constant gives
    at = F.mul(g, 1.0 / (1.0 + math.exp(-th)) if th > -700 else 0.0)
    soft = F.where(F.cmp("eq", xb, th), at, F.mul(g, F.un("sigmoid", xb)))
    return (F.where(F.cmp("gt", xb, th), g, soft),)


@rule("hardsigmoid", save=(0,))
def _hardsigmoid(F, g, s, n):
    x = s[0]
    inside = _and(F, F.cmp("gt", x, -3.0), F.cmp("lt", x, 3.0))
    return (F.where(inside, F.div(g, 6.0), 0.0),)


@rule("hardswish", save=(0,))
def _hardswish(F, g, s, n):
    x = s[0]
    mid = F.mul(g, F.add(F.div(x, 3.0), 0.5))
    return (F.where(F.cmp("le", x, -3.0), 0.0, F.where(F.cmp("lt", x, 3.0), mid, g)),)


@rule("logsigmoid", save=(0,))
def _logsigmoid(F, g, s, n):
    return (F.mul(g, F.un("sigmoid", F.neg(s[0]))),)


# ---- normalisation --------------------------------------------------------------------------------------
def _mean(F, x, dims):
    return F.run("mean", x, dim=dims, keepdim=True, dtype=F.dtype(x))


def _stats(F, x, dims, eps):
    """(mean, rstd) recomputed with backend ops, so a second derivative sees how they depend on x."""
    mu = _mean(F, x, dims)
    var = F.run("var", x, dim=dims, correction=0, keepdim=True)
    return mu, F.un("rsqrt", F.add(var, eps))


@rule("norm_affine", save=(0, 1), multi=True, nondiff_outputs=(1, 2))
def _norm_affine(F, gs, s, n):
    g = gs[0]
    x, w = s
    if g is None:
        return (None, None, None)
    dims, eps = tuple(n.attrs["dim"]), n.attrs["eps"]
    if F.b.supports("norm_affine_backward"):  # fused, first-order only (see the attention rule)
        bias = n.in_meta[2] if len(n.in_meta) > 2 else None
        return F.run("norm_affine_backward", x, w, g, dim=dims, eps=eps, bias_shape=None if bias is None else bias[0])
    mu, rstd = _stats(F, x, dims, eps)
    xhat = F.mul(F.sub(x, mu), rstd)
    gxhat = g if w is None else F.mul(g, w)
    a = _mean(F, gxhat, dims)
    b = _mean(F, F.mul(gxhat, xhat), dims)
    gx = F.mul(rstd, F.sub(F.sub(gxhat, a), F.mul(xhat, b)))
    gw = F.sum_to(F.mul(g, xhat), n.in_meta[1][0]) if n.in_meta[1] is not None else None
    gb = F.sum_to(g, n.in_meta[2][0]) if len(n.in_meta) > 2 and n.in_meta[2] is not None else None
    return (gx, gw, gb)


@rule("batch_norm", save=(0, 1), multi=True, nondiff_outputs=(1, 2))
def _batch_norm(F, gs, s, n):
    # the running statistics and the counter (inputs 3 to 5) are written by the op and get no gradient
    g = gs[0]
    x, w = s
    has_bias = len(n.in_meta) > 2 and n.in_meta[2] is not None
    rest = (None,) * (len(n.in_meta) - 3)
    if g is None:
        return (None, None, None) + rest
    eps = n.attrs["eps"]
    if F.b.supports("batch_norm_backward"):  # fused, first-order only (see the attention rule)
        gx, gw, gb = F.run("batch_norm_backward", x, w, g, eps=eps, has_bias=has_bias)
        return (gx, gw, gb) + rest
    shape = F.shape(x)
    c, dims = shape[1], (0,) + tuple(range(2, len(shape)))
    cshape = (1, c) + (1,) * (len(shape) - 2)
    mu, rstd = _stats(F, x, dims, eps)
    xhat = F.mul(F.sub(x, mu), rstd)
    gxhat = g if w is None else F.mul(g, F.reshape(w, cshape))
    a = _mean(F, gxhat, dims)
    b = _mean(F, F.mul(gxhat, xhat), dims)
    gx = F.mul(rstd, F.sub(F.sub(gxhat, a), F.mul(xhat, b)))
    gw = None if w is None else F.reshape(F.sum_to(F.mul(g, xhat), cshape), (c,))
    gb = F.reshape(F.sum_to(g, cshape), (c,)) if has_bias else None
    return (gx, gw, gb) + rest


@rule("rms_norm", save=(0, 1))
def _rms_norm(F, g, s, n):
    x, w = s
    dims, eps = tuple(n.attrs["dim"]), n.attrs["eps"]
    if F.b.supports("rms_norm_backward"):  # fused, first-order only (see the attention rule)
        return F.run("rms_norm_backward", x, w, g, dim=dims, eps=eps)
    r = F.un("rsqrt", F.add(_mean(F, F.mul(x, x), dims), eps))
    xhat = F.mul(x, r)
    gxhat = g if w is None else F.mul(g, w)
    gx = F.mul(r, F.sub(gxhat, F.mul(xhat, _mean(F, F.mul(gxhat, xhat), dims))))
    gw = F.sum_to(F.mul(g, xhat), n.in_meta[1][0]) if n.in_meta[1] is not None else None
    return (gx, gw)


# ---- resampling -----------------------------------------------------------------------------------------
@rule("resample_taps", save=(1, 2))
def _resample_taps(F, g, s, n):
    idx, w = s
    dim = n.attrs["dim"]
    shape, dtype = n.in_meta[0]
    k_taps, n_out = F.shape(idx)
    wshape = [1] * len(shape)
    wshape[dim] = n_out
    gx = F.zeros(shape, dtype)
    for k in range(k_taps):
        rows = ((k, k + 1, 1), (0, n_out, 1))
        ik = F.reshape(F.run("slice", idx, index=rows), (n_out,))
        wk = F.reshape(F.run("slice", w, index=rows), wshape)
        gx = F.run("index_add", gx, ik, F.mul(g, wk), dim=dim, alpha=1)
    return (gx, None, None)


# ---- attention -------------------------------------------------------------------------------------------
@rule("scaled_dot_product_attention", save=(0, 1, 2, 3, "o0"))
def _sdpa(F, g, s, n):
    q, k, v, mask, o = s
    scale, causal = n.attrs["scale"], n.attrs["is_causal"]
    if F.b.supports("scaled_dot_product_attention_backward"):
        # the backend's fused backward (recomputes the weights a block at a time). It has no rule
        # of its own, so under create_graph (F over Autodiff) the composite below runs instead
        gq, gk, gv, gm = F.run("scaled_dot_product_attention_backward", q, k, v, mask, o, g, scale=scale,
                               is_causal=causal)
        gmask = None
        if gm is not None:
            mshape = n.in_meta[3][0]
            gshape = F.shape(gm)
            if len(gshape) < len(mshape):
                gm = F.reshape(gm, (1,) * (len(mshape) - len(gshape)) + gshape)
            gmask = F.sum_to(gm, mshape)
        return (F.sum_to(gq, n.in_meta[0][0]), F.sum_to(gk, n.in_meta[1][0]), F.sum_to(gv, n.in_meta[2][0]), gmask)
    qs = F.mul(q, scale)
    scores = F.matmul(qs, F.transpose(k))
    L, S = F.shape(scores)[-2:]
    if 0 in F.shape(scores) or 0 in F.shape(g):  # nothing attended: every gradient is zero
        zeros = [None if m is None or not m[1].is_floating_point else F.zeros(m[0], m[1]) for m in n.in_meta]
        if mask is not None and F.dtype(mask) is dt.bool:
            zeros[3] = None
        return tuple(zeros)
    if mask is not None:
        if F.dtype(mask) is dt.bool:
            scores = F.where(mask, scores, -math.inf)
        else:
            scores = F.add(scores, mask)
    if causal:
        upper = F.run("triu", F.full((L, S), True, dt.bool), diagonal=1)
        scores = F.where(upper, -math.inf, scores)
    m = F.run("amax", scores, dim=(len(F.shape(scores)) - 1,), keepdim=True)
    m = F.where(F.un("isfinite", m), m, 0.0)
    e = F.un("exp", F.sub(scores, m))
    denom = F.sum(e, (len(F.shape(e)) - 1,), keepdim=True)
    p = F.div(e, F.where(F.cmp("eq", denom, 0.0), 1.0, denom))  # fully masked rows: p = 0
    gv = F.matmul(F.transpose(p), g)
    gp = F.matmul(g, F.transpose(v))
    rowdot = F.sum(F.mul(g, o), (len(F.shape(g)) - 1,), keepdim=True)
    gs = F.mul(p, F.sub(gp, rowdot))
    gq = F.mul(F.matmul(gs, k), scale)
    gk = F.matmul(F.transpose(gs), qs)
    gmask = None
    if mask is not None and F.dtype(mask).is_floating_point:
        gmask = F.sum_to(gs, n.in_meta[3][0])
    return (F.sum_to(gq, n.in_meta[0][0]), F.sum_to(gk, n.in_meta[1][0]), F.sum_to(gv, n.in_meta[2][0]), gmask)


@rule("dropout", save=("o1",), multi=True)
def _dropout(F, gs, s, n):
    g = gs[0]  # the mask output carries no gradient
    return (None,) if g is None else (F.mul(g, s[0]),)


@rule("attention_weights", save=("o0", "o1"), multi=True)
def _attention_weights(F, gs, s, n):
    gw, g = gs
    if g is None and gw is None:
        return (None,)
    w, d = s
    scale, p = n.attrs["scale"], n.attrs["dropout_p"]
    if gw is None and F.b.supports("attention_weights_backward"):  # one pass (first-order only, see below)
        return (F.run("attention_weights_backward", w, d, g, scale=scale, dropout_p=p),)
    # the weights' gradient: dropped's through the kept weights (where dropped is nonzero; a zero weight's
    # gradient is zero anyway), plus the weights' own; then softmax's backward
    gp = None
    if g is not None:
        gp = g if p == 0.0 else F.where(F.cmp("ne", d, 0.0), F.mul(g, float(F.dtype(w).np.type(1.0 / (1.0 - p)))),
                                         0.0)
    gp = gw if gp is None else gp if gw is None else F.add(gp, gw)
    dot = F.sum(F.mul(w, gp), (len(F.shape(w)) - 1,), keepdim=True)
    return (F.mul(F.mul(w, F.sub(gp, dot)), scale),)


NONDIFF_NN: set = set()
