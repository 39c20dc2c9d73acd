/* test_faults.c -- the I/O error loop (STYLE.md 17; SQLite's I/O error tests): a short
 * softmax run is made to fail at every open-for-write, write, fsync and rename it does,
 * one at a time (with EIO, ENOSPC and EROFS in turn). Each failure must stop the run with
 * a one-line error naming the run directory and the cause; the directory must then
 * finish under dpgd_run_resume (or, when the fault came before the first checkpoint, a
 * new dpgd_run_open of it). Research runs must end with the bytes of an uninterrupted
 * run; secure runs (whose noise cannot be replayed) with one metrics row per step in
 * order, the failed session's rows unchanged, and the accountant counting every step and
 * query exactly once. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dpgd_core.h"
#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

#ifndef FAULTS_SECURE
#define FAULTS_SECURE 0
#endif

static char *dir;
enum { N_TRAIN = 500, N_TEST = 100, STEPS = 6 };
static const char *kind_name[DPGD_FAULT_N_KINDS] = {"write", "fsync", "rename", "open"};
static const int errnos[] = {EIO, ENOSPC, EROFS};

/* 6 steps, a checkpoint every 2, 2 stopping queries, a test evaluation every 2 steps. */
static void config(dpgd_config *c, int secure)
{
  dpgd_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s", dir);
  snprintf(c->model_type, sizeof c->model_type, "softmax");
  c->train_steps = STEPS;
  c->train_lr = 0.5;
  c->train_seed = dpgd_seed_from_u64(2385);
  c->train_eval_every = 2;
  c->train_rng = secure ? DPGD_RNG_SECURE : DPGD_RNG_RESEARCH;
  c->privacy_sigma = 3.7;
  c->privacy_clip = 2.375;
  c->stopping_queries = 2;
  c->stopping_every = 2;
  c->stopping_tau_frac = 0.05;
  c->model_threads = 1;
  c->output_checkpoint_every = 2;
  c->output_progress = 0;
}

static void path_of(char *p, size_t len, const char *run, const char *name)
{
  snprintf(p, len, "%s/%s/%s", dir, run, name);
}

static int exists(const char *run, const char *name)
{
  char p[600];
  struct stat st;
  path_of(p, sizeof p, run, name);
  return stat(p, &st) == 0;
}

static unsigned char *slurp(const char *run, const char *name, size_t *len)
{
  char p[600];
  path_of(p, sizeof p, run, name);
  return tt_slurp(p, len);
}

/* Steps to the end and finishes; the status of the first call that fails. */
static int drive(dpgd_run *r)
{
  int rc = DPGD_OK;
  while (!rc && !dpgd_run_done(r)) rc = dpgd_run_step(r);
  if (!rc) rc = dpgd_run_finish(r);
  return rc;
}

/* A whole run into dir/run from a fresh open; releases made (accountant) out. */
static int run_fresh(const char *run, int secure, uint64_t *releases)
{
  dpgd_config c;
  config(&c, secure);
  char out[600];
  snprintf(out, sizeof out, "%s/%s", dir, run);
  dpgd_run *r = NULL;
  int rc = dpgd_run_open(&r, &c, out);
  if (!rc) rc = drive(r);
  if (!rc && releases) *releases = dpgd_run_releases(r);
  dpgd_run_free(r);
  return rc;
}

static void assert_same_file(const char *a, const char *b, const char *name)
{
  size_t la, lb;
  unsigned char *x = slurp(a, name, &la), *y = slurp(b, name, &lb);
  if (la != lb || memcmp(x, y, la)) fail_msg("%s/%s differs from %s/%s", a, name, b, name);
  free(x);
  free(y);
}

/* metrics.csv has the header and exactly one row for each step 1..STEPS, in order. */
static void assert_one_row_per_step(const char *run)
{
  size_t len;
  char *t = (char *)slurp(run, "metrics.csv", &len), *save = NULL;
  char *line = strtok_r(t, "\n", &save);
  assert_non_null(line);
  assert_memory_equal(line, "step,", 5);
  for (unsigned long s = 1; s <= STEPS; s++) {
    line = strtok_r(NULL, "\n", &save);
    if (!line || strtoul(line, NULL, 10) != s) fail_msg("%s: row %lu missing", run, s);
  }
  assert_null(strtok_r(NULL, "\n", &save));
  free(t);
}

/* The complete rows of a failed session: its metrics.csv up to its last newline. */
static char *complete_rows(const char *run, size_t *len)
{
  if (!exists(run, "metrics.csv")) {
    *len = 0;
    return NULL;
  }
  char *t = (char *)slurp(run, "metrics.csv", len);
  while (*len && t[*len - 1] != '\n') (*len)--;
  return t;
}

/* One fault: arm it, run from scratch (it must fail, saying where and why), disarm,
 * finish the directory, compare with the uninterrupted run ref. */
static void one_fault(int secure, dpgd_fault_kind kind, unsigned long k, const char *ref)
{
  char run[64];
  snprintf(run, sizeof run, "%s-%s-%lu", secure ? "sec" : "res", kind_name[kind], k);
  int e = errnos[k % 3];
  dpgd_fault_arm(kind, k, e);
  int rc = run_fresh(run, secure, NULL);
  int fired = dpgd_fault_fired();
  dpgd_fault_disarm();
  if (!fired) fail_msg("%s: the armed fault never fired", run);
  if (rc == DPGD_OK) fail_msg("%s: the run ignored a failed %s", run, kind_name[kind]);
  const char *msg = dpgd_error_last();
  if (!strstr(msg, run) || !strstr(msg, strerror(e)) || strchr(msg, '\n'))
    fail_msg("%s: the error does not name the run directory and '%s' on one line: %s", run,
             strerror(e), msg);
  size_t n_before;
  char *before = complete_rows(run, &n_before);

  uint64_t releases = 0;
  dpgd_run *r = NULL;
  char out[600];
  snprintf(out, sizeof out, "%s/%s", dir, run);
  if (exists(run, "summary.json")) {
    /* Only the directory fsync after summary.json's rename can fail with it in place:
     * the run is finished (and resume says so). */
    assert_int_equal(kind, DPGD_FAULT_FSYNC);
    assert_int_not_equal(dpgd_run_resume(&r, out), DPGD_OK);
  } else if (exists(run, "checkpoint.bin")) {
    rc = dpgd_run_resume(&r, out);
    if (rc) fail_msg("%s: resume refused: %s", run, dpgd_error_last());
    if (secure) assert_int_equal(dpgd_run_redone(r), 0);
    rc = drive(r);
    if (rc) fail_msg("%s: resumed run failed: %s", run, dpgd_error_last());
    releases = dpgd_run_releases(r);
    const dpgd_plan *p = dpgd_run_plan(r);
    if (secure && releases != p->steps + p->queries)
      fail_msg("%s: %llu releases, %zu steps + %zu queries", run, (unsigned long long)releases,
               p->steps, p->queries);
  } else {
    /* No checkpoint: the fault came before step 1 was possible; nothing was released,
     * so the run starts again in the same directory. */
    rc = run_fresh(run, secure, &releases);
    if (rc) fail_msg("%s: restart failed: %s", run, dpgd_error_last());
  }
  dpgd_run_free(r);
  if (secure) {
    assert_one_row_per_step(run);
    /* What the failed session emitted stays, byte for byte: never drawn again. */
    size_t len;
    unsigned char *after = slurp(run, "metrics.csv", &len);
    if (n_before > len || (n_before && memcmp(before, after, n_before)))
      fail_msg("%s: a row the failed session wrote changed after resume", run);
    free(after);
  } else {
    assert_same_file(run, ref, "model.bin");
    assert_same_file(run, ref, "points.csv");
    assert_same_file(run, ref, "metrics.csv");
  }
  free(before);
  tu_rmtree(out);
}

static void fault_loop(int secure)
{
  const char *ref = secure ? "sec-ref" : "res-ref";
  uint64_t releases = 0;
  dpgd_fault_disarm();
  assert_int_equal(run_fresh(ref, secure, &releases), DPGD_OK);
  unsigned long calls[DPGD_FAULT_N_KINDS];
  for (int kind = 0; kind < DPGD_FAULT_N_KINDS; kind++) {
    calls[kind] = dpgd_fault_count((dpgd_fault_kind)kind);
    assert_true(calls[kind] > 0);
  }
  assert_int_equal(releases, STEPS + 2);
  print_message("  %s: %lu writes, %lu fsyncs, %lu renames, %lu opens\n",
                secure ? "secure" : "research", calls[0], calls[1], calls[2], calls[3]);
  for (int kind = 0; kind < DPGD_FAULT_N_KINDS; kind++)
    for (unsigned long k = 1; k <= calls[kind]; k++)
      one_fault(secure, (dpgd_fault_kind)kind, k, ref);
}

/* Built twice (FAULTS_SECURE 0 and 1) so that ctest runs the two loops in parallel. */
static void test_fault_loop(void **state)
{
  (void)state;
  fault_loop(FAULTS_SECURE);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_loop),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir); /* kept for inspection when a test failed */
  free(dir);
  return rc;
}
