"""C kernel of CpuC's optimizer step: one Adam/AdamW update of a parameter in one pass.

The optimizer's op-by-op loop reads and writes the parameter, its gradient and both moments about ten
times; this reads each once and writes the parameter and the moments once. The arithmetic is the loop's,
in its order and in the parameter's dtype (the scalars rounded to it as numpy rounds a Python float), and
``-ffp-contract=off`` keeps every product rounded: the result is the op-by-op update's, bit for bit.
"""

SOURCE = r"""
/* p, g, m, v: n contiguous elements; mode 0: no weight decay, 1: decoupled (p *= 1 - lr wd), 2: into g */
static void k_adam_$S(const int64_t *a) {
    $T *p = ARG_P($T, 1); const $T *g = ARG_P(const $T, 2); $T *m = ARG_P($T, 3); $T *v = ARG_P($T, 4);
    const i64 n = a[5], mode = a[6];
    const $T decay = ($T)cpuc_f64(a[7]);     /* 1 - lr wd (mode 1) or wd (mode 2) */
    const $T w = ($T)cpuc_f64(a[8]);         /* 1 - beta1: m.lerp_(g, w) */
    const $T w1 = ($T)cpuc_f64(a[9]);        /* 1 - w: lerp's form when |w| >= 0.5 (a[10] == 0) */
    const i64 low = a[10];
    const $T b2 = ($T)cpuc_f64(a[11]), c2 = ($T)cpuc_f64(a[12]);  /* beta2, 1 - beta2 */
    const $T sbc2 = ($T)cpuc_f64(a[13]), eps = ($T)cpuc_f64(a[14]), step = ($T)cpuc_f64(a[15]);  /* -lr / bc1 */
    CPUC_MAP(a[16], n, {
        $T pi = p[i], gi = g[i], mi = m[i], vi = v[i];
        if (mode == 1) pi = pi * decay;
        else if (mode == 2) gi = gi + pi * decay;
        mi = low ? mi + w * (gi - mi) : gi - (gi - mi) * w1;
        vi = vi * b2;
        vi = vi + (gi * gi) * c2;
        const $T denom = $SQRT(vi) / sbc2 + eps;
        pi = pi + (mi / denom) * step;
        p[i] = pi; m[i] = mi; v[i] = vi;
    });
}
"""
