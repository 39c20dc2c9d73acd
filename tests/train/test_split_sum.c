/* test_split_sum.c -- a run whose clipped sums come from dpgd_run_set_sum, computed as
 * MPI ranks compute them (train/MPI.md) but in one process: the tree leaves split into R
 * contiguous ranges, each summed into its tree nodes by its own workspace (1 to 3
 * threads), the nodes combined. Every step's sum has the bits of the engine's; such runs
 * (Algorithm 7 with queries, Poisson DP-SGD) write the model.bin, metrics.csv and
 * points.csv of a run without the hook, byte for byte, for R = 2, 3, 5; a sum that fails mid-run stops the run at that step with the
 * last checkpoint untouched, and a resume with another R ends with the same bytes. */
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
enum { N_TRAIN = 300, N_TEST = 120, MAX_RANKS = 8 };

/* The emulated ranks. */
typedef struct {
  int R;
  int calls, fail_at; /* the call that fails (1-based); 0: none */
  dpgd_grad_ws *ws[MAX_RANKS];
  double *nodes, *ref; /* (slots, P), (P) */
} split;

static int split_sum(void *ctx, dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                     const double *caps, double *sum, double *post)
{
  split *s = ctx;
  if (++s->calls == s->fail_at) return DPGD_FAIL(DPGD_EIO, "rank 1 of %d: planted", s->R);
  /* The tree's leaves are the workspace's span (above the chunk size for Poisson). */
  size_t chunk = dpgd_grad_ws_chunk(ws), span = dpgd_grad_ws_span(ws);
  size_t nc = (ds->n + span - 1) / span;
  size_t P = dpgd_model_n_params(m);
  size_t bounds[MAX_RANKS + 1], slots = 0;
  for (int r = 0; r <= s->R; r++) bounds[r] = nc * (size_t)r / (size_t)s->R;
  if (!s->nodes) s->nodes = malloc(MAX_RANKS * 64 * P * sizeof(double));
  assert_non_null(s->nodes);
  for (int r = 0; r < s->R; r++) {
    if (!s->ws[r]) s->ws[r] = dpgd_grad_ws_alloc(m, chunk, 1 + r % 3);
    assert_non_null(s->ws[r]);
    assert_int_equal(dpgd_grad_ws_set_span(s->ws[r], span), DPGD_OK);
    dpgd_grad_ws_set_constant_time(s->ws[r], 0);
    int rc = dpgd_model_clipped_grad_nodes(m, s->ws[r], ds, caps, bounds[r], bounds[r + 1],
                                           s->nodes + slots * P, NULL, post);
    if (rc) return rc;
    slots += dpgd_model_tree_count(nc, bounds[r], bounds[r + 1]);
  }
  size_t k = 0;
  int rc = dpgd_model_tree_combine(s->nodes, slots, P, nc, bounds, (size_t)s->R, &k);
  if (rc) return rc;
  assert_int_equal(k, 1);
  memcpy(sum, s->nodes, P * sizeof(double));
  /* The contract of dpgd_run_set_sum: the bits of the engine in one call. (The files
   * alone could not tell: a last-bit change of the double sum almost never moves the
   * float parameters.) */
  if (!s->ref) s->ref = malloc(P * sizeof(double));
  assert_non_null(s->ref);
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, ds, caps, s->ref, NULL, NULL), DPGD_OK);
  assert_memory_equal(sum, s->ref, P * sizeof(double));
  return DPGD_OK;
}

static void split_free(split *s)
{
  for (int r = 0; r < MAX_RANKS; r++) dpgd_grad_ws_free(s->ws[r]);
  free(s->nodes);
  free(s->ref);
  memset(s, 0, sizeof *s);
}

/* Softmax, Algorithm 7 with stopping queries (poisson: DP-SGD), chunk 16, 2 threads: the
 * trainer tests' run (tt_sampled_config) with its own noise, clip and checkpoints. */
static void make_config(dpgd_config *c, const char *run, int poisson)
{
  tt_sampled_config(c, dir, run, poisson ? DPGD_SAMPLING_POISSON : DPGD_SAMPLING_FULL, 10);
  c->model_chunk = 16;
  c->model_threads = 2;
  c->train_eval_every = 3;
  c->privacy_sigma = 2.375;
  c->privacy_clip = 1.5;
  c->output_checkpoint_every = 4;
  if (poisson) {
    c->train_sample_rate = 0.3;
  } else {
    c->filter_enabled = 1;
    c->filter_k = 4;
    c->stopping_queries = 2;
    c->stopping_every = 4;
    c->stopping_tau_frac = 0.05;
  }
}

static void run_split(const dpgd_config *c, int R)
{
  split s = {.R = R};
  dpgd_run *r = tt_open_run(c);
  dpgd_run_set_sum(r, split_sum, &s);
  tt_finish_run(r);
  dpgd_run_free(r);
  assert_int_equal(s.calls, (int)c->train_steps);
  split_free(&s);
}

static void test_split_bytes(void **state)
{
  (void)state;
  static const int ranks[] = {2, 3, 5};
  for (int poisson = 0; poisson < 2; poisson++) {
    dpgd_config c;
    char ref[32], run[32];
    snprintf(ref, sizeof ref, "ref%d", poisson);
    make_config(&c, ref, poisson);
    tt_run_through(&c);
    for (size_t k = 0; k < 3; k++) {
      snprintf(run, sizeof run, "split%d-%d", poisson, ranks[k]);
      make_config(&c, run, poisson);
      run_split(&c, ranks[k]);
      tt_assert_same_results(dir, ref, run);
    }
  }
}

/* The sum fails at step 6 (checkpoints at 4 and 8): the step returns the error, the
 * checkpoint of step 4 is untouched, and a resume with 5 ranks ends as the reference. */
static void test_split_failure(void **state)
{
  (void)state;
  dpgd_config c;
  make_config(&c, "ref-f", 0);
  tt_run_through(&c);
  make_config(&c, "fail", 0);
  split s = {.R = 3, .fail_at = 6};
  dpgd_run *r = tt_open_run(&c);
  dpgd_run_set_sum(r, split_sum, &s);
  for (int t = 0; t < 5; t++) assert_int_equal(dpgd_run_step(r), DPGD_OK);
  size_t len0, len1;
  unsigned char *before = tt_slurp_in(dir, "fail", "checkpoint.bin", &len0);
  assert_int_equal(dpgd_run_step(r), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "rank 1 of 3: planted"));
  assert_int_equal(dpgd_run_step_index(r), 5);
  dpgd_run_free(r);
  split_free(&s);
  unsigned char *after = tt_slurp_in(dir, "fail", "checkpoint.bin", &len1);
  assert_int_equal(len0, len1);
  assert_memory_equal(before, after, len0);
  free(before);
  free(after);

  char path[1100];
  snprintf(path, sizeof path, "%s/fail", dir);
  split s5 = {.R = 5};
  assert_int_equal(dpgd_run_resume(&r, path), DPGD_OK);
  assert_int_equal(dpgd_run_step_index(r), 4);
  dpgd_run_set_sum(r, split_sum, &s5);
  tt_finish_run(r);
  dpgd_run_free(r);
  split_free(&s5);
  tt_assert_same_results(dir, "ref-f", "fail");
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 21);
  tt_write_banded_split(dir, "t10k", N_TEST, 22);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_bytes),
      cmocka_unit_test(test_split_failure),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir); /* kept for inspection when a test failed */
  free(dir);
  return rc;
}
