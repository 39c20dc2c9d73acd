/* test_run_resume.c -- checkpoints and resuming, on test_run.c's synthetic dataset: a
 * resumed run ends bit-identical to an uninterrupted one; the ledger's checkpoint
 * sections round-trip, and corrupt, mismatched, other-build and other-libm checkpoints
 * are replayed or refused as the replay identity says. */
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

/* Interrupted after step 7 (checkpoint at 6), resumed: same model.bin, points.csv and
 * metrics.csv as the uninterrupted run. */
static void test_resume_bit_identical(void **state)
{
  (void)state;
  dpgd_config c;
  tt_stopping_config(&c, dir, "full", 3, 1);
  tt_run_through(&c);
  snprintf(c.output_dir, sizeof c.output_dir, "%s/cut", dir);
  tt_run_cut(&c, 7); /* "killed" after step 7: the last checkpoint is step 6 */
  /* A second open of the same directory is refused: it holds an unfinished run. */
  dpgd_run *again = NULL;
  assert_int_equal(dpgd_run_open(&again, &c, NULL), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "--resume"));
  char run[600];
  snprintf(run, sizeof run, "%s/cut", dir);
  dpgd_run *r = NULL;
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_OK);
  assert_int_equal(dpgd_run_step_index(r), 6);
  /* The ledger came back, not reset. */
  assert_true(dpgd_run_ledger(r)->spend[0] > 0);
  tt_finish_run(r);
  dpgd_run_free(r);
  tt_assert_same_results(dir, "full", "cut");
  /* A finished run cannot be resumed. */
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "finished"));
}

/* A section name as the checkpoint stores it: 8 bytes, NUL-padded. */
static void set_name(char name[8], const char *s)
{
  memset(name, 0, 8);
  memcpy(name, s, strlen(s));
}

/* Rewrites run's checkpoint (a full-batch run's sections) without its section drop,
 * adding section add (len bytes of data) when add is not NULL: a checkpoint of another
 * build or BLAS kernel (a different "replay"), of an older dpgd ("spend" for "filter"),
 * or a damaged one. */
static void rewrite_checkpoint(const char *run, const dpgd_config *c, const char *drop,
                               const char *add, const void *data, size_t len)
{
  static const char *const names[] = {"meta",     "params", "best", "filter", "rngstep",
                                      "rngquery", "acct",   "data", "replay"};
  enum { N = sizeof names / sizeof names[0] };
  char p[600];
  snprintf(p, sizeof p, "%s/%s/checkpoint.bin", dir, run);
  dpgd_config rc_cfg = *c;
  snprintf(rc_cfg.output_dir, sizeof rc_cfg.output_dir, "%s/%s", dir, run);
  uint64_t hash = dpgd_config_hash(&rc_cfg);
  dpgd_ckpt *ck = NULL;
  assert_int_equal(dpgd_ckpt_read(&ck, p, hash), DPGD_OK);
  dpgd_ckpt_section sec[N + 1];
  size_t k = 0;
  for (size_t j = 0; j < N; j++) {
    if (!strcmp(names[j], drop)) continue;
    set_name(sec[k].name, names[j]);
    assert_int_equal(dpgd_ckpt_get(ck, names[j], 0, &sec[k].data, &sec[k].len), DPGD_OK);
    k++;
  }
  if (add) {
    set_name(sec[k].name, add);
    sec[k].data = data;
    sec[k++].len = len;
  }
  assert_int_equal(dpgd_ckpt_write(p, hash, sec, k), DPGD_OK);
  dpgd_ckpt_free(ck);
}

/* run's checkpoint with its "replay" section (the build and engine identity) set to
 * other, as a checkpoint written by another build or BLAS kernel would be. */
static void set_replay(const char *run, const dpgd_config *c, const char *other)
{
  rewrite_checkpoint(run, c, "replay", "replay", other, strlen(other));
}

/* The filter section of run's checkpoint (malloc'ed copy). */
static void *filter_section(const char *run, const dpgd_config *c, size_t *len)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s/checkpoint.bin", dir, run);
  dpgd_config rc_cfg = *c;
  snprintf(rc_cfg.output_dir, sizeof rc_cfg.output_dir, "%s/%s", dir, run);
  dpgd_ckpt *ck = NULL;
  assert_int_equal(dpgd_ckpt_read(&ck, p, dpgd_config_hash(&rc_cfg)), DPGD_OK);
  const void *d;
  assert_int_equal(dpgd_ckpt_get(ck, "filter", 0, &d, len), DPGD_OK);
  void *copy = malloc(*len);
  assert_non_null(copy);
  memcpy(copy, d, *len);
  dpgd_ckpt_free(ck);
  return copy;
}

/* Interrupted after step 7 (checkpoint at 6, the ledger's filter saved as "filter"). */
static void cut_run(dpgd_config *c, const char *run)
{
  tt_stopping_config(c, dir, run, 3, 1);
  tt_run_cut(c, 7);
}

/* Resumes run: DPGD_OK and the same outputs as "lfull", or refused naming `why`. */
static void resume_ledger_run(const char *run, const char *why)
{
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, run);
  dpgd_run *r = NULL;
  int rc = dpgd_run_resume(&r, path);
  if (why) {
    assert_int_equal(rc, DPGD_EFORMAT);
    assert_null(r);
    assert_non_null(strstr(dpgd_error_last(), why));
    assert_null(strchr(dpgd_error_last(), '\n'));
    return;
  }
  if (rc) print_error("%s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_OK);
  assert_true(dpgd_run_ledger(r)->spend[0] > 0); /* the ledger came back */
  tt_finish_run(r);
  dpgd_run_free(r);
  /* summary.json differs in its nonprivate wall_s only */
  static const char *const files[] = {"model.bin", "points.csv", "metrics.csv"};
  for (size_t k = 0; k < 3; k++) ASSERT_SAME_FILE("lfull", run, files[k]);
}

/* The ledger in a checkpoint: the filter (dpgd_filter_serialize, section "filter")
 * round-trips; a checkpoint of an older dpgd with only the "spend" array resumes to the
 * same outputs; a checkpoint with neither, a damaged filter or one of another budget is
 * refused with one line (a resume never resets the ledger). */
static void test_resume_ledger_sections(void **state)
{
  (void)state;
  dpgd_config c;
  tt_stopping_config(&c, dir, "lfull", 3, 1);
  tt_run_through(&c);
  cut_run(&c, "lnew");
  resume_ledger_run("lnew", NULL);
  cut_run(&c, "lold");
  size_t len;
  void *buf = filter_section("lold", &c, &len);
  dpgd_filter *f = NULL;
  assert_int_equal(dpgd_filter_deserialize(&f, buf, len), DPGD_OK);
  size_t n = dpgd_filter_n(f);
  rewrite_checkpoint("lold", &c, "filter", "spend", dpgd_filter_spent_data(f, 0),
                     n * sizeof(double));
  resume_ledger_run("lold", NULL);
  cut_run(&c, "lnone");
  rewrite_checkpoint("lnone", &c, "filter", NULL, NULL, 0);
  resume_ledger_run("lnone", "no privacy ledger");
  cut_run(&c, "lshort");
  rewrite_checkpoint("lshort", &c, "filter", "spend", dpgd_filter_spent_data(f, 0),
                     sizeof(double));
  resume_ledger_run("lshort", "'spend' section is 8 bytes");
  cut_run(&c, "lbad");
  ((unsigned char *)buf)[len / 2] ^= 0x10;
  rewrite_checkpoint("lbad", &c, "filter", "filter", buf, len);
  resume_ledger_run("lbad", "cannot be restored");
  ((unsigned char *)buf)[len / 2] ^= 0x10;
  cut_run(&c, "lbudget"); /* a valid filter of another budget */
  double b = dpgd_filter_budget(f, 0) * 2;
  dpgd_filter *g = dpgd_filter_alloc(n, DPGD_FILTER_GDP, 1, NULL, &b);
  void *gbuf = NULL;
  size_t glen = 0;
  assert_int_equal(dpgd_filter_serialize(g, &gbuf, &glen), DPGD_OK);
  rewrite_checkpoint("lbudget", &c, "filter", "filter", gbuf, glen);
  resume_ledger_run("lbudget", "does not match the ledger");
  free(gbuf);
  dpgd_filter_free(g);
  dpgd_filter_free(f);
  free(buf);
}

/* A research resume replays the released rows after its checkpoint with the same
 * noise: under another build or BLAS kernel the gradients differ, so it
 * would release that noise again on other values. Refused (naming both identities),
 * metrics.csv untouched; a resume with nothing to replay is fine anywhere. */
static void test_resume_other_build(void **state)
{
  (void)state;
  dpgd_config c;
  tt_stopping_config(&c, dir, "other", 3, 0);
  tt_run_cut(&c, 7); /* rows 1..7 emitted, checkpoint at step 6 */
  set_replay("other", &c, "dpgd 0.0.9 GNU 1.0 Release; blas Prescott; threads 7");
  size_t before_len, after_len;
  unsigned char *before = SLURP("other", "metrics.csv", &before_len);
  char run[600];
  snprintf(run, sizeof run, "%s/other", dir);
  dpgd_run *r = NULL;
  int rc = dpgd_run_resume(&r, run);
  if (rc != DPGD_EINVAL) print_error("%s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_EINVAL);
  assert_null(r);
  assert_non_null(strstr(dpgd_error_last(), "steps 7.."));
  assert_non_null(strstr(dpgd_error_last(), "blas Prescott"));
  assert_non_null(strstr(dpgd_error_last(), "OPENBLAS_CORETYPE"));
  unsigned char *after = SLURP("other", "metrics.csv", &after_len);
  assert_int_equal(before_len, after_len);
  assert_memory_equal(before, after, before_len);
  free(before);
  free(after);
  /* Killed right after the checkpoint of step 6: nothing to replay, resume accepted. */
  snprintf(c.output_dir, sizeof c.output_dir, "%s/other6", dir);
  r = tt_open_run(&c);
  for (int t = 0; t < 6; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  dpgd_run_free(r);
  set_replay("other6", &c, "dpgd 0.0.9 GNU 1.0 Release; blas Prescott; threads 7");
  snprintf(run, sizeof run, "%s/other6", dir);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_OK);
  assert_int_equal(dpgd_run_redone(r), 0);
  tt_finish_run(r);
  dpgd_run_free(r);
}

/* An exp that differs from libm's in the last bit for some inputs: another libm. */
static double exp_other_libm(double x)
{
  double y = exp(x);
  return x > 0 ? nextafter(y, INFINITY) : y;
}

/* libm is part of the replay identity: its checksum changes with another exp, and a
 * research resume with released rows to replay under it is refused naming libm (the
 * noise would be released again on values computed with other bits); the same libm
 * resumes to the same outputs. */
static void test_resume_other_libm(void **state)
{
  (void)state;
  char a[128], b[128];
  dpgd_libm_id(a, sizeof a);
  dpgd_libm_test_exp = exp_other_libm;
  dpgd_libm_id(b, sizeof b);
  dpgd_libm_test_exp = NULL;
  assert_non_null(strstr(a, "libm "));
  assert_string_not_equal(a, b);
  dpgd_config c;
  tt_stopping_config(&c, dir, "libm_full", 3, 0);
  tt_run_through(&c);
  tt_stopping_config(&c, dir, "libm", 3, 0);
  tt_run_cut(&c, 7); /* rows 1..7 emitted, checkpoint at step 6 */
  char run[600];
  snprintf(run, sizeof run, "%s/libm", dir);
  dpgd_run *r = NULL;
  dpgd_libm_test_exp = exp_other_libm;
  int rc = dpgd_run_resume(&r, run);
  dpgd_libm_test_exp = NULL;
  if (rc != DPGD_EINVAL) print_error("%s\n", dpgd_error_last());
  assert_int_equal(rc, DPGD_EINVAL);
  assert_null(r);
  assert_non_null(strstr(dpgd_error_last(), "steps 7.."));
  assert_non_null(strstr(dpgd_error_last(), b)); /* this run's libm, named */
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_OK);
  tt_finish_run(r);
  dpgd_run_free(r);
  static const char *const files[] = {"model.bin", "points.csv", "metrics.csv"};
  for (size_t k = 0; k < 3; k++) ASSERT_SAME_FILE("libm_full", "libm", files[k]);
}

static void flip_byte(const char *path, long off)
{
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, off, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, off, SEEK_SET);
  fputc(ch ^ 0x10, f);
  fclose(f);
}

static void test_checkpoint_refused(void **state)
{
  (void)state;
  dpgd_config c;
  tt_full_config(&c, dir, "corrupt");
  c.output_checkpoint_every = 2;
  dpgd_run *r = tt_open_run(&c);
  for (int t = 0; t < 5; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  dpgd_run_free(r);
  char run[600], ck[700], ini[700], cmd[4096];
  snprintf(run, sizeof run, "%s/corrupt", dir);
  snprintf(ck, sizeof ck, "%s/checkpoint.bin", run);
  snprintf(ini, sizeof ini, "%s/config.ini", run);
  snprintf(cmd, sizeof cmd, "cp %s %s.good && cp %s %s.good", ck, ck, ini, ini);
  assert_int_equal(system(cmd), 0);
  flip_byte(ck, 200);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "corrupt"));
  /* A config that changed since: refused as another configuration. */
  snprintf(cmd, sizeof cmd, "cp %s.good %s && sed -i 's/^lr = .*/lr = 0.25/' %s", ck, ck, ini);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "another configuration"));
  snprintf(cmd, sizeof cmd, "cp %s.good %s", ini, ini);
  assert_int_equal(system(cmd), 0);
  /* Other data of the same size (data.dir is not in the config hash): refused. One
   * training label differs from the run's data. */
  char other[600];
  snprintf(other, sizeof other, "%s/otherdata", dir);
  snprintf(
      cmd, sizeof cmd,
      "mkdir -p %s && cp %s/*-ubyte %s/ && printf '\\003' | dd of=%s/train-labels-idx1-ubyte "
      "bs=1 seek=%d conv=notrunc status=none && sed -i 's|^dir = .*|dir = %s|' %s",
      other, dir, other, other, 8 + N_TRAIN - 1, other, ini);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_EFORMAT);
  assert_non_null(strstr(dpgd_error_last(), "other data"));
  /* The same data copied elsewhere: accepted (only the contents count). */
  snprintf(cmd, sizeof cmd, "cp %s/train-labels-idx1-ubyte %s/", dir, other);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_OK);
  assert_int_equal(dpgd_run_step_index(r), 4);
  /* While the run is open, a second process (here: a second open file description,
   * which flock treats the same way) cannot resume it. */
  dpgd_run *r2 = NULL;
  assert_int_equal(dpgd_run_resume(&r2, run), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "in use"));
  assert_null(r2);
  dpgd_run_free(r);
  /* Released with the run. */
  assert_int_equal(dpgd_run_resume(&r, run), DPGD_OK);
  dpgd_run_free(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_bit_identical),   cmocka_unit_test(test_checkpoint_refused),
      cmocka_unit_test(test_resume_other_build),     cmocka_unit_test(test_resume_other_libm),
      cmocka_unit_test(test_resume_ledger_sections),
  };
  return tt_run_banded("test_run_resume", tests, sizeof tests / sizeof tests[0], &dir, N_TRAIN,
                       N_TEST);
}
