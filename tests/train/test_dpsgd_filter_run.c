/* test_dpsgd_filter_run.c -- filtered DP-SGD runs (train/DPSGD_FILTER.md): every point
 * is charged every step, sampled or not; filtered equals unfiltered bit for bit while
 * the budget is never reached; a cut run resumes bit for bit and a legacy checkpoint is
 * refused; secure mode refused; constant time; the held bound (filter.hold) at the ledger and in runs. */
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

/* Budget never reached (k >= steps): model.bin and metrics.csv of the unfiltered run, bit
 * for bit, with a full pass every step and every 5 steps. */
static void test_unreached_budget_is_unfiltered(void **state)
{
  (void)state;
  dpgd_config c;
  tt_filter_config(&c, dir, "plain", STEPS, 0, 0);
  tt_run_through(&c);
  const char *runs[] = {"f-r1", "f-r5"};
  for (int v = 0; v < 2; v++) {
    tt_filter_config(&c, dir, runs[v], STEPS, STEPS, v ? 5 : 0);
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
  tt_filter_config(&c1, dir, "m-r1", STEPS, STEPS, 1);
  tt_filter_config(&c2, dir, "m-r1000", STEPS, STEPS, 1000);
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
  tt_filter_config(&c, dir, "budget", STEPS, 3, 1000);
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
  tt_filter_config(&c, dir, "whole", STEPS, 4, 2);
  tt_run_through(&c);
  tt_filter_config(&c, dir, "cut", STEPS, 4, 2);
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
  tt_filter_config(&c, dir, "legacy", STEPS, 4, 2);
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

/* Constant time (every point computed): the filtered run finishes, its budget of one
 * full-rate step reached, no order over it. Secure mode is refused for filtered DP-SGD (no
 * bound is proven for the filter over subsampled discrete Gaussians, docs/MATH.md 18.1). */
static void test_secure_constant_time(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_plan p;
  tt_filter_config(&c, dir, "secure", STEPS, 1, 2);
  c.train_steps = 3, c.train_rng = DPGD_RNG_SECURE, c.train_constant_time = 1;
  assert_int_equal(dpgd_plan_make(&p, &c, N_TRAIN), DPGD_EINVAL);
  dpgd_error_clear();
  c.train_rng = DPGD_RNG_RESEARCH;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  assert_int_equal(dpgd_ledger_check(dpgd_run_ledger(r)), DPGD_OK);
  assert_int_equal(dpgd_run_releases(r), 3);
  dpgd_run_free(r);
}

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
    for (int i = 0; i < N; i++)
      post[i] = i == 0 ? 0 : C * C * tu_urand(&seed) * tu_urand(&seed);
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
  tt_filter_config(&c, dir, "hold", STEPS, 3, 3);
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
  tt_filter_config(&c, dir, "h-whole", STEPS, 4, 4); /* refresh at 1, 5; resumed at 6 */
  c.filter_hold = 1.2, c.privacy_clip = 40; /* the hold binds (test_hold_run_charges) */
  tt_run_through(&c);
  tt_filter_config(&c, dir, "h-cut", STEPS, 4, 4);
  c.filter_hold = 1.2, c.privacy_clip = 40;
  tt_run_cut(&c, 7);
  tt_resume_through(dir, "h-cut", 6);
  tt_assert_same_results(dir, "h-whole", "h-cut");
  tt_filter_config(&c, dir, "h-none", STEPS, 4, 5);
  tt_run_through(&c);
  tt_filter_config(&c, dir, "h-huge", STEPS, 4, 5);
  c.filter_hold = 1e9;
  tt_run_through(&c);
  tt_assert_same_file(dir, "h-none", "h-huge", "model.bin");
  tt_assert_same_file(dir, "h-none", "h-huge", "metrics.csv");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unreached_budget_is_unfiltered),
      cmocka_unit_test(test_refresh_keeps_small_gradients_margin),
      cmocka_unit_test(test_run_charges_everyone),
      cmocka_unit_test(test_resume_bit_identical),
      cmocka_unit_test(test_resume_refuses_legacy_spend),
      cmocka_unit_test(test_secure_constant_time),
      cmocka_unit_test(test_hold_ledger),
      cmocka_unit_test(test_hold_run_charges),
      cmocka_unit_test(test_hold_resume_and_inert),
  };
  return tt_run_banded("test_dpsgd_filter_run", tests, sizeof tests / sizeof tests[0], &dir,
                       N_TRAIN, N_TEST);
}
