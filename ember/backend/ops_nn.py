"""Catalogue entries for the nn family of backend ops (merged into base.OPS).

Every op here is optional for a backend: the frontend (``ember/nn``) asks ``supports(op)`` and
otherwise decomposes into primitives, and the ``*_backward`` ops are used by the gradient rules only
when present (they have no rules themselves, so double backward takes the rules' composite path).
The set is listed in :data:`COMPOSITES` for that reason. The numpy backend implements them because
a fused, threaded pass is faster (and, for attention, needs less memory). Inputs written ``w?``
may be None.
"""

OPS: dict[str, str] = {
    # activations: (x) -> same shape and dtype
    "relu": "(x) -> max(x, 0); NaN propagates",
    "relu_": "(x) -> relu written into x (in place); returns x",
    "relu_backward": "(y, grad) -> grad where the relu result y > 0 (or NaN), else 0; first-order only",
    "log_softmax_backward": "(y, grad) dim -> grad - exp(y) * sum(grad, dim) (log_softmax's input gradient from its "
                            "result y); first-order only",
    "gelu_backward": "(x, grad) approximate -> grad * gelu'(x) ('none': erf form, 'tanh'); first-order only",
    "gather_backward": "(grad, index) shape, dim -> zeros of shape (grad's dtype) with grad added at index along "
                       "dim: gather's input gradient (cross-entropy's over a vocabulary) without a copy of the "
                       "zeros; first-order only",
    "adam_step_": "(param, grad, exp_avg, exp_avg_sq, step?) lr, beta1, beta2, eps, weight_decay, decoupled, step "
                  "-> one Adam (AdamW when decoupled) update of param, exp_avg and exp_avg_sq in place, as "
                  "optim.Adam's loop computes it (step: the bias-correction count, already incremented; a "
                  "one-element step tensor, when given, is read on the device instead: captured steps); "
                  "float tensors of one shape and dtype; returns param",
    "running_update_": "(stat, new) momentum, scale -> stat = (1 - momentum) * stat + momentum * scale * new "
                       "written into stat (batch norm's running statistics); new has stat's number of elements "
                       "in any shape and a float dtype; returns stat",
    "leaky_relu": "(x) negative_slope -> x if x > 0 else x * negative_slope",
    "hardtanh": "(x) min_val, max_val -> clamp(x, min_val, max_val)",
    "hardtanh_": "(x) min_val, max_val -> hardtanh written into x (in place); returns x",
    "elu": "(x) alpha, scale, input_scale -> scale * x if x > 0 else alpha * scale * expm1(x * input_scale)",
    "gelu": "(x) approximate ('none' | 'tanh') -> x * Phi(x), or its tanh approximation",
    "silu": "(x) -> x * sigmoid(x)",
    "mish": "(x) -> x * tanh(softplus(x))",
    "softplus": "(x) beta, threshold -> log1p(exp(beta x)) / beta, or x where beta x > threshold",
    "hardsigmoid": "(x) -> clamp(x + 3, 0, 6) / 6",
    "hardswish": "(x) -> x * clamp(x + 3, 0, 6) / 6",
    "logsigmoid": "(x) -> log(sigmoid(x)), computed without overflow",
    # in-place forms: the op's result written into x; return x
    **{op + "_": f"(x) -> {op} written into x (in place); returns x" for op in (
        "leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid")},
    # normalisation
    "norm_affine": "(x, weight?, bias?) dim, eps -> (y, mean, var): y = (x - mean) / sqrt(var + eps) * weight "
                   "+ bias with the mean and biased variance over dim (kept as size-1 dims, x's dtype); "
                   "weight/bias broadcast against x; mean/var carry no gradient",
    "batch_norm": "(x, weight?, bias?, running_mean?, running_var?, counter?) eps, momentum -> (y, mean, var): "
                  "training-mode batch norm over every dim but 1 (channels); weight, bias and the running "
                  "statistics are 1-d of length C; mean and biased var (C,) in x's dtype carry no gradient; the "
                  "running statistics, when given, move toward the batch's by momentum in place (the variance "
                  "unbiased); counter (one int64 element, a module's num_batches_tracked) gets one added in place",
    "batch_norm_backward": "(x, weight?, grad) eps, has_bias -> (grad_x, grad_weight?, grad_bias?) of batch_norm's "
                           "y, parameter gradients of shape (C,); first-order only",
    "rms_norm": "(x, weight?) dim, eps -> x / sqrt(mean(x², dim) + eps) * weight",
    "norm_affine_backward": "(x, weight?, grad) dim, eps, bias_shape (None: no bias) -> (grad_x, grad_weight?, "
                            "grad_bias?) of norm_affine's y; first-order only",
    "rms_norm_backward": "(x, weight?, grad) dim, eps -> (grad_x, grad_weight?); first-order only",
    "scaled_dot_product_attention_backward": "(q, k, v, mask?, out, grad) scale, is_causal -> (grad_q, grad_k, "
                                             "grad_v, grad_mask?) in the broadcast batch shape; grad_mask None "
                                             "unless the mask is float (then summed over batch entries that "
                                             "share the mask); first-order only: autodiff uses the composite "
                                             "formula when recording a graph",
    # resampling
    "resample_taps": "(x, idx, w) dim -> sum_k w[k] * x.index_select(dim, idx[k]): 1-d interpolation along dim "
                     "with K taps per output position; idx int64 and w (x's dtype) of shape (K, n_out); idx and w "
                     "carry no gradient",
    # dropout
    "dropout": "(x) p, seed, offset -> (x * mask, mask): mask = keep * (1 / (1 - p) in x's dtype), keep = u >= p for "
               "the uniforms rand draws at (seed, offset) over x's shape (float32 ones, float64 for float64 x); "
               "0 < p < 1; a floating x",
    # attention
    "attention_weights": "(scores) scale, is_causal, dropout_p, seed, offset -> (weights, dropped): weights = "
                         "softmax(scores * scale) over the last dim (keys after the query masked when is_causal; "
                         "float32 math for 16-bit scores), dropped = weights * keep * (1 / (1 - p) in scores' "
                         "dtype), keep = u >= p for the uniforms rand draws at (seed, offset) over scores' shape "
                         "(float32 ones, float64 for float64 scores); dropped is weights when p = 0",
    "attention_weights_backward": "(weights, dropped, grad) scale, dropout_p -> the scores' gradient for the "
                                  "gradient of dropped; first-order only",
    "scaled_dot_product_attention": "(q, k, v, mask?) scale, is_causal -> softmax(q kᵀ scale + mask) v over the "
                                    "last two dims; batch dims broadcast; mask bool (True = attend) or additive "
                                    "float, broadcast to (..., L, S); rows with every key masked give 0",
}

# all of the above have frontend decompositions (ember/nn/*)
COMPOSITES = frozenset(OPS)
