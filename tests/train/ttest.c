/* ttest.c -- see ttest.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/testutil.h"
#include "dpgd_core.h"
#include "ttest.h"

unsigned char *tt_slurp(const char *path, size_t *len)
{
  char *b = NULL;
  assert_int_equal(dpgd_file_slurp(&b, len, path), DPGD_OK);
  return (unsigned char *)b;
}

enum { SIDE = 28 };

void tt_write_banded_split(const char *to, const char *prefix, size_t n, uint64_t seed)
{
  uint8_t *img = malloc(n * SIDE * SIDE), *lab = malloc(n);
  assert_non_null(img);
  assert_non_null(lab);
  tu_bytes(img, n * SIDE * SIDE, seed);
  for (size_t i = 0; i < n; i++) {
    lab[i] = (uint8_t)((i * 7 + seed) % 10);
    for (int j = 0; j < SIDE * SIDE; j++) {
      int row = j / SIDE, bright = row >= 2 * lab[i] + 3 && row <= 2 * lab[i] + 5;
      uint8_t *px = img + i * SIDE * SIDE + j;
      *px = (uint8_t)(bright ? 160 + *px % 96 : *px % 70);
    }
  }
  uint32_t di[3] = {(uint32_t)n, SIDE, SIDE}, dl[1] = {(uint32_t)n};
  size_t len;
  char p[512];
  uint8_t *f = tu_idx(&len, 3, di, img, n * SIDE * SIDE);
  snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", to, prefix);
  tu_write(p, f, len);
  free(f);
  f = tu_idx(&len, 1, dl, lab, n);
  snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte", to, prefix);
  tu_write(p, f, len);
  free(f);
  free(img);
  free(lab);
}

unsigned char *tt_slurp_in(const char *dir, const char *run, const char *name, size_t *len)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s/%s", dir, run, name);
  return tt_slurp(p, len);
}

void tt_assert_same_file(const char *dir, const char *run_a, const char *run_b,
                         const char *name)
{
  size_t la, lb;
  unsigned char *a = tt_slurp_in(dir, run_a, name, &la),
                *b = tt_slurp_in(dir, run_b, name, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(a, b, la);
  free(a);
  free(b);
}

dpgd_run *tt_open_run(const dpgd_config *c)
{
  dpgd_run *r = NULL;
  int rc = dpgd_run_open(&r, c, NULL);
  if (rc) print_error("dpgd_run_open: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  return r;
}

void tt_finish_run(dpgd_run *r)
{
  while (!dpgd_run_done(r)) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  int rc = dpgd_run_finish(r);
  if (rc) print_error("dpgd_run_finish: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
}

void tt_run_through(const dpgd_config *c)
{
  dpgd_run *r = tt_open_run(c);
  tt_finish_run(r);
  dpgd_run_free(r);
}

void tt_run_cut(const dpgd_config *c, int steps)
{
  dpgd_run *r = tt_open_run(c);
  for (int t = 0; t < steps; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  dpgd_run_free(r);
}

void tt_resume_through(const char *dir, const char *run, size_t at_step)
{
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, run);
  dpgd_run *r = NULL;
  assert_int_equal(dpgd_run_resume(&r, path), DPGD_OK);
  assert_int_equal(dpgd_run_step_index(r), at_step);
  tt_finish_run(r);
  dpgd_run_free(r);
}

void tt_assert_same_results(const char *dir, const char *run_a, const char *run_b)
{
  tt_assert_same_file(dir, run_a, run_b, "model.bin");
  tt_assert_same_file(dir, run_a, run_b, "points.csv");
  tt_assert_same_file(dir, run_a, run_b, "metrics.csv");
}

void tt_sampled_config(dpgd_config *c, const char *dir, const char *run, int sampling,
                       size_t steps)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "softmax");
  c->train_sampling = sampling;
  c->train_steps = steps;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 4;
  c->privacy_sigma = 3.7;
  c->privacy_clip = 2.375;
  c->model_threads = 1;
  c->output_checkpoint_every = 0;
  c->output_progress = 0;
  snprintf(c->output_dir, sizeof c->output_dir, "%s/%s", dir, run);
}

void tt_full_config(dpgd_config *c, const char *dir, const char *run)
{
  tt_sampled_config(c, dir, run, DPGD_SAMPLING_FULL, 12);
}

void tt_stopping_config(dpgd_config *c, const char *dir, const char *run,
                        size_t checkpoint_every, int diagnostics)
{
  tt_full_config(c, dir, run);
  c->filter_enabled = 1;
  c->filter_k = 5;
  c->train_steps = 0;
  c->stopping_queries = 3;
  c->stopping_every = 2;
  c->output_checkpoint_every = checkpoint_every;
  c->output_diagnostics = diagnostics;
}

void tt_filter_config(dpgd_config *c, const char *dir, const char *run, size_t steps, double k,
                      double refresh)
{
  tt_sampled_config(c, dir, run, DPGD_SAMPLING_POISSON, steps);
  c->train_sample_rate = 0.1;
  c->privacy_sigma = 1.3;
  c->output_checkpoint_every = 3;
  c->filter_enabled = k > 0;
  c->filter_k = k;
  c->filter_refresh = refresh;
}

int tt_run_banded(const char *name, const struct CMUnitTest *tests, size_t n, char **dir,
                  size_t n_train, size_t n_test)
{
  *dir = tu_tmpdir();
  tt_write_banded_split(*dir, "train", n_train, 11);
  tt_write_banded_split(*dir, "t10k", n_test, 12);
  int rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
  if (rc == 0) tu_rmtree(*dir); /* kept for inspection when a test failed */
  free(*dir);
  *dir = NULL;
  return rc;
}

double tt_acct_eps(dpgd_accountant *a, size_t queries, double tau, dpgd_acct_method m,
                   double delta)
{
  if (queries) assert_int_equal(dpgd_acct_add_gaussian(a, 1 / tau, queries), DPGD_OK);
  dpgd_acct_value v;
  int rc = dpgd_acct_epsilon(a, m, delta, &v);
  dpgd_acct_free(a);
  dpgd_error_clear();
  return rc ? NAN : v.value;
}

void tt_assert_same_eps(double got, double want)
{
  if (isnan(want)) assert_true(isnan(got));
  else if (got != want) fail_msg("plan eps %.17g, accountant %.17g", got, want);
}

void tt_audit_through(dpgd_audit *a, dpgd_audit_result *res)
{
  int rc = DPGD_OK;
  while (!rc && !dpgd_audit_done(a)) rc = dpgd_audit_step(a);
  if (!rc) rc = dpgd_audit_finish(a, res);
  if (rc) print_error("audit: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
}

void tt_audit_too_many(const dpgd_config *c, const char *dir, size_t P)
{
  size_t kmax = 1; /* the Walsh codes the config's steps keep orthogonal */
  while (kmax * 2 <= c->train_steps) kmax *= 2;
  dpgd_audit_params p;
  dpgd_audit_defaults(&p);
  p.canaries = P * kmax + 1;
  p.kind = DPGD_AUDIT_GRADIENT;
  char out[1024], says[64], most[64];
  snprintf(out, sizeof out, "%s/too-many", dir);
  snprintf(says, sizeof says, "%zu parameters", P);
  snprintf(most, sizeof most, "use at most %zu", P * kmax);
  dpgd_audit *a = NULL;
  assert_int_equal(dpgd_audit_open(&a, c, out, &p), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), says));
  assert_non_null(strstr(dpgd_error_last(), most));
  assert_null(strchr(dpgd_error_last(), '\n'));
  assert_null(a);
}
