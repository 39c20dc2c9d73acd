/* test_acct_rdp.c -- RDP curves against direct numerical integration of the Renyi
 * divergence (GSL QAGI) and exact sums, and the conversions' ordering: classic >= Balle
 * >= optimal >= exact for Gaussian mechanisms (docs/MATH.md "Conversions"). */
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

/* D_a(P || Q) = log( int p^a q^(1-a) ) / (a - 1) by QAGI, densities given in log form. */
typedef struct {
  double a, par0, par1;
  int kind; /* 0 Laplace(0,b) vs Laplace(1,b) with par0 = b; 1 subsampled remove pair */
} renyi_par;

static double renyi_integrand(double o, void *vp)
{
  const renyi_par *r = vp;
  double lp, lq;
  if (r->kind == 0) {
    double b = r->par0;
    lp = -fabs(o) / b - log(2 * b);
    lq = -fabs(o - 1) / b - log(2 * b);
  } else {
    double q = r->par0, s = r->par1;
    double l0 = -o * o / (2 * s * s), l1 = -(o - 1) * (o - 1) / (2 * s * s);
    double m = l0 > l1 ? l0 : l1;
    lp = m + log((1 - q) * exp(l0 - m) + q * exp(l1 - m)) - log(s * sqrt(2 * M_PI));
    lq = l0 - log(s * sqrt(2 * M_PI));
  }
  return exp(r->a * lp + (1 - r->a) * lq);
}

static double renyi_numeric(int kind, double a, double p0, double p1)
{
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(2000);
  renyi_par r = {a, p0, p1, kind};
  gsl_function F = {renyi_integrand, &r};
  double v, err, v2, err2;
  /* split at the kinks / centres so QAGI sees smooth pieces */
  gsl_integration_qagil(&F, 0, 0, 1e-12, 2000, w, &v, &err);
  gsl_integration_qags(&F, 0, 1, 0, 1e-12, 2000, w, &v2, &err2);
  v += v2;
  gsl_integration_qagiu(&F, 1, 0, 1e-12, 2000, w, &v2, &err2);
  v += v2;
  gsl_integration_workspace_free(w);
  return log(v) / (a - 1);
}

static void test_rdp_curves(void **state)
{
  (void)state;
  const double orders[] = {1.5, 2, 3.7, 8, 32};
  for (int i = 0; i < 5; i++) {
    double a = orders[i];
    dpgd_accountant *g = dpgd_acct_alloc(), *l = dpgd_acct_alloc(), *r = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_gaussian(g, 0.7, 3), DPGD_OK);
    assert_true(fabs(dpgd_acct_rdp_curve(g, a) - 3 * a * 0.49 / 2) < 1e-13 * a);
    /* Laplace b = 2.385: a0 = 1/b */
    assert_int_equal(dpgd_acct_add_laplace(l, 1 / 2.385, 2), DPGD_OK);
    double ref = 2 * renyi_numeric(0, a, 2.385, 0);
    assert_true(fabs(dpgd_acct_rdp_curve(l, a) - ref) < 1e-8 * ref);
    /* RR: two outcomes, exact sum written out */
    assert_int_equal(dpgd_acct_add_rr(r, 0.9, 5), DPGD_OK);
    double p = exp(0.9) / (1 + exp(0.9));
    double rr =
        5 * log(pow(p, a) * pow(1 - p, 1 - a) + pow(1 - p, a) * pow(p, 1 - a)) / (a - 1);
    assert_true(fabs(dpgd_acct_rdp_curve(r, a) - rr) < 1e-12 * rr);
    dpgd_acct_free(g);
    dpgd_acct_free(l);
    dpgd_acct_free(r);
  }
  /* subsampled Gaussian at integer orders: the binomial expansion is exact */
  const int ints[] = {2, 3, 7, 20};
  for (int i = 0; i < 4; i++) {
    dpgd_accountant *s = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_subsampled_gaussian(s, 0.037, 1.3, 1), DPGD_OK);
    double ref = renyi_numeric(1, ints[i], 0.037, 1.3);
    double v = dpgd_acct_rdp_curve(s, ints[i]);
    if (fabs(v - ref) > 1e-7 * ref) fail_msg("a=%d: %.12g vs %.12g", ints[i], v, ref);
    /* non-integer orders use the next integer: an upper bound, monotone */
    assert_true(dpgd_acct_rdp_curve(s, ints[i] - 0.5) == v);
    dpgd_acct_free(s);
  }
  /* discrete pair: max of both directions */
  const double p[] = {0.2, 0.5, 0.3}, q[] = {0.3, 0.45, 0.25};
  dpgd_accountant *d = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_discrete(d, p, q, 3, 1), DPGD_OK);
  double a = 2.5, f = 0, b = 0;
  for (int k = 0; k < 3; k++) {
    f += pow(p[k], a) * pow(q[k], 1 - a);
    b += pow(q[k], a) * pow(p[k], 1 - a);
  }
  double ref = fmax(log(f), log(b)) / (a - 1);
  assert_true(fabs(dpgd_acct_rdp_curve(d, a) - ref) < 1e-13);
  dpgd_acct_free(d);
}

/* classic >= Balle >= optimal >= exact, for eps(delta) and delta(eps). */
static void check_order(const dpgd_accountant *a, double delta, int gaussian)
{
  dpgd_acct_value v[DPGD_ACCT_N_METHODS];
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    if (m == DPGD_ACCT_ZCDP && !gaussian) continue;
    if (m == DPGD_ACCT_EXACT && !gaussian) continue;
    int st = dpgd_acct_epsilon(a, (dpgd_acct_method)m, delta, &v[m]);
    if (st) fail_msg("%s: %s", dpgd_acct_method_name(m), dpgd_error_last());
    assert_true(isfinite(v[m].value));
  }
  assert_true(v[DPGD_ACCT_RDP_BALLE].value <= v[DPGD_ACCT_RDP_CLASSIC].value);
  assert_true(v[DPGD_ACCT_RDP_OPTIMAL].value <= v[DPGD_ACCT_RDP_BALLE].value);
  if (gaussian) {
    assert_true(v[DPGD_ACCT_RDP_OPTIMAL].value >= v[DPGD_ACCT_EXACT].value);
    /* zCDP equals the classic conversion for a Gaussian (continuous orders) */
    assert_true(fabs(v[DPGD_ACCT_ZCDP].value - v[DPGD_ACCT_RDP_CLASSIC].value) <
                1e-6 * v[DPGD_ACCT_ZCDP].value);
  }
  /* delta(eps) at the Balle eps: ordered the same way */
  double eps = v[DPGD_ACCT_RDP_BALLE].value;
  dpgd_acct_value d[DPGD_ACCT_N_METHODS];
  for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++)
    assert_int_equal(dpgd_acct_delta(a, (dpgd_acct_method)m, eps, &d[m]), DPGD_OK);
  assert_true(d[DPGD_ACCT_RDP_BALLE].value <= d[DPGD_ACCT_RDP_CLASSIC].value);
  assert_true(d[DPGD_ACCT_RDP_OPTIMAL].value <= d[DPGD_ACCT_RDP_BALLE].value);
  assert_true(fabs(d[DPGD_ACCT_RDP_BALLE].value - delta) < 1e-3 * delta);
}

static void test_rdp_conversion_order(void **state)
{
  (void)state;
  const double mus[] = {0.0623, 0.45, 2.385};
  for (int i = 0; i < 3; i++) {
    dpgd_accountant *a = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_gaussian(a, mus[i], 1), DPGD_OK);
    check_order(a, 1e-5, 1);
    check_order(a, 1e-9, 1);
    dpgd_acct_free(a);
  }
  dpgd_accountant *m = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(m, 0.01, 100), DPGD_OK);
  assert_int_equal(dpgd_acct_add_laplace(m, 0.1, 20), DPGD_OK);
  assert_int_equal(dpgd_acct_add_rr(m, 0.5, 10), DPGD_OK);
  check_order(m, 1e-5, 0);
  dpgd_acct_free(m);
  dpgd_accountant *s = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(s, 0.01, 1.0, 1000), DPGD_OK);
  check_order(s, 1e-5, 0);
  dpgd_acct_free(s);
}

/* The optimal conversion at one order: its eps satisfies zeta* >= zeta, is below the
 * closed-form bound of docs/MATH.md "Conversions", and for a delta >= 1 uses
 * zeta + log(1-delta). */
static void test_rdp_optimal_single_order(void **state)
{
  (void)state;
  double e;
  const double a = 7.5, zeta = 0.8, delta = 1e-4;
  assert_int_equal(dpgd_acct_rdp_conv_optimal(a, zeta, delta, &e), DPGD_OK);
  double ha = (1 / a) * pow(1 - 1 / a, a - 1);
  double cf1 = zeta - log(delta / ha) / (a - 1);
  assert_true(e <= cf1 && e <= dpgd_acct_rdp_conv_balle(a, zeta, delta));
  assert_true(e > 0);
  assert_int_equal(dpgd_acct_rdp_conv_optimal(3, 0.5, 0.5, &e), DPGD_OK);
  assert_true(fabs(e - (0.5 + log(0.5))) < 1e-15 || e == 0);
}

int main(void)
{
  gsl_set_error_handler_off();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdp_curves),
      cmocka_unit_test(test_rdp_conversion_order),
      cmocka_unit_test(test_rdp_optimal_single_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
