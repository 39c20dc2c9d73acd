/* test_dpsgd_filter.c -- individual filtering under Poisson subsampling
 * (train/DPSGD_FILTER.md): the per-point RDP table against the accountant's own
 * subsampled-Gaussian RDP at sensitivity 1 and a long double evaluation of docs/MATH.md
 * "RDP curves", rounding up at random sensitivities, monotone on the grid; budgets of k
 * full-rate steps fit k steps and no more; caps and charges never put any order over
 * its budget; a point with a small refreshed norm spends less than one at the cap; every
 * point is charged every step, sampled or not; filtered equals unfiltered bit for bit
 * while the budget is never reached; a cut run resumes bit for bit; the plan's filter
 * eps and its calibration; bad configurations are refused. */
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

static double urand(uint64_t *s) { return tu_urand(s); }

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
          double s = urand(&seed);
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
      if (idx[i] && i % 2) idx[i] = (uint32_t)(idx[i] * urand(&seed));
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

static void filter_config(dpgd_config *c, const char *run, double k, double refresh)
{
  tt_sampled_config(c, dir, run, DPGD_SAMPLING_POISSON, STEPS);
  c->train_sample_rate = 0.1;
  c->privacy_sigma = 1.3;
  c->output_checkpoint_every = 3;
  c->filter_enabled = k > 0;
  c->filter_k = k;
  c->filter_refresh = refresh;
}

/* Budget never reached (k >= steps): model.bin and metrics.csv of the unfiltered run, bit
 * for bit, with a full pass every step and every 5 steps. */
static void test_unreached_budget_is_unfiltered(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "plain", 0, 0);
  tt_run_through(&c);
  const char *runs[] = {"f-r1", "f-r5"};
  for (int v = 0; v < 2; v++) {
    filter_config(&c, runs[v], STEPS, v ? 5 : 0);
    tt_run_through(&c);
    tt_assert_same_file(dir, "plain", runs[v], "model.bin");
    tt_assert_same_file(dir, "plain", runs[v], "metrics.csv");
  }
}

/* Budget never reached, so both runs follow the same trajectory: with a full pass every
 * step (r = 1) no point, at any order, spends more than with the cap charged at every
 * step after the first (r = 1000), and the points whose gradients are small spend
 * strictly less: their margin is larger. */
static void test_refresh_keeps_small_gradients_margin(void **state)
{
  (void)state;
  dpgd_config c1, c2;
  filter_config(&c1, "m-r1", STEPS, 1);
  filter_config(&c2, "m-r1000", STEPS, 1000);
  dpgd_run *r1 = tt_open_run(&c1), *r2 = tt_open_run(&c2);
  for (int t = 0; t < STEPS; t++) {
    assert_int_equal(dpgd_run_step(r1), DPGD_OK);
    assert_int_equal(dpgd_run_step(r2), DPGD_OK);
  }
  const dpgd_ledger *l1 = dpgd_run_ledger(r1), *l2 = dpgd_run_ledger(r2);
  size_t less = 0;
  for (size_t i = 0; i < l1->n; i++) {
    for (size_t j = 0; j < J; j++)
      assert_true(dpgd_filter_spent(l1->filter, i, j) <= dpgd_filter_spent(l2->filter, i, j));
    less += dpgd_filter_spent(l1->filter, i, 0) < dpgd_filter_spent(l2->filter, i, 0);
  }
  size_t n_params;
  const float *p1 = dpgd_run_params(r1, &n_params), *p2 = dpgd_run_params(r2, &n_params);
  assert_memory_equal(p1, p2, n_params * sizeof *p1);
  print_message("  points with a larger margin at r = 1: %zu of %zu\n", less, l1->n);
  assert_true(less > 0);
  dpgd_run_free(r1);
  dpgd_run_free(r2);
}

/* Step by step with a budget of 3 full-rate steps and no refresh after step 1: every
 * point, sampled or not, pays the full-rate step at steps 2 and 3 (the sample is secret),
 * no order ever goes over its budget, and after them some points halt; the report states
 * no odometer. */
static void test_run_charges_everyone(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "budget", 3, 1000);
  dpgd_run *r = tt_open_run(&c);
  const dpgd_ledger *l = dpgd_run_ledger(r);
  for (int t = 1; t <= STEPS; t++) {
    assert_int_equal(dpgd_run_step(r), DPGD_OK);
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
    if (t != 3) continue;
    for (size_t i = 0; i < l->n; i++)
      for (size_t j = 0; j < J; j++) /* >= the two full-rate charges of steps 2 and 3 */
        assert_true(dpgd_filter_spent(l->filter, i, j) >= 2 * l->sg->eps[j * (K + 1) + K]);
  }
  size_t halted = l->n - dpgd_ledger_active(l);
  print_message("  halted after %d steps: %zu of %zu\n", STEPS, halted, l->n);
  assert_true(halted > 0);
  assert_int_equal(dpgd_run_finish(r), DPGD_OK);
  dpgd_run_free(r);
  size_t len;
  char *pts = (char *)tt_slurp_in(dir, "budget", "points.csv", &len);
  assert_non_null(strstr(pts, ",0,,,,\n")); /* a halted point, no odometer columns */
  free(pts);
  char *s = (char *)tt_slurp_in(dir, "budget", "summary.json", &len);
  assert_non_null(strstr(s, "\"method\": \"rdp_optimal\", \"exact\": null"));
  free(s);
}

/* A cut run with the budget reached and a refresh every 2 steps resumes to the bytes of
 * the uninterrupted one (the filter is in the checkpoint). */
static void test_resume_bit_identical(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "whole", 4, 2);
  tt_run_through(&c);
  filter_config(&c, "cut", 4, 2);
  tt_run_cut(&c, 7);
  tt_resume_through(dir, "cut", 6);
  tt_assert_same_results(dir, "whole", "cut");
}

/* A checkpoint of an older dpgd keeps the full-batch ledger's s(i) as section "spend".
 * Crafted for a cut filtered DP-SGD run (its "filter" section replaced by the first
 * order's spends, every other section kept, CRC valid): loading it would reset the other
 * 15 orders, so the resume is refused with one line and the run is not opened. */
static void test_resume_refuses_legacy_spend(void **state)
{
  (void)state;
  static const char *const names[] = {"meta",     "params", "best", "filter", "rngstep",
                                      "rngquery", "acct",   "data", "replay", "rngsamp"};
  enum { N = sizeof names / sizeof names[0] };
  dpgd_config c;
  filter_config(&c, "legacy", 4, 2);
  tt_run_cut(&c, 7);
  char p[700];
  snprintf(p, sizeof p, "%s/legacy/checkpoint.bin", dir);
  uint64_t hash = dpgd_config_hash(&c);
  dpgd_ckpt *ck = NULL;
  assert_int_equal(dpgd_ckpt_read(&ck, p, hash), DPGD_OK);
  dpgd_ckpt_section sec[N];
  size_t k = 0;
  dpgd_filter *f = NULL;
  for (size_t j = 0; j < N; j++) {
    const void *d;
    size_t len;
    assert_int_equal(dpgd_ckpt_get(ck, names[j], 0, &d, &len), DPGD_OK);
    memset(sec[k].name, 0, sizeof sec[k].name);
    memcpy(sec[k].name, names[j], strlen(names[j]));
    sec[k].data = d, sec[k].len = len;
    if (!strcmp(names[j], "filter")) {
      assert_int_equal(dpgd_filter_deserialize(&f, d, len), DPGD_OK);
      assert_int_equal(dpgd_filter_n_orders(f), J);
      assert_true(dpgd_filter_spent(f, 0, 0) > 0); /* a spend that a reset would lose */
      memcpy(sec[k].name, "spend\0\0", 8);
      sec[k].data = dpgd_filter_spent_data(f, 0);
      sec[k].len = dpgd_filter_n(f) * sizeof(double);
    }
    k++;
  }
  assert_int_equal(dpgd_ckpt_write(p, hash, sec, k), DPGD_OK);
  dpgd_ckpt_free(ck);
  dpgd_filter_free(f);
  assert_int_equal(dpgd_ckpt_read(&ck, p, hash), DPGD_OK); /* CRC-valid */
  dpgd_ckpt_free(ck);
  snprintf(p, sizeof p, "%s/legacy", dir);
  dpgd_run *r = NULL;
  assert_int_equal(dpgd_run_resume(&r, p), DPGD_EFORMAT);
  assert_null(r);
  assert_non_null(strstr(dpgd_error_last(), "'spend' section"));
  assert_null(strchr(dpgd_error_last(), '\n'));
  dpgd_error_clear();
}

/* Secure mode (sample and noise from the OS, a checkpoint every step) and constant time
 * (every point computed): the filtered run finishes, its budget of one full-rate step
 * reached, no order over it. */
static void test_secure_constant_time(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "secure", 1, 2);
  c.train_steps = 3, c.train_rng = DPGD_RNG_SECURE, c.train_constant_time = 1;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  assert_int_equal(dpgd_ledger_check(dpgd_run_ledger(r)), DPGD_OK);
  assert_int_equal(dpgd_run_releases(r), 3);
  dpgd_run_free(r);
}

/* The plan's filter eps is the smallest over the orders of the optimal conversion of
 * k times the accountant's per-step RDP (within the table's padding); calibration gives
 * the smallest sigma whose filter eps meets the target. */
static void test_plan_and_calibration(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "plan", 40, 0);
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
/* A spend after the charge of grid index e (table row T): index 0 charges nothing. */
static double charged(double spent, const double *T, uint32_t e)
{
  return e ? dpgd_filter_add_up(spent, T[e]) : spent;
}

/* The held bound at the ledger (DPSGD_FILTER.md section 3, filter.hold = h): a refresh
 * holds min(K, ceil(h x)); at an ordinary step the cap and charge drop to it, and the
 * held cap leaves room for h times the refreshed norm (or is the cap); random norms and
 * factors. A load of a wrong length or of an index above K is refused, nothing changed. */
static void test_hold_ledger(void **state)
{
  (void)state;
  enum { N = 64 };
  double C = 2.375, caps[N], post[N];
  const double hs[] = {1, 1.5, 3};
  uint64_t seed = 5;
  for (int v = 0; v < 3; v++) {
    dpgd_ledger *l = dpgd_ledger_alloc_sg(N, C, 0.05, 1.3, 40);
    assert_non_null(l);
    assert_int_equal(dpgd_ledger_set_slack(l, v * 1e-6), DPGD_OK);
    assert_int_equal(dpgd_ledger_set_hold(l, hs[v]), DPGD_OK);
    for (int i = 0; i < N; i++) post[i] = i == 0 ? 0 : C * C * urand(&seed) * urand(&seed);
    dpgd_ledger_caps(l, caps);
    assert_int_equal(dpgd_ledger_refresh(l, caps, post), DPGD_OK);
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    dpgd_ledger_caps(l, caps); /* an ordinary step */
    uint32_t cap_idx[N];
    memcpy(cap_idx, l->cap_idx, sizeof cap_idx);
    double before[N][J];
    for (int i = 0; i < N; i++)
      for (int j = 0; j < J; j++) before[i][j] = dpgd_filter_spent(l->filter, i, j);
    dpgd_ledger_hold_caps(l, caps);
    size_t held = 0;
    for (int i = 0; i < N; i++) {
      uint32_t e = l->charge_idx[i], h = l->hold_idx[i];
      assert_int_equal(e, cap_idx[i] < h ? cap_idx[i] : h);
      held += h < cap_idx[i];
      double a = e == K ? C : C * ((double)e / K);
      assert_true(caps[i] + l->slack <= a);
      if (e < cap_idx[i]) assert_true(caps[i] >= hs[v] * sqrt(post[i]));
    }
    assert_true(held > N / 4);
    assert_int_equal(dpgd_ledger_spend(l, caps, post), DPGD_OK);
    for (int i = 0; i < N; i++)
      for (int j = 0; j < J; j++)
        assert_true(dpgd_filter_spent(l->filter, i, j) ==
                    charged(before[i][j], l->sg->eps + j * (K + 1), l->charge_idx[i]));
    uint32_t saved[N], bad[N];
    memcpy(saved, l->hold_idx, sizeof saved);
    memcpy(bad, saved, sizeof bad);
    bad[N - 1] = K + 1;
    assert_int_equal(dpgd_ledger_hold_load(l, bad, sizeof bad), DPGD_EFORMAT);
    assert_int_equal(dpgd_ledger_hold_load(l, saved, sizeof saved - 4), DPGD_EFORMAT);
    assert_memory_equal(l->hold_idx, saved, sizeof saved);
    dpgd_error_clear();
    dpgd_ledger_free(l);
  }
  dpgd_ledger *l = dpgd_ledger_alloc(4, 1, 1.0, 10.0); /* not a DP-SGD filter */
  assert_int_equal(dpgd_ledger_set_hold(l, 2), DPGD_EINVAL);
  dpgd_ledger_free(l);
  l = dpgd_ledger_alloc_sg(4, 1.0, 0.05, 1.3, 4);
  assert_int_equal(dpgd_ledger_set_hold(l, 0.5), DPGD_EINVAL);
  assert_int_equal(dpgd_ledger_set_hold(l, INFINITY), DPGD_EINVAL);
  dpgd_error_clear();
  dpgd_ledger_free(l);
}

/* A run with the hold, step by step (a full pass every 3 steps, a budget of 3 full-rate
 * steps, so points halt): at every ordinary step each point's charge is its cap or its
 * held index, whichever is lower, and its spend grew by exactly that grid point's charge
 * (rounded up as the filter sums); the hold binds somewhere; no order goes over budget. */
static void test_hold_run_charges(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "hold", 3, 3);
  c.filter_hold = 1.5;
  c.train_steps = 12;
  c.privacy_clip = 40; /* above many points' gradient norms, so that the hold binds */
  dpgd_run *r = tt_open_run(&c);
  const dpgd_ledger *l = dpgd_run_ledger(r);
  size_t n = l->n, bound = 0;
  double *before = malloc(n * J * sizeof *before);
  assert_non_null(before);
  for (int t = 1; t <= 12; t++) {
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < J; j++) before[i * J + j] = dpgd_filter_spent(l->filter, i, j);
    assert_int_equal(dpgd_run_step(r), DPGD_OK);
    assert_int_equal(dpgd_ledger_check(l), DPGD_OK);
    if ((t - 1) % 3 == 0) continue; /* a refresh step */
    for (size_t i = 0; i < n; i++) {
      uint32_t k = l->cap_idx[i], h = l->hold_idx[i], e = l->charge_idx[i];
      assert_int_equal(e, k < h ? k : h);
      bound += h < k;
      for (size_t j = 0; j < J; j++)
        assert_true(dpgd_filter_spent(l->filter, i, j) ==
                    charged(before[i * J + j], l->sg->eps + j * (K + 1), e));
    }
  }
  print_message("  held below the cap: %zu point-steps\n", bound);
  assert_true(bound > 0);
  free(before);
  assert_int_equal(dpgd_run_finish(r), DPGD_OK);
  dpgd_run_free(r);
  size_t len;
  char *s = (char *)tt_slurp_in(dir, "hold", "summary.json", &len);
  assert_non_null(strstr(s, "\"refresh\": 3, \"hold\": 1.5,"));
  free(s);
}

/* With the hold: a cut run resumes to the bytes of the uninterrupted one (the held
 * bounds are in the checkpoint), and a factor too large to bind changes nothing. */
static void test_hold_resume_and_inert(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "h-whole", 4, 4);       /* refresh at 1, 5; resumed at 6 */
  c.filter_hold = 1.2, c.privacy_clip = 40; /* the hold binds (test_hold_run_charges) */
  tt_run_through(&c);
  filter_config(&c, "h-cut", 4, 4);
  c.filter_hold = 1.2, c.privacy_clip = 40;
  tt_run_cut(&c, 7);
  tt_resume_through(dir, "h-cut", 6);
  tt_assert_same_results(dir, "h-whole", "h-cut");
  filter_config(&c, "h-none", 4, 5);
  tt_run_through(&c);
  filter_config(&c, "h-huge", 4, 5);
  c.filter_hold = 1e9;
  tt_run_through(&c);
  tt_assert_same_file(dir, "h-none", "h-huge", "model.bin");
  tt_assert_same_file(dir, "h-none", "h-huge", "metrics.csv");
}

static void test_bad_config(void **state)
{
  (void)state;
  dpgd_config c;
  filter_config(&c, "bad", 4, 0);
  assert_int_equal(dpgd_config_set(&c, "filter.refresh=0"), DPGD_EINVAL);
  assert_int_equal(dpgd_config_set(&c, "filter.refresh=-3"), DPGD_EINVAL);
  const char *bad[][2] = {
      {"filter.refresh=2.5", "filter.refresh must be a whole number"},
      {"filter.budget=10", "filter.budget"},
      {"stopping.queries=3", "stopping.queries is not supported"},
      {"privacy.calibrate=budget", "privacy.calibrate = budget is not supported"},
  };
  for (int b = 0; b < 4; b++) {
    filter_config(&c, "bad", 4, 0);
    if (b == 3) c.privacy_epsilon = 1;
    assert_int_equal(dpgd_config_set(&c, bad[b][0]), DPGD_OK);
    assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
    if (!strstr(dpgd_error_last(), bad[b][1]))
      fail_msg("%s: message '%s'", bad[b][0], dpgd_error_last());
  }
  filter_config(&c, "bad", 4, 2);
  c.filter_hold = 0.5;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.hold must be from 1"));
  filter_config(&c, "bad", 0, 0); /* the hold without the filter */
  c.filter_hold = 2;
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.hold applies to"));
  filter_config(&c, "bad", 0, 3); /* refresh without the filter */
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.refresh applies to"));
  filter_config(&c, "bad", 4, 0); /* dpgd audit does not model this filter */
  dpgd_audit *au = NULL;
  dpgd_audit_params ap = {
      .canaries = 10, .seed = 1, .confidence = 0.95, .planted_noise_scale = 1};
  char out[600];
  snprintf(out, sizeof out, "%s/audit", dir);
  assert_int_equal(dpgd_audit_open(&au, &c, out, &ap), DPGD_EINVAL);
  assert_null(au);
  assert_non_null(strstr(dpgd_error_last(), "dpgd audit does not support filter.enabled"));
  filter_config(&c, "bad", 4, 0);
  c.filter_k = 0, c.filter_budget = 0; /* no budget */
  assert_int_equal(dpgd_config_validate(&c), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filter.k"));
  dpgd_error_clear();
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_accountant_at_one),
      cmocka_unit_test(test_table_rounds_up_and_monotone),
      cmocka_unit_test(test_budget_fits_k_steps),
      cmocka_unit_test(test_saved_state_flag),
      cmocka_unit_test(test_never_over_budget),
      cmocka_unit_test(test_refresh_small_norm_spends_less),
      cmocka_unit_test(test_unreached_budget_is_unfiltered),
      cmocka_unit_test(test_refresh_keeps_small_gradients_margin),
      cmocka_unit_test(test_run_charges_everyone),
      cmocka_unit_test(test_resume_bit_identical),
      cmocka_unit_test(test_resume_refuses_legacy_spend),
      cmocka_unit_test(test_secure_constant_time),
      cmocka_unit_test(test_plan_and_calibration),
      cmocka_unit_test(test_hold_ledger),
      cmocka_unit_test(test_hold_run_charges),
      cmocka_unit_test(test_hold_resume_and_inert),
      cmocka_unit_test(test_bad_config),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir); /* kept for inspection when a test failed */
  free(dir);
  return rc;
}
