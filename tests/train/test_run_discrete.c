/* test_run_discrete.c -- secure full-batch runs in integers (model/SENSITIVITY.md 8,
 * docs/MATH.md "Discrete Gaussian"): the summary names the theorem and carries no
 * floating-point caveat (a secure DP-SGD run still does), the accountant holds discrete
 * Gaussians, the ledger is charged each row's exact integer norm, the stopping queries'
 * noise is an integer, and calibration uses the proven bound (sigma at least the
 * continuous Gaussian's, B_norm at most). On test_run.c's synthetic dataset. */
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

  /* Secure DP-SGD keeps the floating-point noise, and says so. */
  tt_sampled_config(&c, dir, "discP", DPGD_SAMPLING_POISSON, 2);
  c.train_sample_rate = 0.2;
  c.train_rng = DPGD_RNG_SECURE;
  r = tt_open_run(&c);
  assert_false(dpgd_run_plan(r)->discrete);
  tt_finish_run(r);
  dpgd_run_free(r);
  sum = (char *)SLURP("discP", "summary.json", &len);
  assert_non_null(strstr(sum, "\"noise_caveat\": \"secure rng: "));
  assert_null(strstr(sum, "\"theorem\""));
  free(sum);
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
      cmocka_unit_test(test_summary),
      cmocka_unit_test(test_charges_and_queries),
      cmocka_unit_test(test_calibration),
  };
  return tt_run_banded("test_run_discrete", tests, sizeof tests / sizeof tests[0], &dir,
                       N_TRAIN, N_TEST);
}
