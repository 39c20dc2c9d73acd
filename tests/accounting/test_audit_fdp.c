/* test_audit_fdp.c -- the f-DP one-run bound (Mahloujifar, Melis & Chaudhuri 2025;
 * train/AUDIT.md "The f-DP bound") on the idealised Gaussian game, simulated here with
 * closed-form scores: canary j in with probability 1/2, score N(mu S_j, 1); the r/2
 * highest scores guessed in, the r/2 lowest out. The bound must stay below the true eps
 * (at its confidence) and rise above it when the noise is halved. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "dpgd_accounting.h"

typedef struct {
  double s;
  int in;
} scored;

static int by_score(const void *a, const void *b)
{
  double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
  return (x < y) - (x > y); /* descending */
}

/* One game: m canaries, true mu; the correct guesses among the r/2 top and r/2 bottom. */
static size_t play(gsl_rng *g, size_t m, size_t r, double mu, scored *buf)
{
  for (size_t j = 0; j < m; j++) {
    buf[j].in = (int)gsl_rng_uniform_int(g, 2);
    buf[j].s = gsl_ran_gaussian(g, 1.0) + mu * buf[j].in;
  }
  qsort(buf, m, sizeof *buf, by_score);
  size_t v = 0;
  for (size_t k = 0; k < r / 2; k++) v += buf[k].in + !buf[m - 1 - k].in;
  return v;
}

/* Expected correct guesses of that rule: threshold t with P[score > t] = r / (2m). */
static size_t expected_correct(size_t m, size_t r, double mu)
{
  double lo = -40, hi = 40, want = (double)r / (2.0 * (double)m);
  for (int it = 0; it < 200; it++) {
    double t = 0.5 * (lo + hi);
    double tail = 0.5 * (gsl_cdf_ugaussian_Q(t - mu) + gsl_cdf_ugaussian_Q(t));
    if (tail > want) lo = t;
    else hi = t;
  }
  double a = gsl_cdf_ugaussian_Q(lo - mu), b = gsl_cdf_ugaussian_Q(lo);
  return (size_t)floor((double)r * a / (a + b));
}

/* The paper's Table 1 setting: mu = 1 (sigma 1, true eps 4.38 at delta 1e-5), 1e5
 * canaries, at the expected counts and the best guess count of a grid. The f-DP bound
 * is below the truth, well above Steinke et al.'s (capped by its 2 m delta term). */
static void test_table1_expected_counts(void **state)
{
  (void)state;
  const size_t m = 100000, rs[] = {100, 200, 500, 1000, 2000, 5000};
  double truth, best_f = 0, best_s = 0;
  assert_int_equal(dpgd_gdp_epsilon(1.0, 1e-5, &truth), DPGD_OK);
  for (size_t k = 0; k < sizeof rs / sizeof *rs; k++) {
    size_t v = expected_correct(m, rs[k], 1.0);
    double ef, es;
    assert_int_equal(dpgd_audit_fdp_eps_lower(m, rs[k], v, 1e-5, 0.95, &ef), DPGD_OK);
    assert_int_equal(dpgd_audit_eps_lower(m, rs[k], v, 1e-5, 0.95, &es), DPGD_OK);
    best_f = fmax(best_f, ef), best_s = fmax(best_s, es);
  }
  printf("mu 1, m 1e5: truth %.3f, f-DP %.3f, Steinke et al. %.3f\n", truth, best_f, best_s);
  assert_true(truth > 4.37 && truth < 4.38);
  assert_true(best_f < truth);
  assert_true(best_f > 3.0);
  assert_true(best_s < 2.9);
  assert_true(best_f > best_s + 0.4);
}

/* 200 seeds of the game with m 2000 and the guess count of the rule for mu 1: the true
 * mu-GDP claim is rejected in at most 5% of them (in fact none); with the noise halved
 * (mu 2) eps(mu = 1) is exceeded in nearly all. */
static void test_game_validity_and_power(void **state)
{
  (void)state;
  const size_t m = 2000, seeds = 200;
  size_t r;
  double expect;
  assert_int_equal(dpgd_audit_guess_rule(m, 1.0, 1e-5, 0.95, 1, &r, &expect), DPGD_OK);
  printf("rule: r %zu, expected f-DP bound %.3f\n", r, expect);
  assert_true(r >= 2 && r % 2 == 0 && r <= m && expect > 1);
  scored *buf = malloc(m * sizeof *buf);
  gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
  assert_non_null(buf);
  double truth;
  assert_int_equal(dpgd_gdp_epsilon(1.0, 1e-5, &truth), DPGD_OK);
  size_t above = 0, caught = 0;
  for (size_t s = 0; s < seeds; s++) {
    gsl_rng_set(g, 1000 + s);
    double e;
    assert_int_equal(dpgd_audit_fdp_eps_lower(m, r, play(g, m, r, 1.0, buf), 1e-5, 0.95, &e),
                     DPGD_OK);
    above += e > truth;
    assert_int_equal(dpgd_audit_fdp_eps_lower(m, r, play(g, m, r, 2.0, buf), 1e-5, 0.95, &e),
                     DPGD_OK);
    caught += e > truth;
  }
  printf("mu 1: %zu of %zu above the truth; mu 2: %zu caught\n", above, seeds, caught);
  assert_true(above <= seeds / 20);
  assert_true(caught >= seeds * 9 / 10);
  gsl_rng_free(g);
  free(buf);
}

/* The subsampled family at q = 1 and one step is the Gaussian family (up to its grid's
 * envelope, a weaker claim): its sigma is at least 1 / mu_lower and close to it. */
static void test_sg_family_matches_gaussian(void **state)
{
  (void)state;
  const size_t m = 2000, r = 200, v = 185;
  double mu, sigma, eps, eg;
  assert_int_equal(dpgd_audit_fdp_mu_lower(m, r, v, 0.95, &mu), DPGD_OK);
  assert_int_equal(dpgd_audit_fdp_eps_lower(m, r, v, 1e-5, 0.95, &eg), DPGD_OK);
  assert_int_equal(dpgd_audit_fdp_sg_lower(m, r, v, 1.0, 1, 1e-5, 0.95, &sigma, &eps), DPGD_OK);
  printf("mu %.4f (1/mu %.4f, eps %.4f); sg sigma %.4f eps %.4f\n", mu, 1 / mu, eg, sigma, eps);
  assert_true(mu > 0.5);
  assert_true(sigma >= 1 / mu * (1 - 1e-6));
  assert_true(sigma < 1.05 / mu);
  assert_true(eps <= eg * (1 + 1e-6) && eps > 0.9 * eg);
  /* The claimed curve itself: rejected for a weaker claim, not for a stronger. */
  dpgd_accountant *a = dpgd_acct_alloc();
  int rej;
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.5 * mu, 1), DPGD_OK);
  assert_int_equal(dpgd_audit_fdp_profile_reject(m, r, v, a, 10, 0.95, &rej), DPGD_OK);
  assert_int_equal(rej, 1);
  dpgd_acct_free(a);
  a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(a, 1.5 * mu, 1), DPGD_OK);
  assert_int_equal(dpgd_audit_fdp_profile_reject(m, r, v, a, 20, 0.95, &rej), DPGD_OK);
  assert_int_equal(rej, 0);
  dpgd_acct_free(a);
}

/* More correct guesses never lower the bound; no guess or chance-level guesses give 0. */
static void test_monotone_and_edges(void **state)
{
  (void)state;
  double prev = 0, e;
  for (size_t v = 50; v <= 100; v += 5) {
    assert_int_equal(dpgd_audit_fdp_eps_lower(1000, 100, v, 1e-5, 0.95, &e), DPGD_OK);
    assert_true(e >= prev);
    prev = e;
  }
  assert_int_equal(dpgd_audit_fdp_eps_lower(1000, 100, 50, 1e-5, 0.95, &e), DPGD_OK);
  assert_true(e == 0);
  assert_int_equal(dpgd_audit_fdp_eps_lower(1000, 0, 0, 1e-5, 0.95, &e), DPGD_OK);
  assert_true(e == 0);
  int rej;
  double mu = 1;
  assert_int_equal(dpgd_audit_fdp_eps_lower(10, 20, 5, 1e-5, 0.95, &e), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_fdp_eps_lower(100, 20, 25, 1e-5, 0.95, &e), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_fdp_eps_lower(100, 20, 5, 0, 0.95, &e), DPGD_EINVAL);
  assert_int_equal(dpgd_audit_fdp_reject(100, 20, 5, NULL, &mu, 1.0, &rej), DPGD_EINVAL);
  double s;
  assert_int_equal(dpgd_audit_fdp_sg_lower(100, 20, 5, 0, 10, 1e-5, 0.95, &s, &e), DPGD_EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table1_expected_counts),
      cmocka_unit_test(test_game_validity_and_power),
      cmocka_unit_test(test_sg_family_matches_gaussian),
      cmocka_unit_test(test_monotone_and_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
