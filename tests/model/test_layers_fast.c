/* test_layers_fast.c -- the CNN's data-movement kernels (im2col, col2im, max pooling
 * forward and backward, flatten and the 16 x 16 transposes) against their _ref twins or
 * index definitions BIT FOR BIT, on odd shapes: one example, channel counts that are not
 * a multiple of the vector width, outputs of one pixel, strides above the kernel, images
 * too large for patch.c's stage (the direct fallback), and values that tell bits apart
 * (ties, -0, NaN, infinities). These kernels only copy, compare and add in the
 * reference's order (and accumulate_rows, which adds rows four at a time, against the
 * row-by-row loop; the squared norms, eight or four rows at a time), so any difference is
 * a bug; the one freedom is which NaN an operation on two NaNs returns (IEEE 754 leaves
 * the payload open and the compiler may swap the operands of an addition), so a NaN
 * matches any NaN. The products are in test_gemm_fast.c. Label quick. */
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

static const struct geom {
  size_t h, w, cin, k, stride, pad, B;
} geoms[] = {
    {28, 28, 1, 8, 2, 3, 3},  /* conv1 */
    {13, 13, 16, 4, 2, 0, 1}, /* conv2, one example */
    {13, 13, 16, 4, 2, 0, 5}, /* conv2, odd B */
    {7, 5, 3, 3, 2, 1, 3},    /* non-square, odd channels */
    {4, 4, 5, 4, 1, 0, 2},    /* one output pixel */
    {9, 6, 2, 2, 3, 2, 1},    /* stride above the kernel: pixels no patch reads */
    {5, 7, 1, 1, 1, 0, 2},    /* 1x1 kernel */
    {6, 6, 7, 5, 1, 4, 1},    /* padding near the kernel size */
    {14, 14, 2, 3, 1, 1, 2},  /* stage rows of 16 floats, the most one AVX-512 row holds */
    {15, 15, 3, 3, 2, 1, 2},  /* stage rows of 17 floats */
    {100, 90, 1, 8, 2, 3, 1}, /* too large for the stage: the direct loops */
    {30, 30, 10, 4, 2, 1, 2}, /* too large for the stage, several channels */
    {9, 7, 32, 4, 1, 2, 2},   /* k 4, two 16-channel groups, padding (patch512.c) */
    {6, 6, 16, 4, 3, 1, 3},   /* k 4, stride 3, padding on every side */
    {30, 30, 16, 4, 2, 1, 1}, /* k 4, 16 channels, too large for the stage */
    {5, 4, 2, 1, 1, 3, 2},    /* padding above the kernel: positions reading no pixel */
};

/* (rows, cin k k) PyTorch-order patch rows, (c, ky, kx), to (ky, kx, c) order. */
static void rows_hwc(float *out, const float *in, size_t rows, size_t cin, size_t k)
{
  const size_t K = cin * k * k;
  for (size_t i = 0; i < rows; i++)
    for (size_t c = 0; c < cin; c++)
      for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++)
          out[i * K + (ky * k + kx) * cin + c] = in[i * K + (c * k + ky) * k + kx];
}

static void test_patch_bits(void **state)
{
  (void)state;
  for (size_t g = 0; g < sizeof geoms / sizeof geoms[0]; g++) {
    const struct geom *q = &geoms[g];
    conv_shape s = dpgd_conv_shape_make(q->h, q->w, q->cin, 1, q->k, q->stride, q->pad);
    int staged = dpgd_patch_staged(&s);
    assert_int_equal(staged, s.cin * (s.h + 2 * s.pad) * (s.w + 2 * s.pad) <= 8192);
    size_t nx = q->B * q->h * q->w * q->cin, nc = q->B * s.oh * s.ow * q->cin * q->k * q->k;
    float *x = vec(nx, 1), *c = vec(nc, 0), *cr = vec(nc, 0);
    dpgd_im2col(c, x, &s, q->B);
    dpgd_im2col_ref(cr, x, &s, q->B);
    assert_memory_equal(c, cr, nc * sizeof *c);
    if (staged) {
      float *cs = vec(nc, 0);
      dpgd_im2col_staged(cs, x, &s, q->B);
      assert_memory_equal(cs, cr, nc * sizeof *c);
      free(cs);
    }
    /* col2im_set against zeroing and the reference scatter; dcols with -0, NaN, inf. */
    float *dc = vec(nc, 1), *dx = vec(nx, 1), *dxr = calloc(nx ? nx : 1, sizeof *dxr);
    dpgd_col2im_set(dx, dc, &s, q->B);
    dpgd_col2im_ref(dxr, dc, &s, q->B);
    if (!same_bits(dx, dxr, nx)) fail_msg("geometry %zu: col2im_set bits", g);
    if (staged) {
      float *dxs = vec(nx, 1);
      dpgd_col2im_staged(dxs, dc, &s, q->B);
      if (!same_bits(dxs, dxr, nx)) fail_msg("geometry %zu: staged bits", g);
      free(dxs);
    }
    /* patch512.c's rows where it runs (k 4, cin a multiple of 16, AVX-512F). */
    float *ck = vec(nc, 0);
    if (dpgd_im2col_k4c16(ck, x, &s, q->B)) {
      assert_true(q->k == 4 && q->cin % 16 == 0);
      assert_memory_equal(ck, cr, nc * sizeof *ck);
    }
    /* col2im_hwc on the same rows in (ky, kx, c) order; dpgd_weight_hwc is the same
     * permutation of rows of cin k k. */
    const size_t rows = q->B * s.oh * s.ow;
    float *dch = vec(nc, 0), *dcw = vec(nc, 0), *dxh = vec(nx, 1);
    rows_hwc(dch, dc, rows, q->cin, q->k);
    dpgd_weight_hwc(dcw, dc, rows, q->cin, q->k);
    assert_memory_equal(dcw, dch, nc * sizeof *dch);
    dpgd_col2im_hwc(dxh, dch, &s, q->B);
    if (!same_bits(dxh, dxr, nx)) fail_msg("geometry %zu: col2im_hwc bits", g);
    free(ck);
    free(dch);
    free(dcw);
    free(dxh);
    free(x);
    free(c);
    free(cr);
    free(dc);
    free(dx);
    free(dxr);
  }
}

/* Forward: y and arg bit for bit; backward: dx bit for bit, from the reference's arg. */
static void check_pool(size_t B, size_t h, size_t w, size_t c, int special)
{
  const size_t n = B * h * w * c, no = B * (h - 1) * (w - 1) * c;
  float *x = vec(n, special), *y = vec(no, 0), *yr = vec(no, 0);
  uint8_t *a = malloc((no ? no : 1) * sizeof *a), *ar = malloc((no ? no : 1) * sizeof *ar);
  assert_non_null(a);
  assert_non_null(ar);
  dpgd_maxpool2s1_forward(y, a, x, B, h, w, c);
  dpgd_maxpool2s1_forward_ref(yr, ar, x, B, h, w, c);
  if (!same_bits(y, yr, no) || memcmp(a, ar, no * sizeof *a) != 0)
    fail_msg("pool forward bits, B %zu h %zu w %zu c %zu", B, h, w, c);
  float *dy = vec(no, special), *dx = vec(n, 1), *dxr = vec(n, 1);
  dpgd_maxpool2s1_backward(dx, dy, ar, B, h, w, c);
  dpgd_maxpool2s1_backward_ref(dxr, dy, ar, B, h, w, c);
  if (!same_bits(dx, dxr, n))
    fail_msg("pool backward bits, B %zu h %zu w %zu c %zu", B, h, w, c);
  /* The fused activations: relu read by the pooling from x (the reference pools relu(x)),
   * and the derivative applied as backward gathers (the reference's act_backward after
   * the reference's scatter): relu's from x, tanh's from an output in [-1, 1]. */
  float *xr = vec(n, 0);
  for (size_t i = 0; i < n; i++) xr[i] = x[i] < 0.0f ? 0.0f : x[i];
  dpgd_maxpool2s1_relu_forward(y, a, x, B, h, w, c);
  dpgd_maxpool2s1_forward_ref(yr, ar, xr, B, h, w, c);
  int none = 0; /* the args: the reference's, POOL_NONE where the output is not > 0 */
  for (size_t i = 0; i < no; i++) {
    none |= !(yr[i] > 0.0f) && no > 1;
    if (a[i] != (yr[i] > 0.0f ? ar[i] : POOL_NONE))
      fail_msg("pool relu forward arg %zu, B %zu h %zu w %zu c %zu", i, B, h, w, c);
  }
  if (!same_bits(y, yr, no))
    fail_msg("pool relu forward bits, B %zu h %zu w %zu c %zu", B, h, w, c);
  /* Backward on those args: the reference's scatter times relu's derivative (x > 0). */
  dpgd_maxpool2s1_backward(dx, dy, a, B, h, w, c);
  dpgd_maxpool2s1_backward_ref(dxr, dy, ar, B, h, w, c);
  for (size_t i = 0; i < n; i++) dxr[i] = x[i] > 0.0f ? dxr[i] : 0.0f;
  if (!same_bits(dx, dxr, n) || (no > 8 && !none))
    fail_msg("pool backward on relu args bits, B %zu h %zu w %zu c %zu", B, h, w, c);
  for (int act = 0; act < 2; act++) {
    float *z = vec(n, special);
    if (act) /* tanh's outputs, -0 and +-1 among them */
      for (size_t i = 0; i < n; i++) z[i] = isnan(z[i]) ? z[i] : tanhf(z[i]);
    dpgd_maxpool2s1_backward_act(dx, dy, ar, z, B, h, w, c,
                                 act ? DPGD_ACT_TANH : DPGD_ACT_RELU);
    dpgd_maxpool2s1_backward_ref(dxr, dy, ar, B, h, w, c);
    for (size_t i = 0; i < n; i++) {
      if (act) dxr[i] *= 1.0f - z[i] * z[i];
      else dxr[i] = z[i] > 0.0f ? dxr[i] : 0.0f;
    }
    if (!same_bits(dx, dxr, n))
      fail_msg("pool backward with %s bits, B %zu h %zu w %zu c %zu", act ? "tanh" : "relu", B,
               h, w, c);
    free(z);
  }
  free(xr);
  free(x);
  free(y);
  free(yr);
  free(a);
  free(ar);
  free(dy);
  free(dx);
  free(dxr);
}

static void test_pool_bits(void **state)
{
  (void)state;
  const size_t shapes[][4] = {
      {2, 14, 14, 16}, /* pool1 */
      {3, 5, 5, 32},   /* pool2 */
      {1, 2, 2, 1},    /* one output pixel, one channel */
      {1, 2, 7, 5},    /* one output row, channels not a multiple of 4 */
      {3, 6, 2, 7},    /* one output column */
      {2, 5, 4, 3},    {1, 3, 3, 17},
      {1, 2, 2, 48}, /* pool512.c: three vectors, one output pixel */
      {2, 3, 6, 64}, /* pool512.c: four vectors, two output rows, odd width */
  };
  /* pool512.c's kernels (c % 16 == 0 on a CPU with AVX-512F, BW and VL), then layers.c's. */
  {
    float x[4 * 16] = {0}, y[16];
    uint8_t a[16];
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int bw = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl");
#else
    const int bw = 0;
#endif
    assert_int_equal(dpgd_maxpool512_forward(y, a, x, 1, 2, 2, 16, 0), bw);
    assert_int_equal(dpgd_maxpool512_forward(y, a, x, 1, 2, 2, 8, 0), 0);
  }
  for (int off = 0; off < 2; off++) {
    dpgd_pool512_force_off(off);
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
      for (int special = 0; special < 2; special++)
        check_pool(shapes[t][0], shapes[t][1], shapes[t][2], shapes[t][3], special);
    /* All equal (ties everywhere, the first candidate wins), and all -0 against +0. */
    for (size_t c = 6; c <= 16; c += 10) {
      const size_t B = 2, h = 4, w = 5, n = B * h * w * c, no = B * (h - 1) * (w - 1) * c;
      float *x = malloc(n * sizeof *x), *y = malloc(no * sizeof *y);
      uint8_t *a = malloc(no * sizeof *a);
      for (size_t i = 0; i < n; i++) x[i] = (i / c) % 2 ? -0.0f : 0.0f;
      dpgd_maxpool2s1_forward(y, a, x, B, h, w, c);
      for (size_t i = 0; i < no; i++) assert_int_equal(a[i], 0);
      dpgd_maxpool2s1_relu_forward(y, a, x, B, h, w, c); /* +0 everywhere: not > 0 */
      for (size_t i = 0; i < no; i++) assert_int_equal(a[i], POOL_NONE);
      free(x);
      free(y);
      free(a);
    }
  }
  dpgd_pool512_force_off(0);
}

/* accumulate_rows against adding one row after the other, bit for bit: B from 1 to 19
 * (groups of eight, of four and every remainder), rows of scale 0 (some NaN) in between. */
static void test_accumulate_rows_bits(void **state)
{
  (void)state;
  enum { P = 37, BMAX = 19 };
  float G[BMAX * P], scale[BMAX];
  for (size_t t = 0; t < 2 * BMAX; t++) { /* AVX-512's rows, then AVX2's (forced) */
    const size_t B = t % BMAX + 1;
    dpgd_gemm_force_avx2(t >= BMAX);
    for (size_t i = 0; i < B; i++) {
      scale[i] =
          (next() % 3 == 0) ? 0.0f : (float)(0.1 + 0.9 * (double)(next() >> 11) / 0x1p53);
      for (size_t p = 0; p < P; p++) G[i * P + p] = scale[i] == 0.0f && p == 3 ? NAN : draw(0);
    }
    double acc[P], ref[P];
    for (size_t p = 0; p < P; p++) acc[p] = ref[p] = (double)draw(0) * 1e-3;
    dpgd_accumulate_rows(acc, G, scale, B, P);
    for (size_t i = 0; i < B; i++)
      if (scale[i] != 0.0f)
        for (size_t p = 0; p < P; p++) ref[p] += (double)scale[i] * (double)G[i * P + p];
    dpgd_gemm_force_avx2(0);
    if (memcmp(acc, ref, sizeof acc) != 0)
      fail_msg("accumulate_rows bits, B %zu%s", B, t >= BMAX ? " (AVX2)" : "");
  }
}

/* flatten and unflatten (channels-last blocks to PyTorch's (C, H, W) and back) and
 * dpgd_transpose16 against the index definition, bit for bit: the CNN's (16, 32) blocks
 * (AVX-512 16 x 16 transposes where the CPU has them), odd blocks (the loop), and a
 * weight-sized matrix with row strides wider than its rows. */
static void test_transpose_bits(void **state)
{
  (void)state;
  static const size_t blocks[][3] = {{3, 16, 32}, {2, 5, 7}, {1, 32, 16}, {2, 16, 48}};
  for (size_t t = 0; t < sizeof blocks / sizeof blocks[0]; t++) {
    const size_t B = blocks[t][0], hw = blocks[t][1], c = blocks[t][2], n = B * hw * c;
    float *p = vec(n, 1), *f = vec(n, 0), *fr = vec(n, 0), *back = vec(n, 0);
    for (size_t i = 0; i < B; i++)
      for (size_t q = 0; q < hw; q++)
        for (size_t ch = 0; ch < c; ch++) fr[(i * c + ch) * hw + q] = p[(i * hw + q) * c + ch];
    dpgd_flatten_chw(f, p, B, hw, c);
    if (!same_bits(f, fr, n)) fail_msg("flatten bits, block %zu", t);
    dpgd_unflatten_chw(back, f, B, hw, c);
    if (!same_bits(back, p, n)) fail_msg("unflatten bits, block %zu", t);
    free(p), free(f), free(fr), free(back);
  }
  enum { R = 32, C = 64, SS = 80, DS = 40 };
  float *src = vec(R * SS, 1), *dst = vec(C * DS, 0), *ref = vec(C * DS, 0);
  memcpy(ref, dst, C * DS * sizeof *dst);
  for (size_t i = 0; i < R; i++)
    for (size_t j = 0; j < C; j++) ref[j * DS + i] = src[i * SS + j];
  const int done = dpgd_transpose16(dst, DS, src, SS, R, C);
  assert_int_equal(done, dpgd_gemm_avx512_cpu() != 0);
  if (done && !same_bits(dst, ref, C * DS)) fail_msg("transpose16 bits");
  assert_int_equal(dpgd_transpose16(dst, DS, src, SS, R, C - 1), 0);
  free(src), free(dst), free(ref);
  /* dpgd_square16d: three 16 x 16 blocks of doubles, each transposed in place. */
  double w[3 * 256], wr[3 * 256];
  for (size_t i = 0; i < 3 * 256; i++) w[i] = (double)draw(1) + (double)i * 0x1p-30;
  for (size_t q = 0; q < 3; q++)
    for (size_t i = 0; i < 16; i++)
      for (size_t j = 0; j < 16; j++) wr[q * 256 + j * 16 + i] = w[q * 256 + i * 16 + j];
  dpgd_square16d(w, 3);
  for (size_t i = 0; i < 3 * 256; i++)
    if (memcmp(&w[i], &wr[i], sizeof w[i])) fail_msg("square16d at %zu", i);
}

/* dpgd_sqnorm_d and dpgd_sqnorm_d_rows (eight or four rows at a time) against the
 * definition, bit for bit: eight partial sums s_q over the indices j = q mod 8 below the
 * last multiple of 8, in order, the rest into s_0, then ((s0 + s1) + (s2 + s3)) + ((s4 +
 * s5) + (s6 + s7)); entries spread over 2^-40 .. 2^40 so that another order of additions
 * gives other bits; every remainder of n mod 8 and of B mod 8, rows of stride ld > n. */
static double sqnorm_def(const float *v, size_t n)
{
  double s[8] = {0};
  const size_t n8 = n - n % 8;
  for (size_t j = 0; j < n8; j++) s[j % 8] += (double)v[j] * (double)v[j];
  for (size_t j = n8; j < n; j++) s[0] += (double)v[j] * (double)v[j];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void test_sqnorm_rows_bits(void **state)
{
  (void)state;
  enum { BMAX = 13, NMAX = 75, LD = 80 };
  float G[BMAX * LD];
  for (size_t i = 0; i < BMAX * LD; i++) G[i] = ldexpf(draw(0), (int)(next() % 81) - 40);
  for (size_t n = 1; n <= NMAX; n += 1 + n / 8)
    for (size_t t = 0; t < 2 * BMAX; t++) { /* eight rows (AVX-512), then four (forced) */
      const size_t B = t % BMAX + 1;
      double out[BMAX];
      dpgd_gemm_force_avx2(t >= BMAX);
      dpgd_sqnorm_d_rows(out, G, LD, B, n);
      dpgd_gemm_force_avx2(0);
      for (size_t i = 0; i < B; i++) {
        const double def = sqnorm_def(G + i * LD, n), one = dpgd_sqnorm_d(G + i * LD, n);
        if (memcmp(&out[i], &def, sizeof def) || memcmp(&one, &def, sizeof def))
          fail_msg("sqnorm bits: row %zu of %zu, n %zu: %.17g, %.17g against %.17g", i, B, n,
                   out[i], one, def);
      }
    }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_patch_bits),           cmocka_unit_test(test_pool_bits),
      cmocka_unit_test(test_accumulate_rows_bits), cmocka_unit_test(test_sqnorm_rows_bits),
      cmocka_unit_test(test_transpose_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
