"""C kernels of normalisation: per-channel statistics (batch norm on (N, C, L)) and per-row
statistics (layer norm on (R, D)), forward and first-order backward.

Sums accumulate in double with ``omp simd reduction`` (vectorised without -ffast-math: the pragma
allows the reordering), so float32 statistics are at least as accurate as numpy's pairwise sums.
Batch norm runs one channel per OpenMP iteration (a channel's values stay in L2 across the passes);
layer norm one row per iteration.
"""

SOURCE = r"""
/* per-channel sum and centred sum of squares over (N, L) of channel c of x (N, C, L) */
static void chan_stats_$S(const $T *x, i64 N, i64 C, i64 L, i64 c, double *mean, double *m2) {
    double s = 0;
    for (i64 n = 0; n < N; n++) {
        const $T *r = x + (n * C + c) * L;
        #pragma omp simd reduction(+:s)
        for (i64 l = 0; l < L; l++) s += r[l];
    }
    const double m = s / (double)(N * L);
    double q = 0;
    for (i64 n = 0; n < N; n++) {
        const $T *r = x + (n * C + c) * L;
        #pragma omp simd reduction(+:q)
        for (i64 l = 0; l < L; l++) { const double d = (double)r[l] - m; q += d * d; }
    }
    *mean = m;
    *m2 = q;
}

/* batch norm forward: y = (x - mean) * rstd * w + b per channel; mean, var (biased) out (C,) */
static void k_bn_fwd_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1), *w = ARG_P(const $T, 2), *b = ARG_P(const $T, 3);
    $T *y = ARG_P($T, 4), *mean = ARG_P($T, 5), *var = ARG_P($T, 6);
    const i64 N = a[7], C = a[8], L = a[9];
    const double eps = cpuc_f64(a[10]);
    #pragma omp parallel for schedule(dynamic, 1) if (a[11])
    for (i64 c = 0; c < C; c++) {
        double m, q;
        chan_stats_$S(x, N, C, L, c, &m, &q);
        const double v = q / (double)(N * L);
        const double rstd = 1.0 / sqrt(v + eps);
        const $T scale = ($T)(w ? rstd * (double)w[c] : rstd);
        const $T shift = b ? b[c] : ($T)0;
        const $T mt = ($T)m;
        for (i64 n = 0; n < N; n++) {
            const $T *r = x + (n * C + c) * L;
            $T *o = y + (n * C + c) * L;
            #pragma omp simd
            for (i64 l = 0; l < L; l++) o[l] = (r[l] - mt) * scale + shift;
        }
        mean[c] = mt;
        var[c] = ($T)v;
    }
}

/* batch norm backward: gx = w rstd (g - mean(g) - xhat mean(g xhat)); dot[c] = sum g (x - mean),
   gsum[c] = sum g (double, C,), rstd[c] out as double too (the caller forms grad_weight = dot*rstd) */
static void k_bn_bwd_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1), *w = ARG_P(const $T, 2), *g = ARG_P(const $T, 3);
    $T *gx = ARG_P($T, 4);
    double *dot_out = ARG_P(double, 5), *gsum_out = ARG_P(double, 6), *rstd_out = ARG_P(double, 7);
    const i64 N = a[8], C = a[9], L = a[10];
    const double eps = cpuc_f64(a[11]);
    #pragma omp parallel for schedule(dynamic, 1) if (a[12])
    for (i64 c = 0; c < C; c++) {
        const double cnt = (double)(N * L);
        double s = 0;
        for (i64 n = 0; n < N; n++) {
            const $T *r = x + (n * C + c) * L;
            #pragma omp simd reduction(+:s)
            for (i64 l = 0; l < L; l++) s += r[l];
        }
        const double m = s / cnt;
        /* one pass for the centred sum of squares, sum g and sum g (x - mean) */
        double q = 0, gs = 0, dt = 0;
        for (i64 n = 0; n < N; n++) {
            const $T *r = x + (n * C + c) * L, *gr = g + (n * C + c) * L;
            #pragma omp simd reduction(+:q, gs, dt)
            for (i64 l = 0; l < L; l++) {
                const double d = (double)r[l] - m;
                q += d * d; gs += gr[l]; dt += (double)gr[l] * d;
            }
        }
        const double rstd = 1.0 / sqrt(q / cnt + eps);
        const double k = w ? rstd * (double)w[c] : rstd;
        const $T A = ($T)(k * dt * rstd * rstd / cnt);   /* per (x - mean) */
        const $T B = ($T)(k * gs / cnt);
        const $T K = ($T)k, mt = ($T)m;
        for (i64 n = 0; n < N; n++) {
            const $T *r = x + (n * C + c) * L, *gr = g + (n * C + c) * L;
            $T *o = gx + (n * C + c) * L;
            #pragma omp simd
            for (i64 l = 0; l < L; l++) o[l] = gr[l] * K - (r[l] - mt) * A - B;
        }
        dot_out[c] = dt;
        gsum_out[c] = gs;
        rstd_out[c] = rstd;
    }
}

/* layer norm forward over the rows of x (R, D): w, b (D,) or NULL; mean, var (R,) */
static void k_ln_fwd_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1), *w = ARG_P(const $T, 2), *b = ARG_P(const $T, 3);
    $T *y = ARG_P($T, 4), *mean = ARG_P($T, 5), *var = ARG_P($T, 6);
    const i64 R = a[7], D = a[8];
    const double eps = cpuc_f64(a[9]);
    #pragma omp parallel for schedule(static) if (a[10])
    for (i64 i = 0; i < R; i++) {
        const $T *r = x + i * D;
        $T *o = y + i * D;
        double s = 0, q = 0;
        #pragma omp simd reduction(+:s)
        for (i64 j = 0; j < D; j++) s += r[j];
        const double m = s / (double)D;
        #pragma omp simd reduction(+:q)
        for (i64 j = 0; j < D; j++) { const double d = (double)r[j] - m; q += d * d; }
        const double v = q / (double)D;
        const $T rs = ($T)(1.0 / sqrt(v + eps)), mt = ($T)m;
        if (w && b) {
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] = (r[j] - mt) * rs * w[j] + b[j];
        } else if (w) {
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] = (r[j] - mt) * rs * w[j];
        } else if (b) {
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] = (r[j] - mt) * rs + b[j];
        } else {
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] = (r[j] - mt) * rs;
        }
        mean[i] = mt;
        var[i] = ($T)v;
    }
}

/* layer norm backward, rows of x and g (R, D): gx rows; xhat (R, D) scratch out (for the weight
   gradient, summed over rows by the caller's BLAS-free column pass k_col_sums) */
static void k_ln_bwd_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1), *w = ARG_P(const $T, 2), *g = ARG_P(const $T, 3);
    $T *gx = ARG_P($T, 4), *xhat = ARG_P($T, 5);
    const i64 R = a[6], D = a[7];
    const double eps = cpuc_f64(a[8]);
    #pragma omp parallel for schedule(static) if (a[9])
    for (i64 i = 0; i < R; i++) {
        const $T *r = x + i * D, *gr = g + i * D;
        $T *o = gx + i * D, *xh = xhat + i * D;
        double s = 0, q = 0;
        #pragma omp simd reduction(+:s)
        for (i64 j = 0; j < D; j++) s += r[j];
        const double m = s / (double)D;
        #pragma omp simd reduction(+:q)
        for (i64 j = 0; j < D; j++) { const double d = (double)r[j] - m; q += d * d; }
        const $T rs = ($T)(1.0 / sqrt(q / (double)D + eps)), mt = ($T)m;
        double sa = 0, sb = 0;   /* sum of g*w, sum of g*w*xhat */
        #pragma omp simd reduction(+:sa, sb)
        for (i64 j = 0; j < D; j++) {
            const $T h = (r[j] - mt) * rs;
            xh[j] = h;
            const $T gw = w ? gr[j] * w[j] : gr[j];
            sa += gw; sb += (double)gw * h;
        }
        const $T A = ($T)(sa / (double)D), B = ($T)(sb / (double)D);
        #pragma omp simd
        for (i64 j = 0; j < D; j++) {
            const $T gw = w ? gr[j] * w[j] : gr[j];
            o[j] = (gw - A - xh[j] * B) * rs;
        }
    }
}

/* column sums of u (R, D) and of u*v into su, suv (D,) (double accumulation; v may be NULL):
   the weight and bias gradients of layer norm. Threads split the columns. */
static void k_col_sums_$S(const int64_t *a) {
    const $T *u = ARG_P(const $T, 1), *v = ARG_P(const $T, 2);
    double *su = ARG_P(double, 3), *suv = ARG_P(double, 4);
    const i64 R = a[5], D = a[6];
    const i64 B = 256;
    #pragma omp parallel for schedule(static) if (a[7])
    for (i64 j0 = 0; j0 < D; j0 += B) {
        const i64 j1 = j0 + B < D ? j0 + B : D;
        double s1[256], s2[256];
        for (i64 j = 0; j < j1 - j0; j++) { s1[j] = 0; s2[j] = 0; }
        for (i64 i = 0; i < R; i++) {
            const $T *ur = u + i * D + j0;
            #pragma omp simd
            for (i64 j = 0; j < j1 - j0; j++) s1[j] += ur[j];
            if (v) {
                const $T *vr = v + i * D + j0;
                #pragma omp simd
                for (i64 j = 0; j < j1 - j0; j++) s2[j] += (double)ur[j] * vr[j];
            }
        }
        for (i64 j = 0; j < j1 - j0; j++) { su[j0 + j] = s1[j]; if (suv) suv[j0 + j] = s2[j]; }
    }
}
"""
