"""C kernels over rows and columns: softmax and log_softmax of contiguous rows, and sum / max / min
reductions of an (A, R, B) view over its middle axis (B == 1: rows, vectorised along R; B > 1:
vectorised along B). Sums accumulate in double (rows: blocks of 4096 in the element type first);
max and min propagate NaN, as PyTorch's do.
"""

SOURCE = r"""
/* max of a row, NaN if any element is NaN */
static inline double row_max_$S(const $T *r, i64 D) {
    $T m = -$INF;
    int nan = 0;
    #pragma omp simd reduction(max:m) reduction(|:nan)
    for (i64 j = 0; j < D; j++) { m = r[j] > m ? r[j] : m; nan |= r[j] != r[j]; }
    return nan ? (double)NAN : (double)m;
}

/* sum of a row: short rows in double; long ones in blocks of 4096 summed in 32 lanes of the
   element type (independent vector accumulators, so the adds pipeline), block sums in double */
static inline double row_sum_$S(const $T *r, i64 D) {
    double s = 0;
    if (D < 1024) {   /* short rows: one vectorised pass in double */
        #pragma omp simd reduction(+:s)
        for (i64 j = 0; j < D; j++) s += r[j];
        return s;
    }
    for (i64 b0 = 0; b0 < D; b0 += 4096) {
        const i64 b1 = b0 + 4096 < D ? b0 + 4096 : D;
        $T acc[32] = {0};
        i64 j = b0;
        for (; j + 32 <= b1; j += 32) {
            #pragma omp simd
            for (int k = 0; k < 32; k++) acc[k] += r[j + k];
        }
        double t = 0;
        for (int k = 0; k < 32; k++) t += acc[k];
        for (; j < b1; j++) t += r[j];
        s += t;
    }
    return s;
}

/* softmax (log = 0) or log_softmax (log = 1) of the rows of x (R, D) into y */
static void k_softmax_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *y = ARG_P($T, 2);
    const i64 R = a[3], D = a[4], lg = a[5];
    #pragma omp parallel for schedule(static) if (a[6])
    for (i64 i = 0; i < R; i++) {
        const $T *r = x + i * D;
        $T *o = y + i * D;
        double md = row_max_$S(r, D);
        if (lg && !isfinite(md)) md = 0;   /* all -inf (or an inf) row: no inf - inf in the shift */
        const $T m = ($T)md;
        double s = 0;
        if (lg) {
            #pragma omp simd reduction(+:s)
            for (i64 j = 0; j < D; j++) s += $EXP(r[j] - m);
            const $T lse = ($T)log(s);
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] = (r[j] - m) - lse;
        } else {
            #pragma omp simd reduction(+:s)
            for (i64 j = 0; j < D; j++) { const $T e = $EXP(r[j] - m); o[j] = e; s += e; }
            const $T inv = ($T)(1.0 / s);
            #pragma omp simd
            for (i64 j = 0; j < D; j++) o[j] *= inv;
        }
    }
}

/* reduce x viewed as (A, R, B) over R into out (A, B): op 0 sum, 1 max, 2 min, 3 variance; scale
   multiplies the sums (1/R for mean); a variance is the centred sum of squares over div (a[9]). */
static void k_reduce_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *out = ARG_P($T, 2);
    const i64 A = a[3], R = a[4], B = a[5], op = a[6];
    const double scale = cpuc_f64(a[7]), div = cpuc_f64(a[9]);
    if (B == 1) {
        #pragma omp parallel for schedule(static) if (a[8])
        for (i64 i = 0; i < A; i++) {
            const $T *r = x + i * R;
            if (op == 0) {
                out[i] = ($T)(row_sum_$S(r, R) * scale);
            } else if (op == 3) {   /* variance: centred sum of squares over div */
                const double m = row_sum_$S(r, R) / (double)R;
                double q = 0;
                #pragma omp simd reduction(+:q)
                for (i64 j = 0; j < R; j++) { const double d = (double)r[j] - m; q += d * d; }
                out[i] = ($T)(q / div);
            } else if (op == 1) {
                out[i] = ($T)row_max_$S(r, R);
            } else {
                $T m = $INF;
                int nan = 0;
                #pragma omp simd reduction(min:m) reduction(|:nan)
                for (i64 j = 0; j < R; j++) { m = r[j] < m ? r[j] : m; nan |= r[j] != r[j]; }
                out[i] = nan ? ($T)NAN : m;
            }
        }
        return;
    }
    const i64 BL = 256, nb = (B + BL - 1) / BL;
    #pragma omp parallel for collapse(2) schedule(static) if (a[8])
    for (i64 i = 0; i < A; i++)
    for (i64 bb = 0; bb < nb; bb++) {
        const i64 j0 = bb * BL, w = (j0 + BL < B ? j0 + BL : B) - j0;
        const $T *base = x + i * R * B + j0;
        $T *o = out + i * B + j0;
        if (op == 0 || op == 3) {
            double s[256];
            for (i64 j = 0; j < w; j++) s[j] = 0;
            for (i64 r = 0; r < R; r++) {
                const $T *row = base + r * B;
                #pragma omp simd
                for (i64 j = 0; j < w; j++) s[j] += row[j];
            }
            if (op == 0) {
                for (i64 j = 0; j < w; j++) o[j] = ($T)(s[j] * scale);
            } else {
                double q[256];
                for (i64 j = 0; j < w; j++) { s[j] /= (double)R; q[j] = 0; }
                for (i64 r = 0; r < R; r++) {
                    const $T *row = base + r * B;
                    #pragma omp simd
                    for (i64 j = 0; j < w; j++) { const double d = (double)row[j] - s[j]; q[j] += d * d; }
                }
                for (i64 j = 0; j < w; j++) o[j] = ($T)(q[j] / div);
            }
        } else {
            $T m[256];
            for (i64 j = 0; j < w; j++) m[j] = op == 1 ? -$INF : $INF;
            for (i64 r = 0; r < R; r++) {
                const $T *row = base + r * B;
                if (op == 1) {
                    #pragma omp simd
                    for (i64 j = 0; j < w; j++) m[j] = (row[j] > m[j] || row[j] != row[j]) ? row[j] : m[j];
                } else {
                    #pragma omp simd
                    for (i64 j = 0; j < w; j++) m[j] = (row[j] < m[j] || row[j] != row[j]) ? row[j] : m[j];
                }
            }
            for (i64 j = 0; j < w; j++) o[j] = m[j];
        }
    }
}

/* inclusive cumulative sum of x viewed as (A, R, B) along R (running sums in double) */
static void k_cumsum_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *out = ARG_P($T, 2);
    const i64 A = a[3], R = a[4], B = a[5];
    if (B == 1) {
        #pragma omp parallel for schedule(static) if (a[6])
        for (i64 i = 0; i < A; i++) {
            double s = 0;
            for (i64 j = 0; j < R; j++) { s += x[i * R + j]; out[i * R + j] = ($T)s; }
        }
        return;
    }
    const i64 BL = 256, nb = (B + BL - 1) / BL;
    #pragma omp parallel for collapse(2) schedule(static) if (a[6])
    for (i64 i = 0; i < A; i++)
    for (i64 bb = 0; bb < nb; bb++) {
        const i64 j0 = bb * BL, w = (j0 + BL < B ? j0 + BL : B) - j0;
        double s[256];
        for (i64 j = 0; j < w; j++) s[j] = 0;
        for (i64 r = 0; r < R; r++) {
            const $T *row = x + (i * R + r) * B + j0;
            $T *o = out + (i * R + r) * B + j0;
            #pragma omp simd
            for (i64 j = 0; j < w; j++) { s[j] += row[j]; o[j] = ($T)s[j]; }
        }
    }
}
"""
