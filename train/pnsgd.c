/* pnsgd.c -- hidden-iterate training (train/LASTITERATE.md): the constants of the softmax
 * loss on the public feature box, the plan (step-size check, calibration), the guarantee
 * of each position from the accountant's dpgd_iter_*, and one pass of projected noisy
 * SGD of which only the last iterate is released. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pnsgd_internal.h"
#include "run_internal.h"

#define NAME(field) DPGD_CONFIG_KEY(field)

/* Relative shrink of the clip cap below L: absorbs the engine's summation error of one
 * example, gamma_1027 < 2^-40 (model/SENSITIVITY.md contract (c)). */
#define PNSGD_CLIP_SHRINK 0x1p-20

int dpgd_pnsgd_consts_make(dpgd_pnsgd_consts *k, size_t d, float mean, float std)
{
  if (d == 0 || !(std > 0) || !isfinite(std) || !isfinite(mean))
    return DPGD_FAIL(DPGD_EINVAL, "pnsgd: need d > 0 and a finite mean and std > 0");
  /* The 256 values a feature can take, from the unpacking code itself. */
  dpgd_dataset *box = dpgd_data_alloc(1, 16, 16, DPGD_DATA_DEFAULT_CLASSES);
  if (!box) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the feature box");
  for (int q = 0; q < 256; q++) box->pixels[q] = (uint8_t)q;
  box->mean = mean;
  box->std = std;
  float v[256];
  dpgd_data_unpack(v, box, 0, 1);
  dpgd_data_free(box);
  double m = 0;
  for (int q = 0; q < 256; q++) m = fmax(m, (double)v[q] * v[q]); /* exact in double */
  return dpgd_pnsgd_consts_from_sq(k, nextafter((double)d * m, INFINITY));
}

int dpgd_pnsgd_consts_from_sq(dpgd_pnsgd_consts *k, double x2)
{
  double s = nextafter(x2 + 1, INFINITY); /* X^2 + 1, rounded up */
  if (!(x2 >= 0) || !isfinite(s))
    return DPGD_FAIL(DPGD_ERANGE, "pnsgd: the feature box is not finite");
  k->feat_sq = x2;
  k->lipschitz = nextafter(sqrt(2 * s), INFINITY); /* sqrt is correctly rounded */
  k->smooth = s / 2;                               /* exact */
  k->lr_max = nextafter(4 / s, 0);                 /* 2 / beta, rounded down */
  return DPGD_OK;
}

/* privacy.calibrate = sigma: the worst position t = n is one Gaussian step of
 * sensitivity L (LASTITERATE.md section 6), so sigma = L s with s the noise multiplier
 * of one step; then moved up until the reported worst case, with its own roundings, is
 * within privacy.epsilon. */
static int calibrate(dpgd_pnsgd_plan *p, const dpgd_config *c)
{
  double s; /* a discrete step has no exact curve: its reported eps is rdp_optimal's */
  dpgd_acct_method m =
      p->discrete ? DPGD_ACCT_RDP_OPTIMAL : (dpgd_acct_method)c->privacy_method;
  int rc = dpgd_calibrate_sigma(m, c->privacy_epsilon, c->privacy_delta, 1, NULL, &s);
  if (rc) return rc;
  p->sigma = nextafter(p->k.lipschitz * s, INFINITY); /* one rounding, moved up */
  for (int i = 0; i < 64; i++) {
    dpgd_pnsgd_eps e;
    rc = dpgd_pnsgd_guarantee(p, p->n, &e);
    if (rc) return rc;
    if (e.eps <= c->privacy_epsilon) return DPGD_OK;
    p->sigma *= 1 + ldexp(1, i - 40);
  }
  return DPGD_FAIL(DPGD_ENOCONV, "pnsgd: sigma for %s = %g not found", NAME(privacy_epsilon),
                   c->privacy_epsilon);
}

/* The plan for n points once p->k is set. */
static int plan_with_consts(dpgd_pnsgd_plan *p, const dpgd_config *c, size_t n)
{
  if (!(c->train_lr <= p->k.lr_max))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s = %g exceeds 2/beta = %.6g for %s = pnsgd (beta = (X^2 + 1)/2 = %.6g "
                     "on the feature box of %s, %s; train/LASTITERATE.md section 3): set %s "
                     "<= %.6g",
                     NAME(train_lr), c->train_lr, dpgd_round_digits(p->k.lr_max, 6, -1),
                     NAME(train_algorithm), dpgd_round_digits(p->k.smooth, 6, 1),
                     NAME(data_mean), NAME(data_std), NAME(train_lr),
                     dpgd_round_digits(p->k.lr_max, 6, -1));
  p->n = n;
  p->lr = c->train_lr;
  p->radius = c->train_radius;
  p->delta = c->privacy_delta;
  p->cap = p->k.lipschitz * (1 - PNSGD_CLIP_SHRINK);
  p->sigma = c->privacy_sigma;
  p->discrete = c->train_rng == DPGD_RNG_SECURE;
  int rc = c->privacy_calibrate == DPGD_CALIBRATE_SIGMA ? calibrate(p, c) : DPGD_OK;
  /* One row per release (n = 1), norm <= L, noise std sigma (LASTITERATE.md section 7). */
  if (!rc && p->discrete) rc = dpgd_model_grid_bits(1, p->k.lipschitz, p->sigma, &p->grid_bits);
  return rc;
}

int dpgd_pnsgd_plan_make(dpgd_pnsgd_plan *p, const dpgd_config *c, size_t n, size_t d,
                         float mean, float std)
{
  memset(p, 0, sizeof *p);
  if (n == 0) return DPGD_FAIL(DPGD_EINVAL, "pnsgd: the training set is empty");
  int rc = dpgd_pnsgd_consts_make(&p->k, d, mean, std);
  return rc ? rc : plan_with_consts(p, c, n);
}

int dpgd_pnsgd_plan_for_data(dpgd_pnsgd_plan *p, const dpgd_config *c, dpgd_dataset *ds)
{
  if (!ds->feat) return dpgd_pnsgd_plan_make(p, c, ds->n, ds->d, ds->mean, ds->std);
  memset(p, 0, sizeof *p);
  if (ds->n == 0) return DPGD_FAIL(DPGD_EINVAL, "pnsgd: the training set is empty");
  double x2;
  size_t scaled;
  int rc = dpgd_pnsgd_features_bound(ds, &x2, &scaled);
  if (!rc) rc = dpgd_pnsgd_consts_from_sq(&p->k, x2);
  return rc ? rc : plan_with_consts(p, c, ds->n);
}

dpgd_iter_setting dpgd_pnsgd_setting(const dpgd_pnsgd_plan *p, size_t t)
{
  return (dpgd_iter_setting){.n = p->n,
                             .t = t,
                             .grad_sens = p->k.lipschitz,
                             .sigma = p->sigma,
                             .eta = p->lr,
                             .diameter = 2 * p->radius};
}

int dpgd_pnsgd_guarantee(const dpgd_pnsgd_plan *p, size_t t, dpgd_pnsgd_eps *e)
{
  dpgd_iter_setting s = dpgd_pnsgd_setting(p, t);
  dpgd_acct_value v;
  int rc = dpgd_iter_check(&s);
  if (rc) return rc;
  e->t = t;
  e->rho = dpgd_iter_rho(&s);
  rc = dpgd_iter_epsilon(&s, DPGD_ACCT_RDP_OPTIMAL, p->delta, &v);
  e->iteration = v.value;
  if (!rc) rc = dpgd_iter_contraction_epsilon(&s, p->delta, &v);
  e->contraction = v.value;
  if (!rc) rc = dpgd_iter_composition_epsilon(&s, DPGD_ACCT_EXACT, p->delta, &v);
  e->composition = v.value;
  /* A discrete step's Renyi curve is the continuous one (integer shifts, docs/MATH.md 18);
   * its f-DP curve is not, so the contraction bound (built on it) is not used. */
  e->eps = p->discrete ? e->iteration : fmin(e->iteration, e->contraction);
  return rc;
}

int dpgd_pnsgd_dry(dpgd_pnsgd_plan *p, const dpgd_config *c)
{
  dpgd_dataset *train = NULL;
  int rc = dpgd_config_validate(c);
  if (!rc && c->train_algorithm != DPGD_ALGO_PNSGD)
    rc = DPGD_FAIL(DPGD_EINVAL, "%s is not pnsgd", NAME(train_algorithm));
  if (!rc) rc = dpgd_run_load_data(&train, NULL, c);
  if (!rc) rc = dpgd_pnsgd_plan_for_data(p, c, train);
  dpgd_data_free(train);
  return rc;
}

/* ---- the pass ---- */

void dpgd_pnsgd_free(dpgd_pnsgd *r)
{
  if (!r) return;
  if (r->lock_fd >= 0) close(r->lock_fd); /* releases the lock */
  dpgd_data_free(r->train);
  dpgd_data_free(r->test);
  dpgd_grad_ws_free(r->ws);
  dpgd_model_free(r->model);
  free(r->order);
  free(r->g);
  free(r->isum);
  dpgd_rng_free(r->rng_step);
  free(r);
}

void dpgd_pnsgd_path(char *buf, const dpgd_pnsgd *r, const char *name)
{
  snprintf(buf, DPGD_CONFIG_PATH_MAX + 32, "%s/%s", r->dir, name);
}

/* w <- Pi_K(v): v (double) scaled onto the ball of radius R when outside, stored as
 * float. DPGD_ERANGE when v is not finite (the run diverged). */
static int project_store(float *w, const double *v, size_t P, double R)
{
  double sq = 0;
  for (size_t j = 0; j < P; j++) sq += v[j] * v[j];
  if (!isfinite(sq)) return DPGD_FAIL(DPGD_ERANGE, "pnsgd: the iterate is not finite");
  double f = sq > R * R ? R / sqrt(sq) : 1;
  for (size_t j = 0; j < P; j++) w[j] = (float)(v[j] * f);
  return DPGD_OK;
}

/* A uniformly random order of the n points (Fisher-Yates; rejection keeps each draw
 * unbiased), from the run's sampling stream: independent of the data. */
static int draw_order(dpgd_pnsgd *r)
{
  size_t n = r->plan.n;
  dpgd_rng *s = dpgd_rng_alloc(r->cfg.train_rng, &r->cfg.train_seed, DPGD_STREAM_SAMPLE);
  if (!s) return DPGD_FAIL(DPGD_ENOMEM, "no memory for a stream");
  int rc = DPGD_OK;
  for (size_t i = 0; i < n; i++) r->order[i] = i;
  for (size_t i = n - 1; i > 0 && !rc; i--) {
    uint64_t bound = (uint64_t)i + 1, w = 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound; /* a multiple of bound */
    do rc = dpgd_rng_u64(s, &w);
    while (!rc && w >= limit);
    size_t j = (size_t)(w % bound), tmp = r->order[i];
    r->order[i] = r->order[j];
    r->order[j] = tmp;
  }
  dpgd_rng_free(s);
  return rc;
}

/* w_0 = Pi_K(the model's initialisation from the init stream): data-independent. */
static int init_params(dpgd_pnsgd *r)
{
  int rc = dpgd_rng_init_model(r->model, r->cfg.train_rng, &r->cfg.train_seed);
  if (rc) return rc;
  float *w = dpgd_model_params(r->model);
  for (size_t j = 0; j < r->P; j++) r->g[j] = w[j];
  return project_store(w, r->g, r->P, r->plan.radius);
}

/* Data, plan, model, buffers, streams. */
static int setup(dpgd_pnsgd *r)
{
  int rc = dpgd_run_load_data(&r->train, &r->test, &r->cfg);
  if (!rc) rc = dpgd_pnsgd_plan_for_data(&r->plan, &r->cfg, r->train);
  if (rc) return rc;
  r->model = dpgd_model_alloc(dpgd_model_type_find(r->cfg.model_type), DPGD_ACT_RELU,
                              r->train->rows, r->train->cols, r->train->n_classes);
  if (!r->model) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the model");
  r->P = dpgd_model_n_params(r->model);
  r->ws = dpgd_grad_ws_alloc(r->model, 1, 1);
  r->order = malloc(r->plan.n * sizeof *r->order);
  r->g = malloc(r->P * sizeof *r->g);
  r->rng_step = dpgd_rng_alloc(r->cfg.train_rng, &r->cfg.train_seed, DPGD_STREAM_STEP);
  if (!r->ws || !r->order || !r->g || !r->rng_step)
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for the training state");
  if (r->plan.discrete) {
    r->isum = malloc(r->P * sizeof *r->isum);
    if (!r->isum) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the integer gradient");
    rc = dpgd_grad_ws_set_grid(r->ws, r->plan.grid_bits);
    if (!rc) rc = dpgd_dgauss_from_std(&r->dg, r->plan.sigma, r->plan.grid_bits);
    if (rc) return rc;
  }
  rc = draw_order(r);
  if (!rc) rc = init_params(r);
  return rc;
}

/* The run directory: refused if it holds a finished run or another trainer's checkpoint;
 * made, and config.ini written. */
static int claim_dir(dpgd_pnsgd *r)
{
  char p[DPGD_CONFIG_PATH_MAX + 32];
  const char *taken[] = {"summary.json", "checkpoint.bin"};
  for (int k = 0; k < 2; k++) {
    dpgd_pnsgd_path(p, r, taken[k]);
    if (dpgd_run_file_exists(p))
      return DPGD_FAIL(DPGD_EINVAL, "%s holds a run (%s); choose another %s", r->dir, taken[k],
                       NAME(output_dir));
  }
  int rc = dpgd_run_make_dirs(r->dir);
  if (!rc) rc = dpgd_run_lock_path(r->dir, &r->lock_fd);
  dpgd_pnsgd_path(p, r, "summary.json"); /* again under the lock */
  if (!rc && dpgd_run_file_exists(p))
    rc = DPGD_FAIL(DPGD_EINVAL, "%s holds a run (finished meanwhile)", r->dir);
  if (rc) return rc;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return DPGD_FAIL(DPGD_ENOMEM, "no memory for config.ini");
  fprintf(f, "; resolved configuration of this run (dpgd train, train.algorithm = pnsgd)\n");
  rc = dpgd_config_write(&r->cfg, f);
  fclose(f);
  dpgd_pnsgd_path(p, r, "config.ini");
  if (!rc) rc = dpgd_write_atomic(p, text, len);
  free(text);
  return rc;
}

int dpgd_pnsgd_open(dpgd_pnsgd **out, const dpgd_config *c, const char *run_dir)
{
  *out = NULL;
  int rc = dpgd_config_validate(c);
  if (!rc && c->train_algorithm != DPGD_ALGO_PNSGD)
    rc = DPGD_FAIL(DPGD_EINVAL, "%s is not pnsgd", NAME(train_algorithm));
  if (!rc && run_dir) rc = dpgd_config_check_path(run_dir, "run directory");
  if (rc) return rc;
  dpgd_pnsgd *r = calloc(1, sizeof *r);
  if (!r) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the run");
  r->cfg = *c;
  r->lock_fd = -1;
  if (run_dir) snprintf(r->cfg.output_dir, sizeof r->cfg.output_dir, "%s", run_dir);
  snprintf(r->dir, sizeof r->dir, "%s", r->cfg.output_dir);
  rc = setup(r);
  if (!rc) rc = claim_dir(r);
  if (rc) {
    dpgd_pnsgd_free(r);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  *out = r;
  return DPGD_OK;
}

int dpgd_pnsgd_step(dpgd_pnsgd *r)
{
  if (dpgd_pnsgd_done(r)) return DPGD_FAIL(DPGD_EINVAL, "pnsgd: the pass is complete");
  size_t i = r->order[r->step], d = r->train->d;
  dpgd_dataset one = *r->train; /* a view of point i */
  one.n = 1;
  one.pixels += i * d;
  one.labels += i;
  int rc;
  if (r->plan.discrete) { /* the clipped gradient on the grid, exactly, + N_Z noise */
    double post;
    rc = dpgd_model_clipped_grad_sum_int(r->model, r->ws, &one, &r->plan.cap, r->isum, &post);
    if (!rc)
      rc = dpgd_dgauss_release(&r->dg, r->rng_step, r->isum, r->g, r->P, r->plan.grid_bits);
  } else {
    rc = dpgd_model_clipped_grad_sum(r->model, r->ws, &one, &r->plan.cap, r->g, NULL, NULL);
    if (!rc) rc = dpgd_rng_gaussian_add(r->rng_step, r->plan.sigma, r->g, r->P);
  }
  if (rc) return rc;
  float *w = dpgd_model_params(r->model);
  for (size_t j = 0; j < r->P; j++) r->g[j] = (double)w[j] - r->plan.lr * r->g[j];
  rc = project_store(w, r->g, r->P, r->plan.radius);
  if (!rc) r->step++;
  return rc;
}

int dpgd_pnsgd_done(const dpgd_pnsgd *r) { return r->step >= r->plan.n; }
size_t dpgd_pnsgd_step_index(const dpgd_pnsgd *r) { return r->step; }
const dpgd_pnsgd_plan *dpgd_pnsgd_plan_of(const dpgd_pnsgd *r) { return &r->plan; }
const dpgd_config *dpgd_pnsgd_config(const dpgd_pnsgd *r) { return &r->cfg; }
const size_t *dpgd_pnsgd_order(const dpgd_pnsgd *r) { return r->order; }

const float *dpgd_pnsgd_params(const dpgd_pnsgd *r, size_t *n_params)
{
  if (n_params) *n_params = r->P;
  return dpgd_model_params_const(r->model);
}

int dpgd_pnsgd_finish(dpgd_pnsgd *r, double *test_acc)
{
  if (!dpgd_pnsgd_done(r)) return DPGD_FAIL(DPGD_EINVAL, "pnsgd: the pass is not complete");
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  r->wall_s = (double)(t1.tv_sec - r->t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - r->t0.tv_nsec);
  size_t correct = 0;
  int rc = dpgd_model_evaluate(r->model, r->test, 0, r->test->n, r->cfg.model_threads, NULL,
                               &correct, NULL);
  if (rc) return rc;
  double acc = (double)correct / (double)r->test->n;
  if (test_acc) *test_acc = acc;
  char p[DPGD_CONFIG_PATH_MAX + 32];
  dpgd_pnsgd_path(p, r, "model.bin");
  rc = dpgd_model_save(r->model, p);
  if (!rc) rc = dpgd_pnsgd_write_reports(r, acc);
  return rc;
}
