/* run.c -- one training run (MATH.md section 1; seed 003 Algorithms 6 and 7): the step
 * (caps, clipped per-example sum, ledger, ONE Gaussian draw, update), accounted private
 * stopping, the public running guarantee, checkpoints and --resume, and the run
 * directory of train/RUN_FORMAT.md. The loop is driven by the caller (dpgd_run_step). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

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
  dpgd_rng *rng_step, *rng_query;
  dpgd_accountant *acct;     /* releases so far */
  run_meta m;
  double last_query;         /* noisy accuracy of the query at this step; NAN if none */
  double eps_now[DPGD_ACCT_N_METHODS];
  int metrics;               /* metrics.csv, open for appending (O_APPEND); -1 */
  struct timespec t0;
  double wall_before;        /* wall seconds of earlier sessions (resume) */
  uint64_t session_step;     /* steps done when this session started (ETA) */
  char row[ROW_MAX];         /* metrics.csv row of step m.step ("" before step 1) */
  int secure;                /* train.rng = secure: the noise cannot be replayed */
  size_t redone;             /* resume: emitted rows after the checkpoint, replayed */
  int row_restored;          /* resume: the checkpoint's row was written to metrics.csv */
  int lock_fd;               /* open on <dir>/lock, flock()ed while the run is open; -1 */
  uint64_t data_fp;          /* fingerprint of the training and test data (checkpoint) */
  char replay[640];          /* build and engine identity: what bitwise replay needs */
  char replay_ckpt[640];     /* resume: the checkpoint's; "" if it has none */
};

#ifndef DPGD_VERSION
#define DPGD_VERSION "unknown"
#endif

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void path_in(char *buf, const dpgd_run *r, const char *name)
{
  snprintf(buf, PATHLEN, "%s/%s", r->dir, name);
}

static int file_exists(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0;
}

/* mkdir -p of the run directory. */
static int make_dirs(const char *dir)
{
  char failed[DPGD_CONFIG_PATH_MAX];
  if (dpgd_path_mkdirs(dir, 0755, failed, sizeof failed) == 0) return DPGD_OK;
  return DPGD_FAIL(DPGD_EIO, "cannot create directory %s: %s", failed, strerror(errno));
}

/* Takes <dir>/lock (flock, exclusive, not waiting) for as long as the run is open: two
 * processes writing one run directory would interleave its checkpoints and ledger. The
 * kernel drops the lock when the holder exits, killed or not. */
static int lock_dir(dpgd_run *r)
{
  char p[PATHLEN];
  path_in(p, r, "lock");
  r->lock_fd = dpgd_file_open_write(p, 0);
  if (r->lock_fd < 0) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", p, strerror(errno));
  if (flock(r->lock_fd, LOCK_EX | LOCK_NB) == 0) return DPGD_OK;
  int e = errno;
  close(r->lock_fd);
  r->lock_fd = -1;
  if (e == EWOULDBLOCK)
    return DPGD_FAIL(DPGD_EINVAL, "%s is in use by another dpgd process (it holds %s)",
                     r->dir, p);
  return DPGD_FAIL(DPGD_EIO, "cannot lock %s: %s", p, strerror(e));
}

/* Fingerprint of the data a run trains and tests on (CRC-32 of the training pixels and
 * labels, high half; of the test set, low half), kept in the checkpoint so that a resume
 * that finds other data of the same size (data.dir is not part of the config hash) is
 * refused instead of attaching the ledger to other people's records. */
static uint64_t data_fingerprint(const dpgd_dataset *train, const dpgd_dataset *test)
{
  const dpgd_dataset *ds[2] = {train, test};
  uint64_t fp = 0;
  for (int k = 0; k < 2; k++) {
    uLong c = crc32_z(crc32(0L, Z_NULL, 0), ds[k]->pixels, ds[k]->n * ds[k]->d);
    c = crc32_z(c, ds[k]->labels, ds[k]->n);
    fp = fp << 32 | (uint32_t)c;
  }
  return fp;
}

void dpgd_run_free(dpgd_run *r)
{
  if (!r) return;
  if (r->metrics >= 0) close(r->metrics);
  if (r->lock_fd >= 0) close(r->lock_fd); /* releases the lock */
  dpgd_data_free(r->train);
  dpgd_data_free(r->test);
  dpgd_grad_ws_free(r->ws);
  dpgd_model_free(r->model);
  dpgd_ledger_free(r->ledger);
  free(r->caps);
  free(r->post);
  free(r->sum);
  free(r->best);
  dpgd_rng_free(r->rng_step);
  dpgd_rng_free(r->rng_query);
  dpgd_acct_free(r->acct);
  free(r);
}

static int load_split(dpgd_dataset **out, const char *dir, const char *split, size_t keep,
                      const dpgd_config *c)
{
  int rc = dpgd_data_load(out, dir, split);
  if (rc) return rc;
  if (keep > 0 && keep < (*out)->n) rc = dpgd_data_truncate(*out, keep);
  else if (keep > (*out)->n)
    rc = DPGD_FAIL(DPGD_EINVAL, "data.n_%s = %zu but the %s split has only %zu examples",
                   split, keep, split, (*out)->n);
  (*out)->mean = (float)c->data_mean;
  (*out)->std = (float)c->data_std;
  return rc;
}

static int find_and_load(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c)
{
  char dir[DPGD_CONFIG_PATH_MAX];
  int rc = dpgd_data_find_dir(dir, sizeof dir, c->data_dir[0] ? c->data_dir : NULL);
  if (!rc) rc = load_split(train, dir, "train", c->data_n_train, c);
  if (!rc && test) rc = load_split(test, dir, "test", c->data_n_test, c);
  return rc;
}

int dpgd_run_dry(dpgd_plan *p, const dpgd_config *c)
{
  dpgd_dataset *train = NULL;
  int rc = find_and_load(&train, NULL, c);
  if (!rc) rc = dpgd_plan_make(p, c, train->n);
  dpgd_data_free(train);
  return rc;
}

/* Everything shared by open and resume: data, plan, model, buffers, streams. */
static int setup(dpgd_run *r)
{
  const dpgd_config *c = &r->cfg;
  int rc = find_and_load(&r->train, &r->test, c);
  if (rc) return rc;
  r->data_fp = data_fingerprint(r->train, r->test);
  rc = dpgd_plan_make(&r->plan, c, r->train->n);
  if (rc) return rc;
  const dpgd_model_type *t = dpgd_model_type_find(c->model_type);
  if (!t) return DPGD_FAIL(DPGD_EINVAL, "model.type '%s' is not built", c->model_type);
  dpgd_error_clear();
  r->model = dpgd_model_alloc(t, (dpgd_activation)c->model_activation, r->train->rows,
                              r->train->cols, r->train->n_classes);
  if (!r->model) {
    /* The model says why (no memory, or a model type not built yet). */
    char why[256];
    snprintf(why, sizeof why, "%s", dpgd_error_last()[0] ? dpgd_error_last() : "no memory");
    return DPGD_FAIL(DPGD_EINVAL, "model.type = %s: %s", c->model_type, why);
  }
  r->ws = dpgd_grad_ws_alloc(r->model, c->model_chunk, c->model_threads);
  r->P = dpgd_model_n_params(r->model);
  size_t n = r->train->n;
  r->ledger = dpgd_ledger_alloc(n, r->plan.filtered, r->plan.clip, r->plan.budget);
  r->caps = malloc(n * sizeof *r->caps);
  r->post = malloc(n * sizeof *r->post);
  r->sum = malloc(r->P * sizeof *r->sum);
  r->best = malloc(r->P * sizeof *r->best);
  if (r->ws) {
    dpgd_grad_ws_set_constant_time(r->ws, c->train_constant_time);
    char eng[320];
    dpgd_grad_ws_replay_id(r->ws, eng, sizeof eng);
    snprintf(r->replay, sizeof r->replay, "%s; %s", dpgd_build_id, eng);
  }
  r->rng_step = dpgd_rng_alloc(c->train_rng, c->train_seed, DPGD_STREAM_STEP);
  r->rng_query = dpgd_rng_alloc(c->train_rng, c->train_seed, DPGD_STREAM_QUERY);
  if (!r->ws || !r->ledger || !r->caps || !r->post || !r->sum || !r->best || !r->rng_step ||
      !r->rng_query)
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the training state (n = %zu, P = %zu)", n,
                     r->P);
  /* The sum's rounding moves it by up to 2 gamma sum_j ||v_j|| <= 2 gamma n C more
   * when one point changes (model/SENSITIVITY.md): the ledger keeps that out of every
   * point's allowance. */
  double slack = 2 * dpgd_model_sum_error_bound(n) * (double)n * r->plan.clip * (1 + 0x1p-40);
  rc = dpgd_ledger_set_slack(r->ledger, slack);
  if (rc) return rc;
  r->m.n = n;
  r->m.n_params = r->P;
  r->m.steps = r->plan.steps;
  r->m.sigma = r->plan.sigma;
  r->m.budget = r->plan.budget;
  r->m.best_noisy = -INFINITY;
  r->m.last_test_acc = NAN;
  r->last_query = NAN;
  r->secure = c->train_rng == DPGD_RNG_SECURE;
  for (int k = 0; k < DPGD_ACCT_N_METHODS; k++) r->eps_now[k] = 0;
  return DPGD_OK;
}

static int write_checkpoint(dpgd_run *r);

static const char *metrics_header(int diagnostics)
{
  return diagnostics ? "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,"
                       "mu,test_acc,query_acc_noisy,lr,diag_train_loss,diag_train_acc,"
                       "diag_active\n"
                     : "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,"
                       "mu,test_acc,query_acc_noisy,lr\n";
}

/* Appends text to metrics.csv (no fsync: write_checkpoint syncs the rows it covers). */
static int metrics_put(dpgd_run *r, const char *text)
{
  if (dpgd_file_write_all(r->metrics, text, strlen(text)))
    return DPGD_FAIL(DPGD_EIO, "cannot write %s/metrics.csv: %s", r->dir, strerror(errno));
  return DPGD_OK;
}

int dpgd_run_open(dpgd_run **out, const dpgd_config *c, const char *run_dir)
{
  *out = NULL;
  dpgd_run *r = calloc(1, sizeof *r);
  if (!r) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the run");
  r->lock_fd = r->metrics = -1;
  r->cfg = *c;
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  if (run_dir) snprintf(r->cfg.output_dir, sizeof r->cfg.output_dir, "%s", run_dir);
  snprintf(r->dir, sizeof r->dir, "%s", r->cfg.output_dir);
  char p[PATHLEN];
  path_in(p, r, "summary.json");
  int rc = DPGD_OK;
  if (file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds a finished run; choose another output.dir", r->dir);
  path_in(p, r, "checkpoint.bin");
  if (!rc && file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL,
                   "%s holds an unfinished run; continue it with --resume %s or remove it",
                   r->dir, r->dir);
  if (!rc) rc = setup(r);
  if (!rc) rc = make_dirs(r->dir);
  if (!rc) rc = lock_dir(r);
  /* Again under the lock: another process may have started this run meanwhile. */
  if (!rc && file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds an unfinished run (started meanwhile)", r->dir);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  /* Initial parameters from their own stream. */
  dpgd_rng *init = dpgd_rng_alloc(r->cfg.train_rng, r->cfg.train_seed, DPGD_STREAM_INIT);
  uint64_t seed = 0;
  rc = init ? dpgd_rng_u64(init, &seed) : DPGD_FAIL(DPGD_ENOMEM, "no memory for a stream");
  dpgd_rng_free(init);
  if (!rc) {
    dpgd_model_init(r->model, seed);
    r->acct = dpgd_acct_alloc();
    if (!r->acct) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  }
  r->config_hash = dpgd_config_hash(&r->cfg);
  if (!rc) {
    path_in(p, r, "config.ini");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
    if (!rc) {
      fprintf(f, "; resolved configuration of this run (dpgd train)\n");
      rc = dpgd_config_write(&r->cfg, f);
      fclose(f);
    }
    if (!rc) rc = dpgd_write_atomic(p, text, len);
    free(text);
  }
  if (!rc) {
    path_in(p, r, "metrics.csv");
    r->metrics = dpgd_file_open_write(p, O_TRUNC | O_APPEND);
    if (r->metrics < 0) rc = DPGD_FAIL(DPGD_EIO, "cannot create %s: %s", p, strerror(errno));
    else rc = metrics_put(r, metrics_header(r->cfg.output_diagnostics));
  }
  /* A checkpoint of step 0 marks the directory as an unfinished run at once. */
  if (!rc) rc = write_checkpoint(r);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  *out = r;
  return DPGD_OK;
}

/* ---- checkpoints ---- */

static int write_checkpoint(dpgd_run *r)
{
  void *acct_buf = NULL;
  size_t acct_len = 0;
  int rc = dpgd_acct_serialize(r->acct, &acct_buf, &acct_len);
  if (rc) return rc;
  size_t n = r->m.n, rs = dpgd_rng_state_size(r->rng_step),
         rq = dpgd_rng_state_size(r->rng_query);
  void *sst = malloc(rs ? rs : 1), *sq = malloc(rq ? rq : 1);
  if (!sst || !sq) {
    free(sst);
    free(sq);
    free(acct_buf);
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the checkpoint");
  }
  dpgd_rng_state_get(r->rng_step, sst);
  dpgd_rng_state_get(r->rng_query, sq);
  r->m.wall_s = r->wall_before + (now_s() - ((double)r->t0.tv_sec + 1e-9 * r->t0.tv_nsec));
  const dpgd_ckpt_section s[] = {
    {"meta", &r->m, sizeof r->m},
    {"params", dpgd_model_params_const(r->model), r->P * sizeof(float)},
    {"best", r->best, r->P * sizeof(float)},
    {"spend", r->ledger->spend, n * sizeof(double)},
    {"rngstep", sst, rs},
    {"rngquery", sq, rq},
    {"acct", acct_buf, acct_len},
    {"data", &r->data_fp, sizeof r->data_fp},
    {"replay", r->replay, strlen(r->replay)},
    {"row", r->row, strlen(r->row)}, /* secure runs only: see dpgd_run_step */
  };
  size_t n_sections = sizeof s / sizeof s[0] - !r->secure;
  char p[PATHLEN];
  path_in(p, r, "checkpoint.bin");
  /* The metrics rows up to this step reach the disk before the checkpoint does. */
  if (r->metrics >= 0 && dpgd_file_fsync(r->metrics)) {
    free(sst);
    free(sq);
    free(acct_buf);
    return DPGD_FAIL(DPGD_EIO, "cannot write %s/metrics.csv: %s", r->dir, strerror(errno));
  }
  rc = dpgd_ckpt_write(p, r->config_hash, s, n_sections);
  free(sst);
  free(sq);
  free(acct_buf);
  return rc;
}

/* Keeps the header and the rows of steps <= step (rows after a checkpoint are written
 * again by the resumed run; their count goes to r->redone), then reopens for appending.
 * *last: the step of the last row kept (0: none). A secure run with rows after its
 * checkpoint is refused, file untouched: those steps were released and cannot be
 * replayed (only a run written before secure runs checkpointed every step has them). */
static int trim_metrics(dpgd_run *r, uint64_t step, uint64_t *last)
{
  char p[PATHLEN];
  path_in(p, r, "metrics.csv");
  FILE *f = fopen(p, "r");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", p, strerror(errno));
  char *text = NULL, *line = NULL;
  size_t tlen = 0, cap = 0;
  FILE *mem = open_memstream(&text, &tlen);
  ssize_t len;
  int first = 1;
  uint64_t after = 0; /* first dropped step */
  *last = 0;
  r->redone = 0;
  while (mem && (len = getline(&line, &cap, f)) > 0) {
    if (line[len - 1] != '\n') break; /* a partial last line from the kill */
    uint64_t s = first ? 0 : strtoull(line, NULL, 10);
    if (s > step) {
      if (!r->redone++) after = s;
      continue;
    }
    if (!first) *last = s;
    first = 0;
    fputs(line, mem);
  }
  free(line);
  fclose(f);
  if (!mem) return DPGD_FAIL(DPGD_ENOMEM, "no memory to rewrite %s", p);
  fclose(mem);
  /* Research: rows after the checkpoint were released; replaying them is harmless only
   * if it reproduces them bit for bit (same noise, same gradients), which needs the
   * same build, BLAS kernel, thread count and chunking. Otherwise the replay would
   * release the same noise on other values: refused, file untouched. */
  if (!r->secure && r->redone && strcmp(r->replay, r->replay_ckpt)) {
    free(text);
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: steps %llu.. were released after the last checkpoint (step %llu) "
                     "by a dpgd running as [%s]; this one runs as [%s], so replaying them "
                     "would release their noise again on different values: resume where "
                     "the run started (same build, OPENBLAS_CORETYPE and model.threads) or "
                     "start a new run",
                     p, (unsigned long long)after, (unsigned long long)step,
                     r->replay_ckpt[0] ? r->replay_ckpt : "unknown", r->replay);
  }
  if (r->secure && r->redone) {
    free(text);
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: steps %llu.. of this secure run were released after its last "
                     "checkpoint (step %llu); redoing them with fresh noise would release them "
                     "twice, so it cannot be resumed",
                     p, (unsigned long long)after, (unsigned long long)step);
  }
  int rc = dpgd_write_atomic(p, text, tlen);
  free(text);
  if (rc) return rc;
  r->metrics = dpgd_file_open_write(p, O_APPEND);
  if (r->metrics < 0) return DPGD_FAIL(DPGD_EIO, "cannot append to %s: %s", p, strerror(errno));
  return DPGD_OK;
}

int dpgd_run_resume(dpgd_run **out, const char *run_dir)
{
  *out = NULL;
  dpgd_run *r = calloc(1, sizeof *r);
  if (!r) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the run");
  r->lock_fd = r->metrics = -1;
  snprintf(r->dir, sizeof r->dir, "%s", run_dir);
  char p[PATHLEN];
  dpgd_config_defaults(&r->cfg);
  path_in(p, r, "config.ini");
  int rc = dpgd_config_load(&r->cfg, p);
  if (!rc) rc = lock_dir(r);
  /* Under the lock: a process that held it may have finished the run meanwhile. */
  path_in(p, r, "summary.json");
  if (!rc && file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds a finished run; nothing to resume", r->dir);
  if (!rc) {
    snprintf(r->cfg.output_dir, sizeof r->cfg.output_dir, "%s", run_dir);
    r->config_hash = dpgd_config_hash(&r->cfg);
    rc = setup(r);
  }
  dpgd_ckpt *ck = NULL;
  /* A secure run's checkpoint write cut off by the kill: it holds the step that was never
   * emitted and is now redone with fresh noise; leave no copy of it behind. */
  path_in(p, r, "checkpoint.bin.tmp");
  if (!rc && r->secure) unlink(p);
  path_in(p, r, "checkpoint.bin");
  if (!rc) rc = dpgd_ckpt_read(&ck, p, r->config_hash);
  const void *d;
  size_t len;
  size_t n = r->train ? r->train->n : 0;
  run_meta m;
  if (!rc) rc = dpgd_ckpt_get(ck, "meta", sizeof m, &d, NULL);
  if (!rc) {
    memcpy(&m, d, sizeof m);
    if (m.n != n || m.n_params != r->P || m.steps != r->plan.steps ||
        m.sigma != r->plan.sigma || m.budget != r->plan.budget || m.step > m.steps)
      rc = DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s does not match this run (dataset size, model, steps, "
                     "sigma or budget differ)",
                     p);
    else if (m.diverged)
      rc = DPGD_FAIL(DPGD_EINVAL,
                     "%s diverged at step %llu (its parameters are not finite) and cannot be "
                     "continued; start a new run with a lower train.lr",
                     r->dir, (unsigned long long)m.step);
  }
  if (!rc && dpgd_ckpt_get(ck, "replay", 0, &d, &len) == DPGD_OK &&
      len < sizeof r->replay_ckpt) {
    memcpy(r->replay_ckpt, d, len);
    r->replay_ckpt[len] = '\0';
  }
  if (!rc) dpgd_error_clear(); /* a checkpoint without "replay" is not an error here */
  /* Checkpoints of dpgd before the "data" section have no fingerprint to compare. */
  if (!rc && dpgd_ckpt_get(ck, "data", 0, &d, &len) == DPGD_OK) {
    uint64_t fp = 0;
    if (len == sizeof fp) memcpy(&fp, d, sizeof fp);
    if (len != sizeof fp || fp != r->data_fp)
      rc = DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s was written on other data: the training or test set "
                     "found now (data.dir = '%s') differs from the run's, though of the same "
                     "size",
                     p, r->cfg.data_dir);
  } else if (!rc) {
    dpgd_error_clear();
  }
  if (!rc) rc = dpgd_ckpt_get(ck, "params", r->P * sizeof(float), &d, NULL);
  if (!rc) memcpy(dpgd_model_params(r->model), d, r->P * sizeof(float));
  if (!rc) rc = dpgd_ckpt_get(ck, "best", r->P * sizeof(float), &d, NULL);
  if (!rc) memcpy(r->best, d, r->P * sizeof(float));
  if (!rc) rc = dpgd_ckpt_get(ck, "spend", n * sizeof(double), &d, NULL);
  if (!rc) memcpy(r->ledger->spend, d, n * sizeof(double));
  if (!rc) rc = dpgd_ledger_check(r->ledger);
  if (!rc) rc = dpgd_ckpt_get(ck, "rngstep", 0, &d, &len);
  if (!rc) rc = dpgd_rng_state_set(r->rng_step, d, len);
  if (!rc) rc = dpgd_ckpt_get(ck, "rngquery", 0, &d, &len);
  if (!rc) rc = dpgd_rng_state_set(r->rng_query, d, len);
  if (!rc) rc = dpgd_ckpt_get(ck, "acct", 0, &d, &len);
  if (!rc) rc = dpgd_acct_deserialize(&r->acct, d, len);
  if (!rc && r->secure && dpgd_ckpt_get(ck, "row", 0, &d, &len))
    rc = DPGD_FAIL(DPGD_EFORMAT,
                   "checkpoint %s has no metrics row: a dpgd that did not checkpoint secure "
                   "runs at every step wrote it, and the steps after it may have been released; "
                   "start the run again",
                   p);
  if (!rc && r->secure && len >= sizeof r->row)
    rc = DPGD_FAIL(DPGD_EFORMAT, "checkpoint %s: metrics row of %zu bytes", p, len);
  if (!rc && r->secure) {
    memcpy(r->row, d, len);
    r->row[len] = '\0';
  }
  dpgd_ckpt_free(ck);
  uint64_t last = 0;
  if (!rc) {
    r->m = m;
    r->wall_before = m.wall_s;
    dpgd_plan_epsilons(r->acct, r->plan.delta, r->eps_now, NULL);
    r->session_step = m.step;
    rc = trim_metrics(r, m.step, &last);
  }
  /* Secure: the checkpoint of step t is written before row t (dpgd_run_step), so a kill
   * between the two leaves the rows up to t - 1; the checkpointed row completes them. */
  if (!rc && r->secure && m.step > 0 && last + 1 == m.step) {
    rc = metrics_put(r, r->row);
    r->row_restored = 1;
    last = m.step;
  }
  if (!rc && r->secure && last != m.step)
    rc = DPGD_FAIL(DPGD_EFORMAT,
                   "%s/metrics.csv ends at step %llu but the checkpoint is at step %llu",
                   r->dir, (unsigned long long)last, (unsigned long long)m.step);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  *out = r;
  return DPGD_OK;
}

/* ---- the step ---- */

static double lr_at(const dpgd_run *r, size_t t)
{
  if (r->cfg.train_lr_schedule == DPGD_LR_COSINE && r->plan.steps > 1)
    return r->cfg.train_lr * 0.5 *
           (1 + cos(M_PI * (double)(t - 1) / (double)(r->plan.steps - 1)));
  return r->cfg.train_lr;
}

static void put_num(FILE *f, double v)
{
  if (isfinite(v)) fprintf(f, "%.10g", v);
}

/* A privacy number (eps, mu): 10 digits, rounded up (the private direction). */
static void put_up(FILE *f, double v)
{
  put_num(f, dpgd_round_digits(v, 10, 1));
}

/* Appends to the metrics row in r->row at *len; *len >= ROW_MAX says it did not fit. */
static void row_put(dpgd_run *r, size_t *len, const char *fmt, ...)
{
  if (*len >= sizeof r->row) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(r->row + *len, sizeof r->row - *len, fmt, ap);
  va_end(ap);
  *len += k > 0 ? (size_t)k : 0;
}

/* ",v" in the row; v empty when not finite; up: a privacy number (as put_up). */
static void row_num(dpgd_run *r, size_t *len, double v, int up)
{
  if (up) v = dpgd_round_digits(v, 10, 1);
  row_put(r, len, isfinite(v) ? ",%.10g" : ",", v);
}

static int test_accuracy(dpgd_run *r, double *acc)
{
  size_t correct = 0;
  int rc = dpgd_model_evaluate(r->model, r->test, 0, r->test->n, r->cfg.model_threads, NULL, &correct, NULL);
  if (!rc) *acc = (double)correct / (double)r->test->n;
  return rc;
}

int dpgd_run_done(const dpgd_run *r) { return r->m.step >= r->plan.steps; }

/* Composes the metrics row of step t in r->row (a secure run checkpoints it before
 * writing it). diag: the non-private diagnostic columns are computed (else empty). */
static int compose_row(dpgd_run *r, size_t t, double test_acc, double lr, int diag)
{
  size_t len = 0;
  row_put(r, &len, "%zu", t);
  for (int k = 0; k < DPGD_ACCT_N_METHODS; k++) row_num(r, &len, r->eps_now[k], 1);
  row_num(r, &len, dpgd_acct_gdp_mu(r->acct), 1);
  row_num(r, &len, test_acc, 0);
  row_num(r, &len, r->last_query, 0);
  row_num(r, &len, lr, 0);
  if (r->cfg.output_diagnostics && diag) {
    size_t correct = 0, n = r->m.n;
    double loss = 0;
    int rc = dpgd_model_evaluate(r->model, r->train, 0, n, r->cfg.model_threads, NULL,
                                 &correct, &loss);
    if (rc) return rc;
    row_put(r, &len, ",%.10g,%.10g,%zu", loss / (double)n, (double)correct / (double)n,
            dpgd_ledger_active(r->ledger));
  } else if (r->cfg.output_diagnostics) {
    row_put(r, &len, ",,,");
  }
  row_put(r, &len, "\n");
  if (len >= sizeof r->row)
    return DPGD_FAIL(DPGD_ERANGE, "metrics row of step %zu longer than %d bytes", t, ROW_MAX);
  return DPGD_OK;
}

/* Emits the row of step t: research mode writes it (a checkpoint follows if due, or
 * always when force_ckpt); secure mode checkpoints first (see below). */
static int emit_row(dpgd_run *r, size_t t, int force_ckpt)
{
  if (!r->secure) {
    /* Research mode: a resume replays the steps after the checkpoint bit for bit (the
     * streams' states are in it), so rows may reach the disk before their checkpoint. */
    int rc = metrics_put(r, r->row);
    if (rc) return rc;
    size_t ce = r->cfg.output_checkpoint_every;
    if (force_ckpt || (ce && t % ce == 0 && t < r->plan.steps)) return write_checkpoint(r);
    return DPGD_OK;
  }
  /* Secure mode: the noise cannot be replayed, so a step redone after a resume is a NEW
   * Gaussian release of the same step (and, under Algorithm 7, a spend the checkpointed
   * ledger never saw). Releasing step t twice would be a composition the accountant does
   * not count. Hence a durable checkpoint covering step t (parameters, ledger,
   * accountant, best iterate, and this row's text) is written after EVERY step
   * (output.checkpoint_every is ignored) and BEFORE anything of step t is emitted: its
   * metrics row (eps, test accuracy, the noisy query), and the progress line, which the
   * caller prints after this returns. Why that is enough: a kill before the checkpoint's
   * rename loses a step of which nothing was emitted (the checkpoint is training state
   * like the ledger, not a release), so the resume redoes it with fresh noise and releases
   * it once; a kill after the rename resumes AFTER step t, never redoing it, and the
   * resume writes the checkpointed row if the kill cut it off (dpgd_run_resume), so the
   * row is the very text already (partly) emitted and exactly one row per step remains.
   * The accountant in the checkpoint therefore counts exactly the emitted releases. */
  int rc = write_checkpoint(r);
  if (rc) return rc;
  return metrics_put(r, r->row);
}

/* Step t's update left non-finite parameters. The step's noisy sum was computed, and
 * the divergence itself (and everything printed about it) is a function of it: the
 * step is a release. It is accounted, its row written and the state checkpointed (a
 * resume refuses a diverged run, so the step is never redone), then the run stops. */
static int diverged(dpgd_run *r, size_t t, double lr)
{
  r->m.step = t;
  r->m.diverged = 1;
  r->last_query = NAN;
  dpgd_plan_epsilons(r->acct, r->plan.delta, r->eps_now, NULL);
  int rc = compose_row(r, t, NAN, lr, 0);
  if (!rc) rc = emit_row(r, t, 1);
  if (rc) return rc;
  return DPGD_FAIL(DPGD_ERANGE,
                   "training diverged: parameters not finite after step %zu (lower train.lr); "
                   "the step was released and is accounted: eps %.6g (exact, delta %g) in "
                   "metrics.csv",
                   t, dpgd_round_digits(r->eps_now[DPGD_ACCT_EXACT], 6, 1), r->plan.delta);
}

int dpgd_run_checkpoint(dpgd_run *r) { return write_checkpoint(r); }

int dpgd_run_step(dpgd_run *r)
{
  if (dpgd_run_done(r)) return DPGD_FAIL(DPGD_EINVAL, "the run has already done its steps");
  size_t t = (size_t)r->m.step + 1, n = r->m.n;
  const dpgd_plan *p = &r->plan;

  /* Clipped sum under the caps of the ledger. Zero active points is a normal state:
   * the sum is then zero and the update below is noise only (divided by the public n,
   * never by the active count). */
  dpgd_ledger_caps(r->ledger, r->caps);
  int rc = dpgd_model_clipped_grad_sum(r->model, r->ws, r->train, r->caps, r->sum, NULL,
                                       r->post);
  if (!rc) rc = dpgd_ledger_spend(r->ledger, r->caps, r->post);
  if (rc) return rc;
#ifndef NDEBUG
  rc = dpgd_ledger_check(r->ledger);
  if (rc) return rc;
#endif
  /* ONE Gaussian draw N(0, sigma^2 C^2 I) on the sum. */
  rc = dpgd_rng_gaussian_add(r->rng_step, p->sigma * p->clip, r->sum, r->P);
  if (rc) return rc;
  r->m.noise_draws++;
  double lr = lr_at(r, t), scale = lr / (double)n;
  float *theta = dpgd_model_params(r->model);
  int finite = 1;
  for (size_t j = 0; j < r->P; j++) {
    theta[j] = (float)((double)theta[j] - scale * r->sum[j]);
    finite &= isfinite(theta[j]);
  }
  rc = dpgd_plan_add_step(r->acct, p, t);
  if (rc) return rc;
  if (!finite) return diverged(r, t, lr);

  /* Private stopping: noisy count of correct training predictions, std tau. */
  r->last_query = NAN;
  if (dpgd_plan_query_due(p, t)) {
    size_t correct = 0;
    double noise;
    rc = dpgd_model_evaluate(r->model, r->train, 0, n, r->cfg.model_threads, NULL, &correct, NULL);
    if (!rc) rc = dpgd_rng_gaussian(r->rng_query, p->tau, &noise);
    if (!rc) rc = dpgd_plan_add_query(r->acct, p);
    if (rc) return rc;
    r->m.noise_draws++;
    r->m.queries_done++;
    double noisy = ((double)correct + noise) / (double)n;
    r->last_query = noisy;
    if (noisy > r->m.best_noisy) {
      r->m.best_noisy = noisy;
      r->m.best_step = t;
      memcpy(r->best, theta, r->P * sizeof *theta);
    }
  }
  r->m.step = t;
  dpgd_plan_epsilons(r->acct, p->delta, r->eps_now, NULL);

  double test_acc = NAN;
  size_t every = r->cfg.train_eval_every;
  if ((every && t % every == 0) || t == p->steps) {
    rc = test_accuracy(r, &test_acc);
    if (rc) return rc;
    r->m.last_test_acc = test_acc;
  }

  rc = compose_row(r, t, test_acc, lr, 1);
  if (!rc) rc = emit_row(r, t, 0);
  return rc;
}

/* ---- the end of a run ---- */

/* points.csv: each point's spend and its odometer report (train/RUN_FORMAT.md): the
 * level its total (training spend plus the stopping queries, which touch every point)
 * reached, that level's share of delta, and the guarantee valid at the realised level. */
static int write_points(dpgd_run *r)
{
  char p[PATHLEN];
  path_in(p, r, "points.csv");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len); /* then written atomically */
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  const dpgd_plan *pl = &r->plan;
  const dpgd_ledger *l = r->ledger;
  double q = (double)r->m.queries_done / (pl->tau * pl->tau) * (1 + 0x1p-50);
  /* spend_frac: of B_norm, or of the steps * C^2 a plain run charges at most. */
  double budget = pl->filtered ? l->budget : (double)pl->steps * pl->clip * pl->clip;
  fprintf(f, "# SENSITIVE: per-point privacy spend of the training data. Each row may be "
             "disclosed only to the owner of that point; never publish or ship this file.\n"
             "index,label,spend,spend_frac,active,level,delta_level,mu_i,eps_i\n");
  int rc = DPGD_OK;
  for (size_t i = 0; i < l->n && !rc; i++) {
    size_t level = 0;
    double mu = 0, eps = 0;
    double mu2 = (dpgd_ledger_point_mu2(l, i, pl->sigma) + q) * (1 + 0x1p-50);
    rc = dpgd_odometer_report(&pl->odometer, mu2, &level, &mu, &eps);
    if (rc) break;
    fprintf(f, "%zu,%u,%.17g,", i, (unsigned)r->train->labels[i], l->spend[i]);
    put_num(f, l->spend[i] / budget);
    fprintf(f, ",%d,%zu,", l->spend[i] < l->budget, level);
    put_up(f, dpgd_odometer_delta(&pl->odometer, level));
    fputc(',', f);
    put_up(f, mu);
    fputc(',', f);
    put_up(f, eps);
    fputc('\n', f);
  }
  if (fclose(f) && !rc) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  if (!rc) rc = dpgd_write_atomic(p, text, len);
  free(text);
  return rc;
}

static void json_num(FILE *f, double v)
{
  if (isfinite(v)) fprintf(f, "%.10g", v);
  else fputs("null", f);
}

static int write_summary(dpgd_run *r, double test_acc)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for summary.json");
  const dpgd_plan *p = &r->plan;
  fprintf(f, "{\"dpgd_version\": \"%s\", \"model\": \"%s\", \"activation\": \"%s\",\n",
          DPGD_VERSION, r->cfg.model_type,
          r->cfg.model_activation == DPGD_ACT_TANH ? "tanh" : "relu");
  fprintf(f, " \"algorithm\": \"%s\", \"n_train\": %zu, \"n_test\": %zu,\n",
          p->filtered ? "filtered" : "plain", r->train->n, r->test->n);
  fprintf(f, " \"steps\": %zu, \"selected_step\": %llu, \"queries\": %llu,\n", p->steps,
          (unsigned long long)(r->m.queries_done ? r->m.best_step : r->m.step),
          (unsigned long long)r->m.queries_done);
  fprintf(f, " \"sigma\": ");
  json_num(f, p->sigma);
  fprintf(f, ", \"clip\": ");
  json_num(f, p->clip);
  fprintf(f, ", \"budget\": ");
  json_num(f, p->filtered ? p->budget : (double)p->steps * p->clip * p->clip);
  fprintf(f, ", \"tau\": ");
  json_num(f, p->queries ? p->tau : NAN);
  fprintf(f, ",\n \"delta\": %.10g, \"mu\": ", p->delta);
  json_num(f, dpgd_round_digits(dpgd_acct_gdp_mu(r->acct), 10, 1));
  fprintf(f, ",\n \"eps\": {");
  for (int k = 0; k < DPGD_ACCT_N_METHODS; k++) {
    fprintf(f, "%s\"%s\": ", k ? ", " : "", dpgd_acct_method_name((dpgd_acct_method)k));
    json_num(f, dpgd_round_digits(r->eps_now[k], 10, 1));
  }
  fprintf(f, "},\n \"odometer\": {\"level_mu2\": %.17g, \"levels\": %zu, \"delta_split\": [",
          p->odometer.level_mu2, p->odometer.levels);
  for (size_t m = 1; m <= p->odometer.levels; m++)
    fprintf(f, "%s%.17g", m > 1 ? ", " : "", dpgd_odometer_delta(&p->odometer, m));
  fprintf(f, "]},\n \"test_acc\": ");
  json_num(f, test_acc);
  fprintf(f, ", \"seed\": %llu, \"rng\": \"%s\",\n", (unsigned long long)r->cfg.train_seed,
          dpgd_rng_mode_name(r->cfg.train_rng));
  if (!r->secure) fprintf(f, " \"caveat\": \"%s\",\n", DPGD_RESEARCH_CAVEAT);
  /* Timing depends on how many points were still active (inactive points are skipped
   * unless train.constant_time): data-dependent, so not covered by eps. */
  fprintf(f, " \"nonprivate\": {\"wall_s\": %.3f, \"constant_time\": %s}}\n", r->m.wall_s,
          r->cfg.train_constant_time ? "true" : "false");
  fclose(f);
  char path[PATHLEN];
  path_in(path, r, "summary.json");
  int rc = dpgd_write_atomic(path, text, len);
  free(text);
  return rc;
}

int dpgd_run_finish(dpgd_run *r)
{
  if (!dpgd_run_done(r)) return DPGD_FAIL(DPGD_EINVAL, "the run has not done its steps");
  int rc = write_checkpoint(r); /* the final state, ledger included */
  if (rc) return rc;
  /* The selected model: the best noisy iterate, or the last one without queries. */
  if (r->m.queries_done)
    memcpy(dpgd_model_params(r->model), r->best, r->P * sizeof(float));
  double test_acc = r->m.last_test_acc;
  if (r->m.queries_done) {
    rc = test_accuracy(r, &test_acc);
    if (rc) return rc;
  }
  char p[PATHLEN];
  path_in(p, r, "model.bin");
  rc = dpgd_model_save(r->model, p);
  if (!rc) rc = write_points(r);
  if (!rc) rc = write_summary(r, test_acc);
  return rc;
}

/* ---- read access ---- */

const dpgd_plan *dpgd_run_plan(const dpgd_run *r) { return &r->plan; }
const dpgd_config *dpgd_run_config(const dpgd_run *r) { return &r->cfg; }
const dpgd_ledger *dpgd_run_ledger(const dpgd_run *r) { return r->ledger; }
size_t dpgd_run_step_index(const dpgd_run *r) { return (size_t)r->m.step; }
double dpgd_run_eps_now(const dpgd_run *r) { return r->eps_now[DPGD_ACCT_EXACT]; }
uint64_t dpgd_run_noise_draws(const dpgd_run *r) { return r->m.noise_draws; }
uint64_t dpgd_run_releases(const dpgd_run *r) { return dpgd_acct_n_releases(r->acct); }
size_t dpgd_run_redone(const dpgd_run *r) { return r->redone; }
int dpgd_run_row_restored(const dpgd_run *r) { return r->row_restored; }

const float *dpgd_run_params(const dpgd_run *r, size_t *n_params)
{
  if (n_params) *n_params = r->P;
  return dpgd_model_params_const(r->model);
}

void dpgd_run_progress(const dpgd_run *r, char *buf, size_t len)
{
  double el = now_s() - ((double)r->t0.tv_sec + 1e-9 * r->t0.tv_nsec);
  uint64_t here = r->m.step - r->session_step; /* steps of this session: what el measured */
  double per = here ? el / (double)here : 0;
  double eta = per * (double)(r->plan.steps - r->m.step);
  char acc[32] = "-";
  if (isfinite(r->m.last_test_acc)) snprintf(acc, sizeof acc, "%.4f", r->m.last_test_acc);
  snprintf(buf, len, "step %llu/%zu  ETA %dm%02ds  eps %.4g (exact, delta %g)  test acc %s",
           (unsigned long long)r->m.step, r->plan.steps, (int)(eta / 60), (int)fmod(eta, 60),
           dpgd_round_digits(r->eps_now[DPGD_ACCT_EXACT], 4, 1), r->plan.delta, acc);
}
