/* filter_sg.c -- the individual RDP filter under Poisson subsampling
 * (train/DPSGD_FILTER.md): the per-point RDP of the Poisson-subsampled Gaussian at a
 * point's own sensitivity (docs/MATH.md "RDP curves"; Mironov, Talwar & Zhang 2019),
 * tabulated on a grid of sensitivities once per run, and the caps and charges of every
 * point of an RDP filter against that table (Feldman & Zrnic 2021, Theorems 4.3 and 4.5
 * with Remark 4.4). No fast-math: the comparisons with the budgets are exact (STYLE.md
 * 12). */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_sf_gamma.h>

#include "acct_internal.h"

const double dpgd_filter_sg_orders[DPGD_FILTER_SG_N_ORDERS] = {
    2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256};

#define SG_MAX_ORDER 1024
/* Relative pad of an evaluation: far above its rounding (DPSGD_FILTER.md section 1). */
#define SG_PAD 0x1p-30

/* log(expm1(y)) for y > 0, without overflow for large y. */
static double log_expm1(double y) { return y > 1 ? y + log1p(-exp(-y)) : log(expm1(y)); }

/* The log-weights w[k] = log(C(a,k) (1-q)^(a-k) q^k), k = 2..a (-inf where q = 1 and
 * k < a: (1-q)^0 = 1 keeps k = a). They do not depend on the sensitivity. */
static void log_weights(double *w, double q, unsigned a)
{
  double lq = log(q), l1q = log1p(-q);
  for (unsigned k = 2; k <= a; k++) {
    double dk = (double)k, lw = k < a ? (double)(a - k) * l1q : 0.0;
    w[k] = lw == -INFINITY ? -INFINITY : gsl_sf_lnchoose(a, k) + dk * lq + lw;
  }
}

/* eps_a at c = x^2 / (2 sigma^2) > 0 from the log-weights, rounded up:
 * log(S - 1) = log sum_{k >= 2} exp(w[k]) expm1((k^2 - k) c), a sum of non-negative terms
 * (the binomial weights sum to 1, so S - 1 has no cancellation), eps = log1p(S - 1) /
 * (a - 1). */
static double rdp_of_weights(const double *w, unsigned a, double c)
{
  if (!isfinite(c)) return INFINITY;
  if (c == 0) return nextafter(0.0, INFINITY); /* underflow: a positive bound */
  double l = -INFINITY;
  for (unsigned k = 2; k <= a; k++) {
    double dk = (double)k;
    if (w[k] > -INFINITY) l = dpgd_acct_logsumexp2(l, w[k] + log_expm1((dk * dk - dk) * c));
  }
  if (l == -INFINITY) return nextafter(0.0, INFINITY);
  if (!isfinite(l)) return INFINITY;
  double eps = (l > 30 ? l + log1p(exp(-l)) : log1p(exp(l))) / (a - 1.0);
  return nextafter(eps * (1 + SG_PAD), INFINITY);
}

static int args_ok(double q, double sigma, double a)
{
  return q > 0 && q <= 1 && sigma > 0 && isfinite(sigma) && a >= 2 && a <= SG_MAX_ORDER &&
         a == floor(a);
}

/* c = x^2 / (2 sigma^2), written as (x / sigma)^2 / 2. */
static double half_ratio2(double x, double sigma)
{
  double r = x / sigma;
  return r * r / 2;
}

double dpgd_filter_sg_rdp(double q, double sigma, double x, double a)
{
  if (!args_ok(q, sigma, a) || !(x >= 0) || !isfinite(x)) return NAN;
  if (x == 0) return 0.0;
  double w[SG_MAX_ORDER + 1];
  log_weights(w, q, (unsigned)a);
  return rdp_of_weights(w, (unsigned)a, half_ratio2(x, sigma));
}

void dpgd_filter_sg_free(dpgd_filter_sg *t)
{
  if (!t) return;
  free(t->eps);
  free(t);
}

dpgd_filter_sg *dpgd_filter_sg_alloc(double q, double sigma, size_t n_orders,
                                     const double *orders, size_t grid)
{
  if (!(q > 0 && q <= 1) || !(sigma > 0) || !isfinite(sigma) || grid < 1 ||
      grid > UINT32_MAX - 1 || n_orders < 1 || n_orders > DPGD_FILTER_MAX_ORDERS || !orders) {
    DPGD_FAIL(DPGD_EINVAL, "subsampled filter table: q %g, sigma %g, grid %zu, %zu orders", q,
              sigma, grid, n_orders);
    return NULL;
  }
  for (size_t j = 0; j < n_orders; j++)
    if (!args_ok(q, sigma, orders[j])) {
      DPGD_FAIL(DPGD_EINVAL, "subsampled filter table: order %g is not an integer in 2..%d",
                orders[j], SG_MAX_ORDER);
      return NULL;
    }
  dpgd_filter_sg *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->eps = malloc(n_orders * (grid + 1) * sizeof *t->eps);
  if (!t->eps) {
    dpgd_filter_sg_free(t);
    return NULL;
  }
  t->q = q, t->sigma = sigma, t->grid = grid, t->n_orders = n_orders;
  double w[SG_MAX_ORDER + 1];
  for (size_t j = 0; j < n_orders; j++) {
    unsigned a = (unsigned)orders[j];
    t->order[j] = orders[j];
    log_weights(w, q, a);
    double *e = t->eps + j * (grid + 1);
    e[0] = 0.0;
    /* The same arithmetic as dpgd_filter_sg_rdp, at x = k / K rounded up (one ulp above
     * round to nearest is >= the real k / K; exactly 1 at k = K): monotone, so the entry
     * bounds the real grid point's eps. */
    for (size_t k = 1; k <= grid; k++) {
      double x = k == grid ? 1.0 : nextafter((double)k / (double)grid, INFINITY);
      e[k] = rdp_of_weights(w, a, half_ratio2(x, sigma));
    }
  }
  return t;
}

int dpgd_filter_sg_budgets(const dpgd_filter_sg *t, double k, double *budgets)
{
  if (!t || !budgets || !(k > 0) || !(k < 0x1p50))
    return DPGD_FAIL(DPGD_EINVAL, "subsampled filter budgets: k = %g full-rate steps", k);
  /* floor(k) additions rounded up stay below k c (1 + u)^k <= k c (1 + (k + 1) u) for
   * k u < 1/2; the product's own roundings are covered by the + 4. */
  for (size_t j = 0; j < t->n_orders; j++) {
    double c = t->eps[j * (t->grid + 1) + t->grid];
    double b = k * c * (1 + (k + 4) * 0x1p-52);
    budgets[j] = nextafter(b, INFINITY);
    if (!(budgets[j] > 0) || !isfinite(budgets[j]))
      return DPGD_FAIL(DPGD_ERANGE, "subsampled filter budget of order %g is %g", t->order[j],
                       budgets[j]);
  }
  return DPGD_OK;
}

static int matches(const dpgd_filter *f, const dpgd_filter_sg *t)
{
  if (!f || !t || f->cur != DPGD_FILTER_RDP || f->k != t->n_orders)
    return DPGD_FAIL(DPGD_EINVAL, "subsampled filter: the filter and the table differ");
  for (size_t j = 0; j < f->k; j++)
    if (f->order[j] != t->order[j])
      return DPGD_FAIL(DPGD_EINVAL,
                       "subsampled filter: order %g of the filter, %g of the table",
                       f->order[j], t->order[j]);
  return DPGD_OK;
}

/* The largest index <= hi whose entry of row e fits s + e[k] <= b (rounded up as a charge
 * is); entries are non-decreasing in k and e[0] = 0 fits while s <= b. */
static uint32_t largest_fit(const double *e, uint32_t hi, double s, double b)
{
  if (dpgd_filter_add_up(s, e[hi]) <= b) return hi;
  uint32_t lo = 0; /* fits (or the point is over budget: then 0 anyway) */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (dpgd_filter_add_up(s, e[mid]) <= b) lo = mid;
    else hi = mid;
  }
  return lo;
}

int dpgd_filter_sg_caps(const dpgd_filter *f, const dpgd_filter_sg *t, uint32_t *idx)
{
  int st = matches(f, t);
  if (st) return st;
  if (!idx) return DPGD_FAIL(DPGD_EINVAL, "subsampled filter caps: NULL output");
  for (size_t i = 0; i < f->n; i++) idx[i] = (uint32_t)t->grid;
  /* Order-major: each order's spends are contiguous. The cap is the smallest over the
   * orders (Remark 4.4: every order's filter must continue). */
  for (size_t j = 0; j < f->k; j++) {
    const double *e = t->eps + j * (t->grid + 1), *s = f->spent + j * f->n;
    double b = f->budget[j];
    for (size_t i = 0; i < f->n; i++)
      if (idx[i] > 0) idx[i] = largest_fit(e, idx[i], s[i], b);
  }
  return DPGD_OK;
}

int dpgd_filter_sg_charge(dpgd_filter *f, const dpgd_filter_sg *t, const uint32_t *idx)
{
  int st = matches(f, t);
  if (st) return st;
  if (!idx) return DPGD_FAIL(DPGD_EINVAL, "subsampled filter charge: NULL indices");
  for (size_t i = 0; i < f->n; i++)
    if (idx[i] > t->grid)
      return DPGD_FAIL(DPGD_EINVAL, "subsampled filter charge: index %u of point %zu > %zu",
                       (unsigned)idx[i], i, t->grid);
  /* Every charge is checked before any is made: a refusal changes nothing. */
  for (size_t j = 0; j < f->k; j++) {
    const double *e = t->eps + j * (t->grid + 1), *s = f->spent + j * f->n;
    for (size_t i = 0; i < f->n; i++)
      if (idx[i] && !(dpgd_filter_add_up(s[i], e[idx[i]]) <= f->budget[j]))
        return DPGD_FAIL(DPGD_ERANGE,
                         "subsampled filter: charge of point %zu (grid %u) exceeds its budget "
                         "at order %g",
                         i, (unsigned)idx[i], f->order[j]);
  }
  int any = 0;
  for (size_t j = 0; j < f->k; j++) {
    const double *e = t->eps + j * (t->grid + 1);
    double *s = f->spent + j * f->n;
    for (size_t i = 0; i < f->n; i++)
      if (idx[i]) s[i] = dpgd_filter_add_up(s[i], e[idx[i]]), any = 1;
  }
  if (any) f->pure_dp = 2;
  return DPGD_OK;
}

int dpgd_filter_sg_active(const dpgd_filter *f, const dpgd_filter_sg *t, size_t i)
{
  if (matches(f, t) || i >= f->n) return 0;
  for (size_t j = 0; j < f->k; j++)
    if (!(dpgd_filter_add_up(f->spent[j * f->n + i], t->eps[j * (t->grid + 1) + 1]) <=
          f->budget[j]))
      return 0;
  return 1;
}
