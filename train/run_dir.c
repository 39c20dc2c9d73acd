/* run_dir.c -- the run directory of train/RUN_FORMAT.md: paths and the lock, the
 * metrics.csv header and rows, points.csv (the sensitive per-point report), summary.json
 * and the end of a run (dpgd_run_finish). */
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

#ifndef DPGD_VERSION
#define DPGD_VERSION "unknown"
#endif

double dpgd_run_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void dpgd_run_path_in(char *buf, const dpgd_run *r, const char *name)
{
  snprintf(buf, PATHLEN, "%s/%s", r->dir, name);
}

int dpgd_run_file_exists(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0;
}

/* mkdir -p of the run directory. */
int dpgd_run_make_dirs(const char *dir)
{
  char failed[DPGD_CONFIG_PATH_MAX];
  if (dpgd_path_mkdirs(dir, 0755, failed, sizeof failed) == 0) return DPGD_OK;
  return DPGD_FAIL(DPGD_EIO, "cannot create directory %s: %s", failed, strerror(errno));
}

/* Takes <dir>/lock (flock, exclusive, not waiting) for as long as the run is open: two
 * processes writing one run directory would interleave its checkpoints and ledger. The
 * kernel drops the lock when the holder exits, killed or not. */
int dpgd_run_lock_path(const char *dir, int *fd)
{
  char p[PATHLEN];
  snprintf(p, sizeof p, "%s/lock", dir);
  *fd = dpgd_file_open_write(p, 0);
  if (*fd < 0) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", p, strerror(errno));
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return DPGD_OK;
  int e = errno;
  close(*fd);
  *fd = -1;
  if (e == EWOULDBLOCK)
    return DPGD_FAIL(DPGD_EINVAL, "%s is in use by another dpgd process (it holds %s)", dir, p);
  return DPGD_FAIL(DPGD_EIO, "cannot lock %s: %s", p, strerror(e));
}

int dpgd_run_lock_dir(dpgd_run *r) { return dpgd_run_lock_path(r->dir, &r->lock_fd); }

/* Fingerprint of the data a run trains and tests on (CRC-32 of the training pixels and
 * labels, high half; of the test set, low half), kept in the checkpoint so that a resume
 * that finds other data of the same size (data.dir is not part of the config hash) is
 * refused instead of attaching the ledger to other people's records. */

const char *dpgd_run_metrics_header(int diagnostics)
{
  return diagnostics ? "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,"
                       "mu,test_acc,query_acc_noisy,lr,diag_train_loss,diag_train_acc,"
                       "diag_active\n"
                     : "step,eps_exact,eps_zcdp,eps_rdp_classic,eps_rdp_balle,eps_rdp_optimal,"
                       "mu,test_acc,query_acc_noisy,lr\n";
}

/* Appends text to metrics.csv (no fsync: write_checkpoint syncs the rows it covers). */
int dpgd_run_metrics_put(dpgd_run *r, const char *text)
{
  if (dpgd_file_write_all(r->metrics, text, strlen(text)))
    return DPGD_FAIL(DPGD_EIO, "cannot write %s/metrics.csv: %s", r->dir, strerror(errno));
  return DPGD_OK;
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

/* ",v" in the row; v empty when not finite; up: a privacy number (as dpgd_report_up). */
static void row_num(dpgd_run *r, size_t *len, double v, int up)
{
  if (up) v = dpgd_round_digits(v, 10, 1);
  row_put(r, len, isfinite(v) ? ",%.10g" : ",", v);
}

/* Composes the metrics row of step t in r->row (a secure run checkpoints it before
 * writing it). diag: the non-private diagnostic columns are computed (else empty). */
int dpgd_run_compose_row(dpgd_run *r, size_t t, double test_acc, double lr, int diag)
{
  size_t len = 0;
  row_put(r, &len, "%zu", t);
  for (int k = 0; k < DPGD_ACCT_N_METHODS; k++)
    row_num(r, &len, r->eps_step == t ? r->eps_now[k] : NAN, 1);
  row_num(r, &len, dpgd_acct_gdp_mu(r->acct), 1);
  row_num(r, &len, test_acc, 0);
  row_num(r, &len, r->last_query, 0);
  row_num(r, &len, lr, 0);
  if (r->cfg.output_diagnostics && diag) {
    size_t correct = 0, n = r->m.n;
    double loss = 0;
    int rc = dpgd_model_evaluate(r->model, r->train, 0, n, r->cfg.model_threads, NULL, &correct,
                                 &loss);
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

/* ---- the end of a run ---- */

/* points.csv: each point's spend and its odometer report (train/RUN_FORMAT.md): the
 * level its total (training spend plus the stopping queries, which touch every point)
 * reached, that level's share of delta, and the guarantee valid at the realised level.
 * Poisson runs state no per-point guarantee (the plan has no levels): those four columns
 * are empty, and the spend counts the steps that sampled the point. */
static int write_points(dpgd_run *r)
{
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "points.csv");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len); /* then written atomically */
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  const dpgd_plan *pl = &r->plan;
  const dpgd_ledger *l = r->ledger;
  double q = (double)r->m.queries_done / (pl->tau * pl->tau) * (1 + 0x1p-50);
  /* spend_frac: of B_norm, or of the steps * C^2 a plain run charges at most. */
  double budget = pl->filtered ? l->budget : (double)pl->steps * pl->clip * pl->clip;
  fprintf(f,
          "# SENSITIVE: per-point privacy spend of the training data. Each row may be "
          "disclosed only to the owner of that point; never publish or ship this file.%s\n"
          "index,label,spend,spend_frac,active,level,delta_level,mu_i,eps_i\n",
          pl->odometer.levels ? " " DPGD_ODOMETER_FAMILY_NOTE : "");
  int rc = DPGD_OK;
  for (size_t i = 0; i < l->n && !rc; i++) {
    double mu2 = (dpgd_ledger_point_mu2(l, i, pl->sigma) + q) * (1 + 0x1p-50);
    double spend = l->spend[i], frac = spend / budget, order;
    if (l->sg) dpgd_ledger_point_rdp(l, i, &spend, &frac, &order); /* DPSGD_FILTER.md 5 */
    fprintf(f, "%zu,%u,%.17g,", i, (unsigned)r->train->labels[i], spend);
    dpgd_report_num(f, frac);
    fprintf(f, ",%d,", dpgd_ledger_point_active(l, i));
    if (pl->odometer.levels) rc = dpgd_report_odometer_cols(f, &pl->odometer, mu2);
    else fputs(",,,", f);
    fputc('\n', f);
  }
  if (fclose(f) && !rc) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  if (!rc) rc = dpgd_write_atomic(p, text, len);
  free(text);
  return rc;
}

/* Filtered DP-SGD: the filter's own guarantee (train/DPSGD_FILTER.md section 4), besides
 * the plain composition of "eps", which stays valid; the smaller one holds. */
static void write_sg_filter(FILE *f, const dpgd_plan *p)
{
  fprintf(f,
          " \"filter\": {\"currency\": \"rdp\", \"full_rate_steps\": %.17g, \"refresh\": %zu, "
          "\"hold\": %.17g, \"grid\": %d, \"orders\": [",
          p->filter_k, p->refresh, p->hold, DPGD_FILTER_SG_GRID);
  for (int j = 0; j < DPGD_FILTER_SG_N_ORDERS; j++)
    fprintf(f, "%s%g", j ? ", " : "", dpgd_filter_sg_orders[j]);
  fprintf(f, "], \"eps\": ");
  dpgd_report_json_num(f, dpgd_round_digits(p->filter_eps, 10, 1));
  fprintf(f, ", \"method\": \"rdp_optimal\", \"exact\": null,\n  \"note\": \"every point is "
             "(a, B_a)-RDP at every order whatever the steps; eps is its optimal conversion "
             "(no exact CF number exists for the filter); the composition in eps also holds, "
             "the smaller is the guarantee\"},\n");
}

/* A discrete run's noise and the theorem its eps comes from (no floating-point caveat:
 * the released integers are exactly what the theorem covers), and the continuous
 * Gaussian's exact eps beside it. */
static void write_discrete(FILE *f, const dpgd_run *r)
{
  const dpgd_plan *p = &r->plan;
  char method[64];
  snprintf(method, sizeof method, "\"eps_method\": \"%s\"",
           dpgd_acct_method_name((dpgd_acct_method)p->report_method));
  dpgd_report_json_dgauss(f, dpgd_plan_theorem(p), p->grid_bits,
                          (unsigned long long)r->dg_step.num, method,
                          dpgd_run_eps_continuous(r));
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
  static const char *const samplers[] = {"full", "poisson", "subset"};
  fprintf(f, " \"algorithm\": \"%s\", \"sampling\": \"%s\", \"sample_rate\": %.17g,\n",
          p->filtered ? "filtered" : "plain", samplers[p->sampling], p->sample_rate);
  if (p->sampling == DPGD_SAMPLING_SUBSET)
    fprintf(f, " \"batch_size\": %zu, \"eps_method\": \"%s\",\n", p->batch_size,
            dpgd_acct_method_name((dpgd_acct_method)p->report_method));
  fprintf(f, " \"n_train\": %zu, \"n_test\": %zu, \"eval_set\": \"%s\",\n", r->train->n,
          r->test->n, r->cfg.data_validation ? "validation" : "test");
  fprintf(f, " \"steps\": %zu, \"selected_step\": %llu, \"queries\": %llu,\n", p->steps,
          (unsigned long long)(r->m.queries_done ? r->m.best_step : r->m.step),
          (unsigned long long)r->m.queries_done);
  fprintf(f, " \"sigma\": ");
  dpgd_report_json_num(f, p->sigma);
  fprintf(f, ", \"clip\": ");
  dpgd_report_json_num(f, p->clip);
  fprintf(f, ", \"budget\": ");
  dpgd_report_json_num(f, p->filtered ? p->budget : (double)p->steps * p->clip * p->clip);
  fprintf(f, ", \"tau\": ");
  dpgd_report_json_num(f, p->queries ? p->tau : NAN);
  fprintf(f, ",\n \"delta\": %.10g, \"mu\": ", p->delta);
  dpgd_report_json_num(f, dpgd_round_digits(dpgd_acct_gdp_mu(r->acct), 10, 1));
  fprintf(f, ",\n \"eps\": {");
  for (int k = 0; k < DPGD_ACCT_N_METHODS; k++) {
    fprintf(f, "%s\"%s\": ", k ? ", " : "", dpgd_acct_method_name((dpgd_acct_method)k));
    dpgd_report_json_num(f, dpgd_round_digits(r->eps_now[k], 10, 1));
  }
  fprintf(f, "},\n");
  if (p->filtered && p->sampling == DPGD_SAMPLING_POISSON) write_sg_filter(f, p);
  fprintf(f, " \"odometer\": ");
  if (p->odometer.levels) dpgd_report_json_odometer(f, &p->odometer);
  else fputs("null", f);
  fprintf(f, ",\n \"test_acc\": ");
  dpgd_report_json_num(f, test_acc);
  fputs(", \"seed\": ", f);
  dpgd_report_json_seed(f, &r->cfg.train_seed);
  fprintf(f, ", \"rng\": \"%s\",\n", dpgd_rng_mode_name(r->cfg.train_rng));
  if (!r->secure) fprintf(f, " \"caveat\": \"%s\",\n", DPGD_RESEARCH_CAVEAT);
  else write_discrete(f, r); /* secure runs are discrete (plan.c) */
  /* Timing depends on how many points were still active or sampled (the others are
   * skipped unless train.constant_time): data-dependent, so not covered by eps. */
  fprintf(f, " \"nonprivate\": {\"wall_s\": %.3f, \"constant_time\": %s}}\n", r->m.wall_s,
          r->cfg.train_constant_time ? "true" : "false");
  fclose(f);
  char path[PATHLEN];
  dpgd_run_path_in(path, r, "summary.json");
  int rc = dpgd_write_atomic(path, text, len);
  free(text);
  return rc;
}

int dpgd_run_finish(dpgd_run *r)
{
  if (!dpgd_run_done(r)) return DPGD_FAIL(DPGD_EINVAL, "the run has not done its steps");
  int rc = dpgd_run_write_checkpoint(r); /* the final state, ledger included */
  if (rc) return rc;
  /* The selected model: the best noisy iterate, or the last one without queries. */
  if (r->m.queries_done) memcpy(dpgd_model_params(r->model), r->best, r->P * sizeof(float));
  double test_acc = r->m.last_test_acc;
  if (r->m.queries_done) {
    rc = dpgd_run_test_accuracy(r, &test_acc);
    if (rc) return rc;
  }
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "model.bin");
  rc = dpgd_model_save(r->model, p);
  if (!rc) rc = write_points(r);
  if (!rc) rc = write_summary(r, test_acc);
  return rc;
}
