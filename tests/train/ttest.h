/* ttest.h -- helpers shared by the trainer tests (the dataset and temp-folder builders
 * come from tests/data/testutil.h). */
#ifndef DPGD_TEST_TRAIN_UTIL_H
#define DPGD_TEST_TRAIN_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dpgd_train.h"

/* The whole file, NUL-terminated (len excludes the NUL); fails the test if unreadable. */
unsigned char *tt_slurp(const char *path, size_t *len);

/* A learnable synthetic split in IDX form, to/<prefix>-{images-idx3,labels-idx1}-ubyte:
 * n 28x28 images, class k a bright horizontal band at rows 2k+3..2k+5 over a low random
 * background (from seed). */
void tt_write_banded_split(const char *to, const char *prefix, size_t n, uint64_t seed);

/* dir/run/name, whole (as tt_slurp). */
unsigned char *tt_slurp_in(const char *dir, const char *run, const char *name, size_t *len);
/* dir/run_a/name and dir/run_b/name are byte for byte the same. */
void tt_assert_same_file(const char *dir, const char *run_a, const char *run_b,
                         const char *name);

/* dpgd_run_open of c (run directory from c), failing the test with the library's message. */
dpgd_run *tt_open_run(const dpgd_config *c);
/* Steps r to the end and finishes it, failing the test on any error. */
void tt_finish_run(dpgd_run *r);
/* A whole run of c: opened, stepped to the end, finished and freed. */
void tt_run_through(const dpgd_config *c);
/* A run of c "killed" after `steps` steps: opened, stepped, freed without finishing. */
void tt_run_cut(const dpgd_config *c, int steps);
/* dir/run resumed (from its checkpoint of step at_step, checked), stepped to the end,
 * finished and freed. */
void tt_resume_through(const char *dir, const char *run, size_t at_step);
/* model.bin, points.csv and metrics.csv of dir/run_a and dir/run_b are identical. */
void tt_assert_same_results(const char *dir, const char *run_a, const char *run_b);
/* The trainer tests' run: softmax on the synthetic split in dir, `sampling` for `steps`
 * steps (its rate or batch size still to set), sigma 3.7, C 2.375, lr 0.5, seed 2385,
 * test accuracy every 4 steps, one thread, no checkpoints, no progress; into dir/run. */
void tt_sampled_config(dpgd_config *c, const char *dir, const char *run, int sampling,
                       size_t steps);
/* test_run's full-batch run: tt_sampled_config with DPGD_SAMPLING_FULL for 12 steps
 * (C = 2.375: C^2 = 361/64, so k additions of C^2 are exact). */
void tt_full_config(dpgd_config *c, const char *dir, const char *run);
/* tt_full_config filtered (B = 5 C^2) with 3 private stopping queries every 2 steps after
 * step 5, a checkpoint every checkpoint_every steps, diagnostics on or off. */
void tt_stopping_config(dpgd_config *c, const char *dir, const char *run,
                        size_t checkpoint_every, int diagnostics);
/* Filtered DP-SGD's test run: tt_sampled_config with Poisson sampling at rate 0.1 for
 * `steps` steps, sigma 1.3, a checkpoint every 3 steps, filter.k = k (no filter when
 * k <= 0) and filter.refresh = refresh. */
void tt_filter_config(dpgd_config *c, const char *dir, const char *run, size_t steps, double k,
                      double refresh);
/* Runs the n cmocka tests (group name) in a new temporary folder *dir that holds the
 * banded splits "train" (n_train images, seed 11) and "t10k" (n_test, seed 12); removes
 * the folder when every test passed (kept for inspection otherwise) and frees *dir.
 * Returns cmocka's count of failed tests (the exit status). */
int tt_run_banded(const char *name, const struct CMUnitTest *tests, size_t n, char **dir,
                  size_t n_train, size_t n_test);
/* Adds `queries` Gaussians of mu 1/tau to a (none when 0), then a's eps under method m at
 * delta, straight from the accountant; NAN where the method has no answer. Frees a. */
double tt_acct_eps(dpgd_accountant *a, size_t queries, double tau, dpgd_acct_method m,
                   double delta);
/* got equals want bit for bit, or both are NAN. */
void tt_assert_same_eps(double got, double want);
/* An opened audit stepped to the end and finished (asserts success). */
void tt_audit_through(dpgd_audit *a, dpgd_audit_result *res);
/* K P + 1 gradient canaries on c (a model of P parameters; K the largest power of 2
 * within c's train.steps, the Walsh codes they keep orthogonal) are refused in
 * dir/too-many with a one-line message naming the P parameters and the most allowed,
 * K P, and nothing is opened. */
void tt_audit_too_many(const dpgd_config *c, const char *dir, size_t P);

#endif
