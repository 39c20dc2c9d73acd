/* run.c -- one training run (docs/MATH.md "Private gradient descent"; Feldman & Zrnic,
 * Algorithms 6 and 7):
 * data loading, set-up and dpgd_run_open, dry runs, and read access. The loop is driven
 * by the caller (dpgd_run_step, run_step.c); the run directory is run_dir.c's, the
 * checkpoints and --resume run_resume.c's. */
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

static uint64_t data_fingerprint(const dpgd_dataset *train, const dpgd_dataset *test)
{
  const dpgd_dataset *ds[2] = {train, test};
  uint64_t fp = 0;
  for (int k = 0; k < 2; k++) {
    /* Gradient rows (from fixed_from, when fixed_coord is set) carry no data: their
     * pixels or features are never read (dpgd audit leaves them unwritten pages). */
    size_t rows = ds[k]->fixed_coord ? ds[k]->fixed_from : ds[k]->n;
    uLong c = ds[k]->feat ? crc32_z(crc32(0L, Z_NULL, 0), (const Bytef *)ds[k]->feat,
                                    rows * ds[k]->d * sizeof(float))
                          : crc32_z(crc32(0L, Z_NULL, 0), ds[k]->pixels, rows * ds[k]->d);
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
  free(r->isum);
  free(r->best);
  free(r->velocity);
  dpgd_rng_free(r->rng_step);
  dpgd_rng_free(r->rng_query);
  dpgd_rng_free(r->rng_sample);
  free(r->in);
  dpgd_acct_free(r->acct);
  free(r);
}

/* keep: the first examples of split to use (0 = all), the value of the key named key. */
static int load_split(dpgd_dataset **out, const char *dir, const char *split, size_t keep,
                      const char *key, const dpgd_config *c)
{
  int rc = dpgd_data_load(out, dir, split);
  if (rc) return rc;
  if (keep > 0 && keep < (*out)->n) rc = dpgd_data_truncate(*out, keep);
  else if (keep > (*out)->n)
    rc = DPGD_FAIL(DPGD_EINVAL, "%s = %zu but the %s split has only %zu examples", key, keep,
                   split, (*out)->n);
  (*out)->mean = (float)c->data_mean;
  (*out)->std = (float)c->data_std;
  return rc;
}

/* data.validation = nv: the last nv training examples become the evaluation set (test
 * NULL: dropped, as a dry run needs only n) and leave the training set, whose public n
 * is what remains. */
static int split_validation(dpgd_dataset *train, dpgd_dataset **test, size_t nv)
{
  if (nv >= train->n)
    return DPGD_FAIL(DPGD_EINVAL, "%s = %zu leaves no training examples of the %zu",
                     DPGD_CONFIG_KEY(data_validation), nv, train->n);
  size_t lo = train->n - nv;
  if (test) {
    dpgd_dataset *v = dpgd_data_alloc(nv, train->rows, train->cols, train->n_classes);
    if (!v) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu validation examples", nv);
    memcpy(v->pixels, train->pixels + lo * train->d, nv * train->d);
    memcpy(v->labels, train->labels + lo, nv);
    v->mean = train->mean;
    v->std = train->std;
    *test = v;
  }
  return dpgd_data_truncate(train, lo);
}

int dpgd_run_load_images(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c,
                         char dir[DPGD_CONFIG_PATH_MAX])
{
  int rc = dpgd_data_find_dir(dir, DPGD_CONFIG_PATH_MAX, c->data_dir[0] ? c->data_dir : NULL);
  if (!rc)
    rc = load_split(train, dir, "train", c->data_n_train, DPGD_CONFIG_KEY(data_n_train), c);
  if (!rc && c->data_validation) return split_validation(*train, test, c->data_validation);
  if (!rc && test)
    rc = load_split(test, dir, "test", c->data_n_test, DPGD_CONFIG_KEY(data_n_test), c);
  /* The model is evaluated on the test split after training: a split it cannot take is
   * an error now, before any step is released. */
  if (!rc && test &&
      ((*test)->rows != (*train)->rows || (*test)->cols != (*train)->cols ||
       (*test)->n_classes > (*train)->n_classes))
    rc = DPGD_FAIL(DPGD_EFORMAT,
                   "the test split in %s has %zux%zu images and %d classes, the training "
                   "split %zux%zu and %d: they must match",
                   dir, (*test)->rows, (*test)->cols, (*test)->n_classes, (*train)->rows,
                   (*train)->cols, (*train)->n_classes);
  return rc;
}

int dpgd_run_load_data(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c)
{
  char dir[DPGD_CONFIG_PATH_MAX];
  int rc = dpgd_run_load_images(train, test, c, dir);
  if (!rc) rc = dpgd_run_features(train, test, c, dir);
  return rc;
}

/* The config's model for the training set's shape, or an error that says why not. */
static int model_for(const dpgd_config *c, const dpgd_dataset *train, dpgd_model **m)
{
  const dpgd_model_type *t = dpgd_model_type_find(c->model_type);
  if (!t)
    return DPGD_FAIL(DPGD_EINVAL, "%s '%s' is not built", DPGD_CONFIG_KEY(model_type),
                     c->model_type);
  dpgd_error_clear();
  *m = dpgd_model_alloc(t, (dpgd_activation)c->model_activation, train->rows, train->cols,
                        train->n_classes);
  if (!*m) {
    /* The model says why (no memory, or a model type not built yet). */
    char why[256];
    snprintf(why, sizeof why, "%s", dpgd_error_last()[0] ? dpgd_error_last() : "no memory");
    return DPGD_FAIL(DPGD_EINVAL, "%s = %s: %s", DPGD_CONFIG_KEY(model_type), c->model_type,
                     why);
  }
  return DPGD_OK;
}

/* The per-example workspace for model.chunk and model.threads, its leaf span set and
 * reserved for n examples so that no step allocates; *ws NULL (and DPGD_OK) when it
 * cannot be allocated, for the caller to word. */
static int ws_for(const dpgd_config *c, dpgd_model *m, size_t n, dpgd_grad_ws **ws)
{
  *ws = dpgd_grad_ws_alloc(m, c->model_chunk, c->model_threads);
  int rc = *ws ? dpgd_run_set_leaf_span(*ws, c, n) : DPGD_OK;
  if (!rc && *ws) rc = dpgd_grad_ws_reserve(*ws, n);
  return rc;
}

/* What the run would allocate before its first step (model, workspace), allocated and
 * freed: a dry run finds what a run would fail on. */
static int dry_alloc(const dpgd_config *c, const dpgd_dataset *train)
{
  dpgd_model *m = NULL;
  dpgd_grad_ws *ws = NULL;
  int rc = model_for(c, train, &m);
  if (!rc) rc = ws_for(c, m, train->n, &ws);
  if (!rc && !ws)
    rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for the training state (n = %zu, %s = %zu)",
                   train->n, DPGD_CONFIG_KEY(model_chunk), c->model_chunk);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
  return rc;
}

int dpgd_run_dry(dpgd_plan *p, const dpgd_config *c)
{
  dpgd_dataset *train = NULL, *test = NULL;
  int rc = dpgd_run_load_data(&train, &test, c);
  if (!rc) rc = dpgd_plan_make(p, c, train->n);
  if (!rc) rc = dry_alloc(c, train);
  dpgd_data_free(train);
  dpgd_data_free(test);
  return rc;
}

/* Everything shared by open and resume: data, plan, model, buffers, streams. */
/* The sum's rounding moves it by up to 2 gamma sum_j ||v_j|| <= 2 gamma n C more when
 * one point changes (model/SENSITIVITY.md): the ledger keeps that out of every point's
 * allowance. A discrete run's sum is exact: it moves by exactly the point's row. */
static int setup_sum(dpgd_run *r, size_t n)
{
  double slack = 2 * dpgd_model_sum_error_bound(n) * (double)n * r->plan.clip * (1 + 0x1p-40);
  int rc = r->plan.discrete ? dpgd_run_setup_discrete(r) : DPGD_OK;
  if (!rc) rc = dpgd_ledger_set_slack(r->ledger, r->plan.discrete ? 0.0 : slack);
  return rc;
}

int dpgd_run_setup(dpgd_run *r)
{
  const dpgd_config *c = &r->cfg;
  /* dpgd_run_open_given: the data are the caller's */
  int rc = r->train ? DPGD_OK : dpgd_run_load_data(&r->train, &r->test, c);
  if (rc) return rc;
  r->data_fp = data_fingerprint(r->train, r->test);
  rc = dpgd_plan_make(&r->plan, c, r->train->n);
  if (!rc) rc = model_for(c, r->train, &r->model);
  size_t n = r->train->n;
  if (!rc) rc = ws_for(c, r->model, n, &r->ws);
  if (rc) return rc;
  r->P = dpgd_model_n_params(r->model);
  if (r->plan.filtered && r->plan.sampling == DPGD_SAMPLING_POISSON)
    r->ledger = dpgd_ledger_alloc_sg(n, r->plan.clip, r->plan.sample_rate, r->plan.sigma,
                                     r->plan.filter_k);
  else r->ledger = dpgd_ledger_alloc(n, r->plan.filtered, r->plan.clip, r->plan.budget);
  r->caps = malloc(n * sizeof *r->caps);
  r->post = malloc(n * sizeof *r->post);
  r->sum = malloc(r->P * sizeof *r->sum);
  r->best = malloc(r->P * sizeof *r->best);
  if (c->train_momentum > 0) r->velocity = calloc(r->P, sizeof *r->velocity);
  if (r->ws) {
    dpgd_grad_ws_set_constant_time(r->ws, c->train_constant_time);
    char eng[320], libm[96];
    dpgd_grad_ws_replay_id(r->ws, eng, sizeof eng);
    dpgd_libm_id(libm, sizeof libm);
    snprintf(r->replay, sizeof r->replay, "%s; %s; %s", dpgd_build_id, eng, libm);
  }
  r->rng_step = dpgd_rng_alloc(c->train_rng, &c->train_seed, DPGD_STREAM_STEP);
  r->rng_query = dpgd_rng_alloc(c->train_rng, &c->train_seed, DPGD_STREAM_QUERY);
  /* Poisson and subset: the sample is drawn in the noise's rng mode (secure: from
   * getrandom too). */
  int sampled = r->plan.sampling != DPGD_SAMPLING_FULL;
  if (sampled) r->rng_sample = dpgd_rng_alloc(c->train_rng, &c->train_seed, DPGD_STREAM_SAMPLE);
  if (sampled) r->in = malloc(n);
  if (!r->ws || !r->ledger || !r->caps || !r->post || !r->sum || !r->best ||
      (c->train_momentum > 0 && !r->velocity) || !r->rng_step || !r->rng_query ||
      (sampled && (!r->rng_sample || !r->in)))
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the training state (n = %zu, P = %zu)", n,
                     r->P);
  rc = setup_sum(r, n);
  if (!rc && r->plan.hold > 0) rc = dpgd_ledger_set_hold(r->ledger, r->plan.hold);
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

/* The run directory checked free (no finished or unfinished run), the run set up, the
 * directory made and locked. */
static int claim_run_dir(dpgd_run *r)
{
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "summary.json");
  int rc = DPGD_OK;
  if (dpgd_run_file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds a finished run; choose another %s", r->dir,
                   DPGD_CONFIG_KEY(output_dir));
  dpgd_run_path_in(p, r, "checkpoint.bin");
  if (!rc && dpgd_run_file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL,
                   "%s holds an unfinished run; continue it with --resume %s or remove it",
                   r->dir, r->dir);
  if (!rc) rc = dpgd_run_setup(r);
  if (!rc) rc = dpgd_run_make_dirs(r->dir);
  if (!rc) rc = dpgd_run_lock_dir(r);
  /* Again under the lock: another process may have started this run meanwhile. */
  if (!rc && dpgd_run_file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds an unfinished run (started meanwhile)", r->dir);
  return rc;
}

/* Initial parameters from their own stream, and the empty accountant. */
static int init_params_and_acct(dpgd_run *r)
{
  int rc = dpgd_rng_init_model(r->model, r->cfg.train_rng, &r->cfg.train_seed);
  if (!rc) {
    r->acct = dpgd_acct_alloc();
    if (!r->acct) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for the accountant");
  }
  return rc;
}

/* config.ini: the resolved configuration, which a resume loads. */
static int write_config_ini(const dpgd_run *r)
{
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "config.ini");
  char *text = NULL;
  size_t len = 0;
  int rc = DPGD_OK;
  FILE *f = open_memstream(&text, &len);
  if (!f) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", p);
  if (!rc) {
    fprintf(f, "; resolved configuration of this run (dpgd train)\n");
    rc = dpgd_config_write(&r->cfg, f);
    fclose(f);
  }
  if (!rc) rc = dpgd_write_atomic(p, text, len);
  free(text);
  return rc;
}

/* metrics.csv, created with its header. */
static int create_metrics(dpgd_run *r)
{
  char p[PATHLEN];
  dpgd_run_path_in(p, r, "metrics.csv");
  r->metrics = dpgd_file_open_write(p, O_TRUNC | O_APPEND);
  if (r->metrics < 0) return DPGD_FAIL(DPGD_EIO, "cannot create %s: %s", p, strerror(errno));
  return dpgd_run_metrics_put(r, dpgd_run_metrics_header(r->cfg.output_diagnostics));
}

int dpgd_run_open(dpgd_run **out, const dpgd_config *c, const char *run_dir)
{
  return dpgd_run_open_given(out, c, run_dir, NULL, NULL);
}

int dpgd_run_open_given(dpgd_run **out, const dpgd_config *c, const char *run_dir,
                        dpgd_dataset *train, dpgd_dataset *test)
{
  *out = NULL;
  int rc = run_dir ? dpgd_config_check_path(run_dir, "run directory") : DPGD_OK;
  dpgd_run *r = rc ? NULL : calloc(1, sizeof *r);
  if (!r) {
    dpgd_data_free(train);
    dpgd_data_free(test);
    return rc ? DPGD_EINVAL : DPGD_FAIL(DPGD_ENOMEM, "no memory for the run");
  }
  r->train = train;
  r->test = test;
  r->lock_fd = r->metrics = -1;
  r->cfg = *c;
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  if (run_dir) snprintf(r->cfg.output_dir, sizeof r->cfg.output_dir, "%s", run_dir);
  snprintf(r->dir, sizeof r->dir, "%s", r->cfg.output_dir);
  rc = claim_run_dir(r);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  rc = init_params_and_acct(r);
  r->config_hash = dpgd_config_hash(&r->cfg);
  if (!rc) rc = write_config_ini(r);
  if (!rc) rc = create_metrics(r);
  /* A checkpoint of step 0 marks the directory as an unfinished run at once. */
  if (!rc) rc = dpgd_run_write_checkpoint(r);
  if (rc) {
    dpgd_run_free(r);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  *out = r;
  return DPGD_OK;
}

/* ---- read access ---- */

const dpgd_plan *dpgd_run_plan(const dpgd_run *r) { return &r->plan; }
const dpgd_config *dpgd_run_config(const dpgd_run *r) { return &r->cfg; }
const dpgd_ledger *dpgd_run_ledger(const dpgd_run *r) { return r->ledger; }
size_t dpgd_run_step_index(const dpgd_run *r) { return (size_t)r->m.step; }
/* The reported method's eps (exact; for subset runs the plan's rdp_* method). Between
 * the steps that carry eps (output.eps_every) it is computed afresh. */
double dpgd_run_eps_now(const dpgd_run *r)
{
  dpgd_acct_method m = (dpgd_acct_method)r->plan.report_method;
  if (r->eps_step == r->m.step) return r->eps_now[m];
  dpgd_acct_value v;
  int rc = dpgd_acct_epsilon(r->acct, m, r->plan.delta, &v);
  dpgd_error_clear();
  return rc ? NAN : v.value;
}
double dpgd_run_eps_continuous(const dpgd_run *r)
{
  return dpgd_acct_continuous_epsilon(r->acct, r->plan.delta);
}
uint64_t dpgd_run_noise_draws(const dpgd_run *r) { return r->m.noise_draws; }
uint64_t dpgd_run_releases(const dpgd_run *r) { return dpgd_acct_n_releases(r->acct); }
size_t dpgd_run_redone(const dpgd_run *r) { return r->redone; }
int dpgd_run_row_restored(const dpgd_run *r) { return r->row_restored; }
const dpgd_dataset *dpgd_run_train_set(const dpgd_run *r) { return r->train; }

void dpgd_run_set_sum(dpgd_run *r, dpgd_run_sum_fn fn, void *ctx)
{
  r->sum_fn = fn;
  r->sum_ctx = ctx;
}

const float *dpgd_run_params(const dpgd_run *r, size_t *n_params)
{
  if (n_params) *n_params = r->P;
  return dpgd_model_params_const(r->model);
}

void dpgd_run_progress(const dpgd_run *r, char *buf, size_t len)
{
  double el = dpgd_run_now_s() - ((double)r->t0.tv_sec + 1e-9 * r->t0.tv_nsec);
  uint64_t here = r->m.step - r->session_step; /* steps of this session: what el measured */
  double per = here ? el / (double)here : 0;
  double eta = per * (double)(r->plan.steps - r->m.step);
  char acc[32] = "-";
  if (isfinite(r->m.last_test_acc)) snprintf(acc, sizeof acc, "%.4f", r->m.last_test_acc);
  /* The reported method may have no answer after some steps (a few subsampled releases
   * at a small rate): "n/a", as metrics.csv leaves the field empty. */
  char eps[48] = "n/a";
  double e = r->eps_now[r->plan.report_method];
  if (isfinite(e)) snprintf(eps, sizeof eps, "%.4g", dpgd_round_digits(e, 4, 1));
  if (isfinite(e) && r->eps_step != r->m.step) /* output.eps_every: as of an earlier step */
    snprintf(eps + strlen(eps), sizeof eps - strlen(eps), " after step %zu", r->eps_step);
  /* The ETA follows the wall time, which depends on how many points are still active or
   * sampled (the others are skipped unless train.constant_time): not private. */
  snprintf(
      buf, len, "step %llu/%zu  ETA %dm%02ds (not private)  eps %s (%s, delta %g)  test acc %s",
      (unsigned long long)r->m.step, r->plan.steps, (int)(eta / 60), (int)fmod(eta, 60), eps,
      dpgd_acct_method_name((dpgd_acct_method)r->plan.report_method), r->plan.delta, acc);
}
