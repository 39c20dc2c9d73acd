/* test_acct_extreme.c -- the RDP conversions at extreme delta and eps stay valid upper
 * bounds: for a Gaussian no conversion may report an eps below the exact GDP curve (or
 * a delta below it), and nothing is NaN. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dpgd_accounting.h"

static void test_small_delta(void **state)
{
  (void)state;
  const double mus[] = {0.1, 1, 3, 10};
  const double deltas[] = {1e-12, 1e-16, 1e-20, 1e-40, 1e-60};
  for (size_t i = 0; i < sizeof mus / sizeof *mus; i++) {
    dpgd_accountant *a = dpgd_acct_alloc();
    assert_non_null(a);
    assert_int_equal(dpgd_acct_add_gaussian(a, mus[i], 1), DPGD_OK);
    for (size_t j = 0; j < sizeof deltas / sizeof *deltas; j++) {
      dpgd_acct_value ex, v;
      assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, deltas[j], &ex), DPGD_OK);
      for (int m = DPGD_ACCT_ZCDP; m < DPGD_ACCT_N_METHODS; m++) {
        assert_int_equal(dpgd_acct_epsilon(a, (dpgd_acct_method)m, deltas[j], &v), DPGD_OK);
        if (!(v.value >= ex.value - ex.err))
          fail_msg("mu %g delta %g: %s eps %.10g below exact %.10g", mus[i], deltas[j],
                   dpgd_acct_method_name((dpgd_acct_method)m), v.value, ex.value);
      }
    }
    dpgd_acct_free(a);
  }
}

static void test_delta_at_large_eps(void **state)
{
  (void)state;
  const double epss[] = {1, 8.5, 9.5, 100, 700, 1e305};
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  assert_int_equal(dpgd_acct_add_gaussian(a, 1.0, 1), DPGD_OK);
  for (size_t j = 0; j < sizeof epss / sizeof *epss; j++) {
    dpgd_acct_value ex, v;
    assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, epss[j], &ex), DPGD_OK);
    for (int m = DPGD_ACCT_ZCDP; m < DPGD_ACCT_N_METHODS; m++) {
      int st = dpgd_acct_delta(a, (dpgd_acct_method)m, epss[j], &v);
      if (st) continue; /* a method may decline (n/a), but never answer NaN */
      if (isnan(v.value) || isnan(v.err) || v.value < 0 || v.value > 1)
        fail_msg("eps %g: %s delta %g (err %g)", epss[j],
                 dpgd_acct_method_name((dpgd_acct_method)m), v.value, v.err);
      if (!(v.value >= ex.value - ex.err))
        fail_msg("eps %g: %s delta %.10g below exact %.10g", epss[j],
                 dpgd_acct_method_name((dpgd_acct_method)m), v.value, ex.value);
    }
  }
  dpgd_acct_free(a);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_delta),
      cmocka_unit_test(test_delta_at_large_eps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
