/* cf_wor_laplace.c -- the Laplace mechanism subsampled without replacement, under
 * add/remove neighbours, in the characteristic-function accountant (SAMPLING.md): its
 * dominating pairs (Zhu, Dong & Wang 2022), in units of the Laplace scale,
 *   remove (dir 0): P = (1-g) Lap(0) + g Lap(a),  Q = Lap(0);
 *   add    (dir 1): P = Lap(0),  Q = (1-g) Lap(0) + g Lap(a),
 * with loss +-u(o), u(o) = log(1 - g + g e^{|o| - |o - a|}): two atoms (o <= 0 and
 * o >= a, where u is constant) and a continuous part on (0, a), where u rises from u_lo
 * to u_hi. The atoms join the accountant's enumeration and the continuous part its
 * "peel" (terms with one continuous factor in closed form, cf_atoms.c), like Laplace. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cf_internal.h"

/* u at x = 2o - a in [-a, a]: log((1 - g) + g e^x). */
static double wl_u(double g, double x) { return log1p(g * expm1(x)); }

int dpgd_acct_wl_is(const acct_entry *en) { return en->kind == ACCT_WOR_AR_LAPLACE; }

/* Atoms (loss, P-probability) of one release in direction dir. */
size_t dpgd_acct_wl_atoms(const acct_entry *en, int dir, double *l, double *w)
{
  double g = en->par[0], a = en->par[1], ulo = wl_u(g, -a), uhi = wl_u(g, a);
  if (dir == 0) {
    l[0] = ulo, w[0] = 0.5 * exp(ulo);
    l[1] = uhi, w[1] = 0.5 * exp(uhi - a);
  } else {
    l[0] = -ulo, w[0] = 0.5;
    l[1] = -uhi, w[1] = 0.5 * exp(-a);
  }
  return 2;
}

/* Largest loss of the continuous part in direction dir (u_hi, or -u_lo). */
double dpgd_acct_wl_cont_max(const acct_entry *en, int dir)
{
  double g = en->par[0], a = en->par[1];
  return dir ? -wl_u(g, -a) : wl_u(g, a);
}

/* u'(o) at x = 2o - a: 2 g e^x / ((1 - g) + g e^x), increasing in o, below 2. */
static double wl_du(double g, double x) { return 2 * exp(log(g) + x - wl_u(g, x)); }

/* log of the continuous part of M(s): int_0^a e^{-o}/2 e^{w u(o)} do, w = 1 + s (remove)
 * or -s (add), by composite 16-point Gauss-Legendre, summed in log space (a complex
 * log-sum-exp). Panels are laid left to right, each at most 1 wide and such that
 * |w| u' (b - a) <= 2 pi with u' at its right end (u' increases), so that the phase and
 * the log-modulus change by at most 2 pi per panel. NaN past ACCT_WL_MAX_PANELS. */
static double complex wl_log_cont(double g, double a, int dir, double complex s)
{
  double complex w = dir ? -s : 1 + s;
  double aw = cabs(w), m = -INFINITY;
  double complex sum = 0;
  size_t np = 0;
  for (double lo = 0; lo < a;) {
    double h = fmin(1.0, a - lo);
    for (int k = 0; k < 60 && aw * wl_du(g, 2 * (lo + h) - a) * h > 2 * M_PI; k++)
      h = 2 * M_PI / (aw * wl_du(g, 2 * (lo + h) - a)); /* shrinks; u'(lo + h) drops */
    if (a - lo - h < 1e-9 * a) h = a - lo;              /* no sliver at the end */
    if (++np > ACCT_WL_MAX_PANELS || !(h > 0)) return NAN;
    double mid = lo + 0.5 * h;
    for (int i = 0; i < ACCT_SG_GL_NODES; i++) {
      double o = mid + 0.5 * h * dpgd_acct_gl_x[i], u = wl_u(g, 2 * o - a);
      double complex z = log(0.25 * h * dpgd_acct_gl_w[i]) - o + w * u;
      if (creal(z) > m) {
        sum *= exp(m - creal(z));
        m = creal(z);
      }
      sum += cexp(z - m);
    }
    lo += h;
  }
  return sum == 0 ? -INFINITY : m + dpgd_acct_cf_log_c(sum);
}

/* A memory of wl_log_cont's values, direct-mapped on the bits of (s, g, a, dir): formula
 * B asks for the continuous part twice per node (in M and in the peeled terms) and an
 * eps search visits the same nodes for every eps. Per thread (ACCT_WL_CACHE slots,
 * allocated at first use, freed when the thread exits). */
typedef struct {
  double g, a, re, im;
  int dir;
  double complex v;
} wl_slot;

static _Thread_local wl_slot *wl_tab;
static pthread_key_t wl_key;
static pthread_once_t wl_key_once = PTHREAD_ONCE_INIT;
static int wl_key_ok;

static void wl_tab_free(void *unused)
{
  (void)unused;
  free(wl_tab);
  wl_tab = NULL;
}

static void wl_key_make(void) { wl_key_ok = pthread_key_create(&wl_key, wl_tab_free) == 0; }

static size_t wl_hash(const double *k, int dir)
{
  uint64_t h = (uint64_t)dir, b;
  for (int i = 0; i < 4; i++) {
    memcpy(&b, &k[i], sizeof b);
    h = (h ^ b) * 0x9E3779B97F4A7C15ull;
  }
  return (size_t)(h >> 20) % ACCT_WL_CACHE;
}

double complex dpgd_acct_wl_log_cont(const acct_entry *en, int dir, double complex s)
{
  double k[4] = {en->par[0], en->par[1], creal(s), cimag(s)};
  if (!wl_tab) {
    pthread_once(&wl_key_once, wl_key_make);
    if (wl_key_ok && (wl_tab = malloc(ACCT_WL_CACHE * sizeof *wl_tab)) != NULL) {
      pthread_setspecific(wl_key, wl_tab); /* any non-NULL value */
      for (size_t i = 0; i < ACCT_WL_CACHE; i++) wl_tab[i].g = NAN;
    }
  }
  if (!wl_tab) return wl_log_cont(k[0], k[1], dir, s);
  wl_slot *e = &wl_tab[wl_hash(k, dir)];
  if (e->g == k[0] && e->a == k[1] && e->re == k[2] && e->im == k[3] && e->dir == dir)
    return e->v;
  double complex v = wl_log_cont(k[0], k[1], dir, s);
  *e = (wl_slot){k[0], k[1], k[2], k[3], dir, v};
  return v;
}

/* log M(s) = log(atoms + continuous part). */
double complex dpgd_acct_wl_log_mgf(const acct_entry *en, int dir, double complex s)
{
  double complex d = dpgd_acct_cf_atoms_log_mgf(en, dir, s);
  double complex c = dpgd_acct_wl_log_cont(en, dir, s);
  if (creal(c) > creal(d)) {
    double complex t = d;
    d = c, c = t;
  }
  return d + dpgd_acct_cf_log_c(1 + cexp(c - d));
}

/* log of the bound on |continuous part of M(c + i t)|: the smaller of its value at c and
 * V/|t|. V: with y = u(o), the part is int H(y) e^{i t y} dy for H = e^{-o}/2
 * e^{r u}/u' (r = Re w), so |.| <= (H(u_lo) + H(u_hi) + TV(H))/|t| (integration by
 * parts); log H has derivative -3 + (r + 1) u' with u' increasing, so H is monotone or
 * has one interior minimum, and TV(H) <= H(0) + H(a): V = 2 (H(0) + H(a)). */
double dpgd_acct_wl_log_cont_bound(const acct_entry *en, int dir, double c, double t)
{
  double g = en->par[0], a = en->par[1], r = dir ? -c : 1 + c;
  double lc = creal(dpgd_acct_wl_log_cont(en, dir, c));
  if (!(t > 0)) return lc;
  double lh[2];
  for (int k = 0; k < 2; k++) { /* o = 0 (x = -a) and o = a (x = a) */
    double x = k ? a : -a, u = wl_u(g, x);
    lh[k] = -(k ? a : 0) - log(2) + r * u - (log(2 * g) + x - u);
  }
  double mx = fmax(lh[0], lh[1]);
  double lv = log(2) + mx + log1p(exp(-fabs(lh[0] - lh[1])));
  return fmin(lc, lv - log(t)) + 1e-12; /* rounding of the logs, outward */
}

/* delta of one release's continuous part with the loss shifted: for x = eps - m,
 * int over (0, a) of p(o) (1 - e^{x - L(o)})_+ do, in closed form without cancellation.
 * Remove: with o* where u(o*) = x, (g/2)(1 - e^{o* - a})^2, or (1 - e^{-a})(1 - e^x)/2
 * for x <= u_lo, 0 for x >= u_hi. Add: with u(o*) = -x, (g/2) e^{x - a} (e^{o*} - 1)^2,
 * (1 - e^{-a})(1 - e^x)/2 for x <= -u_hi, 0 for x >= -u_lo. */
double dpgd_acct_wl_kernel(const acct_entry *en, int dir, double x)
{
  double g = en->par[0], a = en->par[1], ulo = wl_u(g, -a), uhi = wl_u(g, a);
  if (dir == 0) {
    if (x >= uhi) return 0;
    if (x <= ulo) return 0.5 * -expm1(-a) * -expm1(x);
    double os = 0.5 * (a + log(expm1(x) + g) - log(g)), d = -expm1(os - a);
    return 0.5 * g * d * d;
  }
  if (x >= -ulo) return 0;
  if (x <= -uhi) return 0.5 * -expm1(-a) * -expm1(x);
  double os = 0.5 * (a + log(expm1(-x) + g) - log(g)), d = expm1(os);
  return 0.5 * g * exp(x - a) * d * d;
}

/* Renyi divergence of order alpha > 1 of the pair, the larger direction: log M(alpha - 1)
 * / (alpha - 1) (real, quadrature error far below the 1e-10 relative pad added). */
double dpgd_acct_wl_rdp(const acct_entry *en, double alpha)
{
  if (dpgd_acct_cf_gl_init()) return INFINITY;
  double best = 0;
  for (int dir = 0; dir < 2; dir++) {
    double v = creal(dpgd_acct_wl_log_mgf(en, dir, alpha - 1)) / (alpha - 1);
    if (!(v <= best)) best = v; /* NaN: +inf below */
  }
  return isnan(best) ? INFINITY : best * (1 + 1e-10) + 1e-300;
}
