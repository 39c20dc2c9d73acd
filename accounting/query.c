/* query.c -- dpgd_acct_epsilon / dpgd_acct_delta: argument checks and dispatch to the
 * methods. Pure-Gaussian compositions use the closed form of docs/MATH.md "The Gaussian
 * curve" with mu = sqrt(sum mu_j^2); zCDP (Gaussian-only) uses rho = mu^2/2 and the classic
 * conversion eps = rho + 2 sqrt(rho log(1/delta)) (docs/MATH.md "zCDP"). */
#include <float.h>
#include <math.h>

#include "acct_internal.h"

/* rho = mu^2/2: eps = rho + 2 sqrt(rho log(1/delta)) = mu (mu/2 + sqrt(2 log(1/delta))),
 * formed from mu so that neither mu^2 underflows nor the terms cancel (GDP.md 4). */
static int zcdp_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out)
{
  double mu = dpgd_acct_gauss_mu_up(a);
  double v = mu * (0.5 * mu + sqrt(-2 * log(delta)));
  if (!(v < DBL_MAX / 2))
    return DPGD_FAIL(DPGD_ERANGE, "zcdp: eps exceeds the double range (mu = %g)", mu);
  out->err = fabs(v) * 8 * DBL_EPSILON;
  out->value = dpgd_acct_round_up(v);
  return DPGD_OK;
}

/* delta = exp(-(eps - rho)^2 / (4 rho)) = exp(-z^2/2), z = (eps - mu^2/2)/mu, for eps > rho. */
static int zcdp_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  double mu = dpgd_acct_gauss_mu_up(a), d;
  if (mu == 0) d = 0;
  else {
    double z = mu < 1e150 ? fma(-mu, 0.5 * mu, eps) / mu : eps / mu - 0.5 * mu;
    z *= 1 - 4 * DBL_EPSILON;           /* z rounded towards 0 ... */
    d = z <= 0 ? 1 : exp(-0.5 * z * z); /* ... and delta up (exp: 1 ulp) */
    if (d < 1) d = d * (1 + 8 * DBL_EPSILON) + DBL_MIN;
  }
  out->err = d * 16 * DBL_EPSILON;
  out->value = d > 1 ? 1 : d;
  return DPGD_OK;
}

static int check_query(const dpgd_accountant *a, dpgd_acct_method m, dpgd_acct_value *out)
{
  if (!a || !out) return DPGD_FAIL(DPGD_EINVAL, "accountant query: NULL argument");
  if ((int)m < 0 || m >= DPGD_ACCT_N_METHODS)
    return DPGD_FAIL(DPGD_EINVAL, "unknown accounting method %d", (int)m);
  if (m == DPGD_ACCT_ZCDP && !dpgd_acct_all_zcdp(a))
    return DPGD_FAIL(DPGD_EINVAL,
                     "zcdp applies to compositions of Gaussians and discrete Gaussians");
  if (m == DPGD_ACCT_EXACT && dpgd_acct_has_discrete_gaussian(a))
    return DPGD_FAIL(DPGD_EINVAL,
                     "no exact privacy curve is proven for the multivariate discrete Gaussian; "
                     "the rdp_* rows (and zcdp, unsubsampled) are its proven bounds "
                     "(Canonne, Kamath & Steinke 2020; docs/MATH.md 18, 18.1)");
  if (m == DPGD_ACCT_EXACT && dpgd_acct_replace_one(a))
    return DPGD_FAIL(DPGD_EINVAL,
                     "no dominating pair is known for sampling without replacement under "
                     "replace-one neighbours; the rdp_* rows are upper bounds");
  return DPGD_OK;
}

int dpgd_acct_epsilon(const dpgd_accountant *a, dpgd_acct_method m, double delta,
                      dpgd_acct_value *out)
{
  int st = check_query(a, m, out);
  if (st) return st;
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta must lie in (0, 1) (got %g)", delta);
  out->value = out->err = 0;
  dpgd_acct_exact_note_set("");
  if (a->n == 0) return DPGD_OK;
  switch (m) {
  case DPGD_ACCT_EXACT:
    if (dpgd_acct_all_gaussian(a))
      return dpgd_acct_gdp_epsilon_e(dpgd_acct_gauss_mu_up(a), delta, &out->value, &out->err);
    return dpgd_acct_exact_epsilon(a, delta, out);
  case DPGD_ACCT_ZCDP: return zcdp_epsilon(a, delta, out);
  default: return dpgd_acct_rdp_epsilon(a, m, delta, out);
  }
}

int dpgd_acct_delta(const dpgd_accountant *a, dpgd_acct_method m, double eps,
                    dpgd_acct_value *out)
{
  int st = check_query(a, m, out);
  if (st) return st;
  if (!(eps >= 0) || isinf(eps))
    return DPGD_FAIL(DPGD_EINVAL, "eps must be finite and >= 0 (got %g)", eps);
  out->value = out->err = 0;
  dpgd_acct_exact_note_set("");
  if (a->n == 0) return DPGD_OK;
  switch (m) {
  case DPGD_ACCT_EXACT:
    if (dpgd_acct_all_gaussian(a)) {
      out->value = dpgd_acct_gdp_delta_e(dpgd_acct_gauss_mu_up(a), eps, &out->err);
      return DPGD_OK;
    }
    return dpgd_acct_exact_delta(a, eps, out);
  case DPGD_ACCT_ZCDP: return zcdp_delta(a, eps, out);
  default: return dpgd_acct_rdp_delta(a, m, eps, out);
  }
}
