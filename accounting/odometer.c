/* odometer.c -- the per-point privacy report of an individual filter (docs/MATH.md
 * "Per-point odometer"): a point's realised spend is turned into a guarantee that
 * stays valid although the spend, and hence the level it reaches, depends on the data.
 *
 * Levels m = 1..L of Delta each (GDP mu^2 units). For a level m fixed in advance, the
 * run stopped at the moment point i's total mu^2 would pass m Delta is a GDP filter of
 * budget m Delta for point i (Smith & Thakurta 2022; Feldman & Zrnic, Prop. 4.10 with
 * filters of Delta opened one after another), hence sqrt(m Delta)-GDP. The realised
 * level m_i = min{m : total_i <= m Delta} is random; giving level m the share delta_m
 * of delta (sum <= delta) makes eps_GDP(sqrt(m_i Delta), delta_{m_i}) a valid ex-post
 * bound (Whitehouse, Ramdas, Rogers & Wu, ICML 2023). Level m's budget is the double
 * m * Delta as computed here, the same number in the level search and in the report.
 * The derivation and the choice of
 * Delta, L and the split are in train/RUN_FORMAT.md ("points.csv"). */
#include <math.h>

#include "dpgd_accounting.h"

/* sqrt(m Delta) rounded up: the bound's mu is never below it. */
static double level_mu(const dpgd_odometer *o, size_t m)
{
  return nextafter(sqrt((double)m * o->level_mu2), INFINITY);
}

int dpgd_odometer_init(dpgd_odometer *o, double mu_max, double max_step_mu2, double delta)
{
  if (!(mu_max > 0) || !isfinite(mu_max) || !(max_step_mu2 > 0) || !isfinite(max_step_mu2))
    return DPGD_FAIL(DPGD_EINVAL, "odometer: mu_max %g and the step's mu^2 %g must be > 0",
                     mu_max, max_step_mu2);
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "odometer: delta %g must lie in (0, 1)", delta);
  double top = mu_max * mu_max;
  /* Delta >= the largest one-step increment (Feldman & Zrnic, Prop. 4.10), at most
   * DPGD_ODOMETER_MAX_LEVELS levels. */
  double fit = floor(top / max_step_mu2);
  size_t L = fit < 1                          ? 1
             : fit > DPGD_ODOMETER_MAX_LEVELS ? DPGD_ODOMETER_MAX_LEVELS
                                              : (size_t)fit;
  o->levels = L;
  /* Rounded up so that L Delta >= mu_max^2: the top level holds every point. */
  o->level_mu2 = nextafter(top / (double)L, INFINITY);
  while ((double)L * o->level_mu2 < top) o->level_mu2 = nextafter(o->level_mu2, INFINITY);
  o->delta = delta;
  if (L == 1) {
    o->delta_top = delta;
    o->delta_low = 0;
  } else {
    /* Shrunk by 2^-30 so that the real sum of the rounded shares stays below delta. */
    o->delta_top = delta * (1.0 - DPGD_ODOMETER_LOW_SHARE);
    o->delta_low = delta * DPGD_ODOMETER_LOW_SHARE / (double)(L - 1) * (1 - 0x1p-30);
  }
  /* Each level's own statement, then from the top down the smallest statement at or
   * above each level (see dpgd_odometer_report for why a higher one may be used). */
  double eps_own[DPGD_ODOMETER_MAX_LEVELS + 1];
  for (size_t m = 1; m <= L; m++) {
    int rc = dpgd_gdp_epsilon(level_mu(o, m), dpgd_odometer_delta(o, m), &eps_own[m]);
    if (rc) return rc;
  }
  for (size_t m = L; m >= 1; m--) {
    int higher = m < L && o->eps[m + 1] < eps_own[m];
    o->statement[m] = higher ? o->statement[m + 1] : m;
    o->eps[m] = higher ? o->eps[m + 1] : eps_own[m];
  }
  return DPGD_OK;
}

double dpgd_odometer_delta(const dpgd_odometer *o, size_t m)
{
  if (m == 0 || m > o->levels) return 0;
  return m == o->levels ? o->delta_top : o->delta_low;
}

int dpgd_odometer_level(const dpgd_odometer *o, double mu2, size_t *level)
{
  if (!(mu2 >= 0) || !isfinite(mu2))
    return DPGD_FAIL(DPGD_ERANGE, "odometer: spend %g is not a finite mu^2 >= 0", mu2);
  double q = ceil(mu2 / o->level_mu2);
  size_t m = q < 1 ? 1 : (size_t)q;
  /* The division rounds: step until (m - 1) Delta < mu2 <= m Delta holds as computed. */
  while ((double)m * o->level_mu2 < mu2) m++;
  while (m > 1 && (double)(m - 1) * o->level_mu2 >= mu2) m--;
  if (m > o->levels)
    return DPGD_FAIL(DPGD_ERANGE,
                     "odometer: spend mu^2 = %.17g exceeds the top level %zu x %.17g", mu2,
                     o->levels, o->level_mu2);
  *level = m;
  return DPGD_OK;
}

int dpgd_odometer_report(const dpgd_odometer *o, double mu2, size_t *level, double *mu,
                         double *eps)
{
  size_t m;
  int rc = dpgd_odometer_level(o, mu2, &m);
  if (rc) return rc;
  /* A point at level m may be reported with the statement of any level j >= m: the
   * run stopped at level j coincides with the real one whenever the point's level is
   * at most j, and each statement is used on one set of outputs only, so the shares
   * still add up to at most delta. The smallest such statement is reported. */
  size_t j = o->statement[m];
  *level = j;
  *mu = level_mu(o, j);
  *eps = o->eps[j];
  return DPGD_OK;
}
