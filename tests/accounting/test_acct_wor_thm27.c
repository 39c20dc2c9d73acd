/* test_acct_wor_thm27.c -- the replace-one without-replacement Gaussian bound
 * (accounting/SAMPLING.md): Wang, Balle & Kasiviswanathan's Theorem 27 taken term by
 * term with Theorem 9, against an independent long-double computation in which the
 * Pearson-Vajda moments B_l = E_Q[(P/Q - 1)^l] come from trapezoidal quadrature of a
 * nonnegative integrand (not from the alternating binomial sum the library uses); and
 * the bound against pairs that dpgd's relation realises (it must lie above them). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"

/* B_l for the base pair N(1, s^2) vs N(0, s^2), l even: int phi(z) (e^{u z - u^2/2} - 1)^l
 * dz with u = 1/s, by the trapezoidal rule (spectrally accurate for this entire, Gaussian-
 * decaying integrand) over z in [-40, l u + 40]. */
static long double chi_moment(double s, int l)
{
  long double u = 1.0L / s, h = 1.0L / 64, v = 0;
  for (long double z = -40; z <= l * u + 40; z += h) {
    long double r = expm1l(u * z - u * u / 2);
    v += expl(-z * z / 2 + l * logl(fabsl(r) + 1e-4000L));
  }
  return v * h / sqrtl(2 * M_PI);
}

/* The bound written out (long double): 1 + g^2 C(a,2) min{4 (e^{1/s^2} - 1), 2 e^{1/s^2}}
 * + sum_{j>=3} g^j C(a,j) min{4 sqrt(B_{2 floor(j/2)} B_{2 ceil(j/2)}), 2 e^{j(j-1)/(2s^2)}},
 * log over (a - 1), never above the base Gaussian's a / (2 s^2). */
static double reference(double g, double s, int a)
{
  long double b[64], e2 = 1.0L / (s * s), sum = 1, c = (long double)a * (a - 1) / 2;
  for (int l = 0; l <= a + 1 && l < 64; l += 2) b[l / 2] = chi_moment(s, l);
  sum += c * g * g * fminl(4 * expm1l(e2), 2 * expl(e2));
  for (int j = 3; j <= a; j++) {
    c = c * (a - j + 1) / j;
    long double t27 = 4 * sqrtl(b[j / 2] * b[(j + 1) / 2]);
    long double t9 = 2 * expl((long double)j * (j - 1) / (2 * s * s));
    sum += c * powl(g, j) * fminl(t27, t9);
  }
  return (double)fminl(logl(sum) / (a - 1), a / (2.0L * s * s));
}

static dpgd_accountant *wor(uint64_t m, uint64_t n, double s)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, m, n, s, DPGD_ACCT_REPLACE_ONE, 1), 0);
  return a;
}

static void test_against_reference(void **state)
{
  (void)state;
  const uint64_t ms[] = {256, 600, 1500, 64}, ns[] = {60000, 6000, 6000, 1000};
  const double ss[] = {2.0, 2.385, 1.7, 3.1}; /* sigma/C of 4 to 6 is s = 2 to 3 */
  for (int i = 0; i < 4; i++) {
    dpgd_accountant *a = wor(ms[i], ns[i], ss[i]);
    double g = dpgd_acct_wor_rate(ms[i], ns[i]);
    for (int al = 2; al <= 40; al += 1) {
      double v = dpgd_acct_rdp_curve(a, al), r = reference(g, ss[i], al);
      if (!(v >= r * (1 - 1e-10) && v <= r * (1 + 1e-8)))
        fail_msg("m %llu n %llu s %g order %d: %.12g, reference %.12g",
                 (unsigned long long)ms[i], (unsigned long long)ns[i], ss[i], al, v, r);
    }
    dpgd_acct_free(a);
  }
}

/* D_alpha between (1-g) N(0,s^2) + g N(x,s^2) and (1-g) N(0,s^2) + g N(y,s^2), by the
 * trapezoidal rule in long double. */
static double renyi3(double g, double s, double x, double y, int al)
{
  long double h = s / 64, v = 0;
  for (long double o = -40 * s - 2; o <= 40 * s + 2; o += h) {
    long double p =
        (1 - g) * expl(-o * o / (2 * s * s)) + g * expl(-(o - x) * (o - x) / (2 * s * s));
    long double q =
        (1 - g) * expl(-o * o / (2 * s * s)) + g * expl(-(o - y) * (o - y) / (2 * s * s));
    v += expl(al * logl(p) + (1 - al) * logl(q));
  }
  return (double)(logl(v * h / (s * sqrtl(2 * M_PI))) / (al - 1));
}

/* dpgd's relation (x_i against the null point, every gradient within C) realises, in
 * units of Delta_r = 2C: means 0, 1 (x_i with the others at -x_i) and 1/2 (the null
 * point); and swapping +g for -g realises 1/2 against -1/2. The bound covers each pair
 * in both orders, and grows with m at fixed n. */
static void test_covers_and_monotone(void **state)
{
  (void)state;
  const double pts[][2] = {{1, 0.5}, {0.5, 1}, {0.5, -0.5}};
  for (int i = 0; i < 2; i++) {
    double s = i ? 2.0 : 2.9;
    dpgd_accountant *a = wor(600, 6000, s), *b = wor(601, 6000, s);
    double g = dpgd_acct_wor_rate(600, 6000);
    for (int al = 2; al <= 48; al += 3) {
      double v = dpgd_acct_rdp_curve(a, al);
      assert_true(dpgd_acct_rdp_curve(b, al) >= v);
      for (int k = 0; k < 3; k++) {
        double d = renyi3(g, s, pts[k][0], pts[k][1], al);
        if (!(v >= d)) fail_msg("s %g order %d pair %d: bound %.10g < %.10g", s, al, k, v, d);
      }
    }
    dpgd_acct_free(a), dpgd_acct_free(b);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_reference),
                                     cmocka_unit_test(test_covers_and_monotone)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
