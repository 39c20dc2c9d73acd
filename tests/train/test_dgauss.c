/* test_dgauss.c -- the exact discrete Gaussian sampler (train/dgauss.c) against its
 * probability mass function exp(-x^2 / (2 sigma^2)) / Z, Z summed in long double over
 * |x| <= 40 sigma + 40 (the rest is below e^-800): a chi-square test over bins of at least
 * CHI_MIN_EXPECTED expected draws, the two tails each one bin, for sigma in {0.5, 1, 3.7,
 * 100, 10^4} and at the ends of the parameter range; its threshold is the chi-square
 * quantile of false-failure probability CHI_ALPHA (1e-6) for a random seed; the seeds are
 * fixed (ChaCha20 research streams through the bit callback), so the verdict is
 * reproducible. DGAUSS_DRAWS draws per sigma: 10^6 in the quick test, 10^7 in
 * test_dgauss_full (label long). Also: the same test rejects a sampler off by 1.35 % in
 * sigma (the test can fail); Bernoulli(exp(-gamma)) and the discrete Laplace against
 * their laws; the rational arithmetic's edge cases (t = floor(sigma) + 1 exactly, range
 * limits, overflow of the noisy sum, a failing bit source). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>

#include "dpgd_train.h"

#ifndef DGAUSS_DRAWS
#define DGAUSS_DRAWS 1000000
#endif
#define CHI_ALPHA 1e-6
#define CHI_MIN_EXPECTED 50.0

typedef unsigned __int128 u128;

/* A seeded bit source: a research (ChaCha20) stream. */
static dpgd_rng *seeded(dpgd_bits *b, uint64_t seed)
{
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, seed, DPGD_STREAM_STEP);
  assert_non_null(r);
  dpgd_bits_init(b, dpgd_rng_bits, r);
  return r;
}

typedef struct {
  long M;         /* support considered: |x| <= M; beyond goes to the tail bins */
  int *bin;       /* (2M + 1): bin of x + M */
  double *expect; /* (nbins) */
  long *seen;     /* (nbins) */
  size_t nbins;
} chisq;

/* Bins over [-M, M] from the pmf p (2M + 1 values summing to 1 with the tails) scaled
 * to n draws: consecutive values merge until a bin expects CHI_MIN_EXPECTED; the first
 * and last bins also take everything beyond -M and M. */
static void chisq_init(chisq *c, long M, const long double *p, double n)
{
  c->M = M;
  c->bin = malloc((size_t)(2 * M + 1) * sizeof *c->bin);
  c->expect = calloc((size_t)(2 * M + 1), sizeof *c->expect);
  c->seen = calloc((size_t)(2 * M + 1), sizeof *c->seen);
  assert_true(c->bin && c->expect && c->seen);
  size_t k = 0;
  long double acc = 0;
  for (long x = -M; x <= M; x++) {
    acc += p[x + M] * n;
    c->bin[x + M] = (int)k;
    if (acc >= CHI_MIN_EXPECTED) c->expect[k++] = (double)acc, acc = 0;
  }
  if (acc > 0 && k > 0) { /* a short last bin joins the one before */
    c->expect[k - 1] += (double)acc;
    for (long x = M; x >= -M && c->bin[x + M] == (int)k; x--) c->bin[x + M] = (int)k - 1;
  } else if (acc > 0) {
    c->expect[k++] = (double)acc;
  }
  c->nbins = k;
  assert_true(k >= 2);
}

static void chisq_add(chisq *c, int64_t y)
{
  long x = y < -c->M ? -c->M : y > c->M ? c->M : (long)y;
  c->seen[c->bin[x + c->M]]++;
}

/* The statistic over the threshold (a ratio: <= 1 passes). */
static double chisq_ratio(chisq *c)
{
  double s = 0;
  for (size_t k = 0; k < c->nbins; k++) {
    double d = (double)c->seen[k] - c->expect[k];
    s += d * d / c->expect[k];
  }
  double thr = gsl_cdf_chisq_Qinv(CHI_ALPHA, (double)(c->nbins - 1));
  print_message("chi-square %.1f on %zu degrees of freedom, threshold %.1f\n", s, c->nbins - 1,
                thr);
  free(c->bin);
  free(c->expect);
  free(c->seen);
  return s / thr;
}

/* The discrete Gaussian pmf of variance parameter s2 on [-M, M], normalised by the long
 * double sum over that range (whose outside is below e^-800 of it). */
static long double *dg_pmf(long double s2, long M)
{
  long double *p = malloc((size_t)(2 * M + 1) * sizeof *p), z = 0;
  assert_non_null(p);
  for (long x = M; x >= 0; x--) { /* small terms first */
    long double t = expl(-(long double)x * x / (2 * s2));
    p[M + x] = p[M - x] = t;
    z += x ? 2 * t : t;
  }
  for (long x = -M; x <= M; x++) p[x + M] /= z;
  return p;
}

/* Chi-square of n draws at sigma^2 = num/den against the pmf at model_s2. */
static double dg_ratio(uint64_t num, uint64_t den, long double model_s2, size_t n,
                       uint64_t seed)
{
  long M = (long)ceill(40 * sqrtl(model_s2)) + 40;
  long double *p = dg_pmf(model_s2, M);
  chisq c;
  chisq_init(&c, M, p, (double)n);
  free(p);
  dpgd_dgauss g;
  dpgd_bits b;
  dpgd_rng *r = seeded(&b, seed);
  assert_int_equal(dpgd_dgauss_init(&g, num, den), DPGD_OK);
  for (size_t i = 0; i < n; i++) {
    int64_t y;
    assert_int_equal(dpgd_dgauss_sample(&g, &b, &y), DPGD_OK);
    chisq_add(&c, y);
  }
  dpgd_rng_free(r);
  return chisq_ratio(&c);
}

static void check_sigma2(uint64_t num, uint64_t den, uint64_t seed)
{
  double q = dg_ratio(num, den, (long double)num / den, DGAUSS_DRAWS, seed);
  print_message("sigma^2 = %llu/%llu: chi-square / threshold = %.3f\n", (unsigned long long)num,
                (unsigned long long)den, q);
  assert_true(q <= 1);
}

static void test_chisq_half(void **s) { (void)s, check_sigma2(1, 4, 11); }
static void test_chisq_one(void **s) { (void)s, check_sigma2(1, 1, 12); }
static void test_chisq_3_7(void **s) { (void)s, check_sigma2(1369, 100, 13); }
static void test_chisq_100(void **s) { (void)s, check_sigma2(10000, 1, 14); }
static void test_chisq_1e4(void **s) { (void)s, check_sigma2(100000000, 1, 15); }
/* sigma = 2^15 with den = 2^32: proposals beyond 4 sigma make D = |y| t den exceed 2^64,
 * so gamma's 256-bit division runs (about 2 % of the proposals). */
static void test_chisq_wide_division(void **s)
{
  (void)s, check_sigma2(UINT64_C(1) << 62, UINT64_C(1) << 32, 16);
}
/* sigma^2 = 7/3 (a denominator that is not a power of 10 or 2). */
static void test_chisq_seven_thirds(void **s) { (void)s, check_sigma2(7, 3, 17); }

/* The test has power: a sampler at sigma 3.7 judged against sigma 3.75 fails it. */
static void test_chisq_rejects_wrong_sigma(void **s)
{
  (void)s;
  double q = dg_ratio(1369, 100, 3.75L * 3.75L, 1000000, 18);
  print_message("sigma 3.7 against 3.75: chi-square / threshold = %.3f\n", q);
  assert_true(q > 1);
}

/* Bernoulli(exp(-num/den)): frequency within 5.33 standard deviations (two-sided 1e-7);
 * exponent 0 always 1, a huge exponent never in 2e5 draws (probability below 1e-20). */
static void test_bernoulli_exp(void **s)
{
  (void)s;
  static const uint64_t g[][2] = {{0, 1},
                                  {1, 3},
                                  {1, 1},
                                  {7, 3},
                                  {5, 2},
                                  {1, 1000000007},
                                  {3000000000u, 1000000000u},
                                  {UINT64_MAX, UINT64_MAX}};
  dpgd_bits b;
  dpgd_rng *r = seeded(&b, 21);
  const int n = 200000;
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    long ones = 0;
    for (int i = 0; i < n; i++) {
      int a = -1;
      assert_int_equal(dpgd_dgauss_bernoulli_exp(&b, g[k][0], g[k][1], &a), DPGD_OK);
      assert_true(a == 0 || a == 1);
      ones += a;
    }
    double p = exp(-(double)g[k][0] / (double)g[k][1]);
    double sd = sqrt(n * p * (1 - p));
    if (p == 1) assert_int_equal(ones, n);
    else assert_true(fabs(ones - n * p) <= 5.33 * sd + 1e-9);
  }
  long ones = 0;
  for (int i = 0; i < n; i++) {
    int a = -1;
    assert_int_equal(dpgd_dgauss_bernoulli_exp(&b, 50, 1, &a), DPGD_OK);
    ones += a;
  }
  assert_int_equal(ones, 0);
  int a;
  assert_int_equal(dpgd_dgauss_bernoulli_exp(&b, 1, 0, &a), DPGD_EINVAL);
  dpgd_rng_free(r);
}

/* Discrete Laplace of scale t: chi-square against exp(-|x|/t) (1 - e^{-1/t})/(1 + e^{-1/t}). */
static void test_laplace(void **s)
{
  (void)s;
  static const uint64_t ts[] = {1, 3, 40};
  dpgd_bits b;
  dpgd_rng *r = seeded(&b, 22);
  for (size_t k = 0; k < 3; k++) {
    long double t = (long double)ts[k];
    long M = (long)(t * 900) + 10;
    long double *p = malloc((size_t)(2 * M + 1) * sizeof *p);
    long double c = -expm1l(-1 / t) / (1 + expl(-1 / t));
    for (long x = -M; x <= M; x++) p[x + M] = c * expl(-fabsl((long double)x) / t);
    chisq ch;
    chisq_init(&ch, M, p, 1000000);
    free(p);
    for (int i = 0; i < 1000000; i++) {
      int64_t y;
      assert_int_equal(dpgd_dgauss_laplace(&b, ts[k], &y), DPGD_OK);
      chisq_add(&ch, y);
    }
    assert_true(chisq_ratio(&ch) <= 1);
  }
  int64_t y;
  assert_int_equal(dpgd_dgauss_laplace(&b, 0, &y), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_laplace(&b, (UINT64_C(1) << 31) + 2, &y), DPGD_EINVAL);
  dpgd_rng_free(r);
}

/* t = floor(sqrt(num/den)) + 1, checked in exact integers: (t-1)^2 den <= num < t^2 den. */
static void check_t(uint64_t num, uint64_t den)
{
  dpgd_dgauss g;
  assert_int_equal(dpgd_dgauss_init(&g, num, den), DPGD_OK);
  u128 t = g.t;
  assert_true((t - 1) * (t - 1) * den <= num);
  assert_true(num < t * t * den);
}

static void test_rational_edges(void **s)
{
  (void)s;
  const uint64_t NMAX = DPGD_DGAUSS_NUM_MAX, DMAX = DPGD_DGAUSS_DEN_MAX;
  static const uint64_t sq[][2] = {
      {4, 1}, {399, 100}, {400, 100}, {401, 100},
      {1, 1}, {1, 4},     {3, 4},     {(UINT64_C(1) << 31) - 1, 1}};
  for (size_t k = 0; k < sizeof sq / sizeof sq[0]; k++) check_t(sq[k][0], sq[k][1]);
  uint64_t m = (UINT64_C(1) << 31) - 1; /* (2^31 - 1)^2 and its neighbours */
  check_t(m * m, 1), check_t(m * m - 1, 1), check_t(m * m + 1, 1);
  check_t(NMAX, 1), check_t(NMAX, DMAX), check_t(1, DMAX), check_t(NMAX - 1, 3);
  dpgd_dgauss g;
  assert_int_equal(dpgd_dgauss_init(&g, NMAX, 1), DPGD_OK);
  assert_true(g.t == (UINT64_C(1) << 31) + 1);
  uint64_t x = 0x9e3779b97f4a7c15u; /* a fixed pseudo-random walk over the range */
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    check_t(1 + (x >> 2) % NMAX, 1 + (x * 2654435761u) % DMAX);
  }
  assert_int_equal(dpgd_dgauss_init(&g, 0, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_init(&g, 1, 0), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_init(&g, NMAX + 1, 1), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_init(&g, 1, DMAX + 1), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_init(&g, UINT64_MAX, UINT64_MAX), DPGD_EINVAL);
}

/* At the ends of the range every draw is sane: sigma = 2^31 (|y| < 40 sigma) and sigma^2
 * = 2^-32 (always 0: P[y != 0] < 2 e^{-2^31}). */
static void test_range_ends(void **s)
{
  (void)s;
  dpgd_bits b;
  dpgd_rng *r = seeded(&b, 23);
  dpgd_dgauss g;
  assert_int_equal(dpgd_dgauss_init(&g, DPGD_DGAUSS_NUM_MAX, 1), DPGD_OK);
  int64_t y;
  double s2 = 0;
  for (int i = 0; i < 20000; i++) {
    assert_int_equal(dpgd_dgauss_sample(&g, &b, &y), DPGD_OK);
    assert_true(llabs(y) < (INT64_C(40) << 31));
    s2 += (double)y * (double)y;
  }
  /* the sample variance over 2e4 draws is within 10 % of sigma^2 (sd 1 %) */
  assert_true(fabs(s2 / 20000 / ldexp(1, 62) - 1) < 0.1);
  assert_int_equal(dpgd_dgauss_init(&g, 1, DPGD_DGAUSS_DEN_MAX), DPGD_OK);
  for (int i = 0; i < 20000; i++) {
    assert_int_equal(dpgd_dgauss_sample(&g, &b, &y), DPGD_OK);
    assert_true(y == 0);
  }
  dpgd_rng_free(r);
}

/* dpgd_dgauss_add: overflow of the noisy int64 is an error, not a wrap. */
static void test_add_overflow(void **s)
{
  (void)s;
  dpgd_bits b;
  dpgd_rng *r = seeded(&b, 24);
  dpgd_dgauss g;
  assert_int_equal(dpgd_dgauss_init(&g, 100000000, 1), DPGD_OK);
  int64_t x[100];
  for (int i = 0; i < 100; i++) x[i] = INT64_MAX;
  assert_int_equal(dpgd_dgauss_add(&g, &b, x, 100), DPGD_ERANGE);
  int64_t z[3] = {0, -5, 7};
  assert_int_equal(dpgd_dgauss_add(&g, &b, z, 3), DPGD_OK);
  dpgd_rng_free(r);
}

/* From a real std on a grid: num = ceil((std 2^F)^2), den = 1, checked in
 * __float128 (the square of a double is exact there); the range and bad input refused. */
static void test_from_std(void **s)
{
  (void)s;
  static const double stds[] = {
      1700, 1000,  3.7, 0.1, 2.385e-3, 0x1p31 - 1, 0x1p31 - 0.5, 1e-30, 0x1.fffffffffffffp30,
      1.5,  0x1p31};
  static const int bits[] = {20, 20, 0, 10, 30, 0, 0, 5, 0, 0, 0};
  for (int k = 0; k < 11; k++) {
    dpgd_dgauss g;
    assert_int_equal(dpgd_dgauss_from_std(&g, stds[k], bits[k]), DPGD_OK);
    __float128 x = (__float128)ldexp(stds[k], bits[k]);
    assert_int_equal(g.den, 1);
    assert_true((__float128)g.num >= x * x);
    assert_true((__float128)(g.num - 1) < x * x);
  }
  dpgd_dgauss g;
  assert_int_equal(dpgd_dgauss_from_std(&g, 0x1p31 + 0x1p-21, 0), DPGD_ERANGE);
  assert_int_equal(dpgd_dgauss_from_std(&g, 1700, 21), DPGD_ERANGE);
  assert_int_equal(dpgd_dgauss_from_std(&g, 0, 3), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_from_std(&g, NAN, 3), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_from_std(&g, INFINITY, 3), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_from_std(&g, 1, -1), DPGD_EINVAL);
  assert_int_equal(dpgd_dgauss_from_std(&g, 1, 61), DPGD_EINVAL);
}

static int failing_bits(void *ctx, uint64_t *w)
{
  (void)ctx, (void)w;
  return DPGD_EIO;
}

static void test_bit_source_failure(void **s)
{
  (void)s;
  dpgd_bits b;
  dpgd_bits_init(&b, failing_bits, NULL);
  dpgd_dgauss g;
  int64_t y;
  assert_int_equal(dpgd_dgauss_init(&g, 1369, 100), DPGD_OK);
  assert_int_equal(dpgd_dgauss_sample(&g, &b, &y), DPGD_EIO);
  /* the secure stream (getrandom) draws through the same callback */
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_SECURE, NULL, DPGD_STREAM_STEP);
  assert_non_null(r);
  dpgd_bits_init(&b, dpgd_rng_bits, r);
  assert_int_equal(dpgd_dgauss_sample(&g, &b, &y), DPGD_OK);
  dpgd_rng_free(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chisq_half),
      cmocka_unit_test(test_chisq_one),
      cmocka_unit_test(test_chisq_3_7),
      cmocka_unit_test(test_chisq_100),
      cmocka_unit_test(test_chisq_1e4),
      cmocka_unit_test(test_chisq_wide_division),
      cmocka_unit_test(test_chisq_seven_thirds),
      cmocka_unit_test(test_chisq_rejects_wrong_sigma),
      cmocka_unit_test(test_bernoulli_exp),
      cmocka_unit_test(test_laplace),
      cmocka_unit_test(test_rational_edges),
      cmocka_unit_test(test_range_ends),
      cmocka_unit_test(test_add_overflow),
      cmocka_unit_test(test_from_std),
      cmocka_unit_test(test_bit_source_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
