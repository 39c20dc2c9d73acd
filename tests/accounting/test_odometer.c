/* test_odometer.c -- the per-point odometer (docs/MATH.md "Per-point odometer"): levels,
 * the delta split, boundaries, and a Monte-Carlo check of the
 * two-level counter-example: reporting eps_GDP(sqrt(m) mu, delta) at the level m a point
 * happened to reach has an effective delta well above delta; the odometer's report at
 * (sqrt(m Delta), delta_m) stays within delta. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "dpgd_accounting.h"

static void test_init(void **state)
{
  (void)state;
  dpgd_odometer o;
  /* 112 full steps at sigma 170 plus 8 queries at tau 600: 64 levels. */
  double sigma = 170, tau = 600, mu = sqrt(112 / (sigma * sigma) + 8 / (tau * tau));
  assert_int_equal(dpgd_odometer_init(&o, mu, 1 / (sigma * sigma), 1e-5), DPGD_OK);
  assert_int_equal(o.levels, DPGD_ODOMETER_MAX_LEVELS);
  assert_true((long double)o.levels * o.level_mu2 >= (long double)mu * mu);
  assert_true(o.level_mu2 >= 1 / (sigma * sigma));
  long double sum = 0;
  for (size_t m = 1; m <= o.levels; m++) sum += dpgd_odometer_delta(&o, m);
  assert_true(sum <= 1e-5L && sum > 1e-5L * (1 - 1e-9L));
  assert_true(dpgd_odometer_delta(&o, o.levels) == 1e-5 * 0.9);
  assert_true(dpgd_odometer_delta(&o, 0) == 0 && dpgd_odometer_delta(&o, o.levels + 1) == 0);
  /* Fewer levels than the largest step allows: floor(mu^2 / step), at least 1. */
  assert_int_equal(dpgd_odometer_init(&o, sqrt(5.5) * 0.3, 0.09, 1e-6), DPGD_OK);
  assert_int_equal(o.levels, 5);
  assert_true(o.level_mu2 >= 0.09);
  assert_int_equal(dpgd_odometer_init(&o, 0.1, 0.09, 1e-6), DPGD_OK);
  assert_int_equal(o.levels, 1);
  assert_true(dpgd_odometer_delta(&o, 1) == 1e-6);
  /* Nonsense refused. */
  assert_int_equal(dpgd_odometer_init(&o, 0, 1, 1e-5), DPGD_EINVAL);
  assert_int_equal(dpgd_odometer_init(&o, NAN, 1, 1e-5), DPGD_EINVAL);
  assert_int_equal(dpgd_odometer_init(&o, 1, -1, 1e-5), DPGD_EINVAL);
  assert_int_equal(dpgd_odometer_init(&o, 1, 0.1, 1), DPGD_EINVAL);
}

/* Level m holds totals in ((m-1) Delta, m Delta]; 0 is level 1; above the top is an
 * error; the report is sqrt(m Delta) at delta_m, and eps grows with the level. */
static void test_levels(void **state)
{
  (void)state;
  dpgd_odometer o;
  assert_int_equal(dpgd_odometer_init(&o, 2.385, 0.05, 1e-5), DPGD_OK);
  double D = o.level_mu2;
  size_t m;
  assert_int_equal(dpgd_odometer_level(&o, 0, &m), DPGD_OK);
  assert_int_equal(m, 1);
  for (size_t k = 1; k <= o.levels; k++) {
    double edge = (double)k * D;
    assert_int_equal(dpgd_odometer_level(&o, edge, &m), DPGD_OK);
    assert_int_equal(m, k);
    assert_int_equal(dpgd_odometer_level(&o, nextafter(edge, 0), &m), DPGD_OK);
    assert_int_equal(m, k);
    if (k < o.levels) {
      assert_int_equal(dpgd_odometer_level(&o, nextafter(edge, INFINITY), &m), DPGD_OK);
      assert_int_equal(m, k + 1);
    }
  }
  assert_int_equal(dpgd_odometer_level(&o, nextafter((double)o.levels * D, INFINITY), &m),
                   DPGD_ERANGE);
  assert_int_equal(dpgd_odometer_level(&o, NAN, &m), DPGD_ERANGE);
  assert_int_equal(dpgd_odometer_level(&o, -1e-300, &m), DPGD_ERANGE);
  /* The report at level k uses the smallest statement at or above k. */
  double prev = 0, mu, eps;
  for (size_t k = 1; k <= o.levels; k++) {
    assert_int_equal(dpgd_odometer_report(&o, (double)k * D * 0.999, &m, &mu, &eps), DPGD_OK);
    double best = INFINITY;
    size_t best_j = 0;
    for (size_t j = k; j <= o.levels; j++) {
      double mj = sqrt((double)j * D), ej;
      assert_int_equal(dpgd_gdp_epsilon(mj * (1 + 1e-15), dpgd_odometer_delta(&o, j), &ej),
                       DPGD_OK);
      if (ej < best) best = ej, best_j = j;
    }
    assert_int_equal(m, best_j);
    assert_true(mu >= sqrt((double)m * D) && mu <= sqrt((double)m * D) * (1 + 1e-15));
    assert_true(fabs(eps - best) <= 1e-12 * best);
    double want;
    assert_int_equal(dpgd_gdp_epsilon(mu, dpgd_odometer_delta(&o, m), &want), DPGD_OK);
    assert_true(eps == want);
    assert_true(eps >= prev);
    prev = eps;
  }
  /* Low levels keep their own statement. */
  assert_int_equal(dpgd_odometer_report(&o, 0.5 * D, &m, &mu, &eps), DPGD_OK);
  assert_int_equal(m, 1);
  /* A point that spent everything is reported close to the run: at 0.9 delta. */
  double run;
  assert_int_equal(dpgd_gdp_epsilon(2.385, 1e-5, &run), DPGD_OK);
  assert_true(prev >= run && prev < run * 1.01);
}

/* train/RUN_FORMAT.md's worked example: the paper's eps = 0.3 filtered setting (sigma
 * 170, C 10, B_norm 11200, 8 queries at tau 600, delta 1e-5). A point that spent a
 * quarter of the budget (total 2800/1700^2 + 8/600^2, the queries included) is at level
 * 17 and keeps its own statement; from half of it on (level 33) the top level's is
 * smaller. The values are an independent evaluation (python3, math.erfc and bisection
 * of the GDP curve of docs/MATH.md "The Gaussian curve": 0.147501744552 and 0.205657661775), which the
 * rounded-up report may exceed by at most 1e-6. */
static void test_run_format_example(void **state)
{
  (void)state;
  double sc2 = 1700.0 * 1700.0, q = 8 / (600.0 * 600.0);
  dpgd_odometer o;
  assert_int_equal(dpgd_odometer_init(&o, sqrt(11200 / sc2 + q), 1 / (170.0 * 170.0), 1e-5),
                   DPGD_OK);
  assert_int_equal(o.levels, 64);
  size_t level, m;
  double mu, eps;
  assert_int_equal(dpgd_odometer_report(&o, 2800 / sc2 + q, &m, &mu, &eps), DPGD_OK);
  assert_int_equal(dpgd_odometer_level(&o, 2800 / sc2 + q, &level), DPGD_OK);
  assert_int_equal(level, 17);
  assert_int_equal(m, 17);
  double d17 = dpgd_odometer_delta(&o, 17); /* 0.1 delta / 63, lowered by 2^-30 */
  assert_true(d17 <= 1e-6 / 63 && d17 >= 1e-6 / 63 * (1 - 1e-8));
  assert_true(eps >= 0.147501744552 * (1 - 1e-10) && eps <= 0.147501744552 + 1e-6);
  assert_int_equal(dpgd_odometer_report(&o, 5600 / sc2 + q, &m, &mu, &eps), DPGD_OK);
  assert_int_equal(dpgd_odometer_level(&o, 5600 / sc2 + q, &level), DPGD_OK);
  assert_int_equal(level, 33);
  assert_int_equal(m, 64);
  assert_true(eps >= 0.205657661775 * (1 - 1e-10) && eps <= 0.205657661775 + 1e-6);
}

/* ---- the counter-example ---- */

static uint64_t rng_state = 0x2385u;

static double uniform01(void) /* in (0, 1) */
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) * 0x1p-53;
}

static double normal(void) { return sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01()); }

static double npdf(double x) { return exp(-0.5 * x * x) / sqrt(2 * M_PI); }

/* E[(1 - e^{x - L})_+] for L ~ N(mu^2/2, mu^2) (privacy loss of mu-GDP under P), for
 * any real x: the Gaussian curve of docs/MATH.md extended below eps = 0. */
static double gdp_excess(double mu, double x)
{
  double a = 0.5 * erfc((x / mu - mu / 2) / sqrt(2.0));
  double b = 0.5 * erfc((x / mu + mu / 2) / sqrt(2.0));
  return a - exp(x) * b;
}

typedef struct {
  double a;      /* mu of each release */
  double c;      /* continue to the second release iff Y1 <= c */
  double eps[3]; /* reported eps at level 1 and 2 */
} two_level;

/* Effective delta E_P[(1 - e^{eps(o) - L(o)})_+] of the reported eps, by importance
 * sampling of Y1 (mixture of N(a,1) and N(c+1,1)) with the second release integrated
 * in closed form. *se: its standard error. */
static double effective_delta(const two_level *t, long n, double *se)
{
  double s = 0, s2 = 0, a = t->a, shift = t->c + 1;
  for (long k = 0; k < n; k++) {
    double y = (k & 1) ? a + normal() : shift + normal();
    double w = npdf(y - a) / (0.5 * npdf(y - a) + 0.5 * npdf(y - shift));
    double L1 = a * y - a * a / 2, v;
    if (y > t->c) v = fmax(0, 1 - exp(t->eps[1] - L1));
    else v = gdp_excess(a, t->eps[2] - L1);
    s += w * v;
    s2 += w * v * w * v;
  }
  double mean = s / n;
  *se = sqrt(fmax(0, s2 / n - mean * mean) / n);
  return mean;
}

static void test_counterexample(void **state)
{
  (void)state;
  const double delta = 1e-5, a = 0.3;
  two_level old = {.a = a}, odo = {.a = a};
  /* Old rule: the fixed-level bound at whatever level was reached. The mechanism stops
   * exactly when the first release's loss is large (Y1 above the point where its loss
   * passes eps_1), so level 1 is reported on the very outputs where it is violated. */
  assert_int_equal(dpgd_gdp_epsilon(a, delta, &old.eps[1]), DPGD_OK);
  assert_int_equal(dpgd_gdp_epsilon(sqrt(2) * a, delta, &old.eps[2]), DPGD_OK);
  old.c = odo.c = (old.eps[1] + a * a / 2) / a;
  /* The odometer: levels for a point that spends at most 2 a^2 in steps of a^2. */
  dpgd_odometer o;
  assert_int_equal(dpgd_odometer_init(&o, sqrt(2) * a, a * a, delta), DPGD_OK);
  assert_int_equal(o.levels, 2);
  for (int m = 1; m <= 2; m++) {
    size_t level;
    double mu;
    assert_int_equal(dpgd_odometer_report(&o, m * a * a, &level, &mu, &odo.eps[m]), DPGD_OK);
    assert_true(level >= (size_t)m);
  }
  double se_old, se_new;
  rng_state = 0x2385u;
  double d_old = effective_delta(&old, 2000000, &se_old);
  rng_state = 0x2385u;
  double d_new = effective_delta(&odo, 2000000, &se_new);
  print_message("  effective delta for nominal %g: old rule %.4g (se %.2g), odometer %.4g "
                "(se %.2g)\n",
                delta, d_old, se_old, d_new, se_new);
  assert_true(d_old - 5 * se_old > 1.7e-5); /* the counter-example: about 1.83e-5 */
  assert_true(d_new + 5 * se_new <= delta);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_run_format_example),
      cmocka_unit_test(test_counterexample),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
