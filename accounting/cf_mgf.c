/* cf_mgf.c -- the moment functions M(s) = E[e^{s L}] of every mechanism in the
 * characteristic-function accountant (docs/MATH.md "Mechanisms"): the subsampled
 * Gaussian's as a 1-D integral over the output, Laplace, randomized response and discrete
 * pairs as atoms or closed forms, and their composition (dpgd_acct_log_mgf). Overview:
 * cf_internal.h. */
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

/* ---- the subsampled Gaussian's moment function (a 1-D integral over the output o) ---- */

/* Privacy loss of the remove pair at output o: u(o) = log((1-q) + q e^x),
 * x = (2o - 1)/(2 sigma^2); the add pair's loss is -u(o). */
static double sg_u_c(double l1, double lq, double sigma, double o)
{
  double x = (2 * o - 1) / (2 * sigma * sigma);
  double l2 = lq + x;
  return l1 > l2 ? l1 + log1p(exp(l2 - l1)) : l2 + log1p(exp(l1 - l2));
}

/* The same with l1 = log(1 - q) and lq = log q computed by the caller (hot loops). */
double dpgd_acct_cf_sg_u(double q, double sigma, double o)
{
  return sg_u_c(log1p(-q), log(q), sigma, o);
}

/* Complex log as 0.5 log(x^2 + y^2) + i atan2(y, x). glibc's clog computes x^2 + y^2 - 1
 * exactly near |z| = 1 (a qsort per call: a fifth of a query's time), precision the
 * arguments here do not have: each carries an absolute rounding error ~ DBL_EPSILON |z|
 * already, which bounds this form's error too. clog where x^2 + y^2 could overflow. */
double complex dpgd_acct_cf_log_c(double complex z)
{
  double x = creal(z), y = cimag(z);
  if (!(fabs(x) < 1e150 && fabs(y) < 1e150) || (fabs(x) < 1e-150 && fabs(y) < 1e-150))
    return clog(z);
  return 0.5 * log(x * x + y * y) + I * atan2(y, x);
}

/* Streaming complex log-sum-exp. */
typedef struct {
  double m;
  double complex s;
} lse;

static void lse_add(lse *a, double complex z)
{
  double r = creal(z);
  if (r == -INFINITY) return;
  if (r > a->m) {
    a->s = a->s * exp(a->m - r) + cexp(z - r);
    a->m = r;
  } else {
    a->s += cexp(z - a->m);
  }
}

static double complex lse_value(const lse *a)
{
  if (a->m == -INFINITY || a->s == 0) return -INFINITY;
  return a->m + dpgd_acct_cf_log_c(a->s);
}

/* The nodes and weights of the Gauss-Legendre rule on [-1, 1], computed once. */
_Thread_local double dpgd_acct_gl_x[ACCT_SG_GL_NODES], dpgd_acct_gl_w[ACCT_SG_GL_NODES];
static _Thread_local double gl_lw[ACCT_SG_GL_NODES]; /* log(dpgd_acct_gl_w / 2) */
static _Thread_local int gl_ready;

int dpgd_acct_cf_gl_init(void)
{
  if (gl_ready) return DPGD_OK;
  gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc(ACCT_SG_GL_NODES);
  if (!t) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (Gauss-Legendre table)");
  for (size_t i = 0; i < ACCT_SG_GL_NODES; i++)
    gsl_integration_glfixed_point(-1, 1, i, &dpgd_acct_gl_x[i], &dpgd_acct_gl_w[i], t);
  for (size_t i = 0; i < ACCT_SG_GL_NODES; i++) gl_lw[i] = log(0.5 * dpgd_acct_gl_w[i]);
  gsl_integration_glfixed_table_free(t);
  gl_ready = 1;
  return DPGD_OK;
}

/* The window [lo, hi] of o holding the mass of phi_sigma(o) e^{Re(w) u(o)}. For
 * Re w > 0 the factor shifts the Gaussian right by at most Re(w) (u <= max(0, x)); for
 * Re w <= 0 it is at most (1 - q)^{Re w} and decreasing, so the Gaussian's own window
 * holds the mass. Outside ACCT_SG_TAIL_SIGMAS standard deviations lies less than
 * 2 Q(12) ~ 4e-33 of the integrand's peak scale. */
static void sg_window(double sigma, double rw, double *lo, double *hi)
{
  *lo = -ACCT_SG_TAIL_SIGMAS * sigma;
  *hi = fmax(0, rw) + ACCT_SG_TAIL_SIGMAS * sigma;
}

/* log int phi_sigma(o) exp(w u(o)) do by composite Gauss-Legendre: panels [a, b] at most
 * sigma wide and with a phase change |Im w| max_[a,b] u' * (b - a) <= 2 pi, where the
 * 16-point rule's error is below 1e-19 of the panel's mass. u' = q e^x / ((1 - q) +
 * q e^x) / sigma^2 increases with o, so its maximum on a panel is u'(b) <= 1/sigma^2:
 * panels are laid left to right, each as wide as the bound at its right end allows
 * (wide where the mass is, narrow only in the right tail where u' nears 1/sigma^2). */
/* The leading panels of sg_log_int's rule for one (q, sigma, Re w): the first np panels
 * [lo + p sigma, lo + (p + 1) sigma] (full width sigma, inside the window), per node the
 * loss u and mag = exp(log weight - o^2/(2 sigma^2) + Re(w) u - m0), and u' at each
 * panel's right end. A contour integral asks for one Re w at many Im w; the panels stay
 * the same until the phase condition narrows one, so their nodes cost a sincos each.
 * ACCT_SG_CACHE_SLOTS slots (the eps search alternates two directions), replaced in
 * turn. Every memory of this file is _Thread_local, so accountants can be queried from
 * several threads at once. */
typedef struct {
  double q, sigma, rw, m0;
  size_t np, cap;
  double *u, *mag, *up; /* (cap * ACCT_SG_GL_NODES), same, (cap) */
} sg_cache;

static _Thread_local sg_cache sg_slots[ACCT_SG_CACHE_SLOTS];
static _Thread_local size_t sg_next_slot;

/* A thread's slots are freed when it exits (a pthread key's destructor; the destructor
 * runs in the exiting thread, whose _Thread_local storage is still there). */
static pthread_key_t sg_key;
static pthread_once_t sg_key_once = PTHREAD_ONCE_INIT;
static int sg_key_ok;

static void sg_slots_free(void *unused)
{
  (void)unused;
  for (size_t k = 0; k < ACCT_SG_CACHE_SLOTS; k++) {
    free(sg_slots[k].u);
    free(sg_slots[k].mag);
    free(sg_slots[k].up);
    sg_slots[k] = (sg_cache){0};
  }
}

static void sg_key_make(void) { sg_key_ok = pthread_key_create(&sg_key, sg_slots_free) == 0; }

static const sg_cache *sg_cache_get(double q, double sigma, double rw, double lo, double hi)
{
  for (size_t k = 0; k < ACCT_SG_CACHE_SLOTS; k++) {
    const sg_cache *c = &sg_slots[k];
    if (c->np > 0 && c->q == q && c->sigma == sigma && c->rw == rw) return c;
  }
  double npf = floor((hi - lo) / sigma);
  if (!(npf >= 1)) return NULL;
  size_t np = npf < ACCT_SG_CACHE_PANELS ? (size_t)npf : ACCT_SG_CACHE_PANELS;
  sg_cache *c = &sg_slots[sg_next_slot];
  c->np = 0;
  if (c->cap < np) {
    pthread_once(&sg_key_once, sg_key_make);
    if (sg_key_ok) pthread_setspecific(sg_key, sg_slots); /* any non-NULL value */
    double *u = realloc(c->u, np * ACCT_SG_GL_NODES * sizeof *u);
    if (u) c->u = u;
    double *mag = realloc(c->mag, np * ACCT_SG_GL_NODES * sizeof *mag);
    if (mag) c->mag = mag;
    double *up = realloc(c->up, np * sizeof *up);
    if (up) c->up = up;
    if (!u || !mag || !up) return NULL; /* the caller integrates without */
    c->cap = np;
  }
  sg_next_slot = (sg_next_slot + 1) % ACCT_SG_CACHE_SLOTS;
  double s2 = sigma * sigma, l1 = log1p(-q), lq = log(q);
  double lh = -0.5 * log(2 * M_PI), m0 = -INFINITY; /* lnorm + log(panel width sigma) */
  for (size_t p = 0; p < np; p++) {
    double a = lo + (double)p * sigma, b = a + sigma, mid = a + 0.5 * sigma;
    c->up[p] = exp(lq + (2 * b - 1) / (2 * s2) - sg_u_c(l1, lq, sigma, b)) / s2;
    for (int i = 0; i < ACCT_SG_GL_NODES; i++) {
      double o = mid + 0.5 * sigma * dpgd_acct_gl_x[i], u = sg_u_c(l1, lq, sigma, o);
      double re = gl_lw[i] + lh - o * o / (2 * s2) + rw * u;
      c->u[p * ACCT_SG_GL_NODES + i] = u;
      c->mag[p * ACCT_SG_GL_NODES + i] = re;
      m0 = fmax(m0, re);
    }
  }
  for (size_t k = 0; k < np * ACCT_SG_GL_NODES; k++) c->mag[k] = exp(c->mag[k] - m0);
  c->q = q, c->sigma = sigma, c->rw = rw, c->m0 = m0, c->np = np;
  return c;
}

static double complex sg_log_int(double q, double sigma, double complex w)
{
  double lo, hi;
  sg_window(sigma, creal(w), &lo, &hi);
  if ((hi - lo) / sigma > ACCT_SG_MAX_PANELS) return NAN; /* panels are <= sigma wide */
  double ph = fabs(cimag(w)), iw = cimag(w), s2 = sigma * sigma;
  double l1 = log1p(-q), lq = log(q);
  double lnorm = -0.5 * log(2 * M_PI) - log(sigma), lw0[ACCT_SG_GL_NODES];
  for (int i = 0; i < ACCT_SG_GL_NODES; i++) lw0[i] = gl_lw[i] + lnorm;
  /* sum e^{-m} (complex) and mass, the same sum of the moduli (a lower bound of
   * e^{-m} M(Re s)), kept at a scale m raised 30 above each new largest exponent */
  double complex sum = 0;
  double m = -INFINITY, mass = 0, rw = creal(w), rwp = fmax(rw, 0);
  size_t np = 0;
  double a = lo;
  const sg_cache *cc = sg_cache_get(q, sigma, rw, lo, hi);
  if (cc) { /* the cached leading panels while the phase condition leaves them whole */
    for (; np < cc->np && !(ph * cc->up[np] * sigma > 2 * M_PI); np++) {
      const double *u = cc->u + np * ACCT_SG_GL_NODES, *mg = cc->mag + np * ACCT_SG_GL_NODES;
      for (int i = 0; i < ACCT_SG_GL_NODES; i++) {
        double phase = iw * u[i];
        sum += mg[i] * cos(phase) + I * (mg[i] * sin(phase));
        mass += mg[i];
      }
    }
    if (np > 0) m = cc->m0;
    a = lo + (double)np * sigma;
  }
  for (; a < hi;) {
    /* Beyond o* > max(Re w, 0) the modulus g = phi_sigma e^{Re(w) u} has
     * (log g)' <= -(o - max(Re w, 0))/sigma^2 (u' <= 1/sigma^2), so the rest of the
     * window holds at most g(o*) sigma^2 / (o* - max(Re w, 0)): stop once that is below
     * ACCT_SG_CUT of the mass already summed (the window's own cut is ~4e-33). */
    if (a > rwp + sigma && mass > 0) {
      double lg = lnorm - a * a / (2 * s2) + rw * sg_u_c(l1, lq, sigma, a);
      if (exp(lg - m) * s2 / (a - rwp) <= ACCT_SG_CUT * mass) break;
    }
    double b = fmin(a + sigma, hi);
    if (hi - b < 1e-9 * sigma) b = hi; /* no sliver after the cached panels */
    double up = exp(lq + (2 * b - 1) / (2 * s2) - sg_u_c(l1, lq, sigma, b)) / s2;
    if (ph * up * (b - a) > 2 * M_PI) b = a + 2 * M_PI / (ph * up);
    if (++np > ACCT_SG_MAX_PANELS || !(b > a)) return NAN;
    double h = b - a, mid = a + 0.5 * h, lh = log(h);
    for (int i = 0; i < ACCT_SG_GL_NODES; i++) {
      double o = mid + 0.5 * h * dpgd_acct_gl_x[i], u = sg_u_c(l1, lq, sigma, o);
      double re = lw0[i] + lh - o * o / (2 * s2) + rw * u;
      if (re > m) {
        double f = exp(m - (re + 30));
        sum *= f, mass *= f, m = re + 30;
      }
      double mg = exp(re - m), phase = iw * u;
      sum += mg * cos(phase) + I * (mg * sin(phase));
      mass += mg;
    }
    a = b;
  }
  return m == -INFINITY || sum == 0 ? -INFINITY : m + dpgd_acct_cf_log_c(sum);
}

/* log M(s) of one subsampled-Gaussian release: remove pair w = 1 + s, add pair w = -s. */
static double complex sg_log_mgf(double q, double sigma, int dir, double complex s)
{
  return sg_log_int(q, sigma, dir ? -s : 1 + s);
}

/* log M(c) of one release at real c, remembering the last arguments and value (the
 * truncation bound asks for the same c at every tail check of a contour integral). */
double dpgd_acct_cf_sg_log_mgf_real(double q, double sigma, int dir, double c)
{
  static _Thread_local double lq = NAN, ls, lc, lv;
  static _Thread_local int ld;
  if (q == lq && sigma == ls && dir == ld && c == lc) return lv;
  lv = creal(sg_log_mgf(q, sigma, dir, c));
  lq = q, ls = sigma, ld = dir, lc = c;
  return lv;
}

/* V >= the total variation of f = phi_sigma e^{Re(w) u} / u' over the real line, so that
 * |M(c + i t)| <= V/t (integration by parts; accounting/CF_BOUNDS.md section 2). A proven
 * bound, not a sample: on each cell [o_i, o_i + h] of a grid over the window,
 * |(log f)'| <= L_i = (max|o| + |Re w| + 2)/sigma^2 gives |f'| <= L_i min(f_i, f_{i+1})
 * e^{L_i h}; beyond the window f is monotone (checked) and adds its end value.
 * INFINITY where the left tail cannot be shown monotone. */
static double sg_tv_eval(double q, double sigma, double rw);

/* sg_tv remembers its last arguments and value: a contour integral and an eps search
 * ask for the same (q, sigma, c) at every tail check. */
double dpgd_acct_cf_sg_tv(double q, double sigma, double rw)
{
  static _Thread_local double lq = NAN, ls, lr, lv;
  if (q == lq && sigma == ls && rw == lr) return lv;
  lv = sg_tv_eval(q, sigma, rw);
  lq = q, ls = sigma, lr = rw;
  return lv;
}

/* log f(o) (up to the common constant) and u'(o) sigma^2 = s(x) in (0, 1). */
static double sg_log_f(double l1, double lq, double sigma, double rw, double o, double *s)
{
  double s2 = sigma * sigma, x = (2 * o - 1) / (2 * s2);
  double u = sg_u_c(l1, lq, sigma, o);
  *s = exp(lq + x - u);
  /* log u' = log q + x - u - 2 log sigma */
  return -o * o / (2 * s2) + rw * u - (lq + x - u) + 2 * log(sigma);
}

static double sg_tv_eval(double q, double sigma, double rw)
{
  double lo, hi, s_lo, s_hi, s2 = sigma * sigma;
  sg_window(sigma, rw, &lo, &hi);
  double l1 = log1p(-q), lq = log(q);
  /* left of lo: (log f)' = (-o - 1)/sigma^2 + (rw + 1) u' with u' <= u'(lo), > 0 */
  double llo = sg_log_f(l1, lq, sigma, rw, lo, &s_lo);
  double lhi = sg_log_f(l1, lq, sigma, rw, hi, &s_hi);
  if (!(-lo - 1 + fmin(rw + 1, 0) * s_lo > 0)) return INFINITY;
  /* right of hi > max(0, rw): (log f)' <= (-o - 1 + max(rw + 1, 0))/sigma^2 < 0 */
  const int n = ACCT_SG_TV_POINTS;
  double h = (hi - lo) / (n - 1), m = fmax(llo, lhi), sum = exp(llo - m) + exp(lhi - m);
  double prev = llo, s;
  for (int i = 1; i < n; i++) {
    double o = lo + h * i;
    double l = sg_log_f(l1, lq, sigma, rw, o, &s);
    double L = (fmax(fabs(o), fabs(o - h)) + fabs(rw) + 2) / s2;
    double lc = fmin(prev, l) + L * h + log(L * h) + 1e-9 * (1 + fabs(l));
    if (lc > m) {
      sum *= exp(m - lc);
      m = lc;
    }
    sum += exp(lc - m);
    prev = l;
  }
  return ACCT_SG_TV_SAFETY * sum * exp(m - 0.5 * log(2 * M_PI) - log(sigma));
}

/* ---- moment functions of the other mechanisms ---- */

/* Laplace: M(s) = e^{sa} [1/2 + e^{-a(1+2s)}/2 + (1 - e^{-a(1+2s)}) / (2 (1 + 2s))]. */
static double complex laplace_log_mgf(double a, double complex s)
{
  double complex z = 1 + 2 * s;
  double complex e = cexp(-a * z);
  double complex frac =
      fabs(creal(z)) < 1e-8 && fabs(cimag(z)) < 1e-8 ? a * (1 - a * z / 2) : (1 - e) / z;
  return s * a + dpgd_acct_cf_log_c(0.5 + 0.5 * e + 0.5 * frac);
}

/* Atoms (loss l_k, probability w_k) of one release of an RR/discrete entry in
 * direction dir; returns their number (<= en->k or 2). */
size_t dpgd_acct_cf_entry_atoms(const acct_entry *en, int dir, double *l, double *w)
{
  if (en->kind == ACCT_RR) {
    double e0 = en->par[0], p = 1 / (1 + exp(-e0));
    l[0] = e0, w[0] = p;
    l[1] = -e0, w[1] = 1 - p;
    return 2;
  }
  if (en->kind == ACCT_WOR_AR_LAPLACE) return dpgd_acct_wl_atoms(en, dir, l, w);
  if (en->kind == ACCT_LAPLACE) { /* the atomic part only (sub-probability) */
    double a = en->par[0];
    l[0] = a, w[0] = 0.5;
    l[1] = -a, w[1] = 0.5 * exp(-a);
    return 2;
  }
  size_t n = 0;
  for (size_t i = 0; i < en->k; i++) {
    double p = dir ? en->q[i] : en->p[i], q = dir ? en->p[i] : en->q[i];
    if (p == 0) continue;
    l[n] = log(p / q), w[n] = p;
    n++;
  }
  return n;
}

/* log sum_k w_k e^{s l_k} over one release's atoms. */
double complex dpgd_acct_cf_atoms_log_mgf(const acct_entry *en, int dir, double complex s)
{
  lse acc = {-INFINITY, 0};
  if (en->kind == ACCT_DISCRETE) {
    for (size_t i = 0; i < en->k; i++) {
      double p = dir ? en->q[i] : en->p[i], q = dir ? en->p[i] : en->q[i];
      if (p > 0) lse_add(&acc, log(p) + s * log(p / q));
    }
  } else {
    double l[2], w[2];
    size_t n = dpgd_acct_cf_entry_atoms(en, dir, l, w);
    for (size_t i = 0; i < n; i++) lse_add(&acc, log(w[i]) + s * l[i]);
  }
  return lse_value(&acc);
}

double complex dpgd_acct_cf_entry_log_mgf(const acct_entry *en, int dir, double complex s)
{
  switch (en->kind) {
  case ACCT_GAUSSIAN: return en->par[0] * en->par[0] * s * (s + 1) / 2;
  case ACCT_LAPLACE: return laplace_log_mgf(en->par[0], s);
  case ACCT_SUBSAMPLED: return sg_log_mgf(en->par[0], en->par[1], dir, s);
  case ACCT_WOR_AR_LAPLACE: return dpgd_acct_wl_log_mgf(en, dir, s);
  default: return dpgd_acct_cf_atoms_log_mgf(en, dir, s);
  }
}

double complex dpgd_acct_log_mgf(const dpgd_accountant *a, int dir, double complex s)
{
  if (dpgd_acct_cf_gl_init()) return NAN;
  double complex r = 0;
  for (size_t i = 0; i < a->n; i++)
    r += (double)a->e[i].count * dpgd_acct_cf_entry_log_mgf(&a->e[i], dir, s);
  return r;
}

int dpgd_acct_asymmetric(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_DISCRETE || a->e[i].kind == ACCT_SUBSAMPLED ||
        a->e[i].kind == ACCT_WOR_AR_LAPLACE)
      return 1;
  return 0;
}
