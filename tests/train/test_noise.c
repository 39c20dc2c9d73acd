/* test_noise.c -- the random streams: reproducible research streams that differ by seed
 * and by stream, state save/restore continues the same sequence, and the Gaussian draws
 * have mean 0 and standard deviation std (research and secure modes), by tests with a
 * stated false-alarm rate; the secure uniforms stay strictly inside (0, 1) at the
 * extreme random words and Box-Muller's output stays bounded there. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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
  dpgd_rng *r1 = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  dpgd_rng *r2 = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  dpgd_rng *r3 = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 2386, DPGD_STREAM_STEP);
  dpgd_rng *r4 = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_QUERY);
  draw(r1, a);
  draw(r2, b);
  draw(r3, c);
  draw(r4, d);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  assert_memory_not_equal(a, d, sizeof a);
  assert_null(dpgd_rng_alloc(DPGD_RNG_RESEARCH, 1, DPGD_N_STREAMS));
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
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_STEP);
  draw(r, a);
  size_t sz = dpgd_rng_state_size(r);
  assert_true(sz > 0);
  void *st = malloc(sz);
  dpgd_rng_state_get(r, st);
  draw(r, a);
  uint64_t u1, u2;
  assert_int_equal(dpgd_rng_u64(r, &u1), DPGD_OK);
  dpgd_rng *q = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 99, DPGD_STREAM_STEP);
  assert_int_equal(dpgd_rng_state_set(q, st, sz), DPGD_OK);
  draw(q, b);
  assert_int_equal(dpgd_rng_u64(q, &u2), DPGD_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_true(u1 == u2);
  assert_int_equal(dpgd_rng_state_set(q, st, sz - 1), DPGD_EFORMAT);
  free(st);
  dpgd_rng_free(r);
  dpgd_rng_free(q);
}

/* A stored MT19937 state (GSL: 624 words in unsigned longs, then the int index of the
 * next word) is outside input: an index outside 0..624 or a word over 32 bits is refused,
 * since GSL would read mt[index] outside the state. The bounds 0 and 624 are accepted. */
static void test_state_corrupt(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 7, DPGD_STREAM_STEP);
  size_t sz = dpgd_rng_state_size(r);
  size_t at = 624 * sizeof(unsigned long); /* offset of the index */
  assert_true(sz >= at + sizeof(int));
  unsigned char *st = malloc(sz);
  dpgd_rng_state_get(r, st);
  int idx, ok_idx[] = {0, 624}, bad_idx[] = {-1, 625, -1250754560, 2147483647};
  for (size_t k = 0; k < sizeof ok_idx / sizeof ok_idx[0]; k++) {
    memcpy(st + at, &ok_idx[k], sizeof idx);
    assert_int_equal(dpgd_rng_state_set(r, st, sz), DPGD_OK);
    uint64_t u;
    assert_int_equal(dpgd_rng_u64(r, &u), DPGD_OK);
  }
  for (size_t k = 0; k < sizeof bad_idx / sizeof bad_idx[0]; k++) {
    memcpy(st + at, &bad_idx[k], sizeof idx);
    assert_int_equal(dpgd_rng_state_set(r, st, sz), DPGD_EFORMAT);
  }
  idx = 311;
  memcpy(st + at, &idx, sizeof idx);
  unsigned long w = 0x100000000UL + 2385;
  memcpy(st + 17 * sizeof w, &w, sizeof w);
  assert_int_equal(dpgd_rng_state_set(r, st, sz), DPGD_EFORMAT);
  free(st);
  dpgd_rng_free(r);
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
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  check_moments(r, 170 * 10.0); /* sigma C of the eps = 0.3 setting */
  check_moments(r, 0.0237);
  double one;
  assert_int_equal(dpgd_rng_gaussian(r, 1.0, &one), DPGD_OK);
  assert_true(isfinite(one));
  dpgd_rng_free(r);
}

static void test_gaussian_std_secure(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_SECURE, 0, DPGD_STREAM_STEP);
  assert_non_null(r);
  assert_int_equal(dpgd_rng_state_size(r), 0);
  check_moments(r, 130 * 15.0);
  /* Two secure streams give different draws (probability of equality ~ 0). */
  double a[M], b[M];
  dpgd_rng *q = dpgd_rng_alloc(DPGD_RNG_SECURE, 0, DPGD_STREAM_STEP);
  draw(r, a);
  draw(q, b);
  assert_memory_not_equal(a, b, sizeof a);
  dpgd_rng_free(r);
  dpgd_rng_free(q);
}

/* The extreme words (all bits set, all bits 0, the top bit alone, the largest with the
 * top 52 bits below all-ones): uniforms strictly inside (0, 1), Box-Muller finite and
 * within NOISE_BM_RADIUS_MAX, the radius positive. */
static void test_uniform_extremes(void **state)
{
  (void)state;
  const uint64_t w[] = {UINT64_MAX,
                        0,
                        (uint64_t)1 << 63,
                        UINT64_MAX >> 1,
                        UINT64_MAX - 4095,
                        ((uint64_t)1 << 53) - 1,
                        4095,
                        4096};
  const double r_max = sqrt(-2.0 * log(0x1p-53));
  assert_true(r_max <= NOISE_BM_RADIUS_MAX && NOISE_BM_RADIUS_MAX - r_max < 1e-3);
  for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
    double u = dpgd_noise_bits_to_uniform(w[k]);
    if (!(u > 0.0 && u < 1.0))
      fail_msg("word %#llx gives u = %.17g", (unsigned long long)w[k], u);
    assert_true(u >= 0x1p-53 && u <= 1.0 - 0x1p-53);
    for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) {
      double z = dpgd_noise_box_muller(u, dpgd_noise_bits_to_uniform(w[j]));
      assert_true(isfinite(z) && fabs(z) <= NOISE_BM_RADIUS_MAX);
    }
    assert_true(sqrt(-2.0 * log(u)) > 0.0);
  }
  assert_true(dpgd_noise_bits_to_uniform(0) == 0x1p-53);
  assert_true(dpgd_noise_bits_to_uniform(UINT64_MAX) == 1.0 - 0x1p-53);
  /* Every uniform is distinct from its neighbour word's (52 bits used). */
  assert_true(dpgd_noise_bits_to_uniform(UINT64_MAX) >
              dpgd_noise_bits_to_uniform(UINT64_MAX - 4096));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_research_reproducible),
      cmocka_unit_test(test_state_restore),
      cmocka_unit_test(test_state_corrupt),
      cmocka_unit_test(test_gaussian_std_research),
      cmocka_unit_test(test_gaussian_std_secure),
      cmocka_unit_test(test_uniform_extremes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
