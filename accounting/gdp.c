/* gdp.c -- the Gaussian curve of mu-GDP (docs/MATH.md "The Gaussian curve",
 * accounting/GDP.md): delta(eps) as a two-sided bracket in log space, eps(delta) by bisection on it, mu(eps, delta) and
 * the trade-off curve. The ground truth for every pure-Gaussian composition, valid at every
 * mu and delta (no cancellation: the curve is evaluated in z = (eps - mu^2/2) / mu). */
#include <float.h>
#include <math.h>
#include <pthread.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>
#include <gsl/gsl_sf_erf.h>

#include "acct_internal.h"

#define U DBL_EPSILON

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

/* log Q(x) = log(erfc(x/sqrt 2)/2), accurate for large |x| (log-erfc); *err gets GSL's
 * absolute error estimate of the result (doubled) and its rounding. */
static double log_q_e(double x, double *err)
{
  gsl_sf_result r;
  if (x < -40) { /* Q(x) = 1 - Q(-x), Q(40) < 1e-349 (GSL's erfc fails far out) */
    *err = 1e-300;
    return 0;
  }
  if (x > 1e6) { /* phi(x) x / (1 + x^2) < Q(x) < phi(x) / x (Birnbaum; Gordon 1941) */
    double l = -0.5 * x * x - 0.91893853320467274178 - log(x);
    *err = l == -INFINITY ? 0 : 4 * U * fabs(l) + 1 / (x * x);
    return l;
  }
  if (x < 0) {
    gsl_sf_erfc_e(-x / M_SQRT2, &r);
    *err = 2 * r.err + 4 * U;
    return log1p(-0.5 * r.val);
  }
  gsl_sf_log_erfc_e(x / M_SQRT2, &r);
  *err = 2 * r.err + 4 * U * (1 + fabs(r.val));
  return r.val - M_LN2;
}

/* log of the hazard h(x) = phi(x) / Q(x) (inverse Mills ratio), *h = h(x) and *err a
 * bound on the absolute error of the log (GSL's estimate doubled, and rounding). Below
 * x = -30, Q(x) > 1 - 1e-197 and log h = log phi to within 1e-196 (GSL underflows). */
static double log_hazard_e(double x, double *h, double *err)
{
  if (x < -30) {
    double l = -0.5 * x * x - 0.91893853320467274178; /* log phi(x) */
    *err = l == -INFINITY ? 0 : 4 * U * fabs(l) + 1e-190;
    *h = exp(l);
    return l;
  }
  if (x > 1e6) { /* x < h(x) < x + 1/x */
    *h = x;
    *err = 1 / (x * x) + 4 * U;
    return log(x);
  }
  gsl_sf_result r;
  gsl_sf_hazard_e(x, &r);
  *h = r.val;
  *err = 2 * r.err / r.val + 4 * U;
  return log(r.val);
}

/* Bracket of D = log h(z + mu) - log h(z) > 0, where 1 - e^{-D} = delta / Q(z):
 * directly from the logs, and as D = int_z^{z+mu} g, g = h - x decreasing (0 < h' < 1),
 * so mu g(z + mu) <= D <= mu g(z) (tight where mu is small); the intersection is kept. */
static void d_bracket(double mu, double z, double *dlo, double *dhi)
{
  double x = z + mu; /* rounded: |x - (z + mu)| <= U |x|/2, and |d log h/dx| = g */
  double e1, e2, h1, h2;
  double l1 = log_hazard_e(z, &h1, &e1), l2 = log_hazard_e(x, &h2, &e2);
  double gx = x > 0 ? fmin(1, 1 / x) : 1 - x; /* g(y) < min(1, 1/y) (y > 0), 1 - y */
  double eD = e1 + e2 + U * fabs(x) * gx + 4 * U * (fabs(l1) + fabs(l2));
  double D = l2 - l1;
  double lo = D - eD, hi = D + eD;
  if (l1 == -INFINITY) lo = hi = INFINITY; /* h(z) = 0 in the limit: D is infinite */
  /* g(x) - g(z + mu) <= |x - (z + mu)| since |g'| < 1 */
  double g2 = (h2 - x) - h2 * e2 - U * (h2 + 2 * fabs(x));
  double g1 = (h1 - z) + h1 * e1 + U * (h1 + fabs(z));
  double ilo = mu * g2 * (1 - 4 * U), ihi = mu * g1 * (1 + 4 * U);
  double nlo = fmax(lo, ilo), nhi = fmin(hi, ihi);
  if (nlo <= nhi) lo = nlo, hi = nhi;
  *dlo = fmax(lo, 0);
  *dhi = hi;
}

/* Bracket [*lo, *hi] of log delta at z = (eps - mu^2/2) / mu (mu > 0 finite):
 * delta = Q(z) - e^{eps} Q(z + mu) = Q(z) (1 - h(z) / h(z + mu)), both factors > 0. */
void dpgd_acct_gdp_log_delta_z(double mu, double z, double *lo, double *hi)
{
  if (isnan(z)) {
    *lo = *hi = NAN;
    return;
  }
  if (z == INFINITY) {
    *lo = *hi = -INFINITY;
    return;
  }
  double eq, dlo, dhi;
  double lq = log_q_e(z, &eq);
  if (lq == -INFINITY) {
    *lo = *hi = -INFINITY;
    return;
  }
  d_bracket(mu, z, &dlo, &dhi);
  double f_hi = log(-expm1(-dhi)), f_lo = dlo > 0 ? log(-expm1(-dlo)) : -INFINITY;
  double h = lq + eq + f_hi, l = lq - eq + f_lo;
  *hi = h + 4 * U * (1 + fabs(h));
  *lo = l - 4 * U * (1 + fabs(l));
  if (*hi > 0) *hi = 0;
}

/* z = (eps - mu^2/2) / mu and a bound on its error: one rounding for the fused
 * eps - mu (mu/2), one for the quotient; where mu^2 would overflow, from eps/mu - mu/2. */
static double z_of_eps(double mu, double eps, double *ez)
{
  if (mu < 1e150) {
    double z = fma(-mu, 0.5 * mu, eps) / mu;
    *ez = 2 * U * fabs(z) + 1e-300;
    return z;
  }
  *ez = 2 * U * (eps / mu + 0.5 * mu);
  return eps / mu - 0.5 * mu;
}

/* Bracket of log delta(eps) of mu-GDP; -inf when delta is exactly 0 (mu = 0). */
static void gdp_log_bracket(double mu, double eps, double *lo, double *hi)
{
  if (mu == 0 || isinf(eps)) {
    *lo = *hi = -INFINITY;
    return;
  }
  if (isinf(mu)) {
    *lo = *hi = 0;
    return;
  }
  double ez, l, h;
  double z = z_of_eps(mu, eps, &ez);
  dpgd_acct_gdp_log_delta_z(mu, z - ez, &l, hi); /* delta decreases in z */
  dpgd_acct_gdp_log_delta_z(mu, z + ez, lo, &h);
}

double dpgd_acct_gdp_log_delta_e(double mu, double eps, double *err)
{
  *err = 0;
  if (!(mu >= 0) || !(eps >= 0) || isnan(mu)) return NAN;
  double lo, hi;
  gdp_log_bracket(mu, eps, &lo, &hi);
  return hi;
}

double dpgd_acct_gdp_delta_e(double mu, double eps, double *err)
{
  *err = 0;
  if (!(mu >= 0) || !(eps >= 0) || isnan(mu)) return NAN;
  double lo, hi;
  gdp_log_bracket(mu, eps, &lo, &hi);
  if (hi == -INFINITY && (mu == 0 || isinf(eps))) return 0; /* exactly 0 */
  /* delta > 0 for mu > 0: never below the smallest normal */
  double d = exp(hi) * (1 + 4 * U) + DBL_MIN;
  if (d > 1) d = 1;
  *err = d - exp(lo);
  return d;
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
  double eps, log_target;
} gdp_root_par;

static double f_of_mu(double mu, void *vp)
{
  const gdp_root_par *p = vp;
  double lo, hi;
  gdp_log_bracket(mu, p->eps, &lo, &hi);
  return clamp_log(hi) - p->log_target;
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

/* Upper bound of log delta at z (mu fixed): the bisection's test. */
static double log_delta_hi_z(double mu, double z)
{
  double lo, hi;
  dpgd_acct_gdp_log_delta_z(mu, z, &lo, &hi);
  return hi;
}

/* Bisection in z on the upper bound of log delta, keeping the end where it is <= ld
 * (verified); eps = mu (mu/2 + z) has no cancellation there (GDP.md section 3). */
int dpgd_acct_gdp_epsilon_e(double mu, double delta, double *eps, double *err)
{
  if (!(mu >= 0) || isinf(mu))
    return DPGD_FAIL(DPGD_EINVAL, "mu must be finite and >= 0 (got %g)", mu);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  double ld = log(delta), z0 = -0.5 * mu;
  *eps = *err = 0;
  if (mu == 0 || log_delta_hi_z(mu, z0) <= ld) return DPGD_OK; /* delta(0) <= delta */
  double zl = fmax(z0, -40), zh = sqrt(-2 * ld) + 1;
  if (log_delta_hi_z(mu, zl) <= ld) zh = zl, zl = z0;
  for (int i = 0; log_delta_hi_z(mu, zh) > ld; i++) {
    if (i > 60) return DPGD_FAIL(DPGD_ERANGE, "eps(delta) for mu=%g out of range", mu);
    zh = 2 * zh + 1;
  }
  for (int it = 0; it < 4 * ACCT_MAX_ITER; it++) {
    double tol = ACCT_ROOT_RELTOL * (0.5 * mu + zl) + 4 * U * (0.5 * mu + fabs(zh));
    double mid = zl + 0.5 * (zh - zl);
    if (zh - zl <= tol || mid <= zl || mid >= zh) break;
    if (log_delta_hi_z(mu, mid) <= ld) zh = mid;
    else zl = mid;
  }
  double e = mu * (0.5 * mu + zh); /* two roundings, covered by round_up */
  if (!(e < DBL_MAX / 2))
    return DPGD_FAIL(DPGD_ERANGE, "eps(delta) of mu=%g exceeds the double range", mu);
  *eps = dpgd_acct_round_up(e);
  *err = *eps - mu * fmax(0, 0.5 * mu + zl) * (1 - 4 * U);
  return DPGD_OK;
}

int dpgd_gdp_epsilon(double mu, double delta, double *eps)
{
  double err;
  return dpgd_acct_gdp_epsilon_e(mu, delta, eps, &err);
}

int dpgd_gdp_mu(double eps, double delta, double *mu)
{
  if (!(eps >= 0) || isinf(eps))
    return DPGD_FAIL(DPGD_EINVAL, "eps must be finite and >= 0 (got %g)", eps);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  gdp_root_par p = {eps, log(delta)};
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
