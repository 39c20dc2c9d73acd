/* test_acct_pld_property.c -- property sweep of the Poisson-subsampled Gaussian's PLD
 * path and RDP methods: every eps (delta) they print is at least an independent lower
 * reference computed here in long double by a different route (the loss as a function
 * of the output, never its inverse; accounting/PLD.md section 8). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "acct_internal.h"

/* Q(z) = P(N(0,1) > z) in long double, scaled down by a margin for erfcl's error. */
static long double qtail_lo(long double z)
{
  return 0.5L * erfcl(z / sqrtl(2.0L)) * (1 - 1e-12L);
}

/* log(e^a + e^b) */
static long double lse(long double a, long double b)
{
  long double m = fmaxl(a, b);
  return isinf(m) ? m : m + log1pl(expl(fminl(a, b) - m));
}

/* For the remove pair of a release (P = (1-q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2)):
 * the loss at output o, L(o) = log(1 - q + q e^x), x = (2o - 1)/(2 s^2), increasing in
 * o, lowered by a margin (*t), and P(O > o) = P(L > L(o)), lowered (*p, log). */
static void loss_at(double q, double s, long double o, long double *t, long double *lp)
{
  long double x = (2 * o - 1) / (2.0L * s * s);
  long double lt = q < 1 ? lse(log1pl(-(long double)q), logl(q) + x) : x;
  *t = lt - 1e-15L * fabsl(lt) - 1e-300L;
  long double p = (1 - (long double)q) * qtail_lo(o / s) + q * qtail_lo((o - 1) / s);
  *lp = logl(p);
}

/* log C(K, j) p^j (1 - p)^(K - j) <= log P(Bin(K, p) >= j) */
static long double log_binom(double K, int j, long double lp)
{
  long double lc = lgammal(K + 1.0L) - lgammal(j + 1.0L) - lgammal(K - j + 1.0L);
  long double l1 = log1pl(-expl(lp));
  return lc + j * lp + (K - j) * l1 - 1e-15L * lgammal(K + 1.0L) - 1e-12L;
}

/* A lower bound on delta(eps) (log) and on eps(delta) of K releases: if at least j
 * releases have a loss above t (probability >= the binomial term) the sum exceeds
 * T = j t + (K - j) log(1 - q) (no loss of the remove pair is below log(1 - q)), and
 * delta(eps) >= (1 - e^(eps - T)) P(sum > T). Scanned over outputs o and j <= 6. */
typedef struct {
  double q, s, K;
} sg;

static void ref_scan(const sg *c, double eps, double delta, double *log_delta_lo,
                     double *eps_lo)
{
  long double best_d = -INFINITY, best_e = -INFINITY;
  long double lq1 = c->q < 1 ? log1pl(-(long double)c->q) * (1 + 1e-15L) : 0;
  for (int i = 0; i <= 600; i++) {
    long double o = 1 + c->s * (-12.0L + 52.0L * i / 600), t, lp;
    loss_at(c->q, c->s, o, &t, &lp);
    if (!isfinite(lp)) continue;
    for (int j = 1; j <= 6 && j <= c->K; j++) {
      long double T = j * t + (c->K - j) * lq1, lb = log_binom(c->K, j, lp);
      if (T > eps) best_d = fmaxl(best_d, lb + log1pl(-expl(eps - T)));
      if (lb > logl(delta)) best_e = fmaxl(best_e, T + log1pl(-expl(logl(delta) - lb)));
    }
  }
  *log_delta_lo = (double)best_d;
  *eps_lo = (double)best_e;
}

/* A deterministic stream of cases (a fixed linear congruential generator). */
static double unif(uint64_t *x)
{
  *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*x >> 11) * 0x1p-53;
}

static double log_unif(uint64_t *x, double lo, double hi)
{
  return exp(log(lo) + (log(hi) - log(lo)) * unif(x));
}

/* The value v (an upper bound of the truth) is at least the reference lower bound. */
static void check_ge(const char *what, const sg *c, double x, double v, double ref)
{
  if (!(v >= ref - 1e-12 * fabs(ref))) {
    printf("%s below the lower reference: q %.17g sigma %.17g K %.17g at %.3g: %.10g < %.10g\n",
           what, c->q, c->s, c->K, x, v, ref);
    fail();
  }
}

/* One case: eps(delta) under the PLD path and the RDP methods, and delta(eps) under the
 * PLD path at the reference's own eps, against the reference; a path may answer n/a
 * (an error status with a reason), never a value below the truth. Returns 1 when the
 * PLD path answered. */
static int check_case(const sg *c, double delta)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_non_null(a);
  assert_int_equal(dpgd_acct_add_subsampled_gaussian(a, c->q, c->s, (uint64_t)c->K), DPGD_OK);
  double ldl, eps_lo;
  ref_scan(c, 0, delta, &ldl, &eps_lo);
  dpgd_acct_value v;
  int answered = 0;
  for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++) {
    if (dpgd_acct_epsilon(a, m, delta, &v) == DPGD_OK)
      check_ge("rdp eps", c, delta, v.value, eps_lo);
    dpgd_error_clear();
  }
  clock_t t0 = clock();
  if (dpgd_acct_pld_epsilon(a, delta, &v) == DPGD_OK) {
    check_ge("pld eps", c, delta, v.value, eps_lo);
    check_ge("pld eps lower end", c, delta, v.value, v.value - v.err);
    answered = 1;
  } else if (getenv("PLD_VERBOSE")) {
    printf("n/a: q %g s %g K %g delta %g: %s\n", c->q, c->s, c->K, delta, dpgd_error_last());
  }
  if (getenv("PLD_VERBOSE"))
    printf("q %g s %g K %g delta %g: eps %g ref %g, %.0f ms\n", c->q, c->s, c->K, delta,
           answered ? v.value : NAN, eps_lo, 1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC);
  dpgd_error_clear();
  if (c->K <= 3 && dpgd_acct_epsilon(a, DPGD_ACCT_EXACT, delta, &v) == DPGD_OK)
    check_ge("exact eps", c, delta, v.value, eps_lo);
  dpgd_error_clear();
  if (isfinite(eps_lo) && eps_lo > 0) { /* delta at an eps where the reference is positive */
    double e = 0.5 * eps_lo;
    ref_scan(c, e, delta, &ldl, &eps_lo);
    if (dpgd_acct_pld_delta(a, e, &v) == DPGD_OK)
      check_ge("pld delta", c, e, v.value, exp(ldl) * (1 - 1e-12));
    dpgd_error_clear();
  }
  dpgd_acct_free(a);
  return answered;
}

/* The cases of the review (small sigma: the loss far beyond log(DBL_MAX)) and a sweep
 * of sigma over 3e-3..1e3, q over 1e-9..1, counts up to 1e12, delta over 1e-300..0.5. */
static void test_sweep(void **state)
{
  (void)state;
  const sg fixed[] = {{0.5, 0.02, 1}, {0.01, 0.02, 3}, {0.3, 0.005, 2},
                      {1, 0.01, 2},   {0.9, 0.05, 1},  {0.02, 0.1, 40}};
  int answered = 0, n = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++, n++)
    answered += check_case(&fixed[i], 1e-5);
  uint64_t x = 20260523;
  for (int i = 0; i < 30; i++, n++) {
    sg c = {log_unif(&x, 1e-9, 1), log_unif(&x, 3e-3, 1e3), floor(log_unif(&x, 1, 1e12))};
    if (i % 3 == 0) c.K = floor(log_unif(&x, 1, 20)); /* few releases: the PLD answers */
    if (i % 5 == 0) c.q = 1 - unif(&x) * 0.5;
    /* the PLD's FFT bounds are absolute (about 1e-13): below, it says n/a */
    answered +=
        check_case(&c, i % 3 == 2 ? log_unif(&x, 1e-300, 1e-12) : log_unif(&x, 1e-12, 0.5));
  }
  printf("%d of %d cases answered by the PLD path\n", answered, n);
  assert_true(answered >= n / 3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sweep)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
