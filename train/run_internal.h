/* run_internal.h -- the training run's state (struct dpgd_run) and the helpers its files
 * share: run.c (open, set-up, read access), run_step.c (the step), run_resume.c
 * (checkpoints and --resume), run_dir.c (the run directory's files: lock, metrics rows,
 * points.csv, summary.json, the end of a run). */
#ifndef DPGD_RUN_INTERNAL_H
#define DPGD_RUN_INTERNAL_H

#include <stdio.h>
#include <time.h>

#include "dpgd_accounting.h"
#include "dpgd_core.h"
#include "dpgd_data.h"
#include "dpgd_model.h"
#include "dpgd_train.h"
#include "plan_internal.h"

#define PATHLEN (DPGD_CONFIG_PATH_MAX + 32)
#define ROW_MAX 512 /* one metrics.csv row: 13 fields of at most 24 characters */

/* Scalars saved in the checkpoint's "meta" section (all 8-byte fields). */
typedef struct {
  uint64_t step, queries_done, best_step, noise_draws, n, n_params, steps;
  uint64_t diverged; /* 1: step `step` left non-finite parameters; the run is over */
  double best_noisy, last_test_acc, wall_s, sigma, budget;
} run_meta;

struct dpgd_run {
  dpgd_config cfg;
  dpgd_plan plan;
  char dir[DPGD_CONFIG_PATH_MAX];
  uint64_t config_hash;
  dpgd_dataset *train, *test;
  dpgd_model *model;
  dpgd_grad_ws *ws;
  size_t P;
  dpgd_ledger *ledger;
  double *caps, *post, *sum; /* (n), (n), (P) */
  float *best;               /* (P) parameters of the best noisy iterate */
  double *velocity;          /* (P) train.momentum > 0: heavy-ball velocity; else NULL */
  dpgd_rng *rng_step, *rng_query;
  dpgd_rng *rng_sample;  /* poisson: the batches' stream; NULL for full-batch runs */
  unsigned char *in;     /* (n) poisson: 1 for the points sampled this step; else NULL */
  dpgd_accountant *acct; /* releases so far */
  run_meta m;
  double last_query; /* noisy accuracy of the query at this step; NAN if none */
  double eps_now[DPGD_ACCT_N_METHODS];
  size_t eps_step; /* the step eps_now is for; metrics.csv leaves eps empty at others */
  int metrics;     /* metrics.csv, open for appending (O_APPEND); -1 */
  struct timespec t0;
  double wall_before;    /* wall seconds of earlier sessions (resume) */
  uint64_t session_step; /* steps done when this session started (ETA) */
  char row[ROW_MAX];     /* metrics.csv row of step m.step ("" before step 1) */
  int secure;            /* train.rng = secure: the noise cannot be replayed */
  size_t redone;         /* resume: emitted rows after the checkpoint, replayed */
  int row_restored;      /* resume: the checkpoint's row was written to metrics.csv */
  int lock_fd;           /* open on <dir>/lock, flock()ed while the run is open; -1 */
  uint64_t data_fp;      /* fingerprint of the training and test data (checkpoint) */
  char replay[640];      /* build and engine identity: what bitwise replay needs */
  char replay_ckpt[640]; /* resume: the checkpoint's; "" if it has none */
  /* dpgd audit: (n) 1 = an excluded canary, a null point (cap 0); NULL in every other
   * run. Not owned. */
  const uint8_t *null_mask;
  dpgd_run_sum_fn sum_fn; /* dpgd_run_set_sum; NULL: the engine */
  void *sum_ctx;
  /* plan.discrete (secure full batch): the step's exact sum on the grid and the exact
   * discrete Gaussians of the step (sigma C 2^F) and of a query (tau); else unused. */
  int64_t *isum; /* (P) */
  dpgd_dgauss dg_step, dg_query;
};

/* ---- run.c ---- */
/* The config's training split (and test split when test is not NULL), data.n_train and
 * data.n_test applied, normalisation from data.mean and data.std. */
int dpgd_run_load_data(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c);
/* The same before the features: the images of the splits (always pixels), and dir, the
 * data directory they came from (dpgd_run_features caches a scatter model's features
 * there unless data.feature_cache names another). */
int dpgd_run_load_images(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c,
                         char dir[DPGD_CONFIG_PATH_MAX]);
/* dpgd_run_open on data the caller made (dpgd audit of a scatter-* model: features of
 * the base data and of the canaries): train (and test, or NULL) become the run's, freed
 * with it, also when opening fails; data.dir is then not read. */
int dpgd_run_open_given(dpgd_run **out, const dpgd_config *c, const char *run_dir,
                        dpgd_dataset *train, dpgd_dataset *test);
/* 1 when c's model trains on scattering features (model.type scatter-*). */
int dpgd_run_is_scatter(const dpgd_config *c);
/* For a scatter-* model, *train and *test (test or *test may be NULL) replaced by their
 * features (run_features.c), cached in data.feature_cache or else data_dir; else nothing. */
int dpgd_run_features(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c,
                      const char *data_dir);
/* Everything shared by open and resume: data, plan, model, buffers, streams. */
int dpgd_run_setup(dpgd_run *r);

/* ---- run_dir.c ---- */
int dpgd_run_file_exists(const char *p);
/* Takes <dir>/lock (flock, exclusive, not waiting) for as long as the run is open: two
 * processes writing one run directory would interleave its checkpoints and ledger. The
 * kernel drops the lock when the holder exits, killed or not. */
int dpgd_run_lock_dir(dpgd_run *r);
/* The same lock for any run directory (hidden-iterate runs too): *fd is kept open. */
int dpgd_run_lock_path(const char *dir, int *fd);
/* mkdir -p of the run directory. */
int dpgd_run_make_dirs(const char *dir);
/* Fingerprint of the data a run trains and tests on (CRC-32 of the training pixels and
 * labels, high half; of the test set, low half), kept in the checkpoint so that a resume
 * that finds other data of the same size (data.dir is not part of the config hash) is
 * refused instead of attaching the ledger to other people's records. */
const char *dpgd_run_metrics_header(int diagnostics);
/* Appends text to metrics.csv (no fsync: write_checkpoint syncs the rows it covers). */
int dpgd_run_metrics_put(dpgd_run *r, const char *text);
double dpgd_run_now_s(void);
void dpgd_run_path_in(char *buf, const dpgd_run *r, const char *name);
/* Composes the metrics row of step t in r->row (a secure run checkpoints it before
 * writing it). diag: the non-private diagnostic columns are computed (else empty). */
int dpgd_run_compose_row(dpgd_run *r, size_t t, double test_acc, double lr, int diag);

/* ---- run_resume.c ---- */
/* ---- checkpoints ---- */
int dpgd_run_write_checkpoint(dpgd_run *r);

/* ---- run_step.c ---- */
int dpgd_run_test_accuracy(dpgd_run *r, double *acc);
/* A discrete run's integer noise set-up (plan.discrete; SENSITIVITY.md 8): the grid on
 * the workspace, the sum buffer, the two discrete Gaussians. */
int dpgd_run_setup_discrete(dpgd_run *r);

#endif /* DPGD_RUN_INTERNAL_H */
