/* filter.c -- the individual privacy filter (MATH.md section 1; seed 003, Feldman &
 * Zrnic, Algorithms 3 and 7): per-point spends in one currency, the cap a point may
 * still spend, and charges that never let any order of a point exceed its budget. The
 * comparisons are exact (no fast-math, STYLE.md 12): the invariant spent <= budget holds
 * in floating point, not approximately. */
#include <math.h>
#include <stdlib.h>

#include "acct_internal.h"

static int currency_ok(dpgd_filter_currency cur)
{
  return cur == DPGD_FILTER_GDP || cur == DPGD_FILTER_ZCDP || cur == DPGD_FILTER_RDP;
}

/* The cost coefficient c of an order: cost = c sens2 / sigma^2. */
static double coef_of(dpgd_filter_currency cur, double order)
{
  switch (cur) {
  case DPGD_FILTER_GDP: return 1.0;
  case DPGD_FILTER_ZCDP: return 0.5;
  default: return order / 2;
  }
}

static int check_orders(dpgd_filter_currency cur, size_t k, const double *orders,
                        const double *budgets)
{
  if (!currency_ok(cur)) return DPGD_FAIL(DPGD_EINVAL, "filter: unknown currency %d", (int)cur);
  if (!budgets) return DPGD_FAIL(DPGD_EINVAL, "filter: NULL budgets");
  if (cur != DPGD_FILTER_RDP && k != 1)
    return DPGD_FAIL(DPGD_EINVAL, "filter: GDP and zCDP take one budget, not %zu", k);
  if (cur == DPGD_FILTER_RDP && (k < 1 || k > DPGD_FILTER_MAX_ORDERS || !orders))
    return DPGD_FAIL(DPGD_EINVAL, "filter: RDP takes 1..%d orders, not %zu",
                     DPGD_FILTER_MAX_ORDERS, k);
  for (size_t j = 0; j < k; j++) {
    if (cur == DPGD_FILTER_RDP && (!(orders[j] > 1) || !isfinite(orders[j])))
      return DPGD_FAIL(DPGD_EINVAL, "filter: RDP order %g must be finite and > 1", orders[j]);
    if (!(budgets[j] > 0))
      return DPGD_FAIL(DPGD_EINVAL, "filter: budget %g must be > 0", budgets[j]);
  }
  return DPGD_OK;
}

dpgd_filter *dpgd_filter_alloc(size_t n, dpgd_filter_currency cur, size_t n_orders,
                               const double *orders, const double *budgets)
{
  if (n == 0 || n > SIZE_MAX / sizeof(double) / DPGD_FILTER_MAX_ORDERS) {
    DPGD_FAIL(DPGD_EINVAL, "filter: %zu points", n);
    return NULL;
  }
  if (check_orders(cur, n_orders, orders, budgets)) return NULL;
  dpgd_filter *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->n = n;
  f->k = n_orders;
  f->cur = cur;
  for (size_t j = 0; j < n_orders; j++) {
    f->order[j] = cur == DPGD_FILTER_RDP ? orders[j] : 0.0;
    f->budget[j] = budgets[j];
    f->coef[j] = coef_of(cur, f->order[j]);
  }
  f->spent = calloc(n * n_orders, sizeof *f->spent);
  if (!f->spent) {
    dpgd_filter_free(f);
    return NULL;
  }
  return f;
}

void dpgd_filter_free(dpgd_filter *f)
{
  if (!f) return;
  free(f->spent);
  free(f);
}

size_t dpgd_filter_n(const dpgd_filter *f) { return f->n; }
size_t dpgd_filter_n_orders(const dpgd_filter *f) { return f->k; }
dpgd_filter_currency dpgd_filter_currency_of(const dpgd_filter *f) { return f->cur; }
double dpgd_filter_budget(const dpgd_filter *f, size_t order)
{
  return order < f->k ? f->budget[order] : NAN;
}

/* c sens2 / sigma^2, evaluated as c * sens2 / (sigma * sigma): with c = 1 and sigma = 1
 * it is sens2 exactly (the trainer's units). */
double dpgd_filter_cost(const dpgd_filter *f, size_t order, double sens2, double sigma)
{
  return order < f->k ? f->coef[order] * sens2 / (sigma * sigma) : NAN;
}

/* One order's cap for a point that has spent s of budget b: want when s + cost(want^2)
 * <= b in floating point, else sqrt of the remainder, stepped down by ulps until it fits
 * (then the spend never needs clamping). */
static double order_cap(const dpgd_filter *f, size_t j, double s, double want, double sigma)
{
  double b = f->budget[j];
  if (s + dpgd_filter_cost(f, j, want * want, sigma) <= b) return want;
  double rem = b - s;
  if (!(rem > 0)) return 0.0;
  double cap = sqrt(rem * (sigma * sigma) / f->coef[j]);
  if (cap > want) cap = want;
  while (cap > 0 && s + dpgd_filter_cost(f, j, cap * cap, sigma) > b) cap = nextafter(cap, 0.0);
  return cap;
}

/* RDP: the smallest of the orders' caps, so that every order stays within its budget
 * (Remark 4.4 of seed 003: the guarantee at every order needs every filter to CONT). */
double dpgd_filter_cap(const dpgd_filter *f, size_t i, double want, double sigma)
{
  if (i >= f->n || !(want > 0) || !isfinite(want) || !(sigma > 0) || !isfinite(sigma))
    return 0.0;
  double cap = want;
  for (size_t j = 0; j < f->k && cap > 0; j++) {
    double c = order_cap(f, j, f->spent[j * f->n + i], want, sigma);
    if (c < cap) cap = c;
  }
  return cap;
}

int dpgd_filter_charge(dpgd_filter *f, size_t i, double sens2, double sigma)
{
  if (i >= f->n) return DPGD_FAIL(DPGD_EINVAL, "filter: point %zu of %zu", i, f->n);
  if (!(sens2 >= 0) || !isfinite(sens2) || !(sigma > 0) || !isfinite(sigma))
    return DPGD_FAIL(DPGD_EINVAL, "filter: charge of point %zu: sens2 %g, sigma %g", i, sens2,
                     sigma);
  if (sens2 == 0) return DPGD_OK;
  double next[DPGD_FILTER_MAX_ORDERS];
  for (size_t j = 0; j < f->k; j++) {
    next[j] = f->spent[j * f->n + i] + dpgd_filter_cost(f, j, sens2, sigma);
    if (!(next[j] <= f->budget[j]))
      return DPGD_FAIL(DPGD_ERANGE, "filter: charge of point %zu (%.17g) exceeds its budget", i,
                       sens2);
  }
  for (size_t j = 0; j < f->k; j++) f->spent[j * f->n + i] = next[j];
  return DPGD_OK;
}

int dpgd_filter_active(const dpgd_filter *f, size_t i)
{
  if (i >= f->n) return 0;
  for (size_t j = 0; j < f->k; j++)
    if (!(f->spent[j * f->n + i] < f->budget[j])) return 0;
  return 1;
}

size_t dpgd_filter_n_active(const dpgd_filter *f)
{
  size_t a = 0;
  for (size_t i = 0; i < f->n; i++) a += (size_t)dpgd_filter_active(f, i);
  return a;
}

double dpgd_filter_spent(const dpgd_filter *f, size_t i, size_t order)
{
  return i < f->n && order < f->k ? f->spent[order * f->n + i] : NAN;
}

double *dpgd_filter_spent_data(dpgd_filter *f, size_t order)
{
  return order < f->k ? f->spent + order * f->n : NULL;
}

int dpgd_filter_check(const dpgd_filter *f)
{
  for (size_t j = 0; j < f->k; j++)
    for (size_t i = 0; i < f->n; i++) {
      double s = f->spent[j * f->n + i];
      if (!(s >= 0) || !(s <= f->budget[j]))
        return DPGD_FAIL(DPGD_ERANGE,
                         "filter invariant broken: spent(%zu) = %.17g, budget = %.17g", i, s,
                         f->budget[j]);
    }
  return DPGD_OK;
}

double dpgd_filter_point_mu2(const dpgd_filter *f, size_t i, double unit)
{
  if (i >= f->n || f->pure_dp) return NAN;
  return f->spent[i] / f->coef[0] / (unit * unit) * (1 + 0x1p-50);
}

/* Theorem 4.9 of seed 003: B* = (sqrt(L + eps) - sqrt(L))^2, L = log(1/delta), written
 * as eps^2 / (sqrt(L + eps) + sqrt(L))^2 to avoid the cancellation, and rounded down (a
 * budget: the private direction is smaller). */
int dpgd_filter_dp_budget(double eps, double delta, double *rho)
{
  if (!rho || !(eps > 0) || !isfinite(eps) || !(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "filter dp budget: eps %g, delta %g", eps, delta);
  double l = -log(delta), d = sqrt(l + eps) + sqrt(l);
  *rho = eps * eps / (d * d) * (1 - 0x1p-48);
  return DPGD_OK;
}

int dpgd_filter_charge_dp(dpgd_filter *f, size_t i, double eps)
{
  if (f->cur != DPGD_FILTER_ZCDP)
    return DPGD_FAIL(DPGD_EINVAL, "filter: pure-DP charges go to a zCDP filter");
  if (!(eps >= 0) || !isfinite(eps))
    return DPGD_FAIL(DPGD_EINVAL, "filter: pure-DP charge eps %g", eps);
  int st = dpgd_filter_charge(f, i, eps * eps, 1.0); /* 0.5 eps^2 / 1^2 */
  if (!st && eps > 0) f->pure_dp = 1;
  return st;
}
