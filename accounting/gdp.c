/* gdp.c -- the Gaussian curve of mu-GDP (docs/MATH.md "The Gaussian curve"): delta(eps)
 * in log space, eps(delta) and mu(eps, delta) by GSL's Brent root bracketing, and the
 * trade-off curve. This is the ground truth for every pure-Gaussian composition. */
#include <float.h>
#include <math.h>
#include <pthread.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>
#include <gsl/gsl_sf_erf.h>

#include "acct_internal.h"

double dpgd_acct_round_up(double x)
{
  if (!isfinite(x)) return x;
  return x + fabs(x) * 16 * DBL_EPSILON + DBL_MIN;
}

double dpgd_acct_round_down(double x)
{
  if (!isfinite(x)) return x;
  return x - fabs(x) * 16 * DBL_EPSILON - DBL_MIN;
}

/* log Phi(x) = log(erfc(-x/sqrt 2)/2), accurate for large |x| (log-erfc); *err gets
 * GSL's absolute error estimate of the result. */
static double log_phi_e(double x, double *err)
{
  gsl_sf_result r;
  if (x > 0) {
    gsl_sf_erfc_e(x / M_SQRT2, &r);
    *err = r.err + 2 * DBL_EPSILON;
    return log1p(-0.5 * r.val);
  }
  gsl_sf_log_erfc_e(-x / M_SQRT2, &r);
  *err = r.err + 2 * DBL_EPSILON * (1 + fabs(r.val));
  return r.val - M_LN2;
}

/* log of the inverse Mills ratio h(x) = phi(x)/Q(x) (GSL's hazard function). */
static double log_hazard_e(double x, double *err)
{
  gsl_sf_result r;
  gsl_sf_hazard_e(x, &r);
  *err = r.err / r.val + 2 * DBL_EPSILON;
  return log(r.val);
}

/* delta = Phi(a) - e^eps Phi(b), a = -eps/mu + mu/2, b = a - mu. With
 * d = log(e^eps Phi(b) / Phi(a)) < 0, log delta = log Phi(a) + log(-expm1(d)).
 * Where eps/mu > mu/2 both terms are Gaussian tails whose exponents cancel exactly
 * (e^eps phi(b) = phi(a)), so d is formed from inverse Mills ratios and never from the
 * difference of two huge logarithms. *err bounds the absolute error of the log (from
 * GSL's error estimates, propagated; the cancellation 1 - e^d is accounted for). */
double dpgd_acct_gdp_log_delta_e(double mu, double eps, double *err)
{
  *err = 0;
  if (!(mu >= 0) || !(eps >= 0) || isnan(mu)) return NAN;
  if (mu == 0 || isinf(eps)) return -INFINITY;
  if (isinf(mu)) return 0.0;
  double a = -eps / mu + mu / 2, b = -eps / mu - mu / 2;
  double e1, e2, e3, d;
  double l1 = log_phi_e(a, &e1);
  if (a < 0) {
    d = log_hazard_e(-a, &e2) - log_hazard_e(-b, &e3);
    e2 += e3;
  } else {
    d = eps + log_phi_e(b, &e2) - l1;
    e2 += e1 + DBL_EPSILON * eps;
  }
  e2 += 2 * DBL_EPSILON * fabs(d);
  if (!(d < 0)) return -INFINITY;
  /* |d log(-expm1(d))| = e^d / (1 - e^d) |dd| */
  double cond = exp(d) / -expm1(d);
  *err = e1 + e2 * cond + 4 * DBL_EPSILON * (1 + fabs(l1));
  return l1 + log(-expm1(d));
}

double dpgd_acct_gdp_delta_e(double mu, double eps, double *err)
{
  double lerr;
  double ld = dpgd_acct_gdp_log_delta_e(mu, eps, &lerr);
  if (isnan(ld)) return NAN;
  double d = exp(ld);
  double up = d * expm1(lerr + 2 * DBL_EPSILON) + DBL_MIN;
  *err = up;
  d = d + up;
  return d > 1 ? 1 : d;
}

double dpgd_gdp_delta(double mu, double eps)
{
  double err;
  return dpgd_acct_gdp_delta_e(mu, eps, &err);
}

double dpgd_gdp_tradeoff(double mu, double alpha)
{
  if (!(mu >= 0) || !(alpha >= 0 && alpha <= 1)) return NAN;
  if (alpha == 0) return isinf(mu) ? 0.0 : 1.0;
  if (alpha == 1) return 0.0;
  return gsl_cdf_ugaussian_P(gsl_cdf_ugaussian_Qinv(alpha) - mu);
}

/* A clamped log so that Brent's interpolation never sees -inf. */
static double clamp_log(double l) { return l < -1e4 ? -1e4 : l; }

typedef struct {
  double mu, eps, log_target;
} gdp_root_par;

/* log of the upper bound on delta (value + error bound), as the answer is verified. */
static double log_delta_up(double mu, double eps)
{
  double err;
  double ld = dpgd_acct_gdp_log_delta_e(mu, eps, &err);
  return clamp_log(ld + err);
}

static double f_of_eps(double eps, void *vp)
{
  const gdp_root_par *p = vp;
  return log_delta_up(p->mu, eps) - p->log_target;
}

static double f_of_mu(double mu, void *vp)
{
  const gdp_root_par *p = vp;
  return log_delta_up(mu, p->eps) - p->log_target;
}

/* Brent on [lo, hi] (f changes sign); returns the bracket end selected by `upper`. */
static int brent_solve(gsl_function *F, double lo, double hi, int upper, double *x)
{
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (root solver)");
  int st = gsl_root_fsolver_set(s, F, lo, hi);
  int it = 0;
  while (st == GSL_SUCCESS && it++ < ACCT_MAX_ITER) {
    st = gsl_root_fsolver_iterate(s);
    if (st) break;
    lo = gsl_root_fsolver_x_lower(s);
    hi = gsl_root_fsolver_x_upper(s);
    if (gsl_root_test_interval(lo, hi, 0, ACCT_ROOT_RELTOL) == GSL_SUCCESS) break;
  }
  lo = gsl_root_fsolver_x_lower(s);
  hi = gsl_root_fsolver_x_upper(s);
  gsl_root_fsolver_free(s);
  if (st != GSL_SUCCESS || it > ACCT_MAX_ITER)
    return DPGD_FAIL(DPGD_ENOCONV, "root finder did not converge on [%g, %g]", lo, hi);
  *x = upper ? hi : lo;
  return DPGD_OK;
}

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static void quiet(void) { gsl_set_error_handler_off(); }

void dpgd_acct_gsl_quiet(void) { pthread_once(&quiet_once, quiet); }

int dpgd_acct_brent(gsl_function *F, double lo, double hi, int upper, double *x)
{
  dpgd_acct_gsl_quiet();
  return brent_solve(F, lo, hi, upper, x);
}

int dpgd_gdp_epsilon(double mu, double delta, double *eps)
{
  if (!(mu >= 0) || isinf(mu))
    return DPGD_FAIL(DPGD_EINVAL, "mu must be finite and >= 0 (got %g)", mu);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  gdp_root_par p = {mu, 0, log(delta)};
  if (mu == 0 || dpgd_gdp_delta(mu, 0) <= delta) {
    *eps = 0;
    return DPGD_OK;
  }
  double hi = mu * mu / 2 + mu * (sqrt(2 * log(1 / delta)) + 1) + 1e-12;
  for (int i = 0; f_of_eps(hi, &p) > 0; i++) {
    if (i > 60) return DPGD_FAIL(DPGD_ERANGE, "eps(delta) for mu=%g out of range", mu);
    hi *= 2;
  }
  gsl_function F = {f_of_eps, &p};
  double e;
  int st = dpgd_acct_brent(&F, 0, hi, 1, &e);
  if (st) return st;
  /* Private direction: the answer must satisfy delta(eps) <= delta as evaluated. */
  for (int i = 0; dpgd_gdp_delta(mu, e) > delta; i++) {
    if (i > 100) return DPGD_FAIL(DPGD_ENOCONV, "eps(delta) could not be verified");
    e = e * (1 + 1e-15 * (1 << (i < 40 ? i : 40))) + 1e-300;
  }
  *eps = dpgd_acct_round_up(e);
  return DPGD_OK;
}

int dpgd_gdp_mu(double eps, double delta, double *mu)
{
  if (!(eps >= 0) || isinf(eps))
    return DPGD_FAIL(DPGD_EINVAL, "eps must be finite and >= 0 (got %g)", eps);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  gdp_root_par p = {0, eps, log(delta)};
  double hi = 1;
  for (int i = 0; f_of_mu(hi, &p) <= 0; i++) {
    if (i > 1100)
      return DPGD_FAIL(DPGD_ERANGE, "mu(eps=%g, delta=%g) out of range", eps, delta);
    hi *= 2;
  }
  double lo = hi / 2;
  for (int i = 0; f_of_mu(lo, &p) >= 0; i++) {
    if (i > 1100)
      return DPGD_FAIL(DPGD_ERANGE, "mu(eps=%g, delta=%g) out of range", eps, delta);
    lo /= 2;
  }
  gsl_function F = {f_of_mu, &p};
  double m;
  int st = dpgd_acct_brent(&F, lo, hi, 0, &m);
  if (st) return st;
  m = dpgd_acct_round_down(m);
  for (int i = 0; dpgd_gdp_delta(m, eps) > delta; i++) {
    if (i > 100) return DPGD_FAIL(DPGD_ENOCONV, "mu(eps, delta) could not be verified");
    m = m * (1 - 1e-15 * (1 << (i < 40 ? i : 40)));
  }
  *mu = m;
  return DPGD_OK;
}
