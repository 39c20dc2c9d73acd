/* test_audit_scatter.c -- the one-run audit of scatter-* models (train/AUDIT.md "Scatter
 * models") on small synthetic data: the audited run trains on the base data's features
 * as dpgd train makes them (the same floats, the same cache file), a scatter-softmax
 * audit with one gradient canary per parameter (39700) stays below its claim and a
 * planted bug (noise 0.5) is caught, input canaries run on features, scatter-cnn takes
 * gradient canaries, and more canaries than parameters are refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit_internal.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
enum { N_TRAIN = 240, N_TEST = 60, P_SOFTMAX = 3969 * 10 + 10 };

static void config(dpgd_config *c, const char *model, double eps)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "%s", model);
  c->train_steps = 12;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 0;
  c->privacy_clip = 1;
  c->privacy_epsilon = eps;
  c->privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c->model_threads = 1;
  c->output_progress = 0;
}

static int n_audits;

/* An audit opened (not stepped) on model with M canaries of kind, planted noise scale. */
static dpgd_audit *open_audit(const char *model, double eps, size_t M, int kind, double noise,
                              uint64_t seed)
{
  dpgd_config c;
  config(&c, model, eps);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = M;
  p.kind = kind;
  p.seed = seed;
  p.planted_noise_scale = noise;
  char out[1024];
  snprintf(out, sizeof out, "%s/a%d", dir, n_audits++);
  dpgd_audit *a = NULL;
  int rc = dpgd_audit_open(&a, &c, out, &p);
  if (rc) print_error("audit: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  return a;
}

static void run_audit(dpgd_audit *a, dpgd_audit_result *res)
{
  tt_audit_through(a, res);
  printf("%s, %zu %s canaries: f-DP %.3f (%zu/%zu), Steinke %.3f, claim %.3f\n",
         dpgd_run_config(dpgd_audit_run(a))->model_type, res->canaries,
         a->ap.kind == DPGD_AUDIT_GRADIENT ? "gradient" : "input", res->eps_lower_fdp,
         res->correct_fdp, res->guesses_fdp, res->eps_lower, res->eps_claimed);
}

/* The run's base rows are the features dpgd train would train on (dpgd_run_load_data on
 * the same config, bit for bit), its test set too; the features were cached where
 * training caches them (the data directory, under the base data's size), not in
 * audit_data; gradient canaries' rows are the engine's gradient rows. */
static void test_features_as_training(void **state)
{
  (void)state;
  dpgd_audit *a = open_audit("scatter-softmax", 2, 500, DPGD_AUDIT_GRADIENT, 1, 1);
  const dpgd_run *r = dpgd_audit_run(a);
  dpgd_config c;
  config(&c, "scatter-softmax", 2);
  dpgd_dataset *tr = NULL, *te = NULL;
  assert_int_equal(dpgd_run_load_data(&tr, &te, &c), DPGD_OK);
  assert_non_null(tr->feat);
  assert_int_equal(tr->n, N_TRAIN);
  assert_int_equal(r->train->n, N_TRAIN + 500);
  assert_int_equal(r->train->d, tr->d);
  assert_memory_equal(r->train->feat, tr->feat, N_TRAIN * tr->d * sizeof *tr->feat);
  assert_memory_equal(r->train->labels, tr->labels, N_TRAIN);
  assert_int_equal(r->test->n, te->n);
  assert_memory_equal(r->test->feat, te->feat, te->n * te->d * sizeof *te->feat);
  assert_int_equal(r->train->fixed_from, N_TRAIN);
  assert_int_equal(a->P, P_SOFTMAX);
  char p[1200];
  snprintf(p, sizeof p, "%s/scatter-J2-L8-train-%d.feat", dir, N_TRAIN);
  assert_true(dpgd_run_file_exists(p));
  snprintf(p, sizeof p, "%s/a%d/audit_data/scatter-J2-L8-train-%d.feat", dir, n_audits - 1,
           N_TRAIN + 500);
  assert_false(dpgd_run_file_exists(p));
  dpgd_data_free(tr);
  dpgd_data_free(te);
  dpgd_audit_free(a);
}

/* scatter-softmax, one gradient canary per parameter (39700), claim 2: a correct run's
 * f-DP bound is below the claim and a good part of it (the ideal attacker expects 0.72 of
 * it with 39700 canaries); the noise halved (eps about doubled) is caught. */
static void test_softmax_gradient(void **state)
{
  (void)state;
  dpgd_audit_result res;
  dpgd_audit *a = open_audit("scatter-softmax", 2, P_SOFTMAX, DPGD_AUDIT_GRADIENT, 1, 1);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp < res.eps_claimed);
  assert_true(res.eps_lower < res.eps_claimed);
  assert_true(res.eps_lower_fdp >= 0.55 * res.eps_claimed);
  dpgd_audit_free(a);
  a = open_audit("scatter-softmax", 2, P_SOFTMAX, DPGD_AUDIT_GRADIENT, 0.5, 1);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp > res.eps_claimed);
  dpgd_audit_free(a);
}

/* Input canaries on features (their images scattered as the base data's are): the audit
 * runs and stays below its claim; the noise cut tenfold is caught. */
static void test_softmax_input(void **state)
{
  (void)state;
  dpgd_audit_result res;
  dpgd_audit *a = open_audit("scatter-softmax", 2, 200, DPGD_AUDIT_INPUT, 1, 2);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp < res.eps_claimed);
  assert_true(res.eps_lower < res.eps_claimed);
  dpgd_audit_free(a);
  a = open_audit("scatter-softmax", 2, 200, DPGD_AUDIT_INPUT, 0.1, 2);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp > res.eps_claimed);
  dpgd_audit_free(a);
}

/* scatter-cnn takes gradient canaries (its parameter count bounds them): below the claim
 * without a bug, above it with the noise halved. */
static void test_cnn_gradient(void **state)
{
  (void)state;
  dpgd_audit_result res;
  dpgd_audit *a = open_audit("scatter-cnn", 2, 8000, DPGD_AUDIT_GRADIENT, 1, 3);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp < res.eps_claimed);
  dpgd_audit_free(a);
  a = open_audit("scatter-cnn", 2, 8000, DPGD_AUDIT_GRADIENT, 0.5, 3);
  run_audit(a, &res);
  assert_true(res.eps_lower_fdp > res.eps_claimed);
  dpgd_audit_free(a);
}

/* One canary more than scatter-softmax's parameters, in a one-step run (one code per
 * coordinate): a one-line error naming them. */
static void test_too_many(void **state)
{
  (void)state;
  dpgd_config c;
  config(&c, "scatter-softmax", 2);
  c.train_steps = 1;
  tt_audit_too_many(&c, dir, P_SOFTMAX);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_features_as_training), cmocka_unit_test(test_too_many),
      cmocka_unit_test(test_softmax_gradient),     cmocka_unit_test(test_softmax_input),
      cmocka_unit_test(test_cnn_gradient),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir);
  free(dir);
  return rc;
}
