/* test_acct_property.c -- every method of every mechanism that 'dpgd account' takes (other
 * than the Poisson-subsampled Gaussian), swept over extreme parameters, against LOWER
 * references computed here independently of the library (glibc exp/log/erf only):
 * no printed value below the truth, no 0 unless truly 0, n/a only with a reason, and
 * calibration on the private side. References (accounting/GDP.md section 5):
 *   Gaussian (mu-GDP): delta(z) = Q(z) - phi(z) R(z + mu), z = (eps - mu^2/2)/mu, R the
 *     Mills ratio; for z >= 0, Q(z) > phi(z) 2/(z + sqrt(z^2 + 4)) (Birnbaum 1942) and
 *     R(x) < 4/(3x + sqrt(x^2 + 8)) (Sampford 1953), a lower bound of delta in closed form;
 *   randomized response (k-fold, eps0): delta(eps) >= p^k (1 - e^{eps - k eps0}), the
 *     all-"yes" atom, p = 1/(1 + e^{-eps0});
 *   one Laplace release: delta(eps) = 1 - e^{(eps - a)/2} (docs/MATH.md "Mechanisms");
 *   one discrete pair: delta(eps) = max over directions of sum_i (p_i - e^eps q_i)_+. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_accounting.h"

/* log of the lower bound of the GDP delta at z >= 0 (-inf where the bound is <= 0). */
static double gdp_log_delta_lo(double mu, double z)
{
  long double x = (long double)z + mu;
  long double b = 2.0L / (z + sqrtl((long double)z * z + 4));
  long double s = 4.0L / (3 * x + sqrtl(x * x + 8));
  long double d = b - s;
  if (!(d > 0)) return -INFINITY;
  return (double)(-0.5L * z * z - 0.918938533204672742L + logl(d)) - 1e-12 * (1 + z * z);
}

/* A lower bound of eps(delta) of mu-GDP: mu (mu/2 + z) at the largest z found (bisection)
 * whose lower delta is still >= delta, rounded down; 0 where none is (no reference). */
static double gdp_eps_lo(double mu, double delta)
{
  double ld = log(delta), lo = 0, hi = sqrt(-2 * ld) + 2;
  if (!(gdp_log_delta_lo(mu, 0) >= ld)) return 0;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if (gdp_log_delta_lo(mu, mid) >= ld) lo = mid;
    else hi = mid;
  }
  long double e = (long double)mu * (0.5L * mu + lo);
  return (double)(e * (1 - 1e-15L));
}

/* A lower bound of delta(eps) of mu-GDP (0 where the reference says nothing). */
static double gdp_delta_lo(double mu, double eps)
{
  long double z = ((long double)eps - 0.5L * mu * mu) / mu;
  z = z * (1 + 1e-15L) + 1e-300L; /* larger z: smaller delta */
  if (!(z >= 0) || !isfinite((double)z)) return 0;
  return exp(gdp_log_delta_lo(mu, (double)z));
}

/* Checks one answer against the lower reference ref (0: none) and the zero rule. */
static void check_value(const char *what, int m, int st, const dpgd_acct_value *v, double ref,
                        int may_be_zero)
{
  const char *name = dpgd_acct_method_name((dpgd_acct_method)m);
  if (st) {
    const char *why = dpgd_error_last();
    if (!why || !why[0]) fail_msg("%s: %s is n/a without a reason", what, name);
    dpgd_error_clear();
    return;
  }
  if (!(v->value >= ref) || isnan(v->err) || !(v->err >= 0))
    fail_msg("%s: %s printed %.17g below the lower reference %.17g (err %g)", what, name,
             v->value, ref, v->err);
  if (v->value == 0 && !may_be_zero)
    fail_msg("%s: %s printed 0 for a mechanism that is not that private", what, name);
}

static void test_gaussian_sweep(void **state)
{
  (void)state;
  const uint64_t counts[] = {1, 1000, 1000000000000ull};
  const double deltas[] = {1e-300, 1e-100, 1e-10, 1e-5, 0.1, 0.5};
  const double epss[] = {0, 1e-3, 1, 30, 1e6};
  int checked = 0;
  for (double ls = -12; ls <= 12; ls += 1.5) {
    double sigma = pow(10, ls) * 1.37;
    for (size_t c = 0; c < 3; c++) {
      dpgd_accountant *a = dpgd_acct_alloc();
      assert_int_equal(dpgd_acct_add_gaussian(a, 1 / sigma, counts[c]), DPGD_OK);
      double mu = sqrt((double)counts[c]) / sigma;
      char what[160];
      for (size_t j = 0; j < 6; j++) {
        double ref = gdp_eps_lo(mu, deltas[j]);
        /* eps = 0 is true iff delta >= delta(0) = erf(mu / (2 sqrt 2)) */
        int zero_ok = deltas[j] >= erf(mu / (2 * M_SQRT2)) * (1 - 1e-9);
        snprintf(what, sizeof what, "sigma %g count %llu delta %g", sigma,
                 (unsigned long long)counts[c], deltas[j]);
        for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
          if (m == DPGD_ACCT_RDP_OPTIMAL && (j % 2 || c == 1)) continue; /* time */
          dpgd_acct_value v = {NAN, NAN};
          int st = dpgd_acct_epsilon(a, (dpgd_acct_method)m, deltas[j], &v);
          if (m == DPGD_ACCT_EXACT && st && mu < 1e150)
            fail_msg("%s: exact failed (%s)", what, dpgd_error_last());
          check_value(what, m, st, &v, ref, zero_ok);
          checked += ref > 0;
        }
      }
      for (size_t j = 0; j < 5; j++) {
        double ref = gdp_delta_lo(mu, epss[j]);
        snprintf(what, sizeof what, "sigma %g count %llu eps %g", sigma,
                 (unsigned long long)counts[c], epss[j]);
        for (int m = 0; m < DPGD_ACCT_RDP_OPTIMAL; m++) {
          dpgd_acct_value v = {NAN, NAN};
          int st = dpgd_acct_delta(a, (dpgd_acct_method)m, epss[j], &v);
          check_value(what, m, st, &v, ref, 0);
        }
      }
      dpgd_acct_free(a);
    }
  }
  assert_true(checked > 100); /* the references said something */
}

/* The worked numbers of issue 29: sigma 1e-9 (truth mu^2/2 + 4.26 mu) and 1e-80. */
static void test_gaussian_huge_mu(void **state)
{
  (void)state;
  const double sigmas[] = {1e-9, 3.1e-20, 1e-80};
  for (int i = 0; i < 3; i++) {
    double mu = 1 / sigmas[i], e;
    assert_int_equal(dpgd_gdp_epsilon(mu, 1e-5, &e), DPGD_OK);
    assert_true(e >= gdp_eps_lo(mu, 1e-5) && e > 0.5 * mu * mu);
    assert_true(dpgd_gdp_delta(mu, 1) > 0.99); /* eps 1 is nothing against mu 1e9 */
  }
}

/* k-fold randomized response at eps0 up to 1e3 and counts up to 1e12. */
static void test_rr_sweep(void **state)
{
  (void)state;
  const double eps0s[] = {1e-6, 0.5, 3, 40, 800, 1000};
  const uint64_t counts[] = {1, 3, 1000000, 1000000000000ull};
  const double deltas[] = {1e-300, 1e-5, 0.3};
  for (size_t i = 0; i < 6; i++)
    for (size_t c = 0; c < 4; c++) {
      dpgd_accountant *a = dpgd_acct_alloc();
      assert_int_equal(dpgd_acct_add_rr(a, eps0s[i], counts[c]), DPGD_OK);
      double k = (double)counts[c], lpk = -k * log1p(exp(-eps0s[i])); /* log p^k */
      char what[160];
      for (size_t j = 0; j < 3; j++) {
        double ref = 0, ld = log(deltas[j]);
        if (ld < lpk) ref = (k * eps0s[i] + log1p(-exp(ld - lpk))) * (1 - 1e-12);
        if (ref < 0) ref = 0;
        snprintf(what, sizeof what, "rr eps0 %g count %g delta %g", eps0s[i], k, deltas[j]);
        for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
          if (m == DPGD_ACCT_ZCDP || (m == DPGD_ACCT_RDP_OPTIMAL && c > 1)) continue;
          dpgd_acct_value v = {NAN, NAN};
          int st = dpgd_acct_epsilon(a, (dpgd_acct_method)m, deltas[j], &v);
          if (m == DPGD_ACCT_EXACT && st)
            fail_msg("%s: exact did not answer (%s)", what, dpgd_error_last());
          /* eps = 0 needs delta >= TV of k releases >= TV of one = tanh(eps0/2) */
          check_value(what, m, st, &v, ref, deltas[j] >= tanh(0.5 * eps0s[i]) * (1 - 1e-9));
        }
        /* delta at eps = eps0 k / 2: at least the all-"yes" atom's share */
        double eps = 0.5 * k * eps0s[i], dref = exp(lpk) * -expm1(eps - k * eps0s[i]);
        dpgd_acct_value v = {NAN, NAN};
        int st = dpgd_acct_delta(a, DPGD_ACCT_EXACT, eps, &v);
        if (st) fail_msg("%s: exact delta did not answer (%s)", what, dpgd_error_last());
        check_value(what, DPGD_ACCT_EXACT, st, &v, dref * (1 - 1e-12), 0);
      }
      dpgd_acct_free(a);
    }
}

/* One Laplace release and one discrete pair: exact closed forms as references. */
static void test_laplace_discrete(void **state)
{
  (void)state;
  const double as[] = {1e-6, 0.3, 7, 300, 1e3};
  const double deltas[] = {1e-300, 1e-5, 0.2};
  for (size_t i = 0; i < 5; i++) {
    dpgd_accountant *a = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_laplace(a, as[i], 1), DPGD_OK);
    for (size_t j = 0; j < 3; j++) {
      double ref = fmax(0, (as[i] + 2 * log1p(-deltas[j])) * (1 - 1e-12));
      char what[96];
      snprintf(what, sizeof what, "laplace a %g delta %g", as[i], deltas[j]);
      for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
        if (m == DPGD_ACCT_ZCDP) continue;
        dpgd_acct_value v = {NAN, NAN};
        int st = dpgd_acct_epsilon(a, (dpgd_acct_method)m, deltas[j], &v);
        check_value(what, m, st, &v, ref, ref == 0);
      }
    }
    dpgd_acct_free(a);
  }
  /* a pair with a loss of 700: e^{700} q is near the double range */
  const double p[3] = {0.5, 0.5 - 1e-300, 1e-300}, q[3] = {0.5 - exp(-700), 0.5, exp(-700)};
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_discrete(a, p, q, 3, 1), DPGD_OK);
  for (double eps = 0; eps < 800; eps += 61.7) {
    double d0 = 0, d1 = 0;
    for (int i = 0; i < 3; i++) {
      d0 += fmax(0, p[i] - exp(eps) * q[i]);
      d1 += fmax(0, q[i] - exp(eps) * p[i]);
    }
    dpgd_acct_value v = {NAN, NAN};
    int st = dpgd_acct_delta(a, DPGD_ACCT_EXACT, eps, &v);
    check_value("discrete", 0, st, &v, fmax(d0, d1) * (1 - 1e-9), fmax(d0, d1) == 0);
  }
  dpgd_acct_free(a);
}

/* Calibration: an answer or a one-line reason at eps 1e-300 and 1e300, and the
 * calibrated Gaussian's lower reference never above the target. */
static void test_calibration(void **state)
{
  (void)state;
  const double targets[] = {1e-300, 1e-3, 1, 50, 1e300};
  for (size_t i = 0; i < 5; i++)
    for (int m = 0; m < DPGD_ACCT_RDP_OPTIMAL; m++) {
      double sigma = NAN;
      int st = dpgd_calibrate_sigma((dpgd_acct_method)m, targets[i], 1e-5, 10, NULL, &sigma);
      if (st) {
        const char *why = dpgd_error_last();
        if (m <= DPGD_ACCT_ZCDP || !why[0] || strstr(why, "finite"))
          fail_msg("calibrate %s eps %g: %s", dpgd_acct_method_name((dpgd_acct_method)m),
                   targets[i], why);
        dpgd_error_clear();
        continue;
      }
      double mu = sqrt(10.0) / sigma;
      if (!(sigma > 0) || !(gdp_eps_lo(mu, 1e-5) <= targets[i]))
        fail_msg("calibrate %s eps %g: sigma %g gives eps >= %g",
                 dpgd_acct_method_name((dpgd_acct_method)m), targets[i], sigma,
                 gdp_eps_lo(mu, 1e-5));
      /* eps 1e-300 is met only where delta(0) <= delta: erf(mu / (2 sqrt 2)) <= 1e-5 */
      if (targets[i] < 1e-100 && !(erf(mu / (2 * M_SQRT2)) <= 1e-5 * (1 + 1e-9)))
        fail_msg("calibrate %s eps 1e-300: sigma %g is not private enough",
                 dpgd_acct_method_name((dpgd_acct_method)m), sigma);
    }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gaussian_sweep), cmocka_unit_test(test_gaussian_huge_mu),
      cmocka_unit_test(test_rr_sweep),       cmocka_unit_test(test_laplace_discrete),
      cmocka_unit_test(test_calibration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
