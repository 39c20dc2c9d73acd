/* test_intsum.c -- secure mode's integer clipped sum (model/intsum.c, SENSITIVITY.md 8):
 * removing any example moves the int64 sum by exactly that example's row computed alone,
 * whose exact squared norm is at most its cap's square in grid units (computed here from
 * dyadic caps, independently of the code); the row agrees with the float gradient
 * rounded toward zero; the sum has the same bits for any thread count and leaf span;
 * the grid choice keeps n C 2^F <= 2^62 up to the largest n an IDX file holds; and a sum
 * of rows all on one coordinate, with the caps adding up to exactly 2^62 grid units, is
 * exact (one unit more is refused). Softmax, the CNN (relu, tanh) and the scatter CNN. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "data/testutil.h"
#include "model_internal.h"
#include "mtest.h"

typedef unsigned __int128 u128;

#define F_TEST 24

static void *xalloc(size_t bytes)
{
  void *p = malloc(bytes ? bytes : 1);
  assert_non_null(p);
  return p;
}

/* cap = k / 64: cap^2 2^(2F) = k^2 2^(2F - 12) exactly, in integers. */
static u128 cap2_units(uint64_t k) { return (u128)k * k << (2 * F_TEST - 12); }

static u128 norm2(const int64_t *v, size_t P)
{
  u128 s = 0;
  for (size_t p = 0; p < P; p++) s += (u128)((__int128)v[p] * v[p]);
  return s;
}

static void sum_int(mt_fixture *f, const double *caps, int64_t *sum, double *post)
{
  int st = dpgd_model_clipped_grad_sum_int(f->m, f->ws, f->ds, caps, sum, post);
  if (st) fail_msg("sum_int: %s", dpgd_error_last());
}

/* Every removal: S - S_{-i} is example i's row alone, exactly; its norm is within the
 * cap; post is a true bound within the cap; the row is the float gradient times the clip
 * factor, rounded toward zero (unclipped rows: within one unit and a float rounding). */
static void check_removals(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                           size_t cols, size_t n)
{
  mt_fixture *f = mt_fixture_make(t, act, rows, cols, 10, n, 4, 1);
  assert_int_equal(dpgd_grad_ws_set_grid(f->ws, F_TEST), DPGD_OK);
  const size_t P = f->P;
  double *caps = xalloc(n * sizeof *caps), *caps1 = xalloc(n * sizeof *caps1);
  double *post = xalloc(n * sizeof *post), *post1 = xalloc(n * sizeof *post1);
  double *g = xalloc(P * sizeof *g);
  uint64_t *k = xalloc(n * sizeof *k);
  int64_t *S = xalloc(P * 8), *Si = xalloc(P * 8), *row = xalloc(P * 8);
  uint64_t s = 2385;
  for (size_t i = 0; i < n; i++) { /* 0, clipping caps (1/64 .. 2), and 64: none clipped */
    double u = tu_urand(&s);
    k[i] = u < 0.15 ? 0 : u < 0.35 ? 4096 : 1 + (uint64_t)(127 * tu_urand(&s));
    caps[i] = (double)k[i] / 64;
  }
  sum_int(f, caps, S, post);
  /* The grid's cost: S 2^-F is the double path's clipped sum within one unit per row and
   * coordinate, plus the float rounding of the dense layers' products and of the clip
   * factor (relative 2^-22 of the terms). */
  double *Sd = xalloc(P * sizeof *Sd);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, Sd, NULL, NULL), 0);
  for (size_t p = 0; p < P; p++)
    assert_true(fabs(ldexp((double)S[p], -F_TEST) - Sd[p]) <=
                (double)n * 0x1p-24 + 0x1p-20 * (fabs(Sd[p]) + 1.0));
  free(Sd);
  size_t clipped = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(caps1, caps, n * sizeof *caps);
    caps1[i] = 0;
    sum_int(f, caps1, Si, NULL);
    memset(caps1, 0, n * sizeof *caps1);
    caps1[i] = caps[i];
    sum_int(f, caps1, row, post1);
    for (size_t p = 0; p < P; p++)
      if (S[p] - Si[p] != row[p])
        fail_msg("example %zu, coordinate %zu: S - S_-i != row", i, p);
    u128 q = norm2(row, P);
    assert_true(q <= cap2_units(k[i]));
    assert_true(post1[i] == post[i]); /* the same row in both runs */
    assert_true(ldexp(post[i], 2 * F_TEST) >= (double)q);
    assert_true(post[i] <= caps[i] * caps[i]);
    if (k[i] == 0) {
      assert_true(q == 0 && post[i] == 0.0);
      continue;
    }
    /* The float gradient (the engine's double sum of this example alone, unclipped). */
    mt_engine_grad(f->m, f->ws, f->ds, i, g);
    double gn = mt_norm(g, P), c = caps[i];
    int clip = gn > c * (1 - 1e-6);
    clipped += clip;
    double scale = clip ? c / gn : 1.0;
    for (size_t p = 0; p < P; p++) {
      double want = g[p] * scale * 0x1p24, tol = 1.0 + fabs(want) * (clip ? 2e-6 : 0x1p-22);
      if ((double)row[p] * g[p] < 0 || fabs((double)row[p] - want) > tol)
        fail_msg("example %zu coordinate %zu: row %lld, float %.17g", i, p, (long long)row[p],
                 want);
    }
  }
  assert_true(clipped > 0 && clipped < n);
  free(caps), free(caps1), free(post), free(post1), free(g), free(k), free(S), free(Si);
  free(row);
  mt_fixture_free(f);
}

static void test_removals_softmax(void **state)
{
  (void)state;
  check_removals(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 40);
}

static void test_removals_cnn(void **state)
{
  (void)state;
  check_removals(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 30);
  check_removals(dpgd_model_cnn, DPGD_ACT_TANH, 28, 28, 12);
}

static void test_removals_scatter_cnn(void **state)
{
  (void)state;
  check_removals(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 49, 10);
}

/* The same bits for 1 and 3 threads, spans of one chunk and of three, constant time on
 * (examples with cap 0 computed, contributing nothing) and off. */
static void test_order_free(void **state)
{
  (void)state;
  const size_t n = 37;
  mt_fixture *a = mt_fixture_make(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10, n, 4, 1);
  mt_fixture *b = mt_fixture_make(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10, n, 4, 3);
  assert_int_equal(dpgd_grad_ws_set_grid(a->ws, 30), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_set_grid(b->ws, 30), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_grid(b->ws), 30);
  assert_int_equal(dpgd_grad_ws_set_span(a->ws, 4), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_set_span(b->ws, 12), DPGD_OK);
  dpgd_grad_ws_set_constant_time(b->ws, 1);
  double caps[37];
  for (size_t i = 0; i < n; i++) caps[i] = i % 5 == 0 ? 0.0 : 0.1 + 0.037 * (double)i;
  int64_t *s1 = xalloc(a->P * 8), *s2 = xalloc(a->P * 8);
  double p1[37], p2[37];
  sum_int(a, caps, s1, p1);
  sum_int(b, caps, s2, p2);
  assert_memory_equal(s1, s2, a->P * 8);
  assert_memory_equal(p1, p2, sizeof p1);
  free(s1), free(s2);
  mt_fixture_free(a);
  mt_fixture_free(b);
}

/* dpgd_grid_cap2 against exact integers: caps with short significands square exactly. */
static void test_cap2(void **state)
{
  (void)state;
  assert_true(dpgd_grid_cap2(2.375, 20) == (u128)361 << 34); /* 2.375 = 19/8 */
  assert_true(dpgd_grid_cap2(0.0, 20) == 0);
  assert_true(dpgd_grid_cap2(1.0, 0) == 1);
  assert_true(dpgd_grid_cap2(0.75, 0) == 0); /* 0.5625 rounds down to 0 units */
  /* cap = 1 + 2^-30: cap^2 = 1 + 2^-29 + 2^-60 is not a double; rounded down to
   * 1 + 2^-29, then floor(2^40 (1 + 2^-29)) = 2^40 + 2^11. */
  assert_true(dpgd_grid_cap2(1 + 0x1p-30, 20) == ((u128)1 << 40) + 2048);
}

/* The exact check does not trust the float norm: a row whose squared norm is given 16
 * times too small gets a clip factor 4 times too large, fails the integer check and is
 * halved until it passes, in dpgd_grid_row and in dpgd_grid_row_add (whose acc moves by
 * exactly that row), on the vectorised path (cap 2^F < 2^26) and the 128-bit one. */
static void test_exact_check_rescues(void **state)
{
  (void)state;
  enum { LEN = 5000 };
  static float g[LEN];
  static int64_t v[LEN], irow[LEN], acc[LEN], acc0[LEN];
  uint64_t s = 77;
  double sq = 0;
  for (size_t p = 0; p < LEN; p++) {
    g[p] = (float)(tu_urand(&s) - 0.5);
    sq += (double)g[p] * g[p];
    acc0[p] = (int64_t)(tu_urand(&s) * 1e6) - 500000;
  }
  const double caps[] = {1.25, 1.25, 10.0};
  const int Fs[] = {20, 36, 24};
  for (int k = 0; k < 3; k++) {
    double pre, post, post2;
    u128 q = dpgd_grid_row(v, g, LEN, sq / 16, caps[k], LEN, Fs[k], &pre, &post);
    u128 c2 = dpgd_grid_cap2(caps[k], Fs[k]);
    assert_true(q == norm2(v, LEN) && q <= c2);
    assert_true(q > c2 / 16); /* halved once or twice, not to nothing */
    assert_true(ldexp(post, 2 * Fs[k]) >= (double)q && post <= caps[k] * caps[k]);
    memcpy(acc, acc0, sizeof acc);
    dpgd_grid_row_add(acc, irow, g, LEN, sq / 16, caps[k], LEN, Fs[k], &post2);
    for (size_t p = 0; p < LEN; p++) assert_true(acc[p] - acc0[p] == v[p]);
    assert_true(post2 == post);
  }
}

/* n C 2^F <= 2^62, std 2^F <= 2^30 and C 2^F < 2^26, F the largest such (or 40), for n
 * up to 2^32 - 1 (an IDX file's count); checked in exact integers. */
static void test_grid_bits(void **state)
{
  (void)state;
  const size_t ns[] = {1, 100, 60000, 1000000, (size_t)UINT32_MAX};
  const double cs[] = {1e-3, 0.1, 1.0, 2.385, 10.0, 1e4};
  const double ss[] = {0.5, 3.7, 100.0, 1e5};
  for (size_t a = 0; a < 5; a++)
    for (size_t b = 0; b < 6; b++)
      for (size_t c = 0; c < 4; c++) {
        int F = -1;
        double std = ss[c] * cs[b];
        int st = dpgd_model_grid_bits(ns[a], cs[b], std, &F);
        if (st) {
          dpgd_error_clear();
          /* refused only when F = 0 would not fit */
          assert_true((double)ns[a] * cs[b] > 0x1p61 || std > 0x1p30 || cs[b] >= 0x1p25);
          continue;
        }
        assert_true(F >= 0 && F <= DPGD_GRID_MAX_BITS);
        /* every row coordinate is at most floor(C 2^F) units */
        u128 total = (u128)ns[a] * (uint64_t)floor(ldexp(cs[b], F));
        assert_true(total <= (u128)1 << 62);
        assert_true(ldexp(std, F) <= 0x1p30);
        assert_true(ldexp(cs[b], F) < 0x1p26); /* coordinates in 27 bits */
        if (F < DPGD_GRID_MAX_BITS)            /* maximal, up to the 2^-20 padding */
          assert_true((double)ns[a] * ldexp(cs[b], F + 1) > 0x1p62 * (1 - 0x1p-19) ||
                      ldexp(std, F + 1) > 0x1p30 ||
                      ldexp(cs[b], F + 1) >= 0x1p26 * (1 - 0x1p-19));
      }
  int F;
  assert_int_equal(dpgd_model_grid_bits(0, 1.0, 1.0, &F), DPGD_EINVAL);
  assert_int_equal(dpgd_model_grid_bits(10, INFINITY, 1.0, &F), DPGD_EINVAL);
  assert_int_equal(dpgd_model_grid_bits(10, 1.0, 0x1p31, &F), DPGD_ERANGE);
  dpgd_error_clear();
}

/* n rows v e_0 (a dataset's fixed rows), each clipped to its cap, all on coordinate 0;
 * caps chosen so that sum_i floor(cap_i 2^F) = 2^62 exactly: the sum is the exact sum
 * of the rows computed alone (no overflow); one more unit of cap is refused. */
static void test_largest_sum(void **state)
{
  (void)state;
  const size_t n = 64, P = 7850;
  const int F = 40;
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  dpgd_dataset *ds = dpgd_data_alloc(n, 28, 28, 10);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 2);
  assert_true(m && ds && ws);
  dpgd_model_init(m, 5);
  uint32_t coord[64] = {0};
  memset(ds->labels, 0, n);
  ds->fixed_from = 0;
  ds->fixed_coord = coord;
  ds->fixed_value = 0x1p30f; /* every row clipped */
  double caps[64], caps1[64], post[64];
  for (size_t i = 0; i < n; i++)
    caps[i] = 0x1p16; /* floor(cap 2^40) = 2^56 units, 64 of them */
  assert_int_equal(dpgd_grad_ws_set_grid(ws, F), DPGD_OK);
  int64_t *S = xalloc(P * 8), *row = xalloc(P * 8);
  if (dpgd_model_clipped_grad_sum_int(m, ws, ds, caps, S, post))
    fail_msg("%s", dpgd_error_last());
  u128 want = 0;
  for (size_t i = 0; i < n; i++) {
    memset(caps1, 0, sizeof caps1);
    caps1[i] = caps[i];
    assert_int_equal(dpgd_model_clipped_grad_sum_int(m, ws, ds, caps1, row, NULL), DPGD_OK);
    assert_true(row[0] > 0 && (u128)row[0] * (u128)row[0] <= (u128)1 << 112);
    want += (u128)row[0];
  }
  assert_true(want > (u128)1 << 61 && want <= (u128)1 << 62);
  assert_true((u128)S[0] == want);
  /* Coded rows (fixed_sign): a row of sign -1 is the negated row on the grid, exactly;
   * the charged norms are the same. */
  signed char sign[64];
  __int128 want_signed = 0;
  assert_true(want % n == 0); /* equal caps: equal rows */
  double post_signed[64];
  for (size_t i = 0; i < n; i++) {
    sign[i] = i % 4 == 1 ? -1 : 1;
    want_signed += sign[i] * (__int128)(want / n);
  }
  ds->fixed_sign = sign;
  assert_int_equal(dpgd_model_clipped_grad_sum_int(m, ws, ds, caps, S, post_signed), DPGD_OK);
  assert_true((__int128)S[0] == want_signed);
  assert_memory_equal(post_signed, post, sizeof post);
  ds->fixed_sign = NULL;
  caps[7] = nextafter(caps[7], INFINITY) * (1 + 0x1p-40); /* one unit more */
  assert_int_equal(dpgd_model_clipped_grad_sum_int(m, ws, ds, caps, S, post), DPGD_ERANGE);
  caps[7] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum_int(m, ws, ds, caps, S, post), DPGD_EINVAL);
  dpgd_error_clear();
  ds->fixed_coord = NULL;
  free(S), free(row);
  dpgd_grad_ws_free(ws);
  dpgd_data_free(ds);
  dpgd_model_free(m);
}

/* Argument checks: no grid set, a grid out of range. */
static void test_args(void **state)
{
  (void)state;
  mt_fixture *f = mt_fixture_make(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10, 3, 4, 1);
  double caps[3] = {1, 1, 1};
  int64_t *S = xalloc(f->P * 8);
  assert_int_equal(dpgd_grad_ws_grid(f->ws), -1);
  assert_int_equal(dpgd_model_clipped_grad_sum_int(f->m, f->ws, f->ds, caps, S, NULL),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_grad_ws_set_grid(f->ws, DPGD_GRID_MAX_BITS + 1), DPGD_EINVAL);
  assert_int_equal(dpgd_grad_ws_set_grid(f->ws, -1), DPGD_EINVAL);
  dpgd_error_clear();
  free(S);
  mt_fixture_free(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cap2),
      cmocka_unit_test(test_grid_bits),
      cmocka_unit_test(test_args),
      cmocka_unit_test(test_exact_check_rescues),
      cmocka_unit_test(test_largest_sum),
      cmocka_unit_test(test_order_free),
      cmocka_unit_test(test_removals_softmax),
      cmocka_unit_test(test_removals_cnn),
      cmocka_unit_test(test_removals_scatter_cnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
