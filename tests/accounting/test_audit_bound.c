/* test_audit_bound.c -- the one-run audit's p-value and eps lower bound (Steinke, Nasr &
 * Jagielski 2023, Theorem 5.2; train/AUDIT.md) against a direct computation with GSL's
 * binomial distribution, closed forms and the bound's monotonicity. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "dpgd_accounting.h"

/* The theorem's bound written out with GSL's binomial functions (a computation the
 * library does not use). */
static double direct_p(size_t m, size_t r, size_t v, double eps, double delta)
{
  double q = exp(eps) / (1 + exp(eps));
  double beta = v == 0 ? 1 : gsl_cdf_binomial_Q((unsigned)(v - 1), q, (unsigned)r);
  double alpha = 0;
  for (size_t i = 1; i <= v; i++) {
    double s = 0;
    for (size_t k = v - i; k < v; k++) s += gsl_ran_binomial_pdf((unsigned)k, q, (unsigned)r);
    if (s / (double)i > alpha) alpha = s / (double)i;
  }
  double p = beta + 2 * (double)m * delta * alpha;
  return p < 1 ? p : 1;
}

static void test_p_value_direct(void **state)
{
  (void)state;
  const size_t rs[] = {1, 7, 50, 200, 613};
  const double eps[] = {0, 0.3817, 1.2395, 2.718, 4.05};
  const double deltas[] = {0, 1e-5, 2.385e-3};
  for (size_t a = 0; a < 5; a++)
    for (size_t b = 0; b < 5; b++)
      for (size_t c = 0; c < 3; c++) {
        size_t r = rs[a], m = 3 * r + 11;
        for (size_t v = 0; v <= r; v += 1 + r / 17) {
          double p, d = direct_p(m, r, v, eps[b], deltas[c]);
          assert_int_equal(dpgd_audit_p_value(m, r, v, eps[b], deltas[c], &p), DPGD_OK);
          if (fabs(p - d) > 1e-12 + 1e-9 * d)
            fail_msg("m %zu r %zu v %zu eps %g delta %g: %.15g vs direct %.15g", m, r, v,
                     eps[b], deltas[c], p, d);
        }
      }
}

/* All r guesses correct and delta = 0: p = q^r, so the bound solves q^r = 1 - confidence:
 * eps = log(q / (1 - q)) with q = (1 - confidence)^(1/r). */
static void test_eps_all_correct_closed_form(void **state)
{
  (void)state;
  const size_t rs[] = {10, 37, 100, 400};
  const double conf[] = {0.95, 0.99, 0.8125};
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 3; b++) {
      double q = pow(1 - conf[b], 1.0 / (double)rs[a]), want = log(q / (1 - q)), eps;
      assert_int_equal(dpgd_audit_eps_lower(1000, rs[a], rs[a], 0, conf[b], &eps), DPGD_OK);
      assert_true(eps <= want * (1 + 1e-12));
      assert_true(eps >= want * (1 - 1e-9));
    }
}

/* The bound is a lower bound at the stated level: the p-value at eps_lower is below
 * 1 - confidence and just above it is not. More correct guesses give a larger bound; a
 * larger delta a smaller one; chance-level guessing gives 0. */
static void test_eps_monotone_and_level(void **state)
{
  (void)state;
  double prev = -1, eps, p;
  for (size_t v = 100; v <= 200; v += 10) {
    assert_int_equal(dpgd_audit_eps_lower(1000, 200, v, 1e-5, 0.95, &eps), DPGD_OK);
    assert_true(eps >= prev);
    prev = eps;
    if (eps > 0) {
      assert_int_equal(dpgd_audit_p_value(1000, 200, v, eps, 1e-5, &p), DPGD_OK);
      assert_true(p < 0.05);
      assert_int_equal(dpgd_audit_p_value(1000, 200, v, eps * (1 + 1e-6), 1e-5, &p), DPGD_OK);
      assert_true(p >= 0.05);
    }
  }
  assert_int_equal(dpgd_audit_eps_lower(1000, 200, 100, 1e-5, 0.95, &eps), DPGD_OK);
  assert_true(eps == 0);
  double e1, e2;
  assert_int_equal(dpgd_audit_eps_lower(1000, 200, 190, 1e-6, 0.95, &e1), DPGD_OK);
  assert_int_equal(dpgd_audit_eps_lower(1000, 200, 190, 1e-3, 0.95, &e2), DPGD_OK);
  assert_true(e2 < e1);
}

static void test_invalid(void **state)
{
  (void)state;
  double p, eps;
  assert_int_equal(dpgd_audit_p_value(10, 11, 3, 1, 0, &p), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_p_value(10, 5, 6, 1, 0, &p), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_p_value(10, 5, 3, -1, 0, &p), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_p_value(10, 5, 3, NAN, 0, &p), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_p_value(10, 5, 3, 1, 1.5, &p), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_eps_lower(10, 5, 3, 0, 1, &eps), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_eps_lower(10, 5, 3, 0, 0, &eps), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_p_value(0, 0, 0, 0.5, 0, &p), DPGD_OK);
  assert_true(p == 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_p_value_direct),
      cmocka_unit_test(test_eps_all_correct_closed_form),
      cmocka_unit_test(test_eps_monotone_and_level),
      cmocka_unit_test(test_invalid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
