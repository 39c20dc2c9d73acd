/* test_gemm_fast.c -- gemm_fma.c's products (the FMA tiles in AVX2 and AVX-512, and the
 * mul-add kernel) against their scalar chains, bit for bit, and against the exact product
 * within the rounding bound; conv_stage.c's convolutions straight from padded images
 * against im2col and the same chains, and patch512.c's conv2 input gradient straight
 * into the image against the chains and col2im, its forward and weight gradient straight
 * from the image against im2col's rows and the chains. Label quick. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "layers.h"
#include "model_internal.h"
#include "bits.h"

/* Checks c (m x n, row stride ldc) against the exact product within the classical
 * bound of an inner product whose every term goes through at most `rounds` roundings
 * (T with one per step (FMA), 2T with two (mul-add)), |C - exact| <= gamma (|init| +
 * sum_t |A B|) (float unit roundoff; the exact value in double, where the products are
 * exact and the sum's own error is far below the bound). */
static void check_product(const char *what, const float *c, size_t ldc, const float *a,
                          size_t ars, size_t ats, const float *b, size_t ldb, const float *init,
                          size_t m, size_t n, size_t T, size_t steps)
{
  const double u = 0x1p-24, k = (double)(steps * T), gamma = k * u / (1.0 - k * u);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double exact = init ? init[j] : 0.0, mag = fabs(exact);
      for (size_t t = 0; t < T; t++) {
        double p = (double)a[i * ars + t * ats] * (double)b[t * ldb + j];
        exact += p;
        mag += fabs(p);
      }
      double bound = gamma * mag * (1.0 + 1e-9);
      if (fabs((double)c[i * ldc + j] - exact) > bound)
        fail_msg("%s: element (%zu, %zu) of shape %zu %zu %zu: %.9g against %.17g (bound "
                 "%.3g)",
                 what, i, j, m, n, T, c[i * ldc + j], exact, bound);
    }
}

/* gemm_fma.c's products, C = init + A B with A read through strides, on every shape:
 * the FMA kernel (where the CPU has it) bit for bit its fmaf chain for both tilings, the
 * mul-add kernel bit for bit its own chain; both within the rounding bound; dpgd_gemm
 * and dpgd_conv_wgrad one of the two, bit for bit, as dpgd_gemm_kernel says (and the
 * mul-add one when forced). The shapes are the models' uses (A transposed for the weight
 * gradient, a bias row forward, the softmax's 10 and the CNN's 10 classes) and
 * remainders of every kind: rows not a multiple of the tile's, widths that end in a
 * full or a partial vector (masked lanes), one row, one column, T = 1. The padding
 * columns of C (ldc > n) are left alone by every kernel. Each element being its
 * reference's chain over one row and one column, no row depends on another's presence
 * or position (SENSITIVITY.md 5). */
static void test_gemm(void **state)
{
  (void)state;
  static const struct {
    size_t m, n, T;
    int at, bias; /* A stored transposed (T, m); a bias row */
  } shapes[] = {
      {16, 64, 196, 1, 0},  {32, 256, 25, 1, 0}, {3136, 16, 64, 0, 1}, {400, 32, 256, 0, 1},
      {400, 256, 32, 0, 0}, {1, 8, 1, 0, 0},     {7, 24, 5, 1, 1},     {13, 40, 9, 0, 1},
      {5, 48, 3, 1, 0},     {9, 200, 7, 0, 0},   {2, 136, 4, 1, 1},    {11, 152, 2, 0, 0},
      {6, 12, 3, 0, 0},     {5, 7, 4, 1, 1},     {64, 10, 784, 0, 1},  {16, 32, 512, 0, 1},
      {16, 10, 32, 0, 1},   {16, 512, 32, 0, 0}, {16, 32, 10, 0, 0},   {3, 1, 5, 0, 1},
      {7, 17, 6, 1, 1},     {8, 23, 11, 0, 0},   {25, 63, 9, 1, 1},    {13, 16, 7, 0, 1},
      {29, 15, 5, 0, 0},    {10, 79, 3, 0, 1},   {9, 33, 6, 1, 0},     {17, 48, 4, 0, 1},
      {23, 64, 2, 1, 0},    {12, 1, 3, 0, 0},
  };
  const int fma = strcmp(dpgd_gemm_kernel(), "fma") == 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const size_t m = shapes[s].m, n = shapes[s].n, T = shapes[s].T;
    const size_t ars = shapes[s].at ? 1 : T, ats = shapes[s].at ? m : 1, ldc = n + 3;
    float *a = vec(m * T, 0), *b = vec(T * n, 0), *init = shapes[s].bias ? vec(n, 0) : NULL;
    float *c = vec(m * ldc, 0), *fref = vec(m * ldc, 0), *mref = vec(m * ldc, 0);
    float *before = vec(m * ldc, 0);
    memcpy(before, c, m * ldc * sizeof *c);
    memcpy(fref, c, m * ldc * sizeof *c);
    memcpy(mref, c, m * ldc * sizeof *c);
    dpgd_gemm_fma_ref(fref, ldc, a, ars, ats, b, n, init, m, n, T);
    dpgd_gemm_muladd_ref(mref, ldc, a, ars, ats, b, n, init, m, n, T);
    check_product("fma reference", fref, ldc, a, ars, ats, b, n, init, m, n, T, T);
    check_product("mul-add reference", mref, ldc, a, ars, ats, b, n, init, m, n, T, 2 * T);
    for (dpgd_gemm_tile tiling = DPGD_TILE_4X3; tiling <= DPGD_TILE_6X2; tiling++) {
      memcpy(c, before, m * ldc * sizeof *c);
      int done = dpgd_gemm_fma(tiling, c, ldc, a, ars, ats, b, n, init, m, n, T);
      if (done != fma)
        fail_msg("gemm_fma: returned %d, the kernel is %s", done, dpgd_gemm_kernel());
      if (!same_bits(c, done ? fref : before, m * ldc))
        fail_msg("gemm_fma: tiling %d differs from its reference, shape %zu %zu %zu",
                 (int)tiling, m, n, T);
      /* Both widths of the FMA tiles: AVX-512 (where the CPU has it) and AVX2 (forced). */
      memcpy(c, before, m * ldc * sizeof *c);
      done = dpgd_gemm_fma512(tiling, c, ldc, a, ars, ats, b, n, init, m, n, T);
      if (!same_bits(c, done ? fref : before, m * ldc))
        fail_msg("gemm_fma512: tiling %d differs from its reference, shape %zu %zu %zu",
                 (int)tiling, m, n, T);
      dpgd_gemm_force_avx2(1);
      memcpy(c, before, m * ldc * sizeof *c);
      done = dpgd_gemm_fma(tiling, c, ldc, a, ars, ats, b, n, init, m, n, T);
      dpgd_gemm_force_avx2(0);
      if (!same_bits(c, done ? fref : before, m * ldc))
        fail_msg("gemm_fma forced to AVX2: tiling %d differs from its reference, shape %zu "
                 "%zu %zu",
                 (int)tiling, m, n, T);
      memcpy(c, before, m * ldc * sizeof *c);
      dpgd_gemm(tiling, c, ldc, a, ars, ats, b, n, init, m, n, T);
      if (!same_bits(c, fma ? fref : mref, m * ldc))
        fail_msg("gemm: tiling %d is not the %s chain, shape %zu %zu %zu", (int)tiling,
                 dpgd_gemm_kernel(), m, n, T);
      dpgd_gemm_force_muladd(1);
      memcpy(c, before, m * ldc * sizeof *c);
      dpgd_gemm(tiling, c, ldc, a, ars, ats, b, n, init, m, n, T);
      dpgd_gemm_force_muladd(0);
      if (!same_bits(c, mref, m * ldc))
        fail_msg("gemm forced to mul-add: not its chain, shape %zu %zu %zu", m, n, T);
    }
    memcpy(c, before, m * ldc * sizeof *c);
    dpgd_gemm_muladd(c, ldc, a, ars, ats, b, n, init, m, n, T);
    if (!same_bits(c, mref, m * ldc)) fail_msg("gemm_muladd: shape %zu %zu %zu", m, n, T);
    /* The weight-gradient form through dpgd_conv_wgrad: dW (m, n) = dy^T cols, dy (T, m). */
    if (shapes[s].at && !init) {
      float *dW = vec(m * n, 0);
      dpgd_conv_wgrad(dW, a, b, T, n, m);
      for (size_t i = 0; i < m; i++)
        if (!same_bits(dW + i * n, (fma ? fref : mref) + i * ldc, n))
          fail_msg("conv_wgrad: row %zu of shape %zu %zu %zu", i, m, n, T);
      free(dW);
    }
    free(a);
    free(b);
    free(init);
    free(c);
    free(fref);
    free(mref);
    free(before);
  }
}

/* conv_stage.c: conv1-like convolutions (one channel, 8 x 8 kernel) straight from the
 * padded images, forward and per-example weight gradient, against im2col_ref and the
 * fmaf chains (dpgd_gemm_fma_ref) bit for bit: the CNN's conv1, other strides and
 * paddings, output rows of 1 to 16 columns (the stride-2 kernel's every row length
 * from 1 to 16 is its own unrolled case: 1, 6, 10, 13, 14 and 16 here), 4 to 16 output
 * channels (masked lanes; 4, 8, 12 and 16 take the weight gradient's every split into
 * tiles of six and four rows), pixels with -0 and NaN. Where the CPU lacks AVX-512 the
 * kernels must refuse (return 0 and leave their outputs alone); forcing dpgd_gemm off its
 * AVX-512 tiles refuses too. */
static void test_conv_stage_bits(void **state)
{
  (void)state;
  static const struct {
    size_t h, w, cout, stride, pad, B;
  } shapes[] = {
      {28, 28, 16, 2, 3, 3}, {8, 8, 4, 1, 0, 2},    {20, 12, 8, 1, 2, 2}, {39, 37, 12, 2, 1, 1},
      {9, 23, 16, 1, 0, 2},  {8, 9, 8, 2, 0, 2},    {14, 20, 4, 2, 3, 2}, {9, 12, 8, 2, 3, 2},
      {5, 32, 12, 2, 3, 1},  {28, 27, 16, 2, 3, 1},
  };
  for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
    const conv_shape s = dpgd_conv_shape_make(shapes[q].h, shapes[q].w, 1, shapes[q].cout, 8,
                                              shapes[q].stride, shapes[q].pad);
    const size_t B = shapes[q].B, n = s.oh * s.ow, cout = s.cout, K = 64;
    float *x = vec(B * s.h * s.w, 1), *W = vec(cout * K, 0), *bias = vec(cout, 0);
    float *cols = vec(B * n * K, 0), *wt = vec(cout * K, 0), *st = vec(B * 9999, 0);
    float *y = vec(B * n * cout, 0), *yr = vec(B * n * cout, 0), *dy = vec(B * n * cout, 1);
    float *dW = vec(cout * K, 0), *dWr = vec(cout * K, 0);
    assert_true(dpgd_conv_stage_floats(&s) <= 9999);
    for (size_t i = 0; i < B * s.h * s.w; i++) x[i] = isnan(x[i]) || i % 5 ? x[i] : -0.0f;
    /* The last example's pixels finite where B > 1 (-0 kept), so that its weight
     * gradient's NaNs come from dy alone (below). */
    for (size_t i = (B - 1) * s.h * s.w; B > 1 && i < B * s.h * s.w; i++)
      x[i] = isfinite(x[i]) ? x[i] : 1.5f;
    /* dy finite after the first example: a NaN or infinity in a column of dy makes its
     * whole row of dW (and its bias gradient) NaN, and NaN matches NaN. */
    for (size_t i = n * cout; i < B * n * cout; i++) dy[i] = isfinite(dy[i]) ? dy[i] : 0.5f;
    /* An infinity in the last example's first output row (otherwise finite where B > 1):
     * where that row's first patch vector is padding, its product with the padding's
     * zeros is NaN, so the kernel may not leave those steps out there (it does for the
     * other finite examples). */
    dy[((B - 1) * n + q % s.ow) * cout + q % cout] = INFINITY;
    dpgd_im2col_ref(cols, x, &s, B);
    for (size_t o = 0; o < cout; o++)
      for (size_t k = 0; k < K; k++) wt[k * cout + o] = W[o * K + k];
    dpgd_gemm_fma_ref(yr, cout, cols, K, 1, wt, cout, bias, B * n, cout, K);
    const int wide = dpgd_gemm_wide();
    assert_int_equal(dpgd_conv_stage_ok(&s), wide);
    if (!wide) print_message("no AVX-512 FMA tiles here: conv_stage refuses, as it must\n");
    memcpy(y, yr, B * n * cout * sizeof *y);
    y[0] = 2.385f;
    dpgd_conv_stage_images(st, x, &s, B);
    assert_int_equal(dpgd_conv_stage_forward(y, st, W, bias, wt, &s, B), wide);
    if (!wide) assert_true(y[0] == 2.385f);
    else if (!same_bits(y, yr, B * n * cout)) fail_msg("conv_stage forward bits, shape %zu", q);
    /* From the unpadded images, the padding's taps left out: where it runs (stride 2,
     * pad 3, w = 2 ow) the same bits; it refuses, writing nothing, where a bias is -0 or
     * a weight not finite (there a left-out step could change the chain: +0 after -0,
     * NaN from 0 times infinity), and the stage's forward, which takes every tap, still
     * matches the reference. */
    const int img = wide && s.stride == 2 && s.pad == 3 && s.w == 2 * s.ow;
    y[0] = 2.385f;
    assert_int_equal(dpgd_conv_image_forward(y, x, W, bias, wt, &s, B), img);
    if (!img) assert_true(y[0] == 2.385f);
    else if (!same_bits(y, yr, B * n * cout)) fail_msg("image forward bits, shape %zu", q);
    for (int bad = 0; bad < 3; bad++) {
      const size_t at = (q * 7 + 3) % cout, wat = (q * 131 + 17) % (cout * K);
      const float keep_b = bias[at], keep_w = W[wat];
      if (bad == 0) bias[at] = -0.0f;
      else W[wat] = bad == 1 ? INFINITY : NAN;
      for (size_t o = 0; o < cout; o++)
        for (size_t k = 0; k < K; k++) wt[k * cout + o] = W[o * K + k];
      dpgd_gemm_fma_ref(yr, cout, cols, K, 1, wt, cout, bias, B * n, cout, K);
      y[0] = 2.385f;
      assert_int_equal(dpgd_conv_image_forward(y, x, W, bias, wt, &s, B), 0);
      assert_true(y[0] == 2.385f);
      if (wide) {
        assert_int_equal(dpgd_conv_stage_forward(y, st, W, bias, wt, &s, B), 1);
        if (!same_bits(y, yr, B * n * cout))
          fail_msg("conv_stage forward bits with a bad weight or bias %d, shape %zu", bad, q);
      }
      bias[at] = keep_b, W[wat] = keep_w;
    }
    for (size_t o = 0; o < cout; o++)
      for (size_t k = 0; k < K; k++) wt[k * cout + o] = W[o * K + k];
    for (size_t b = 0; b < B; b++) {
      dpgd_gemm_fma_ref(dWr, K, dy + b * n * cout, 1, cout, cols + b * n * K, K, NULL, cout, K,
                        n);
      /* The bias gradient (odd examples: none asked for): column sums from +0 in order. */
      float db[16], dbr[16] = {0};
      for (size_t p = 0; p < n; p++)
        for (size_t o = 0; o < cout; o++) dbr[o] += dy[(b * n + p) * cout + o];
      dW[0] = db[0] = 2.385f;
      float *dbp = b % 2 ? NULL : db;
      assert_int_equal(dpgd_conv_stage_wgrad(dW, dbp, dy + b * n * cout,
                                             st + b * dpgd_conv_stage_floats(&s), &s),
                       wide);
      if (!wide) assert_true(dW[0] == 2.385f && db[0] == 2.385f);
      else if (!same_bits(dW, dWr, cout * K))
        fail_msg("conv_stage weight gradient bits, shape %zu, example %zu", q, b);
      else if (dbp ? !same_bits(db, dbr, cout) : db[0] != 2.385f)
        fail_msg("conv_stage bias gradient bits, shape %zu, example %zu", q, b);
    }
    dpgd_gemm_force_avx2(1);
    assert_int_equal(dpgd_conv_stage_ok(&s), 0);
    assert_int_equal(dpgd_conv_stage_wgrad(dW, NULL, dy, st, &s), 0);
    assert_int_equal(dpgd_conv_image_forward(y, x, W, bias, wt, &s, B), 0);
    dpgd_gemm_force_avx2(0);
    free(x), free(W), free(bias), free(cols), free(wt), free(st);
    free(y), free(yr), free(dy), free(dW), free(dWr);
  }
}

/* patch512.c's conv2 input gradient straight into the image (dpgd_dgrad_col2im_k4c16)
 * against the products' rows (dpgd_gemm_fma_ref: each element the fma chain over cout)
 * scattered by dpgd_col2im_hwc, bit for bit: the CNN's conv2 (13 x 13 x 16, stride 2),
 * stride 1 (every pixel from up to 16 positions, output rows of 7 and 10 positions:
 * tiles of six and of one and four), strides 3 and 4 (pixels no patch reads, runs that
 * do not overlap), one output pixel, odd cout, dy with -0, NaN and infinities. It
 * refuses, writing nothing, for other kernels, channel counts or padding, and where
 * dpgd_gemm is off its AVX-512 tiles. */
static void test_dgrad_col2im_bits(void **state)
{
  (void)state;
  static const struct {
    size_t h, w, cout, stride, B;
  } shapes[] = {{13, 13, 32, 2, 3}, {9, 10, 8, 1, 2},  {11, 13, 5, 1, 1},
                {10, 13, 7, 3, 2},  {8, 12, 16, 4, 1}, {4, 4, 3, 2, 2}};
  const int wide = dpgd_gemm_wide();
  for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
    const conv_shape s = dpgd_conv_shape_make(shapes[q].h, shapes[q].w, 16, shapes[q].cout, 4,
                                              shapes[q].stride, 0);
    const size_t B = shapes[q].B, rows = B * s.oh * s.ow, K = 256, cout = s.cout;
    const size_t nx = B * s.h * s.w * 16;
    float *dy = vec(rows * cout, 1), *wp = vec(cout * K, 0), *dc = vec(rows * K, 0);
    float *dx = vec(nx, 1), *dxr = vec(nx, 1);
    dpgd_gemm_fma_ref(dc, K, dy, cout, 1, wp, K, NULL, rows, K, cout);
    dpgd_col2im_hwc(dxr, dc, &s, B);
    dx[0] = 2.385f;
    assert_int_equal(dpgd_dgrad_col2im_k4c16(dx, dy, wp, &s, B), wide);
    if (!wide) assert_true(dx[0] == 2.385f);
    else if (!same_bits(dx, dxr, nx)) fail_msg("dgrad_col2im bits, shape %zu", q);
    dpgd_gemm_force_avx2(1);
    dx[0] = 2.385f;
    assert_int_equal(dpgd_dgrad_col2im_k4c16(dx, dy, wp, &s, B), 0);
    assert_true(dx[0] == 2.385f);
    dpgd_gemm_force_avx2(0);
    free(dy), free(wp), free(dc), free(dx), free(dxr);
  }
  float out[1] = {2.385f}, in[1] = {0};
  const conv_shape k3 = dpgd_conv_shape_make(13, 13, 16, 8, 3, 2, 0),
                   c32 = dpgd_conv_shape_make(13, 13, 32, 8, 4, 2, 0),
                   pad = dpgd_conv_shape_make(13, 13, 16, 8, 4, 2, 1);
  assert_int_equal(dpgd_dgrad_col2im_k4c16(out, in, in, &k3, 1), 0);
  assert_int_equal(dpgd_dgrad_col2im_k4c16(out, in, in, &c32, 1), 0);
  assert_int_equal(dpgd_dgrad_col2im_k4c16(out, in, in, &pad, 1), 0);
  assert_true(out[0] == 2.385f);
}

/* patch512.c's conv2 forward and weight gradient straight from the channels-last image:
 * the forward bit for bit the chains of im2col's PyTorch-order rows with the transposed
 * weight and the bias; the weight gradient bit for bit the chains of dpgd_im2col_hwc's
 * rows, which are those of the PyTorch-order gradient at permuted places
 * (dpgd_hwc_to_chw); the fallback (forced AVX2) the same bits; refusals write nothing. */
static void test_conv_k4c16_bits(void **state)
{
  (void)state;
  static const struct {
    size_t h, w, cout, stride, B;
  } shapes[] = {{13, 13, 32, 2, 3}, {13, 13, 16, 2, 1}, {10, 10, 48, 1, 2},
                {9, 12, 8, 3, 2},   {4, 4, 4, 2, 1},    {11, 9, 20, 2, 2}};
  const int wide = dpgd_gemm_wide();
  for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
    const conv_shape s = dpgd_conv_shape_make(shapes[q].h, shapes[q].w, 16, shapes[q].cout, 4,
                                              shapes[q].stride, 0);
    const size_t B = shapes[q].B, n = s.oh * s.ow, rows = B * n, K = 256, cout = s.cout;
    const size_t nx = s.h * s.w * 16;
    float *x = vec(B * nx, 0), *W = vec(cout * K, 0), *bias = vec(cout, 0);
    for (size_t b = 0; b < B; b++) { /* a few specials: most outputs stay numbers */
      x[b * nx + 17] = INFINITY, x[b * nx + nx / 2] = NAN, x[b * nx + 5] = -0.0f;
      x[b * nx + nx - 1] = 0.0f;
    }
    float *cols = vec(rows * K, 0), *wt = vec(K * cout, 0), *y = vec(rows * cout, 0),
          *yr = vec(rows * cout, 0);
    dpgd_im2col_ref(cols, x, &s, B);
    for (size_t o = 0; o < cout; o++)
      for (size_t t = 0; t < K; t++) wt[t * cout + o] = W[o * K + t];
    dpgd_gemm_fma_ref(yr, cout, cols, K, 1, wt, cout, bias, rows, cout, K);
    y[0] = 2.385f;
    const int fwd = wide && cout % 16 == 0;
    assert_int_equal(dpgd_conv_forward_k4c16(y, x, W, bias, wt, &s, B), fwd);
    if (!fwd) assert_true(y[0] == 2.385f);
    else if (!same_bits(y, yr, rows * cout)) fail_msg("conv forward k4c16 bits, shape %zu", q);
    /* The weight gradient of each example. */
    float *dy = vec(rows * cout, 1), *dW = vec(cout * K, 0), *dWr = vec(cout * K, 0),
          *dWc = vec(cout * K, 0), *ch = vec(n * K, 0);
    for (size_t b = 0; b < B; b++) {
      const float *xb = x + b * nx, *dyb = dy + b * n * cout;
      dpgd_im2col_hwc(ch, xb, &s, 1);
      dpgd_gemm_fma_ref(dWr, K, dyb, 1, cout, ch, K, NULL, cout, K, n);
      dW[0] = 2.385f;
      assert_int_equal(dpgd_conv_wgrad_k4c16(dW, dyb, xb, &s), wide);
      if (!wide) assert_true(dW[0] == 2.385f);
      else if (!same_bits(dW, dWr, cout * K)) fail_msg("wgrad k4c16 bits, shape %zu", q);
      dpgd_gemm_force_avx2(1); /* the fallback: im2col_hwc and the AVX2 tiles */
      assert_int_equal(dpgd_conv_wgrad_k4c16(dW, dyb, xb, &s), 0);
      dpgd_conv_wgrad_hwc(dW, dyb, xb, &s, ch);
      dpgd_gemm_force_avx2(0);
      if (!same_bits(dW, dWr, cout * K)) fail_msg("wgrad_hwc fallback bits, shape %zu", q);
      /* Permuted back, the PyTorch-order gradient's chains. */
      dpgd_gemm_fma_ref(dWc, K, dyb, 1, cout, cols + b * n * K, K, NULL, cout, K, n);
      dpgd_hwc_to_chw(dW, dWr, cout, 16, 4);
      if (!same_bits(dW, dWc, cout * K)) fail_msg("wgrad_hwc permuted, shape %zu", q);
    }
    dpgd_gemm_force_avx2(1);
    y[0] = 2.385f;
    assert_int_equal(dpgd_conv_forward_k4c16(y, x, W, bias, wt, &s, B), 0);
    assert_true(y[0] == 2.385f);
    dpgd_gemm_force_avx2(0);
    free(x), free(W), free(bias), free(cols), free(wt), free(y), free(yr);
    free(dy), free(dW), free(dWr), free(dWc), free(ch);
  }
  float out[1] = {2.385f}, in[256 * 32] = {0}, wt[256 * 32];
  const conv_shape k3 = dpgd_conv_shape_make(13, 13, 16, 16, 3, 2, 0),
                   c32 = dpgd_conv_shape_make(13, 13, 32, 16, 4, 2, 0),
                   pad = dpgd_conv_shape_make(13, 13, 16, 16, 4, 2, 1),
                   odd = dpgd_conv_shape_make(13, 13, 16, 6, 4, 2, 0);
  const conv_shape *no[] = {&k3, &c32, &pad, &odd};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(dpgd_conv_forward_k4c16(out, in, in, in, wt, no[i], 1), 0);
    assert_int_equal(dpgd_conv_wgrad_k4c16(out, in, in, no[i]), 0);
  }
  assert_true(out[0] == 2.385f);
}

/* The dot form, C = init + A B^T (dpgd_gemm_nt: the dense layers and the softmax logits
 * forward): the FMA kernel (where the CPU has it) and the mul-add one bit for bit their
 * eight-lane chains, on the models' shapes and on remainders of every kind (rows of A
 * not even, rows of B not a multiple of five, T not a multiple of eight: masked
 * lanes); dpgd_gemm_nt as dpgd_gemm_kernel says; all within the rounding bound (a term
 * goes through at most ceil(T/8) + 4 roundings fused, one more unfused). */
static void test_gemm_nt(void **state)
{
  (void)state;
  static const size_t shapes[][4] = {
      {64, 10, 784, 1}, {16, 32, 512, 1}, {16, 10, 32, 1}, {1, 1, 1, 0}, {3, 6, 9, 1},
      {7, 11, 8, 0},    {2, 5, 17, 1},    {5, 3, 15, 0},   {4, 9, 1, 1}, {9, 14, 23, 0},
  };
  const int fma = strcmp(dpgd_gemm_kernel(), "fma") == 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const size_t m = shapes[s][0], n = shapes[s][1], T = shapes[s][2], ldc = n + 2;
    float *a = vec(m * T, 0), *b = vec(n * T, 0), *init = shapes[s][3] ? vec(n, 0) : NULL;
    float *bt = vec(T * n, 0), *c = vec(m * ldc, 0), *before = vec(m * ldc, 0);
    float *fref = vec(m * ldc, 0), *mref = vec(m * ldc, 0);
    for (size_t j = 0; j < n; j++)
      for (size_t t = 0; t < T; t++) bt[t * n + j] = b[j * T + t];
    memcpy(before, c, m * ldc * sizeof *c);
    memcpy(fref, c, m * ldc * sizeof *c);
    memcpy(mref, c, m * ldc * sizeof *c);
    dpgd_gemm_nt_fma_ref(fref, ldc, a, T, b, T, init, m, n, T);
    dpgd_gemm_nt_muladd_ref(mref, ldc, a, T, b, T, init, m, n, T);
    check_product("nt fma reference", fref, ldc, a, T, 1, bt, n, init, m, n, T, T / 8 + 5);
    check_product("nt mul-add reference", mref, ldc, a, T, 1, bt, n, init, m, n, T, T / 8 + 6);
    for (int narrow = 0; narrow < 2; narrow++) { /* AVX-512's pairs of rows, AVX2's tiles */
      dpgd_gemm_force_avx2(narrow);
      int done = dpgd_gemm_nt_fma(c, ldc, a, T, b, T, init, m, n, T);
      dpgd_gemm_force_avx2(0);
      if (done != fma || !same_bits(c, done ? fref : before, m * ldc))
        fail_msg("gemm_nt_fma%s: shape %zu %zu %zu differs from its reference",
                 narrow ? " (AVX2)" : "", m, n, T);
      memcpy(c, before, m * ldc * sizeof *c);
    }
    dpgd_gemm_nt_muladd(c, ldc, a, T, b, T, init, m, n, T);
    if (!same_bits(c, mref, m * ldc)) fail_msg("gemm_nt_muladd: shape %zu %zu %zu", m, n, T);
    memcpy(c, before, m * ldc * sizeof *c);
    dpgd_gemm_nt(c, ldc, a, T, b, T, init, m, n, T);
    if (!same_bits(c, fma ? fref : mref, m * ldc))
      fail_msg("gemm_nt: shape %zu %zu %zu is not the %s chain", m, n, T, dpgd_gemm_kernel());
    free(a);
    free(b);
    free(init);
    free(bt);
    free(c);
    free(before);
    free(fref);
    free(mref);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm),
      cmocka_unit_test(test_gemm_nt),
      cmocka_unit_test(test_conv_stage_bits),
      cmocka_unit_test(test_dgrad_col2im_bits),
      cmocka_unit_test(test_conv_k4c16_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
