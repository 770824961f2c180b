"""C kernels of the conv family (2-d; 1-d inputs run as height-1 2-d): im2col, col2im, max pooling.

A template instantiated per dtype by ``_lib`` ($T element type, $S suffix). The kernels take one
image plane per OpenMP iteration, so threads never write the same memory and results do not depend
on the thread count; the exception is the thin weight gradient, whose per-thread sums (in double)
are added in the order the threads finish. Geometry per spatial dim: kernel K, stride S, padding P (before), dilation D;
an output position o reads input position o*S - P + k*D.
"""

SOURCE = r"""
/* columns of x (N, C, H, W) into cols: row (c, ky, kx) of image n starts at
   cols + ((c*KH + ky)*KW + kx)*ck_stride + n*n_stride and holds OH*OW values (0 in the padding);
   (ck_stride, n_stride) = (L, C*K*L) gives (N, C*K, L), (N*L, L) gives (C*K, N, L). */
static void im2col_img_$S(const $T *x, $T *dst0, i64 C, i64 H, i64 W, i64 KH, i64 KW, i64 SH, i64 SW,
                          i64 PH, i64 PW, i64 DH, i64 DW, i64 OH, i64 OW, i64 cks, i64 c0, i64 c1) {
    for (i64 c = c0; c < c1; c++) {
        const $T *xp = x + c * H * W;
        for (i64 ky = 0; ky < KH; ky++)
        for (i64 kx = 0; kx < KW; kx++) {
            $T *dst = dst0 + ((c * KH + ky) * KW + kx) * cks;
            const i64 off = kx * DW - PW;          /* input column of output column 0 */
            i64 ox0 = off < 0 ? (-off + SW - 1) / SW : 0;
            i64 ox1 = W - off > 0 ? (W - off + SW - 1) / SW : 0;
            if (ox0 > OW) ox0 = OW;
            if (ox1 > OW) ox1 = OW;
            if (ox1 < ox0) ox1 = ox0;
            if (SH == 1 && SW == 1 && OW == W) {
                /* stride 1, 'same' width: the valid rows are one contiguous span of x, copied at
                   once (rows of a small image are too short for a loop each); the columns that
                   wrapped into a neighbouring row are zeroed after */
                const i64 sh = ky * DH - PH;
                const i64 oy0 = sh < 0 ? (-sh < OH ? -sh : OH) : 0;
                i64 oy1 = H - sh < OH ? H - sh : OH;
                if (oy1 < oy0 || ox1 <= ox0) oy1 = oy0;
                for (i64 j = 0; j < oy0 * OW; j++) dst[j] = 0;
                for (i64 j = oy1 * OW; j < OH * OW; j++) dst[j] = 0;
                if (oy1 > oy0) {
                    const $T *s = xp + sh * W + off;
                    const i64 j0 = oy0 * OW + ox0, j1 = (oy1 - 1) * OW + ox1;
                    #pragma omp simd
                    for (i64 j = j0; j < j1; j++) dst[j] = s[j];
                    for (i64 oy = oy0; oy < oy1; oy++) {
                        for (i64 ox = 0; ox < ox0; ox++) dst[oy * OW + ox] = 0;
                        for (i64 ox = ox1; ox < OW; ox++) dst[oy * OW + ox] = 0;
                    }
                }
                continue;
            }
            for (i64 oy = 0; oy < OH; oy++) {
                $T *d = dst + oy * OW;
                const i64 iy = oy * SH - PH + ky * DH;
                if (iy < 0 || iy >= H) {
                    for (i64 ox = 0; ox < OW; ox++) d[ox] = 0;
                    continue;
                }
                const $T *s = xp + iy * W + off;
                for (i64 ox = 0; ox < ox0; ox++) d[ox] = 0;
                if (SW == 1) {
                    #pragma omp simd
                    for (i64 ox = ox0; ox < ox1; ox++) d[ox] = s[ox];
                } else {
                    for (i64 ox = ox0; ox < ox1; ox++) d[ox] = s[ox * SW];
                }
                for (i64 ox = ox1; ox < OW; ox++) d[ox] = 0;
            }
        }
    }
}

static void k_im2col_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *cols = ARG_P($T, 2);
    const i64 N = a[3], C = a[4], H = a[5], W = a[6], KH = a[7], KW = a[8], SH = a[9], SW = a[10];
    const i64 PH = a[11], PW = a[12], DH = a[13], DW = a[14], OH = a[15], OW = a[16];
    const i64 cks = a[17], ns = a[18];
    #pragma omp parallel for collapse(2) schedule(static) if (a[19])
    for (i64 n = 0; n < N; n++)
    for (i64 c = 0; c < C; c++)
        im2col_img_$S(x + n * C * H * W, cols + n * ns, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, cks, c, c + 1);
}

/* conv's weight gradient when an image's columns are few (C*KH*KW <= 64, one group: a first layer):
   gw (O, C*K, double) = sum over images of g[n] (O, L) times cols[n]^T (L, C*K), without BLAS, whose
   GEMMs are slow for so thin a product. Each thread builds one image's columns in its own buffer and
   sums into its own accumulator; the accumulators are added at the end, in thread order. */
static void k_conv_weight_small_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1), *g = ARG_P(const $T, 2); double *gw = ARG_P(double, 3);
    const i64 N = a[4], C = a[5], H = a[6], W = a[7], KH = a[8], KW = a[9], SH = a[10], SW = a[11];
    const i64 PH = a[12], PW = a[13], DH = a[14], DW = a[15], OH = a[16], OW = a[17], O = a[18];
    const i64 CK = C * KH * KW, L = OH * OW;
    for (i64 i = 0; i < O * CK; i++) gw[i] = 0;
    /* per-thread accumulators, added in thread order afterwards: the result is the same on every
       run with the same thread count (a critical section would add them in finishing order) */
    int maxt = 1;
#ifdef _OPENMP
    maxt = omp_get_max_threads();
#endif
    double **accs = (double **)calloc((size_t)maxt, sizeof(double *));
    #pragma omp parallel if (a[19])
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        $T *cols = ($T *)malloc(sizeof($T) * (size_t)(CK * L));
        double *acc = (double *)calloc((size_t)(O * CK), sizeof(double));
        accs[t] = acc;
        #pragma omp for schedule(static)
        for (i64 n = 0; n < N; n++) {
            im2col_img_$S(x + n * C * H * W, cols, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, L, 0, C);
            for (i64 o = 0; o < O; o++) {
                const $T *gr = g + (n * O + o) * L;
                for (i64 k = 0; k < CK; k++) {
                    const $T *cr = cols + k * L;
                    $T s = 0;
                    #pragma omp simd reduction(+:s)
                    for (i64 l = 0; l < L; l++) s += gr[l] * cr[l];
                    acc[o * CK + k] += s;
                }
            }
        }
        free(cols);
    }
    for (int t = 0; t < maxt; t++) {
        if (!accs[t]) continue;
        for (i64 i = 0; i < O * CK; i++) gw[i] += accs[t][i];
        free(accs[t]);
    }
    free(accs);
}

/* the adjoint of im2col: out (N, C, H, W) = sum of the columns at their input positions
   (positions outside out are dropped); out is overwritten. Same argument layout as im2col, plus
   a[20]: the columns are scratch that may be overwritten (then stride-1 sums take one span). */
static void k_col2im_$S(const int64_t *a) {
    const $T *cols = ARG_P(const $T, 1); $T *out = ARG_P($T, 2);
    const i64 N = a[3], C = a[4], H = a[5], W = a[6], KH = a[7], KW = a[8], SH = a[9], SW = a[10];
    const i64 PH = a[11], PW = a[12], DH = a[13], DW = a[14], OH = a[15], OW = a[16];
    const i64 cks = a[17], ns = a[18], scratch = a[20];
    #pragma omp parallel for collapse(2) schedule(static) if (a[19])
    for (i64 n = 0; n < N; n++)
    for (i64 c = 0; c < C; c++) {
        $T *op = out + (n * C + c) * H * W;
        for (i64 i = 0; i < H * W; i++) op[i] = 0;
        for (i64 ky = 0; ky < KH; ky++)
        for (i64 kx = 0; kx < KW; kx++) {
            const $T *src = cols + ((c * KH + ky) * KW + kx) * cks + n * ns;
            const i64 off = kx * DW - PW;
            i64 ox0 = off < 0 ? (-off + SW - 1) / SW : 0;
            i64 ox1 = W - off > 0 ? (W - off + SW - 1) / SW : 0;
            if (ox0 > OW) ox0 = OW;
            if (ox1 > OW) ox1 = OW;
            if (scratch && SH == 1 && SW == 1 && OW == W) {
                /* im2col's span trick backwards: the columns that would wrap into a neighbouring
                   row are zeroed in the (scratch) columns first, then one contiguous add */
                const i64 sh = ky * DH - PH;
                const i64 oy0 = sh < 0 ? (-sh < OH ? -sh : OH) : 0;
                const i64 oy1 = H - sh < OH ? H - sh : OH;
                if (oy1 <= oy0 || ox1 <= ox0) continue;
                $T *s = ($T *)src;
                for (i64 oy = oy0; oy < oy1; oy++) {
                    for (i64 ox = 0; ox < ox0; ox++) s[oy * OW + ox] = 0;
                    for (i64 ox = ox1; ox < OW; ox++) s[oy * OW + ox] = 0;
                }
                $T *d = op + sh * W + off;
                const i64 j0 = oy0 * OW + ox0, j1 = (oy1 - 1) * OW + ox1;
                #pragma omp simd
                for (i64 j = j0; j < j1; j++) d[j] += s[j];
                continue;
            }
            for (i64 oy = 0; oy < OH; oy++) {
                const i64 iy = oy * SH - PH + ky * DH;
                if (iy < 0 || iy >= H) continue;
                $T *d = op + iy * W + off;
                const $T *s = src + oy * OW;
                if (SW == 1) {
                    #pragma omp simd
                    for (i64 ox = ox0; ox < ox1; ox++) d[ox] += s[ox];
                } else {
                    for (i64 ox = ox0; ox < ox1; ox++) d[ox * SW] += s[ox];
                }
            }
        }
    }
}

/* max pooling of P planes (H, W) -> (H/2, W/2) with 2x2 windows, stride 2, no padding or dilation
   (the common case): values and, when idx is not NULL, int64 flat positions within the plane.
   Branch-free selects, vectorised. A window takes every element that is greater than its running
   max or NaN (ties keep the first max, the last NaN wins): PyTorch's CPU semantics. */
static void k_max_pool2x2_$S(const int64_t *a) {
    const $T *x = ARG_P(const $T, 1); $T *vals = ARG_P($T, 2); i64 *idx = ARG_P(i64, 3);
    const i64 P = a[4], H = a[5], W = a[6], OH = a[7], OW = a[8];
    #pragma omp parallel for schedule(static) if (a[9])
    for (i64 p = 0; p < P; p++) {
        for (i64 oy = 0; oy < OH; oy++) {
            const $T *r0 = x + p * H * W + 2 * oy * W, *r1 = r0 + W;
            $T *vp = vals + (p * OH + oy) * OW;
            if (idx) {
                /* the tap as a small int (vectorises; int64 selects did not), the index at the end */
                i64 *ip = idx + (p * OH + oy) * OW;
                const i64 b0 = 2 * oy * W;
                #pragma omp simd
                for (i64 ox = 0; ox < OW; ox++) {
                    $T m = r0[2 * ox];
                    int k = 0, u;
                    $T v = r0[2 * ox + 1]; u = (v > m) | (v != v); m = u ? v : m; k = u ? 1 : k;
                    v = r1[2 * ox]; u = (v > m) | (v != v); m = u ? v : m; k = u ? 2 : k;
                    v = r1[2 * ox + 1]; u = (v > m) | (v != v); m = u ? v : m; k = u ? 3 : k;
                    vp[ox] = m;
                    ip[ox] = b0 + 2 * ox + (k & 1) + (k >> 1) * W;
                }
            } else {
                #pragma omp simd
                for (i64 ox = 0; ox < OW; ox++) {
                    $T m = r0[2 * ox];
                    $T v = r0[2 * ox + 1]; m = (v > m || v != v) ? v : m;
                    v = r1[2 * ox]; m = (v > m || v != v) ? v : m;
                    v = r1[2 * ox + 1]; m = (v > m || v != v) ? v : m;
                    vp[ox] = m;
                }
            }
        }
    }
}

/* the gradient of a max pool: out (P, Lin) = 0, then g (P, Lout) added at the flat positions idx
   (P, Lout) of each plane, in order (one thread per plane: no races, a fixed summation order). */
static void k_max_pool_backward_$S(const int64_t *a) {
    const $T *g = ARG_P(const $T, 1); const i64 *idx = ARG_P(const i64, 2); $T *out = ARG_P($T, 3);
    const i64 P = a[4], Lout = a[5], Lin = a[6];
    #pragma omp parallel for schedule(static) if (a[7])
    for (i64 p = 0; p < P; p++) {
        $T *op = out + p * Lin;
        const $T *gp = g + p * Lout;
        const i64 *ip = idx + p * Lout;
        for (i64 i = 0; i < Lin; i++) op[i] = 0;
        for (i64 j = 0; j < Lout; j++) op[ip[j]] += gp[j];
    }
}
"""
