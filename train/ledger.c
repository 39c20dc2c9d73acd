/* ledger.c -- the per-point privacy ledger of Algorithm 7 (MATH.md section 1): clip caps
 * from the remaining budget, the spend update, the invariant s(i) <= B_norm, and the
 * per-point odometer of MATH.md "Per-point privacy report". No OpenMP here (STYLE.md 11)
 * and no fast-math: the comparisons below are exact. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "dpgd_train.h"

dpgd_ledger *dpgd_ledger_alloc(size_t n, int filtered, double clip, double budget)
{
  if (n == 0 || !(clip > 0) || !isfinite(clip)) return NULL;
  if (filtered && (!(budget > 0) || !isfinite(budget))) return NULL;
  dpgd_ledger *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->n = n;
  l->filtered = filtered ? 1 : 0;
  l->clip = clip;
  l->clip2 = clip * clip;
  l->budget = filtered ? budget : INFINITY;
  l->spend = calloc(n, sizeof *l->spend);
  l->odo_fill = calloc(n, sizeof *l->odo_fill);
  l->odo_filters = calloc(n, sizeof *l->odo_filters);
  if (!l->spend || !l->odo_fill || !l->odo_filters) {
    dpgd_ledger_free(l);
    return NULL;
  }
  return l;
}

void dpgd_ledger_free(dpgd_ledger *l)
{
  if (!l) return;
  free(l->spend);
  free(l->odo_fill);
  free(l->odo_filters);
  free(l);
}

/* Algorithm 7's cap for a point that has spent s of budget B. The exact branch (cap = C
 * when s + C^2 <= B in floating point) is what makes Algorithm 7 reproduce Algorithm 6
 * bit for bit. Otherwise the cap is sqrt(B - s), stepped down by ulps until s + cap^2
 * <= B in floating point: the ledger never needs clamping. */
static double filtered_cap(double s, double clip, double clip2, double budget)
{
  if (s + clip2 <= budget) return clip;
  double rem = budget - s;
  if (!(rem > 0)) return 0.0;
  double cap = sqrt(rem);
  if (cap > clip) cap = clip;
  while (cap > 0 && s + cap * cap > budget) cap = nextafter(cap, 0.0);
  return cap;
}

void dpgd_ledger_caps(const dpgd_ledger *l, double *caps)
{
  if (!l->filtered) {
    for (size_t i = 0; i < l->n; i++) caps[i] = l->clip;
    return;
  }
  for (size_t i = 0; i < l->n; i++)
    caps[i] = filtered_cap(l->spend[i], l->clip, l->clip2, l->budget);
}

int dpgd_ledger_spend(dpgd_ledger *l, const double *caps, const double *sqnorm_post)
{
  for (size_t i = 0; i < l->n; i++) {
    double x = sqnorm_post[i];
    if (!(x >= 0) || !isfinite(x))
      return DPGD_FAIL(DPGD_ERANGE,
                       "post-clip squared norm of point %zu is %g (model defect); ledger "
                       "unchanged",
                       i, x);
  }
  for (size_t i = 0; i < l->n; i++) {
    double cap2 = caps[i] * caps[i];
    double x = sqnorm_post[i] < cap2 ? sqnorm_post[i] : cap2;
    if (x == 0) continue;
    l->spend[i] += x;
    assert(l->spend[i] <= l->budget);
    /* Odometer: filters of Delta = C^2 (spend units). */
    if (l->odo_filters[i] == 0 || l->odo_fill[i] + x > l->clip2) {
      l->odo_filters[i]++;
      l->odo_fill[i] = x;
    } else {
      l->odo_fill[i] += x;
    }
  }
  return DPGD_OK;
}

size_t dpgd_ledger_active(const dpgd_ledger *l)
{
  size_t a = 0;
  for (size_t i = 0; i < l->n; i++) a += l->spend[i] < l->budget;
  return a;
}

int dpgd_ledger_check(const dpgd_ledger *l)
{
  for (size_t i = 0; i < l->n; i++) {
    double s = l->spend[i];
    if (!(s >= 0) || !(s <= l->budget))
      return DPGD_FAIL(DPGD_ERANGE, "ledger invariant broken: s(%zu) = %.17g, B_norm = %.17g",
                       i, s, l->budget);
    if (!(l->odo_fill[i] >= 0 && l->odo_fill[i] <= l->clip2) ||
        (l->odo_filters[i] == 0 && s != 0) || (l->odo_filters[i] > 0 && s == 0))
      return DPGD_FAIL(DPGD_ERANGE, "odometer of point %zu inconsistent with its spend", i);
  }
  return DPGD_OK;
}

double dpgd_ledger_point_mu(const dpgd_ledger *l, size_t i, double sigma)
{
  return sqrt((double)l->odo_filters[i]) / sigma;
}
