/* run_resume.c -- checkpoints of a run and --resume: the checkpoint written atomically,
 * metrics.csv trimmed back to the checkpoint, and the state restored so that a research
 * run replays bit for bit and a secure run never releases a step twice. */
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

#include "run_internal.h"

/* ---- checkpoints ---- */

/* The states of the run's research streams, one after another in *buf (malloc):
 * step, query, then sample (poisson runs); sizes in len[]. Secure streams have none. */
static int rng_states(const dpgd_run *r, void **buf, size_t len[3])
{
  const dpgd_rng *g[3] = {r->rng_step, r->rng_query, r->rng_sample};
  size_t total = 0;
  for (int k = 0; k < 3; k++) total += len[k] = g[k] ? dpgd_rng_state_size(g[k]) : 0;
  *buf = malloc(total ? total : 1);
  if (!*buf) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the checkpoint");
  for (int k = 0, at = 0; k < 3; at += (int)len[k], k++)
    if (g[k]) dpgd_rng_state_get(g[k], (char *)*buf + at);
  return DPGD_OK;
}

int dpgd_run_write_checkpoint(dpgd_run *r)
{
  void *acct_buf = NULL, *filt_buf = NULL, *rng_buf = NULL;
  size_t acct_len = 0, filt_len = 0, rl[3];
  int rc = dpgd_acct_serialize(r->acct, &acct_buf, &acct_len);
  if (!rc) rc = dpgd_ledger_save(r->ledger, &filt_buf, &filt_len);
  if (!rc) rc = rng_states(r, &rng_buf, rl);
  /* The metrics rows up to this step reach the disk before the checkpoint does. */
  if (!rc && r->metrics >= 0 && dpgd_file_fsync(r->metrics))
    rc = DPGD_FAIL(DPGD_EIO, "cannot write %s/metrics.csv: %s", r->dir, strerror(errno));
  if (rc) {
    free(acct_buf);
    free(filt_buf);
    free(rng_buf);
    return rc;
  }
  r->m.wall_s =
      r->wall_before + (dpgd_run_now_s() - ((double)r->t0.tv_sec + 1e-9 * r->t0.tv_nsec));
  const char *rng = rng_buf;
  dpgd_ckpt_section s[16] = {
      {"meta", &r->m, sizeof r->m},
      {"params", dpgd_model_params_const(r->model), r->P * sizeof(float)},
      {"best", r->best, r->P * sizeof(float)},
      {"filter", filt_buf, filt_len}, /* the ledger; older checkpoints: "spend", s(i) */
      {"rngstep", rng, rl[0]},
      {"rngquery", rng + rl[0], rl[1]},
      {"acct", acct_buf, acct_len},
      {"data", &r->data_fp, sizeof r->data_fp},
      {"replay", r->replay, strlen(r->replay)},
  };
  size_t n_sections = 9;
  if (r->secure) /* secure runs only: see dpgd_run_step */
    s[n_sections++] = (dpgd_ckpt_section){"row", r->row, strlen(r->row)};
  if (r->rng_sample) /* poisson runs only */
    s[n_sections++] = (dpgd_ckpt_section){"rngsamp", rng + rl[0] + rl[1], rl[2]};
  if (r->velocity) /* train.momentum > 0 only */
    s[n_sections++] = (dpgd_ckpt_section){"velocity", r->velocity, r->P * sizeof(double)};
  if (r->ledger->hold_idx) /* filter.hold runs only (DPSGD_FILTER.md section 3) */
    s[n_sections++] =
        (dpgd_ckpt_section){"hold", r->ledger->hold_idx, r->m.n * sizeof *r->ledger->hold_idx};
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "checkpoint.bin");
  rc = dpgd_ckpt_write(p, r->config_hash, s, n_sections);
  free(rng_buf);
  free(acct_buf);
  free(filt_buf);
  return rc;
}

/* The step of a metrics row, which must be prev + 1 and followed by a comma; 0, or 4
 * (damaged) with *s untouched. */
static int metrics_row_step(const char *line, uint64_t prev, uint64_t *s)
{
  char *end = NULL;
  if (line[0] < '0' || line[0] > '9') return 4;
  errno = 0;
  unsigned long long v = strtoull(line, &end, 10);
  if (errno || *end != ',' || v != prev + 1) return 4;
  *s = v;
  return 0;
}

/* The one-line refusal of a metrics.csv that does not match the checkpoint. */
static int metrics_damaged(const char *p, int why, uint64_t lineno, uint64_t last,
                           uint64_t step)
{
  if (why == 3)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "%s ends at step %llu but the checkpoint is at step %llu: rows are "
                     "missing (the file was cut or edited); restore it, or start a new run",
                     p, (unsigned long long)last, (unsigned long long)step);
  return DPGD_FAIL(DPGD_EFORMAT,
                   "%s line %llu is not %s: the file was edited or damaged after the run "
                   "wrote it; restore it, or start a new run",
                   p, (unsigned long long)lineno,
                   why == 1   ? "this run's header"
                   : why == 2 ? "complete (a partial line with more after it)"
                              : "the next step's row");
}

/* Keeps the header and the rows of steps <= step (rows after a checkpoint are written
 * again by the resumed run; their count goes to r->redone), then reopens for appending.
 * *last: the step of the last row kept (0: none). A secure run with rows after its
 * checkpoint is refused, file untouched: those steps were released and cannot be
 * replayed (only a run written before secure runs checkpointed every step has them). */
/* Copies metrics.csv's header and rows of steps <= step from f to mem, checking each
 * line (metrics_row_step); counts the rows after step in r->redone (*after: the first).
 * Returns 0 or the damage code, *lineno the line it concerns. */
static int scan_rows(dpgd_run *r, FILE *f, FILE *mem, uint64_t step, uint64_t *last,
                     uint64_t *after, uint64_t *lineno)
{
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int first = 1, bad = 0;
  uint64_t prev = 0;
  while (!bad && (len = getline(&line, &cap, f)) > 0) {
    ++*lineno;
    if (line[len - 1] != '\n') {
      bad = getc(f) != EOF ? 2 : 0; /* a partial line is the kill's only if it is last */
      break;
    }
    uint64_t s = 0;
    if (first) bad = strcmp(line, dpgd_run_metrics_header(r->cfg.output_diagnostics)) ? 1 : 0;
    else bad = metrics_row_step(line, prev, &s);
    if (bad) break;
    prev = s;
    if (s > step) {
      if (!r->redone++) *after = s;
      continue;
    }
    if (!first) *last = s;
    first = 0;
    fputs(line, mem);
  }
  free(line);
  return bad ? bad : first ? 3 : 0;
}

static int trim_metrics(dpgd_run *r, uint64_t step, uint64_t *last)
{
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "metrics.csv");
  FILE *f = fopen(p, "r");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", p, strerror(errno));
  char *text = NULL;
  size_t tlen = 0;
  FILE *mem = open_memstream(&text, &tlen);
  uint64_t after = 0, lineno = 0; /* first dropped step; line of a damage */
  *last = 0;
  r->redone = 0;
  int bad = mem ? scan_rows(r, f, mem, step, last, &after, &lineno) : 0;
  fclose(f);
  if (!mem) return DPGD_FAIL(DPGD_ENOMEM, "no memory to rewrite %s", p);
  fclose(mem);
  /* Rows the checkpoint says were written must all be there: research rows reach the
   * disk before their checkpoint, secure rows up to the step before it (its own row is
   * in the checkpoint). Anything else is a file that was cut or edited. */
  if (!bad && (r->secure ? *last + 1 < step : *last < step)) bad = 3;
  if (bad) {
    free(text);
    return metrics_damaged(p, bad, lineno, *last, step);
  }
  /* Research: rows after the checkpoint were released; replaying them is harmless only
   * if it reproduces them bit for bit (same noise, same gradients), which needs the
   * same build, BLAS kernel and chunking (not the thread or MPI rank count: the
   * reduction tree makes them irrelevant). Otherwise the replay would
   * release the same noise on other values: refused, file untouched. */
  if (!r->secure && r->redone && strcmp(r->replay, r->replay_ckpt)) {
    free(text);
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: steps %llu.. were released after the last checkpoint (step %llu) "
                     "by a dpgd running as [%s]; this one runs as [%s], so replaying them "
                     "would release their noise again on different values: resume where "
                     "the run started (same build and OPENBLAS_CORETYPE) or start a new run",
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

/* The run's config.ini, loaded under the run's lock, and the run set up again from it. */
static int reopen_run(dpgd_run *r, const char *run_dir)
{
  char p[PATHLEN];
  dpgd_config_defaults(&r->cfg);
  dpgd_run_path_in(p, r, "config.ini");
  int rc = dpgd_config_load(&r->cfg, p);
  if (!rc) rc = dpgd_run_lock_dir(r);
  /* Under the lock: a process that held it may have finished the run meanwhile. */
  dpgd_run_path_in(p, r, "summary.json");
  if (!rc && dpgd_run_file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds a finished run; nothing to resume", r->dir);
  if (!rc) {
    snprintf(r->cfg.output_dir, sizeof r->cfg.output_dir, "%s", run_dir);
    r->config_hash = dpgd_config_hash(&r->cfg);
    rc = dpgd_run_setup(r);
  }
  return rc;
}

/* The checkpoint's "meta" section, which must describe this run and one that can go on. */
static int check_identity(const dpgd_run *r, const dpgd_ckpt *ck, const char *p, run_meta *m)
{
  const void *d;
  size_t n = r->train ? r->train->n : 0;
  int rc = dpgd_ckpt_get(ck, "meta", sizeof *m, &d, NULL);
  if (rc) return rc;
  memcpy(m, d, sizeof *m);
  if (m->n != n || m->n_params != r->P || m->steps != r->plan.steps ||
      m->sigma != r->plan.sigma || m->budget != r->plan.budget || m->step > m->steps)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s does not match this run (dataset size, model, steps, "
                     "sigma or budget differ)",
                     p);
  if (m->diverged)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s diverged at step %llu (its parameters are not finite) and cannot be "
                     "continued; start a new run with a lower %s",
                     r->dir, (unsigned long long)m->step, DPGD_CONFIG_KEY(train_lr));
  return DPGD_OK;
}

/* The optional sections: the replay identity, and the fingerprint of the data. */
static int check_replay_and_data(dpgd_run *r, const dpgd_ckpt *ck, const char *p)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(ck, "replay", 0, &d, &len) == DPGD_OK && len < sizeof r->replay_ckpt) {
    memcpy(r->replay_ckpt, d, len);
    r->replay_ckpt[len] = '\0';
  }
  dpgd_error_clear(); /* a checkpoint without "replay" is not an error here */
  /* Checkpoints of dpgd before the "data" section have no fingerprint to compare. */
  if (dpgd_ckpt_get(ck, "data", 0, &d, &len) == DPGD_OK) {
    uint64_t fp = 0;
    if (len == sizeof fp) memcpy(&fp, d, sizeof fp);
    if (len != sizeof fp || fp != r->data_fp)
      return DPGD_FAIL(DPGD_EFORMAT,
                       "checkpoint %s was written on other data: the training or test set "
                       "found now (%s = '%s') differs from the run's, though of the "
                       "same size",
                       p, DPGD_CONFIG_KEY(data_dir), r->cfg.data_dir);
  } else {
    dpgd_error_clear();
  }
  return DPGD_OK;
}

/* The ledger: the "filter" section (the ledger's filter, dpgd_filter_serialize), or the
 * "spend" section (s(i) only) of a full-batch checkpoint written before it. Never reset:
 * a checkpoint with neither, with a filter that does not load or match the run, or with
 * a "spend" section for a ledger that holds more than s(i), is refused. */
static int restore_ledger(dpgd_run *r, const dpgd_ckpt *ck, const char *p)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(ck, "filter", 0, &d, &len) == DPGD_OK) {
    if (dpgd_ledger_load(r->ledger, d, len))
      return DPGD_FAIL(DPGD_EFORMAT,
                       "checkpoint %s: its privacy ledger cannot be restored (%s); resuming "
                       "without it would reset every point's spend, so it is refused",
                       p, dpgd_error_last());
    return DPGD_OK;
  }
  if (dpgd_ckpt_get(ck, "spend", 0, &d, &len) != DPGD_OK)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s has no privacy ledger (neither a 'filter' nor a 'spend' "
                     "section); resuming would reset every point's spend, so it is refused",
                     p);
  if (dpgd_ledger_load_spend(r->ledger, d, len))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s: %s; the privacy ledger cannot be restored, so it is "
                     "refused",
                     p, dpgd_error_last());
  return DPGD_OK;
}

/* The held bounds of filter.hold (DPSGD_FILTER.md section 3): without them the resumed
 * run would clip and charge otherwise than the uninterrupted one, so it is refused. */
static int restore_hold(dpgd_run *r, const dpgd_ckpt *ck, const char *p)
{
  const void *d;
  size_t len;
  if (!r->ledger->hold_idx) return DPGD_OK;
  int rc = dpgd_ckpt_get(ck, "hold", 0, &d, &len);
  if (!rc) rc = dpgd_ledger_hold_load(r->ledger, d, len);
  if (rc)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s: the held bounds of %s cannot be restored (%s); start "
                     "the run again",
                     p, DPGD_CONFIG_KEY(filter_hold), dpgd_error_last());
  return DPGD_OK;
}

/* Parameters, best parameters, ledger, the RNG streams and the accountant. */
static int restore_state(dpgd_run *r, const dpgd_ckpt *ck, const char *p)
{
  const void *d;
  size_t len;
  int rc = dpgd_ckpt_get(ck, "params", r->P * sizeof(float), &d, NULL);
  if (!rc) memcpy(dpgd_model_params(r->model), d, r->P * sizeof(float));
  if (!rc) rc = dpgd_ckpt_get(ck, "best", r->P * sizeof(float), &d, NULL);
  if (!rc) memcpy(r->best, d, r->P * sizeof(float));
  if (!rc && r->velocity) rc = dpgd_ckpt_get(ck, "velocity", r->P * sizeof(double), &d, NULL);
  if (!rc && r->velocity) memcpy(r->velocity, d, r->P * sizeof(double));
  if (!rc) rc = restore_ledger(r, ck, p);
  if (!rc) rc = restore_hold(r, ck, p);
  if (!rc) rc = dpgd_ckpt_get(ck, "rngstep", 0, &d, &len);
  if (!rc) rc = dpgd_rng_state_set(r->rng_step, d, len);
  if (!rc) rc = dpgd_ckpt_get(ck, "rngquery", 0, &d, &len);
  if (!rc) rc = dpgd_rng_state_set(r->rng_query, d, len);
  if (!rc && r->rng_sample) rc = dpgd_ckpt_get(ck, "rngsamp", 0, &d, &len);
  if (!rc && r->rng_sample) rc = dpgd_rng_state_set(r->rng_sample, d, len);
  if (!rc) rc = dpgd_ckpt_get(ck, "acct", 0, &d, &len);
  if (!rc) rc = dpgd_acct_deserialize(&r->acct, d, len);
  return rc;
}

/* A secure run's checkpoint carries the metrics row of its step. */
static int restore_secure_row(dpgd_run *r, const dpgd_ckpt *ck, const char *p)
{
  const void *d;
  size_t len;
  if (dpgd_ckpt_get(ck, "row", 0, &d, &len))
    return DPGD_FAIL(DPGD_EFORMAT,
                     "checkpoint %s has no metrics row: a dpgd that did not checkpoint secure "
                     "runs at every step wrote it, and the steps after it may have been "
                     "released; start the run again",
                     p);
  if (len >= sizeof r->row)
    return DPGD_FAIL(DPGD_EFORMAT, "checkpoint %s: metrics row of %zu bytes", p, len);
  memcpy(r->row, d, len);
  r->row[len] = '\0';
  return DPGD_OK;
}

/* The run's counters from the checkpoint, and metrics.csv cut back to its step. */
static int restore_metrics(dpgd_run *r, const run_meta *m)
{
  uint64_t last = 0;
  r->m = *m;
  r->wall_before = m->wall_s;
  dpgd_plan_epsilons(r->acct, r->plan.delta, r->eps_now, NULL);
  r->eps_step = m->step;
  r->session_step = m->step;
  int rc = trim_metrics(r, m->step, &last);
  /* Secure: the checkpoint of step t is written before row t (dpgd_run_step), so a kill
   * between the two leaves the rows up to t - 1; the checkpointed row completes them. */
  if (!rc && r->secure && m->step > 0 && last + 1 == m->step) {
    rc = dpgd_run_metrics_put(r, r->row);
    r->row_restored = 1;
    last = m->step;
  }
  if (!rc && r->secure && last != m->step)
    rc = DPGD_FAIL(DPGD_EFORMAT,
                   "%s/metrics.csv ends at step %llu but the checkpoint is at step %llu",
                   r->dir, (unsigned long long)last, (unsigned long long)m->step);
  return rc;
}

int dpgd_run_resume(dpgd_run **out, const char *run_dir)
{
  *out = NULL;
  if (dpgd_config_check_path(run_dir, "run directory")) return DPGD_EINVAL;
  dpgd_run *r = calloc(1, sizeof *r);
  if (!r) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the run");
  r->lock_fd = r->metrics = -1;
  snprintf(r->dir, sizeof r->dir, "%s", run_dir);
  char p[PATHLEN];
  int rc = reopen_run(r, run_dir);
  dpgd_ckpt *ck = NULL;
  /* A secure run's checkpoint write cut off by the kill: it holds the step that was never
   * emitted and is now redone with fresh noise; leave no copy of it behind. */
  dpgd_run_path_in(p, r, "checkpoint.bin.tmp");
  if (!rc && r->secure) unlink(p);
  dpgd_run_path_in(p, r, "checkpoint.bin");
  if (!rc) rc = dpgd_ckpt_read(&ck, p, r->config_hash);
  run_meta m;
  if (!rc) rc = check_identity(r, ck, p, &m);
  if (!rc) rc = check_replay_and_data(r, ck, p);
  if (!rc) rc = restore_state(r, ck, p);
  if (!rc && r->secure) rc = restore_secure_row(r, ck, p);
  dpgd_ckpt_free(ck);
  if (!rc) rc = restore_metrics(r, &m);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  *out = r;
  return DPGD_OK;
}
