/* test_acct_dgauss.c -- the discrete Gaussian in the accountant (docs/MATH.md "Discrete
 * Gaussian"): the bound it rests on, D_a(N_Z(m, s^2) || N_Z(0, s^2)) <= a m^2 / (2 s^2) for
 * integers m, checked by direct long double summation of the Renyi divergence at orders
 * 1.5 to 64 and sigma 0.4 to 30 (and within 1e-9 of it for sigma >= 3: the bound is tight);
 * the entry's RDP curve a mu^2/2 and zCDP eps rho + 2 sqrt(rho log 1/delta) against their
 * closed forms; exact refuses it; its rdp_* answers lie above the continuous twin's exact
 * one, which equals the Gaussian's; a checkpoint round trip keeps it discrete; bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"

/* D_a(N_Z(m, s2) || N_Z(0, s2)) by direct summation: the normalisers cancel for integer
 * m, so it is log(sum_x exp(-e_x) / Z) / (a - 1), e_x = (a (x-m)^2 + (1-a) x^2) / (2 s2),
 * summed in long double relative to the smallest e_x (the sum itself overflows). */
static long double renyi_dg(long double a, long m, long double s2)
{
  long M = (long)(80 * sqrtl(s2) + a * labs(m)) + 80;
  long double emin = INFINITY, num = 0, z = 0;
  for (long x = -M; x <= M; x++)
    emin = fminl(emin, (a * (x - m) * (x - m) + (1 - a) * x * x) / (2 * s2));
  for (long x = -M; x <= M; x++) {
    num += expl(emin - (a * (x - m) * (x - m) + (1 - a) * x * x) / (2 * s2));
    z += expl(-(long double)x * x / (2 * s2));
  }
  return (logl(num / z) - emin) / (a - 1);
}

static void test_renyi_bound(void **state)
{
  (void)state;
  static const double as[] = {1.5, 2, 3.7, 8, 23.5, 64};
  static const double ss[] = {0.4, 0.77, 1.3, 3.1, 7.9, 30};
  static const long ms[] = {1, 2, 5};
  for (size_t i = 0; i < 6; i++)
    for (size_t j = 0; j < 6; j++)
      for (size_t k = 0; k < 3; k++) {
        long double s2 = (long double)ss[j] * ss[j], a = as[i];
        long double got = renyi_dg(a, ms[k], s2);
        long double bound = a * ms[k] * ms[k] / (2 * s2);
        assert_true(got <= bound * (1 + 1e-15L) + 1e-300L);
        if (ss[j] >= 3) assert_true(got >= bound * (1 - 1e-9L));
      }
}

static void test_rdp_and_zcdp(void **state)
{
  (void)state;
  const double mu = 0.2385, delta = 1e-5;
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, mu, 37), DPGD_OK);
  assert_true(dpgd_acct_has_discrete_gaussian(a));
  static const double orders[] = {1.25, 2, 7.5, 64};
  for (int i = 0; i < 4; i++) {
    double want = 37 * orders[i] * mu * mu / 2;
    assert_true(fabs(dpgd_acct_rdp_curve(a, orders[i]) - want) <= 1e-14 * want);
  }
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, delta, &v), DPGD_OK);
  double rho = 37 * mu * mu / 2, z = rho + 2 * sqrt(rho * log(1 / delta));
  assert_true(v.value >= z && v.value <= z * (1 + 1e-12));
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, 1.0, &v), DPGD_EINVAL);
  /* the continuous twin answers exactly, as the Gaussian of the same mu does */
  dpgd_accountant *c = dpgd_acct_continuous_twin(a), *g = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(g, mu, 37), DPGD_OK);
  assert_false(dpgd_acct_has_discrete_gaussian(c));
  dpgd_acct_value vc, vg;
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_EXACT, delta, &vc), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(g, DPGD_ACCT_EXACT, delta, &vg), DPGD_OK);
  assert_true(vc.value == vg.value);
  for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++) {
    assert_int_equal(dpgd_acct_epsilon(a, m, delta, &v), DPGD_OK);
    assert_true(v.value >= vc.value);
  }
  dpgd_acct_free(c);
  dpgd_acct_free(g);
  dpgd_acct_free(a);
}

/* Mixed with a Gaussian: zcdp still applies (rho adds); with a Laplace it does not. */
static void test_mixed(void **state)
{
  (void)state;
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, 0.5, 2), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.25, 3), DPGD_OK);
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, 1e-6, &v), DPGD_OK);
  double rho = 2 * 0.125 + 3 * 0.03125, z = rho + 2 * sqrt(rho * log(1e6));
  assert_true(v.value >= z && v.value <= z * (1 + 1e-12));
  assert_true(isnan(dpgd_acct_gdp_mu(a)));
  /* the Renyi curve's mu: 2 rho = 2 * 0.25 + 3 * 0.0625 */
  assert_true(fabs(dpgd_acct_zcdp_mu(a) - sqrt(2 * rho)) <= 1e-15);
  assert_int_equal(dpgd_acct_add_laplace(a, 0.1, 1), DPGD_OK);
  assert_true(isnan(dpgd_acct_zcdp_mu(a)));
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, 1e-6, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_RDP_OPTIMAL, 1e-6, &v), DPGD_OK);
  dpgd_acct_free(a);
}

static void test_serialize_and_input(void **state)
{
  (void)state;
  dpgd_accountant *a = dpgd_acct_alloc(), *b = NULL;
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, 0.7, 5), DPGD_OK);
  void *buf;
  size_t len;
  assert_int_equal(dpgd_acct_serialize(a, &buf, &len), DPGD_OK);
  assert_int_equal(dpgd_acct_deserialize(&b, buf, len), DPGD_OK);
  dpgd_free(buf);
  assert_true(dpgd_acct_has_discrete_gaussian(b));
  dpgd_acct_value va, vb;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_RDP_BALLE, 1e-5, &va), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_RDP_BALLE, 1e-5, &vb), DPGD_OK);
  assert_true(va.value == vb.value);
  assert_int_equal(dpgd_acct_epsilon(b, DPGD_ACCT_EXACT, 1e-5, &vb), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, -1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, INFINITY, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, NAN, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(a, 1, 0), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_discrete_gaussian(NULL, 1, 1), DPGD_EINVAL);
  dpgd_acct_free(a);
  dpgd_acct_free(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_renyi_bound),
      cmocka_unit_test(test_rdp_and_zcdp),
      cmocka_unit_test(test_mixed),
      cmocka_unit_test(test_serialize_and_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
