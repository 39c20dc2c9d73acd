/* test_layers.c -- each CNN kernel (model/layers.c) against its slow _ref twin written
 * from the definition, on the CNN's two convolution geometries and an odd one
 * (non-square, padded, stride 2, several channels); im2col/col2im also against each
 * other (adjointness, in double); max pooling with ties and NaN; activations against
 * closed forms; the softmax residual against its definition in double, large logits
 * included. Label quick. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "layers.h"

static uint64_t rng_state = 88172645463325252ull;

static float frand(void) /* uniform in [-1, 1) */
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rand_vec(size_t n)
{
  float *v = malloc((n ? n : 1) * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = frand();
  return v;
}

/* max |a - b| / max(max |b|, 1) */
static double max_rel(const float *a, const float *b, size_t n)
{
  double e = 0.0, m = 1.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    e = d > e ? d : e;
    m = fabs(b[i]) > m ? fabs(b[i]) : m;
  }
  return e / m;
}

static const struct geom {
  size_t h, w, cin, cout, k, stride, pad, B;
} geoms[] = {
    {28, 28, 1, 16, 8, 2, 3, 2},  /* conv1 */
    {13, 13, 16, 32, 4, 2, 0, 2}, /* conv2 */
    {7, 5, 3, 2, 3, 2, 1, 3},     /* odd */
};

static void test_conv_shapes(void **state)
{
  (void)state;
  conv_shape s1 = dpgd_conv_shape_make(28, 28, 1, 16, 8, 2, 3);
  assert_int_equal(s1.oh, 14); /* PyTorch: floor((28 + 6 - 8) / 2) + 1 */
  assert_int_equal(s1.ow, 14);
  conv_shape s2 = dpgd_conv_shape_make(13, 13, 16, 32, 4, 2, 0);
  assert_int_equal(s2.oh, 5);
  conv_shape s3 = dpgd_conv_shape_make(7, 5, 3, 2, 3, 2, 1);
  assert_int_equal(s3.oh, 4);
  assert_int_equal(s3.ow, 3);
}

static void test_im2col(void **state)
{
  (void)state;
  for (size_t g = 0; g < sizeof geoms / sizeof geoms[0]; g++) {
    const struct geom *q = &geoms[g];
    conv_shape s = dpgd_conv_shape_make(q->h, q->w, q->cin, q->cout, q->k, q->stride, q->pad);
    size_t nx = q->B * q->h * q->w * q->cin, nc = q->B * s.oh * s.ow * q->cin * q->k * q->k;
    float *x = rand_vec(nx), *c = rand_vec(nc), *cr = rand_vec(nc);
    dpgd_im2col(c, x, &s, q->B);
    dpgd_im2col_ref(cr, x, &s, q->B);
    assert_memory_equal(c, cr, nc * sizeof *c); /* copies only: exact */

    float *dc = rand_vec(nc), *dx = rand_vec(nx), *dxr = malloc(nx * sizeof *dxr);
    memcpy(dxr, dx, nx * sizeof *dx); /* col2im accumulates */
    dpgd_col2im(dx, dc, &s, q->B);
    dpgd_col2im_ref(dxr, dc, &s, q->B);
    if (max_rel(dx, dxr, nx) > 1e-6) fail_msg("geometry %zu: col2im vs reference", g);

    /* Adjointness: <dpgd_im2col(x), dc> == <x, dpgd_col2im(dc)>, in double. */
    memset(dx, 0, nx * sizeof *dx);
    dpgd_col2im(dx, dc, &s, q->B);
    double l = 0.0, r = 0.0, sc = 0.0;
    for (size_t i = 0; i < nc; i++) l += (double)c[i] * dc[i], sc += fabs((double)c[i] * dc[i]);
    for (size_t i = 0; i < nx; i++) r += (double)x[i] * dx[i];
    if (fabs(l - r) > 1e-5 * sc) fail_msg("geometry %zu: col2im is not im2col's adjoint", g);
    free(x);
    free(c);
    free(cr);
    free(dc);
    free(dx);
    free(dxr);
  }
}

static void test_linear(void **state)
{
  (void)state;
  const size_t dims[][3] = {{7, 64, 16}, {50, 256, 32}, {3, 512, 32}, {5, 32, 10}, {1, 1, 1}};
  for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
    size_t rows = dims[t][0], K = dims[t][1], cout = dims[t][2];
    float *x = rand_vec(rows * K), *W = rand_vec(cout * K), *b = rand_vec(cout);
    float *y = rand_vec(rows * cout), *yr = rand_vec(rows * cout);
    dpgd_linear_forward(y, x, W, b, rows, K, cout);
    dpgd_linear_forward_ref(yr, x, W, b, rows, K, cout);
    if (max_rel(y, yr, rows * cout) > 1e-5) fail_msg("linear_forward %zu", t);
    float *dy = rand_vec(rows * cout), *dx = rand_vec(rows * K), *dxr = rand_vec(rows * K);
    dpgd_linear_backward_input(dx, dy, W, rows, K, cout);
    dpgd_linear_backward_input_ref(dxr, dy, W, rows, K, cout);
    if (max_rel(dx, dxr, rows * K) > 1e-5) fail_msg("linear_backward_input %zu", t);
    free(x);
    free(W);
    free(b);
    free(y);
    free(yr);
    free(dy);
    free(dx);
    free(dxr);
  }
}

static void test_maxpool(void **state)
{
  (void)state;
  const size_t B = 2, h = 6, w = 5, c = 3, n = B * h * w * c, no = B * (h - 1) * (w - 1) * c;
  for (int variant = 0; variant < 3; variant++) {
    float *x = rand_vec(n);
    if (variant == 1) /* many ties: values in {-1, 0, 1} */
      for (size_t i = 0; i < n; i++) x[i] = roundf(x[i]);
    if (variant == 2) {
      x[7] = NAN;
      x[40] = NAN;
    }
    float *y = malloc(no * sizeof *y), *yr = malloc(no * sizeof *yr);
    uint8_t *a = malloc(no * sizeof *a), *ar = malloc(no * sizeof *ar);
    dpgd_maxpool2s1_forward(y, a, x, B, h, w, c);
    dpgd_maxpool2s1_forward_ref(yr, ar, x, B, h, w, c);
    assert_memory_equal(a, ar, no * sizeof *a);
    for (size_t i = 0; i < no; i++) {
      if (isnan(yr[i])) {
        assert_true(isnan(y[i])); /* NaN propagates, as in PyTorch */
        continue;
      }
      assert_true(y[i] == yr[i]);
    }
    if (variant == 1) { /* ties go to the first in scan order */
      for (size_t i = 0; i < no; i++)
        if (ar[i] > 0) {
          /* every earlier candidate is strictly smaller */
          size_t bb = i / ((h - 1) * (w - 1) * c), rem = i % ((h - 1) * (w - 1) * c);
          size_t ii = rem / ((w - 1) * c), jj = (rem / c) % (w - 1), ch = rem % c;
          for (int q = 0; q < ar[i]; q++)
            assert_true(
                x[((bb * h + ii + (size_t)(q / 2)) * w + jj + (size_t)(q % 2)) * c + ch] <
                y[i]);
        }
    }
    float *dy = rand_vec(no), *dx = rand_vec(n), *dxr = rand_vec(n);
    dpgd_maxpool2s1_backward(dx, dy, a, B, h, w, c);
    dpgd_maxpool2s1_backward_ref(dxr, dy, ar, B, h, w, c);
    if (max_rel(dx, dxr, n) > 1e-6) fail_msg("maxpool backward, variant %d", variant);
    /* Total gradient is conserved. */
    double sdy = 0.0, sdx = 0.0;
    for (size_t i = 0; i < no; i++) sdy += dy[i];
    for (size_t i = 0; i < n; i++) sdx += dx[i];
    assert_true(fabs(sdy - sdx) <= 1e-5 * (double)no);
    free(x);
    free(y);
    free(yr);
    free(a);
    free(ar);
    free(dy);
    free(dx);
    free(dxr);
  }
}

static void test_activations(void **state)
{
  (void)state;
  const size_t n = 1000;
  float *z = rand_vec(n);
  for (size_t i = 0; i < n; i++) z[i] *= 4.0f;
  z[0] = 0.0f;
  float *a = malloc(n * sizeof *a), *g = malloc(n * sizeof *g);
  /* tanh: a = tanh z, da/dz = 1 - tanh^2 z */
  memcpy(a, z, n * sizeof *z);
  dpgd_act_forward(a, n, DPGD_ACT_TANH);
  for (size_t i = 0; i < n; i++) g[i] = 2.0f;
  dpgd_act_backward(g, a, n, DPGD_ACT_TANH);
  for (size_t i = 0; i < n; i++) {
    double t = tanh((double)z[i]);
    assert_true(fabs(a[i] - t) <= 1e-6);
    assert_true(fabs(g[i] - 2.0 * (1.0 - t * t)) <= 1e-5);
  }
  /* relu: a = max(z, 0); derivative 1 where z > 0, else 0 (PyTorch: 0 at 0) */
  memcpy(a, z, n * sizeof *z);
  dpgd_act_forward(a, n, DPGD_ACT_RELU);
  for (size_t i = 0; i < n; i++) g[i] = 3.0f;
  dpgd_act_backward(g, a, n, DPGD_ACT_RELU);
  for (size_t i = 0; i < n; i++) {
    assert_true(a[i] == (z[i] > 0 ? z[i] : 0.0f));
    assert_true(g[i] == (z[i] > 0 ? 3.0f : 0.0f));
  }
  float nan = NAN;
  dpgd_act_forward(&nan, 1, DPGD_ACT_RELU);
  assert_true(isnan(nan));
  free(z);
  free(a);
  free(g);
}

/* The float's distance in ulps from the double t (|t| <= 1): the difference over the
 * spacing of floats at t. */
static double ulps(float a, double t)
{
  double at = fabs(t) < 0x1p-126 ? 0x1p-126 : fabs(t);
  int e;
  frexp(at, &e);
  return fabs((double)a - t) / ldexp(1.0, e - 24);
}

/* The vectorised tanh (tanh.c) against libm's tanh in double: within 1 ulp of it over a
 * sweep of float bit patterns in [-12, 12] (every 97th float: tiny, subnormal, near the
 * clamp at 9.5), odd, NaN kept, +-inf to +-1; and bit for bit the scalar reference over
 * every length 0..40 (the vector loop's tails). */
static void test_tanh_fast(void **state)
{
  (void)state;
  enum { M = 1 << 16 };
  float *a = malloc(M * sizeof *a), *b = malloc(M * sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  double worst = 0;
  size_t count = 0;
  for (uint32_t u = 0; u < 0x41400000u; u += 97 * M) { /* 0x41400000 = 12.0f */
    size_t m = 0;
    for (uint32_t v = u; m < M && v < 0x41400000u; v += 97, m++) {
      float f;
      memcpy(&f, &v, sizeof f);
      a[m] = (m & 1) ? -f : f;
    }
    memcpy(b, a, m * sizeof *a);
    dpgd_tanh_f32(b, m);
    for (size_t i = 0; i < m; i++) {
      double d = ulps(b[i], tanh((double)a[i]));
      worst = d > worst ? d : worst;
      assert_true(d <= 1.0);
    }
    count += m;
  }
  print_message("  tanh: %zu floats, worst %.3f ulp\n", count, worst);
  for (size_t n = 0; n <= 40; n++) {
    float *r = rand_vec(n + 1);
    for (size_t i = 0; i <= n; i++) r[i] *= 6.0f, a[i] = b[i] = r[i];
    dpgd_tanh_f32(a, n);
    dpgd_tanh_f32_ref(b, n);
    assert_memory_equal(a, b, (n + 1) * sizeof *a); /* and a[n] untouched in both */
    free(r);
  }
  float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, 9.5f, -30.0f};
  dpgd_tanh_f32(sp, 6);
  assert_true(isnan(sp[0]) && sp[1] == 1.0f && sp[2] == -1.0f && sp[3] == 0.0f);
  assert_true(sp[4] == 1.0f && sp[5] == -1.0f);
  free(a);
  free(b);
}

static void test_softmax_residual(void **state)
{
  (void)state;
  const size_t B = 6;
  const int K = 10;
  float *z = rand_vec(B * (size_t)K), *r = malloc(B * (size_t)K * sizeof *r);
  for (size_t i = 0; i < B * (size_t)K; i++) z[i] *= 5.0f;
  for (int k = 0; k < K; k++) z[5 * K + k] = 1000.0f + (float)k; /* exp would overflow */
  uint8_t y[6] = {0, 9, 3, 3, 7, 9};
  memcpy(r, z, B * (size_t)K * sizeof *z);
  dpgd_softmax_residual(r, y, B, K);
  for (size_t i = 0; i < B; i++) {
    double m = -INFINITY, s = 0.0, sum = 0.0;
    for (int k = 0; k < K; k++) m = fmax(m, z[i * K + k]);
    for (int k = 0; k < K; k++) s += exp(z[i * K + k] - m);
    for (int k = 0; k < K; k++) {
      double p = exp(z[i * K + k] - m) / s - (k == y[i]);
      assert_true(isfinite(r[i * K + k]));
      assert_true(fabs(r[i * K + k] - p) <= 1e-6);
      sum += r[i * K + k];
    }
    assert_true(fabs(sum) <= 1e-6); /* probabilities sum to one */
  }
  free(z);
  free(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_shapes), cmocka_unit_test(test_im2col),
      cmocka_unit_test(test_linear),      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_activations), cmocka_unit_test(test_softmax_residual),
      cmocka_unit_test(test_tanh_fast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
