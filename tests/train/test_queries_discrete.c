/* test_queries_discrete.c -- secure mode of the sparse queries (dpgd_queries.h, "Secure
 * mode"): every answer is an integer on the grid 2^-F plus integer noise, the sampler's
 * sigma_grid^2 = ceil((sigma 2^F)^2), the noise's variance, the guarantee as the discrete
 * Gaussian's (exact refused, zcdp and rdp_* from the accountant's discrete Gaussian of mu
 * = sqrt(2 kappa)), no odometer levels, and the grid limit of the sampler. Expected values
 * come from the header's formulas, computed here. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_train.h"

static dpgd_queries *open_secure(size_t n, size_t dim, double budget, double kappa)
{
  dpgd_queries_params p = {n, dim, budget, kappa, sqrt((double)dim), DPGD_RNG_SECURE, {{0}}};
  dpgd_queries *q = NULL;
  assert_int_equal(dpgd_queries_open(&q, &p), DPGD_OK);
  return q;
}

/* 1 if x 2^F is an integer (x a double, F <= 60: exact scaling). */
static int on_grid(double x, int bits)
{
  double u = ldexp(x, bits);
  return u == nearbyint(u);
}

/* Values off every grid (0.3, 1/3): the released answers are integers in units of 2^-F,
 * and so is their distance to the exact sum of the quantized values. */
static void test_answers_on_grid(void **state)
{
  (void)state;
  size_t n = 7, dim = 3;
  dpgd_queries *q = open_secure(n, dim, 50.0, 2.0);
  double quantum = dpgd_queries_quantum(q);
  int bits = -ilogb(quantum);
  assert_true(ldexp(1.0, -bits) == quantum && bits >= 10);
  double values[7 * 3], answer[3];
  for (size_t i = 0; i < n * dim; i++) values[i] = (i % 2 ? 0.3 : 1.0 / 3) / (double)dim;
  for (int t = 0; t < 20; t++) {
    assert_int_equal(dpgd_queries_answer(q, values, answer), DPGD_OK);
    for (size_t j = 0; j < dim; j++)
      if (!isfinite(answer[j]) || !on_grid(answer[j], bits))
        fail_msg("query %d: answer %.17g is not a multiple of 2^-%d", t, answer[j], bits);
  }
  dpgd_queries_free(q);
}

/* sigma_grid^2 = ceil((sigma 2^F)^2), sigma 2^F <= 2^31; research mode has no sampler. */
static void test_sampler_parameters(void **state)
{
  (void)state;
  const double budgets[] = {4.0, 10.0, 0.37, 1e6};
  const double kappas[] = {0.5, 0.028, 3.0, 1e-3};
  for (int k = 0; k < 4; k++) {
    dpgd_queries *q = open_secure(300, 2, budgets[k], kappas[k]);
    const dpgd_dgauss *g = dpgd_queries_dgauss(q);
    assert_non_null(g);
    assert_true(g->den == 1);
    double sigma = dpgd_queries_sigma(q);
    assert_true(sigma >= sqrt(budgets[k] / (2 * kappas[k])));
    int bits = -ilogb(dpgd_queries_quantum(q));
    /* s^2 needs 106 bits: exact in binary128 (113), not in long double (64) */
    double sd = ldexp(sigma, bits);
    __float128 s = sd, s2 = s * s, num = (__float128)g->num;
    assert_true(sd <= 0x1p31);
    if (!(num >= s2 && num - 1 < s2))
      fail_msg("sigma_grid^2 %llu, (sigma 2^F)^2 about %.6f", (unsigned long long)g->num,
               sd * sd);
    dpgd_queries_free(q);
  }
  dpgd_queries_params p = {3, 1, 4.0, 0.5, 1.0, DPGD_RNG_RESEARCH, {{0}}};
  dpgd_queries *q;
  assert_int_equal(dpgd_queries_open(&q, &p), DPGD_OK);
  assert_null(dpgd_queries_dgauss(q));
  assert_true(isnan(dpgd_queries_eps_continuous(q, 1e-5)));
  dpgd_queries_free(q);
}

/* All values zero: each answer is pure noise, integer in grid units, mean 0, variance
 * sigma_grid^2 (the discrete Gaussian's variance is below sigma_grid^2 by a relative
 * 1e-300 or less at these scales). 24000 draws: 6 standard errors. */
static void test_noise_variance(void **state)
{
  (void)state;
  size_t n = 4, dim = 48, T = 500;
  dpgd_queries *q = open_secure(n, dim, 9.0, 0.5);
  int bits = -ilogb(dpgd_queries_quantum(q));
  double var_grid = ldexp((double)dpgd_queries_dgauss(q)->num, -2 * bits);
  double values[4 * 48] = {0}, answer[48], s1 = 0, s2 = 0;
  for (size_t t = 0; t < T; t++) {
    assert_int_equal(dpgd_queries_answer(q, values, answer), DPGD_OK);
    for (size_t j = 0; j < dim; j++) {
      assert_true(on_grid(answer[j], bits));
      s1 += answer[j];
      s2 += answer[j] * answer[j];
    }
  }
  double m = (double)(T * dim), mean = s1 / m, var = s2 / m;
  if (!(fabs(mean) <= 6 * sqrt(var_grid / m)))
    fail_msg("mean %.6g, std of the mean %.6g", mean, sqrt(var_grid / m));
  if (!(fabs(var / var_grid - 1) <= 6 * sqrt(2 / m)))
    fail_msg("variance %.6g, sigma_grid^2 %.6g", var, var_grid);
  /* zero values spend nothing: every user stays active */
  assert_int_equal(dpgd_filter_n_active(dpgd_queries_filter(q)), n);
  dpgd_queries_free(q);
}

/* The guarantee: exact refused; every other method equal to the accountant's discrete
 * Gaussian of mu = sqrt(2 kappa) (within the 2^-50 rounding up of sigma and mu), never
 * below it; zcdp is kappa + 2 sqrt(kappa log(1/delta)); eps_continuous the Gaussian's. */
static void test_epsilon(void **state)
{
  (void)state;
  const double kappa = 0.028, delta = 1e-6;
  dpgd_queries *q = open_secure(50, 1, 10.0, kappa);
  double eps;
  assert_int_equal(dpgd_queries_epsilon(q, DPGD_ACCT_EXACT, delta, &eps), DPGD_EINVAL);
  dpgd_error_clear();
  dpgd_accountant *a = dpgd_acct_alloc(), *c = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, sqrt(2 * kappa), 1), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(c, sqrt(2 * kappa), 1), DPGD_OK);
  for (int m = DPGD_ACCT_ZCDP; m < DPGD_ACCT_N_METHODS; m++) {
    dpgd_acct_value v;
    assert_int_equal(dpgd_acct_epsilon(a, (dpgd_acct_method)m, delta, &v), DPGD_OK);
    assert_int_equal(dpgd_queries_epsilon(q, (dpgd_acct_method)m, delta, &eps), DPGD_OK);
    if (!(eps >= v.value * (1 - 1e-15) && eps <= v.value * (1 + 1e-12)))
      fail_msg("%s: %.17g, discrete accountant %.17g", dpgd_acct_method_name(m), eps, v.value);
  }
  assert_int_equal(dpgd_queries_epsilon(q, DPGD_ACCT_ZCDP, delta, &eps), DPGD_OK);
  double z = kappa + 2 * sqrt(kappa * log(1 / delta));
  assert_true(eps >= z * (1 - 1e-15) && eps <= z * (1 + 1e-9));
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_EXACT, delta, &v), DPGD_OK);
  double ec = dpgd_queries_eps_continuous(q, delta);
  assert_true(ec >= v.value * (1 - 1e-12) && ec <= v.value * (1 + 1e-9));
  dpgd_odometer o;
  assert_int_equal(dpgd_queries_odometer(q, delta, &o), DPGD_OK);
  assert_int_equal(o.levels, 0);
  dpgd_acct_free(a);
  dpgd_acct_free(c);
  dpgd_queries_free(q);
}

/* The accuracy bound of the discrete noise: sigma_grid 2^-F sqrt(2 log(2 dim / beta)). */
static void test_bound(void **state)
{
  (void)state;
  dpgd_queries *q = open_secure(20, 4, 3.0, 0.25);
  int bits = -ilogb(dpgd_queries_quantum(q));
  double sg = ldexp(sqrt((double)dpgd_queries_dgauss(q)->num), -bits);
  const double betas[] = {0.05, 1e-6, 0.5};
  for (int k = 0; k < 3; k++) {
    double b = dpgd_queries_bound(q, betas[k]), want = sg * sqrt(2 * log(8 / betas[k]));
    if (!(b >= want && b <= want * (1 + 1e-9)))
      fail_msg("bound %.17g, sigma_grid sqrt(2 log(2 dim / beta)) %.17g", b, want);
  }
  dpgd_queries_free(q);
}

/* Noise of std 2^22 cannot lie on a grid of 2^-10 within the sampler's 2^31 units:
 * refused with a message in secure mode; research mode opens. */
static void test_grid_limit(void **state)
{
  (void)state;
  double budget = 0x1p44 * 2 * 1e-3; /* sigma^2 = B / (2 kappa) = 2^44 at kappa 1e-3 */
  dpgd_queries_params p = {10, 1, budget, 1e-3, 1.0, DPGD_RNG_SECURE, {{0}}};
  dpgd_queries *q = NULL;
  assert_int_equal(dpgd_queries_open(&q, &p), DPGD_EINVAL);
  assert_null(q);
  assert_non_null(strstr(dpgd_error_last(), "discrete sampler"));
  dpgd_error_clear();
  p.rng = DPGD_RNG_RESEARCH;
  assert_int_equal(dpgd_queries_open(&q, &p), DPGD_OK);
  dpgd_queries_free(q);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_answers_on_grid), cmocka_unit_test(test_sampler_parameters),
      cmocka_unit_test(test_noise_variance),  cmocka_unit_test(test_epsilon),
      cmocka_unit_test(test_bound),           cmocka_unit_test(test_grid_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
