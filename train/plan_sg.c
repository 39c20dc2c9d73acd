/* plan_sg.c -- the plan of individually filtered DP-SGD (train/DPSGD_FILTER.md section
 * 4): the filter's guarantee, (a_j, B_j)-RDP at the default orders with B_j the budgets
 * of k full-rate steps (the very budgets the ledger's filter gets), converted to
 * (eps, delta) by the optimal conversion, and sigma calibrated to it. */
#include <math.h>
#include <stdint.h>

#include "plan_internal.h"

int dpgd_plan_sg_epsilon(double q, double sigma, double k, double delta, double *eps)
{
  /* A grid of 1 holds the full-rate entries x = 1 exactly as the ledger's grid does. */
  dpgd_filter_sg *t =
      dpgd_filter_sg_alloc(q, sigma, DPGD_FILTER_SG_N_ORDERS, dpgd_filter_sg_orders, 1);
  if (!t)
    return DPGD_FAIL(DPGD_EINVAL, "filter at q = %g, sigma = %g: %s", q, sigma,
                     dpgd_error_last());
  double budgets[DPGD_FILTER_MAX_ORDERS];
  int rc = dpgd_filter_sg_budgets(t, k, budgets);
  dpgd_filter *f = NULL;
  if (!rc) {
    f = dpgd_filter_alloc(1, DPGD_FILTER_RDP, DPGD_FILTER_SG_N_ORDERS, dpgd_filter_sg_orders,
                          budgets);
    if (!f) rc = DPGD_FAIL(DPGD_ERANGE, "filter budgets at q = %g, sigma = %g", q, sigma);
  }
  if (!rc) rc = dpgd_filter_epsilon(f, DPGD_ACCT_RDP_OPTIMAL, 1.0, delta, eps);
  dpgd_filter_free(f);
  dpgd_filter_sg_free(t);
  return rc;
}

/* eps of the filter at sigma, +inf where it cannot be stated (sigma too small). */
static double sg_eps_or_inf(const dpgd_plan *p, double k, double sigma)
{
  double e;
  if (dpgd_plan_sg_epsilon(p->sample_rate, sigma, k, p->delta, &e)) e = INFINITY;
  dpgd_error_clear();
  return e;
}

/* The smallest sigma (to 1e-7 relative, rounded up: docs/MATH.md "Calibration") whose filter
 * guarantee is <= eps: bracket by doubling and halving from 1, then bisection in log
 * sigma; the upper end, where eps was seen to hold, is the answer. */
int dpgd_plan_sg_calibrate(dpgd_plan *p, double k, double eps)
{
  double lo = 0, hi = 1;
  for (int i = 0; sg_eps_or_inf(p, k, hi) > eps; i++) {
    if (i == 64)
      return DPGD_FAIL(DPGD_ERANGE, "calibration: no sigma up to %g gives the filter eps %g",
                       hi, eps);
    lo = hi, hi *= 2;
  }
  for (int i = 0; lo == 0; i++) {
    if (i == 64) return DPGD_FAIL(DPGD_ERANGE, "calibration: sigma below %g", hi);
    if (sg_eps_or_inf(p, k, hi / 2) > eps) lo = hi / 2;
    else hi /= 2;
  }
  while (hi - lo > hi * 1e-7) {
    double mid = sqrt(lo * hi);
    if (!(mid > lo && mid < hi)) break;
    if (sg_eps_or_inf(p, k, mid) > eps) lo = mid;
    else hi = mid;
  }
  p->sigma = hi;
  return DPGD_OK;
}
