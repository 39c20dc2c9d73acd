/* test_run_discrete.c -- secure runs in integers (model/SENSITIVITY.md 8, docs/MATH.md
 * "Discrete Gaussian"), full batch and DP-SGD (Poisson, MATH.md 18.1): the summary names
 * the theorem and carries no floating-point caveat, the accountant holds (subsampled)
 * discrete Gaussians, the ledger is charged each row's exact integer norm, the stopping
 * queries' noise is an integer, and calibration uses the proven bound (sigma at least the
 * continuous Gaussian's and the smallest meeting the target, B_norm at most); secure
 * subset sampling and secure filtered DP-SGD are refused. On test_run.c's synthetic
 * dataset. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
#define SLURP(run, name, len) tt_slurp_in(dir, run, name, len)
enum { N_TRAIN = 240, N_TEST = 120 };

/* A number after "key": in the JSON text. */
static double json_num(const char *text, const char *key)
{
  const char *p = strstr(text, key);
  assert_non_null(p);
  return strtod(p + strlen(key), NULL);
}

static void test_summary(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "disc");
  c.train_steps = 3;
  c.train_rng = DPGD_RNG_SECURE;
  dpgd_run *r = tt_open_run(&c);
  const dpgd_plan *p = dpgd_run_plan(r);
  assert_true(p->discrete);
  int F = -1;
  assert_int_equal(dpgd_model_grid_bits(N_TRAIN, c.privacy_clip, 3.7 * 2.375, &F), DPGD_OK);
  assert_int_equal(p->grid_bits, F);
  assert_true(p->report_method >= DPGD_ACCT_RDP_CLASSIC);
  tt_finish_run(r);
  size_t len;
  char *sum = (char *)SLURP("disc", "summary.json", &len);
  assert_non_null(strstr(sum, "\"theorem\": \"" DPGD_DISCRETE_THEOREM "\""));
  assert_non_null(strstr(sum, "MATH.md section 18"));
  assert_non_null(strstr(sum, "\"mechanism\": \"discrete_gaussian\""));
  assert_null(strstr(sum, "caveat"));
  assert_null(strstr(sum, "mitigat"));
  double eps = json_num(sum, "\"rdp_optimal\": "), cont = json_num(sum, "\"eps_continuous\": ");
  assert_true(cont > 0 && cont < eps); /* the proof costs something, never nothing */
  assert_true(fabs(cont - dpgd_run_eps_continuous(r)) <= 1e-9 * cont);
  free(sum);
  dpgd_run_free(r);

  /* Secure DP-SGD: exact integer sums of the sample, subsampled discrete Gaussians. */
  tt_sampled_config(&c, dir, "discP", DPGD_SAMPLING_POISSON, 2);
  c.train_sample_rate = 0.2;
  c.train_rng = DPGD_RNG_SECURE;
  c.stopping_queries = 1, c.stopping_every = 1, c.stopping_tau_frac = 0.05;
  r = tt_open_run(&c);
  p = dpgd_run_plan(r);
  assert_true(p->discrete);
  assert_true(p->report_method >= DPGD_ACCT_RDP_CLASSIC);
  assert_true(isnan(p->eps[DPGD_ACCT_EXACT]));
  tt_finish_run(r);
  /* the run's eps is the accountant's for 2 subsampled discrete Gaussians and 1 query */
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_discrete_gaussian(a, 0.2, c.privacy_sigma, 2),
                   DPGD_OK);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, 1 / (0.05 * N_TRAIN), 1), DPGD_OK);
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(a, p->report_method, c.privacy_delta, &v), DPGD_OK);
  assert_true(dpgd_run_eps_now(r) == v.value);
  dpgd_acct_free(a);
  sum = (char *)SLURP("discP", "summary.json", &len);
  assert_non_null(strstr(sum, "\"theorem\": \"" DPGD_SUBSAMPLED_DISCRETE_THEOREM "\""));
  assert_non_null(strstr(sum, "MATH.md section 18.1"));
  assert_non_null(strstr(sum, "\"mechanism\": \"discrete_gaussian\""));
  assert_null(strstr(sum, "caveat"));
  assert_null(strstr(sum, "mitigat"));
  eps = json_num(sum, "\"rdp_optimal\": "), cont = json_num(sum, "\"eps_continuous\": ");
  assert_true(cont > 0 && cont < eps);
  free(sum);
  dpgd_run_free(r);
}

/* Secure mode where no proof covers the discrete Gaussian: refused, one line each. */
static void test_refusals(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_plan p;
  tt_sampled_config(&c, dir, "refS", DPGD_SAMPLING_SUBSET, 2);
  c.train_batch_size = 20;
  c.train_rng = DPGD_RNG_SECURE;
  assert_int_equal(dpgd_plan_make(&p, &c, N_TRAIN), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "subset"));
  assert_null(strchr(dpgd_error_last(), '\n'));
  c.train_rng = DPGD_RNG_RESEARCH;
  assert_int_equal(dpgd_plan_make(&p, &c, N_TRAIN), DPGD_OK);
  tt_filter_config(&c, dir, "refF", 3, 1, 1);
  c.train_rng = DPGD_RNG_SECURE;
  assert_int_equal(dpgd_plan_make(&p, &c, N_TRAIN), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "filtered DP-SGD"));
  assert_null(strchr(dpgd_error_last(), '\n'));
  dpgd_error_clear();
}

/* Filtered: after step 1 every point's spend is its row's exact squared norm on the grid
 * (the integer sum's sqnorm_post, recomputed here from the initial parameters), an
 * integer multiple of 2^-2F, below C^2 even for a clipped row (the old rule charged
 * C^2); each query's noisy accuracy times n is an integer (discrete noise on a count). */
static void test_charges_and_queries(void **state)
{
  (void)state;
  dpgd_config c;
  tt_stopping_config(&c, dir, "discF", 0, 0);
  c.train_rng = DPGD_RNG_SECURE;
  c.stopping_tau_frac = 0.05;
  dpgd_run *r = tt_open_run(&c);
  const dpgd_plan *p = dpgd_run_plan(r);
  const dpgd_dataset *ds = dpgd_run_train_set(r);
  size_t P;
  const float *th = dpgd_run_params(r, &P);
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, c.model_activation, ds->rows, ds->cols,
                                   ds->n_classes);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 1);
  assert_true(m && ws);
  memcpy(dpgd_model_params(m), th, P * sizeof(float));
  assert_int_equal(dpgd_grad_ws_set_grid(ws, p->grid_bits), DPGD_OK);
  double caps[N_TRAIN], post[N_TRAIN];
  int64_t *isum = malloc(P * sizeof *isum);
  assert_non_null(isum);
  for (size_t i = 0; i < N_TRAIN; i++) caps[i] = c.privacy_clip;
  assert_int_equal(dpgd_model_clipped_grad_sum_int(m, ws, ds, caps, isum, post), DPGD_OK);
  assert_int_equal(dpgd_run_step(r), DPGD_OK);
  const dpgd_ledger *l = dpgd_run_ledger(r);
  size_t clipped = 0;
  double c2 = c.privacy_clip * c.privacy_clip;
  for (size_t i = 0; i < N_TRAIN; i++) {
    assert_true(l->spend[i] == post[i]);
    double u = ldexp(l->spend[i], 2 * p->grid_bits);
    assert_true(u == floor(u));
    assert_true(l->spend[i] < c2);
    clipped += l->spend[i] > 0.99 * c2;
  }
  assert_true(clipped > 0);
  tt_finish_run(r);
  dpgd_run_free(r);
  size_t len, queries = 0;
  char *rows = (char *)SLURP("discF", "metrics.csv", &len);
  for (char *line = strchr(rows, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    const char *f = line + 1;
    for (int k = 0; k < 8; k++) f = strchr(f, ',') + 1; /* field 9: query_acc_noisy */
    if (*f == ',') continue;
    double q = strtod(f, NULL) * N_TRAIN;
    assert_true(fabs(q - nearbyint(q)) < 1e-6);
    queries++;
  }
  assert_int_equal(queries, 3);
  free(rows);
  free(isum);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

/* calibrate = sigma (method exact, which has no discrete curve): the secure plan's sigma
 * is at least the research plan's, and its reported eps meets the target; calibrate =
 * budget: B_norm at most the research one's. Queries included. */
/* Secure DP-SGD: calibrate = sigma to eps 1 (method exact: rdp_optimal on the proven
 * bound), then the round trip: that sigma, given, states eps <= 1, and 1e-5 below it
 * states more (the smallest sigma); above the research plan's sigma. */
static void test_calibration_poisson(void **state)
{
  (void)state;
  dpgd_config c;
  dpgd_plan pr, ps, pt;
  tt_sampled_config(&c, dir, "calibP", DPGD_SAMPLING_POISSON, 50);
  c.train_sample_rate = 0.05;
  c.privacy_epsilon = 1.0;
  c.privacy_method = DPGD_ACCT_EXACT;
  c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c.privacy_sigma = 0;
  if (dpgd_plan_make(&pr, &c, N_TRAIN)) fail_msg("research plan: %s", dpgd_error_last());
  c.train_rng = DPGD_RNG_SECURE;
  if (dpgd_plan_make(&ps, &c, N_TRAIN)) fail_msg("secure plan: %s", dpgd_error_last());
  assert_true(ps.discrete && ps.report_method == DPGD_ACCT_RDP_OPTIMAL);
  assert_true(ps.eps[ps.report_method] <= 1.0);
  assert_true(ps.sigma > pr.sigma);
  assert_true(ps.eps_continuous < 1.0);
  c.privacy_calibrate = DPGD_CALIBRATE_NONE;
  c.privacy_sigma = ps.sigma;
  if (dpgd_plan_make(&pt, &c, N_TRAIN)) fail_msg("given sigma: %s", dpgd_error_last());
  assert_true(pt.eps[DPGD_ACCT_RDP_OPTIMAL] <= 1.0);
  c.privacy_sigma = ps.sigma * (1 - 1e-5);
  if (dpgd_plan_make(&pt, &c, N_TRAIN)) fail_msg("sigma below: %s", dpgd_error_last());
  assert_true(pt.eps[DPGD_ACCT_RDP_OPTIMAL] > 1.0);
}

static void test_calibration(void **state)
{
  (void)state;
  for (int budget = 0; budget < 2; budget++) {
    dpgd_config c;
    dpgd_plan pr, ps;
    tt_stopping_config(&c, dir, "calib", 0, 0);
    c.stopping_tau_frac = 0.05;
    c.privacy_epsilon = 1.0;
    c.privacy_method = DPGD_ACCT_EXACT;
    if (budget) {
      c.privacy_calibrate = DPGD_CALIBRATE_BUDGET;
      c.filter_k = 0;
      c.privacy_sigma = 30; /* several full-norm steps at eps 1 */
    } else {
      c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
      c.privacy_sigma = 0;
    }
    c.train_rng = DPGD_RNG_RESEARCH;
    if (dpgd_plan_make(&pr, &c, N_TRAIN)) fail_msg("research plan: %s", dpgd_error_last());
    c.train_rng = DPGD_RNG_SECURE;
    if (dpgd_plan_make(&ps, &c, N_TRAIN)) fail_msg("secure plan: %s", dpgd_error_last());
    assert_true(ps.discrete && !pr.discrete);
    assert_true(ps.eps[ps.report_method] <= 1.0);
    assert_true(isnan(ps.eps[DPGD_ACCT_EXACT]));
    assert_true(pr.eps[DPGD_ACCT_EXACT] <= 1.0);
    if (budget) {
      assert_true(ps.budget < pr.budget);
    } else {
      assert_true(ps.sigma > pr.sigma);
      assert_true(ps.eps_continuous < 1.0); /* the same sigma, continuous: below target */
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary),     cmocka_unit_test(test_charges_and_queries),
      cmocka_unit_test(test_calibration), cmocka_unit_test(test_calibration_poisson),
      cmocka_unit_test(test_refusals),
  };
  return tt_run_banded("test_run_discrete", tests, sizeof tests / sizeof tests[0], &dir,
                       N_TRAIN, N_TEST);
}
