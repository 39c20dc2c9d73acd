/* test_round.c -- dpgd_round_digits: the printed number is on the private side of the
 * value, has at most the asked digits, and is the nearest such number. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "dpgd_accounting.h"

/* Prints r with d digits, parses it back, and checks it against v. */
static void check_one(double v, int d, int dir)
{
  char s[64];
  double r = dpgd_round_digits(v, d, dir);
  snprintf(s, sizeof s, "%.*g", d, r);
  double x = strtod(s, NULL);
  double tol = 4 * DBL_EPSILON * v;
  if (dir > 0 ? x < v - tol : x > v + tol)
    fail_msg("v = %.17g, %d digits, dir %d: printed %s is on the wrong side", v, d, dir, s);
  /* nearest: one unit in the last printed place moves it past v */
  double ulp = pow(10, floor(log10(fabs(x))) - (d - 1));
  double back = dir > 0 ? x - ulp : x + ulp;
  if (dir > 0 ? back >= v * (1 + 1e-15) : back <= v * (1 - 1e-15))
    fail_msg("v = %.17g, %d digits, dir %d: printed %s is not the nearest", v, d, dir, s);
  /* at most d significant digits: printing again with d digits changes nothing */
  char t[64];
  snprintf(t, sizeof t, "%.*g", d, x);
  if (strtod(t, NULL) != x) fail_msg("%s has more than %d digits", s, d);
}

static void test_random_values(void **state)
{
  (void)state;
  unsigned long long z = 88172645463325252ULL;
  for (int i = 0; i < 200000; i++) {
    z ^= z << 13, z ^= z >> 7, z ^= z << 17;
    double u = (double)(z >> 11) / 9007199254740992.0;
    double v = pow(10, -12 + 24 * u);
    int d = 1 + (int)(z % 12);
    check_one(v, d, 1);
    check_one(v, d, -1);
  }
}

/* Values whose last digit's unit 10^e is below DBL_MIN (an error bound of 1.6e-322 once
 * printed as -nan): finite, and printed on the private side at every digit count. */
static void test_tiny_values(void **state)
{
  (void)state;
  const double vs[] = {DBL_TRUE_MIN, 3 * DBL_TRUE_MIN, 1.58e-322, 7.0236e-308,
                       DBL_MIN,      2.5e-300,         1e-295,    3.3e-290};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    for (int d = 1; d <= 17; d++)
      for (int dir = -1; dir <= 1; dir += 2) {
        double r = dpgd_round_digits(vs[i], d, dir);
        char t[64];
        snprintf(t, sizeof t, "%.*g", d, r);
        double x = strtod(t, NULL);
        double tol = 4 * DBL_EPSILON * vs[i]; /* the function's documented slack */
        if (!isfinite(r) || (dir > 0 ? x < vs[i] - tol : x > vs[i] + tol) || x < 0)
          fail_msg("v = %.17g, %d digits, dir %d: %s", vs[i], d, dir, t);
      }
}

/* v rounded to d digits in direction dir, printed with "%.<d>g", is the string want. */
static void assert_shows(double v, int d, int dir, const char *want)
{
  char s[32];
  snprintf(s, sizeof s, "%.*g", d, dpgd_round_digits(v, d, dir));
  assert_string_equal(s, want);
}

static void test_known_values(void **state)
{
  (void)state;
  /* the paper's eps = 1.0 setting: 0.74513823... shows as 0.7452, not 0.7451 */
  assert_shows(0.7451382356, 4, 1, "0.7452");
  assert_shows(0.7451382356, 4, -1, "0.7451");
  /* a value that is already a short decimal stays as it is, also when its binary
   * value is slightly above the decimal */
  assert_shows(0.2033, 6, 1, "0.2033");
  assert_shows(0.3007, 6, -1, "0.3007");
  assert_shows(0.5, 6, 1, "0.5");
  assert_shows(22883.17861, 3, -1, "2.28e+04");
  assert_shows(9.96, 2, 1, "10");
  /* unchanged: zero, negatives, NaN, infinity, nonsense digit counts */
  assert_true(dpgd_round_digits(0, 4, 1) == 0);
  assert_true(dpgd_round_digits(-1.5, 4, 1) == -1.5);
  assert_true(isnan(dpgd_round_digits(NAN, 4, 1)));
  assert_true(isinf(dpgd_round_digits(INFINITY, 4, 1)));
  assert_true(dpgd_round_digits(0.123456, 0, 1) == 0.123456);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_values),
      cmocka_unit_test(test_tiny_values),
      cmocka_unit_test(test_known_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
