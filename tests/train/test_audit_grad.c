/* test_audit_grad.c -- gradient canaries and the f-DP bound of the one-run audit
 * (train/AUDIT.md) on a small synthetic dataset with the softmax model (7850 parameters,
 * 7850 canaries), no MNIST needed: gradient canaries are charged by the run's ledger
 * like any point; a correct run's f-DP bound stays below its claim and reaches a good
 * part of it; each planted bug (noise 0.5, clip applied as 2C, Poisson rate accounted at
 * half) is caught at claims 1, 2 and 4. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
enum { N_TRAIN = 240, N_TEST = 60, M = 7850 };

typedef struct {
  double noise, clip, rate; /* planted scales; 1 1 1: a correct run */
} plant;

static void config(dpgd_config *c, double eps, int poisson)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "softmax");
  c->train_steps = 12;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 0;
  c->privacy_clip = 1;
  c->privacy_epsilon = eps;
  c->privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  if (poisson) {
    c->train_sampling = DPGD_SAMPLING_POISSON;
    c->train_sample_rate = 0.25;
    c->train_steps = 24;
  }
  c->model_threads = 1;
  c->output_progress = 0;
}

static int n_audits;

static dpgd_audit *audit(double eps, int poisson, plant pl, uint64_t seed,
                         dpgd_audit_result *res)
{
  dpgd_config c;
  config(&c, eps, poisson);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = M;
  p.kind = DPGD_AUDIT_GRADIENT;
  p.seed = seed;
  p.planted_noise_scale = pl.noise;
  p.planted_clip_scale = pl.clip;
  p.planted_rate_scale = pl.rate;
  char out[1024];
  snprintf(out, sizeof out, "%s/a%d", dir, n_audits++);
  dpgd_audit *a = NULL;
  int rc = dpgd_audit_open(&a, &c, out, &p);
  if (rc) print_error("audit: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  tt_audit_through(a, res);
  printf("eps %g %s plant (%g, %g, %g) seed %llu: f-DP %.3f (%zu/%zu), Steinke %.3f, "
         "claim %.3f\n",
         eps, poisson ? "poisson" : "full", pl.noise, pl.clip, pl.rate,
         (unsigned long long)seed, res->eps_lower_fdp, res->correct_fdp, res->guesses_fdp,
         res->eps_lower, res->eps_claimed);
  assert_true(fabs(res->eps_claimed - eps) < 1e-3 * eps);
  return a;
}

/* Included gradient canaries are charged by the run's ledger (their clipped norm is the
 * cap) whenever sampled, excluded ones never; full batch: every included one. */
static void check_charged(const dpgd_audit *a, int poisson)
{
  size_t charged = 0, included = 0;
  const uint8_t *in;
  size_t m;
  dpgd_audit_scores(a, &in, &m);
  const dpgd_ledger *l = dpgd_run_ledger(dpgd_audit_run(a));
  assert_int_equal(l->n, N_TRAIN + M);
  for (size_t j = 0; j < m; j++) {
    double s = l->spend[N_TRAIN + j];
    included += in[j];
    charged += in[j] && s > 0;
    if (!in[j]) assert_true(s == 0);
  }
  if (poisson) assert_true(charged > included * 99 / 100); /* 0.75^24: 0.1% never sampled */
  else assert_int_equal(charged, included);
}

/* A correct full-batch run at claims 2 and 4, 3 audit seeds: below the claim, and at
 * least 0.55 of it (the ideal attacker expects 0.65 and 0.68 with 7850 canaries). */
static void test_correct_full(void **state)
{
  (void)state;
  const double eps[] = {2, 4};
  for (int e = 0; e < 2; e++)
    for (uint64_t s = 1; s <= 3; s++) {
      dpgd_audit_result r;
      dpgd_audit *a = audit(eps[e], 0, (plant){1, 1, 1}, s, &r);
      if (e == 0 && s == 1) check_charged(a, 0);
      assert_true(r.eps_lower_fdp < r.eps_claimed);
      assert_true(r.eps_lower < r.eps_claimed);
      assert_true(r.eps_lower_fdp >= 0.55 * r.eps_claimed);
      assert_true(r.eps_lower_fdp > r.eps_lower);
      dpgd_audit_free(a);
    }
}

/* Noise scaled by 0.5 and the clip applied as 2C (accounted as C), at claims 1, 2, 4:
 * the f-DP bound exceeds the claim. */
static void test_planted_full(void **state)
{
  (void)state;
  const double eps[] = {1, 2, 4};
  const plant bugs[] = {{0.5, 1, 1}, {1, 2, 1}};
  for (int b = 0; b < 2; b++)
    for (int e = 0; e < 3; e++) {
      dpgd_audit_result r;
      dpgd_audit *a = audit(eps[e], 0, bugs[b], 5, &r);
      assert_true(r.eps_lower_fdp > r.eps_claimed);
      dpgd_audit_free(a);
    }
}

/* DP-SGD: a correct run stays below its claim; Poisson sampling at twice the rate the
 * claim accounts is caught at claims 1, 2 and 4. */
static void test_dpsgd(void **state)
{
  (void)state;
  dpgd_audit_result r;
  dpgd_audit *a = audit(2, 1, (plant){1, 1, 1}, 5, &r);
  check_charged(a, 1);
  assert_true(r.eps_lower_fdp < r.eps_claimed);
  dpgd_audit_free(a);
  const double eps[] = {1, 2, 4};
  for (int e = 0; e < 3; e++) {
    a = audit(eps[e], 1, (plant){1, 1, 0.5}, 5, &r);
    assert_true(r.eps_lower_fdp > r.eps_claimed);
    dpgd_audit_free(a);
  }
}

/* The engine's gradient rows: image rows then gradient rows in one dataset; the sum is
 * the image rows' sum plus f v on each row's coordinate (f the clipping rule's factor,
 * f v < cap), pre = v^2, post = cap^2 (clipped); a cap of 0 leaves nothing. */
static void test_engine_fixed_rows(void **state)
{
  (void)state;
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_TANH, 28, 28, 10);
  dpgd_model_init(m, 3);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 1);
  size_t P = dpgd_model_n_params(m), n = 6, nf = 3;
  dpgd_dataset *ds = dpgd_data_alloc(n, 28, 28, 10);
  assert_non_null(ds);
  for (size_t i = 0; i < n * 784; i++) ds->pixels[i] = (uint8_t)(i * 37 % 251);
  for (size_t i = 0; i < n; i++) ds->labels[i] = (uint8_t)i;
  uint32_t coords[3] = {5, 7849, 100};
  double caps[6] = {1, 1, 1, 0.5, 0, 2}, pre[6], post[6];
  double *with = calloc(P, sizeof *with), *plain = calloc(P, sizeof *plain);
  dpgd_dataset images = *ds;
  images.n = n - nf;
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, &images, caps, plain, NULL, NULL), 0);
  ds->fixed_from = n - nf;
  ds->fixed_coord = coords;
  ds->fixed_value = 4;
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, ds, caps, with, pre, post), 0);
  for (size_t k = 0; k < P; k++) {
    double d = with[k] - plain[k];
    if (k == 5) assert_true(d > 0.5 * (1 - 1e-5) && d < 0.5);
    else if (k == 100) assert_true(d > 2 * (1 - 1e-5) && d < 2);
    else assert_true(fabs(d) <= 1e-12 * (1 + fabs(plain[k])));
  }
  assert_true(pre[3] == 16 && post[3] == 0.25 && post[4] == 0 && post[5] == 4);
  free(with);
  free(plain);
  dpgd_data_free(ds);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

/* More canaries than parameters: a one-line error. */
static void test_too_many(void **state)
{
  (void)state;
  dpgd_config c;
  config(&c, 2, 0);
  tt_audit_too_many(&c, dir, M);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_engine_fixed_rows),
      cmocka_unit_test(test_too_many),
      cmocka_unit_test(test_correct_full),
      cmocka_unit_test(test_planted_full),
      cmocka_unit_test(test_dpsgd),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir);
  free(dir);
  return rc;
}
