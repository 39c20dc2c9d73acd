/* test_dpsgd.c -- DP-SGD with Poisson sampling (train.sampling = poisson): the plan's eps
 * is the accountant's composition of Poisson-subsampled Gaussians (checked against a
 * direct dpgd_acct call), calibration returns the smallest sigma, epochs give ceil(E/q)
 * steps; a run with q = 1 is full-batch GD bit for bit (the sampler has its own stream),
 * a run accounts one subsampled release per step, charges only sampled points and
 * states no per-point guarantee; a cut research run resumes bit for bit (the sampler's
 * stream is in the checkpoint); a run whose leaf span exceeds its chunk size writes the
 * same files with 1 and 2 threads; a secure run samples from the OS generator. */
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
#define ASSERT_SAME_FILE(a, b, name) tt_assert_same_file(dir, a, b, name)
enum { N_TRAIN = 240, N_TEST = 120 };

/* Poisson at rate q with sigma given, `steps` steps, on the synthetic split. */
static void poisson_config(dpgd_config *c, const char *run, double q, size_t steps)
{
  tt_sampled_config(c, dir, run, DPGD_SAMPLING_POISSON, steps);
  c->train_sample_rate = q;
}

/* eps under method m of `steps` subsampled Gaussians and `queries` Gaussians of mu
 * 1/tau, straight from the accountant; NAN where the method has no answer. */
static double direct_eps(dpgd_acct_method m, double q, double sigma, uint64_t steps,
                         size_t queries, double tau, double delta)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, q, sigma, steps), DPGD_OK);
  return tt_acct_eps(a, queries, tau, m, delta);
}

/* The plan's eps under every method is the accountant's, for the same (q, sigma, steps),
 * with and without stopping queries; epochs give ceil(E / q) steps; no GDP mu and no
 * per-point levels. */
static void test_plan_equals_accountant(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "plan", 0.0427, 50);
  c.privacy_sigma = 1.3;
  dpgd_plan p;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  assert_true(p.sampling == DPGD_SAMPLING_POISSON && p.sample_rate == 0.0427);
  assert_int_equal(p.steps, 50);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    tt_assert_same_eps(p.eps[m], direct_eps(m, 0.0427, 1.3, 50, 0, 1, c.privacy_delta));
  assert_true(isnan(p.mu_train) && isnan(dpgd_plan_mu_train(&p, 10)));
  assert_int_equal(p.odometer.levels, 0);

  c.stopping_queries = 3, c.stopping_every = 5, c.stopping_tau_frac = 0.001;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  assert_true(p.tau == 60);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    tt_assert_same_eps(p.eps[m], direct_eps(m, 0.0427, 1.3, 50, 3, 60, c.privacy_delta));

  c.stopping_queries = 0, c.train_steps = 0, c.train_epochs = 2.385;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  assert_int_equal(p.steps, (size_t)ceil(2.385 / 0.0427)); /* 55.85... -> 56 */
  assert_int_equal(p.steps, 56);
}

/* Calibration returns the smallest sigma: eps(sigma) <= target, and a sigma smaller by
 * twice the calibration's relative tolerance (1e-7) misses it. With queries, their
 * share is composed in. */
static void test_calibration_smallest(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "calib", 0.0427, 50);
  c.privacy_sigma = 0;
  c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c.privacy_epsilon = 1.0;
  for (int with_queries = 0; with_queries < 2; with_queries++) {
    c.stopping_queries = with_queries ? 2 : 0;
    c.stopping_every = 5, c.stopping_tau_frac = 0.001;
    dpgd_plan p;
    assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
    size_t nq = c.stopping_queries;
    double at = direct_eps(DPGD_ACCT_EXACT, 0.0427, p.sigma, 50, nq, 60, c.privacy_delta);
    double below =
        direct_eps(DPGD_ACCT_EXACT, 0.0427, p.sigma * (1 - 2e-7), 50, nq, 60, c.privacy_delta);
    print_message("  queries %zu: sigma %.10g, eps %.12g, below %.12g\n", nq, p.sigma, at,
                  below);
    assert_true(at <= 1.0 && below > 1.0);
    assert_true(p.eps[DPGD_ACCT_EXACT] == at);
  }
  /* Under another method, the same rule with that method's eps. */
  c.stopping_queries = 0;
  c.privacy_method = DPGD_ACCT_RDP_OPTIMAL;
  dpgd_plan p;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  assert_true(direct_eps(DPGD_ACCT_RDP_OPTIMAL, 0.0427, p.sigma, 50, 0, 1, 1e-5) <= 1.0);
  assert_true(direct_eps(DPGD_ACCT_RDP_OPTIMAL, 0.0427, p.sigma * (1 - 2e-7), 50, 0, 1, 1e-5) >
              1.0);
  /* A few releases at a small rate, where the characteristic function cannot answer:
   * the exact method answers through its PLD path (accounting/PLD.md), an upper bound
   * within 0.1 %, so the calibrated sigma meets the target (its minimality holds only
   * to that resolution). */
  c.privacy_method = DPGD_ACCT_EXACT;
  c.train_sample_rate = 256.0 / 60000, c.train_steps = 10;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  double at = direct_eps(DPGD_ACCT_EXACT, 256.0 / 60000, p.sigma, 10, 0, 1, 1e-5);
  assert_true(at <= 1.0 && p.eps[DPGD_ACCT_EXACT] <= 1.0);
  assert_true(direct_eps(DPGD_ACCT_EXACT, 256.0 / 60000, p.sigma * 0.99, 10, 0, 1, 1e-5) > 1.0);
}

/* The calibration memo (plan.c) never answers one composition with another's sigma:
 * plans that alternate between rates, targets, deltas and methods each get the smallest
 * sigma of their own composition, and a plan that differs only outside the accountant
 * (the learning rate) gets the same sigma, bit for bit. */
static void test_calibration_memo(void **state)
{
  (void)state;
  const double qs[] = {0.0427, 0.05, 0.0427, 0.0427, 0.0427, 0.05};
  const double targets[] = {1.0, 1.0, 0.8, 1.0, 1.0, 1.0};
  const double deltas[] = {1e-5, 1e-5, 1e-5, 1e-6, 1e-5, 1e-5};
  const dpgd_acct_method ms[] = {DPGD_ACCT_EXACT, DPGD_ACCT_EXACT, DPGD_ACCT_EXACT,
                                 DPGD_ACCT_EXACT, DPGD_ACCT_EXACT, DPGD_ACCT_RDP_OPTIMAL};
  double first = 0;
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 6; i++) {
      dpgd_config c;
      poisson_config(&c, "memo", qs[i], 40);
      c.privacy_sigma = 0, c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
      c.privacy_epsilon = targets[i], c.privacy_delta = deltas[i];
      c.privacy_method = ms[i];
      c.train_lr = 0.1 + round + i;
      dpgd_plan p;
      assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
      double at = direct_eps(ms[i], qs[i], p.sigma, 40, 0, 1, deltas[i]);
      double below = direct_eps(ms[i], qs[i], p.sigma * (1 - 2e-7), 40, 0, 1, deltas[i]);
      assert_true(at <= targets[i] && below > targets[i]);
      if (i == 0 && round == 0) first = p.sigma;
      if (i == 0 || i == 4) assert_true(p.sigma == first);
    }
}

/* Poisson at q = 1 samples everyone and divides by 1 * n: the model and metrics of
 * full-batch GD, bit for bit (the sample has its own stream, the noise is untouched). */
static void test_rate_one_is_full_batch(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "q1", 1.0, 6);
  c.output_eps_every = 1; /* as the full-batch run's default */
  tt_run_through(&c);
  c.train_sampling = DPGD_SAMPLING_FULL, c.train_sample_rate = 0;
  snprintf(c.output_dir, sizeof c.output_dir, "%s/full", dir);
  tt_run_through(&c);
  ASSERT_SAME_FILE("q1", "full", "model.bin");
  ASSERT_SAME_FILE("q1", "full", "metrics.csv");
}

/* The eps columns of metrics.csv at the steps output.eps_every names (by default, with
 * sampling, the test-accuracy steps) and at the last step, empty elsewhere; each the
 * accountant's eps for that many releases, rounded up. */
static void check_eps_cells(const char *run, size_t steps, size_t every)
{
  size_t len;
  char *csv = (char *)tt_slurp_in(dir, run, "metrics.csv", &len);
  char *line = strchr(csv, '\n');
  for (size_t t = 1; t <= steps; t++) {
    assert_non_null(line);
    char *cell = strchr(line + 1, ',') + 1;
    assert_int_equal(strtoull(line + 1, NULL, 10), t);
    if (t % every == 0 || t == steps) {
      double want = direct_eps(DPGD_ACCT_EXACT, 0.1, 3.7, t, 0, 1, 1e-5);
      double got = strtod(cell, NULL);
      assert_true(got >= want && got <= want * (1 + 1e-9));
    } else {
      assert_true(*cell == ','); /* empty */
    }
    line = strchr(line + 1, '\n');
  }
  free(csv);
}

static void test_eps_cadence(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "cad4", 0.1, 10);
  tt_run_through(&c);
  check_eps_cells("cad4", 10, 4);
  poisson_config(&c, "cad3", 0.1, 10);
  c.output_eps_every = 3;
  dpgd_run *r = tt_open_run(&c);
  for (int k = 0; k < 5; k++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  /* between the rows that carry it, the library still answers for the step reached */
  assert_true(dpgd_run_eps_now(r) == direct_eps(DPGD_ACCT_EXACT, 0.1, 3.7, 5, 0, 1, 1e-5));
  tt_finish_run(r);
  dpgd_run_free(r);
  check_eps_cells("cad3", 10, 3);
}

/* data.validation = 40: the last 40 training examples evaluate and are not trained on,
 * so the model is the one trained on the first 200 (data.n_train = 200); summary.json
 * names the evaluation set; holding out everything, or n_test beside it, is refused. */
static void test_validation_split(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "val", 0.5, 4);
  c.data_validation = 40;
  tt_run_through(&c);
  poisson_config(&c, "first200", 0.5, 4);
  c.data_n_train = 200;
  tt_run_through(&c);
  ASSERT_SAME_FILE("val", "first200", "model.bin");
  size_t len;
  char *js = (char *)SLURP("val", "summary.json", &len);
  assert_non_null(strstr(js, "\"n_train\": 200, \"n_test\": 40, \"eval_set\": \"validation\""));
  free(js);
  poisson_config(&c, "valbad", 0.5, 4);
  c.data_validation = N_TRAIN;
  dpgd_run *r = NULL;
  assert_int_not_equal(dpgd_run_open(&r, &c, c.output_dir), DPGD_OK);
  assert_non_null(strstr(dpgd_error_last(), "data.validation"));
  c.data_validation = 10, c.data_n_test = 10;
  assert_int_not_equal(dpgd_config_validate(&c), DPGD_OK);
  assert_non_null(strstr(dpgd_error_last(), "data.n_test"));
}

/* A run: one subsampled release per step in the accountant, its eps the direct one; only
 * sampled points are charged (each at most C^2 per step), so some points spend nothing;
 * summary.json names the sampler; points.csv states no per-point guarantee. */
static void test_run_accounting(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "ref", 0.1, 12);
  c.output_checkpoint_every = 3;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  assert_int_equal(dpgd_run_releases(r), 12);
  assert_true(dpgd_run_eps_now(r) ==
              direct_eps(DPGD_ACCT_EXACT, 0.1, 3.7, 12, 0, 1, c.privacy_delta));
  const dpgd_ledger *l = dpgd_run_ledger(r);
  size_t zero = 0;
  for (size_t i = 0; i < l->n; i++) {
    assert_true(l->spend[i] >= 0 && l->spend[i] <= 12 * 2.375 * 2.375);
    zero += l->spend[i] == 0;
  }
  /* P(never sampled in 12 steps) = 0.9^12 = 0.28: about 68 of 240 points. */
  print_message("  points never charged: %zu of %zu\n", zero, l->n);
  assert_true(zero > 20 && zero < 130);
  dpgd_run_free(r);
  size_t len;
  char *s = (char *)SLURP("ref", "summary.json", &len);
  assert_non_null(strstr(s, "\"sampling\": \"poisson\", \"sample_rate\": 0.1"));
  assert_non_null(strstr(s, "\"odometer\": null"));
  free(s);
  char *pts = (char *)SLURP("ref", "points.csv", &len);
  assert_non_null(strstr(pts, ",1,,,,\n"));
  free(pts);
}

/* Cut after step 7 (checkpoint at 6), resumed: the files of the uninterrupted run of
 * test_run_accounting ("ref"), which needs the sampler's stream restored. */
static void test_resume_bit_identical(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "cut", 0.1, 12);
  c.output_checkpoint_every = 3;
  tt_run_cut(&c, 7);
  char run[600];
  snprintf(run, sizeof run, "%s/cut", dir);
  char ck[700];
  snprintf(ck, sizeof ck, "%s/checkpoint.bin", run);
  dpgd_ckpt *k = NULL;
  const void *d;
  size_t len;
  assert_int_equal(dpgd_ckpt_read(&k, ck, dpgd_config_hash(&c)), DPGD_OK);
  assert_int_equal(dpgd_ckpt_get(k, "rngsamp", 0, &d, &len), DPGD_OK);
  assert_true(len > 0);
  dpgd_ckpt_free(k);
  tt_resume_through(dir, "cut", 6);
  tt_assert_same_results(dir, "ref", "cut");
}

/* Chunks of 4 at q = 0.1: leaves of span 4 floor(1/q) = 40 examples (the checkpoint's
 * replay identity names it), each leaf's few sampled rows in one chunk step. The run
 * writes the same files with 1 and with 2 threads. */
static void test_span_threads(void **state)
{
  (void)state;
  static const int threads[] = {1, 2};
  for (int k = 0; k < 2; k++) {
    dpgd_config c;
    poisson_config(&c, k ? "span2" : "span1", 0.1, 12);
    c.model_chunk = 4;
    c.model_threads = threads[k];
    c.output_checkpoint_every = 4;
    tt_run_through(&c);
    char ck[700];
    snprintf(ck, sizeof ck, "%s/%s/checkpoint.bin", dir, k ? "span2" : "span1");
    dpgd_ckpt *ckpt = NULL;
    const void *d;
    size_t len;
    assert_int_equal(dpgd_ckpt_read(&ckpt, ck, dpgd_config_hash(&c)), DPGD_OK);
    assert_int_equal(dpgd_ckpt_get(ckpt, "replay", 0, &d, &len), DPGD_OK);
    char replay[700] = "";
    memcpy(replay, d, len < sizeof replay - 1 ? len : sizeof replay - 1);
    if (!strstr(replay, "; chunk 4; span 40;")) fail_msg("replay identity: %s", replay);
    dpgd_ckpt_free(ckpt);
  }
  ASSERT_SAME_FILE("span1", "span2", "model.bin");
  ASSERT_SAME_FILE("span1", "span2", "points.csv");
  ASSERT_SAME_FILE("span1", "span2", "metrics.csv");
}

/* Secure mode: the sample comes from the OS generator (no stream state to save); the
 * run finishes and accounts its steps. */
static void test_secure(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "secure", 0.25, 2);
  c.train_rng = DPGD_RNG_SECURE;
  dpgd_run *r = tt_open_run(&c);
  tt_finish_run(r);
  assert_int_equal(dpgd_run_releases(r), 2);
  dpgd_run_free(r);
}

/* At a small rate the exact method has no answer after a few steps (the planned run's
 * eps, at 400 steps, has one; at step 4 it has none today): metrics.csv leaves eps_exact
 * empty there and the progress line says n/a, never "nan". */
static void test_exact_without_answer(void **state)
{
  (void)state;
  dpgd_config c;
  poisson_config(&c, "small-q", 256.0 / 60000, 400);
  c.privacy_sigma = 0.9;
  dpgd_run *r = tt_open_run(&c);
  assert_true(isfinite(dpgd_run_plan(r)->eps[DPGD_ACCT_EXACT]));
  for (int t = 0; t < 4; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  char line[256];
  dpgd_run_progress(r, line, sizeof line);
  print_message("  %s\n", line);
  int none = isnan(dpgd_run_eps_now(r));
  if (none) assert_non_null(strstr(line, "eps n/a (exact"));
  else assert_null(strstr(line, "nan"));
  dpgd_run_free(r);
  size_t len;
  char *m = (char *)SLURP("small-q", "metrics.csv", &len);
  assert_null(strstr(m, "nan"));
  if (none) assert_non_null(strstr(m, "\n4,,,")); /* no exact, no zcdp at step 4 */
  free(m);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_equals_accountant),
      cmocka_unit_test(test_calibration_smallest),
      cmocka_unit_test(test_calibration_memo),
      cmocka_unit_test(test_rate_one_is_full_batch),
      cmocka_unit_test(test_eps_cadence),
      cmocka_unit_test(test_validation_split),
      cmocka_unit_test(test_run_accounting),
      cmocka_unit_test(test_resume_bit_identical),
      cmocka_unit_test(test_span_threads),
      cmocka_unit_test(test_secure),
      cmocka_unit_test(test_exact_without_answer),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir); /* kept for inspection when a test failed */
  free(dir);
  return rc;
}
