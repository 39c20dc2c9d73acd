/* test_acct_pld.c -- the privacy-loss-distribution path of the exact method (pld*.c,
 * accounting/PLD.md) against things it did not compute: the Gaussian curve (MATH.md
 * section 2), the characteristic-function path where that one converges, a direct
 * (O(n^2)) convolution of the same pmf, and the brackets of the independent numpy script
 * tests/accounting/pld_bracket.py (numbers quoted below; ctest does not need numpy). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "pld_internal.h"

static dpgd_accountant *sg_new(double q, double sigma, uint64_t k)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, q, sigma, k), DPGD_OK);
  return a;
}

/* q = 1 is a plain Gaussian: the PLD bracket holds the closed-form curve, the upper end
 * above it and within the bracket's width (0.1 %), for eps(delta) and delta(eps). */
static void test_gaussian_curve(void **state)
{
  (void)state;
  const double sig[] = {2.385, 0.71}, del[] = {1e-5, 3.7e-3};
  const uint64_t ks[] = {7, 2};
  for (int i = 0; i < 2; i++) {
    dpgd_accountant *a = sg_new(1, sig[i], ks[i]);
    double mu = sqrt((double)ks[i]) / sig[i], e;
    assert_int_equal(dpgd_gdp_epsilon(mu, del[i], &e), DPGD_OK);
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_pld_epsilon(a, del[i], &v), DPGD_OK);
    assert_true(v.value >= e * (1 - 1e-12));
    assert_true(v.value - v.err <= e * (1 + 1e-12));
    assert_true(v.err <= 1e-3 * (v.value - v.err));
    double d = dpgd_gdp_delta(mu, 0.5 * e);
    assert_int_equal(dpgd_acct_pld_delta(a, 0.5 * e, &v), DPGD_OK);
    assert_true(v.value >= d * (1 - 1e-12) && v.value - v.err <= d * (1 + 1e-12));
    assert_true(v.err <= 1e-2 * v.value);
    dpgd_acct_free(a);
  }
}

/* q = 0.01, sigma = 0.8: at 100 releases the characteristic function converges (fast;
 * at 30 it takes seconds); the PLD path agrees with it within 0.1 % and brackets it. */
static void test_agrees_with_cf(void **state)
{
  (void)state;
  dpgd_accountant *a = sg_new(0.01, 0.8, 100);
  dpgd_acct_value cf, p;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &cf), DPGD_OK);
  assert_true(strncmp(dpgd_acct_exact_note(), "pld", 3) != 0); /* the contour answered */
  assert_int_equal(dpgd_acct_pld_epsilon(a, 1e-5, &p), DPGD_OK);
  assert_true(fabs(p.value - cf.value) <= 1e-3 * cf.value);
  assert_true(p.value - p.err <= cf.value + cf.err && cf.value - cf.err <= p.value);
  dpgd_acct_free(a);
}

/* The cases where the exact method printed n/a (q = 0.001, sigma = 1; 5, 50, 500
 * releases) and the 3 releases at q = 0.01, sigma = 0.8 where it was 0.33 % above the
 * truth: a number now, from the PLD path, within 0.1 % of its own lower bound, and
 * inside the independent script's bracket of the deciding (remove) direction
 * (H=2e-6 python3 tests/accounting/pld_bracket.py Q SIGMA 1e-5 N: [lo, hi] below; the
 * script bounds neither its FFT error nor its output-grid truncation, hence the 1e-4
 * relative slack on its lower end). */
static void test_few_releases(void **state)
{
  (void)state;
  const double q[] = {0.001, 0.001, 0.001, 0.01}, s[] = {1, 1, 1, 0.8};
  const uint64_t k[] = {5, 50, 500, 3};
  const double ref_lo[] = {0.018065, 0.042383, 0.107477, 0.667282};
  const double ref_hi[] = {0.018078, 0.042493, 0.108539, 0.667360};
  for (int i = 0; i < 4; i++) {
    dpgd_accountant *a = sg_new(q[i], s[i], k[i]);
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_OK);
    assert_true(strncmp(dpgd_acct_exact_note(), "pld h=", 6) == 0);
    double lo = v.value - v.err;
    assert_true(lo > 0 && v.err <= 1e-3 * lo);
    assert_true(v.value >= ref_lo[i] * (1 - 1e-4));
    assert_true(lo <= ref_hi[i]);
    dpgd_acct_free(a);
  }
}

/* Boundary: at q = 1e-9 the total variation distance is at most 1 - (1 - q)^5 < 1e-5,
 * so eps(1e-5) is exactly 0 (not rounded up to the smallest double). */
static void test_eps_zero(void **state)
{
  (void)state;
  dpgd_accountant *a = sg_new(1e-9, 1, 5);
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_OK);
  assert_true(v.value == 0 && v.err == 0);
  dpgd_acct_free(a);
}

/* delta(eps) of the k-fold composition of one pmf, by direct convolution (the _ref of the
 * FFT composition): 1 - (1 - p_inf)^k + sum_s c(s) (1 - e^{eps - s})_+. */
static double delta_ref(const dpgd_pld_pmf *m, double h, int k, double eps)
{
  size_t n = m->n, len = n;
  double *c = calloc(k * n, sizeof *c), *t = calloc(k * n, sizeof *t);
  assert_true(c && t);
  memcpy(c, m->p, n * sizeof *c);
  for (int r = 1; r < k; r++) {
    memset(t, 0, (len + n - 1) * sizeof *t);
    for (size_t i = 0; i < len; i++)
      for (size_t j = 0; j < n; j++) t[i + j] += c[i] * m->p[j];
    len += n - 1;
    memcpy(c, t, len * sizeof *c);
  }
  double d = 1 - pow(1 - m->p_inf, k);
  for (size_t j = 0; j < len; j++) {
    double s = (double)(k * m->i0 + (int64_t)j) * h;
    if (s > eps) d += c[j] * -expm1(eps - s);
  }
  free(c), free(t);
  return d;
}

/* The FFT composition (window, aliasing, suffix sums, error bounds) against the direct
 * convolution of the same pmf: its upper bound lies above and within the bounds it adds. */
static void test_fft_vs_direct(void **state)
{
  (void)state;
  const int k = 3;
  const double h = 2.5e-3, tau = 1e-12;
  dpgd_accountant *a = sg_new(0.05, 0.9, k);
  for (int dir = 0; dir < 2; dir++) {
    dpgd_pld_pmf m;
    assert_int_equal(dpgd_pld_pmf_build(&m, &a->e[0], dir, h, tau / k, tau / k, 1u << 20), 0);
    for (double eps = 0.05; eps < 2; eps += 0.6) {
      double ref = delta_ref(&m, h, k, eps);
      dpgd_pld_bracket b;
      assert_int_equal(dpgd_pld_run(a, dir, h, tau, 0, eps, &b), DPGD_OK);
      assert_true(b.hi >= ref * (1 - 1e-12));
      assert_true(b.hi <= ref * (1 + 1e-9) + 1e-10);
      assert_true(b.lo <= b.hi);
    }
    dpgd_pld_pmf_free(&m);
  }
  dpgd_acct_free(a);
}

/* A bad argument for the FFT size (a grid far too fine) is refused with ERANGE, not by
 * exhausting memory; the exact method still answers through a coarser grid. */
static void test_grid_limit(void **state)
{
  (void)state;
  dpgd_accountant *a = sg_new(0.001, 1, 5);
  dpgd_pld_bracket b;
  assert_int_equal(dpgd_pld_run(a, 0, 1e-10, 1e-15, 1, 1e-5, &b), DPGD_ERANGE);
  dpgd_error_clear();
  dpgd_acct_free(a);
}

/* Every allocation of a PLD evaluation fails in turn (STYLE.md 17): ENOMEM, nothing
 * leaks, and the evaluation succeeds once no allocation fails. */
static void test_alloc_failures(void **state)
{
  (void)state;
  dpgd_accountant *a = sg_new(0.05, 0.9, 3);
  for (long n = 0;; n++) {
    assert_true(n < 100);
    dpgd_pld_bracket b;
    failalloc_arm(n);
    int st = dpgd_pld_run(a, 0, 2.5e-3, 1e-12, 1, 1e-5, &b);
    long live = failalloc_live();
    failalloc_arm(-1);
    assert_int_equal(live, 0);
    if (st == DPGD_OK) break;
    assert_int_equal(st, DPGD_ENOMEM);
    dpgd_error_clear();
  }
  dpgd_acct_free(a);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gaussian_curve), cmocka_unit_test(test_agrees_with_cf),
      cmocka_unit_test(test_few_releases),   cmocka_unit_test(test_fft_vs_direct),
      cmocka_unit_test(test_grid_limit),     cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_eps_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
