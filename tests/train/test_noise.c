/* test_noise.c -- the random streams: reproducible research streams that differ by seed
 * and by stream, state save/restore continues the same sequence, and the research
 * Gaussian draws have mean 0 and standard deviation std, by tests with a stated
 * false-alarm rate; a secure stream gives fresh words and refuses floating-point Gaussian
 * noise (secure releases are exact discrete Gaussians); Poisson sampling gives
 * Binomial(n, q) batch sizes (chi-square at a fixed seed) of independent points. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "dpgd_train.h"
#include "noise_internal.h"

enum { M = 64 };

static void draw(dpgd_rng *r, double *x)
{
  memset(x, 0, M * sizeof *x);
  assert_int_equal(dpgd_rng_gaussian_add(r, 1.0, x, M), DPGD_OK);
}

static void test_research_reproducible(void **state)
{
  (void)state;
  double a[M], b[M], c[M], d[M];
  dpgd_rng *r1 = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  dpgd_rng *r2 = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  dpgd_rng *r3 = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2386, DPGD_STREAM_STEP);
  dpgd_rng *r4 = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_QUERY);
  draw(r1, a);
  draw(r2, b);
  draw(r3, c);
  draw(r4, d);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  assert_memory_not_equal(a, d, sizeof a);
  assert_null(dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 1, DPGD_N_STREAMS));
  assert_string_equal(dpgd_rng_mode_name(DPGD_RNG_RESEARCH), "research");
  assert_string_equal(dpgd_rng_mode_name(DPGD_RNG_SECURE), "secure");
  dpgd_rng_free(r1);
  dpgd_rng_free(r2);
  dpgd_rng_free(r3);
  dpgd_rng_free(r4);
}

static void test_state_restore(void **state)
{
  (void)state;
  double a[M], b[M];
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_STEP);
  draw(r, a);
  size_t sz = dpgd_rng_state_size(r);
  assert_true(sz > 0);
  void *st = malloc(sz);
  dpgd_rng_state_get(r, st);
  draw(r, a);
  uint64_t u1, u2;
  assert_int_equal(dpgd_rng_u64(r, &u1), DPGD_OK);
  /* A fresh stream of the same seed and label, set to the state, continues it. */
  dpgd_rng *q = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_STEP);
  assert_int_equal(dpgd_rng_state_set(q, st, sz), DPGD_OK);
  draw(q, b);
  assert_int_equal(dpgd_rng_u64(q, &u2), DPGD_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_true(u1 == u2);
  assert_int_equal(dpgd_rng_state_set(q, st, sz - 1), DPGD_EFORMAT);
  /* The state is a position, not a key: another seed's stream set to it goes on with
   * its own keystream. */
  dpgd_rng *o = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 99, DPGD_STREAM_STEP);
  assert_int_equal(dpgd_rng_state_set(o, st, sz), DPGD_OK);
  draw(o, b);
  assert_memory_not_equal(a, b, sizeof a);
  free(st);
  dpgd_rng_free(r);
  dpgd_rng_free(q);
  dpgd_rng_free(o);
}

/* N draws of std s: the mean is N(0, s^2/N) and, for Gaussian data, the sample variance
 * v has (v/s^2 - 1) sqrt(N/2) approximately N(0, 1). Each check rejects at |z| > 5.3:
 * false-alarm rate about 1.2e-7 per check. A wrong scale by 1% is caught (z = 28). */
static void check_moments(dpgd_rng *r, double s)
{
  enum { N = 400000 };
  double *x = calloc(N, sizeof *x);
  assert_int_equal(dpgd_rng_gaussian_add(r, s, x, N), DPGD_OK);
  double mean = 0, var = 0;
  for (size_t i = 0; i < N; i++) mean += x[i];
  mean /= N;
  for (size_t i = 0; i < N; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= N - 1;
  double z_mean = mean / (s / sqrt(N));
  double z_var = (var / (s * s) - 1) * sqrt(N / 2.0);
  print_message("  std %.6g: mean z = %.3f, variance z = %.3f\n", s, z_mean, z_var);
  assert_true(fabs(z_mean) < 5.3);
  assert_true(fabs(z_var) < 5.3);
  free(x);
}

static void test_gaussian_std_research(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  check_moments(r, 170 * 10.0); /* sigma C of the eps = 0.3 setting */
  check_moments(r, 0.0237);
  double one;
  assert_int_equal(dpgd_rng_gaussian(r, 1.0, &one), DPGD_OK);
  assert_true(isfinite(one));
  dpgd_rng_free(r);
}

static void test_secure_refuses_float_gaussian(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_SECURE, 0, DPGD_STREAM_STEP);
  assert_non_null(r);
  assert_int_equal(dpgd_rng_state_size(r), 0);
  double x[4] = {0}, z = 0;
  dpgd_error_clear();
  assert_int_equal(dpgd_rng_gaussian_add(r, 1.0, x, 4), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "discrete Gaussian"));
  assert_int_equal(dpgd_rng_gaussian(r, 1.0, &z), DPGD_EINVAL);
  assert_true(x[0] == 0 && x[3] == 0 && z == 0);
  /* Two secure streams give different words (probability of equality 2^-128). */
  dpgd_rng *q = dpgd_rng_alloc_u64(DPGD_RNG_SECURE, 0, DPGD_STREAM_STEP);
  uint64_t a[2], b[2];
  for (int k = 0; k < 2; k++) {
    assert_int_equal(dpgd_rng_u64(r, &a[k]), DPGD_OK);
    assert_int_equal(dpgd_rng_u64(q, &b[k]), DPGD_OK);
  }
  assert_memory_not_equal(a, b, sizeof a);
  dpgd_rng_free(r);
  dpgd_rng_free(q);
}

/* Chi-square of T realised batch sizes against Binomial(n, q): cells of single sizes
 * where the expected count is >= 5, the two tails pooled into end cells. Returns the
 * p-value (gsl_cdf_chisq_Q, cells - 1 degrees of freedom). */
static double batch_size_chisq(dpgd_rng *r, size_t n, double q, size_t T)
{
  size_t *hits = calloc(n + 1, sizeof *hits);
  unsigned char *in = malloc(n);
  for (size_t t = 0; t < T; t++) {
    size_t k = n + 1, sum = 0;
    assert_int_equal(dpgd_rng_sample_poisson(r, q, in, n, &k), DPGD_OK);
    for (size_t i = 0; i < n; i++) sum += in[i];
    assert_int_equal(k, sum);
    hits[k]++;
  }
  /* lo..hi: sizes with expected count >= 5; below lo and above hi pooled. */
  size_t lo = 0, hi = n;
  while (lo < n && gsl_ran_binomial_pdf((unsigned)lo, q, (unsigned)n) * (double)T < 5) lo++;
  while (hi > lo && gsl_ran_binomial_pdf((unsigned)hi, q, (unsigned)n) * (double)T < 5) hi--;
  assert_true(lo > 0 && hi < n); /* both tail cells exist */
  double chi = 0, obs_lo = 0, obs_hi = 0;
  for (size_t k = 0; k < lo; k++) obs_lo += (double)hits[k];
  for (size_t k = hi + 1; k <= n; k++) obs_hi += (double)hits[k];
  double exp_lo = gsl_cdf_binomial_P((unsigned)lo - 1, q, (unsigned)n) * (double)T;
  double exp_hi = gsl_cdf_binomial_Q((unsigned)hi, q, (unsigned)n) * (double)T;
  chi += (obs_lo - exp_lo) * (obs_lo - exp_lo) / exp_lo;
  chi += (obs_hi - exp_hi) * (obs_hi - exp_hi) / exp_hi;
  for (size_t k = lo; k <= hi; k++) {
    double e = gsl_ran_binomial_pdf((unsigned)k, q, (unsigned)n) * (double)T;
    chi += ((double)hits[k] - e) * ((double)hits[k] - e) / e;
  }
  double pval = gsl_cdf_chisq_Q(chi, (double)(hi - lo + 2)); /* hi - lo + 3 cells */
  print_message("  n %zu q %g: %zu cells, chi-square %.3f, p = %.4f\n", n, q, hi - lo + 3, chi,
                pval);
  free(hits);
  free(in);
  return pval;
}

/* Realised batch sizes of Poisson sampling follow Binomial(n, q): chi-square at a fixed
 * seed, rejected below p = 1e-4 (the false-alarm rate of a correct sampler, had the seed
 * been drawn at random). The test has power: the same sizes are far (z > 5.3) from the
 * mean of a rate 2% off. */
static void test_poisson_batch_sizes(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_SAMPLE);
  assert_true(batch_size_chisq(r, 600, 0.0427, 20000) > 1e-4);
  assert_true(batch_size_chisq(r, 97, 0.385, 20000) > 1e-4);
  /* The same draws judged against a rate 2% off: rejected. */
  dpgd_rng *s = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_SAMPLE);
  size_t n = 600, T = 20000, total = 0, k;
  unsigned char *in = malloc(n);
  for (size_t t = 0; t < T; t++) {
    assert_int_equal(dpgd_rng_sample_poisson(s, 0.0427, in, n, &k), DPGD_OK);
    total += k;
  }
  double mean = (double)total / (double)T, want = n * 0.0427 * 1.02;
  double sd = sqrt(n * 0.0427 * 1.02 * (1 - 0.0427 * 1.02) / (double)T);
  assert_true(fabs(mean - want) / sd > 5.3);
  /* q = 1 takes everyone, q = 0 no one; a rate outside [0, 1] is refused. */
  assert_int_equal(dpgd_rng_sample_poisson(s, 1.0, in, n, &k), DPGD_OK);
  assert_int_equal(k, n);
  assert_int_equal(dpgd_rng_sample_poisson(s, 0.0, in, n, &k), DPGD_OK);
  assert_int_equal(k, 0);
  assert_int_equal(dpgd_rng_sample_poisson(s, 1.0000001, in, n, &k), DPGD_EINVAL);
  assert_int_equal(dpgd_rng_sample_poisson(s, NAN, in, n, &k), DPGD_EINVAL);
  free(in);
  dpgd_rng_free(s);
  dpgd_rng_free(r);
}

/* The sample is a function of the stream's words alone, the same bits as one
 * dpgd_rng_u64 per point in index order: point i is in iff its word is below
 * floor(q 2^64), for sizes across the bulk reads' blocks, and the stream ends at the
 * same position (the next word agrees). */
static void test_poisson_words(void **state)
{
  (void)state;
  static const size_t sizes[] = {1, 511, 512, 513, 1500};
  static const double rates[] = {0.3, 0.0042666666666666667, 1.0, 0.0};
  unsigned char *in = malloc(1500);
  assert_non_null(in);
  for (size_t a = 0; a < 5; a++)
    for (size_t b = 0; b < 4; b++) {
      dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385 + a, DPGD_STREAM_SAMPLE);
      dpgd_rng *t = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385 + a, DPGD_STREAM_SAMPLE);
      size_t n = sizes[a], k, want = 0;
      double q = rates[b];
      assert_int_equal(dpgd_rng_sample_poisson(r, q, in, n, &k), DPGD_OK);
      for (size_t i = 0; i < n; i++) {
        uint64_t w;
        assert_int_equal(dpgd_rng_u64(t, &w), DPGD_OK);
        int ref = q == 1 || (long double)w < floorl((long double)q * 0x1p64L);
        assert_int_equal(in[i], ref);
        want += (size_t)ref;
      }
      assert_int_equal(k, want);
      uint64_t u, v;
      assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
      assert_int_equal(dpgd_rng_u64(t, &v), DPGD_OK);
      assert_true(u == v);
      dpgd_rng_free(r);
      dpgd_rng_free(t);
    }
  free(in);
}

/* Independence: over T steps, each point's inclusion rate is q, two different points
 * (i, i + 1) are in together at rate q^2, and one point in two consecutive steps at rate
 * q^2. z-tests of the counts, rejected at |z| > 5.3 (false alarm about 1.2e-7 each).
 * Then the secure stream: its batch-size mean, by the same z-test. */
static void check_rate(double count, double trials, double p, const char *what)
{
  double z = (count - trials * p) / sqrt(trials * p * (1 - p));
  print_message("  %s: z = %.3f\n", what, z);
  assert_true(fabs(z) < 5.3);
}

static void test_poisson_independence(void **state)
{
  (void)state;
  enum { N = 300, T = 4000 };
  const double q = 0.137;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_SAMPLE);
  unsigned char in[N], prev[N];
  double each = 0, pairs = 0, again = 0;
  for (size_t t = 0; t < T; t++) {
    assert_int_equal(dpgd_rng_sample_poisson(r, q, in, N, NULL), DPGD_OK);
    for (size_t i = 0; i < N; i++) {
      each += in[i];
      if (i + 1 < N) pairs += in[i] && in[i + 1];
      if (t) again += in[i] && prev[i];
    }
    memcpy(prev, in, sizeof in);
  }
  check_rate(each, (double)N * T, q, "inclusion");
  check_rate(pairs, (double)(N - 1) * T, q * q, "pairs of points");
  check_rate(again, (double)N * (T - 1), q * q, "consecutive steps");
  dpgd_rng_free(r);
  dpgd_rng *sec = dpgd_rng_alloc_u64(DPGD_RNG_SECURE, 0, DPGD_STREAM_SAMPLE);
  each = 0;
  for (size_t t = 0; t < 200; t++) {
    size_t k;
    assert_int_equal(dpgd_rng_sample_poisson(sec, q, in, N, &k), DPGD_OK);
    each += (double)k;
  }
  check_rate(each, (double)N * 200, q, "secure inclusion");
  dpgd_rng_free(sec);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_research_reproducible),
      cmocka_unit_test(test_state_restore),
      cmocka_unit_test(test_gaussian_std_research),
      cmocka_unit_test(test_secure_refuses_float_gaussian),
      cmocka_unit_test(test_poisson_batch_sizes),
      cmocka_unit_test(test_poisson_independence),
      cmocka_unit_test(test_poisson_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
