/* test_clip.c -- the engine's sensitivity contract in floating point (label quick;
 * dpgd_model.h, model/SENSITIVITY.md): adversarial per-example gradients (subnormal,
 * tiny with a tiny cap, huge, NaN/Inf, at the cap and one ulp either side, cap 0, a
 * subnormal cap) fed to the clipping rule and the double accumulation directly, and
 * through one softmax chunk. Every check is made against the exact contribution
 * v = f g in __float128 (f g is exact in double, and a double times a float is exact in
 * __float128's 113 bits), never against a number the code printed:
 *   (a) ||v|| <= cap, (b) post >= ||v||^2, (c) ||S - sum v|| <= gamma sum ||v||. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "layers.h"
#include "model_internal.h"

typedef __float128 q128;

static uint64_t rng = 88172645463325252ull;
static double unif(void) /* [0, 1) */
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}
/* A "high-entropy" value in (-1, 1), never 0. */
static float val(void) { return (float)((unif() - 0.5) * 1.9 + 0.0123); }

static q128 q_abs(q128 a) { return a < 0 ? -a : a; }
/* Square root by Newton's method from the double one (q128 has no libm here). */
static q128 q_sqrt(q128 a)
{
  if (a <= 0) return 0;
  q128 x = sqrt((double)a);
  for (int k = 0; k < 3; k++) x = (x + a / x) / 2;
  return x;
}

/* ---- one row through clip_scale and accumulate_rows ------------------------------ */

/* Clips row g (P) to cap, sums it with accumulate_rows into a zero acc and checks
 * (a), (b) and (c) exactly; returns the factor. */
static float check_row(const float *g, size_t P, double cap, const char *what)
{
  double pre, post;
  float f = dpgd_clip_scale(dpgd_sqnorm_d(g, P), cap, P, &pre, &post);
  double *acc = calloc(P, sizeof *acc);
  assert_non_null(acc);
  dpgd_accumulate_rows(acc, g, &f, 1, P);
  assert_true(f >= 0.0f && f <= 1.0f);
  q128 v2 = 0, err2 = 0, acc2 = 0;
  if (f != 0.0f)
    for (size_t p = 0; p < P; p++) {
      q128 v = (q128)f * (q128)g[p];
      v2 += v * v;
      err2 += ((q128)acc[p] - v) * ((q128)acc[p] - v);
      acc2 += (q128)acc[p] * acc[p];
    }
  else
    for (size_t p = 0; p < P; p++) assert_true(acc[p] == 0.0);
  q128 cap2 = (q128)cap * (q128)cap;
  double gamma = dpgd_model_sum_error_bound(1);
  if (!(v2 <= cap2)) /* (a) */
    fail_msg("%s: ||v|| = %.17g above cap %.17g", what, (double)q_sqrt(v2), cap);
  if (!((q128)post >= v2)) /* (b) */
    fail_msg("%s: post %.17g below ||v||^2 %.17g", what, post, (double)v2);
  if (f == 0.0f) assert_true(post == 0.0);
  assert_true(post <= cap * cap);
  if (!(acc2 <= cap2 * (1 + gamma) * (1 + gamma))) /* the released row itself */
    fail_msg("%s: ||sum|| = %.17g above cap %.17g", what, (double)q_sqrt(acc2), cap);
  if (!(err2 <= gamma * gamma * v2)) /* (c) */
    fail_msg("%s: sum off by %.3g relative, gamma %.3g", what, (double)q_sqrt(err2 / v2),
             gamma);
  free(acc);
  return f;
}

static void test_subnormal(void **state)
{
  (void)state;
  enum { P = 37 };
  float g[P];
  for (size_t p = 0; p < P; p++) g[p] = (float)(1 + p % 5) * 0x1p-149f; /* subnormal */
  double n = sqrt(dpgd_sqnorm_d(g, P));
  /* Below FLT_MIN: no contribution whatever the cap. */
  const double caps[] = {1.0, n, 0.6 * n, 0.9 * n, 1e-50, 0x1p-149};
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++)
    assert_true(check_row(g, P, caps[k], "subnormal row") == 0.0f);
  /* One subnormal entry among normal ones: clipped as usual, the product exact. */
  g[3] = 0x1p-149f;
  g[0] = 2.385e-30f;
  for (size_t p = 4; p < P; p++) g[p] = 0x1p-140f * (float)p;
  n = sqrt(dpgd_sqnorm_d(g, P));
  check_row(g, P, 0.6 * n, "mixed subnormal row");
}

static void test_tiny(void **state)
{
  (void)state;
  enum { P = 29 };
  float g[P];
  for (size_t p = 0; p < P; p++) g[p] = val() * 1e-30f;
  double n = sqrt(dpgd_sqnorm_d(g, P));
  for (int k = 1; k <= 20; k++) {
    float f = check_row(g, P, n * k / 23.0, "tiny row, tiny cap");
    assert_true(f > 0.0f && f >= k / 23.0 * (1 - 1e-5));
  }
  /* Right at FLT_MIN: norms just above it are clipped normally. */
  for (size_t p = 0; p < P; p++) g[p] = 0.0f;
  g[5] = FLT_MIN;
  g[6] = FLT_MIN / 2;
  check_row(g, P, 0.5 * FLT_MIN, "norm near FLT_MIN");
}

/* Huge entries (1e38): the factor is a subnormal float for small caps; rounding it to
 * nearest could overshoot q by up to half a subnormal ulp, far beyond the shrink. */
static void test_huge(void **state)
{
  (void)state;
  enum { P = 41 };
  float g[P];
  for (size_t p = 0; p < P; p++) g[p] = val() * 1e38f;
  for (int k = 0; k < 40; k++) check_row(g, P, 1e-3 * (1 + k / 7.0), "huge row");
  check_row(g, P, 1.0, "huge row, cap 1");
  check_row(g, P, 1e30, "huge row, cap 1e30");
  check_row(g, P, INFINITY, "huge row, cap inf");
  g[7] = FLT_MAX;
  g[8] = -FLT_MAX;
  check_row(g, P, 2.385, "FLT_MAX entries");
}

static void test_nonfinite(void **state)
{
  (void)state;
  enum { P = 19, B = 3 };
  float G[B * P];
  for (size_t j = 0; j < B * P; j++) G[j] = val();
  const float bad[] = {NAN, INFINITY, -INFINITY};
  for (size_t k = 0; k < 3; k++) {
    G[P + 4] = bad[k];
    double pre, post;
    float f = dpgd_clip_scale(dpgd_sqnorm_d(G + P, P), 1.0, P, &pre, &post);
    assert_true(f == 0.0f && post == 0.0 && isinf(pre) && pre > 0);
    /* The row is skipped: the sum is exactly that of the two others. */
    float s[B] = {0.5f, f, 0.25f}, s0[B] = {0.5f, 0.0f, 0.25f};
    double a[P] = {0}, b[P] = {0};
    dpgd_accumulate_rows(a, G, s, B, P);
    float G0[B * P];
    memcpy(G0, G, sizeof G);
    for (size_t p = 0; p < P; p++) G0[P + p] = 0.0f;
    dpgd_accumulate_rows(b, G0, s0, B, P);
    assert_memory_equal(a, b, sizeof a);
  }
}

/* Caps at the computed norm and a few ulps either side, on rows whose computed squared
 * norm is rounded down: the rule must clip them (a cap^2 equal to the computed sq can be
 * below the true ||g||^2). */
static void test_at_cap(void **state)
{
  (void)state;
  enum { P = 53 };
  float g[P];
  int rounded_down = 0;
  for (int row = 0; row < 300; row++) {
    for (size_t p = 0; p < P; p++) g[p] = val() * (float)(1 + row % 7);
    double sq = dpgd_sqnorm_d(g, P);
    q128 exact = 0;
    for (size_t p = 0; p < P; p++) exact += (q128)g[p] * g[p];
    rounded_down += (q128)sq < exact;
    double c0 = sqrt(sq);
    while (c0 * c0 < sq) c0 = nextafter(c0, INFINITY);
    double c = c0;
    for (int k = 0; k < 3; k++) c = nextafter(c, 0.0);
    for (int k = -3; k <= 3; k++, c = nextafter(c, INFINITY)) check_row(g, P, c, "at the cap");
  }
  assert_true(rounded_down > 0);
  /* An exactly representable norm: (1.5, 2) has norm 2.5. */
  float h[2] = {1.5f, 2.0f};
  assert_true(check_row(h, 2, 2.5, "norm exactly the cap") < 1.0f);
  assert_true(check_row(h, 2, 2.5 * (1 + 1e-9), "cap just above the norm") == 1.0f);
}

static void test_cap_zero_subnormal(void **state)
{
  (void)state;
  enum { P = 23 };
  float g[P];
  for (size_t p = 0; p < P; p++) g[p] = val();
  const double caps[] = {0.0, 0x1p-1074, 1e-310, 1e-160, 0x1p-512, DBL_MIN};
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++)
    assert_true(check_row(g, P, caps[k], "zero or subnormal cap") == 0.0f);
  /* The smallest cap whose square is normal still gives a factor <= cap/||g||. */
  check_row(g, P, 0x1p-511, "cap 2^-511");
  for (size_t p = 0; p < P; p++) g[p] *= 1e-37f;
  check_row(g, P, 1e-150, "tiny cap, tiny row");
}

/* ---- many rows: the sum's error against gamma ---------------------------------- */

/* B rows in nearly one direction, all clipped to caps near 1: the float sum of such
 * rows was off by ~1e-7 relative; the double one must be within gamma. */
static void test_sum_rows(void **state)
{
  (void)state;
  enum { P = 97, B = 256 };
  float *G = malloc(B * P * sizeof *G), scale[B];
  double *acc = calloc(P, sizeof *acc);
  for (size_t p = 0; p < P; p++) G[p] = val() * 3.0f;
  for (size_t i = 1; i < B; i++)
    for (size_t p = 0; p < P; p++) G[i * P + p] = G[p] * (float)(1 + 0.001 * val());
  q128 sumv_norm = 0;
  for (size_t i = 0; i < B; i++) {
    double pre, post, cap = 0.9 + 0.2 * unif();
    scale[i] = dpgd_clip_scale(dpgd_sqnorm_d(G + i * P, P), cap, P, &pre, &post);
    assert_true(scale[i] > 0.0f && scale[i] < 1.0f);
  }
  dpgd_accumulate_rows(acc, G, scale, B, P);
  q128 err2 = 0;
  for (size_t p = 0; p < P; p++) {
    q128 s = 0;
    for (size_t i = 0; i < B; i++) s += (q128)scale[i] * G[i * P + p];
    err2 += ((q128)acc[p] - s) * ((q128)acc[p] - s);
  }
  for (size_t i = 0; i < B; i++) {
    q128 v2 = 0;
    for (size_t p = 0; p < P; p++)
      v2 += ((q128)scale[i] * G[i * P + p]) * ((q128)scale[i] * G[i * P + p]);
    sumv_norm += q_sqrt(v2);
  }
  double gamma = dpgd_model_sum_error_bound(B);
  if (!(q_sqrt(err2) <= gamma * sumv_norm))
    fail_msg("row sum off by %.3g of sum ||v||; gamma %.3g", (double)(q_sqrt(err2) / sumv_norm),
             gamma);
  free(G);
  free(acc);
}

/* Rank-one rows r_i x_i^T (+ bias r_i): accumulate_linear (the dgemm where D % 8 != 0
 * or the CPU lacks AVX-512F, else linsum.c's fused chains) and the reference loops, each
 * within gamma of the exact sum; rows with adversarial r or x among them. The fused
 * chains bit for bit fma() in example order over the kept rows, the bias their sum in
 * that order. */
static void check_sum_linear(const size_t B, const size_t K, const size_t D)
{
  const size_t P = K * D + K;
  float *r = malloc(B * K * sizeof *r), *x = malloc(B * D * sizeof *x),
        *scale = malloc(B * sizeof *scale);
  double *rs = malloc(B * K * sizeof *rs), *xd = malloc(B * D * sizeof *xd);
  double *W = calloc(K * D, sizeof *W), *b = calloc(K, sizeof *b);
  double *Wr = calloc(K * D, sizeof *Wr), *br = calloc(K, sizeof *br);
  double *post = malloc(B * sizeof *post), *caps = malloc(B * sizeof *caps);
  for (size_t i = 0; i < B; i++) {
    for (size_t k = 0; k < K; k++) r[i * K + k] = val() * 0.3f;
    for (size_t j = 0; j < D; j++) x[i * D + j] = (float)unif() * 2.0f;
    caps[i] = 0.5 + unif();
  }
  for (size_t k = 0; k < K; k++) r[3 * K + k] = (float)(k + 1) * 0x1p-149f; /* subnormal r */
  for (size_t j = 0; j < D; j++) x[5 * D + j] = val() * 1e38f;              /* huge x */
  x[7 * D + 11] = NAN;                                                      /* NaN */
  x[8 * D + 2] = INFINITY;
  for (size_t k = 0; k < K; k++) r[8 * K + k] = 0.0f; /* inf * 0 in the norm */
  caps[9] = 0.0;
  caps[10] = 1e-310;
  caps[11] = INFINITY;
  caps[12] = 1e-30;
  for (size_t i = 0; i < B; i++) {
    double pre;
    scale[i] = dpgd_clip_scale(dpgd_linear_sqnorm(r + i * K, x + i * D, K, D), caps[i], P, &pre,
                               &post[i]);
  }
  assert_true(scale[3] == 0.0f && scale[7] == 0.0f && scale[8] == 0.0f);
  assert_true(scale[9] == 0.0f && scale[10] == 0.0f && scale[11] == 1.0f);
  dpgd_accumulate_linear(W, b, rs, xd, r, x, scale, B, K, D);
  dpgd_accumulate_linear_ref(Wr, br, r, x, scale, B, K, D);
  for (size_t j = 0; j < K * D; j++) assert_true(isfinite(W[j]) && isfinite(Wr[j]));
  if (D % 8 == 0 && dpgd_gemm_wide())
    for (size_t k = 0; k < K; k++) {
      double bk = 0.0;
      for (size_t j = 0; j < D; j++) {
        double a = 0.0;
        for (size_t i = 0; i < B; i++)
          if (scale[i] != 0.0f)
            a = fma((double)scale[i] * r[i * K + k], (double)x[i * D + j], a);
        if (memcmp(&a, &W[k * D + j], sizeof a))
          fail_msg("fused linear sum bits, B %zu K %zu D %zu at (%zu, %zu)", B, K, D, k, j);
      }
      for (size_t i = 0; i < B; i++)
        if (scale[i] != 0.0f) bk += (double)scale[i] * r[i * K + k];
      if (memcmp(&bk, &b[k], sizeof bk)) fail_msg("linear bias bits at %zu", k);
    }
  /* (a) and (b) per row, exactly; then (c) for both sums. */
  q128 sumv = 0;
  for (size_t i = 0; i < B; i++) {
    q128 r2 = 0, x2 = 1;
    if (scale[i] != 0.0f) {
      for (size_t k = 0; k < K; k++)
        r2 += ((q128)scale[i] * r[i * K + k]) * ((q128)scale[i] * r[i * K + k]);
      for (size_t j = 0; j < D; j++) x2 += (q128)x[i * D + j] * x[i * D + j];
    }
    q128 v2 = r2 * x2;
    if (!(v2 <= (q128)caps[i] * caps[i])) fail_msg("linear row %zu: ||v|| above its cap", i);
    if (!((q128)post[i] >= v2)) fail_msg("linear row %zu: post below ||v||^2", i);
    sumv += q_sqrt(v2);
  }
  double gamma = dpgd_model_sum_error_bound(B);
  q128 e2 = 0, er2 = 0;
  for (size_t k = 0; k < K; k++) {
    for (size_t j = 0; j <= D; j++) { /* j == D: the bias */
      q128 s = 0;
      for (size_t i = 0; i < B; i++)
        if (scale[i] != 0.0f)
          s += (q128)((double)scale[i] * r[i * K + k]) * (j < D ? (q128)x[i * D + j] : 1);
      q128 a = j < D ? W[k * D + j] : b[k], ar = j < D ? Wr[k * D + j] : br[k];
      e2 += (a - s) * (a - s);
      er2 += (ar - s) * (ar - s);
    }
  }
  if (!(q_sqrt(e2) <= gamma * sumv))
    fail_msg("dgemm sum off by %.3g of sum ||v||; gamma %.3g", (double)(q_sqrt(e2) / sumv),
             gamma);
  if (!(q_sqrt(er2) <= gamma * sumv))
    fail_msg("reference sum off by %.3g of sum ||v||; gamma %.3g", (double)(q_sqrt(er2) / sumv),
             gamma);
  free(r);
  free(x);
  free(rs);
  free(xd);
  free(W);
  free(b);
  free(Wr);
  free(br);
  free(post);
  free(caps);
  free(scale);
}

static void test_sum_linear(void **state)
{
  (void)state;
  check_sum_linear(64, 10, 133); /* the dgemm */
  check_sum_linear(64, 10, 136); /* column blocks of 32 and one of 8; rows 6 + 4 */
  check_sum_linear(300, 13, 32); /* over 128 kept rows: chains across groups; 6 + 6 + 1 */
  check_sum_linear(40, 7, 56);   /* a last column block of 24 */
  check_sum_linear(20, 3, 16);   /* one column block of 16, three rows */
  check_sum_linear(16, 32, 512); /* the CNN's fc1 */
}

/* ---- through one softmax chunk --------------------------------------------------- */

/* With zero weights the logits are the bias, so the residuals r are what
 * softmax_residual gives for it, whatever x holds: the test knows every g_i = (r_i x_i^T,
 * r_i) exactly and checks the chunk's per-row factors, posts and sum against it. */
static void test_softmax_chunk(void **state)
{
  (void)state;
  enum { ROWS = 3, COLS = 5, D = ROWS * COLS, K = 4, B = 12 };
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, ROWS, COLS, K);
  assert_non_null(m);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, B, 1);
  assert_non_null(ws);
  const size_t P = dpgd_model_n_params(m);
  float *th = dpgd_model_params(m);
  memset(th, 0, P * sizeof *th);
  const float bias[K] = {0.3f, -1.7f, 2.385f, 0.01f};
  memcpy(th + K * D, bias, sizeof bias);
  float x[B * D], x0[B * D], r[B * K];
  uint8_t y[B];
  double caps[B], pre[B], post[B], *acc = calloc(P, sizeof *acc);
  for (size_t i = 0; i < B; i++) {
    y[i] = (uint8_t)(i % K);
    for (size_t j = 0; j < D; j++) x[i * D + j] = (float)unif();
    caps[i] = 0.05 + unif();
  }
  for (size_t j = 0; j < D; j++) {
    x[1 * D + j] = (float)(j + 1) * 0x1p-149f; /* subnormal inputs */
    x[2 * D + j] = val() * 1e38f;              /* huge inputs */
    x[3 * D + j] = val() * 1e-30f;             /* tiny inputs */
  }
  x[4 * D + 3] = NAN;
  x[5 * D + 9] = -INFINITY;
  caps[2] = 1e-3;
  caps[6] = 0.0;
  caps[7] = 1e-310;
  caps[8] = INFINITY;
  for (size_t i = 0; i < B; i++) {
    for (size_t k = 0; k < K; k++) r[i * K + k] = bias[k];
  }
  dpgd_softmax_residual(r, y, B, K);
  memcpy(x0, x, sizeof x);
  assert_int_equal(dpgd_model_chunk_step_x(m, ws, acc, pre, post, x, y, caps, B), 0);
  double gamma = dpgd_model_sum_error_bound(B);
  q128 sumv = 0, e2 = 0;
  float scale[B];
  for (size_t i = 0; i < B; i++) {
    double pr, po;
    int finite = 1;
    for (size_t j = 0; j < D; j++) finite &= isfinite(x0[i * D + j]);
    scale[i] = finite ? dpgd_clip_scale(dpgd_linear_sqnorm(r + i * K, x0 + i * D, K, D),
                                        caps[i], P, &pr, &po)
                      : 0.0f;
    q128 r2 = 0, x2 = 1;
    for (size_t k = 0; k < K; k++)
      r2 += ((q128)scale[i] * r[i * K + k]) * ((q128)scale[i] * r[i * K + k]);
    if (scale[i] != 0.0f)
      for (size_t j = 0; j < D; j++) x2 += (q128)x0[i * D + j] * x0[i * D + j];
    q128 v2 = r2 * x2;
    if (!(v2 <= (q128)caps[i] * caps[i])) fail_msg("softmax row %zu: ||v|| above its cap", i);
    if (!((q128)post[i] >= v2)) fail_msg("softmax row %zu: post below ||v||^2", i);
    assert_true(post[i] <= caps[i] * caps[i]);
    sumv += q_sqrt(v2);
  }
  assert_true(scale[4] == 0.0f && post[4] == 0.0 && isinf(pre[4]));
  assert_true(scale[5] == 0.0f && post[5] == 0.0);
  assert_true(scale[6] == 0.0f && scale[7] == 0.0f && scale[8] == 1.0f);
  for (size_t k = 0; k < K; k++)
    for (size_t j = 0; j <= D; j++) {
      q128 s = 0;
      for (size_t i = 0; i < B; i++)
        if (scale[i] != 0.0f)
          s += (q128)((double)scale[i] * r[i * K + k]) * (j < D ? (q128)x0[i * D + j] : 1);
      q128 a = j < D ? acc[k * D + j] : acc[K * D + k];
      e2 += (a - s) * (a - s);
    }
  if (!(q_sqrt(e2) <= gamma * sumv))
    fail_msg("softmax chunk sum off by %.3g of sum ||v||; gamma %.3g",
             (double)(q_sqrt(e2) / sumv), gamma);
  free(acc);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

/* gamma: m u / (1 - m u) with m = n + 1026, an upper bound, +inf when m u >= 1/2. */
static void test_gamma(void **state)
{
  (void)state;
  const size_t ns[] = {0, 1, 60000, 1000000};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    q128 mu = ((q128)ns[k] + 1026) * (q128)0x1p-53;
    q128 exact = mu / (1 - mu);
    double g = dpgd_model_sum_error_bound(ns[k]);
    assert_true((q128)g >= exact && (q128)g <= exact * (1 + 1e-14));
  }
  assert_true(q_abs((q128)dpgd_model_sum_error_bound(60000) - 6.775e-12) < 1e-14);
  assert_true(isinf(dpgd_model_sum_error_bound((size_t)1 << 52)));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subnormal),     cmocka_unit_test(test_tiny),
      cmocka_unit_test(test_huge),          cmocka_unit_test(test_nonfinite),
      cmocka_unit_test(test_at_cap),        cmocka_unit_test(test_cap_zero_subnormal),
      cmocka_unit_test(test_sum_rows),      cmocka_unit_test(test_sum_linear),
      cmocka_unit_test(test_softmax_chunk), cmocka_unit_test(test_gamma),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
