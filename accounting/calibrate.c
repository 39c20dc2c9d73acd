/* calibrate.c -- noise and budget calibration (docs/MATH.md "Calibration"): bracket and solve
 * with GSL's Brent on a monotone eps(delta), then verify the rounded answer against the
 * target and step it in the private direction (sigma up, B_norm down) until it holds. */
#include <float.h>
#include <math.h>

#include <gsl/gsl_math.h>

#include "acct_internal.h"

typedef struct {
  dpgd_accountant *acc; /* extra releases + the calibrated Gaussian as its last entry */
  dpgd_acct_method m;
  double eps, delta;
  uint64_t steps;    /* sigma: steps of mu = 1/sigma; budget: 0 */
  double sigma_clip; /* budget: sigma * clip */
  int status;
} calib;

/* Sets the last entry's mu from x (log sigma or log B) and returns eps(x) - target;
 * positive means "not private enough". */
static double calib_mu(const calib *c, double x)
{
  if (c->steps) return exp(-x);      /* mu = 1/sigma */
  return exp(x / 2) / c->sigma_clip; /* mu = sqrt(B)/(sigma C) */
}

/* log(eps at the calibrated entry's mu / target), clamped to [-1e4, 1e4]: the sign of
 * eps - target on a scale Brent handles at every magnitude (eps from 0 to overflow). A
 * mu that overflows (no noise) or an eps out of the double range (DPGD_ERANGE) counts as
 * "not private enough" rather than as an error, so the bracket search steps back. */
static double calib_eval(calib *c, double mu)
{
  acct_entry *last = &c->acc->e[c->acc->n - 1];
  if (!(mu < INFINITY)) return 1e4;
  last->par[0] = mu;
  dpgd_acct_value v;
  int st = dpgd_acct_epsilon(c->acc, c->m, c->delta, &v);
  if (st == DPGD_ERANGE && mu > 1) {
    dpgd_error_clear();
    return 1e4;
  }
  if (st) {
    c->status = st;
    return GSL_NAN;
  }
  /* aimed 64 ulps below the target, so that the same composition accounted in another
   * order or grouping (a few ulps apart) still meets it */
  double f = log(v.value) - (log(c->eps) - 64 * DBL_EPSILON);
  return f < -1e4 ? -1e4 : f > 1e4 ? 1e4 : f;
}

static double calib_f(double x, void *vp) { return calib_eval(vp, calib_mu(vp, x)); }

/* Solves for x = log(sigma) (decreasing f) or x = log(B) (increasing f). */
static int calib_solve(calib *c, double x0, double *x)
{
  int sigma_mode = c->steps > 0;
  /* f > 0 means too little privacy: raise sigma / lower B. */
  double lo = x0, hi = x0;
  double step = 1;
  c->status = DPGD_OK;
  if (sigma_mode) {
    for (int i = 0; calib_f(hi, c) > 0; i++) {
      if (c->status) return c->status;
      if (i > 64) return DPGD_FAIL(DPGD_ERANGE, "calibration: no sigma reaches eps=%g", c->eps);
      hi += step, step *= 2;
    }
    step = 1;
    lo = hi - step;
    for (int i = 0; calib_f(lo, c) <= 0; i++) {
      if (c->status) return c->status;
      if (i > 64) return DPGD_FAIL(DPGD_ERANGE, "calibration: sigma out of range");
      lo -= step, step *= 2;
    }
  } else {
    for (int i = 0; calib_f(lo, c) > 0; i++) {
      if (c->status) return c->status;
      if (i > 64)
        return DPGD_FAIL(DPGD_ERANGE, "calibration: no budget reaches eps=%g", c->eps);
      lo -= step, step *= 2;
    }
    step = 1;
    hi = lo + step;
    for (int i = 0; calib_f(hi, c) <= 0; i++) {
      if (c->status) return c->status;
      if (i > 64) return DPGD_FAIL(DPGD_ERANGE, "calibration: budget out of range");
      hi += step, step *= 2;
    }
  }
  if (c->status) return c->status;
  gsl_function F = {calib_f, c};
  /* The private end of the bracket: upper sigma, lower budget. */
  int st = dpgd_acct_brent(&F, lo, hi, sigma_mode, x);
  if (st) return st;
  return c->status;
}

static int check_target(double eps, double delta)
{
  if (!(eps > 0) || isinf(eps))
    return DPGD_FAIL(DPGD_EINVAL, "target eps must be finite and > 0 (got %g)", eps);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  return DPGD_OK;
}

static int setup(calib *c, dpgd_acct_method m, double eps, double delta,
                 const dpgd_accountant *extra)
{
  int st = check_target(eps, delta);
  if (st) return st;
  if ((int)m < 0 || m >= DPGD_ACCT_N_METHODS)
    return DPGD_FAIL(DPGD_EINVAL, "unknown accounting method %d", (int)m);
  c->acc = extra ? dpgd_acct_clone(extra) : dpgd_acct_alloc();
  if (!c->acc) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (calibration)");
  c->m = m;
  c->eps = eps;
  c->delta = delta;
  /* A Gaussian entry that never merges with extra's last entry (mu = -1 is a marker
   * until the solver sets it). */
  acct_entry en = {.kind = ACCT_GAUSSIAN, .count = 1, .par = {-1, 0}};
  st = dpgd_acct_push(c->acc, &en);
  if (st) {
    dpgd_acct_free(c->acc);
    return st;
  }
  return DPGD_OK;
}

int dpgd_calibrate_sigma(dpgd_acct_method m, double eps, double delta, uint64_t steps,
                         const dpgd_accountant *extra, double *sigma)
{
  if (!sigma) return DPGD_FAIL(DPGD_EINVAL, "calibrate: NULL output");
  if (steps < 1) return DPGD_FAIL(DPGD_EINVAL, "steps must be >= 1");
  calib c = {0};
  int st = setup(&c, m, eps, delta, extra);
  if (st) return st;
  c.steps = steps;
  c.acc->e[c.acc->n - 1].count = steps;
  /* Start near the Gaussian answer sigma = sqrt(steps)/mu, mu ~ eps/sqrt(8 log(1/delta)). */
  double x0 = log(sqrt((double)steps) * sqrt(8 * log(1 / delta)) / eps);
  double x;
  st = calib_solve(&c, x0, &x);
  double s = exp(x);
  /* Verify and step up until the target holds as evaluated. */
  for (int i = 0; !st; i++) {
    double f = calib_eval(&c, 1 / s);
    if (c.status) {
      st = c.status;
      break;
    }
    if (f <= 0) break;
    if (i > 200) {
      st = DPGD_FAIL(DPGD_ENOCONV, "calibrated sigma could not be verified");
      break;
    }
    s *= 1 + 1e-12 * (1 << (i < 30 ? i : 30));
  }
  dpgd_acct_free(c.acc);
  if (st) return st;
  *sigma = s;
  return DPGD_OK;
}

int dpgd_calibrate_budget(dpgd_acct_method m, double eps, double delta, double sigma,
                          double clip, const dpgd_accountant *extra, double *budget)
{
  if (!budget) return DPGD_FAIL(DPGD_EINVAL, "calibrate: NULL output");
  if (!(sigma > 0) || isinf(sigma))
    return DPGD_FAIL(DPGD_EINVAL, "sigma must be finite and > 0 (got %g)", sigma);
  if (!(clip > 0) || isinf(clip))
    return DPGD_FAIL(DPGD_EINVAL, "clip must be finite and > 0 (got %g)", clip);
  if (extra && !dpgd_acct_all_gaussian(extra))
    return DPGD_FAIL(DPGD_EINVAL, "budget calibration composes with Gaussian releases only");
  calib c = {0};
  int st = setup(&c, m, eps, delta, extra);
  if (st) return st;
  c.sigma_clip = sigma * clip;
  double x0 = 2 * log(eps / sqrt(8 * log(1 / delta)) * c.sigma_clip);
  double x;
  st = calib_solve(&c, x0, &x);
  double b = exp(x);
  for (int i = 0; !st; i++) {
    double f = calib_eval(&c, sqrt(b) / c.sigma_clip);
    if (c.status) {
      st = c.status;
      break;
    }
    if (f <= 0) break;
    if (i > 200) {
      st = DPGD_FAIL(DPGD_ENOCONV, "calibrated budget could not be verified");
      break;
    }
    b *= 1 - 1e-12 * (1 << (i < 30 ? i : 30));
  }
  dpgd_acct_free(c.acc);
  if (st) return st;
  *budget = b;
  return DPGD_OK;
}
