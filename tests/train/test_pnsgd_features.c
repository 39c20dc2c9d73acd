/* test_pnsgd_features.c -- the last-iterate mode's public norm bound on scattering
 * features (dpgd_pnsgd_features_bound, LASTITERATE.md section 1): rows already within
 * sqrt(d) keep their bits, rows above it are scaled until an independent long-double sum
 * of their squares is at most d, non-finite rows are refused, and the loss constants
 * follow from X^2 = d. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_data.h"
#include "dpgd_train.h"

enum { C = 9, S = 49, D = C * S, N = 4 };

static dpgd_dataset *features(void)
{
  dpgd_dataset *ds = dpgd_data_alloc(N, C, S, 10);
  assert_non_null(ds);
  ds->feat = malloc((size_t)N * D * sizeof *ds->feat);
  assert_non_null(ds->feat);
  unsigned x = 12345;
  for (size_t k = 0; k < D; k++) { /* row 0: group-normalised pseudo-random values */
    x = x * 1103515245u + 12345u;
    ds->feat[k] = (float)((x >> 8) % 1000) / 100.0f;
  }
  dpgd_scatter_group_norm(ds->feat, C, S, 3);
  for (size_t k = 0; k < D; k++) {
    ds->feat[D + k] = 2.0f;                       /* row 1: norm^2 = 4 d */
    ds->feat[2 * D + k] = 1.0f;                   /* row 2: norm^2 = d exactly */
    ds->feat[3 * D + k] = (k % 2) ? 0.5f : -0.5f; /* row 3: norm^2 = d / 4 */
  }
  return ds;
}

static long double sq_ld(const float *v)
{
  long double s = 0;
  for (size_t k = 0; k < D; k++) s += (long double)v[k] * v[k];
  return s;
}

static void test_bound(void **state)
{
  (void)state;
  dpgd_dataset *ds = features();
  float before[N * D];
  memcpy(before, ds->feat, sizeof before);
  double x2;
  size_t scaled;
  assert_int_equal(dpgd_pnsgd_features_bound(ds, &x2, &scaled), DPGD_OK);
  assert_true(x2 == (double)D);
  assert_int_equal(scaled, 2); /* rows 1 and 2 */
  for (size_t i = 0; i < N; i++) assert_true(sq_ld(ds->feat + i * D) <= (long double)D);
  assert_memory_equal(ds->feat, before, D * sizeof(float));                 /* row 0 */
  assert_memory_equal(ds->feat + 3 * D, before + 3 * D, D * sizeof(float)); /* row 3 */
  assert_true(sq_ld(ds->feat + D) > 0.99L * D); /* scaled to the bound, not far below */
  dpgd_data_free(ds);
}

static void test_refuses_nan(void **state)
{
  (void)state;
  dpgd_dataset *ds = features();
  ds->feat[2 * D + 7] = NAN;
  double x2;
  size_t scaled;
  assert_int_equal(dpgd_pnsgd_features_bound(ds, &x2, &scaled), DPGD_EFORMAT);
  dpgd_data_free(ds);
}

/* L = sqrt(2 (X^2 + 1)), beta = (X^2 + 1) / 2, lr_max = 2 / beta, each rounded privately. */
static void test_consts(void **state)
{
  (void)state;
  dpgd_pnsgd_consts k;
  assert_int_equal(dpgd_pnsgd_consts_from_sq(&k, 3969), DPGD_OK);
  assert_true(k.lipschitz >= sqrtl(2.0L * 3970) &&
              k.lipschitz < sqrt(2.0 * 3970) * (1 + 1e-15));
  assert_true(k.smooth >= 1985 && k.smooth < 1985 * (1 + 1e-15));
  assert_true(k.lr_max <= 4.0L / 3970 && k.lr_max > 4.0 / 3970 * (1 - 1e-15));
  assert_int_equal(dpgd_pnsgd_consts_from_sq(&k, INFINITY), DPGD_ERANGE);
  assert_int_equal(dpgd_pnsgd_consts_from_sq(&k, NAN), DPGD_ERANGE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_refuses_nan),
      cmocka_unit_test(test_consts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
