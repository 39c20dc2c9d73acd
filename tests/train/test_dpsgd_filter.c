/* test_dpsgd_filter.c -- individual filtering under Poisson subsampling
 * (train/DPSGD_FILTER.md), the ledger and the plan: the per-point RDP table against the
 * accountant's own subsampled-Gaussian RDP at sensitivity 1 and a long double
 * evaluation of docs/MATH.md "RDP curves", rounding up at random sensitivities, monotone
 * on the grid; budgets of k full-rate steps fit k steps and no more; caps and charges
 * never put any order over its budget; a point with a small refreshed norm spends less
 * than one at the cap; the plan's filter eps and its calibration; bad configurations are
 * refused. Runs and the held bound: test_dpsgd_filter_run.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "plan_internal.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
enum {
  N_TRAIN = 240,
  N_TEST = 120,
  K = DPGD_FILTER_SG_GRID,
  J = DPGD_FILTER_SG_N_ORDERS,
  STEPS = 8
};

/* docs/MATH.md "RDP curves" as written (no rearrangement), in long double (log-sum-exp). */
static long double ref_rdp(double q, double sigma, double x, int a)
{
  long double t[1025], m = -INFINITY, s = 0, lq = logl(q), l1q = log1pl(-(long double)q);
  for (int k = 0; k <= a; k++) {
    long double lc = lgammal(a + 1.0L) - lgammal(k + 1.0L) - lgammal(a - k + 1.0L);
    long double e = (long double)k * k - k, r = (long double)x / sigma;
    t[k] = lc + (a - k) * l1q + k * lq + e * r * r / 2;
    if (t[k] > m) m = t[k];
  }
  for (int k = 0; k <= a; k++) s += expl(t[k] - m);
  return (m + logl(s)) / (a - 1);
}

/* The accountant's eps_hat(a) of one subsampled Gaussian (q, sigma): sensitivity 1. */
static double acct_rdp(double q, double sigma, double a)
{
  dpgd_accountant *acc = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(acc, q, sigma, 1), DPGD_OK);
  double v = dpgd_acct_rdp_curve(acc, a);
  dpgd_acct_free(acc);
  return v;
}

static const double QS[] = {256.0 / 60000, 0.05, 0.3}, SIGMAS[] = {0.8, 1.385, 3.7};

/* Sensitivity 1 (the grid's last entry): the accountant's value within 1e-9 relative,
 * and above the long double evaluation of the formula. */
static void test_table_is_accountant_at_one(void **state)
{
  (void)state;
  for (int iq = 0; iq < 3; iq++)
    for (int is = 0; is < 3; is++) {
      double q = QS[iq], sigma = SIGMAS[is];
      dpgd_filter_sg *t = dpgd_filter_sg_alloc(q, sigma, J, dpgd_filter_sg_orders, K);
      assert_non_null(t);
      for (int j = 0; j < J; j++) {
        double a = dpgd_filter_sg_orders[j], got = t->eps[j * (K + 1) + K];
        double want = acct_rdp(q, sigma, a);
        long double ref = ref_rdp(q, sigma, 1.0, (int)a);
        if (!(fabs(got - want) <= 1e-9 * want) || !((long double)got >= ref))
          fail_msg("q %g sigma %g a %g: table %.17g, accountant %.17g, long double %.17Lg", q,
                   sigma, a, got, want, ref);
      }
      dpgd_filter_sg_free(t);
    }
}

/* Random sensitivities s in (0, 1]: the entry at ceil(K s) is >= the direct evaluation at
 * s (and >= the long double one); every row is non-decreasing in k, 0 at k = 0. */
static void test_table_rounds_up_and_monotone(void **state)
{
  (void)state;
  uint64_t seed = 2385;
  for (int iq = 0; iq < 3; iq++)
    for (int is = 0; is < 3; is++) {
      double q = QS[iq], sigma = SIGMAS[is];
      dpgd_filter_sg *t = dpgd_filter_sg_alloc(q, sigma, J, dpgd_filter_sg_orders, K);
      for (int j = 0; j < J; j++) {
        const double *e = t->eps + j * (K + 1);
        assert_true(e[0] == 0);
        for (int k = 0; k < K; k++)
          if (!(e[k] <= e[k + 1])) fail_msg("row %d not monotone at %d", j, k);
        for (int r = 0; r < 40; r++) {
          double s = tu_urand(&seed);
          if (s == 0) continue;
          int k = (int)ceil(K * s);
          double a = dpgd_filter_sg_orders[j], direct = dpgd_filter_sg_rdp(q, sigma, s, a);
          assert_true(e[k] >= direct);
          if (a <= 64) assert_true((long double)e[k] >= ref_rdp(q, sigma, s, (int)a));
        }
      }
      dpgd_filter_sg_free(t);
    }
  /* Bad arguments. */
  assert_true(isnan(dpgd_filter_sg_rdp(0, 1, 1, 2)) &&
              isnan(dpgd_filter_sg_rdp(0.1, 1, 1, 2.5)));
  assert_true(isnan(dpgd_filter_sg_rdp(0.1, 0, 1, 2)) &&
              isnan(dpgd_filter_sg_rdp(0.1, 1, -1, 2)));
  double bad[] = {1.5};
  assert_null(dpgd_filter_sg_alloc(0.1, 1, 1, bad, K));
  assert_null(dpgd_filter_sg_alloc(0.1, 1, J, dpgd_filter_sg_orders, 0));
  dpgd_error_clear();
}

/* k full-rate steps fit exactly: the cap is the whole grid for k charges, below it after. */
static void test_budget_fits_k_steps(void **state)
{
  (void)state;
  dpgd_filter_sg *t = dpgd_filter_sg_alloc(0.0427, 1.3, J, dpgd_filter_sg_orders, K);
  const int ks[] = {1, 7, 250};
  for (int c = 0; c < 3; c++) {
    double b[J];
    assert_int_equal(dpgd_filter_sg_budgets(t, ks[c], b), DPGD_OK);
    dpgd_filter *f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, J, dpgd_filter_sg_orders, b);
    uint32_t idx;
    for (int s = 0; s < ks[c]; s++) {
      assert_int_equal(dpgd_filter_sg_caps(f, t, &idx), DPGD_OK);
      assert_int_equal(idx, K);
      assert_int_equal(dpgd_filter_sg_charge(f, t, &idx), DPGD_OK);
    }
    assert_int_equal(dpgd_filter_sg_caps(f, t, &idx), DPGD_OK);
    assert_true(idx < K);
    uint32_t full = K; /* a full step now is refused, and changes nothing */
    double before = dpgd_filter_spent(f, 0, 0);
    assert_int_equal(dpgd_filter_sg_charge(f, t, &full), DPGD_ERANGE);
    assert_true(dpgd_filter_spent(f, 0, 0) == before);
    assert_true(isnan(dpgd_filter_point_mu2(f, 0, 1.0))); /* no Gaussian odometer */
    dpgd_filter_free(f);
  }
  dpgd_error_clear();
  dpgd_filter_sg_free(t);
}

/* The saved state keeps the flag of direct RDP charges (2): a round trip keeps it (no
 * odometer after the load either), and the flag on a filter of another currency is
 * refused as corrupt. */
static void test_saved_state_flag(void **state)
{
  (void)state;
  dpgd_filter_sg *t = dpgd_filter_sg_alloc(0.05, 1.3, J, dpgd_filter_sg_orders, K);
  double b[J];
  assert_int_equal(dpgd_filter_sg_budgets(t, 3, b), DPGD_OK);
  dpgd_filter *f = dpgd_filter_alloc(2, DPGD_FILTER_RDP, J, dpgd_filter_sg_orders, b), *g;
  uint32_t idx[2] = {K, 17};
  assert_int_equal(dpgd_filter_sg_charge(f, t, idx), DPGD_OK);
  void *buf;
  size_t len;
  assert_int_equal(dpgd_filter_serialize(f, &buf, &len), DPGD_OK);
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_OK);
  assert_true(isnan(dpgd_filter_point_mu2(g, 1, 1.0)));
  assert_true(dpgd_filter_spent(g, 1, 3) == dpgd_filter_spent(f, 1, 3));
  dpgd_filter_free(g);
  free(buf);
  double one = 1;
  dpgd_filter *h = dpgd_filter_alloc(2, DPGD_FILTER_GDP, 1, NULL, &one);
  assert_int_equal(dpgd_filter_serialize(h, &buf, &len), DPGD_OK);
  unsigned char *u = buf;
  u[40] = 2; /* the flag (after magic, version, currency, n, k) */
  uint32_t crc = dpgd_crc32(u, len - 4);
  for (int i = 0; i < 4; i++) u[len - 4 + i] = (unsigned char)(crc >> (8 * i));
  assert_int_equal(dpgd_filter_deserialize(&g, buf, len), DPGD_EFORMAT);
  free(buf);
  dpgd_filter_free(h);
  dpgd_filter_free(f);
  dpgd_filter_sg_free(t);
  dpgd_error_clear();
}

/* Charges at the caps (even points) or at random fractions of them (odd points): no
 * order of any point ever goes over its budget, the cap is 0 exactly when some order
 * cannot pay one grid step (dpgd_filter_sg_active), and the points charged their whole
 * caps halt. */
static void test_never_over_budget(void **state)
{
  (void)state;
  enum { N = 50 };
  dpgd_filter_sg *t = dpgd_filter_sg_alloc(0.05, 1.0, J, dpgd_filter_sg_orders, K);
  double b[J];
  assert_int_equal(dpgd_filter_sg_budgets(t, 6.5, b), DPGD_OK);
  dpgd_filter *f = dpgd_filter_alloc(N, DPGD_FILTER_RDP, J, dpgd_filter_sg_orders, b);
  uint32_t idx[N];
  uint64_t seed = 17;
  int steps = 0;
  for (; steps < 2000; steps++) {
    assert_int_equal(dpgd_filter_sg_caps(f, t, idx), DPGD_OK);
    int any = 0;
    for (int i = 0; i < N; i++) {
      any |= idx[i] > 0;
      assert_int_equal(idx[i] > 0, dpgd_filter_sg_active(f, t, (size_t)i));
      if (idx[i] && i % 2) idx[i] = (uint32_t)(idx[i] * tu_urand(&seed));
    }
    if (!any) break;
    assert_int_equal(dpgd_filter_sg_charge(f, t, idx), DPGD_OK);
    assert_int_equal(dpgd_filter_check(f), DPGD_OK);
  }
  /* The even points, charged their whole cap, have halted: some order cannot pay the
   * smallest step. */
  for (int i = 0; i < N; i += 2) {
    int stuck = 0;
    for (int j = 0; j < J; j++)
      stuck |=
          !(dpgd_filter_add_up(dpgd_filter_spent(f, i, j), t->eps[j * (K + 1) + 1]) <= b[j]);
    assert_true(stuck);
  }
  size_t active = 0;
  for (int i = 0; i < N; i++) active += (size_t)dpgd_filter_sg_active(f, t, (size_t)i);
  print_message("  %zu of %d points active after %d steps\n", active, N, steps);
  dpgd_filter_free(f);
  dpgd_filter_sg_free(t);
}

/* The ledger at a refresh step: a point whose clipped norm is small is charged the grid
 * point above it (its spend below the capped point's at every order) and its sum-pass cap
 * lowered to that grid point; the point at the cap is charged the full-rate step. */
static void test_refresh_small_norm_spends_less(void **state)
{
  (void)state;
  double C = 2.375;
  dpgd_ledger *l = dpgd_ledger_alloc_sg(3, C, 0.05, 1.3, 4);
  assert_non_null(l);
  double caps[3], post[3] = {0.01 * C * C, C * C, 0};
  dpgd_ledger_caps(l, caps);
  for (int i = 0; i < 3; i++) assert_true(caps[i] == C);
  assert_int_equal(dpgd_ledger_refresh(l, caps, post), DPGD_OK);
  assert_true(caps[0] >= 0.1 * C && caps[0] <= 0.101 * C && caps[1] == C && caps[2] == 0);
  assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
  for (size_t j = 0; j < J; j++) {
    double s0 = dpgd_filter_spent(l->filter, 0, j), s1 = dpgd_filter_spent(l->filter, 1, j);
    assert_true(s0 < s1 && s0 >= dpgd_filter_sg_rdp(0.05, 1.3, 0.1, dpgd_filter_sg_orders[j]));
    assert_true(s1 == l->sg->eps[j * (K + 1) + K]);
    assert_true(dpgd_filter_spent(l->filter, 2, j) == 0);
  }
  double s, frac, order;
  assert_int_equal(dpgd_ledger_point_rdp(l, 1, &s, &frac, &order), DPGD_OK);
  assert_true(frac <= 0.25 && frac > 0.2499999); /* B is 4 full steps, rounded up */
  /* A non-finite bound is a model defect: refused, the ledger unchanged. */
  post[0] = NAN;
  assert_int_equal(dpgd_ledger_refresh(l, caps, post), DPGD_ERANGE);
  dpgd_error_clear();
  dpgd_ledger_free(l);
}

/* The plan's filter eps is the smallest over the orders of the optimal conversion of
 * k times the accountant's per-step RDP (within the table's padding); calibration gives
 * the smallest sigma whose filter eps meets the target. */
static void test_plan_and_calibration(void **state)
{
  (void)state;
  dpgd_config c;
  tt_filter_config(&c, dir, "plan", STEPS, 40, 0);
  c.train_steps = 100;
  dpgd_plan p;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  double best = INFINITY;
  for (int j = 0; j < J; j++) {
    double a = dpgd_filter_sg_orders[j], e;
    if (dpgd_acct_rdp_conv_optimal(a, 40 * acct_rdp(0.1, 1.3, a), c.privacy_delta, &e))
      continue;
    if (e < best) best = e;
  }
  print_message("  filter eps %.10g, direct %.10g\n", p.filter_eps, best);
  assert_true(p.filter_eps >= best && p.filter_eps <= best * (1 + 1e-6));

  c.privacy_sigma = 0, c.privacy_calibrate = DPGD_CALIBRATE_SIGMA, c.privacy_epsilon = 2.385;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  double at, below;
  assert_int_equal(dpgd_plan_sg_epsilon(0.1, p.sigma, 40, c.privacy_delta, &at), DPGD_OK);
  assert_int_equal(dpgd_plan_sg_epsilon(0.1, p.sigma * (1 - 2e-7), 40, c.privacy_delta, &below),
                   DPGD_OK);
  print_message("  sigma %.10g: eps %.10g, below %.10g\n", p.sigma, at, below);
  assert_true(at <= 2.385 && below > 2.385 && p.filter_eps == at);
}

/* One line naming the keys for what is not supported. */
static void test_bad_config(void **state)
{
  (void)state;
  dpgd_config c;
  tt_filter_config(&c, dir, "bad", STEPS, 4, 0);
  assert_int_equal(dpgd_config_set(&c, "filter.refresh=0"), DPGD_EINVAL);
  assert_int_equal(dpgd_config_set(&c, "filter.refresh=-3"), DPGD_EINVAL);
  const char *bad[][2] = {
      {"filter.refresh=2.5", "filter.refresh must be a whole number"},
      {"filter.budget=10", "filter.budget"},
      {"stopping.queries=3", "stopping.queries is not supported"},
      {"privacy.calibrate=budget", "privacy.calibrate = budget is not supported"},
  };
  for (int b = 0; b < 4; b++) {
    tt_filter_config(&c, dir, "bad", STEPS, 4, 0);
    if (b == 3) c.privacy_epsilon = 1;
    assert_int_equal(dpgd_config_set(&c, bad[b][0]), DPGD_OK);
    assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
    if (!strstr(dpgd_error_last(), bad[b][1]))
      fail_msg("%s: message '%s'", bad[b][0], dpgd_error_last());
  }
  tt_filter_config(&c, dir, "bad", STEPS, 4, 2);
  c.filter_hold = 0.5;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.hold must be from 1"));
  tt_filter_config(&c, dir, "bad", STEPS, 0, 0); /* the hold without the filter */
  c.filter_hold = 2;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.hold applies to"));
  tt_filter_config(&c, dir, "bad", STEPS, 0, 3); /* refresh without the filter */
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.refresh applies to"));
  tt_filter_config(&c, dir, "bad", STEPS, 4, 0); /* dpgd audit does not model this filter */
  dpgd_audit *au = NULL;
  dpgd_audit_params ap = {
      .canaries = 10, .seed = 1, .confidence = 0.95, .planted_noise_scale = 1};
  char out[600];
  snprintf(out, sizeof out, "%s/audit", dir);
  assert_int_equal(dpgd_audit_open(&au, &c, out, &ap), DPGD_EINVAL);
  assert_null(au);
  assert_non_null(strstr(dpgd_error_last(), "dpgd audit does not support filter.enabled"));
  tt_filter_config(&c, dir, "bad", STEPS, 4, 0);
  c.filter_k = 0, c.filter_budget = 0; /* no budget */
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.k"));
  dpgd_error_clear();
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_accountant_at_one),
      cmocka_unit_test(test_table_rounds_up_and_monotone),
      cmocka_unit_test(test_budget_fits_k_steps),
      cmocka_unit_test(test_saved_state_flag),
      cmocka_unit_test(test_never_over_budget),
      cmocka_unit_test(test_refresh_small_norm_spends_less),
      cmocka_unit_test(test_plan_and_calibration),
      cmocka_unit_test(test_bad_config),
  };
  return tt_run_banded("test_dpsgd_filter", tests, sizeof tests / sizeof tests[0], &dir,
                       N_TRAIN, N_TEST);
}
