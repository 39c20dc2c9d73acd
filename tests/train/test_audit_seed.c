/* test_audit_seed.c -- the audited run's seed (train/AUDIT.md "The audited run's seed"):
 * by default the run's noise is drawn from a seed derived from the audit seed, so two
 * audit seeds draw independent noise (their first released noise vectors, read off the
 * coordinates no canary holds, each have the variance sigma^2 C^2 and their difference
 * 2 sigma^2 C^2), the same audit seed reproduces the same noise and the same bounds, and
 * keep_train_seed keeps the config's train.seed (one noise draw for every audit seed).
 * Softmax on small synthetic data, 1000 gradient canaries; no MNIST needed. */
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
enum { N_TRAIN = 240, N_TEST = 60, M = 1000, P = 7850, K = 400 /* coordinates compared */ };

static void config(dpgd_config *c)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "softmax");
  c->train_steps = 8;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 0;
  c->privacy_clip = 1.5;
  c->privacy_epsilon = 2;
  c->privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c->model_threads = 1;
  c->output_progress = 0;
}

typedef struct {
  double z[P];    /* the first step's noise; NAN on the canaries' coordinates */
  double sd;      /* sigma C, the noise's standard deviation */
  dpgd_seed seed; /* the run's train.seed */
  dpgd_audit_result res;
} outcome;

static int n_audits;

/* An audit with audit seed `seed`; keep: keep_train_seed. The first step's noise is the
 * released sum less the base points' clipped sum (the auditor's, at theta_0) on a
 * coordinate no canary holds: there the canaries add nothing. */
static void audit(uint64_t seed, int keep, outcome *o)
{
  dpgd_config c;
  config(&c);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = M;
  p.kind = DPGD_AUDIT_GRADIENT;
  p.seed = seed;
  p.keep_train_seed = keep;
  char out[1024];
  snprintf(out, sizeof out, "%s/a%d", dir, n_audits++);
  dpgd_audit *a = NULL;
  int rc = dpgd_audit_open(&a, &c, out, &p);
  if (!rc) rc = dpgd_audit_step(a);
  if (rc) print_error("audit: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  const dpgd_run *r = dpgd_audit_run(a);
  assert_int_equal(a->P, P);
  for (size_t k = 0; k < P; k++) o->z[k] = r->sum[k] - a->base_sum[k];
  for (size_t j = 0; j < M; j++) o->z[a->coords[j]] = NAN;
  o->sd = r->plan.sigma * r->plan.clip;
  o->seed = r->cfg.train_seed;
  tt_audit_through(a, &o->res);
  dpgd_audit_free(a);
}

/* Mean square of x (of x - y) over the first K coordinates no canary holds (in y's
 * audit too). */
static double mean_sq(const double *x, const double *y)
{
  double s = 0;
  size_t i = 0;
  for (size_t k = 0; k < P && i < K; k++) {
    double d = x[k] - (y ? y[k] : 0);
    if (isnan(d)) continue;
    s += d * d;
    i++;
  }
  assert_int_equal(i, K);
  return s / K;
}

/* Audit seeds 1 and 2: the noise is N(0, sigma^2 C^2) in each (K = 400 coordinates: the
 * mean square is within 0.7-1.3 of sigma^2 C^2, 4 sd of chi^2_400 / 400) and the two
 * draws are independent (the mean square difference near 2 sigma^2 C^2, not 0). The run
 * seed is the one derived from the audit seed (dpgd_stream_derive_seed, "audit run"). */
static void test_seeds_draw_own_noise(void **state)
{
  (void)state;
  outcome *o = calloc(2, sizeof *o);
  assert_non_null(o);
  audit(1, 0, &o[0]);
  audit(2, 0, &o[1]);
  double v = o[0].sd * o[0].sd;
  assert_true(o[0].sd == o[1].sd && v > 0);
  double d = mean_sq(o[0].z, o[1].z) / v;
  printf("seeds 1, 2: mean square difference / (sigma C)^2 = %.3f\n", d);
  assert_true(d > 1.4 && d < 2.6);
  for (int s = 0; s < 2; s++) {
    double ms = mean_sq(o[s].z, NULL) / v;
    printf("seed %d: noise mean square / (sigma C)^2 = %.3f\n", s + 1, ms);
    assert_true(ms > 0.7 && ms < 1.3);
    dpgd_seed want, audit_seed = dpgd_seed_from_u64((uint64_t)s + 1);
    assert_int_equal(dpgd_stream_derive_seed(&audit_seed, "audit run", &want), DPGD_OK);
    assert_memory_equal(o[s].seed.b, want.b, sizeof want.b);
    assert_memory_equal(o[s].res.run_seed.b, want.b, sizeof want.b);
    assert_int_equal(o[s].res.run_seed_derived, 1);
  }
  free(o);
}

/* The same audit seed twice: the same noise, bit for bit, and the same bounds. */
static void test_same_seed_reproduces(void **state)
{
  (void)state;
  outcome *o = calloc(2, sizeof *o);
  assert_non_null(o);
  audit(3, 0, &o[0]);
  audit(3, 0, &o[1]);
  for (size_t k = 0; k < P; k++) /* the same canaries' coordinates, the same noise */
    assert_true(o[0].z[k] == o[1].z[k] || (isnan(o[0].z[k]) && isnan(o[1].z[k])));
  assert_true(o[0].res.eps_lower_fdp == o[1].res.eps_lower_fdp);
  assert_true(o[0].res.eps_lower == o[1].res.eps_lower);
  assert_int_equal(o[0].res.correct_fdp, o[1].res.correct_fdp);
  assert_int_equal(o[0].res.correct, o[1].res.correct);
  assert_true(o[0].res.eps_lower_fdp < o[0].res.eps_claimed);
  free(o);
}

/* keep_train_seed: the config's train.seed draws the noise whatever the audit seed (the
 * two draws agree up to the base sum's rounding). */
static void test_keep_train_seed(void **state)
{
  (void)state;
  outcome *o = calloc(2, sizeof *o);
  assert_non_null(o);
  audit(1, 1, &o[0]);
  audit(2, 1, &o[1]);
  dpgd_seed want = dpgd_seed_from_u64(2385);
  for (int s = 0; s < 2; s++) {
    assert_memory_equal(o[s].seed.b, want.b, sizeof want.b);
    assert_int_equal(o[s].res.run_seed_derived, 0);
  }
  assert_true(mean_sq(o[0].z, o[1].z) < 1e-12 * o[0].sd * o[0].sd);
  free(o);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seeds_draw_own_noise),
      cmocka_unit_test(test_same_seed_reproduces),
      cmocka_unit_test(test_keep_train_seed),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir);
  free(dir);
  return rc;
}
