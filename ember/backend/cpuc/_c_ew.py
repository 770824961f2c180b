"""C kernels of the elementwise ops CpuC runs itself: relu, select (where), clamp and comparisons with
a scalar, over contiguous arrays of one shape, split over OpenMP threads when large. (Chains of them
are the fusion backend's job; these are the single ops of a training step: ReLU, its gradient mask.)
"""

SOURCE = r"""
/* relu: x < 0 -> 0, NaN and the rest pass */
static void k_relu_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *y = ARG_P($T, 2);
    const i64 n = a[3];
    CPUC_MAP(a[4], n, y[i] = x[i] < 0 ? ($T)0 : x[i]);
}

/* out = cond ? x : y; x and y are arrays, or scalars (a NULL pointer and the value in xs / ys) */
static void k_where_$S(const int64_t *a) {
    const uint8_t *c = ARG_P(const uint8_t, 1);
    const $T *x = ARG_P(const $T, 2), *y = ARG_P(const $T, 3);
    $T *o = ARG_P($T, 4);
    const i64 n = a[5];
    const $T xs = ($T)cpuc_f64(a[6]), ys = ($T)cpuc_f64(a[7]);
    if (x && y) {
        CPUC_MAP(a[8], n, o[i] = c[i] ? x[i] : y[i]);
    } else if (y) {
        CPUC_MAP(a[8], n, o[i] = c[i] ? xs : y[i]);
    } else if (x) {
        CPUC_MAP(a[8], n, o[i] = c[i] ? x[i] : ys);
    } else {
        CPUC_MAP(a[8], n, o[i] = c[i] ? xs : ys);
    }
}

/* clamp with scalar bounds: max(x, lo) then min(., hi), NaN in x or a bound propagates */
static void k_clamp_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *y = ARG_P($T, 2);
    const i64 n = a[3], has_lo = a[4], has_hi = a[5];
    const $T lo = ($T)cpuc_f64(a[6]), hi = ($T)cpuc_f64(a[7]);
    CPUC_MAP(a[8], n, {
        $T v = x[i];
        if (has_lo) v = (v < lo || lo != lo) ? lo : v;
        if (has_hi) v = (v > hi || hi != hi) ? hi : v;
        y[i] = v;
    });
}

/* x <op> s into a bool array: op 0 lt, 1 le, 2 gt, 3 ge, 4 eq, 5 ne */
static void k_cmp_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); uint8_t *o = ARG_P(uint8_t, 2);
    const i64 n = a[3], op = a[4];
    const $T s = ($T)cpuc_f64(a[5]);
    switch (op) {
    case 0:
        CPUC_MAP(a[6], n, o[i] = x[i] < s);
        break;
    case 1:
        CPUC_MAP(a[6], n, o[i] = x[i] <= s);
        break;
    case 2:
        CPUC_MAP(a[6], n, o[i] = x[i] > s);
        break;
    case 3:
        CPUC_MAP(a[6], n, o[i] = x[i] >= s);
        break;
    case 4:
        CPUC_MAP(a[6], n, o[i] = x[i] == s);
        break;
    default:
        CPUC_MAP(a[6], n, o[i] = x[i] != s);
    }
}
"""
