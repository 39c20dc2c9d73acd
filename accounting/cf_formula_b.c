/* cf_formula_b.c -- */
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

/* ---- formula B ---- */

static size_t memo_slot(const lm_memo *m, double t)
{
  uint64_t b;
  memcpy(&b, &t, sizeof b);
  return (size_t)((b * 0x9E3779B97F4A7C15ull) >> 20) % m->cap;
}

/* Doubles the table (rehashing), up to ACCT_MEMO_MAX slots; on failure it stays. */
static void memo_grow(lm_memo *m)
{
  lm_memo g = *m;
  g.cap = 2 * m->cap;
  if (g.cap > ACCT_MEMO_MAX) return;
  g.t = malloc(g.cap * sizeof *g.t);
  g.v = malloc(g.cap * sizeof *g.v);
  if (!g.t || !g.v) {
    free(g.t), free(g.v);
    return;
  }
  for (size_t i = 0; i < g.cap; i++) g.t[i] = NAN;
  for (size_t j = 0; j < m->cap; j++) {
    if (isnan(m->t[j])) continue;
    size_t i = memo_slot(&g, m->t[j]);
    while (!isnan(g.t[i])) i = (i + 1) % g.cap;
    g.t[i] = m->t[j], g.v[i] = m->v[j];
  }
  free(m->t), free(m->v);
  *m = g;
}

double complex dpgd_acct_cf_memo_log_mgf(lm_memo *m, const dpgd_accountant *a, int dir,
                                         double c, double t)
{
  size_t i = memo_slot(m, t);
  for (size_t k = 0; k < m->cap && !isnan(m->t[i]); k++, i = (i + 1) % m->cap)
    if (m->t[i] == t) return m->v[i];
  double complex v = dpgd_acct_log_mgf(a, dir, c + I * t);
  if (2 * (m->n + 1) > m->cap) { /* keep the table at most half full */
    memo_grow(m);
    i = memo_slot(m, t);
    while (!isnan(m->t[i])) i = (i + 1) % m->cap;
  }
  if (isnan(m->t[i]) && 2 * (m->n + 1) <= m->cap) {
    m->t[i] = t, m->v[i] = v;
    m->n++;
  }
  return v;
}

/* With r = x/d >= 0: accumulates n releases of one factor (1 + r) into the product
 * prod (1 + r_j)^{n_j} = 1 + L + H kept as its linear part L = sum n_j r_j and the rest H
 * (terms of degree >= 2, all >= 0: no cancellation). H is rounded up. */
static void peel_acc(double n, double r, double *L, double *H)
{
  double l = n * r, h;
  if (l <= 0.1) { /* sum_{j>=2} C(n, j) r^j, each ratio <= l/(j+1) <= 1/30 */
    double term = n * (n - 1) / 2 * r * r, sum = 0;
    for (double j = 2; j <= n && term > 1e-17 * sum; j++) {
      sum += term;
      term *= (n - j) / (j + 1) * r;
    }
    h = sum * (1 + 1e-14) + 2 * term;
  } else {
    double e = expm1(n * log1p(r));
    h = fmax(0, e - l) + 4 * DBL_EPSILON * (l + 4) * (1 + e);
  }
  *H = (*H + h + (*L + *H) * (l + h)) * (1 + 1e-14);
  *L += l;
}

/* log of the bound on |M_j(c + i t)| pieces, summed over the composition:
 * A(t) = sum_j n_j log(D_j(c) + C_j(t)) and Bd = sum_j n_j log D_j(c); if H is given,
 * *H = prod_j (1 + C_j/D_j)^{n_j} - 1 - sum_j n_j C_j/D_j (the part of a pure atomic +
 * Laplace product with two or more continuous factors, relative to e^Bd). */
void dpgd_acct_cf_bound_logs(const cf_ctx *x, double t, double *A, double *Bd, double *H)
{
  double L = 0;
  if (H) *H = 0;
  const dpgd_accountant *a = x->a;
  double c = x->c;
  *A = 0, *Bd = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    double n = (double)en->count, d, cb;
    switch (en->kind) {
    case ACCT_GAUSSIAN: {
      double mu2 = en->par[0] * en->par[0];
      *A += n * mu2 * (c * c + c - t * t) / 2;
      *Bd = -INFINITY;
      continue;
    }
    case ACCT_LAPLACE: {
      double aa = en->par[0];
      double e1 = exp(c * aa), e2 = exp(-(1 + c) * aa);
      d = (e1 + e2) / 2;
      cb = (e1 + e2) / (2 * hypot(1 + 2 * c, 2 * t));
      if (H) peel_acc(n, cb / d, &L, H);
      break;
    }
    case ACCT_WOR_AR_LAPLACE: { /* atoms d, continuous part bounded in logs */
      double ld = creal(dpgd_acct_cf_atoms_log_mgf(en, x->dir, c));
      double lb = dpgd_acct_wl_log_cont_bound(en, x->dir, c, t);
      if (H) peel_acc(n, exp(lb - ld), &L, H);
      *A += n * (fmax(ld, lb) + log1p(exp(-fabs(ld - lb))));
      *Bd += n * ld;
      continue;
    }
    case ACCT_SUBSAMPLED: {
      double q = en->par[0], sg = en->par[1];
      double rw = x->dir ? -c : 1 + c;
      double mc = dpgd_acct_cf_sg_log_mgf_real(q, sg, x->dir, c);
      double lv = t > 0 ? log(dpgd_acct_cf_sg_tv(q, sg, rw)) - log(t) : INFINITY;
      *A += n * fmin(mc, lv);
      *Bd = -INFINITY;
      continue;
    }
    default:
      d = exp(creal(dpgd_acct_cf_atoms_log_mgf(en, x->dir, c)));
      cb = 0;
      break;
    }
    *A += n * log(d + cb);
    *Bd += n * log(d);
  }
  if (!x->subtract) *Bd = -INFINITY;
}

/* Formula B's integrand at t (divided by pi). */
static double b_integrand(double t, void *vp)
{
  const cf_ctx *x = vp;
  double complex s = x->c + I * t;
  double complex lm = x->memo ? dpgd_acct_cf_memo_log_mgf(x->memo, x->a, x->dir, x->c, t)
                              : dpgd_acct_log_mgf(x->a, x->dir, s);
  /* e^{lm - s eps} / (s (s + 1)) by a complex division (no log, no atan2) unless the
   * exponential could overflow, then through the log */
  double complex k = -s * x->eps, dz = s * (s + 1);
  int lg = creal(lm + k) > 700;
  if (lg) k -= dpgd_acct_cf_log_c(dz);
  double complex v = cexp(lm + k);
  if (x->subtract) {
    double complex ld = 0;
    for (size_t i = 0; i < x->a->n; i++) {
      const acct_entry *en = &x->a->e[i];
      int atomic = en->kind == ACCT_LAPLACE || en->kind == ACCT_WOR_AR_LAPLACE;
      double complex lj = atomic ? dpgd_acct_cf_atoms_log_mgf(en, x->dir, s)
                                 : dpgd_acct_cf_entry_log_mgf(en, x->dir, s);
      ld += (double)en->count * lj;
    }
    double complex j1 = 0; /* J1 / D = sum_j n_j C_j / D_j = sum_j n_j frac / (1 + e) */
    for (size_t i = 0; x->peel && i < x->a->n; i++) {
      const acct_entry *en = &x->a->e[i];
      if (en->kind == ACCT_WOR_AR_LAPLACE) /* C/D by quadrature */
        j1 += (double)en->count * cexp(dpgd_acct_wl_log_cont(en, x->dir, s) -
                                       dpgd_acct_cf_atoms_log_mgf(en, x->dir, s));
      if (en->kind != ACCT_LAPLACE) continue;
      double complex z = 1 + 2 * s, e = cexp(-en->par[0] * z); /* |z| >= 1 + 2c */
      j1 += (double)en->count * ((1 - e) / z) / (1 + e);
    }
    if (!lg && creal(ld + k) > 700) { /* D's scale may exceed M's */
      lg = 1;
      v /= dz;
      k -= dpgd_acct_cf_log_c(dz);
    }
    v -= cexp(ld + k) * (1 + j1);
  }
  if (!lg) v /= dz;
  return creal(v) / M_PI;
}

/* Saddle-point objective log M(c) - c eps - log(c (c + 1)) at c = e^y. */
static double saddle_obj(double y, void *vp)
{
  const cf_ctx *x = vp;
  double c = exp(y);
  double v = creal(dpgd_acct_log_mgf(x->a, x->dir, c)) - c * x->eps - log(c * (c + 1));
  return isfinite(v) ? v : 1e300;
}

static double find_c_raw(cf_ctx *x);

/* 1 if some entry is a without-replacement Laplace (add/remove). */
static int has_wl(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_WOR_AR_LAPLACE) return 1;
  return 0;
}

/* c minimising the saddle objective, at most ACCT_WL_C_MAX with a without-replacement
 * Laplace entry (its moment's quadrature grows with |c + i t|; any c > 0 is exact, c
 * only steers accuracy, and the saddle runs off to +inf as eps nears the largest loss). */
double dpgd_acct_cf_find_c(cf_ctx *x)
{
  double c = find_c_raw(x);
  return has_wl(x->a) ? fmin(c, ACCT_WL_C_MAX) : c;
}

/* c minimising the saddle objective: a grid over log c, refined by GSL's Brent
 * minimiser. */
static double find_c_raw(cf_ctx *x)
{
  const int n = 41;
  const double y0 = log(1e-6), y1 = log(1e4);
  double best = INFINITY;
  int ib = 0;
  double f[41];
  for (int i = 0; i < n; i++) {
    f[i] = saddle_obj(y0 + (y1 - y0) * i / (n - 1), x);
    if (f[i] < best) best = f[i], ib = i;
  }
  double y = y0 + (y1 - y0) * ib / (n - 1);
  if (ib == 0 || ib == n - 1) return exp(y);
  double lo = y0 + (y1 - y0) * (ib - 1) / (n - 1), hi = y0 + (y1 - y0) * (ib + 1) / (n - 1);
  gsl_function F = {saddle_obj, x};
  gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  if (!m) return exp(y);
  if (gsl_min_fminimizer_set_with_values(m, &F, y, f[ib], lo, f[ib - 1], hi, f[ib + 1]) ==
      GSL_SUCCESS) {
    for (int it = 0; it < 50; it++) {
      if (gsl_min_fminimizer_iterate(m)) break;
      y = gsl_min_fminimizer_x_minimum(m);
      if (gsl_min_test_interval(gsl_min_fminimizer_x_lower(m), gsl_min_fminimizer_x_upper(m),
                                1e-3, 0) == GSL_SUCCESS)
        break;
    }
  }
  gsl_min_fminimizer_free(m);
  return exp(y);
}

/* QAG's rule and stopping test on a fixed, eps-independent set of nodes: the Gauss-
 * Kronrod 31-point rule on n equal subintervals of [a, b], n = 1, 2, 4, ... until the
 * summed error estimates (each GSL's qk31 estimate, as QAG sums them) fall below
 * ACCT_QUAD_RELTOL |result|, below abstol (a far tail piece; the estimate is
 * still added to the error) or below the rounding level 50 eps resabs where QAG stops
 * with GSL_EROUND. Past ACCT_QUAD_FIXED_MAX subintervals it gives up (GSL_EMAXITER) and
 * the caller runs QAG on the piece instead. Used by the eps search, whose memo of log M
 * then serves every eps after the first from the same nodes t. */
static int quad_fixed(gsl_function *F, double a, double b, double abstol, double *res,
                      double *err)
{
  double s = 0, e = 0;
  for (size_t n = 1;; n *= 2) {
    if (n > ACCT_QUAD_FIXED_MAX) return GSL_EMAXITER;
    double h = (b - a) / (double)n, ra = 0;
    s = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
      double r, ee, rabs, rasc;
      double x0 = a + (double)i * h, x1 = i + 1 == n ? b : a + (double)(i + 1) * h;
      gsl_integration_qk31(F, x0, x1, &r, &ee, &rabs, &rasc);
      s += r, e += ee, ra += rabs;
    }
    if (!isfinite(s) || !isfinite(e)) break;
    if (e <= fmax(ACCT_QUAD_RELTOL * fabs(s), abstol) || e <= 50 * DBL_EPSILON * ra) break;
  }
  if (!isfinite(s) || !isfinite(e)) return GSL_EMAXITER;
  *res = s, *err = e;
  return GSL_SUCCESS;
}

/* The relative tail tolerance of the running integration: ACCT_TAIL_RELTOL, or
 * ACCT_WL_TAIL_RELTOL while formula B integrates a composition with a
 * without-replacement Laplace entry (set and restored by dpgd_acct_cf_formula_b). */
static _Thread_local double tail_rel = ACCT_TAIL_RELTOL;

/* Set when an integration stopped on the estimated tail (not a proven bound). */
static _Thread_local int tail_estimated;

int dpgd_acct_cf_tail_estimated(int reset)
{
  int v = tail_estimated;
  if (reset) tail_estimated = 0;
  return v;
}

int dpgd_acct_cf_integrate_tail(gsl_function *F, const void *ctx, tail_fn *tail, int estimate,
                                int fixed, double T0, double base, double *val, double *err)
{
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(ACCT_QUAD_LIMIT);
  if (!w) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (quadrature workspace)");
  double sum = 0, E = 0, lo = 0, hi = T0, tb = INFINITY;
  int st = DPGD_OK;
  for (int k = 0; k < ACCT_MAX_DOUBLINGS; k++) {
    double r, e;
    double abstol = fmax(ACCT_QUAD_RELTOL * base, ACCT_QUAD_ABSTOL);
    int gs = fixed ? quad_fixed(F, lo, hi, abstol, &r, &e) : GSL_EMAXITER;
    if (gs)
      gs = gsl_integration_qag(F, lo, hi, abstol, ACCT_QUAD_RELTOL, ACCT_QUAD_LIMIT,
                               GSL_INTEG_GAUSS31, w, &r, &e);
    if ((gs && gs != GSL_EROUND && gs != GSL_EMAXITER) || !isfinite(r) || !isfinite(e)) {
      st = DPGD_FAIL(DPGD_ERANGE,
                     "the characteristic function decays too slowly for the contour "
                     "integral beyond t = %g (few subsampled releases at a small rate?)",
                     lo);
      break;
    }
    sum += r, E += e;
    double tol = fmax(tail_rel * (base + fabs(sum)), ACCT_QUAD_ABSTOL);
    tb = tail(ctx, hi);
    if (tb <= tol) break;
    if (estimate && k > 0) {
      double est = ACCT_TAIL_SAFETY * (fabs(r) + e + hi * fabs(F->function(hi, F->params)));
      if (est <= tol) {
        tb = est;
        tail_estimated = 1;
        break;
      }
    }
    lo = hi, hi *= 2;
  }
  gsl_integration_workspace_free(w);
  if (st) return st;
  *val = sum;
  *err = E + tb + 4 * DBL_EPSILON * fabs(sum);
  return DPGD_OK;
}

static double b_tail(const void *vp, double T)
{
  const cf_ctx *x = vp;
  double A, Bd;
  if (x->peel) { /* |M - D - J1| <= e^Bd H: every term bounded by its moduli */
    double H;
    dpgd_acct_cf_bound_logs(x, T, &A, &Bd, &H);
    return exp(Bd - x->c * x->eps) * H / (M_PI * T);
  }
  dpgd_acct_cf_bound_logs(x, T, &A, &Bd, NULL);
  /* e^A - e^Bd = e^A (1 - e^{Bd - A}) */
  double diff = Bd == -INFINITY ? 1 : -expm1(Bd - A);
  return exp(A - x->c * x->eps) * diff / (M_PI * T);
}

/* Scale of t beyond which the integrand decays: 1/sqrt(variance of the loss). */
static double t_scale(const cf_ctx *x)
{
  double h = 1e-4 * fmax(x->c, 1e-3);
  double f0 = creal(dpgd_acct_log_mgf(x->a, x->dir, x->c - h));
  double f1 = creal(dpgd_acct_log_mgf(x->a, x->dir, x->c));
  double f2 = creal(dpgd_acct_log_mgf(x->a, x->dir, x->c + h));
  double var = (f0 - 2 * f1 + f2) / (h * h);
  if (!(var > 0) || !isfinite(var)) return 1;
  return fmin(fmax(4 / sqrt(var), 1e-6), 1e6);
}

/* 1 if some entry is a subsampled Gaussian and none is Gaussian (see integrate_tail). */
static int has_sg_only(const dpgd_accountant *a)
{
  int sg = 0;
  for (size_t i = 0; i < a->n; i++) sg |= a->e[i].kind == ACCT_SUBSAMPLED;
  return sg && !(dpgd_acct_gauss_mu2(a) > 0);
}

/* Largest privacy loss of the composition in direction dir (+inf with a Gaussian-type
 * entry): beyond it delta is exactly 0. */
static double max_loss(const dpgd_accountant *a, int dir)
{
  double m = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    double l[2], w[2], mx = -INFINITY;
    if (en->kind == ACCT_GAUSSIAN && en->par[0] == 0) continue;
    if (en->kind == ACCT_SUBSAMPLED && dir) { /* add pair: L = -u <= -log(1 - q) */
      m += (double)en->count * -log1p(-en->par[0]);
      continue;
    }
    if (en->kind == ACCT_GAUSSIAN || en->kind == ACCT_SUBSAMPLED) return INFINITY;
    if (en->kind == ACCT_DISCRETE) {
      for (size_t j = 0; j < en->k; j++) {
        double p = dir ? en->q[j] : en->p[j], q = dir ? en->p[j] : en->q[j];
        if (p > 0) mx = fmax(mx, log(p / q));
      }
    } else {
      size_t n = dpgd_acct_cf_entry_atoms(en, dir, l, w);
      for (size_t j = 0; j < n; j++) mx = fmax(mx, l[j]);
    }
    m += (double)en->count * mx;
  }
  return m;
}

/* delta = max(v, 0) + err, at most 1 and at least DBL_MIN: every caller has checked that
 * some loss exceeds eps (delta > 0 then), and a positive delta never prints as 0. */
void dpgd_acct_cf_clamp_delta(dpgd_acct_value *out, double v, double err)
{
  out->err = err;
  v = fmax(v, 0) + err;
  out->value = v > 1 ? 1 : v < DBL_MIN ? DBL_MIN : v;
}

int dpgd_acct_cf_formula_b(const dpgd_accountant *a, int dir, double eps, const atoms *at,
                           lm_memo *memo, dpgd_acct_value *out)
{
  cf_ctx x = {.a = a, .dir = dir, .eps = eps, .subtract = at && at->n > 0, .memo = memo};
  double dv = 0, derr = 0;
  if (eps >= max_loss(a, dir)) { /* no outcome has loss above eps */
    out->value = out->err = 0;
    return DPGD_OK;
  }
  if (x.subtract) {
    dv = dpgd_acct_cf_atoms_delta(at, eps, &derr);
    double nl = 0, e1;
    for (size_t j = 0; j < at->nlap; j++) nl += at->lap_n[j];
    if (nl > 0) { /* the terms with one Laplace continuous factor in closed form */
      dv += dpgd_acct_cf_peel_delta(at, eps, &e1);
      derr += e1;
      x.peel = at;
    }
    /* pure RR/discrete (R = 0) or one Laplace release (M - D - J1 = 0): exact */
    if (nl <= 1) {
      dpgd_acct_cf_clamp_delta(out, dv, derr);
      return DPGD_OK;
    }
  }
  if (!x.subtract && has_wl(a)) /* its atoms must be enumerated: M alone never decays */
    return DPGD_FAIL(DPGD_ERANGE,
                     "the without-replacement Laplace needs its atoms "
                     "enumerated, and this composition has more than %d",
                     ACCT_ENUM_MAX_ATOMS);
  if (memo && memo->c > 0) x.c = memo->c;
  else x.c = dpgd_acct_cf_find_c(&x);
  if (memo && memo->c != x.c) memo->t0 = 0;
  if (memo) memo->c = x.c;
  gsl_function F = {b_integrand, &x};
  double v = 0, e = 0;
  double t0 = memo && memo->t0 > 0 ? memo->t0 : t_scale(&x);
  if (memo) memo->t0 = t0;
  tail_rel = has_wl(a) ? ACCT_WL_TAIL_RELTOL : ACCT_TAIL_RELTOL;
  int st =
      dpgd_acct_cf_integrate_tail(&F, &x, b_tail, has_sg_only(a), memo != NULL, t0, dv, &v, &e);
  tail_rel = ACCT_TAIL_RELTOL;
  if (st) return st;
  dpgd_acct_cf_clamp_delta(out, v + dv, e + derr);
  return DPGD_OK;
}

int dpgd_acct_delta_formula_b(const dpgd_accountant *a, int dir, double eps,
                              dpgd_acct_value *out)
{
  if (dpgd_acct_cf_gl_init()) return DPGD_ENOMEM;
  atoms at;
  int st = dpgd_acct_cf_enumerate_peel(a, dir, &at);
  if (st) return st;
  dpgd_acct_gsl_quiet();
  st = dpgd_acct_cf_formula_b(a, dir, eps, &at, NULL, out);
  dpgd_acct_cf_atoms_free(&at);
  return st;
}
