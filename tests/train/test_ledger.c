/* test_ledger.c -- the per-point ledger of Algorithm 7 (docs/MATH.md "Private gradient
 * descent"): caps, the
 * exact invariant s(i) <= B_norm under adversarial float rounding, every boundary of
 * the filter (one step's budget left, exhausted on the last step, zero cap, a gradient of
 * norm exactly C, a model that reports a NaN norm), Algorithm 6 caps reproduced for
 * B = k C^2, and the per-point odometer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/testutil.h"
#include "dpgd_train.h"

static uint64_t rng_state = 0x2385ULL;
static double urand(void) { return tu_urand(&rng_state); } /* in [0, 1) */

static void test_alloc_rejects(void **state)
{
  (void)state;
  assert_null(dpgd_ledger_alloc(0, 1, 1.0, 1.0));
  assert_null(dpgd_ledger_alloc(3, 1, 0.0, 1.0));
  assert_null(dpgd_ledger_alloc(3, 1, NAN, 1.0));
  assert_null(dpgd_ledger_alloc(3, 1, 1.0, 0.0));
  assert_null(dpgd_ledger_alloc(3, 1, 1.0, INFINITY));
  dpgd_ledger *l = dpgd_ledger_alloc(3, 0, 1.0, 0.0); /* budget unused without filter */
  assert_non_null(l);
  assert_true(isinf(l->budget));
  dpgd_ledger_free(l);
  dpgd_ledger_free(NULL);
}

static void test_plain_caps(void **state)
{
  (void)state;
  double caps[5], post[5] = {1e9, 0, 3.1, 5.688, 2.0};
  dpgd_ledger *l = dpgd_ledger_alloc(5, 0, 2.385, 0);
  for (int t = 0; t < 50; t++) {
    dpgd_ledger_caps(l, caps);
    for (int i = 0; i < 5; i++) assert_true(caps[i] == 2.385);
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  }
  assert_int_equal(dpgd_ledger_active(l), 5);
  /* spend is min(post, C^2): point 0 was clipped every time. */
  assert_true(fabs(l->spend[0] - 50 * 2.385 * 2.385) < 1e-9);
  assert_true(l->spend[1] == 0);
  assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  dpgd_ledger_free(l);
}

/* Remaining budget exactly one step's cost; exhausted on that step; zero cap after. */
static void test_boundaries(void **state)
{
  (void)state;
  const double C = 2.375, B = 3 * C * C; /* C^2 = 361/64: k additions exact */
  double caps[3], post[3];
  dpgd_ledger *l = dpgd_ledger_alloc(3, 1, C, B);
  for (int t = 0; t < 3; t++) {
    dpgd_ledger_caps(l, caps);
    for (int i = 0; i < 3; i++) assert_true(caps[i] == C);
    post[0] = C * C;          /* gradient of norm exactly C */
    post[1] = C * C * 1.0001; /* model rounding above the cap: charged cap^2 */
    post[2] = 0.25;           /* small gradient */
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  }
  assert_true(l->spend[0] == B && l->spend[1] == B); /* exhausted on the last step */
  assert_int_equal(dpgd_ledger_active(l), 1);
  dpgd_ledger_caps(l, caps);
  assert_true(caps[0] == 0 && caps[1] == 0);
  /* Point 2 has B - 0.75 left: its cap is C (budget for a full step remains). */
  assert_true(caps[2] == C);
  post[0] = post[1] = 7.0; /* a model would report 0, but even 7 is charged 0 */
  post[2] = 1e6;
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  assert_true(l->spend[0] == B && l->spend[1] == B);
  assert_true(l->spend[2] == 0.75 + C * C);
  dpgd_ledger_caps(l, caps);
  assert_true(caps[2] == C); /* B - s = C^2 + 0.75 - ... still a full step */
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  /* Next: less than one step left (0.75) -> cap sqrt(B - s) < C. */
  dpgd_ledger_caps(l, caps);
  assert_true(caps[2] < C && caps[2] > 0);
  assert_true(l->spend[2] + caps[2] * caps[2] <= B);
  assert_true(fabs(caps[2] - sqrt(B - l->spend[2])) <= 4 * caps[2] * 0x1p-52);
  post[2] = 1e6;
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  dpgd_ledger_free(l);
}

static void test_nan_post_refused(void **state)
{
  (void)state;
  double caps[2], post[2] = {1.0, NAN};
  dpgd_ledger *l = dpgd_ledger_alloc(2, 1, 1.5, 10.0);
  dpgd_ledger_caps(l, caps);
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_ERANGE);
  assert_non_null(strstr(dpgd_error_last(), "point 1"));
  assert_true(l->spend[0] == 0); /* unchanged */
  post[1] = -1;
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_ERANGE);
  post[1] = INFINITY;
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_ERANGE);
  dpgd_ledger_free(l);
}

/* The invariant holds exactly under random budgets, clip norms and norms reported
 * slightly above the cap (the worst case of a model's float rounding), and caps are
 * maximal: within a few ulps of min(C, sqrt(B - s)). */
static void test_invariant_random(void **state)
{
  (void)state;
  enum { N = 257, T = 400 };
  double caps[N], post[N];
  for (int trial = 0; trial < 20; trial++) {
    double C = 0.1 + 5 * urand();
    double B = C * C * (1 + 40 * urand());
    dpgd_ledger *l = dpgd_ledger_alloc(N, 1, C, B);
    for (int t = 0; t < T; t++) {
      dpgd_ledger_caps(l, caps);
      for (int i = 0; i < N; i++) {
        double s = l->spend[i];
        assert_true(caps[i] >= 0 && caps[i] <= C);
        assert_true(s + caps[i] * caps[i] <= B);
        double ideal = fmin(C, sqrt(fmax(0, B - s)));
        assert_true(caps[i] >= ideal * (1 - 8 * 0x1p-52) - 1e-300);
        double u = urand();
        post[i] = u < 0.3   ? caps[i] * caps[i] * (1 + 1e-7) /* rounding above cap */
                  : u < 0.6 ? caps[i] * caps[i] * urand()
                            : 1e3 * C * C; /* big gradient, clipped */
      }
      assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
      assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
    }
    dpgd_ledger_free(l);
  }
}

/* B = k C^2: Algorithm 7's caps are exactly C for k steps (Algorithm 6), every point. */
static void test_alg6_caps_reproduced(void **state)
{
  (void)state;
  enum { N = 64 };
  const double Cs[] = {10, 15, 2.375, 0.75};
  const int ks[] = {112, 180, 420, 37};
  double caps[N], post[N];
  for (int c = 0; c < 4; c++) {
    double C = Cs[c];
    dpgd_ledger *l = dpgd_ledger_alloc(N, 1, C, ks[c] * C * C);
    for (int t = 0; t < ks[c]; t++) {
      dpgd_ledger_caps(l, caps);
      for (int i = 0; i < N; i++) {
        assert_true(caps[i] == C);
        post[i] = i % 2 ? C * C * (1 + 1e-9) : C * C * urand();
      }
      assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    }
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
    dpgd_ledger_caps(l, caps);
    for (int i = 1; i < N; i += 2) assert_true(caps[i] == 0); /* always clipped: done */
    dpgd_ledger_free(l);
  }
}

/* The point's total in mu^2 units: s(i)/(sigma C)^2, never below it. */
static void test_point_mu2(void **state)
{
  (void)state;
  const double C = 2.385, sigma = 3.7;
  double caps[3], post[3];
  dpgd_ledger *l = dpgd_ledger_alloc(3, 0, C, 0);
  for (int t = 1; t <= 9; t++) {
    dpgd_ledger_caps(l, caps);
    post[0] = C * C;
    post[1] = 0.5 * C * C;
    post[2] = 0;
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    long double want0 = (long double)t / ((long double)sigma * sigma);
    double got0 = dpgd_ledger_point_mu2(l, 0, sigma);
    assert_true((long double)got0 >= want0 && got0 <= (double)want0 * (1 + 1e-14));
    assert_true(dpgd_ledger_point_mu2(l, 1, sigma) >= 0.5L * want0);
    assert_true(dpgd_ledger_point_mu2(l, 2, sigma) == 0);
  }
  assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  dpgd_ledger_free(l);
}

/* Summation slack E: the engine's caps are a(i) - E, the charge (sqrt(post) + E)^2 up to
 * a(i)^2; a point whose allowance is at most E gets cap 0 and is charged nothing; the
 * invariant s(i) <= B holds through the last partial step. */
static void test_slack(void **state)
{
  (void)state;
  const double C = 2.375, E = 1e-3, B = 3.5 * C * C;
  double caps[3], post[3];
  dpgd_ledger *l = dpgd_ledger_alloc(3, 1, C, B);
  assert_int_equal(dpgd_ledger_set_slack(l, -1), DPGD_EINVAL);
  assert_int_equal(dpgd_ledger_set_slack(l, C), DPGD_EINVAL);
  assert_int_equal(dpgd_ledger_set_slack(l, E), DPGD_OK);
  dpgd_ledger_caps(l, caps);
  for (int i = 0; i < 3; i++) assert_true(caps[i] == C - E);
  post[0] = caps[0] * caps[0]; /* clipped: charged C^2 exactly */
  post[1] = 0.25;              /* unclipped: charged (0.5 + E)^2, rounded up */
  post[2] = 0;                 /* no contribution: nothing */
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  assert_true(l->spend[0] == C * C);
  assert_true(l->spend[1] >= (0.5 + E) * (0.5 + E) && l->spend[1] < 0.2511);
  assert_true(l->spend[2] == 0);
  for (int t = 0; t < 6; t++) {
    dpgd_ledger_caps(l, caps);
    for (int i = 0; i < 3; i++) post[i] = caps[i] * caps[i];
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
  }
  /* Point 0 spent 3 C^2 + the remaining 0.5 C^2 (its last cap was sqrt(0.5) C - E). */
  assert_true(l->spend[0] <= B && l->spend[0] > B * (1 - 1e-12));
  dpgd_ledger_caps(l, caps);
  assert_true(caps[0] == 0);
  /* A point left with an allowance below E: cap 0, no charge, still within B. */
  l->spend[2] = B - 0.25 * E * E;
  dpgd_ledger_caps(l, caps);
  assert_true(caps[2] == 0);
  post[2] = 0;
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  assert_true(l->spend[2] == B - 0.25 * E * E);
  dpgd_ledger_free(l);
}

/* A sampled step: dpgd_ledger_caps_in gives dpgd_ledger_caps' bits on the sampled
 * points and 0 elsewhere, and the spend of those caps (whatever the unsampled points'
 * post values, in runs of 8 or more that the spend skips) equals the spend of all the
 * caps with post 0 outside the sample: the same bits, every point, every step. A NaN
 * post value is refused even where the cap is 0. */
static void test_caps_in(void **state)
{
  (void)state;
  enum { N = 45, T = 60 };
  const double C = 1.25, B = 4 * C * C;
  double full[N], caps[N], post[N], post0[N];
  unsigned char in[N];
  int bound = 0;
  dpgd_ledger *a = dpgd_ledger_alloc(N, 1, C, B), *b = dpgd_ledger_alloc(N, 1, C, B);
  assert_int_equal(dpgd_ledger_set_slack(a, 1e-3), DPGD_OK);
  assert_int_equal(dpgd_ledger_set_slack(b, 1e-3), DPGD_OK);
  for (int t = 0; t < T; t++) {
    /* Every ninth point, shifting: a sampled point right after 8 unsampled ones. */
    for (int i = 0; i < N; i++) in[i] = (i + t) % 9 == 0 || i == N - 1 || urand() < 0.1;
    dpgd_ledger_caps(a, full);
    dpgd_ledger_caps_in(b, in, caps);
    for (int i = 0; i < N; i++) {
      double want = in[i] ? full[i] : 0.0;
      bound |= full[i] < C - 1e-3;
      assert_memory_equal(&caps[i], &want, sizeof want);
      post[i] = in[i] ? caps[i] * caps[i] * urand() : 1e6;
      post0[i] = in[i] ? post[i] : 0.0;
    }
    assert_int_equal(dpgd_ledger_spend(a, full, post0), DPGD_OK);
    assert_int_equal(dpgd_ledger_spend(b, caps, post), DPGD_OK);
    assert_memory_equal(a->spend, b->spend, N * sizeof(double));
  }
  assert_true(bound); /* the budgets ran out on the way */
  for (int i = 0; i < N; i++) caps[i] = 0, post[i] = 0;
  post[20] = NAN;
  assert_int_equal(dpgd_ledger_spend(b, caps, post), DPGD_ERANGE);
  dpgd_ledger_free(a);
  dpgd_ledger_free(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_rejects),    cmocka_unit_test(test_plain_caps),
      cmocka_unit_test(test_boundaries),       cmocka_unit_test(test_nan_post_refused),
      cmocka_unit_test(test_invariant_random), cmocka_unit_test(test_alg6_caps_reproduced),
      cmocka_unit_test(test_point_mu2),        cmocka_unit_test(test_slack),
      cmocka_unit_test(test_caps_in),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
