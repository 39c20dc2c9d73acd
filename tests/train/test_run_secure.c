/* test_run_secure.c -- secure mode (the OS generator) on test_run.c's synthetic
 * dataset: the same seed gives different models, a diverging run is an error naming the
 * step, and a resume never redoes an emitted step. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
#define SLURP(run, name, len) tt_slurp_in(dir, run, name, len)
#define ASSERT_SAME_FILE(a, b, name) tt_assert_same_file(dir, a, b, name)
enum { N_TRAIN = 240, N_TEST = 120 };

/* Secure mode: the OS generator, so the same seed gives different models; the summary
 * says which mode ran. A diverging learning rate is an error naming the step. */
static void test_secure_and_diverged(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "secA");
  c.train_steps = 3;
  c.train_rng = DPGD_RNG_SECURE;
  dpgd_run *a = tt_open_run(&c);
  snprintf(c.output_dir, sizeof c.output_dir, "%s/secB", dir);
  dpgd_run *b = tt_open_run(&c);
  tt_finish_run(a);
  tt_finish_run(b);
  size_t P, len;
  const float *pa = dpgd_run_params(a, &P);
  assert_memory_not_equal(pa, dpgd_run_params(b, NULL), P * sizeof(float));
  char *sum = (char *)SLURP("secA", "summary.json", &len);
  assert_non_null(strstr(sum, "\"rng\": \"secure\""));
  /* A secure full-batch run is proven in integers (test_run_discrete): no caveat. */
  assert_null(strstr(sum, "caveat"));
  assert_non_null(strstr(sum, "\"theorem\": \"" DPGD_DISCRETE_THEOREM));
  free(sum);
  dpgd_run_free(a);
  dpgd_run_free(b);
  /* Divergence after a released step: the step is accounted (the message names the
   * eps, metrics.csv has its row), the state is checkpointed, and a resume refuses
   * the run instead of redoing the step. Both noise modes. */
  for (int secure = 0; secure < 2; secure++) {
    tt_full_config(&c, dir, secure ? "divergeS" : "diverge");
    c.train_lr = 1e300;
    c.train_rng = secure ? DPGD_RNG_SECURE : DPGD_RNG_RESEARCH;
    dpgd_run *r = tt_open_run(&c);
    assert_int_equal(dpgd_run_step(r), DPGD_ERANGE);
    assert_non_null(strstr(dpgd_error_last(), "diverged"));
    assert_non_null(strstr(dpgd_error_last(), "accounted"));
    assert_int_equal(dpgd_run_releases(r), 1);
    assert_true(dpgd_run_eps_now(r) > 0);
    dpgd_run_free(r);
    char *rows = (char *)SLURP(secure ? "divergeS" : "diverge", "metrics.csv", &len);
    char *row1 = strchr(rows, '\n') + 1;
    assert_true(!strncmp(row1, "1,", 2));
    assert_non_null(strchr(row1, '\n'));
    assert_true(*(strchr(row1, '\n') + 1) == '\0');
    free(rows);
    char rd[600];
    snprintf(rd, sizeof rd, "%s/%s", dir, secure ? "divergeS" : "diverge");
    dpgd_run *again = NULL;
    assert_int_equal(dpgd_run_resume(&again, rd), DPGD_EINVAL);
    assert_non_null(strstr(dpgd_error_last(), "cannot be continued"));
    assert_null(again);
  }
}

static void put_file(const char *run, const char *name, const char *text, size_t len)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s/%s", dir, run, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static dpgd_run *resume_run(const char *run_dir)
{
  dpgd_run *r = NULL;
  int rc = dpgd_run_resume(&r, run_dir);
  if (rc) print_error("dpgd_run_resume: %s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  return r;
}

/* Secure mode cannot replay its noise, so no emitted step may be redone: every step is
 * checkpointed (output.checkpoint_every = 0 notwithstanding) before its metrics row is
 * written. A kill inside a step (the run freed after step t) resumes after step t; a kill
 * between the checkpoint of step t and its row (the row cut to a partial line, or
 * missing) resumes after step t and writes the checkpointed row, the same bytes; rows
 * after the checkpoint (emitted steps) are refused with the file untouched. The finished
 * run has one row per step and accounts exactly its steps and queries. */
static void test_secure_resume(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "secres");
  c.train_rng = DPGD_RNG_SECURE;
  c.filter_enabled = 1;
  c.filter_k = 4;
  c.train_steps = 0; /* 4 + (3 - 1) * 1 = 6 */
  c.stopping_queries = 3;
  c.stopping_every = 1;
  c.stopping_tau_frac = 0.05;
  c.output_checkpoint_every = 0;
  char run[600];
  snprintf(run, sizeof run, "%s/secres", dir);
  dpgd_run *r = tt_open_run(&c);
  for (int t = 0; t < 3; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  dpgd_run_free(r);
  r = resume_run(run);
  assert_int_equal(dpgd_run_step_index(r), 3);
  assert_int_equal(dpgd_run_redone(r), 0);
  assert_int_equal(dpgd_run_row_restored(r), 0);
  for (int t = 0; t < 2; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  dpgd_run_free(r);
  size_t len;
  char *full = (char *)SLURP("secres", "metrics.csv", &len);
  char *last = full + len - 1;
  while (last > full && last[-1] != '\n') last--;
  assert_int_equal(strtoul(last, NULL, 10), 5);
  size_t keep = (size_t)(last - full), row = len - keep;
  for (int cut = 0; cut < 2; cut++) {
    /* cut 0: half of row 5 reached the file; cut 1: none of it. */
    put_file("secres", "metrics.csv", full, keep + (cut ? 0 : row / 2));
    r = resume_run(run);
    assert_int_equal(dpgd_run_step_index(r), 5);
    assert_int_equal(dpgd_run_redone(r), 0);
    assert_int_equal(dpgd_run_row_restored(r), 1);
    dpgd_run_free(r);
    size_t l2;
    char *now = (char *)SLURP("secres", "metrics.csv", &l2);
    assert_int_equal(l2, len);
    assert_memory_equal(now, full, len);
    free(now);
  }
  /* Row 6 on disk but the checkpoint at step 5: step 6 was released; not redone. */
  char *more = malloc(len + row + 1);
  assert_non_null(more);
  memcpy(more, full, len);
  memcpy(more + len, last, row);
  more[len] = '6';
  put_file("secres", "metrics.csv", more, len + row);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "twice"));
  size_t l3;
  char *after = (char *)SLURP("secres", "metrics.csv", &l3);
  assert_int_equal(l3, len + row);
  assert_memory_equal(after, more, l3);
  free(after);
  free(more);
  put_file("secres", "metrics.csv", full, len);
  free(full);
  r = resume_run(run);
  tt_finish_run(r);
  /* 6 step draws and 3 query draws; the accountant holds the 4 full-norm steps and the
   * 3 queries (test_stopping_accounted). */
  assert_int_equal(dpgd_run_noise_draws(r), 6 + 3);
  assert_int_equal(dpgd_run_releases(r), 4 + 3);
  dpgd_run_free(r);
  full = (char *)SLURP("secres", "metrics.csv", &len);
  size_t rows = 0, queries = 0;
  for (char *line = strchr(full, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    assert_int_equal(strtoul(line + 1, NULL, 10), ++rows);
    const char *f = line + 1;
    for (int k = 0; k < 8; k++) f = strchr(f, ',') + 1; /* field 9: query_acc_noisy */
    queries += *f != ',';
  }
  assert_int_equal(rows, 6);
  assert_int_equal(queries, 3);
  free(full);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_secure_and_diverged),
      cmocka_unit_test(test_secure_resume),
  };
  return tt_run_banded("test_run_secure", tests, sizeof tests / sizeof tests[0], &dir, N_TRAIN,
                       N_TEST);
}
