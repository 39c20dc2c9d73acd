/* rdp.c -- Renyi DP (docs/MATH.md "RDP and zCDP"): the composed RDP curve of every
 * mechanism on an order grid, and the three RDP-to-(eps, delta) conversions (classic; Balle et
 * al. 2020; Asoodeh et al. 2021 optimal, by bisection in eps over GSL's Brent minimiser in p).
 * Each conversion is minimised over the grid and then refined with GSL's Brent
 * minimiser in the order; the subsampled Gaussian is evaluated at integer orders only
 * (Mironov, Talwar & Zhang 2019), using eps_hat(a) <= eps_hat(ceil a) (Renyi
 * divergences grow with the order), so its grid is the integers; so are the
 * without-replacement replace-one bounds (wor.c). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_sf_gamma.h>

#include "acct_internal.h"

/* Order grid: a = 1 + 10^x, x from ACCT_RDP_XMIN to ACCT_RDP_XMAX (covers 1.01 .. 10^4,
 * wider than the usual 1.25 .. 256), and the integers 2 .. ACCT_RDP_INT_MAX. */
#define ACCT_RDP_XMIN -2.0
#define ACCT_RDP_XMAX 4.0
#define ACCT_RDP_NGRID 121
#define ACCT_RDP_INT_MAX ACCT_POISSON_ALPHA_MAX

double dpgd_acct_logsumexp2(double x, double y)
{
  double m = x > y ? x : y;
  if (m == -INFINITY) return -INFINITY;
  return m + log1p(exp(-fabs(x - y)));
}

double dpgd_acct_laplace_rdp(double a0, double a)
{
  return dpgd_acct_logsumexp2(log(a / (2 * a - 1)) + (a - 1) * a0,
                              log((a - 1) / (2 * a - 1)) - a * a0) /
         (a - 1);
}

/* eps_hat(a) of one mechanism (docs/MATH.md "RDP curves"), max over both directions. */
static double rdp_entry(const acct_entry *en, double a)
{
  switch (en->kind) {
  case ACCT_GAUSSIAN:
  case ACCT_DGAUSS: return a * en->par[0] * en->par[0] / 2;
  case ACCT_LAPLACE: return dpgd_acct_laplace_rdp(en->par[0], a);
  case ACCT_RR: {
    double e0 = en->par[0];
    double lp = -log1p(exp(-e0)), lq = lp - e0; /* log p, log(1-p): no overflow */
    double l = dpgd_acct_logsumexp2(a * lp + (1 - a) * lq, a * lq + (1 - a) * lp);
    return l / (a - 1);
  }
  case ACCT_DISCRETE: {
    double best = 0;
    for (int dir = 0; dir < 2; dir++) {
      const double *p = dir ? en->q : en->p, *q = dir ? en->p : en->q;
      double l = -INFINITY;
      for (size_t i = 0; i < en->k; i++)
        if (p[i] > 0) l = dpgd_acct_logsumexp2(l, a * log(p[i]) + (1 - a) * log(q[i]));
      if (l / (a - 1) > best) best = l / (a - 1);
    }
    return best;
  }
  case ACCT_SUBSAMPLED: {
    double q = en->par[0], s = en->par[1];
    double ai = ceil(a - 1e-12);
    if (ai < 2) ai = 2;
    double l = -INFINITY;
    for (double k = 0; k <= ai; k++)
      l = dpgd_acct_logsumexp2(l, gsl_sf_lnchoose((unsigned)ai, (unsigned)k) +
                                      (ai - k) * log1p(-q) + k * log(q) +
                                      (k * k - k) / (2 * s * s));
    return l / (ai - 1);
  }
  case ACCT_SDGAUSS: return dpgd_acct_sdgauss_rdp(en->par[0], en->par[1], a);
  default: return dpgd_acct_wor_rdp(en, a);
  }
}

double dpgd_acct_rdp_curve(const dpgd_accountant *a, double alpha)
{
  double s = 0;
  for (size_t i = 0; i < a->n; i++) s += (double)a->e[i].count * rdp_entry(&a->e[i], alpha);
  return isnan(s) ? INFINITY : s;
}

static int has_subsampled(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_SUBSAMPLED || a->e[i].kind == ACCT_SDGAUSS ||
        a->e[i].kind == ACCT_WOR_RO_GAUSSIAN || a->e[i].kind == ACCT_WOR_RO_LAPLACE)
      return 1;
  return 0;
}

double dpgd_acct_rdp_conv_classic(double alpha, double zeta, double delta)
{
  return zeta + log(1 / delta) / (alpha - 1);
}

double dpgd_acct_rdp_conv_balle(double alpha, double zeta, double delta)
{
  return zeta + log((alpha - 1) / alpha) - (log(delta) + log(alpha)) / (alpha - 1);
}

/* ---- Asoodeh et al.: zeta*(a, eps, delta) = eps + log M / (a - 1) ---- */
typedef struct {
  double a, eps, delta;
} opt_par;

/* log of p^a (p - delta)^(1-a) + (1-p)^a (e^eps - p + delta)^(1-a), p in (delta, 1). */
static double opt_logm(double p, void *vp)
{
  const opt_par *o = vp;
  double t1 = o->a * log(p) + (1 - o->a) * log(p - o->delta);
  double t2 = o->a * log1p(-p) + (1 - o->a) * log(exp(o->eps) - p + o->delta);
  return dpgd_acct_logsumexp2(t1, t2);
}

/* min over p of log M by a scan then GSL's Brent minimiser. The value returned is the
 * objective at a point, so it is >= the true minimum: an error on the unsafe side of
 * zeta*, which acct_rdp_conv_optimal covers with a small margin. When the scan's best
 * point is at an end of the scanned range, the minimum may lie outside it and that
 * margin means nothing: -inf is returned, which makes every caller fall back to the
 * valid Balle et al. / closed-form value. */
static double opt_min_logm(const opt_par *o)
{
  enum { NS = 48 };
  double best = INFINITY, bp = 0, ps[NS];
  int bi = -1;
  /* points spread in log(p - delta) between min(1e-14, 1e-6 delta) and 1 - delta */
  double lo_gap = fmin(1e-14, 1e-6 * o->delta);
  if (lo_gap < 1e-300) lo_gap = 1e-300;
  for (int i = 0; i < NS; i++) {
    double u = (i + 0.5) / NS;
    double gap = exp(log(lo_gap) * (1 - u) + log1p(-o->delta) * u);
    ps[i] = o->delta + gap;
    if (ps[i] >= 1) ps[i] = nextafter(1, 0);
    double v = opt_logm(ps[i], (void *)o);
    if (v < best) best = v, bp = ps[i], bi = i;
  }
  if (bi <= 0 || bi >= NS - 1 || isnan(best)) return -INFINITY;
  gsl_function F = {opt_logm, (void *)o};
  gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  if (!m) return best;
  if (gsl_min_fminimizer_set_with_values(m, &F, bp, best, ps[bi - 1],
                                         opt_logm(ps[bi - 1], (void *)o), ps[bi + 1],
                                         opt_logm(ps[bi + 1], (void *)o)) == GSL_SUCCESS) {
    for (int it = 0; it < ACCT_MAX_ITER; it++) {
      if (gsl_min_fminimizer_iterate(m)) break;
      double lo = gsl_min_fminimizer_x_lower(m), hi = gsl_min_fminimizer_x_upper(m);
      if (gsl_min_test_interval(lo, hi, 1e-15, 1e-12) == GSL_SUCCESS) break;
    }
    double v = gsl_min_fminimizer_f_minimum(m);
    if (v < best) best = v;
  }
  gsl_min_fminimizer_free(m);
  return best;
}

static double zeta_star(double a, double eps, double delta)
{
  opt_par o = {a, eps, delta};
  return eps + opt_min_logm(&o) / (a - 1);
}

/* Smallest eps with zeta*(a, eps, delta) >= zeta (bisection, upper end kept). A margin
 * of 1e-12 (1 + zeta) on zeta covers the minimiser's one-sided error. Never above the
 * Balle et al. value or the closed-form bound of docs/MATH.md "Conversions". */
int dpgd_acct_rdp_conv_optimal(double alpha, double zeta, double delta, double *eps)
{
  if (!isfinite(zeta)) {
    *eps = INFINITY;
    return DPGD_OK;
  }
  if (alpha * delta >= 1) {
    double e = zeta + log1p(-delta);
    *eps = e > 0 ? e : 0;
    return DPGD_OK;
  }
  double ha = (1 / alpha) * pow(1 - 1 / alpha, alpha - 1);
  double cf1 = zeta - log(delta / ha) / (alpha - 1);
  double cf2 = log(expm1((alpha - 1) * zeta) / (alpha * delta) + 1) / (alpha - 1);
  double hi = dpgd_acct_rdp_conv_balle(alpha, zeta, delta);
  if (cf1 < hi) hi = cf1;
  if (cf2 < hi) hi = cf2;
  if (hi < 0) hi = 0;
  double target = zeta + 1e-12 * (1 + fabs(zeta));
  double lo = 0;
  if (zeta_star(alpha, 0, delta) >= target) {
    *eps = 0;
    return DPGD_OK;
  }
  if (zeta_star(alpha, hi, delta) < target) { /* keep the valid closed-form value */
    *eps = dpgd_acct_round_up(hi);
    return DPGD_OK;
  }
  for (int it = 0; it < 200 && hi - lo > 1e-13 * (1 + hi); it++) {
    double mid = (lo + hi) / 2;
    if (zeta_star(alpha, mid, delta) >= target) hi = mid;
    else lo = mid;
  }
  *eps = dpgd_acct_round_up(hi);
  return DPGD_OK;
}

/* eps of the conversion m at order a. */
static double conv_eps(dpgd_acct_method m, double a, double zeta, double delta)
{
  double e;
  switch (m) {
  case DPGD_ACCT_RDP_CLASSIC: e = dpgd_acct_rdp_conv_classic(a, zeta, delta); break;
  case DPGD_ACCT_RDP_BALLE: e = dpgd_acct_rdp_conv_balle(a, zeta, delta); break;
  default: dpgd_acct_rdp_conv_optimal(a, zeta, delta, &e); break;
  }
  if (isnan(e)) return INFINITY;
  return e < 0 ? 0 : e;
}

/* log delta of the conversion m at order a for a given eps (the inverse in delta). */
static double conv_log_delta(dpgd_acct_method m, double a, double zeta, double eps)
{
  if (!isfinite(zeta)) return 0;
  double ld;
  if (m == DPGD_ACCT_RDP_CLASSIC) {
    ld = -(a - 1) * (eps - zeta);
  } else {
    ld = (a - 1) * (zeta - eps + log((a - 1) / a)) - log(a);
    if (m == DPGD_ACCT_RDP_OPTIMAL && ld < 0) {
      /* Smallest delta with zeta*(a, eps, delta) >= zeta, bisection in log delta below
       * the Balle et al. value (valid, so the upper end always is). */
      double hi = ld, lo = ld - 1;
      double target = zeta + 1e-12 * (1 + fabs(zeta));
      for (int i = 0; i < 60 && lo > -745 && zeta_star(a, eps, exp(lo)) >= target; i++)
        lo -= 2 * (hi - lo);
      if (lo < -745) lo = -745;
      for (int it = 0; it < 100 && hi - lo > 1e-12 * (1 + fabs(hi)); it++) {
        double mid = (lo + hi) / 2;
        double d = exp(mid);
        if (a * d < 1 && zeta_star(a, eps, d) >= target) hi = mid;
        else lo = mid;
      }
      ld = hi;
    }
  }
  if (isnan(ld)) return 0;
  return ld > 0 ? 0 : ld;
}

typedef struct {
  dpgd_acct_rdp_fn curve; /* eps_hat(alpha) */
  dpgd_acct_rdp_fn lower; /* NULL, or a cheap lower bound on curve (the grid's pruning) */
  const void *ctx;
  int integer; /* the curve is evaluated at integer orders only */
  dpgd_acct_method m;
  double x; /* delta or eps */
  int want_delta;
} rdp_obj;

static double rdp_objective(double a, void *vp)
{
  const rdp_obj *o = vp;
  double zeta = o->curve(a, o->ctx);
  if (isnan(zeta)) zeta = INFINITY;
  if (o->want_delta) return conv_log_delta(o->m, a, zeta, o->x);
  return conv_eps(o->m, a, zeta, o->x);
}

static double grid_order(int integer, int i, int n)
{
  if (integer) return 2.0 + i;
  return 1 + pow(10, ACCT_RDP_XMIN + (ACCT_RDP_XMAX - ACCT_RDP_XMIN) * i / (n - 1));
}

/* The objective at lower(a) instead of curve(a): no larger than the objective, as every
 * conversion is nondecreasing in the RDP value; -inf where lower says nothing. */
static double rdp_lower_objective(const rdp_obj *o, double a)
{
  double z = o->lower(a, o->ctx);
  if (!(z > -INFINITY)) return -INFINITY;
  double v = o->want_delta ? conv_log_delta(o->m, a, z, o->x) : conv_eps(o->m, a, z, o->x);
  return isnan(v) ? -INFINITY : v;
}

/* The grid minimum over i0..i1 (the first index of the least value into *pick), by
 * branch and bound when a lower bound is given: the orders in increasing order of their
 * lower objective, stopping at the first whose lower objective is above the least value
 * found, as no order after it can go below that value. The value and the pick are the
 * full scan's (given lower <= curve); only the number of curve evaluations differs. */
static double rdp_grid_min(const rdp_obj *o, int i0, int i1, int n, int *pick)
{
  double best = INFINITY;
  *pick = -1;
  int cnt = i1 - i0 + 1;
  double *lb = o->lower && cnt > 1 ? malloc((size_t)cnt * sizeof *lb) : NULL;
  int *ix = lb ? malloc((size_t)cnt * sizeof *ix) : NULL;
  if (!ix) { /* no bound (or no memory): the full scan */
    free(lb);
    for (int i = i0; i <= i1; i++) {
      double v = rdp_objective(grid_order(o->integer, i, n), (void *)o);
      if (v < best) best = v, *pick = i;
    }
    return best;
  }
  for (int k = 0; k < cnt; k++) {
    double l = rdp_lower_objective(o, grid_order(o->integer, i0 + k, n));
    int j = k; /* insertion sort by (lower objective, index): cnt <= 256 */
    while (j > 0 && lb[j - 1] > l) lb[j] = lb[j - 1], ix[j] = ix[j - 1], j--;
    lb[j] = l, ix[j] = i0 + k;
  }
  for (int k = 0; k < cnt && !(lb[k] > best); k++) {
    double v = rdp_objective(grid_order(o->integer, ix[k], n), (void *)o);
    if (v < best || (v == best && ix[k] < *pick)) best = v, *pick = ix[k];
  }
  free(lb);
  free(ix);
  return best;
}

/* Minimises the objective over grid points i0..i1 and refines (continuous orders only)
 * with GSL's Brent minimiser between the neighbours of the best point. *pick gets the
 * best index. */
static double rdp_minimise_range(const rdp_obj *o, int i0, int i1, int *pick)
{
  int integer = o->integer;
  int n = integer ? ACCT_RDP_INT_MAX - 1 : ACCT_RDP_NGRID;
  if (i0 < 0) i0 = 0;
  if (i1 > n - 1) i1 = n - 1;
  double best = rdp_grid_min(o, i0, i1, n, pick);
  if (integer || *pick <= 0 || *pick >= n - 1 || *pick == i0 || *pick == i1) return best;
  double ba = grid_order(0, *pick, n), left = grid_order(0, *pick - 1, n),
         right = grid_order(0, *pick + 1, n);
  double fl = rdp_objective(left, (void *)o), fr = rdp_objective(right, (void *)o);
  gsl_function F = {rdp_objective, (void *)o};
  gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  if (!m) return best;
  if (best < fl && best < fr &&
      gsl_min_fminimizer_set_with_values(m, &F, ba, best, left, fl, right, fr) == GSL_SUCCESS) {
    for (int it = 0; it < 60; it++) {
      if (gsl_min_fminimizer_iterate(m)) break;
      if (gsl_min_test_interval(gsl_min_fminimizer_x_lower(m), gsl_min_fminimizer_x_upper(m), 0,
                                1e-6) == GSL_SUCCESS)
        break;
    }
    double v = gsl_min_fminimizer_f_minimum(m);
    if (v < best) best = v;
  }
  gsl_min_fminimizer_free(m);
  return best;
}

/* The optimal conversion is costly (a minimisation inside a bisection), so it is only
 * evaluated at the grid points around the Balle et al. optimum; any set of orders gives
 * a valid bound, and the optimal conversion is never above Balle's at any order. */
#define ACCT_RDP_OPT_HALFWIDTH 4

static double rdp_minimise(const rdp_obj *o)
{
  int pick;
  if (o->m != DPGD_ACCT_RDP_OPTIMAL) return rdp_minimise_range(o, 0, 1 << 20, &pick);
  rdp_obj b = *o;
  b.m = DPGD_ACCT_RDP_BALLE;
  double vb = rdp_minimise_range(&b, 0, 1 << 20, &pick);
  if (pick < 0) return vb;
  double vo = rdp_minimise_range(o, pick - ACCT_RDP_OPT_HALFWIDTH,
                                 pick + ACCT_RDP_OPT_HALFWIDTH, &pick);
  return vo < vb ? vo : vb;
}

static double acc_curve(double alpha, const void *ctx)
{
  return dpgd_acct_rdp_curve(ctx, alpha);
}

static int rdp_epsilon_of(const rdp_obj *o, dpgd_acct_value *out)
{
  dpgd_acct_gsl_quiet();
  double e = rdp_minimise(o);
  if (!isfinite(e))
    return DPGD_FAIL(DPGD_ERANGE, "%s: the RDP curve is infinite on the order grid",
                     dpgd_acct_method_name(o->m));
  out->err = fabs(e) * 64 * DBL_EPSILON;
  out->value = e + out->err;
  return DPGD_OK;
}

int dpgd_acct_rdp_curve_epsilon(dpgd_acct_rdp_fn curve, const void *ctx, int integer,
                                dpgd_acct_method m, double delta, dpgd_acct_value *out)
{
  return dpgd_acct_rdp_curve_epsilon_lb(curve, NULL, ctx, integer, m, delta, out);
}

int dpgd_acct_rdp_curve_epsilon_lb(dpgd_acct_rdp_fn curve, dpgd_acct_rdp_fn lower,
                                   const void *ctx, int integer, dpgd_acct_method m,
                                   double delta, dpgd_acct_value *out)
{
  if (m != DPGD_ACCT_RDP_CLASSIC && m != DPGD_ACCT_RDP_BALLE && m != DPGD_ACCT_RDP_OPTIMAL)
    return DPGD_FAIL(
        DPGD_EINVAL,
        "an RDP curve converts under rdp_classic, rdp_balle or rdp_optimal, not %s",
        dpgd_acct_method_name(m));
  if (!(delta > 0 && delta < 1))
    return DPGD_FAIL(DPGD_EINVAL, "delta = %g is not in (0, 1)", delta);
  rdp_obj o = {curve, lower, ctx, integer, m, delta, 0};
  return rdp_epsilon_of(&o, out);
}

int dpgd_acct_rdp_epsilon(const dpgd_accountant *a, dpgd_acct_method m, double delta,
                          dpgd_acct_value *out)
{
  rdp_obj o = {acc_curve, NULL, a, has_subsampled(a), m, delta, 0};
  return rdp_epsilon_of(&o, out);
}

int dpgd_acct_rdp_delta(const dpgd_accountant *a, dpgd_acct_method m, double eps,
                        dpgd_acct_value *out)
{
  dpgd_acct_gsl_quiet();
  rdp_obj o = {acc_curve, NULL, a, has_subsampled(a), m, eps, 1};
  double ld = rdp_minimise(&o);
  if (isnan(ld))
    return DPGD_FAIL(DPGD_ERANGE, "%s: delta(eps = %g) is not finite numerically",
                     dpgd_acct_method_name(m), eps);
  double d = exp(ld);
  /* d * (..) with ld = -inf would be 0 * inf: below the smallest normal, pad by it */
  out->err = d < DBL_MIN ? DBL_MIN : d * (64 * DBL_EPSILON * (1 + fabs(ld)));
  d += out->err;
  out->value = d > 1 ? 1 : d;
  return DPGD_OK;
}
