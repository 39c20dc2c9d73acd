/* test_model_io.c -- the models around training (label quick): initialisation;
 * evaluation, with any thread count; model files and every corruption; bad arguments;
 * the FLOP counts; allocation failure at each allocation with no leak. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <cblas.h>

#include "../data/failalloc.h"
#include "model_internal.h"
#include "mtest.h"

/* ---- initialisation and evaluation --------------------------------------------- */

static void test_init(void **state)
{
  (void)state;
  dpgd_model *a = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  dpgd_model *b = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  assert_non_null(a);
  assert_non_null(b);
  size_t P = dpgd_model_n_params(a);
  dpgd_model_init(a, 42);
  dpgd_model_init(b, 42);
  assert_memory_equal(dpgd_model_params(a), dpgd_model_params(b), P * sizeof(float));
  dpgd_model_init(b, 43);
  assert_memory_not_equal(dpgd_model_params(a), dpgd_model_params(b), P * sizeof(float));
  /* uniform(-1/sqrt(784), 1/sqrt(784)): bound, mean 0 and variance bound^2/3 within
   * 5 standard errors. */
  const float *p = dpgd_model_params(a);
  double bound = 1.0 / 28.0, s = 0, s2 = 0;
  for (size_t j = 0; j < P; j++) {
    assert_true(fabs(p[j]) <= bound);
    s += p[j];
    s2 += (double)p[j] * p[j];
  }
  double var = bound * bound / 3;
  assert_true(fabs(s / P) < 5 * sqrt(var / P));
  assert_true(fabs(s2 / P - var) < 5 * var * sqrt(0.8 / P)); /* Var(u^2) = 4b^4/45 */
  dpgd_model_free(a);
  dpgd_model_free(b);
}

static void test_evaluate(void **state)
{
  (void)state;
  mt_fixture *f = mt_fixture_make(dpgd_model_softmax, DPGD_ACT_RELU, 6, 6, 3, 300, 0, 1);
  double *th = mt_params_d(f->m);
  uint8_t *pred = malloc(f->n);
  size_t correct;
  double loss;
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, 0, f->n, 0, pred, &correct, &loss), 0);
  double lref = 0.0;
  size_t cref = 0;
  for (size_t i = 0; i < f->n; i++) {
    float *x = mt_unpack1(f->ds, i);
    lref += ref_loss(f->m, th, x, f->ds->labels[i]);
    /* predicted class: the reference loss is smallest for it */
    double best = INFINITY;
    int arg = 0;
    for (int k = 0; k < f->K; k++) {
      double l = ref_loss(f->m, th, x, k);
      if (l < best) {
        best = l;
        arg = k;
      }
    }
    if (arg != pred[i]) {
      /* a near tie may go either way in float */
      assert_true(fabs(ref_loss(f->m, th, x, pred[i]) - best) < 1e-5);
    }
    cref += pred[i] == f->ds->labels[i];
    free(x);
  }
  assert_int_equal(correct, cref);
  assert_true(fabs(loss - lref) <= 1e-5 * lref);
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, 10, f->n, 0, NULL, NULL, NULL),
                   DPGD_EINVAL);
  free(pred);
  free(th);
  mt_fixture_free(f);
}

/* Evaluation of a range that starts inside a chunk and spans several, with 1, 2 and 3
 * threads (and the OpenMP default): the same predictions, count and loss bit for bit
 * (the loss is reduced in chunk order), and agreeing with example-by-example evaluation
 * up to float rounding (below). Both model types; the CNN's logits use sgemm. */
static void check_evaluate_threads(const dpgd_model_type *t, size_t side, int K, size_t n)
{
  mt_fixture *f = mt_fixture_make(t, DPGD_ACT_RELU, side, side, K, n, 0, 1);
  const size_t first = 37, count = n - 50;
  uint8_t *pred1 = malloc(count), *pred = malloc(count), one;
  assert_non_null(pred1);
  assert_non_null(pred);
  size_t c1, c;
  double l1, l;
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, first, count, 1, pred1, &c1, &l1), 0);
  static const int threads[] = {2, 3, 0};
  for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
    memset(pred, 0xff, count);
    assert_int_equal(dpgd_model_evaluate(f->m, f->ds, first, count, threads[k], pred, &c, &l),
                     0);
    assert_memory_equal(pred, pred1, count);
    assert_int_equal(c, c1);
    if (memcmp(&l, &l1, sizeof l) != 0)
      fail_msg("%d threads: loss %.17g, 1 thread %.17g", threads[k], l, l1);
  }
  /* One example at a time, logits from sgemm calls of another shape: float rounding may
   * differ, so a near tie may flip (at most one here); an offset error would flip many. */
  double lsum = 0.0;
  size_t csum = 0, flips = 0;
  for (size_t i = 0; i < count; i++) {
    double li;
    size_t ci;
    assert_int_equal(dpgd_model_evaluate(f->m, f->ds, first + i, 1, 1, &one, &ci, &li), 0);
    assert_int_equal(ci, one == f->ds->labels[first + i]);
    flips += one != pred1[i];
    lsum += li;
    csum += ci;
  }
  assert_true(flips <= 1);
  assert_true(csum + flips >= c1 && csum <= c1 + flips);
  assert_true(fabs(l1 - lsum) <= 1e-5 * lsum);
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, 0, 0, 2, NULL, &c, &l), 0);
  assert_int_equal(c, 0);
  assert_true(l == 0.0);
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, 0, n, -1, NULL, &c, &l), DPGD_EINVAL);
  free(pred1);
  free(pred);
  mt_fixture_free(f);
}

static void test_evaluate_threads(void **state)
{
  (void)state;
  check_evaluate_threads(dpgd_model_softmax, 6, 3, 1100);
  check_evaluate_threads(dpgd_model_cnn, 28, 10, 700);
}

/* ---- model files --------------------------------------------------------------- */

static char tmpdir[256];

static void write_bytes(const char *path, const unsigned char *b, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  unsigned char *b = malloc(*n);
  assert_int_equal(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void put32(unsigned char *p, uint32_t v)
{
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* Recomputes the trailing CRC so that the defect under test is the only one. */
static void fix_crc(unsigned char *b, size_t n);

#include <zlib.h>
static void fix_crc(unsigned char *b, size_t n)
{
  put32(b + n - 4, (uint32_t)crc32(0L, b, (uInt)(n - 4)));
}

static void expect_load_fails(const char *name, const unsigned char *b, size_t n,
                              const char *want)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  write_bytes(path, b, n);
  dpgd_model *m = (dpgd_model *)1;
  int st = dpgd_model_load(&m, path);
  if (st != DPGD_EFORMAT) fail_msg("%s: status %d, expected DPGD_EFORMAT", name, st);
  assert_null(m);
  if (!strstr(dpgd_error_last(), want))
    fail_msg("%s: message '%s' lacks '%s'", name, dpgd_error_last(), want);
  if (!strstr(dpgd_error_last(), path)) fail_msg("%s: message does not name the file", name);
}

static void check_roundtrip(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                            size_t cols)
{
  dpgd_model *m = dpgd_model_alloc(t, act, rows, cols, 10);
  assert_non_null(m);
  dpgd_model_init(m, 99);
  char path[512];
  snprintf(path, sizeof path, "%s/%s.model", tmpdir, t->name);
  assert_int_equal(dpgd_model_save(m, path), 0);
  dpgd_model *l = NULL;
  assert_int_equal(dpgd_model_load(&l, path), 0);
  assert_ptr_equal(l->type, t);
  assert_int_equal(l->act, act);
  assert_int_equal(l->rows, rows);
  assert_int_equal(l->cols, cols);
  assert_int_equal(dpgd_model_n_params(l), dpgd_model_n_params(m));
  assert_memory_equal(dpgd_model_params(l), dpgd_model_params(m),
                      dpgd_model_n_params(m) * sizeof(float));
  dpgd_model_free(l);
  dpgd_model_free(m);
}

static void test_files(void **state)
{
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "%s/dpgd_model_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(tmpdir));
  check_roundtrip(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28);
  check_roundtrip(dpgd_model_softmax, DPGD_ACT_TANH, 28, 28);
  check_roundtrip(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28);
  check_roundtrip(dpgd_model_cnn, DPGD_ACT_TANH, 28, 28);
  check_roundtrip(dpgd_model_scatter_softmax, DPGD_ACT_RELU, 81, 49);
  check_roundtrip(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 49);
  check_roundtrip(dpgd_model_scatter_cnn, DPGD_ACT_RELU, 5, 49);

  char path[512];
  snprintf(path, sizeof path, "%s/softmax.model", tmpdir);
  size_t n;
  unsigned char *good = read_bytes(path, &n), *b = malloc(n + 8);
  assert_int_equal(n, 40 + 4 * 7850 + 4);

  memcpy(b, good, n);
  expect_load_fails("truncated", b, n - 1, "truncated");
  expect_load_fails("header_only", b, 20, "truncated");
  expect_load_fails("empty", b, 0, "bad magic");
  b[0] = 'X';
  expect_load_fails("magic", b, n, "bad magic");
  memcpy(b, good, n);
  b[100] ^= 1;
  expect_load_fails("crc", b, n, "CRC-32");
  memcpy(b, good, n);
  b[n - 1] ^= 0x80;
  expect_load_fails("crc_field", b, n, "CRC-32");
  memcpy(b, good, n);
  put32(b + 8, 2);
  fix_crc(b, n);
  expect_load_fails("version", b, n, "format version 2");
  memcpy(b, good, n);
  put32(b + 12, 4); /* a scatter-cnn of 28 x 28 inputs: not a shape it takes */
  fix_crc(b, n);
  expect_load_fails("scatter_cnn_shape", b, n, "scatter-cnn model of 28 x 28 images");
  memcpy(b, good, n);
  put32(b + 12, 77);
  fix_crc(b, n);
  expect_load_fails("type", b, n, "unknown model type");
  memcpy(b, good, n);
  put32(b + 16, 5);
  fix_crc(b, n);
  expect_load_fails("activation", b, n, "unknown activation");
  memcpy(b, good, n);
  put32(b + 28, 9); /* 9 classes: 7065 parameters, not 7850 */
  fix_crc(b, n);
  expect_load_fails("shape", b, n, "parameters");
  /* A header claiming the largest shape (16384 x 16384 images, 256 classes: 2^36
   * parameters, 275 GB) over the file's 7850 parameters is refused from the header,
   * not by an allocation failure. */
  memcpy(b, good, n);
  put32(b + 20, DPGD_DATA_MAX_SIDE);
  put32(b + 24, DPGD_DATA_MAX_SIDE);
  put32(b + 28, 256);
  fix_crc(b, n);
  expect_load_fails("huge_shape", b, n, "parameters");
  memcpy(b, good, n);
  put32(b + 40 + 4 * 17, 0x7fc00000u); /* NaN parameter */
  fix_crc(b, n);
  expect_load_fails("nan", b, n, "not finite");
  memcpy(b, good, n);
  memcpy(b + n, "xxxx", 4);
  expect_load_fails("trailing", b, n + 4, "after its checksum");

  dpgd_model *m = NULL;
  snprintf(path, sizeof path, "%s/missing.model", tmpdir);
  assert_int_equal(dpgd_model_load(&m, path), DPGD_EIO);
  snprintf(path, sizeof path, "%s/no/such/dir/x.model", tmpdir);
  m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  assert_int_equal(dpgd_model_save(m, path), DPGD_EIO);
  dpgd_model_free(m);
  free(good);
  free(b);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  assert_int_equal(system(cmd), 0);
}

/* ---- bad arguments and allocation failure --------------------------------------- */

static void test_bad_args(void **state)
{
  (void)state;
  assert_null(dpgd_model_type_find("resnet"));
  assert_ptr_equal(dpgd_model_type_find("softmax"), dpgd_model_softmax);
  assert_ptr_equal(dpgd_model_type_find("cnn"), dpgd_model_cnn);
  assert_ptr_equal(dpgd_model_type_find("scatter-cnn"), dpgd_model_scatter_cnn);
  /* the scatter CNN takes C channels of 7 x 7 (C x 49) only */
  assert_null(dpgd_model_alloc(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 28, 28, 10));
  assert_null(dpgd_model_alloc(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 48, 10));
  assert_non_null(strstr(dpgd_error_last(), "C x 49"));
  assert_null(dpgd_model_alloc(dpgd_model_softmax, (dpgd_activation)7, 28, 28, 10));
  assert_null(dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 1));
  assert_null(dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 0, 28, 10));
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  dpgd_model *m2 = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 27, 28, 10);
  assert_null(dpgd_grad_ws_alloc(m, 0, -1));
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 0, 1);
  dpgd_dataset *ds = mt_synthetic(5, 27, 28, 10, 1);
  double caps[5] = {1, 1, 1, 1, 1}, *sum = malloc(7850 * sizeof *sum);
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, NULL, NULL), DPGD_EINVAL);
  assert_int_equal(dpgd_model_clipped_grad_sum(m2, ws, ds, caps, sum, NULL, NULL), DPGD_EINVAL);
  free(sum);
  dpgd_data_free(ds);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
  dpgd_model_free(m2);
  dpgd_grad_ws_free(NULL);
  dpgd_model_free(NULL);
}

/* Allocation n fails, for n = 0, 1, ... until everything succeeds: every failure is a
 * clean status / NULL and nothing leaks. */
static void check_failalloc(const dpgd_model_type *t)
{
  snprintf(tmpdir, sizeof tmpdir, "/tmp/dpgd_fa_XXXXXX");
  assert_non_null(mkdtemp(tmpdir));
  char path[512];
  snprintf(path, sizeof path, "%s/m.model", tmpdir);
  dpgd_dataset *ds = mt_synthetic(9, 28, 28, 10, 3);
  double caps[9], *sum = malloc(30000 * sizeof *sum);
  for (int i = 0; i < 9; i++) caps[i] = 1.0;
  for (long k = 0;; k++) {
    failalloc_arm(k);
    int ok = 0;
    dpgd_model *m = dpgd_model_alloc(t, DPGD_ACT_TANH, 28, 28, 10), *l = NULL;
    dpgd_grad_ws *ws = NULL;
    if (m) {
      dpgd_model_init(m, 5);
      ws = dpgd_grad_ws_alloc(m, 4, 2);
      if (ws && dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, NULL, NULL) == 0 &&
          dpgd_model_save(m, path) == 0 && dpgd_model_load(&l, path) == 0)
        ok = 1;
    }
    dpgd_model_free(l);
    dpgd_grad_ws_free(ws);
    dpgd_model_free(m);
    long live = failalloc_live();
    failalloc_arm(-1);
    if (live != 0) fail_msg("%s: failing allocation %ld leaks %ld blocks", t->name, k, live);
    if (ok) break;
    assert_true(k < 100);
  }
  free(sum);
  dpgd_data_free(ds);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  assert_int_equal(system(cmd), 0);
}

/* The FLOP counts, recounted by hand from the architectures (dpgd_model.h). */
static void test_flops(void **state)
{
  (void)state;
  dpgd_model *s = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10);
  dpgd_model *c = dpgd_model_alloc(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10);
  assert_true(s && c);
  /* logits + clipped sum 2 * 2 * 10 * 784, norms 2 * (784 + 10) */
  assert_true(dpgd_model_flops_per_example(s) == 31360.0 + 1588.0);
  /* conv1 14x14 positions x 64 x 16, twice (forward, weight gradient); conv2 5x5 x 256
   * x 32, three times (forward, input gradient, weight gradient); fc1 512 x 32 and fc2
   * 32 x 10, three times; norms over 9264 conv parameters and 512 + 32 + 32 + 10. */
  double conv1 = 2.0 * 196 * 64 * 16, conv2 = 2.0 * 25 * 256 * 32;
  double lin = 2.0 * (512 * 32 + 32 * 10), norms = 2.0 * (9264 + 512 + 32 + 32 + 10);
  assert_true(dpgd_model_flops_per_example(c) == 2 * conv1 + 3 * conv2 + 3 * lin + norms);
  dpgd_model_free(s);
  dpgd_model_free(c);
}

static void test_failalloc(void **state)
{
  (void)state;
  check_failalloc(dpgd_model_softmax);
  check_failalloc(dpgd_model_cnn);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_evaluate),
      cmocka_unit_test(test_evaluate_threads),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_bad_args),
      cmocka_unit_test(test_flops),
      cmocka_unit_test(test_failalloc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
