/* ledger.c -- the per-point privacy ledger of Algorithm 7 (docs/MATH.md "Private gradient
 * descent"): the
 * trainer's use of the accountant's individual GDP filter (dpgd_filter_*, which owns the
 * clip caps from the remaining budget, the spend update and the invariant s(i) <=
 * B_norm), plus what is the trainer's own: the summation slack and the charge of a
 * step, and each point's total for the odometer of docs/MATH.md "Per-point odometer".
 * No OpenMP here (STYLE.md 11) and no fast-math: the comparisons are exact. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_train.h"
#include "ledger_sg.h"

dpgd_ledger *dpgd_ledger_alloc(size_t n, int filtered, double clip, double budget)
{
  if (n == 0 || !(clip > 0) || !isfinite(clip)) return NULL;
  if (filtered && (!(budget > 0) || !isfinite(budget))) return NULL;
  dpgd_ledger *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->n = n;
  l->clip = clip;
  l->clip2 = clip * clip;
  l->budget = filtered ? budget : INFINITY;
  l->slack = 0;
  /* The GDP filter in squared-norm units: its noise std sigma C is the unit, so charges
   * go in against sigma = 1 and its spend is s(i) itself. Algorithm 6's infinite budget
   * makes it an odometer whose cap is always C. */
  l->filter = dpgd_filter_alloc(n, DPGD_FILTER_GDP, 1, NULL, &l->budget);
  if (!l->filter) {
    dpgd_ledger_free(l);
    return NULL;
  }
  l->spend = dpgd_filter_spent_data(l->filter, 0);
  return l;
}

void dpgd_ledger_free(dpgd_ledger *l)
{
  if (!l) return;
  dpgd_filter_free(l->filter);
  dpgd_filter_sg_free(l->sg);
  free(l->cap_idx);
  free(l->charge_idx);
  free(l->hold_idx);
  free(l);
}

int dpgd_ledger_save(const dpgd_ledger *l, void **buf, size_t *len)
{
  return dpgd_filter_serialize(l->filter, buf, len);
}

/* Same points, currency, orders and budgets (the ledger's own filter is the reference). */
static int same_shape(const dpgd_filter *f, const dpgd_filter *g)
{
  size_t k = dpgd_filter_n_orders(g);
  if (dpgd_filter_n(f) != dpgd_filter_n(g) ||
      dpgd_filter_currency_of(f) != dpgd_filter_currency_of(g) || dpgd_filter_n_orders(f) != k)
    return 0;
  for (size_t j = 0; j < k; j++)
    if (!(dpgd_filter_budget(f, j) == dpgd_filter_budget(g, j))) return 0;
  return 1;
}

int dpgd_ledger_load(dpgd_ledger *l, const void *buf, size_t len)
{
  dpgd_filter *f = NULL;
  int st = dpgd_filter_deserialize(&f, buf, len);
  if (st) return st;
  if (!same_shape(f, l->filter)) {
    st = DPGD_FAIL(DPGD_EFORMAT,
                   "saved filter (%zu points, currency %d, budget %.17g) does not match the "
                   "ledger (%zu points, currency %d, budget %.17g)",
                   dpgd_filter_n(f), (int)dpgd_filter_currency_of(f), dpgd_filter_budget(f, 0),
                   l->n, (int)dpgd_filter_currency_of(l->filter),
                   dpgd_filter_budget(l->filter, 0));
  } else if (dpgd_filter_check(f)) {
    st = DPGD_FAIL(DPGD_EFORMAT, "saved filter: %s", dpgd_error_last());
  }
  if (st) {
    dpgd_filter_free(f);
    return st;
  }
  dpgd_filter_free(l->filter);
  l->filter = f;
  l->spend = dpgd_filter_spent_data(f, 0);
  return DPGD_OK;
}

/* The "spend" section of an older checkpoint is the n doubles s(i) of the full-batch
 * ledger, which is its whole state there. Any other ledger (filtered DP-SGD's RDP filter
 * at its orders) holds more than s(i): writing s(i) into its first order would reset
 * every other order's spend, so it is refused before anything is written. */
int dpgd_ledger_load_spend(dpgd_ledger *l, const void *buf, size_t len)
{
  if (l->sg || dpgd_filter_n_orders(l->filter) != 1 ||
      dpgd_filter_currency_of(l->filter) != DPGD_FILTER_GDP)
    return DPGD_FAIL(DPGD_EFORMAT,
                     "a 'spend' section holds only the full-batch ledger's s(i); this "
                     "run's ledger (%zu orders, currency %d) cannot be restored from it",
                     dpgd_filter_n_orders(l->filter), (int)dpgd_filter_currency_of(l->filter));
  if (len != l->n * sizeof(double))
    return DPGD_FAIL(DPGD_EFORMAT, "its 'spend' section is %zu bytes, expected %zu", len,
                     l->n * sizeof(double));
  memcpy(l->spend, buf, len);
  return dpgd_ledger_check(l);
}

/* The sensitivity the accountant allows point i this step: the filter's cap of C against
 * unit noise. It is C exactly while s(i) + C^2 <= B in floating point (no sqrt: what
 * makes Algorithm 7 reproduce Algorithm 6 bit for bit), else sqrt(B - s(i)) stepped down
 * by ulps until s(i) + cap^2 <= B: the ledger never needs clamping. */
static double allowance(const dpgd_ledger *l, size_t i)
{
  return dpgd_filter_cap(l->filter, i, l->clip, 1.0);
}

int dpgd_ledger_set_slack(dpgd_ledger *l, double slack)
{
  if (!(slack >= 0) || !(slack < l->clip))
    return DPGD_FAIL(DPGD_EINVAL, "summation slack %g must lie in [0, C = %g)", slack, l->clip);
  l->slack = slack;
  return DPGD_OK;
}

/* A point whose allowance does not exceed the slack is left out (cap 0): it then enters
 * no arithmetic at all and moves the sum by exactly nothing. */
static double point_cap(const dpgd_ledger *l, size_t i)
{
  double a = allowance(l, i);
  return a > l->slack ? a - l->slack : 0.0;
}

void dpgd_ledger_caps(const dpgd_ledger *l, double *caps)
{
  if (l->sg) {
    dpgd_ledger_sg_caps(l, caps);
    return;
  }
  for (size_t i = 0; i < l->n; i++) caps[i] = point_cap(l, i);
}

void dpgd_ledger_caps_in(const dpgd_ledger *l, const unsigned char *in, double *caps)
{
  if (l->sg) {
    dpgd_ledger_caps(l, caps);
    for (size_t i = 0; i < l->n; i++)
      if (!in[i]) caps[i] = 0;
    return;
  }
  /* Only the sampled points' allowances: a step's work is then the batch's, not n's. */
  memset(caps, 0, l->n * sizeof *caps);
  for (size_t i = 0; i < l->n; i++)
    if (in[i]) caps[i] = point_cap(l, i);
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
  if (l->sg) return dpgd_ledger_sg_spend(l); /* every point, sampled or not */
  /* A branch-free scan first (a NaN fails both comparisons), the culprit only then. */
  int ok = 1;
  for (size_t i = 0; i < l->n; i++) ok &= (sqnorm_post[i] >= 0) & (sqnorm_post[i] <= DBL_MAX);
  for (size_t i = 0; !ok && i < l->n; i++) {
    double x = sqnorm_post[i];
    if (!(x >= 0) || !isfinite(x))
      return DPGD_FAIL(DPGD_ERANGE,
                       "post-clip squared norm of point %zu is %g (model defect); ledger "
                       "unchanged",
                       i, x);
  }
  for (size_t i = 0; i < l->n; i++) {
    if (i % 8 == 0) { /* a sampled step's caps are mostly 0: skipped 8 at a time */
      i += dpgd_zero_prefix8(caps + i, l->n - i);
      if (i == l->n) break;
    }
    double x = charge(l, i, caps[i], sqnorm_post[i]);
    if (x == 0) continue;
    /* x <= a(i)^2 fits (the filter's cap guarantees it): a refusal is a defect. */
    int st = dpgd_filter_charge(l->filter, i, x, 1.0);
    if (st) return st;
  }
  return DPGD_OK;
}

int dpgd_ledger_point_active(const dpgd_ledger *l, size_t i)
{
  return l->sg ? dpgd_filter_sg_active(l->filter, l->sg, i) : dpgd_filter_active(l->filter, i);
}

size_t dpgd_ledger_active(const dpgd_ledger *l)
{
  if (!l->sg) return dpgd_filter_n_active(l->filter);
  size_t a = 0;
  for (size_t i = 0; i < l->n; i++) a += (size_t)dpgd_ledger_point_active(l, i);
  return a;
}

int dpgd_ledger_check(const dpgd_ledger *l) { return dpgd_filter_check(l->filter); }

double dpgd_ledger_point_mu2(const dpgd_ledger *l, size_t i, double sigma)
{
  return dpgd_filter_point_mu2(l->filter, i, sigma * l->clip);
}
