/* cf.c -- characteristic-function accounting (MATH.md section 3; seed 000) for
 * compositions that are not pure-Gaussian: the moment function M(s) of every mechanism,
 * inversion formula B (shifted contour) with a truncation bound, formula A (Gil-Pelaez)
 * as the fallback, exact enumeration of atoms, and eps(delta) by root bracketing.
 *
 * Atoms. Laplace, RR and discrete pairs have atoms in their privacy-loss distribution,
 * whose characteristic functions do not decay, so formula B would converge like 1/T.
 * When no Gaussian-type entry is composed in, M = D + R where D is the product of the
 * atomic parts (enumerated exactly; its delta is sum_k w_k (1 - e^{eps - l_k})_+, the
 * same linear functional formula B evaluates) and R = M - D, which is integrated by
 * formula B and decays at least like 1/t (Laplace's continuous part). Pure RR/discrete
 * compositions are then enumerated exactly (R = 0). The terms of R with exactly one
 * Laplace continuous factor (J1: atoms of the composition less one release, each spread
 * by that release's density e^{(l - a)/2}/4 on (-a, a)) have a closed-form delta
 * (peel_delta), so formula B integrates only R - J1, which decays like 1/t^2; a single
 * Laplace release among atoms is then exact.
 *
 * Error bound of formula B, added to delta: GSL's QAG error estimate of the integral over
 * [0, T] plus the truncation bound e^{-c eps}/(pi T) sup_{t>=T} |R(c + i t)|, where
 * |R| <= prod_j (D_j(c) + C_j(t))^{n_j} - prod_j D_j(c)^{n_j} with, per release:
 * Gaussian D = 0, C = exp(mu^2 (c^2 + c - t^2)/2) (exact modulus); Laplace
 * D = e^{ca}/2 + e^{-(1+c)a}/2, C = (e^{ca} + e^{-(1+c)a}) / (2 |1 + 2c + 2it|); RR and
 * discrete D = M(c), C = 0; subsampled Gaussian D = 0, C = min(M(c), V/t) where V is the
 * total variation of h/u' (integration by parts of M = int h(o) e^{i t u(o)} do, u the
 * privacy loss; V is evaluated on a fine grid and inflated by ACCT_SG_TV_SAFETY). For
 * R - J1: |R - J1| <= prod_j (D_j + C_j)^{n_j} - prod_j D_j^{n_j} - the terms linear in
 * the C_j (every term of the expansion bounded by its moduli), O(1/t^2). The tolerances
 * of the quadrature and truncation are relative to the whole delta, atoms included. */
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

#include "acct_internal.h"

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
static double sg_u(double q, double sigma, double o)
{
  return sg_u_c(log1p(-q), log(q), sigma, o);
}

/* Complex log as 0.5 log(x^2 + y^2) + i atan2(y, x). glibc's clog computes x^2 + y^2 - 1
 * exactly near |z| = 1 (a qsort per call: a fifth of a query's time), precision the
 * arguments here do not have: each carries an absolute rounding error ~ DBL_EPSILON |z|
 * already, which bounds this form's error too. clog where x^2 + y^2 could overflow. */
static double complex log_c(double complex z)
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
  return a->m + log_c(a->s);
}

/* The nodes and weights of the Gauss-Legendre rule on [-1, 1], computed once. */
static _Thread_local double gl_x[ACCT_SG_GL_NODES], gl_w[ACCT_SG_GL_NODES];
static _Thread_local double gl_lw[ACCT_SG_GL_NODES]; /* log(gl_w / 2) */
static _Thread_local int gl_ready;

static int gl_init(void)
{
  if (gl_ready) return DPGD_OK;
  gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc(ACCT_SG_GL_NODES);
  if (!t) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (Gauss-Legendre table)");
  for (size_t i = 0; i < ACCT_SG_GL_NODES; i++)
    gsl_integration_glfixed_point(-1, 1, i, &gl_x[i], &gl_w[i], t);
  for (size_t i = 0; i < ACCT_SG_GL_NODES; i++) gl_lw[i] = log(0.5 * gl_w[i]);
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
      double o = mid + 0.5 * sigma * gl_x[i], u = sg_u_c(l1, lq, sigma, o);
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
      double o = mid + 0.5 * h * gl_x[i], u = sg_u_c(l1, lq, sigma, o);
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
  return m == -INFINITY || sum == 0 ? -INFINITY : m + log_c(sum);
}

/* log M(s) of one subsampled-Gaussian release: remove pair w = 1 + s, add pair w = -s. */
static double complex sg_log_mgf(double q, double sigma, int dir, double complex s)
{
  return sg_log_int(q, sigma, dir ? -s : 1 + s);
}

/* log M(c) of one release at real c, remembering the last arguments and value (the
 * truncation bound asks for the same c at every tail check of a contour integral). */
static double sg_log_mgf_real(double q, double sigma, int dir, double c)
{
  static _Thread_local double lq = NAN, ls, lc, lv;
  static _Thread_local int ld;
  if (q == lq && sigma == ls && dir == ld && c == lc) return lv;
  lv = creal(sg_log_mgf(q, sigma, dir, c));
  lq = q, ls = sigma, ld = dir, lc = c;
  return lv;
}

/* V: total variation of h/u' with h = phi_sigma e^{Re(w) u}, so that
 * |M(c + i t)| <= V/t (integration by parts). Evaluated on a grid of
 * ACCT_SG_TV_POINTS points over the window, inflated by ACCT_SG_TV_SAFETY. */
static double sg_tv_eval(double q, double sigma, double rw);

/* sg_tv remembers its last arguments and value: a contour integral and an eps search
 * ask for the same (q, sigma, c) at every tail check. */
static double sg_tv(double q, double sigma, double rw)
{
  static _Thread_local double lq = NAN, ls, lr, lv;
  if (q == lq && sigma == ls && rw == lr) return lv;
  lv = sg_tv_eval(q, sigma, rw);
  lq = q, ls = sigma, lr = rw;
  return lv;
}

static double sg_tv_eval(double q, double sigma, double rw)
{
  double lo, hi;
  sg_window(sigma, rw, &lo, &hi);
  double prev = 0, tv = 0, lmax = -INFINITY;
  double *l = malloc(ACCT_SG_TV_POINTS * sizeof *l);
  if (!l) return INFINITY;
  double l1 = log1p(-q), lq = log(q), ls = log(sigma);
  for (int i = 0; i < ACCT_SG_TV_POINTS; i++) {
    double o = lo + (hi - lo) * i / (ACCT_SG_TV_POINTS - 1);
    double x = (2 * o - 1) / (2 * sigma * sigma);
    double u = sg_u_c(l1, lq, sigma, o);
    /* log u' = log q + x - u - 2 log sigma */
    l[i] = -o * o / (2 * sigma * sigma) - 0.5 * log(2 * M_PI) - ls + rw * u -
           (lq + x - u - 2 * ls);
    if (l[i] > lmax) lmax = l[i];
  }
  for (int i = 0; i < ACCT_SG_TV_POINTS; i++) {
    double v = exp(l[i] - lmax);
    tv += fabs(v - prev);
    prev = v;
  }
  tv += prev; /* back to 0 beyond the window */
  free(l);
  return ACCT_SG_TV_SAFETY * tv * exp(lmax);
}

/* ---- moment functions of the other mechanisms ---- */

/* Laplace: M(s) = e^{sa} [1/2 + e^{-a(1+2s)}/2 + (1 - e^{-a(1+2s)}) / (2 (1 + 2s))]. */
static double complex laplace_log_mgf(double a, double complex s)
{
  double complex z = 1 + 2 * s;
  double complex e = cexp(-a * z);
  double complex frac = fabs(creal(z)) < 1e-8 && fabs(cimag(z)) < 1e-8 ? a * (1 - a * z / 2)
                                                                       : (1 - e) / z;
  return s * a + log_c(0.5 + 0.5 * e + 0.5 * frac);
}

/* Atoms (loss l_k, probability w_k) of one release of an RR/discrete entry in
 * direction dir; returns their number (<= en->k or 2). */
static size_t entry_atoms(const acct_entry *en, int dir, double *l, double *w)
{
  if (en->kind == ACCT_RR) {
    double e0 = en->par[0], p = 1 / (1 + exp(-e0));
    l[0] = e0, w[0] = p;
    l[1] = -e0, w[1] = 1 - p;
    return 2;
  }
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
static double complex atoms_log_mgf(const acct_entry *en, int dir, double complex s)
{
  lse acc = {-INFINITY, 0};
  if (en->kind == ACCT_DISCRETE) {
    for (size_t i = 0; i < en->k; i++) {
      double p = dir ? en->q[i] : en->p[i], q = dir ? en->p[i] : en->q[i];
      if (p > 0) lse_add(&acc, log(p) + s * log(p / q));
    }
  } else {
    double l[2], w[2];
    size_t n = entry_atoms(en, dir, l, w);
    for (size_t i = 0; i < n; i++) lse_add(&acc, log(w[i]) + s * l[i]);
  }
  return lse_value(&acc);
}

static double complex entry_log_mgf(const acct_entry *en, int dir, double complex s)
{
  switch (en->kind) {
  case ACCT_GAUSSIAN: return en->par[0] * en->par[0] * s * (s + 1) / 2;
  case ACCT_LAPLACE: return laplace_log_mgf(en->par[0], s);
  case ACCT_SUBSAMPLED: return sg_log_mgf(en->par[0], en->par[1], dir, s);
  default: return atoms_log_mgf(en, dir, s);
  }
}

double complex dpgd_acct_log_mgf(const dpgd_accountant *a, int dir, double complex s)
{
  if (gl_init()) return NAN;
  double complex r = 0;
  for (size_t i = 0; i < a->n; i++) r += (double)a->e[i].count * entry_log_mgf(&a->e[i], dir, s);
  return r;
}

int dpgd_acct_asymmetric(const dpgd_accountant *a)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_DISCRETE || a->e[i].kind == ACCT_SUBSAMPLED) return 1;
  return 0;
}

/* ---- exact enumeration of the atomic part ---- */

typedef struct {
  double l, lw; /* loss, log weight */
} atom;

static int atom_cmp(const void *x, const void *y)
{
  double a = ((const atom *)x)->l, b = ((const atom *)y)->l;
  return (a > b) - (a < b);
}

/* Atoms of the n-fold composition of one entry (multinomial over its outcomes),
 * appended to out; *m counts them. k <= 2 uses the binomial directly. */
static void nfold_rec(const double *l, const double *lw, size_t k, uint64_t n, size_t i,
                      double loss, double logw, atom *out, size_t *m)
{
  if (i == k - 1) {
    out[*m].l = loss + (double)n * l[i];
    out[*m].lw = logw + (double)n * lw[i] - gsl_sf_lnfact((unsigned)n);
    (*m)++;
    return;
  }
  for (uint64_t j = 0; j <= n; j++)
    nfold_rec(l, lw, k, n - j, i + 1, loss + (double)j * l[i],
              logw + (double)j * lw[i] - gsl_sf_lnfact((unsigned)j), out, m);
}

/* Number of atoms of the n-fold composition of k outcomes: C(n + k - 1, k - 1), or
 * +inf beyond the cap. */
static double nfold_size(size_t k, uint64_t n)
{
  double s = 1;
  for (size_t i = 1; i < k; i++) {
    s = s * (double)(n + i) / (double)i;
    if (s > ACCT_ENUM_MAX_ATOMS) return INFINITY;
  }
  return s;
}

/* The atomic part of the composition in direction dir: sorted atoms, or *n_out = 0 and
 * NULL when some entry has no atoms (Gaussian-type) or the enumeration exceeds the cap
 * (*too_big = 1). */
typedef struct atoms {
  atom *at; /* (n) sorted by loss */
  size_t n;
  int too_big;
  /* With Laplace entries (filled by enumerate_peel): per Laplace entry j, in entry order,
   * its parameter lap_a[j], count lap_n[j] and the atoms one[j] of the composition with
   * one release of it left out. */
  size_t nlap;
  double *lap_a, *lap_n;
  struct atoms *one;
} atoms;

static void atoms_free(atoms *at)
{
  for (size_t j = 0; at->one && j < at->nlap; j++) free(at->one[j].at);
  free(at->at), free(at->one), free(at->lap_a), free(at->lap_n);
  memset(at, 0, sizeof *at);
}

static int enumerate(const dpgd_accountant *a, int dir, atoms *res)
{
  memset(res, 0, sizeof *res);
  double total = 1;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    if (en->kind == ACCT_GAUSSIAN || en->kind == ACCT_SUBSAMPLED) return DPGD_OK;
    size_t k = en->kind == ACCT_DISCRETE ? en->k : 2;
    if (en->count > UINT32_MAX) total = INFINITY;
    else total *= nfold_size(k, en->count);
  }
  if (!(total <= ACCT_ENUM_MAX_ATOMS)) {
    res->too_big = 1;
    return DPGD_OK;
  }
  size_t cap = (size_t)total;
  atom *cur = malloc(cap * sizeof *cur), *nxt = malloc(cap * sizeof *nxt);
  atom *one = NULL;
  double *l = NULL, *lw = NULL;
  size_t kmax = 2;
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].kind == ACCT_DISCRETE && a->e[i].k > kmax) kmax = a->e[i].k;
  l = malloc(kmax * sizeof *l);
  lw = malloc(kmax * sizeof *lw);
  one = malloc(cap * sizeof *one);
  if (!cur || !nxt || !l || !lw || !one) {
    free(cur), free(nxt), free(l), free(lw), free(one);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (enumerating %zu atoms)", cap);
  }
  size_t m = 1;
  cur[0].l = 0, cur[0].lw = 0;
  for (size_t i = 0; i < a->n; i++) {
    const acct_entry *en = &a->e[i];
    size_t k = entry_atoms(en, dir, l, lw);
    for (size_t j = 0; j < k; j++) lw[j] = log(lw[j]);
    size_t m1 = 0;
    nfold_rec(l, lw, k, en->count, 0, 0, gsl_sf_lnfact((unsigned)en->count), one, &m1);
    size_t mm = 0;
    for (size_t x = 0; x < m; x++)
      for (size_t y = 0; y < m1; y++) {
        nxt[mm].l = cur[x].l + one[y].l;
        nxt[mm].lw = cur[x].lw + one[y].lw;
        mm++;
      }
    atom *t = cur;
    cur = nxt, nxt = t;
    m = mm;
  }
  free(nxt), free(l), free(lw), free(one);
  qsort(cur, m, sizeof *cur, atom_cmp);
  res->at = cur;
  res->n = m;
  return DPGD_OK;
}

/* The atomic part as enumerate() gives it and, when it exists and some entry is Laplace,
 * the atoms of the composition less one release of each Laplace entry (see
 * peel_delta). */
static int enumerate_peel(const dpgd_accountant *a, int dir, atoms *res)
{
  int st = enumerate(a, dir, res);
  if (st || res->n == 0) return st;
  size_t nl = 0;
  for (size_t i = 0; i < a->n; i++) nl += a->e[i].kind == ACCT_LAPLACE;
  if (nl == 0) return DPGD_OK;
  dpgd_accountant tmp = *a;
  tmp.e = malloc(a->n * sizeof *tmp.e);
  res->one = calloc(nl, sizeof *res->one);
  res->lap_a = malloc(nl * sizeof *res->lap_a);
  res->lap_n = malloc(nl * sizeof *res->lap_n);
  if (!tmp.e || !res->one || !res->lap_a || !res->lap_n) {
    free(tmp.e);
    atoms_free(res);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory (Laplace atoms)");
  }
  res->nlap = nl;
  memcpy(tmp.e, a->e, a->n * sizeof *tmp.e); /* shallow: discrete p, q stay a's */
  for (size_t i = 0, j = 0; i < a->n && !st; i++) {
    if (a->e[i].kind != ACCT_LAPLACE) continue;
    res->lap_a[j] = a->e[i].par[0], res->lap_n[j] = (double)a->e[i].count;
    tmp.e[i].count--;
    st = enumerate(&tmp, dir, &res->one[j++]); /* never larger than the whole */
    tmp.e[i].count++;
  }
  free(tmp.e);
  if (st) atoms_free(res);
  return st;
}

/* sum_k w_k (1 - e^{eps - l_k})_+ over atoms with l_k > eps, with a bound on the
 * rounding error of the sum. */
static double atoms_delta(const atoms *at, double eps, double *err)
{
  size_t lo = 0, hi = at->n;
  while (lo < hi) { /* first atom with l > eps */
    size_t mid = (lo + hi) / 2;
    if (at->at[mid].l > eps) hi = mid;
    else lo = mid + 1;
  }
  double s = 0;
  for (size_t i = lo; i < at->n; i++) s += exp(at->at[i].lw) * -expm1(eps - at->at[i].l);
  *err = s * (at->n - lo + 8) * 4 * DBL_EPSILON;
  return s;
}

/* One Laplace release's continuous part, density e^{(l - a)/2}/4 on (-a, a), shifted by
 * an atom at m: int (1 - e^{eps - l}) e^{(l - m - a)/2}/4 over l in (max(eps, m - a), m + a)
 * = (1 - e^{-a})(1 - e^{eps - m})/2 for eps <= m - a, (1 - e^{(eps - m - a)/2})^2/2 up to
 * m + a, 0 beyond (both positive, no cancellation). */
static double lap_kernel(double a, double eps, double m)
{
  if (eps >= m + a) return 0;
  if (eps <= m - a) return 0.5 * -expm1(-a) * -expm1(eps - m);
  double d = -expm1((eps - m - a) / 2);
  return 0.5 * d * d;
}

/* delta of the terms of M = prod_j (D_j + C_j)^{n_j} with exactly one continuous factor
 * C_j (Laplace j's continuous part; D the atomic parts):
 * sum_j n_j sum_{atoms k of the composition less one release of j} w_k
 * lap_kernel(a_j, eps, l_k), with a bound on its rounding error. */
static double peel_delta(const atoms *at, double eps, double *err)
{
  double s = 0, nt = 8;
  for (size_t j = 0; j < at->nlap; j++) {
    const atoms *o = &at->one[j];
    double a = at->lap_a[j], sj = 0;
    size_t lo = 0, hi = o->n;
    while (lo < hi) { /* first atom with l + a > eps */
      size_t mid = (lo + hi) / 2;
      if (o->at[mid].l + a > eps) hi = mid;
      else lo = mid + 1;
    }
    for (size_t i = lo; i < o->n; i++) sj += exp(o->at[i].lw) * lap_kernel(a, eps, o->at[i].l);
    s += at->lap_n[j] * sj;
    nt += (double)(o->n - lo);
  }
  *err = s * nt * 8 * DBL_EPSILON;
  return s;
}

/* ---- formula B ---- */

typedef struct {
  const dpgd_accountant *a;
  int dir;
  double eps, c;
  int subtract; /* integrate R = M - D (atoms enumerated separately) */
  /* NULL, or with subtract and Laplace entries: integrate M - D - J1 instead, J1 the
   * terms with one Laplace continuous factor (their delta is peel_delta) */
  const struct atoms *peel;
  struct lm_memo *memo; /* NULL, or log M(c + i t) remembered across an eps search */
} cf_ctx;

/* Memo of log M(c + i t) of the whole composition in one direction at a fixed c. An
 * eps(delta) search keeps c fixed (any c > 0 is exact; c only steers accuracy), so
 * formula B's QAG visits the same nodes t for every eps and M, the expensive part for
 * subsampled Gaussians, is computed once per node. Open addressing on the bits of t. */
typedef struct lm_memo {
  double c; /* 0 until the first evaluation fixes it */
  double t0; /* t_scale at c, 0 until computed */
  size_t cap, n;
  double *t;         /* (cap), NAN where empty */
  double complex *v; /* (cap) */
} lm_memo;

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

static double complex memo_log_mgf(lm_memo *m, const dpgd_accountant *a, int dir, double c,
                                   double t)
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
static void bound_logs(const cf_ctx *x, double t, double *A, double *Bd, double *H)
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
    case ACCT_SUBSAMPLED: {
      double q = en->par[0], sg = en->par[1];
      double rw = x->dir ? -c : 1 + c;
      double mc = sg_log_mgf_real(q, sg, x->dir, c);
      double lv = t > 0 ? log(sg_tv(q, sg, rw)) - log(t) : INFINITY;
      *A += n * fmin(mc, lv);
      *Bd = -INFINITY;
      continue;
    }
    default:
      d = exp(creal(atoms_log_mgf(en, x->dir, c)));
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
  double complex lm = x->memo ? memo_log_mgf(x->memo, x->a, x->dir, x->c, t)
                              : dpgd_acct_log_mgf(x->a, x->dir, s);
  /* e^{lm - s eps} / (s (s + 1)) by a complex division (no log, no atan2) unless the
   * exponential could overflow, then through the log */
  double complex k = -s * x->eps, dz = s * (s + 1);
  int lg = creal(lm + k) > 700;
  if (lg) k -= log_c(dz);
  double complex v = cexp(lm + k);
  if (x->subtract) {
    double complex ld = 0;
    for (size_t i = 0; i < x->a->n; i++) {
      const acct_entry *en = &x->a->e[i];
      double complex lj = en->kind == ACCT_LAPLACE ? atoms_log_mgf(en, x->dir, s)
                                                   : entry_log_mgf(en, x->dir, s);
      ld += (double)en->count * lj;
    }
    double complex j1 = 0; /* J1 / D = sum_j n_j C_j / D_j = sum_j n_j frac / (1 + e) */
    for (size_t i = 0; x->peel && i < x->a->n; i++) {
      const acct_entry *en = &x->a->e[i];
      if (en->kind != ACCT_LAPLACE) continue;
      double complex z = 1 + 2 * s, e = cexp(-en->par[0] * z); /* |z| >= 1 + 2c */
      j1 += (double)en->count * ((1 - e) / z) / (1 + e);
    }
    if (!lg && creal(ld + k) > 700) { /* D's scale may exceed M's */
      lg = 1;
      v /= dz;
      k -= log_c(dz);
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

/* c minimising the saddle objective: a grid over log c, refined by GSL's Brent
 * minimiser. */
static double find_c(cf_ctx *x)
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

/* Integrates f over [0, inf) piecewise ([0, T0], [T0, 2 T0], ...) with GSL's QAG until
 * the tail bound tail(T) <= ACCT_TAIL_RELTOL |I| (or ACCT_QUAD_ABSTOL); *err gets QAG's error
 * estimates plus the final tail bound. With `estimate` set (subsampled Gaussians
 * without a Gaussian entry, where no useful closed bound on |M(c + it)| is known), the
 * loop may also stop when the last piece and T |f(T)| are both below the tolerance; the
 * tail is then estimated as ACCT_TAIL_SAFETY times their sum (an estimate, not a proof).
 * `base` >= 0 is a part of the answer known apart from this integral (the enumerated
 * atoms' delta beside the integral of R = M - D >= 0): the tolerances are relative to
 * base + |integral|, so a continuous part far smaller than the atoms' delta is not
 * resolved to a relative accuracy nobody asked for (every error is still added). */
typedef double tail_fn(const void *ctx, double T);

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
    if (e <= fmax(ACCT_QUAD_RELTOL * fabs(s), abstol) || e <= 50 * DBL_EPSILON * ra)
      break;
  }
  if (!isfinite(s) || !isfinite(e)) return GSL_EMAXITER;
  *res = s, *err = e;
  return GSL_SUCCESS;
}

static int integrate_tail(gsl_function *F, const void *ctx, tail_fn *tail, int estimate,
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
                     "integral beyond t = %g (few subsampled releases at a small rate?)", lo);
      break;
    }
    sum += r, E += e;
    double tol = fmax(ACCT_TAIL_RELTOL * (base + fabs(sum)), ACCT_QUAD_ABSTOL);
    tb = tail(ctx, hi);
    if (tb <= tol) break;
    if (estimate && k > 0) {
      double est = ACCT_TAIL_SAFETY * (fabs(r) + e + hi * fabs(F->function(hi, F->params)));
      if (est <= tol) {
        tb = est;
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
    bound_logs(x, T, &A, &Bd, &H);
    return exp(Bd - x->c * x->eps) * H / (M_PI * T);
  }
  bound_logs(x, T, &A, &Bd, NULL);
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
      size_t n = entry_atoms(en, dir, l, w);
      for (size_t j = 0; j < n; j++) mx = fmax(mx, l[j]);
    }
    m += (double)en->count * mx;
  }
  return m;
}

static void clamp_delta(dpgd_acct_value *out, double v, double err)
{
  out->err = err;
  v = fmax(v, 0) + err;
  out->value = v > 1 ? 1 : v;
}

static int formula_b(const dpgd_accountant *a, int dir, double eps, const atoms *at,
                     lm_memo *memo, dpgd_acct_value *out)
{
  cf_ctx x = {.a = a, .dir = dir, .eps = eps, .subtract = at && at->n > 0, .memo = memo};
  double dv = 0, derr = 0;
  if (eps >= max_loss(a, dir)) { /* no outcome has loss above eps */
    out->value = out->err = 0;
    return DPGD_OK;
  }
  if (x.subtract) {
    dv = atoms_delta(at, eps, &derr);
    double nl = 0, e1;
    for (size_t j = 0; j < at->nlap; j++) nl += at->lap_n[j];
    if (nl > 0) { /* the terms with one Laplace continuous factor in closed form */
      dv += peel_delta(at, eps, &e1);
      derr += e1;
      x.peel = at;
    }
    /* pure RR/discrete (R = 0) or one Laplace release (M - D - J1 = 0): exact */
    if (nl <= 1) {
      clamp_delta(out, dv, derr);
      return DPGD_OK;
    }
  }
  if (memo && memo->c > 0) x.c = memo->c;
  else x.c = find_c(&x);
  if (memo && memo->c != x.c) memo->t0 = 0;
  if (memo) memo->c = x.c;
  gsl_function F = {b_integrand, &x};
  double v = 0, e = 0;
  double t0 = memo && memo->t0 > 0 ? memo->t0 : t_scale(&x);
  if (memo) memo->t0 = t0;
  int st = integrate_tail(&F, &x, b_tail, has_sg_only(a), memo != NULL, t0, dv, &v, &e);
  if (st) return st;
  clamp_delta(out, v + dv, e + derr);
  return DPGD_OK;
}

int dpgd_acct_delta_formula_b(const dpgd_accountant *a, int dir, double eps,
                         dpgd_acct_value *out)
{
  if (gl_init()) return DPGD_ENOMEM;
  atoms at;
  int st = enumerate_peel(a, dir, &at);
  if (st) return st;
  dpgd_acct_gsl_quiet();
  st = formula_b(a, dir, eps, &at, NULL, out);
  atoms_free(&at);
  return st;
}

/* ---- formula A (Gil-Pelaez), for compositions with a Gaussian entry ---- */

typedef struct {
  cf_ctx b;     /* c unused */
  double mu_g;  /* sqrt(sum n mu^2) of the Gaussian entries */
} a_ctx;

static double a_integrand(double t, void *vp)
{
  const a_ctx *x = vp;
  double complex lp = dpgd_acct_log_mgf(x->b.a, x->b.dir, I * t);
  double complex lq = dpgd_acct_log_mgf(x->b.a, x->b.dir, -1 + I * t);
  double complex ph = cexp(-I * t * x->b.eps);
  double complex v = ph * (cexp(lp) - cexp(lq + x->b.eps));
  return cimag(v) / (M_PI * t);
}

/* |integrand| <= (1 + e^eps) P(t) e^{-mu_g^2 t^2/2} / (pi t), P the non-Gaussian bound
 * (the same at c = 0 and c = -1); integrated beyond T. */
static double a_tail(const void *vp, double T)
{
  const a_ctx *x = vp;
  double mx = 0;
  for (int c = -1; c <= 0; c++) {
    cf_ctx y = x->b;
    y.c = c;
    y.subtract = 0;
    double A, Bd;
    bound_logs(&y, T, &A, &Bd, NULL);
    /* remove the Gaussian factor exp(mu_g^2 (c^2 + c - T^2)/2) = exp(-mu_g^2 T^2 / 2) */
    A += x->mu_g * x->mu_g * T * T / 2;
    mx = fmax(mx, exp(A));
  }
  double mg = x->mu_g;
  double g = sqrt(M_PI / 2) / mg * gsl_sf_erfc(mg * T / M_SQRT2);
  return (1 + exp(x->b.eps)) * mx * g / (M_PI * T);
}

int dpgd_acct_delta_formula_a(const dpgd_accountant *a, int dir, double eps,
                         dpgd_acct_value *out)
{
  if (gl_init()) return DPGD_ENOMEM;
  double mu2 = dpgd_acct_gauss_mu2(a);
  if (!(mu2 > 0))
    return DPGD_FAIL(DPGD_ERANGE, "formula A needs a Gaussian entry for a bounded tail");
  a_ctx x = {.b = {.a = a, .dir = dir, .eps = eps}, .mu_g = sqrt(mu2)};
  gsl_function F = {a_integrand, &x};
  dpgd_acct_gsl_quiet();
  double v = 0, e = 0;
  int st = integrate_tail(&F, &x, a_tail, 0, 0, 4 / x.mu_g, 0, &v, &e);
  if (st) return st;
  /* the O(1) terms cancel: the rounding error is relative to them, not to delta */
  e += 8 * DBL_EPSILON * (1 + exp(eps));
  clamp_delta(out, (1 - exp(eps)) / 2 + v, e);
  return DPGD_OK;
}

int dpgd_acct_delta_enum(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  dpgd_acct_value best = {0, 0};
  for (int dir = 0; dir <= dpgd_acct_asymmetric(a); dir++) {
    for (size_t i = 0; i < a->n; i++)
      if (a->e[i].kind != ACCT_RR && a->e[i].kind != ACCT_DISCRETE)
        return DPGD_FAIL(DPGD_EINVAL, "enumeration applies to RR/discrete compositions only");
    atoms at;
    int st = enumerate(a, dir, &at);
    if (st) return st;
    if (at.too_big) return DPGD_FAIL(DPGD_ERANGE, "enumeration needs more than %d atoms", ACCT_ENUM_MAX_ATOMS);
    double err, v = atoms_delta(&at, eps, &err);
    atoms_free(&at);
    dpgd_acct_value o;
    clamp_delta(&o, v, err);
    if (o.value > best.value) best = o;
  }
  *out = best;
  return DPGD_OK;
}

/* ---- the exact method ---- */

/* One subsampled-Gaussian release: L is monotone in the output, so
 * delta = P(L > eps) - e^eps Q(L > eps) is a difference of normal tails. Valid for any
 * real eps (negative ones are needed by the few-release recursion below). */
static double qtail(double z) { return 0.5 * gsl_sf_erfc(z / M_SQRT2); }

static double sg1_delta(double q, double sigma, int dir, double eps)
{
  if (dir == 0) {
    /* remove: L = u(o) > eps  <=>  x > log((e^eps - 1 + q)/q); all o if e^eps <= 1 - q,
     * and then delta = 1 - e^eps E_P[e^{-L}] = 1 - e^eps */
    double r = expm1(eps) + q;
    if (r <= 0) return -expm1(eps);
    double x = log(r / q), o = (2 * sigma * sigma * x + 1) / 2;
    return (1 - q) * qtail(o / sigma) + q * qtail((o - 1) / sigma) - exp(eps) * qtail(o / sigma);
  }
  /* add: L = -u(o) > eps  <=>  (1 - q) + q e^x < e^{-eps} */
  double r = expm1(-eps) + q; /* e^{-eps} - (1 - q) */
  if (r <= 0) return 0;
  double x = log(r / q), o = (2 * sigma * sigma * x + 1) / 2;
  return qtail(-o / sigma) - exp(eps) * ((1 - q) * qtail(-o / sigma) + q * qtail(-(o - 1) / sigma));
}

int dpgd_acct_delta_single_sg(double q, double sigma, int dir, double eps, dpgd_acct_value *out)
{
  double v = sg1_delta(q, sigma, dir, eps);
  clamp_delta(out, v, 16 * DBL_EPSILON * (1 + exp(eps)) * fmax(q, 1e-300) + 1e-300);
  return DPGD_OK;
}

/* k releases of one subsampled Gaussian (k <= ACCT_SG_FEW_MAX): conditioning on the first
 * output, delta_k(eps) = E_{o ~ P}[delta_{k-1}(eps - L(o))], a (k-1)-fold nested
 * composite Gauss-Legendre integral of the closed form over the window
 * [-12 sigma, 1 + 12 sigma] (both mixture components) with `panels` panels. */
static double sg_few(double q, double sigma, int dir, uint64_t k, double eps, int panels)
{
  if (k == 1) return sg1_delta(q, sigma, dir, eps);
  double lo = -ACCT_SG_TAIL_SIGMAS * sigma, hi = 1 + ACCT_SG_TAIL_SIGMAS * sigma;
  double h = (hi - lo) / panels, s = 0, ln = -0.5 * log(2 * M_PI) - log(sigma);
  for (int p = 0; p < panels; p++)
    for (int i = 0; i < ACCT_SG_GL_NODES; i++) {
      double o = lo + (p + 0.5) * h + 0.5 * h * gl_x[i];
      double u = sg_u(q, sigma, o);
      double l0 = ln - o * o / (2 * sigma * sigma);
      /* P's density: the mixture (remove) or N(0, sigma^2) (add) */
      double dens = dir ? exp(l0) : exp(l0 + u);
      s += 0.5 * h * gl_w[i] * dens * sg_few(q, sigma, dir, k - 1, eps - (dir ? -u : u), panels);
    }
  return s;
}

/* The few-release value with an error estimate: the difference between
 * ACCT_SG_FEW_PANELS and twice as many panels (the integrand has kinks where the inner
 * threshold reaches its boundary, so this is an estimate, not a bound), times
 * ACCT_TAIL_SAFETY. */
static int sg_few_delta(double q, double sigma, int dir, uint64_t k, double eps,
                        dpgd_acct_value *out)
{
  if (gl_init()) return DPGD_ENOMEM;
  double v1 = sg_few(q, sigma, dir, k, eps, ACCT_SG_FEW_PANELS);
  double v2 = sg_few(q, sigma, dir, k, eps, 2 * ACCT_SG_FEW_PANELS);
  if (!isfinite(v2)) return DPGD_FAIL(DPGD_ERANGE, "few-release subsampled integral is not finite");
  clamp_delta(out, v2, ACCT_TAIL_SAFETY * fabs(v2 - v1) + 64 * DBL_EPSILON * (1 + exp(eps)));
  return DPGD_OK;
}

/* 1 if the composition is one subsampled-Gaussian entry of at most ACCT_SG_FEW_MAX
 * releases. */
static int few_sg(const dpgd_accountant *a)
{
  return a->n == 1 && a->e[0].kind == ACCT_SUBSAMPLED && a->e[0].count <= ACCT_SG_FEW_MAX;
}

/* What an eps(delta) search keeps between its delta evaluations, per direction: the
 * enumerated atoms and, with subsampled entries, the memo of log M at a fixed c. */
typedef struct {
  atoms at[2];
  lm_memo memo[2];
  int ready[2], use_memo;
} search;

static void search_free(search *S)
{
  for (int d = 0; d < 2; d++) {
    atoms_free(&S->at[d]);
    free(S->memo[d].t);
    free(S->memo[d].v);
  }
}

/* The exact method in one direction: closed form / direct integral for a few subsampled
 * releases, else formula B (A as fallback with a Gaussian entry). */
static int exact_dir(const dpgd_accountant *a, int dir, double eps, search *S,
                     dpgd_acct_value *o)
{
  const acct_entry *e0 = &a->e[0];
  if (few_sg(a) && e0->count == 1) return dpgd_acct_delta_single_sg(e0->par[0], e0->par[1], dir, eps, o);
  if (few_sg(a)) return sg_few_delta(e0->par[0], e0->par[1], dir, e0->count, eps, o);
  int st;
  if (!S) {
    st = dpgd_acct_delta_formula_b(a, dir, eps, o);
  } else {
    if (gl_init()) return DPGD_ENOMEM;
    if (!S->ready[dir]) {
      st = enumerate_peel(a, dir, &S->at[dir]);
      if (st) return st;
      lm_memo *m = &S->memo[dir];
      m->cap = ACCT_MEMO_SIZE;
      m->t = malloc(m->cap * sizeof *m->t);
      m->v = malloc(m->cap * sizeof *m->v);
      if (!m->t || !m->v) return DPGD_FAIL(DPGD_ENOMEM, "out of memory (contour memo)");
      for (size_t i = 0; i < m->cap; i++) m->t[i] = NAN;
      S->ready[dir] = 1;
    }
    dpgd_acct_gsl_quiet();
    st = formula_b(a, dir, eps, &S->at[dir], S->use_memo ? &S->memo[dir] : NULL, o);
    if (st && S->use_memo) { /* the fixed c may be poor far from the root: choose afresh */
      dpgd_error_clear();
      st = formula_b(a, dir, eps, &S->at[dir], NULL, o);
    }
  }
  if (st && dpgd_acct_gauss_mu2(a) > 0) {
    dpgd_error_clear();
    st = dpgd_acct_delta_formula_a(a, dir, eps, o);
  }
  return st;
}

static int exact_delta_s(const dpgd_accountant *a, double eps, search *S, dpgd_acct_value *out)
{
  dpgd_acct_value best = {0, 0};
  for (int dir = 0; dir <= dpgd_acct_asymmetric(a); dir++) {
    dpgd_acct_value o;
    int st = exact_dir(a, dir, eps, S, &o);
    if (st) return st;
    if (o.value > best.value || dir == 0) best = o;
  }
  *out = best;
  return DPGD_OK;
}

int dpgd_acct_exact_delta(const dpgd_accountant *a, double eps, dpgd_acct_value *out)
{
  return exact_delta_s(a, eps, NULL, out);
}

typedef struct {
  const dpgd_accountant *a;
  double target, floor; /* delta; ACCT_EPS_FLOOR delta */
  search *S;
  int status;
  /* the last ACCT_EPS_KNOWN evaluations: Brent starts from the bracket's ends and, once
   * converged, may ask for the same eps again */
  int nknown, next;
  double known_eps[ACCT_EPS_KNOWN], known_f[ACCT_EPS_KNOWN];
} eps_root;

static double eps_f(double eps, void *vp)
{
  eps_root *r = vp;
  for (int i = 0; i < r->nknown; i++)
    if (eps == r->known_eps[i]) return r->known_f[i];
  dpgd_acct_value v;
  int st = exact_delta_s(r->a, eps, r->S, &v);
  if (st) {
    r->status = st;
    return GSL_NAN;
  }
  /* log(v + floor) - log(target + floor): zero exactly where v = target and <= 0 exactly
   * where v <= target, like log v - log target, but bounded below where delta(eps) = 0
   * (eps beyond the largest loss), where a steep -inf-like value would pull Brent's
   * secant steps to eps near 0 (poor for the search's fixed c, and slow) */
  double f = log(v.value + r->floor) - log(r->target + r->floor);
  r->known_eps[r->next] = eps, r->known_f[r->next] = f;
  r->next = (r->next + 1) % ACCT_EPS_KNOWN;
  if (r->nknown < ACCT_EPS_KNOWN) r->nknown++;
  return f;
}

/* Fixes c per direction at the saddle point for eps_c and forgets what was computed at
 * the previous c (the memo of log M and the remembered evaluations but f(0), which was
 * computed with c chosen afresh). */
static void search_centre(eps_root *r, double eps_c, double f0)
{
  for (int dir = 0; dir <= dpgd_acct_asymmetric(r->a); dir++) {
    cf_ctx x = {.a = r->a, .dir = dir, .eps = eps_c};
    lm_memo *m = &r->S->memo[dir];
    m->c = find_c(&x);
    m->t0 = 0;
    m->n = 0;
    for (size_t i = 0; m->t && i < m->cap; i++) m->t[i] = NAN;
  }
  r->nknown = r->next = 0;
  if (!isnan(f0)) {
    r->known_eps[0] = 0, r->known_f[0] = f0;
    r->nknown = r->next = 1;
  }
}

/* Brent on [0, hi] where hi is the Balle et al. RDP eps (an upper bound of the exact
 * one; doubled if numerics disagree), with c fixed per direction at the saddle for
 * 0.9 hi and log M remembered across evaluations; again with c at the answer while the
 * answer is far from where c was chosen (ACCT_EPS_RECENTRE). */
static int exact_epsilon_s(eps_root *r, double delta, dpgd_acct_value *out)
{
  dpgd_acct_value rv;
  double hi = 1;
  if (dpgd_acct_rdp_epsilon(r->a, DPGD_ACCT_RDP_BALLE, delta, &rv) == DPGD_OK && rv.value > 0 &&
      rv.value < 1e4)
    hi = rv.value;
  dpgd_error_clear();
  if (gl_init()) return DPGD_ENOMEM;
  double centre = 0.9 * hi;
  search_centre(r, centre, NAN);
  double f0 = eps_f(0, r);
  if (r->status) return r->status;
  if (f0 <= 0) {
    out->value = out->err = 0;
    return DPGD_OK;
  }
  r->S->use_memo = 1;
  double e = hi;
  for (int pass = 0;; pass++) {
    double lo = 0, f = 0, e_prev = e;
    for (int i = 0;; i++) {
      f = eps_f(hi, r);
      if (r->status || f <= 0 || pass > 0) break;
      if (i > 60 || hi > 1e4)
        return DPGD_FAIL(DPGD_ERANGE, "exact eps(delta=%g) exceeds %g", delta, hi);
      lo = hi, hi *= 2;
    }
    /* Brent starts from the values at the bracket's ends found above (remembered by
     * eps_f; f(0) with c chosen afresh: any c gives an upper bound) */
    gsl_function F = {eps_f, r};
    int st = r->status ? r->status : f > 0 ? DPGD_ERANGE : dpgd_acct_brent(&F, lo, hi, 1, &e);
    if (st && pass > 0) { /* a later pass's c did worse: the previous answer stands */
      r->status = 0;
      dpgd_error_clear();
      e = e_prev;
      break;
    }
    if (st) return st;
    if (pass + 1 >= ACCT_EPS_PASSES || fabs(e - centre) <= ACCT_EPS_RECENTRE * centre) break;
    /* e is an upper bound already: the next pass searches [0, e] with c at e */
    centre = hi = e;
    search_centre(r, centre, f0);
  }
  /* e is the bracket's private end (delta bound <= delta there); the value also carries
   * the root tolerance, as every dpgd_acct_value does. */
  out->err = e * ACCT_ROOT_RELTOL;
  out->value = dpgd_acct_round_up(e + out->err);
  return DPGD_OK;
}

int dpgd_acct_exact_epsilon(const dpgd_accountant *a, double delta, dpgd_acct_value *out)
{
  search S;
  memset(&S, 0, sizeof S);
  eps_root r = {.a = a, .target = delta, .floor = ACCT_EPS_FLOOR * delta, .S = &S};
  int st = exact_epsilon_s(&r, delta, out);
  search_free(&S);
  return st;
}
