/* iteration.c -- privacy of one point of a one-pass projected noisy SGD run whose last
 * iterate only is released (accounting/ITERATION.md): amplification by iteration
 * (Feldman, Mironov, Talwar & Thakurta 2018, Theorem 23: an RDP curve), the contraction
 * bound (Asoodeh, Diaz & Calmon: delta(eps) directly) and the composition baseline. */
#include <float.h>
#include <math.h>

#include "acct_internal.h"

int dpgd_iter_check(const dpgd_iter_setting *s)
{
  if (!s) return DPGD_FAIL(DPGD_EINVAL, "iteration: no setting");
  if (s->n < 1 || s->t < 1 || s->t > s->n)
    return DPGD_FAIL(DPGD_EINVAL, "iteration: need 1 <= t <= n (got n = %llu, t = %llu)",
                     (unsigned long long)s->n, (unsigned long long)s->t);
  if (!(s->grad_sens > 0) || isinf(s->grad_sens))
    return DPGD_FAIL(DPGD_EINVAL,
                     "iteration: the gradient sensitivity must be finite and > 0 "
                     "(got %g)",
                     s->grad_sens);
  if (!(s->sigma > 0) || isinf(s->sigma))
    return DPGD_FAIL(DPGD_EINVAL, "iteration: sigma must be finite and > 0 (got %g)", s->sigma);
  if (!(s->diameter >= 0))
    return DPGD_FAIL(DPGD_EINVAL, "iteration: the diameter must be >= 0 (got %g)", s->diameter);
  if (isfinite(s->diameter) && (!(s->eta > 0) || isinf(s->eta)))
    return DPGD_FAIL(DPGD_EINVAL, "iteration: a finite diameter needs a step eta > 0 (got %g)",
                     s->eta);
  return DPGD_OK;
}

/* The Gaussian ratio of the point's own step, g / sigma, rounded up (ITERATION.md 3, 4). */
static double step_mu(const dpgd_iter_setting *s)
{
  return dpgd_acct_round_up(s->grad_sens / s->sigma);
}

double dpgd_iter_rho(const dpgd_iter_setting *s)
{
  if (dpgd_iter_check(s)) return NAN;
  double mu = step_mu(s);
  double steps = (double)(s->n - s->t + 1); /* exact below 2^53; rounded up above */
  if (steps > 9007199254740992.0) steps = nextafter(steps, 0);
  return dpgd_acct_round_up(mu * mu / (2 * steps));
}

/* eps at delta of one Gaussian of ratio mu under method m, with an accountant on the
 * stack (no allocation in a query, STYLE.md 6). */
static int gaussian_epsilon(double mu, dpgd_acct_method m, double delta, dpgd_acct_value *out)
{
  acct_entry en = {.kind = ACCT_GAUSSIAN, .count = 1, .par = {mu, 0}};
  dpgd_accountant acc = {.e = &en, .n = 1, .cap = 1};
  return dpgd_acct_epsilon(&acc, m, delta, out);
}

int dpgd_iter_epsilon(const dpgd_iter_setting *s, dpgd_acct_method m, double delta,
                      dpgd_acct_value *out)
{
  int st = dpgd_iter_check(s);
  if (st) return st;
  if (m == DPGD_ACCT_EXACT)
    return DPGD_FAIL(DPGD_EINVAL, "exact: amplification by iteration gives an RDP curve, not "
                                  "a Gaussian privacy profile (use zcdp or rdp_*)");
  if (m < 0 || m >= DPGD_ACCT_N_METHODS)
    return DPGD_FAIL(DPGD_EINVAL, "iteration: unknown method %d", (int)m);
  /* eps_hat(a) = a rho is the RDP curve of a Gaussian of ratio sqrt(2 rho): the RDP
   * conversions see only the curve (rounded up once more after the square root). */
  return gaussian_epsilon(dpgd_acct_round_up(sqrt(2 * dpgd_iter_rho(s))), m, delta, out);
}

int dpgd_iter_composition_epsilon(const dpgd_iter_setting *s, dpgd_acct_method m, double delta,
                                  dpgd_acct_value *out)
{
  int st = dpgd_iter_check(s);
  if (st) return st;
  return gaussian_epsilon(step_mu(s), m, delta, out);
}

/* log of theta_eps(g/sigma) theta_eps(diam/(eta sigma))^(n - t) (ITERATION.md 3) and a
 * bound *err on its absolute error. */
static double contraction_log_delta(const dpgd_iter_setting *s, double eps, double *err)
{
  double e1, e2 = 0, l2 = 0;
  double l1 = dpgd_acct_gdp_log_delta_e(step_mu(s), eps, &e1);
  double k = (double)(s->n - s->t);
  if (k > 0 && isfinite(s->diameter)) {
    double r = dpgd_acct_round_up(s->diameter / (s->eta * s->sigma));
    l2 = dpgd_acct_gdp_log_delta_e(r, eps, &e2);
  }
  if (isnan(l1) || isnan(l2)) {
    *err = 0;
    return NAN;
  }
  if (l1 == -INFINITY || (k > 0 && l2 == -INFINITY)) {
    *err = 0;
    return -INFINITY;
  }
  double ld = l1 + k * l2;
  /* k may be rounded (above 2^53), k * l2 and the sum each round once */
  *err = e1 + k * e2 + 4 * DBL_EPSILON * (fabs(l1) + fabs(k * l2));
  return ld;
}

/* delta(eps) of the contraction bound, its error bound added (clipped to 1). */
static double contraction_delta_e(const dpgd_iter_setting *s, double eps, double *err)
{
  double lerr;
  double ld = contraction_log_delta(s, eps, &lerr);
  if (isnan(ld)) return NAN;
  double d = exp(ld);
  double up = d * expm1(lerr + 2 * DBL_EPSILON) + DBL_MIN;
  *err = up;
  d += up;
  return d > 1 ? 1 : d;
}

double dpgd_iter_contraction_delta(const dpgd_iter_setting *s, double eps)
{
  double err;
  if (dpgd_iter_check(s) || !(eps >= 0)) return NAN;
  return contraction_delta_e(s, eps, &err);
}

int dpgd_iter_contraction_epsilon(const dpgd_iter_setting *s, double delta,
                                  dpgd_acct_value *out)
{
  int st = dpgd_iter_check(s);
  if (st) return st;
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  double err, lo = 0, hi;
  if (contraction_delta_e(s, 0, &err) <= delta) {
    out->value = out->err = 0;
    return DPGD_OK;
  }
  /* the bound is at most one Gaussian step's: its eps is a start for the upper end */
  st = dpgd_gdp_epsilon(step_mu(s), delta, &hi);
  if (st) return st;
  for (int i = 0; contraction_delta_e(s, hi, &err) > delta; i++) {
    if (i > 60)
      return DPGD_FAIL(DPGD_ERANGE, "contraction: eps(delta = %g) out of range", delta);
    hi = 2 * hi + 1e-300;
  }
  /* bisection keeping the upper end, whose delta(eps) <= delta has been verified */
  for (int it = 0; it < ACCT_MAX_ITER && hi - lo > ACCT_ROOT_RELTOL * hi; it++) {
    double mid = (lo + hi) / 2;
    if (contraction_delta_e(s, mid, &err) <= delta) hi = mid;
    else lo = mid;
  }
  out->err = hi - lo;
  out->value = hi;
  return DPGD_OK;
}
