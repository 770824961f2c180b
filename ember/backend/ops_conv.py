"""Catalogue entries for the conv family of backend ops (merged into base.OPS).

Inputs are batched, ``(N, C, *spatial)`` with any number of spatial dims; geometry attrs are tuples
with one entry per spatial dim, already validated by the frontend. ``padding`` of conv, im2col,
col2im and max_pool is a tuple of (before, after) pairs (asymmetric for padding='same' with even
kernels, and for ceil_mode's overhang); avg_pool keeps PyTorch's symmetric ints plus ceil_mode
because its divisor depends on them. Max-pool indices are int64 flat positions within each
(n, c) plane of the input, as PyTorch returns them.
"""

OPS: dict[str, str] = {
    "conv": "(x, w, bias?) stride, padding: ((lo, hi), ...), dilation, groups -> cross-correlation; "
            "w is (out, in/groups, *k)",
    "conv_transpose": "(x, w, bias?) stride, padding: ((lo, hi), ...), dilation, groups -> the adjoint of conv in "
                      "x; w is (in, out/groups, *k); the full output ((n-1)*s + d*(k-1) + 1) is cropped by lo/hi "
                      "(a negative hi appends zeros: output_padding)",
    "conv_weight": "(x, g) kernel_size, stride, padding: ((lo, hi), ...), dilation, groups -> conv's gradient in its "
                   "weight, (out, in/groups, *k): x correlated with the output gradient g, summed over the batch",
    "im2col": "(x) kernel_size, dilation, padding: ((lo, hi), ...), stride -> (N, C*prod(k), L) sliding blocks",
    "col2im": "(cols) output_size, kernel_size, dilation, padding: ((lo, hi), ...), stride -> (N, C, *output_size), "
              "overlapping blocks summed (the adjoint of im2col)",
    "max_pool": "(x) kernel_size, stride, padding: ((lo, hi), ...), dilation -> (values, int64 indices); padding "
                "is never chosen, ties take the first max, NaN wins",
    "max_pool_values": "(x) kernel_size, stride, padding, dilation -> max_pool's values only (no index tracking)",
    "max_pool_backward": "(g, indices) input_size, disjoint -> (N, C, *input_size): g summed at the indices of "
                         "each plane (disjoint: no index repeats within a plane, so no sums are needed)",
    "avg_pool": "(x) kernel_size, stride, padding (ints), ceil_mode, count_include_pad, divisor_override -> "
                "window means (integers: sum divided with truncation)",
    "avg_pool_backward": "(g) input_size, and avg_pool's attrs -> the adjoint of avg_pool",
    "adaptive_max_pool": "(x) output_size -> (values, int64 indices); window i spans "
                         "[floor(i*n/o), ceil((i+1)*n/o))",
}
