/* test_accounting.c -- the Gaussian curve, the accountant object, zCDP, serialisation and
 * calibration, against oracles computed independently here: long-double erfc, direct
 * numerical integration of the privacy-loss distribution, the trade-off curve, a grid
 * minimisation of the zCDP conversion (docs/MATH.md: Gaussian curve, zCDP, calibration). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>

#include "acct_internal.h"
#include "dpgd_accounting.h"

/* delta(eps) for mu-GDP in long double (an independent evaluation, no log space). */
static long double gdp_delta_ld(long double mu, long double eps)
{
  long double t1 = 0.5L * erfcl((eps / mu - mu / 2) / sqrtl(2.0L));
  long double t2 = expl(eps) * 0.5L * erfcl((eps / mu + mu / 2) / sqrtl(2.0L));
  return t1 - t2;
}

/* delta(eps) = E[(1 - e^{eps - L})_+], L ~ N(mu^2/2, mu^2) (docs/MATH.md "Mechanisms"), by
 * GSL's QAGIU over L in (eps, inf): an oracle that shares no code with the library. */
typedef struct {
  double mu, eps;
} pld_par;
static double pld_integrand(double l, void *vp)
{
  const pld_par *p = vp;
  double z = (l - p->mu * p->mu / 2) / p->mu;
  return -expm1(p->eps - l) * exp(-z * z / 2) / (p->mu * sqrt(2 * M_PI));
}
static double gdp_delta_integral(double mu, double eps)
{
  gsl_integration_workspace *w = gsl_integration_workspace_alloc(1000);
  pld_par p = {mu, eps};
  gsl_function F = {pld_integrand, &p};
  double r, err;
  gsl_integration_qagiu(&F, eps, 0, 1e-12, 1000, w, &r, &err);
  gsl_integration_workspace_free(w);
  return r;
}

static void test_gdp_delta_vs_long_double(void **state)
{
  (void)state;
  const double mus[] = {1e-3, 0.0317, 0.1, 0.5, 1.0, 2.385, 7.3, 20};
  for (size_t i = 0; i < sizeof mus / sizeof *mus; i++) {
    for (double eps = 0; eps < 30 * mus[i] + 5; eps += mus[i] * 0.37 + 0.013) {
      long double ref = gdp_delta_ld(mus[i], eps);
      if (ref < 1e-15L) break; /* long double cancellation limit */
      double d = dpgd_gdp_delta(mus[i], eps);
      double rel = fabs(d - (double)ref) / (double)ref;
      if (rel > 1e-10)
        fail_msg("mu=%g eps=%g: %.17g vs %.17Lg (rel %g)", mus[i], eps, d, ref, rel);
      assert_true(d >= (double)ref * (1 - 1e-14)); /* rounded up */
    }
  }
}

static void test_gdp_delta_vs_integral(void **state)
{
  (void)state;
  const double mus[] = {0.05, 0.5, 1.7, 6.0};
  for (size_t i = 0; i < 4; i++)
    for (double eps = 0.01; eps < 4 * mus[i] + mus[i] * mus[i]; eps += 0.29 * mus[i] + 0.05) {
      double ref = gdp_delta_integral(mus[i], eps);
      if (ref < 1e-200) break;
      double d = dpgd_gdp_delta(mus[i], eps);
      if (fabs(d - ref) > 1e-8 * ref)
        fail_msg("mu=%g eps=%g: %.17g vs %.17g", mus[i], eps, d, ref);
    }
}

/* eps(delta) over mu in [1e-3, 20] and delta in [1e-12, 0.5]: the closed form at the
 * answer meets delta, and a slightly smaller eps (1e-10 relative) does not. */
static void test_gdp_epsilon_inverse(void **state)
{
  (void)state;
  const double mus[] = {1e-3, 0.01, 0.0623, 0.3, 1.0, 3.3, 10, 20};
  const double deltas[] = {1e-12, 1e-9, 1e-5, 1e-3, 0.1, 0.5};
  for (size_t i = 0; i < 8; i++)
    for (size_t j = 0; j < 6; j++) {
      double eps;
      assert_int_equal(dpgd_gdp_epsilon(mus[i], deltas[j], &eps), DPGD_OK);
      assert_true(isfinite(eps) && eps >= 0);
      if (eps == 0) {
        assert_true(dpgd_gdp_delta(mus[i], 0) <= deltas[j]);
        continue;
      }
      long double below = gdp_delta_ld(mus[i], eps * (1 - 1e-10));
      long double at = gdp_delta_ld(mus[i], eps);
      if (!(at <= deltas[j] * (1 + 1e-13)))
        fail_msg("mu=%g delta=%g eps=%.17g: delta(eps)=%.17Lg", mus[i], deltas[j], eps, at);
      if (below > 1e-15L && !(below > deltas[j]))
        fail_msg("mu=%g delta=%g: eps %.17g is not tight", mus[i], deltas[j], eps);
    }
}

static void test_gdp_mu_inverse(void **state)
{
  (void)state;
  const double epss[] = {0.05, 0.3, 1.0, 2.385, 8};
  const double deltas[] = {1e-10, 1e-5, 0.01};
  for (size_t i = 0; i < 5; i++)
    for (size_t j = 0; j < 3; j++) {
      double mu, e;
      assert_int_equal(dpgd_gdp_mu(epss[i], deltas[j], &mu), DPGD_OK);
      assert_true(dpgd_gdp_delta(mu, epss[i]) <= deltas[j]);
      assert_true(gdp_delta_ld(mu * (1 + 1e-9), epss[i]) > deltas[j]);
      assert_int_equal(dpgd_gdp_epsilon(mu, deltas[j], &e), DPGD_OK);
      assert_true(e <= epss[i] * (1 + 1e-12));
    }
}

/* delta(eps) = sup_alpha 1 - e^eps alpha - beta(alpha) (the trade-off curve's dual). */
static void test_gdp_tradeoff_dual(void **state)
{
  (void)state;
  const double mu = 1.37, eps = 0.81;
  double best = 0;
  for (int i = 1; i < 200000; i++) {
    double alpha = i / 200000.0;
    double v = 1 - exp(eps) * alpha - dpgd_gdp_tradeoff(mu, alpha);
    if (v > best) best = v;
  }
  double d = dpgd_gdp_delta(mu, eps);
  assert_true(best <= d);
  assert_true(best > d * (1 - 1e-6));
  /* symmetric: beta(beta(alpha)) = alpha */
  assert_true(fabs(dpgd_gdp_tradeoff(mu, dpgd_gdp_tradeoff(mu, 0.123)) - 0.123) < 1e-12);
  assert_true(dpgd_gdp_tradeoff(0, 0.3) - 0.7 < 1e-15);
}

/* Large eps and large mu: finite, no overflow; delta(0) is the TV distance. */
static void test_gdp_extremes(void **state)
{
  (void)state;
  assert_true(dpgd_gdp_delta(1, 50) >= 0 && dpgd_gdp_delta(1, 50) < 1e-300);
  assert_true(dpgd_gdp_delta(50, 50) > 0.9);
  double tv = erf(0.25 / M_SQRT2);
  assert_true(fabs(dpgd_gdp_delta(0.5, 0) - tv) < 1e-13 * tv);
  double eps;
  assert_int_equal(dpgd_gdp_epsilon(50, 1e-5, &eps), DPGD_OK);
  assert_true(isfinite(eps) && eps > 1250);
  assert_int_equal(dpgd_gdp_epsilon(1, 0, &eps), DPGD_EINVAL);
  assert_int_equal(dpgd_gdp_epsilon(1, 1, &eps), DPGD_EINVAL);
  assert_int_equal(dpgd_gdp_epsilon(NAN, 0.1, &eps), DPGD_EINVAL);
  assert_true(isnan(dpgd_gdp_delta(-1, 0.5)));
}

static void test_gdp_monotone_convex(void **state)
{
  (void)state;
  const double mu = 0.9, h = 0.01;
  double prev2 = dpgd_gdp_delta(mu, 0), prev = dpgd_gdp_delta(mu, h);
  for (double eps = 2 * h; eps < 6; eps += h) {
    double d = dpgd_gdp_delta(mu, eps);
    assert_true(d <= prev);
    assert_true(d - 2 * prev + prev2 >= -1e-15);
    prev2 = prev;
    prev = d;
  }
}

static void test_accountant_gaussian_composition(void **state)
{
  (void)state;
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  dpgd_acct_value v;
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_OK);
  assert_true(v.value == 0);
  const double mus[] = {0.1, 0.25, 0.1, 0.037};
  const uint64_t cnt[] = {3, 7, 2, 100};
  double s = 0;
  for (int i = 0; i < 4; i++) {
    assert_int_equal(dpgd_acct_add_gaussian(a, mus[i], cnt[i]), DPGD_OK);
    s += cnt[i] * mus[i] * mus[i];
  }
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.037, 5), DPGD_OK); /* merges */
  s += 5 * 0.037 * 0.037;
  assert_int_equal(dpgd_acct_n_entries(a), 4);
  assert_int_equal(dpgd_acct_n_releases(a), 117);
  assert_true(fabs(dpgd_acct_gdp_mu(a) - sqrt(s)) < 1e-15);
  double eps;
  assert_int_equal(dpgd_gdp_epsilon(sqrt(s), 1e-5, &eps), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &v), DPGD_OK);
  assert_true(fabs(v.value - eps) <= 1e-12 * eps);
  assert_true(v.err >= 0);
  assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, eps, &v), DPGD_OK);
  assert_true(v.value <= 1e-5 * (1 + 1e-12) && v.value > 1e-5 * (1 - 1e-9));
  /* clone answers the same and is independent */
  dpgd_accountant *c = dpgd_acct_clone(a);
  assert_int_equal(dpgd_acct_add_gaussian(c, 1, 1), DPGD_OK);
  assert_int_equal(dpgd_acct_n_entries(a), 4);
  assert_int_equal(dpgd_acct_n_entries(c), 5);
  /* bad input */
  assert_int_equal(dpgd_acct_add_gaussian(a, NAN, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_gaussian(a, -1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_gaussian(a, 1, 0), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 0, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, -0.1, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_EXACT, NAN, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_epsilon(a, (dpgd_acct_method)9, 1e-5, &v), DPGD_EINVAL);
  assert_int_equal(dpgd_acct_add_laplace(c, 0.5, 1), DPGD_OK);
  assert_true(isnan(dpgd_acct_gdp_mu(c)));
  assert_int_equal(dpgd_acct_epsilon(c, DPGD_ACCT_ZCDP, 1e-5, &v), DPGD_EINVAL);
  dpgd_acct_free(c);
  dpgd_acct_free(a);
  dpgd_acct_free(NULL);
}

static void test_method_names(void **state)
{
  (void)state;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
    assert_int_equal(dpgd_acct_method_find(dpgd_acct_method_name((dpgd_acct_method)m)), m);
  assert_int_equal(dpgd_acct_method_find("exact"), DPGD_ACCT_EXACT);
  assert_int_equal(dpgd_acct_method_find("rdp"), -1);
}

/* zCDP: eps = min over alpha of alpha rho + log(1/delta)/(alpha - 1) (grid oracle), never
 * below the exact value; delta(eps) inverts eps(delta). */
static void test_zcdp(void **state)
{
  (void)state;
  const double mus[] = {0.0623, 0.5, 2.0};
  for (int i = 0; i < 3; i++) {
    dpgd_accountant *a = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_gaussian(a, mus[i] / 2, 4), DPGD_OK);
    double rho = mus[i] * mus[i] / 2, L = log(1e5), best = INFINITY;
    for (double al = 1.0001; al < 1e5; al *= 1.0001) {
      double v = al * rho + L / (al - 1);
      if (v < best) best = v;
    }
    dpgd_acct_value z, x, d;
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_ZCDP, 1e-5, &z), DPGD_OK);
    assert_int_equal(dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, 1e-5, &x), DPGD_OK);
    assert_true(z.value >= best * (1 - 1e-7) && z.value <= best);
    assert_true(z.value > x.value);
    assert_int_equal(dpgd_acct_delta(a, DPGD_ACCT_ZCDP, z.value, &d), DPGD_OK);
    assert_true(fabs(d.value - 1e-5) < 1e-12);
    dpgd_acct_free(a);
  }
}

static dpgd_accountant *mixed_accountant(void)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  const double p[] = {0.2, 0.5, 0.3}, q[] = {0.3, 0.45, 0.25};
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.1, 420), DPGD_OK);
  assert_int_equal(dpgd_acct_add_laplace(a, 0.1, 20), DPGD_OK);
  assert_int_equal(dpgd_acct_add_rr(a, 0.5, 10), DPGD_OK);
  assert_int_equal(dpgd_acct_add_discrete(a, p, q, 3, 2), DPGD_OK);
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, 0.01, 1.0, 1000), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(a, 0.2385, 1), DPGD_OK);
  return a;
}

static int same_entries(const dpgd_accountant *x, const dpgd_accountant *y)
{
  if (x->n != y->n) return 0;
  for (size_t i = 0; i < x->n; i++) {
    const acct_entry *a = &x->e[i], *b = &y->e[i];
    if (a->kind != b->kind || a->count != b->count || a->k != b->k ||
        memcmp(a->par, b->par, sizeof a->par))
      return 0;
    if (a->k && (memcmp(a->p, b->p, a->k * 8) || memcmp(a->q, b->q, a->k * 8))) return 0;
  }
  return 1;
}

static void test_serialize_round_trip_and_corruption(void **state)
{
  (void)state;
  dpgd_accountant *a = mixed_accountant(), *b = NULL;
  void *buf;
  size_t len;
  assert_int_equal(dpgd_acct_serialize(a, &buf, &len), DPGD_OK);
  assert_int_equal(dpgd_acct_deserialize(&b, buf, len), DPGD_OK);
  assert_true(same_entries(a, b));
  assert_int_equal(dpgd_acct_n_releases(a), dpgd_acct_n_releases(b));
  dpgd_acct_free(b);
  /* every truncation and every single-byte corruption is refused */
  for (size_t n = 0; n < len; n++) {
    b = (void *)1;
    assert_int_equal(dpgd_acct_deserialize(&b, buf, n), DPGD_EFORMAT);
    assert_null(b);
  }
  unsigned char *c = malloc(len);
  for (size_t i = 0; i < len; i++) {
    memcpy(c, buf, len);
    c[i] ^= (unsigned char)(1u << (i % 8));
    assert_int_equal(dpgd_acct_deserialize(&b, c, len), DPGD_EFORMAT);
  }
  /* a valid checksum over an invalid entry (negative mu) is still refused */
  dpgd_accountant *g = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(g, 0.5, 3), DPGD_OK);
  void *gb;
  size_t gl;
  assert_int_equal(dpgd_acct_serialize(g, &gb, &gl), DPGD_OK);
  unsigned char *u = gb;
  u[24 + 16 + 7] |= 0x80; /* sign bit of par[0] of entry 0 */
  uint32_t crc = dpgd_crc32(u, gl - 4);
  for (int i = 0; i < 4; i++) u[gl - 4 + i] = (unsigned char)(crc >> (8 * i));
  assert_int_equal(dpgd_acct_deserialize(&b, gb, gl), DPGD_EFORMAT);
  /* empty accountant round-trips */
  dpgd_accountant *e = dpgd_acct_alloc(), *e2;
  void *eb;
  size_t el;
  assert_int_equal(dpgd_acct_serialize(e, &eb, &el), DPGD_OK);
  assert_int_equal(dpgd_acct_deserialize(&e2, eb, el), DPGD_OK);
  assert_int_equal(dpgd_acct_n_entries(e2), 0);
  free(eb);
  free(gb);
  free(c);
  free(buf);
  dpgd_acct_free(e);
  dpgd_acct_free(e2);
  dpgd_acct_free(g);
  dpgd_acct_free(a);
}

static void test_crc32_known_value(void **state)
{
  (void)state;
  /* the standard check value of CRC-32/ISO-HDLC */
  assert_int_equal(dpgd_crc32("123456789", 9), 0xCBF43926u);
}

/* Calibration round trips: the returned sigma / B_norm meets the target when
 * re-evaluated, and is tight (a 1e-9 relative step toward less privacy breaks it). */
static void check_sigma(dpgd_acct_method m, double eps, double delta, uint64_t steps,
                        const dpgd_accountant *extra)
{
  double sigma;
  int st = dpgd_calibrate_sigma(m, eps, delta, steps, extra, &sigma);
  if (st) fail_msg("calibrate_sigma(%s): %s", dpgd_acct_method_name(m), dpgd_error_last());
  dpgd_accountant *a = extra ? dpgd_acct_clone(extra) : dpgd_acct_alloc();
  dpgd_accountant *b = extra ? dpgd_acct_clone(extra) : dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(a, 1 / sigma, steps), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(b, 1 / (sigma * (1 - 1e-8)), steps), DPGD_OK);
  dpgd_acct_value v, w;
  assert_int_equal(dpgd_acct_epsilon(a, m, delta, &v), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(b, m, delta, &w), DPGD_OK);
  if (!(v.value <= eps))
    fail_msg("%s: sigma %.17g gives eps %.17g > %g", dpgd_acct_method_name(m), sigma, v.value,
             eps);
  if (!(w.value > eps))
    fail_msg("%s: sigma %.17g is not tight", dpgd_acct_method_name(m), sigma);
  dpgd_acct_free(a);
  dpgd_acct_free(b);
}

static void check_budget(dpgd_acct_method m, double eps, double delta, double sigma,
                         double clip)
{
  double B;
  int st = dpgd_calibrate_budget(m, eps, delta, sigma, clip, NULL, &B);
  if (st) fail_msg("calibrate_budget(%s): %s", dpgd_acct_method_name(m), dpgd_error_last());
  dpgd_accountant *a = dpgd_acct_alloc(), *b = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_gaussian(a, sqrt(B) / (sigma * clip), 1), DPGD_OK);
  assert_int_equal(dpgd_acct_add_gaussian(b, sqrt(B * (1 + 1e-8)) / (sigma * clip), 1),
                   DPGD_OK);
  dpgd_acct_value v, w;
  assert_int_equal(dpgd_acct_epsilon(a, m, delta, &v), DPGD_OK);
  assert_int_equal(dpgd_acct_epsilon(b, m, delta, &w), DPGD_OK);
  assert_true(v.value <= eps);
  assert_true(w.value > eps);
  dpgd_acct_free(a);
  dpgd_acct_free(b);
}

static void test_calibration_gaussian(void **state)
{
  (void)state;
  const dpgd_acct_method ms[] = {DPGD_ACCT_EXACT, DPGD_ACCT_ZCDP};
  for (int i = 0; i < 2; i++) {
    check_sigma(ms[i], 0.3, 1e-5, 112, NULL);
    check_sigma(ms[i], 2.385, 1e-8, 1, NULL);
    check_budget(ms[i], 0.3, 1e-5, 170, 10);
    check_budget(ms[i], 1.0, 1e-6, 3.7, 0.5);
    dpgd_accountant *x = dpgd_acct_alloc();
    assert_int_equal(dpgd_acct_add_gaussian(x, 1 / 600.0, 8), DPGD_OK);
    check_sigma(ms[i], 0.5, 1e-5, 180, x);
    dpgd_acct_free(x);
  }
  /* The zCDP sigma is larger than the exact sigma; the exact budget larger. */
  double s_ex, s_z, b_ex, b_z;
  assert_int_equal(dpgd_calibrate_sigma(DPGD_ACCT_EXACT, 0.3, 1e-5, 112, NULL, &s_ex), DPGD_OK);
  assert_int_equal(dpgd_calibrate_sigma(DPGD_ACCT_ZCDP, 0.3, 1e-5, 112, NULL, &s_z), DPGD_OK);
  assert_true(s_z > s_ex);
  assert_int_equal(dpgd_calibrate_budget(DPGD_ACCT_EXACT, 0.3, 1e-5, 170, 10, NULL, &b_ex),
                   DPGD_OK);
  assert_int_equal(dpgd_calibrate_budget(DPGD_ACCT_ZCDP, 0.3, 1e-5, 170, 10, NULL, &b_z),
                   DPGD_OK);
  assert_true(b_ex > b_z);
  /* closed form: B = (mu* sigma C)^2 with mu* from the Gaussian curve */
  double mu;
  assert_int_equal(dpgd_gdp_mu(0.3, 1e-5, &mu), DPGD_OK);
  assert_true(fabs(b_ex - mu * mu * 1700 * 1700) < 1e-9 * b_ex);
  /* bad targets */
  double s;
  assert_int_equal(dpgd_calibrate_sigma(DPGD_ACCT_EXACT, -1, 1e-5, 10, NULL, &s), DPGD_EINVAL);
  assert_int_equal(dpgd_calibrate_sigma(DPGD_ACCT_EXACT, 1, 2, 10, NULL, &s), DPGD_EINVAL);
  assert_int_equal(dpgd_calibrate_sigma(DPGD_ACCT_EXACT, 1, 1e-5, 0, NULL, &s), DPGD_EINVAL);
  assert_int_equal(dpgd_calibrate_budget(DPGD_ACCT_EXACT, 1, 1e-5, 0, 1, NULL, &s),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_calibrate_budget(DPGD_ACCT_EXACT, 1, 1e-5, 1, -1, NULL, &s),
                   DPGD_EINVAL);
}

int main(void)
{
  gsl_set_error_handler_off();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gdp_delta_vs_long_double),
      cmocka_unit_test(test_gdp_delta_vs_integral),
      cmocka_unit_test(test_gdp_epsilon_inverse),
      cmocka_unit_test(test_gdp_mu_inverse),
      cmocka_unit_test(test_gdp_tradeoff_dual),
      cmocka_unit_test(test_gdp_extremes),
      cmocka_unit_test(test_gdp_monotone_convex),
      cmocka_unit_test(test_accountant_gaussian_composition),
      cmocka_unit_test(test_method_names),
      cmocka_unit_test(test_zcdp),
      cmocka_unit_test(test_serialize_round_trip_and_corruption),
      cmocka_unit_test(test_crc32_known_value),
      cmocka_unit_test(test_calibration_gaussian),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
