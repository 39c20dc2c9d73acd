/* test_audit.c -- the one-run audit (train/AUDIT.md) on a small synthetic dataset with
 * the softmax model, no MNIST needed: excluded canaries are null points of the run (they
 * spend nothing, included ones spend like any point); without a bug the lower bound stays
 * below the claim and with the planted noise cut it rises above it, under Algorithms 6
 * and 7 and DP-SGD; the same seeds give the same scores; audit.json carries the counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
enum { N_TRAIN = 240, N_TEST = 60, M = 200 };

/* filtered: 1 Algorithm 7, 2 DP-SGD (Poisson sampling, rate 1/4), 0 Algorithm 6. */
static void config(dpgd_config *c, int filtered)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "softmax");
  c->train_steps = 12;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 0;
  c->privacy_clip = 1;
  c->privacy_epsilon = 1.5;
  c->privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c->filter_enabled = filtered == 1;
  if (filtered == 1) c->filter_k = 6; /* every canary reaches its budget half-way */
  if (filtered == 2) {
    c->train_sampling = DPGD_SAMPLING_POISSON;
    c->train_sample_rate = 0.25;
    c->train_steps = 48;
  }
  c->model_threads = 1;
  c->output_progress = 0;
}

/* Runs an audit into dir/<name>; the audit is returned for inspection. */
static dpgd_audit *audit(const char *name, int filtered, double scale, dpgd_audit_result *res)
{
  dpgd_config c;
  config(&c, filtered);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = M;
  p.guesses = 40;
  p.seed = 7;
  p.planted_noise_scale = scale;
  char out[1024];
  snprintf(out, sizeof out, "%s/%s", dir, name);
  dpgd_audit *a = NULL;
  int rc = dpgd_audit_open(&a, &c, out, &p);
  while (!rc && !dpgd_audit_done(a)) rc = dpgd_audit_step(a);
  if (!rc) rc = dpgd_audit_finish(a, res);
  if (rc) print_error("audit %s: %s\n", name, dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  return a;
}

/* Excluded canaries spent nothing; included ones spent (clipped gradients of norm C). */
static void check_null_points(const dpgd_audit *a)
{
  const uint8_t *in;
  size_t m;
  dpgd_audit_scores(a, &in, &m);
  const dpgd_ledger *l = dpgd_run_ledger(dpgd_audit_run(a));
  assert_int_equal(l->n, N_TRAIN + M);
  for (size_t j = 0; j < m; j++) {
    double s = l->spend[N_TRAIN + j];
    if (in[j]) assert_true(s > 0);
    else assert_true(s == 0);
  }
}

static void check_verdict(const dpgd_audit_result *r, int bug)
{
  assert_int_equal(r->canaries, M);
  assert_int_equal(r->guesses, 40);
  assert_true(r->correct <= r->guesses);
  assert_true(r->confidence == 0.95);
  assert_true(fabs(r->eps_claimed - 1.5) < 1e-3);
  if (bug) assert_true(r->eps_lower > r->eps_claimed);
  else assert_true(r->eps_lower < r->eps_claimed);
}

static void run_pair(int filtered)
{
  const char *const names[3][2] = {
      {"alg6", "alg6-bug"}, {"alg7", "alg7-bug"}, {"dpsgd", "dpsgd-bug"}};
  dpgd_audit_result ok, bug;
  dpgd_audit *a = audit(names[filtered][0], filtered, 1, &ok);
  check_null_points(a);
  check_verdict(&ok, 0);
  dpgd_audit_free(a);
  a = audit(names[filtered][1], filtered, 0.1, &bug);
  check_null_points(a);
  check_verdict(&bug, 1);
  dpgd_audit_free(a);
}

static void test_alg6(void **state)
{
  (void)state;
  run_pair(0);
}

static void test_alg7(void **state)
{
  (void)state;
  run_pair(1);
}

static void test_dpsgd(void **state)
{
  (void)state;
  run_pair(2);
}

static void test_reproducible_and_json(void **state)
{
  (void)state;
  dpgd_audit_result r1, r2;
  dpgd_audit_free(audit("rep1", 0, 1, &r1));
  dpgd_audit_free(audit("rep2", 0, 1, &r2));
  char p1[1100], p2[1100];
  snprintf(p1, sizeof p1, "%s/rep1/audit_scores.csv", dir);
  snprintf(p2, sizeof p2, "%s/rep2/audit_scores.csv", dir);
  size_t l1, l2;
  unsigned char *a = tt_slurp(p1, &l1), *b = tt_slurp(p2, &l2);
  assert_true(l1 == l2 && memcmp(a, b, l1) == 0);
  free(a);
  free(b);
  snprintf(p1, sizeof p1, "%s/rep1/audit.json", dir);
  char *j = (char *)tt_slurp(p1, &l1), want[64];
  const char *keys[] = {"\"eps_lower\": ", "\"eps_claimed\": ", "\"confidence\": 0.95,",
                        "\"planted_bug\": false"};
  for (int k = 0; k < 4; k++) assert_non_null(strstr(j, keys[k]));
  snprintf(want, sizeof want, "\"correct\": %zu,", r1.correct);
  assert_non_null(strstr(j, want));
  free(j);
}

static void test_bad_params(void **state)
{
  (void)state;
  dpgd_config c;
  config(&c, 0);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  dpgd_audit *a = NULL;
  char out[1024];
  snprintf(out, sizeof out, "%s/bad", dir);
  p.canaries = 1;
  assert_int_equal(dpgd_audit_open(&a, &c, out, &p), DPGD_EINVAL);
  p.canaries = 10, p.guesses = 3;
  assert_int_equal(dpgd_audit_open(&a, &c, out, &p), DPGD_EINVAL);
  p.guesses = 0, p.planted_noise_scale = 2;
  assert_int_equal(dpgd_audit_open(&a, &c, out, &p), DPGD_EINVAL);
  assert_null(a);
}

/* The audit directory holds a byte-identical copy of the training data: audit_data/ is
 * its owner's alone (0700, files 0600) under a permissive umask, even when it existed
 * before, and DIR/SENSITIVE says what the directory holds. */
static void test_data_copy_private(void **state)
{
  (void)state;
  dpgd_config c;
  config(&c, 0);
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = 10;
  char out[1024], path[1200];
  snprintf(out, sizeof out, "%s/private", dir);
  assert_int_equal(mkdir(out, 0755), 0);
  snprintf(path, sizeof path, "%s/audit_data", out);
  assert_int_equal(mkdir(path, 0755), 0);
  mode_t old = umask(022);
  dpgd_audit *a = NULL;
  int rc = dpgd_audit_open(&a, &c, out, &p);
  umask(old);
  assert_int_equal(rc, DPGD_OK);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  static const char *const files[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                      "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  for (int k = 0; k < 4; k++) {
    snprintf(path, sizeof path, "%s/audit_data/%s", out, files[k]);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
  }
  snprintf(path, sizeof path, "%s/SENSITIVE", out);
  size_t len;
  char *text = (char *)tt_slurp(path, &len);
  assert_non_null(strstr(text, "copy of the training data"));
  assert_non_null(strstr(text, "separate use"));
  free(text);
  dpgd_audit_free(a);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alg6),       cmocka_unit_test(test_alg7),
      cmocka_unit_test(test_dpsgd),      cmocka_unit_test(test_reproducible_and_json),
      cmocka_unit_test(test_bad_params), cmocka_unit_test(test_data_copy_private),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir);
  free(dir);
  return rc;
}
