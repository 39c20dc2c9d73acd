/* ledger.c -- the per-point privacy ledger of Algorithm 7 (MATH.md section 1): clip caps
 * from the remaining budget, the spend update, the invariant s(i) <= B_norm, and each
 * point's total for the odometer of MATH.md "Per-point privacy report". No OpenMP here
 * (STYLE.md 11) and no fast-math: the comparisons below are exact. */
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
  l->slack = 0;
  l->spend = calloc(n, sizeof *l->spend);
  if (!l->spend) {
    dpgd_ledger_free(l);
    return NULL;
  }
  return l;
}

void dpgd_ledger_free(dpgd_ledger *l)
{
  if (!l) return;
  free(l->spend);
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

/* The sensitivity the accountant allows point i this step: C, or Algorithm 7's cap. */
static double allowance(const dpgd_ledger *l, size_t i)
{
  return l->filtered ? filtered_cap(l->spend[i], l->clip, l->clip2, l->budget) : l->clip;
}

int dpgd_ledger_set_slack(dpgd_ledger *l, double slack)
{
  if (!(slack >= 0) || !(slack < l->clip))
    return DPGD_FAIL(DPGD_EINVAL, "summation slack %g must lie in [0, C = %g)", slack, l->clip);
  l->slack = slack;
  return DPGD_OK;
}

void dpgd_ledger_caps(const dpgd_ledger *l, double *caps)
{
  for (size_t i = 0; i < l->n; i++) {
    double a = allowance(l, i);
    /* A point whose allowance does not exceed the slack is left out (cap 0): it then
     * enters no arithmetic at all and moves the sum by exactly nothing. */
    caps[i] = a > l->slack ? a - l->slack : 0.0;
  }
}

/* The charge of one step: the sensitivity bound ||v_i|| + slack squared, rounded up
 * (2^-50 covers the rounding of the sqrt, sum and square), never above the allowance
 * squared (the engine keeps ||v_i|| <= cap = allowance - slack). */
static double charge(const dpgd_ledger *l, size_t i, double cap, double post)
{
  if (cap == 0 || post == 0) return 0;
  double a = allowance(l, i), a2 = a == l->clip ? l->clip2 : a * a;
  double x = post;
  if (l->slack > 0) {
    x = sqrt(post) + l->slack;
    x = x * x * (1 + 0x1p-50);
  }
  return x < a2 ? x : a2;
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
    double x = charge(l, i, caps[i], sqnorm_post[i]);
    if (x == 0) continue;
    l->spend[i] += x;
    assert(l->spend[i] <= l->budget);
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
  }
  return DPGD_OK;
}

double dpgd_ledger_point_mu2(const dpgd_ledger *l, size_t i, double sigma)
{
  double sc = sigma * l->clip;
  return l->spend[i] / (sc * sc) * (1 + 0x1p-50);
}
