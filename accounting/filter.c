/* filter.c -- the individual privacy filter (docs/MATH.md "The individual filter";
 * Feldman & Zrnic, Algorithms 3 and 7): per-point spends in one currency, the cap a point may
 * still spend, and charges that never let any order of a point exceed its budget. The
 * comparisons are exact (no fast-math, STYLE.md 12): the invariant spent <= budget holds
 * in floating point, not approximately, and the costs and sums round up, so that the
 * stored spend is never below the exact real sum of the exact costs (accounting/FILTER.md). */
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

/* ---- Rounding in the private direction ----
 * Privacy needs every stored spend to be >= the exact real sum of the exact costs of
 * the charges it took (Feldman & Zrnic 2021, Theorems 4.3 and 4.5, hold for the real sums). Round
 * to nearest can round a product, a quotient or a sum DOWN, and k charges could then
 * exceed the budget by about k u B. So the cost and the accumulation round UP, using
 * the exact error of each operation (an fma gives the error of a product and the
 * remainder of a quotient; TwoSum gives the error of a sum), and step one ulp up only
 * when that error says the rounded result is below the exact one. An exact operation is
 * left as it is: the trainer's costs (c = 1, sigma = 1) and exact sums (C = 10, B = k
 * C^2) are bit for bit those of round to nearest.
 * Proof that spent >= the exact sum. For an exact real x let RN(x) be round to nearest
 * and RU(x) the least double >= x. Each helper below computes RN(x) and steps it one
 * ulp up exactly when RN(x) < x, which makes it RU(x) (RN(x) < x means RN(x) is the
 * largest double below x); in the subnormal range (RN(x) < 2^-969, where the error of
 * the operation may not be representable; no real run goes there) it steps up
 * unconditionally, giving next(RN(x)) >= RU(x). Then:
 * (1) cost: p = mul_up(c, sens2) >= c sens2; s2 = square_down(sigma) <= sigma^2 (RN
 *     rounded up: one ulp down); q = div_up(p, s2) >= p / s2 >= c sens2 / sigma^2.
 * (2) sum: next = add_up(s, x) >= s + x. By induction over the charges, from spent = 0,
 *     spent >= spent_prev + cost >= the exact sum of the exact costs.
 * The error checks are exact: the error of a product (|product| >= 2^-969), the
 * remainder p - q s2 of a quotient (p, q >= 2^-969) and the error of a sum (TwoSum, any
 * magnitude) are doubles, so fma and TwoSum compute them without rounding. An overflow
 * gives +inf, which every finite budget refuses.
 * Proof that a cap and its charge agree: x -> RU(x) and x -> next(RN(x)) are monotone,
 * and at the threshold the value computed below it (next(RN(x)) with RN(x) < 2^-969) is
 * <= any double >= 2^-969, so each helper is monotone in its rounded-up argument and
 * the composite add_up(s, cost(x)) is monotone in x. order_cap accepts cap only when
 * add_up(s, cost(cap * cap)) <= b with the very functions dpgd_filter_charge applies to
 * sens2 = cap * cap (the caller's square, the same expression): the charge of cap^2, or
 * of anything smaller, computes the same or a smaller next and is accepted. */
#define TINY 0x1p-969

/* c * x rounded up (c, x >= 0). */
static double mul_up(double c, double x)
{
  double p = c * x;
  if (p == 0) return c == 0 || x == 0 ? 0.0 : nextafter(0.0, INFINITY);
  if (p < TINY || fma(c, x, -p) > 0) p = nextafter(p, INFINITY);
  return p;
}

/* sigma^2 rounded down (sigma > 0): the denominator of a cost rounded up. */
static double square_down(double sigma)
{
  double s2 = sigma * sigma;
  if (s2 < TINY || fma(sigma, sigma, -s2) < 0) s2 = nextafter(s2, 0.0);
  return s2;
}

/* p / s2 rounded up (p >= 0, s2 >= 0). */
static double div_up(double p, double s2)
{
  double q = p / s2;
  if (!isfinite(q) || p == 0) return q;
  if (q < TINY || p < TINY || fma(-q, s2, p) > 0) q = nextafter(q, INFINITY);
  return q;
}

/* s + x rounded up (Knuth's TwoSum gives the exact error of fl(s + x)). */
static double add_up(double s, double x)
{
  double next = s + x, bv = next - s;
  double err = (s - (next - bv)) + (x - bv);
  return err > 0 ? nextafter(next, INFINITY) : next;
}

double dpgd_filter_add_up(double s, double x) { return add_up(s, x); }

/* c sens2 / sigma^2 rounded up (see above): with c = 1 and sigma = 1 it is sens2 exactly
 * (the trainer's units). */
double dpgd_filter_cost(const dpgd_filter *f, size_t order, double sens2, double sigma)
{
  if (order >= f->k) return NAN;
  return div_up(mul_up(f->coef[order], sens2), square_down(sigma));
}

/* One order's cap for a point that has spent s of budget b: want when s + cost(want^2)
 * <= b (both rounded up, as dpgd_filter_charge computes them), else sqrt of the
 * remainder, stepped down by ulps until it fits (then the spend never needs clamping,
 * and a charge of cap^2 is always accepted). */
static double order_cap(const dpgd_filter *f, size_t j, double s, double want, double sigma)
{
  double b = f->budget[j];
  if (add_up(s, dpgd_filter_cost(f, j, want * want, sigma)) <= b) return want;
  double rem = b - s;
  if (!(rem > 0)) return 0.0;
  double cap = sqrt(rem * (sigma * sigma) / f->coef[j]);
  if (cap > want) cap = want;
  while (cap > 0 && !(add_up(s, dpgd_filter_cost(f, j, cap * cap, sigma)) <= b))
    cap = nextafter(cap, 0.0);
  return cap;
}

/* RDP: the smallest of the orders' caps, so that every order stays within its budget
 * (Remark 4.4 of Feldman & Zrnic (2021): the guarantee at every order needs every filter to CONT). */
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
    next[j] = add_up(f->spent[j * f->n + i], dpgd_filter_cost(f, j, sens2, sigma));
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

/* Theorem 4.9 of Feldman & Zrnic (2021): B* = (sqrt(L + eps) - sqrt(L))^2, L = log(1/delta), written
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
