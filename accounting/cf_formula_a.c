/* cf_formula_a.c -- */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_sf_gamma.h>

#include "cf_internal.h"

/* ---- formula A (Gil-Pelaez), for compositions with a Gaussian entry ---- */

typedef struct {
  cf_ctx b;    /* c unused */
  double mu_g; /* sqrt(sum n mu^2) of the Gaussian entries */
} a_ctx;

static double a_integrand(double t, void *vp)
{
  const a_ctx *x = vp;
  double complex lp = dpgd_acct_log_mgf(x->b.a, x->b.dir, I * t);
  double complex lq = dpgd_acct_log_mgf(x->b.a, x->b.dir, -1 + I * t);
  double complex ph = cexp(-I * t * x->b.eps);
  double complex v = ph * (cexp(lp) - cexp(lq + x->b.eps));
  return cimag(v) / (M_PI * t);
}

/* |integrand| <= (1 + e^eps) P(t) e^{-mu_g^2 t^2/2} / (pi t), P the non-Gaussian bound
 * (the same at c = 0 and c = -1); integrated beyond T. */
static double a_tail(const void *vp, double T)
{
  const a_ctx *x = vp;
  double mx = 0;
  for (int c = -1; c <= 0; c++) {
    cf_ctx y = x->b;
    y.c = c;
    y.subtract = 0;
    double A, Bd;
    dpgd_acct_cf_bound_logs(&y, T, &A, &Bd, NULL);
    /* remove the Gaussian factor exp(mu_g^2 (c^2 + c - T^2)/2) = exp(-mu_g^2 T^2 / 2) */
    A += x->mu_g * x->mu_g * T * T / 2;
    mx = fmax(mx, exp(A));
  }
  double mg = x->mu_g;
  double g = sqrt(M_PI / 2) / mg * gsl_sf_erfc(mg * T / M_SQRT2);
  return (1 + exp(x->b.eps)) * mx * g / (M_PI * T);
}

int dpgd_acct_delta_formula_a(const dpgd_accountant *a, int dir, double eps,
                              dpgd_acct_value *out)
{
  if (dpgd_acct_cf_gl_init()) return DPGD_ENOMEM;
  double mu2 = dpgd_acct_gauss_mu2(a);
  if (!(mu2 > 0))
    return DPGD_FAIL(DPGD_ERANGE, "formula A needs a Gaussian entry for a bounded tail");
  a_ctx x = {.b = {.a = a, .dir = dir, .eps = eps}, .mu_g = sqrt(mu2)};
  gsl_function F = {a_integrand, &x};
  dpgd_acct_gsl_quiet();
  double v = 0, e = 0;
  int st = dpgd_acct_cf_integrate_tail(&F, &x, a_tail, 0, 0, 4 / x.mu_g, 0, &v, &e);
  if (st) return st;
  /* the O(1) terms cancel: the rounding error is relative to them, not to delta */
  e += 8 * DBL_EPSILON * (1 + exp(eps));
  dpgd_acct_cf_clamp_delta(out, (1 - exp(eps)) / 2 + v, e);
  return DPGD_OK;
}

int dpgd_acct_delta_enum(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  dpgd_acct_value best = {0, 0};
  for (int dir = 0; dir <= dpgd_acct_asymmetric(a); dir++) {
    for (size_t i = 0; i < a->n; i++)
      if (a->e[i].kind != ACCT_RR && a->e[i].kind != ACCT_DISCRETE)
        return DPGD_FAIL(DPGD_EINVAL, "enumeration applies to RR/discrete compositions only");
    atoms at;
    int st = dpgd_acct_cf_enumerate(a, dir, &at);
    if (st) return st;
    if (at.too_big)
      return DPGD_FAIL(DPGD_ERANGE, "enumeration needs more than %d atoms",
                       ACCT_ENUM_MAX_ATOMS);
    double err, v = dpgd_acct_cf_atoms_delta(&at, eps, &err);
    dpgd_acct_cf_atoms_free(&at);
    dpgd_acct_value o;
    dpgd_acct_cf_clamp_delta(&o, v, err);
    if (o.value > best.value) best = o;
  }
  *out = best;
  return DPGD_OK;
}
