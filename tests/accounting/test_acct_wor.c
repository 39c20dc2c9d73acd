/* test_acct_wor.c -- subsampling without replacement (accounting/SAMPLING.md). The
 * add/remove Gaussian's exact delta (characteristic function) against an independent
 * computation: GSL adaptive quadrature of the hockey-stick divergence of its dominating
 * pairs, for one release and, nested, for two; sanity cases (m = n is the base
 * mechanism, the pairs are Poisson's at q = m/n); the replace-one RDP bound against the
 * Renyi divergence of a pair of replace-one neighbours it must cover (a counting query
 * realises the add/remove pairs), so that bound lies above the add/remove exact value. */
#include <complex.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"

/* ---- the independent computation: the pairs' densities and GSL quadrature ---- */

/* Remove pair of one release at rate g, sensitivity 1, noise std s (dir 0):
 * P = (1-g) N(0,s^2) + g N(1,s^2), Q = N(0,s^2); the add pair (dir 1) swaps them. */
typedef struct {
  double g, s, eps;
  int dir;
} pair;

static double lphi(double o, double mean, double s)
{
  return -(o - mean) * (o - mean) / (2 * s * s) - log(s * sqrt(2 * M_PI));
}

static double ldens_mix(const pair *x, double o)
{
  double l0 = log1p(-x->g) + lphi(o, 0, x->s), l1 = log(x->g) + lphi(o, 1, x->s);
  double mx = fmax(l0, l1);
  return mx + log1p(exp(-fabs(l0 - l1)));
}

static double dens_p(const pair *x, double o)
{
  return exp(x->dir ? lphi(o, 0, x->s) : ldens_mix(x, o));
}

static double dens_q(const pair *x, double o)
{
  return exp(x->dir ? ldens_mix(x, o) : lphi(o, 0, x->s));
}

/* The privacy loss log(p/q), from the logs (no underflow far out). */
static double loss(const pair *x, double o)
{
  double l = ldens_mix(x, o) - lphi(o, 0, x->s);
  return x->dir ? -l : l;
}

static double hs_integrand(double o, void *vp)
{
  const pair *x = vp;
  return fmax(0, dens_p(x, o) - exp(x->eps) * dens_q(x, o));
}

/* int (p - e^eps q)_+ over the line, in four adaptive pieces split around the point
 * where the loss crosses eps (found by bisection; only a breakpoint). */
static double hs_delta(double g, double s, int dir, double eps)
{
  pair x = {g, s, eps, dir};
  double lo = -60 * s, hi = 1 + 60 * s; /* the loss is monotone in o */
  int up = loss(&x, lo) > eps;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if ((loss(&x, mid) > eps) == up) lo = mid;
    else hi = mid;
  }
  double c = fmin(fmax(lo, -40 * s), 1 + 40 * s), v = 0, r, e;
  double cut[3] = {fmin(c, 0) - 1, c, fmax(c, 1) + 1};
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  gsl_function F = {hs_integrand, &x};
  gsl_integration_qagil(&F, cut[0], 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  for (int i = 0; i < 2; i++)
    gsl_integration_qags(&F, cut[i], cut[i + 1], 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  gsl_integration_qagiu(&F, cut[2], 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  gsl_integration_workspace_free(w);
  return v;
}

/* Two releases: delta_2(eps) = E_{o ~ P}[delta_1(eps - L(o))], L = log(p/q). */
static double two_integrand(double o, void *vp)
{
  const pair *x = vp;
  return dens_p(x, o) * hs_delta(x->g, x->s, x->dir, x->eps - loss(x, o));
}

static double hs_delta2(double g, double s, int dir, double eps)
{
  pair x = {g, s, eps, dir};
  double r, e, v = 0;
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  gsl_function F = {two_integrand, &x};
  gsl_integration_qags(&F, -14 * s, 1 + 14 * s, 1e-300, 1e-10, 1000, w, &r, &e), v += r;
  gsl_integration_workspace_free(w);
  return v; /* beyond 14 sd lies < 1e-43 of P's mass */
}

/* v is an upper bound of ref within slack: ref (1 - rel) <= v <= ref (1 + rel) + 2 err. */
static void assert_upper(double v, double err, double ref, double rel)
{
  if (!(v >= ref * (1 - rel) && v <= ref * (1 + rel) + 2 * err + 1e-300))
    fail_msg("value %.17g err %.3g vs independent %.17g", v, err, ref);
}

static dpgd_accountant *acct_new(void)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  return a;
}

/* The rate is never below m/n, and exact where m/n is a double. */
static void test_rate(void **state)
{
  (void)state;
  const uint64_t ms[] = {1, 256, 7, 600, 3, 1}, ns[] = {3, 60000, 10, 6000, 3, 1u << 30};
  for (int i = 0; i < 6; i++) {
    double g = dpgd_acct_wor_rate(ms[i], ns[i]);
    assert_true(fma(g, (double)ns[i], -(double)ms[i]) >= 0);
    assert_true(g <= nextafter((double)ms[i] / (double)ns[i], 2));
  }
  assert_true(dpgd_acct_wor_rate(3, 3) == 1.0);
  assert_true(dpgd_acct_wor_rate(1, 1u << 30) == ldexp(1, -30));
  uint64_t big = (1ull << 60) + 1; /* not a double: the rate still covers m/n */
  assert_true(dpgd_acct_wor_rate(big - 2, big) >= (double)(big - 2) / (double)big);
}

/* One release: the library's exact delta in each direction (the closed form of its
 * monotone loss, which the exact method uses for one release) against quadrature of
 * the hockey-stick divergence; the public delta is the larger direction's. */
static void test_gaussian_single(void **state)
{
  (void)state;
  const uint64_t m = 600, n = 6000;
  const double sigma = 0.9, eps[] = {0.05, 0.35, 1.2, 2.6};
  dpgd_accountant *a = acct_new();
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, m, n, sigma, DPGD_ACCT_ADD_REMOVE, 1), 0);
  double g = dpgd_acct_wor_rate(m, n);
  for (int j = 0; j < 4; j++) {
    double ref[2];
    for (int dir = 0; dir < 2; dir++) {
      dpgd_acct_value c;
      ref[dir] = hs_delta(g, sigma, dir, eps[j]);
      assert_int_equal(dpgd_acct_delta_single_sg(g, sigma, dir, eps[j], &c), 0);
      assert_upper(c.value, c.err, ref[dir], 1e-9);
    }
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, eps[j], &v), 0);
    assert_upper(v.value, v.err, fmax(ref[0], ref[1]), 1e-9);
  }
  dpgd_acct_free(a);
}

/* Two releases: formula B (the characteristic function of the composition) and the
 * public query against the nested quadrature. */
static void test_gaussian_two(void **state)
{
  (void)state;
  const uint64_t m = 1000, n = 5000;
  const double sigma = 1.3, eps[] = {0.2, 0.9};
  dpgd_accountant *a = acct_new();
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, m, n, sigma, DPGD_ACCT_ADD_REMOVE, 2), 0);
  double g = dpgd_acct_wor_rate(m, n);
  for (int j = 0; j < 2; j++) {
    double ref[2];
    for (int dir = 0; dir < 2; dir++) {
      dpgd_acct_value b;
      ref[dir] = hs_delta2(g, sigma, dir, eps[j]);
      assert_int_equal(dpgd_acct_delta_formula_b(a, dir, eps[j], &b), 0);
      assert_upper(b.value, b.err, ref[dir], 1e-6);
    }
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, eps[j], &v), 0);
    assert_upper(v.value, v.err, fmax(ref[0], ref[1]), 1e-6);
  }
  dpgd_acct_free(a);
}

/* m = n: every point is in every batch, so the entry is the base mechanism; and the
 * add/remove Gaussian's pairs are the Poisson-subsampled Gaussian's at q = m/n. */
static void test_sanity(void **state)
{
  (void)state;
  dpgd_accountant *a = acct_new(), *b = acct_new();
  dpgd_acct_value x, y;
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 77, 77, 2.385, DPGD_ACCT_ADD_REMOVE, 40), 0);
  assert_int_equal(dpgd_acct_add_gaussian(b, 1 / 2.385, 40), 0);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &x), 0);
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_EXACT, 1e-5, &y), 0);
  assert_true(fabs(x.value - y.value) <= 1e-12 * y.value);
  dpgd_acct_free(a), dpgd_acct_free(b);
  a = acct_new(), b = acct_new();
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 150, 6000, 1.1, DPGD_ACCT_ADD_REMOVE, 300), 0);
  assert_int_equal(
      dpgd_acct_add_subsampled_gaussian(b, dpgd_acct_wor_rate(150, 6000), 1.1, 300), 0);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    if (m == DPGD_ACCT_ZCDP) continue;
    assert_int_equal(dpgd_acct_epsilon(a, m, 1e-5, &x), 0);
    assert_int_equal(dpgd_acct_epsilon(b, m, 1e-5, &y), 0);
    assert_true(x.value == y.value);
  }
  dpgd_acct_free(a), dpgd_acct_free(b);
  /* replace-one at m = n: the base's RDP at every integer order */
  for (int lap = 0; lap < 2; lap++) {
    a = acct_new(), b = acct_new();
    if (lap) {
      assert_int_equal(dpgd_acct_add_wor_laplace(a, 9, 9, 0.7, DPGD_ACCT_REPLACE_ONE, 3), 0);
      assert_int_equal(dpgd_acct_add_laplace(b, 0.7, 3), 0);
    } else {
      assert_int_equal(dpgd_acct_add_wor_gaussian(a, 9, 9, 2.385, DPGD_ACCT_REPLACE_ONE, 3), 0);
      assert_int_equal(dpgd_acct_add_gaussian(b, 1 / 2.385, 3), 0);
    }
    for (double al = 2; al <= 64; al++) {
      double ra = dpgd_acct_rdp_curve(a, al), rb = dpgd_acct_rdp_curve(b, al);
      assert_true(ra >= rb && ra <= rb * (1 + 1e-10));
    }
    dpgd_acct_free(a), dpgd_acct_free(b);
  }
}

/* D_alpha(P || Q) by GSL quadrature for the realised pair: (1-g) N(0,s^2) + g N(1,s^2)
 * against N(0,s^2) (lap = 0), or (1-g) Lap(0,1) + g Lap(a,1) against Lap(0,1), a = s
 * (lap = 1); rev swaps P and Q. */
typedef struct {
  double g, s, al;
  int lap, rev;
} rpar;

static double rlog_dens(const rpar *r, double o, int mix)
{
  double l0 = r->lap ? -fabs(o) - log(2) : lphi(o, 0, r->s);
  if (!mix) return l0;
  double l1 = r->lap ? -fabs(o - r->s) - log(2) : lphi(o, 1, r->s);
  double mx = fmax(l0, l1);
  return mx + log((1 - r->g) * exp(l0 - mx) + r->g * exp(l1 - mx));
}

static double renyi_integrand(double o, void *vp)
{
  const rpar *r = vp;
  double lp = rlog_dens(r, o, !r->rev), lq = rlog_dens(r, o, r->rev);
  return exp(r->al * lp + (1 - r->al) * lq);
}

static double renyi(double g, double s, double al, int lap, int rev)
{
  rpar r = {g, s, al, lap, rev};
  double hi = lap ? s : 1, v = 0, x, e;
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  gsl_function F = {renyi_integrand, &r};
  gsl_integration_qagil(&F, 0, 1e-300, 1e-11, 1000, w, &x, &e), v += x;
  gsl_integration_qags(&F, 0, hi, 1e-300, 1e-11, 1000, w, &x, &e), v += x;
  gsl_integration_qagiu(&F, hi, 1e-300, 1e-11, 1000, w, &x, &e), v += x;
  gsl_integration_workspace_free(w);
  return log(v) / (al - 1);
}

/* A counting query (replace-one sensitivity 1) realises the add/remove pairs between
 * replace-one neighbours (x counted or not, the rest not), so the replace-one bound
 * must cover their Renyi divergences, k-fold, and lie above the add/remove exact eps. */
static void test_replace_covers(void **state)
{
  (void)state;
  const uint64_t ms[] = {600, 256, 50}, ns[] = {6000, 60000, 100};
  const double par[] = {0.9, 1.1, 2.385};
  for (int lap = 0; lap < 2; lap++)
    for (int i = 0; i < 3; i++) {
      dpgd_accountant *a = acct_new();
      double p = lap ? 1 / par[i] : par[i], g = dpgd_acct_wor_rate(ms[i], ns[i]);
      int st = lap ? dpgd_acct_add_wor_laplace(a, ms[i], ns[i], p, DPGD_ACCT_REPLACE_ONE, 5)
                   : dpgd_acct_add_wor_gaussian(a, ms[i], ns[i], p, DPGD_ACCT_REPLACE_ONE, 5);
      assert_int_equal(st, 0);
      const double al[] = {2, 3, 5, 8, 16, 32};
      for (int j = 0; j < 6; j++) {
        double b = dpgd_acct_rdp_curve(a, al[j]);
        for (int rev = 0; rev < 2; rev++) {
          double d = 5 * renyi(g, p, al[j], lap, rev);
          if (!(b >= d))
            fail_msg("lap %d case %d order %g: bound %.10g < %.10g", lap, i, al[j], b, d);
        }
      }
      dpgd_acct_free(a);
    }
  for (int i = 0; i < 3; i++) {
    dpgd_accountant *a = acct_new(), *b = acct_new();
    dpgd_acct_value x, y;
    assert_int_equal(
        dpgd_acct_add_wor_gaussian(a, ms[i], ns[i], par[i], DPGD_ACCT_REPLACE_ONE, 100), 0);
    assert_int_equal(
        dpgd_acct_add_wor_gaussian(b, ms[i], ns[i], par[i], DPGD_ACCT_ADD_REMOVE, 100), 0);
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &x), 0);
    assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_EXACT, 1e-5, &y), 0);
    assert_true(x.value >= y.value);
    dpgd_acct_free(a), dpgd_acct_free(b);
  }
}

/* Refusals: bad m, n or parameter; the exact and zcdp methods on a replace-one entry;
 * replace-one mixed with add/remove subsampling; and a state round trip. */
static void test_errors(void **state)
{
  (void)state;
  dpgd_accountant *a = acct_new();
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 0, 10, 1, DPGD_ACCT_ADD_REMOVE, 1),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 11, 10, 1, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 1, 10, 0, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_laplace(a, 1, 10, NAN, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 1, 10, 1, DPGD_ACCT_REPLACE_ONE, 0),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 1, 10, 1, (dpgd_acct_relation)7, 1),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 3, 10, 1.5, DPGD_ACCT_REPLACE_ONE, 4), 0);
  assert_int_equal(dpgd_acct_add_wor_laplace(a, 3, 10, 0.5, DPGD_ACCT_REPLACE_ONE, 2), 0);
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.1, 2), 0);
  assert_true(dpgd_acct_replace_one(a));
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, 1.0, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, 1e-5, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, 0.1, 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 3, 10, 1.5, DPGD_ACCT_ADD_REMOVE, 1),
                   DPGD_EINVAL);
  dpgd_acct_value r1, r2;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_RDP_BALLE, 1e-5, &r1), 0);
  void *buf;
  size_t len;
  dpgd_accountant *c;
  assert_int_equal(dpgd_acct_serialize(a, &buf, &len), 0);
  assert_int_equal(dpgd_acct_deserialize(&c, buf, len), 0);
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_RDP_BALLE, 1e-5, &r2), 0);
  assert_true(r1.value == r2.value && dpgd_acct_n_entries(c) == 3);
  free(buf), dpgd_acct_free(c), dpgd_acct_free(a);
  a = acct_new();
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, 0.1, 1, 1), 0);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, 3, 10, 1.5, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  dpgd_acct_free(a);
  dpgd_error_clear();
}

/* ---- the Laplace pairs (scale 1, shift a): independent quadrature ---- */
typedef struct {
  double g, a, x;
  int dir;
} lpair;

static double llap(double o) { return -fabs(o) - log(2); }

static double lmix(const lpair *p, double o)
{
  double l0 = log1p(-p->g) + llap(o), l1 = log(p->g) + llap(o - p->a), m = fmax(l0, l1);
  return m + log1p(exp(-fabs(l0 - l1)));
}

static double lp_p(const lpair *p, double o) { return p->dir ? llap(o) : lmix(p, o); }
static double lp_q(const lpair *p, double o) { return p->dir ? lmix(p, o) : llap(o); }

static double lhs_integrand(double o, void *vp)
{
  const lpair *p = vp;
  return fmax(0, exp(lp_p(p, o)) - exp(p->x + lp_q(p, o)));
}

/* One release: int (p - e^x q)_+ in three pieces split at the kinks 0 and a. */
static double lhs_delta(double g, double a, int dir, double x)
{
  lpair p = {g, a, x, dir};
  gsl_function F = {lhs_integrand, &p};
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  double r, e, v = 0;
  gsl_integration_qagil(&F, 0, 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  gsl_integration_qags(&F, 0, a, 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  gsl_integration_qagiu(&F, a, 1e-300, 1e-12, 1000, w, &r, &e), v += r;
  gsl_integration_workspace_free(w);
  return v;
}

static double ltwo_integrand(double o, void *vp)
{
  const lpair *p = vp;
  return exp(lp_p(p, o)) * lhs_delta(p->g, p->a, p->dir, p->x - (lp_p(p, o) - lp_q(p, o)));
}

/* Two releases: E_P[delta_1(x - L)], the outputs below 0 and above a (constant loss)
 * as two atoms, the rest by quadrature. */
static double lhs_delta2(double g, double a, int dir, double x)
{
  lpair p = {g, a, x, dir};
  /* P-mass of o <= 0 and of o >= a: their densities fall like e^{-|o|}, so p(-1) e */
  double P0 = exp(lp_p(&p, -1) + 1), Pa = exp(lp_p(&p, a + 1) + 1);
  double v = P0 * lhs_delta(g, a, dir, x - (lp_p(&p, -1) - lp_q(&p, -1))) +
             Pa * lhs_delta(g, a, dir, x - (lp_p(&p, a + 1) - lp_q(&p, a + 1)));
  gsl_function F = {ltwo_integrand, &p};
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  double r, e;
  gsl_integration_qags(&F, 0, a, 1e-300, 1e-10, 1000, w, &r, &e), v += r;
  gsl_integration_workspace_free(w);
  return v;
}

/* The add/remove Laplace: one release (closed form) and two (formula B, the
 * characteristic function) in each direction against quadrature; eps(delta) of two
 * releases gives a delta at most the target; M(0) = M(-1) = 1. */
static void test_laplace(void **state)
{
  (void)state;
  const double a0 = 1.7, eps[] = {0.0, 0.11, 0.29};
  const uint64_t m = 100, n = 1000;
  double g = dpgd_acct_wor_rate(m, n);
  for (uint64_t k = 1; k <= 2; k++) {
    dpgd_accountant *a = acct_new();
    assert_int_equal(dpgd_acct_add_wor_laplace(a, m, n, a0, DPGD_ACCT_ADD_REMOVE, k), 0);
    for (int dir = 0; dir < 2; dir++) {
      assert_true(cabs(cexp(dpgd_acct_log_mgf(a, dir, 0)) - 1) < 1e-13);
      assert_true(cabs(cexp(dpgd_acct_log_mgf(a, dir, -1)) - 1) < 1e-13);
      for (int j = 0; j < 3; j++) {
        dpgd_acct_value b;
        double ref = k == 1 ? lhs_delta(g, a0, dir, eps[j]) : lhs_delta2(g, a0, dir, eps[j]);
        assert_int_equal(dpgd_acct_delta_formula_b(a, dir, eps[j], &b), 0);
        assert_upper(b.value, b.err, ref, k == 1 ? 1e-10 : 1e-7);
      }
    }
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-3, &v), 0);
    double r0 = k == 1 ? lhs_delta(g, a0, 0, v.value) : lhs_delta2(g, a0, 0, v.value);
    double r1 = k == 1 ? lhs_delta(g, a0, 1, v.value) : lhs_delta2(g, a0, 1, v.value);
    if (!(fmax(r0, r1) <= 1e-3 * (1 + 1e-9) && fmax(r0, r1) >= 0.99e-3))
      fail_msg("k %d: eps %.17g has delta %.17g, %.17g", (int)k, v.value, r0, r1);
    dpgd_acct_free(a);
  }
}

/* Laplace sanity: m = n is the base Laplace; the add/remove RDP is the pairs' Renyi
 * divergence; the replace-one bound lies above the add/remove exact eps; a state round
 * trip keeps the entry. */
static void test_laplace_sanity(void **state)
{
  (void)state;
  dpgd_accountant *a = acct_new(), *b = acct_new();
  dpgd_acct_value x, y;
  assert_int_equal(dpgd_acct_add_wor_laplace(a, 50, 50, 0.35, DPGD_ACCT_ADD_REMOVE, 30), 0);
  assert_int_equal(dpgd_acct_add_laplace(b, 0.35, 30), 0);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &x), 0);
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_EXACT, 1e-5, &y), 0);
  assert_true(x.value == y.value);
  dpgd_acct_free(a), dpgd_acct_free(b);
  a = acct_new(), b = acct_new();
  assert_int_equal(dpgd_acct_add_wor_laplace(a, 30, 200, 0.8, DPGD_ACCT_ADD_REMOVE, 40), 0);
  assert_int_equal(dpgd_acct_add_wor_laplace(b, 30, 200, 0.8, DPGD_ACCT_REPLACE_ONE, 40), 0);
  double g = dpgd_acct_wor_rate(30, 200);
  for (double al = 2; al <= 32; al *= 2) {
    double d = 40 * fmax(renyi(g, 0.8, al, 1, 0), renyi(g, 0.8, al, 1, 1));
    double r = dpgd_acct_rdp_curve(a, al);
    assert_true(r >= d && r <= d * (1 + 1e-8));
  }
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &x), 0);
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &y), 0);
  assert_true(y.value >= x.value);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_RDP_OPTIMAL, 1e-5, &y), 0);
  assert_true(y.value >= x.value);
  void *buf;
  size_t len;
  dpgd_accountant *c;
  assert_int_equal(dpgd_acct_serialize(a, &buf, &len), 0);
  assert_int_equal(dpgd_acct_deserialize(&c, buf, len), 0);
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_EXACT, 1e-5, &y), 0);
  assert_true(x.value == y.value);
  assert_int_equal(dpgd_acct_add_wor_laplace(c, 1, 3, 1, DPGD_ACCT_REPLACE_ONE, 1),
                   DPGD_EINVAL);
  free(buf), dpgd_acct_free(a), dpgd_acct_free(b), dpgd_acct_free(c);
  dpgd_error_clear();
}

int main(void)
{
  gsl_set_error_handler_off();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rate),           cmocka_unit_test(test_gaussian_single),
      cmocka_unit_test(test_gaussian_two),   cmocka_unit_test(test_sanity),
      cmocka_unit_test(test_replace_covers), cmocka_unit_test(test_errors),
      cmocka_unit_test(test_laplace),        cmocka_unit_test(test_laplace_sanity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
