/* test_psum.c -- private sums of caller-computed gradients (train/PRIVATE_SUM.md): the
 * engine's clipping contract on caller rows (unclipped rows unchanged, clipped rows
 * within the cap, a norm exactly C, NaN rows and cap-0 rows give nothing), the ledger's
 * invariant under a budget, one noise draw per step (a zero-gradient twin with the same
 * seed cancels it), the accounting of Algorithms 6 and 7, and refused parameters. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_model.h"
#include "dpgd_train.h"

#define SHRINK 0x1p-20 /* the engine's clip shrink (model/SENSITIVITY.md 3) */

static double norm2(const double *v, size_t n)
{
  double s = 0;
  for (size_t j = 0; j < n; j++) s += v[j] * v[j];
  return s;
}

static void test_clip_rows_contract(void **state)
{
  (void)state;
  /* Rows: small (unclipped), large (clipped), norm exactly the cap (3-4-5), NaN, and a
   * NaN row under cap 0 (not read). */
  const float G[5][4] = {{0.125f, -0.25f, 0.5f, 0.0625f},
                         {23.85f, -7.5f, 11.0f, 3.0f},
                         {0.0f, 1.5f, 0.0f, 2.0f},
                         {1.0f, NAN, 0.5f, 0.5f},
                         {NAN, NAN, NAN, NAN}};
  const double caps[5] = {2.5, 2.5, 2.5, 2.5, 0.0};
  for (size_t i = 0; i < 5; i++) {
    double sum[4] = {0}, post = -1;
    assert_int_equal(dpgd_model_clip_rows_sum(sum, &post, G[i], &caps[i], 1, 4), DPGD_OK);
    double nv = norm2(sum, 4);
    assert_true(sqrt(nv) <= caps[i]);
    assert_true(post >= nv && post <= caps[i] * caps[i]);
    if (i == 0)
      for (size_t j = 0; j < 4; j++) assert_true(sum[j] == (double)G[0][j]);
    if (i == 1 || i == 2) assert_true(sqrt(nv) >= caps[i] * (1 - 2 * SHRINK));
    if (i >= 3) assert_true(nv == 0 && post == 0);
  }
  double sum[4], post[2];
  assert_int_equal(dpgd_model_clip_rows_sum(sum, post, &G[0][0], caps, 2, 0), DPGD_EINVAL);
}

static dpgd_psum *open_psum(size_t n, size_t dim, double clip, double sigma, double budget,
                            int rng, uint64_t seed)
{
  dpgd_psum_params p = {n, dim, clip, sigma, budget, rng, dpgd_seed_from_u64(seed)};
  dpgd_psum *s = NULL;
  assert_int_equal(dpgd_psum_open(&s, &p), DPGD_OK);
  return s;
}

static void test_open_rejects(void **state)
{
  (void)state;
  const dpgd_psum_params bad[] = {
      {0, 3, 1, 1, INFINITY, 0, {{[31] = 1}}},   {2, 0, 1, 1, INFINITY, 0, {{[31] = 1}}},
      {2, 3, 0, 1, INFINITY, 0, {{[31] = 1}}},   {2, 3, NAN, 1, INFINITY, 0, {{[31] = 1}}},
      {2, 3, 1, -1, INFINITY, 0, {{[31] = 1}}},  {2, 3, 1, INFINITY, INFINITY, 0, {{[31] = 1}}},
      {2, 3, 1, NAN, INFINITY, 0, {{[31] = 1}}}, {2, 3, 1, 1, 0, 0, {{[31] = 1}}},
      {2, 3, 1, 1, NAN, 0, {{[31] = 1}}},        {2, 3, 1, 1, INFINITY, 7, {{[31] = 1}}}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    dpgd_psum *s = (dpgd_psum *)&bad; /* must be reset to NULL */
    dpgd_error_clear();
    assert_int_equal(dpgd_psum_open(&s, &bad[k]), DPGD_EINVAL);
    assert_null(s);
    assert_true(strlen(dpgd_error_last()) > 0);
  }
  dpgd_psum_free(NULL);
}

/* Rows 0..n-1 of a (n, dim) matrix: point i's row is (i + 1) * 2.385 * e_(i mod dim),
 * so points 0 and 1 are unclipped at C = 5 and the rest clipped. */
static void fill(float *G, size_t n, size_t dim)
{
  memset(G, 0, n * dim * sizeof *G);
  for (size_t i = 0; i < n; i++) G[i * dim + i % dim] = (float)((double)(i + 1) * 2.385);
}

static void test_twin_cancels_noise_and_ledger_holds(void **state)
{
  (void)state;
  enum { N = 6, D = 4 };
  const double C = 5, sigma = 1.75, B = 2.5 * C * C;
  float G[N * D], Z[N * D] = {0};
  fill(G, N, D);
  dpgd_psum *a = open_psum(N, D, C, sigma, B, DPGD_RNG_RESEARCH, 42);
  dpgd_psum *b = open_psum(N, D, C, sigma, B, DPGD_RNG_RESEARCH, 42);
  for (int t = 1; t <= 4; t++) {
    double sa[D], sb[D];
    assert_int_equal(dpgd_psum_step(a, G, sa), DPGD_OK);
    assert_int_equal(dpgd_psum_step(b, Z, sb), DPGD_OK);
    assert_true(norm2(sb, D) > 0); /* noise was added */
    /* Each coordinate j gets the rows i with i mod D = j: rows 0 and 1 unclipped while
     * their budget lasts, the rest at most their allowance. */
    const dpgd_ledger *l = dpgd_psum_ledger(a);
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
    double total = 0;
    for (size_t j = 0; j < D; j++) total += fabs(sa[j] - sb[j]);
    assert_true(total <= N * C * (1 + 1e-9));
    if (t == 1) assert_true(fabs((sa[0] - sb[0]) - (2.385 + C * (1 - SHRINK))) < 1e-6 * C);
    for (size_t i = 0; i < N; i++) assert_true(l->spend[i] <= B);
  }
  /* Point 0 spends 2.385^2 a step (4 steps: 22.8 < B = 62.5) and stays; point 1
   * (4.77^2 = 22.75 a step) and the clipped points 2..5 (C^2 = 25) reach B at step 3. */
  const dpgd_ledger *l = dpgd_psum_ledger(a);
  assert_int_equal(dpgd_ledger_active(l), 1);
  assert_true(l->spend[0] < B && l->spend[1] == B && l->spend[5] == B);
  assert_int_equal(dpgd_psum_steps(a), 4);
  dpgd_psum_free(a);
  dpgd_psum_free(b);
}

static void test_accounting(void **state)
{
  (void)state;
  enum { N = 3, D = 2 };
  const double C = 1.5, sigma = 3.7, delta = 1e-5;
  float G[N * D];
  double out[D];
  fill(G, N, D);
  dpgd_psum *plain = open_psum(N, D, C, sigma, INFINITY, DPGD_RNG_RESEARCH, 0);
  dpgd_psum *filt = open_psum(N, D, C, sigma, 2.5 * C * C, DPGD_RNG_RESEARCH, 3);
  dpgd_accountant *ref = dpgd_acct_alloc();
  for (int t = 1; t <= 5; t++) {
    assert_int_equal(dpgd_psum_step(plain, G, out), DPGD_OK);
    assert_int_equal(dpgd_psum_step(filt, G, out), DPGD_OK);
    assert_int_equal(dpgd_acct_add_gaussian(ref, 1 / sigma, 1), DPGD_OK);
    dpgd_acct_value got, want;
    assert_int_equal(
        dpgd_acct_epsilon(dpgd_psum_accountant(plain), DPGD_ACCT_EXACT, delta, &got), DPGD_OK);
    assert_int_equal(dpgd_acct_epsilon(ref, DPGD_ACCT_EXACT, delta, &want), DPGD_OK);
    assert_true(got.value == want.value);
    /* Algorithm 7: sqrt(min(B, t C^2)) / (sigma C)-GDP (docs/MATH.md "Private gradient
     * descent"). */
    double mu = sqrt(fmin(2.5, (double)t)) / sigma, gdp;
    assert_int_equal(dpgd_gdp_epsilon(mu, delta, &gdp), DPGD_OK);
    assert_int_equal(
        dpgd_acct_epsilon(dpgd_psum_accountant(filt), DPGD_ACCT_EXACT, delta, &got), DPGD_OK);
    assert_true(fabs(got.value - gdp) <= 1e-9 + got.err);
  }
  dpgd_acct_free(ref);
  dpgd_psum_free(plain);
  dpgd_psum_free(filt);
}

/* The integer rows sum (secure mode): each row clipped by the rule, rounded toward zero
 * onto the grid 2^-F, norm checked exactly: a row's contribution is exactly the sum's
 * change when the row is removed, and its norm is at most its cap in grid units. */
static void test_rows_sum_int(void **state)
{
  (void)state;
  enum { N = 4, P = 3, F = 10 };
  const float G[N * P] = {0.125f, -0.25f, 0.5f, 23.85f, -7.5f, 11.0f,
                          0.0f,   1.5f,   2.0f, 1.0f,   NAN,   0.5f};
  const double caps[N] = {2.5, 2.5, 2.5, 2.5};
  int64_t all[P] = {0};
  double post[N];
  assert_int_equal(dpgd_model_clip_rows_sum_int(all, post, G, caps, N, P, F), DPGD_OK);
  int64_t rest[P] = {0}, row[P];
  for (size_t i = 0; i < N; i++) {
    double caps_i[N];
    memcpy(caps_i, caps, sizeof caps);
    caps_i[i] = 0; /* the neighbour without point i */
    memset(rest, 0, sizeof rest);
    double pr[N];
    assert_int_equal(dpgd_model_clip_rows_sum_int(rest, pr, G, caps_i, N, P, F), DPGD_OK);
    double n2 = 0;
    for (size_t j = 0; j < P; j++) {
      row[j] = all[j] - rest[j];
      n2 += (double)row[j] * (double)row[j]; /* < 2^53: exact */
    }
    assert_true(n2 <= ldexp(caps[i] * caps[i], 2 * F));
    assert_true(ldexp(n2, -2 * F) <= post[i] && post[i] <= caps[i] * caps[i]);
    if (i == 0) /* unclipped: each coordinate truncated toward zero */
      for (size_t j = 0; j < P; j++) assert_true(row[j] == (int64_t)ldexp(G[j], F));
    if (i == 3) assert_true(n2 == 0 && post[3] == 0); /* a NaN row adds nothing */
  }
  /* caps whose grid units add up past 2^62 are refused before anything is added */
  const double big[2] = {0x1p60, 0x1p60};
  int64_t z[P] = {0};
  assert_int_equal(dpgd_model_clip_rows_sum_int(z, post, G, big, 2, P, 2), DPGD_ERANGE);
  assert_true(z[0] == 0 && z[1] == 0 && z[2] == 0);
}

/* Secure psum: every released coordinate is on the grid (the exact integer sum plus an
 * integer draw), the accountant holds discrete Gaussians (no exact curve; rdp_optimal as
 * for discrete Gaussians of mu = 1/sigma), and the ledger holds. */
static void test_secure_discrete(void **state)
{
  (void)state;
  enum { N = 6, D = 4 };
  const double C = 5, sigma = 1.75, delta = 1e-5;
  float G[N * D];
  fill(G, N, D);
  dpgd_psum *s = open_psum(N, D, C, sigma, INFINITY, DPGD_RNG_SECURE, 0);
  dpgd_accountant *ref = dpgd_acct_alloc();
  int F = -1;
  assert_int_equal(dpgd_model_grid_bits(N, C, sigma * C, &F), DPGD_OK);
  for (int t = 1; t <= 3; t++) {
    double out[D];
    assert_int_equal(dpgd_psum_step(s, G, out), DPGD_OK);
    for (size_t j = 0; j < D; j++) {
      double u = ldexp(out[j], F);
      assert_true(u == nearbyint(u));
    }
    assert_int_equal(dpgd_ledger_check(dpgd_psum_ledger(s)), DPGD_OK);
    assert_int_equal(dpgd_acct_add_discrete_gaussian(ref, 1 / sigma, 1), DPGD_OK);
  }
  dpgd_acct_value got, want;
  assert_int_not_equal(dpgd_acct_epsilon(dpgd_psum_accountant(s), DPGD_ACCT_EXACT, delta, &got),
                       DPGD_OK);
  assert_int_equal(
      dpgd_acct_epsilon(dpgd_psum_accountant(s), DPGD_ACCT_RDP_OPTIMAL, delta, &got), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(ref, DPGD_ACCT_RDP_OPTIMAL, delta, &want), DPGD_OK);
  assert_true(got.value == want.value);
  dpgd_acct_free(ref);
  dpgd_psum_free(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clip_rows_contract),
      cmocka_unit_test(test_open_rejects),
      cmocka_unit_test(test_twin_cancels_noise_and_ledger_holds),
      cmocka_unit_test(test_accounting),
      cmocka_unit_test(test_rows_sum_int),
      cmocka_unit_test(test_secure_discrete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
