/* test_model.c -- the models on synthetic data (label quick): OpenBLAS is the sgemm
 * linked; per-example gradients against the double reference (ref_model.c), which is
 * itself checked against central finite differences; per-example sums against the
 * batch gradient; independence; chunk/thread invariance; clipping boundaries; NaN
 * inputs. Initialisation, evaluation, model files, bad arguments and allocation
 * failure: test_model_io.c. Tolerances are stated where used. */
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

#include "model_internal.h"
#include "mtest.h"

/* Engine (float) against the double reference: relative error of the whole vector. */
#define TOL_GRAD 2e-5
/* Different chunk sizes / thread counts: float sums in other groupings. */
#define TOL_INVARIANT 1e-5

/* ---- OpenBLAS ------------------------------------------------------------------- */

/* GSL's CBLAS (libgslcblas) also defines cblas_sgemm; linked first it shadows
 * OpenBLAS's (cmake/DpgdDeps.cmake). The symbol we call must come from libopenblas. */
static void test_sgemm_is_openblas(void **state)
{
  (void)state;
  Dl_info info;
  void *sym = (void *)cblas_sgemm;
  assert_true(dladdr(sym, &info) != 0);
  assert_non_null(info.dli_fname);
  if (!strstr(info.dli_fname, "openblas"))
    fail_msg("cblas_sgemm comes from %s, not OpenBLAS", info.dli_fname);
  void *gsl_sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
  assert_ptr_equal(gsl_sym, sym);
  assert_non_null(openblas_get_config());
}

/* ---- the reference model against finite differences ----------------------------- */

static void check_ref_fd(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                         size_t cols, int K)
{
  mt_fixture *f = mt_fixture_make(t, act, rows, cols, K, 3, 0, 1);
  double *th = mt_params_d(f->m);
  double *g = malloc(f->P * sizeof *g), *fd = malloc(f->P * sizeof *fd);
  size_t ni, *idx = mt_fd_indices(f->m, &ni);
  for (size_t i = 0; i < f->n; i++) {
    float *x = mt_unpack1(f->ds, i);
    ref_grad(f->m, th, x, f->ds->labels[i], g);
    mt_fd_loss_sum(fd, f->m, th, x, &f->ds->labels[i], 1, idx, ni, 1e-6);
    double e = mt_sub_rel_err(g, fd, idx, ni);
    if (e > 1e-6) fail_msg("%s: reference gradient vs finite differences: %g", t->name, e);
    free(x);
  }
  free(idx);
  free(g);
  free(fd);
  free(th);
  mt_fixture_free(f);
}

static void test_softmax_ref_fd(void **state)
{
  (void)state;
  check_ref_fd(dpgd_model_softmax, DPGD_ACT_RELU, 7, 5, 4);
}

/* ---- per-example gradients ------------------------------------------------------ */

/* Each example's gradient (through the public engine) and its pre-clip squared norm
 * against the double reference. */
static void check_per_example(mt_fixture *f)
{
  double *th = mt_params_d(f->m);
  double *g = malloc(f->P * sizeof *g), *r = malloc(f->P * sizeof *r);
  double *caps = malloc(f->n * sizeof *caps), *pre = malloc(f->n * sizeof *pre);
  double *sum = malloc(f->P * sizeof *sum);
  for (size_t i = 0; i < f->n; i++) caps[i] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre, NULL), 0);
  for (size_t i = 0; i < f->n; i++) {
    float *x = mt_unpack1(f->ds, i);
    ref_grad(f->m, th, x, f->ds->labels[i], r);
    mt_engine_grad(f->m, f->ws, f->ds, i, g);
    double e = mt_rel_err(g, r, f->P, 1e-12);
    if (e > TOL_GRAD) fail_msg("%s example %zu: gradient error %g", f->type->name, i, e);
    double nr = mt_norm(r, f->P);
    if (fabs(pre[i] - nr * nr) > 2 * TOL_GRAD * nr * nr)
      fail_msg("%s example %zu: squared norm %.9g, reference %.9g", f->type->name, i, pre[i],
               nr * nr);
    free(x);
  }
  free(th);
  free(g);
  free(r);
  free(caps);
  free(pre);
  free(sum);
}

/* Sum of per-example gradients (engine, all caps +inf) against the batch gradient:
 * finite differences in double of the TOTAL reference loss over the batch. */
static void check_batch(mt_fixture *f)
{
  double *th = mt_params_d(f->m);
  double *sum = malloc(f->P * sizeof *sum), *fd = calloc(f->P, sizeof *fd);
  double *caps = malloc(f->n * sizeof *caps);
  float *x = malloc(f->n * f->ds->d * sizeof *x);
  size_t ni, *idx = mt_fd_indices(f->m, &ni);
  dpgd_data_unpack(x, f->ds, 0, f->n);
  for (size_t i = 0; i < f->n; i++) caps[i] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, NULL, NULL), 0);
  mt_fd_loss_sum(fd, f->m, th, x, f->ds->labels, f->n, idx, ni, 1e-6);
  double e = mt_sub_rel_err(sum, fd, idx, ni);
  if (e > TOL_GRAD)
    fail_msg("%s: sum of per-example gradients vs batch FD: %g", f->type->name, e);
  free(idx);
  free(th);
  free(sum);
  free(fd);
  free(caps);
  free(x);
}

/* Changing example j leaves every other example's gradient (and norm) unchanged, bit
 * for bit. */
static void check_independence(mt_fixture *f)
{
  double *caps = malloc(f->n * sizeof *caps);
  double *pre0 = malloc(f->n * sizeof *pre0), *pre1 = malloc(f->n * sizeof *pre1);
  double *sum = malloc(f->P * sizeof *sum);
  double *g0 = malloc(f->P * sizeof *g0), *g1 = malloc(f->P * sizeof *g1);
  for (size_t i = 0; i < f->n; i++) caps[i] = INFINITY;
  size_t j = f->n / 2, i = j > 0 ? j - 1 : j + 1;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre0, NULL), 0);
  mt_engine_grad(f->m, f->ws, f->ds, i, g0);
  for (size_t p = 0; p < f->ds->d; p++) f->ds->pixels[j * f->ds->d + p] ^= 0x5a;
  f->ds->labels[j] = (uint8_t)((f->ds->labels[j] + 1) % f->K);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre1, NULL), 0);
  mt_engine_grad(f->m, f->ws, f->ds, i, g1);
  for (size_t k = 0; k < f->n; k++) {
    if (k == j) {
      assert_true(pre0[k] != pre1[k]);
      continue;
    }
    if (memcmp(&pre0[k], &pre1[k], sizeof(double)))
      fail_msg("example %zu's norm moved when example %zu changed", k, j);
  }
  assert_memory_equal(g1, g0, f->P * sizeof(double));
  free(caps);
  free(pre0);
  free(pre1);
  free(sum);
  free(g0);
  free(g1);
}

/* Chunk size and thread count only regroup the clipped sum: it agrees within
 * TOL_INVARIANT (relative, whole vector); every example's norms are the same bits, its
 * position in a chunk and the chunk's size entering none of its values
 * (SENSITIVITY.md 5). */
static void check_invariance(mt_fixture *f)
{
  static const size_t chunks[] = {1, 3, 16, 64};
  static const int threads[] = {1, 2};
  double *caps = malloc(f->n * sizeof *caps);
  for (size_t i = 0; i < f->n; i++) caps[i] = 0.05 + (double)(i % 5) * 0.3;
  caps[1] = 0.0;
  double *ref = malloc(f->P * sizeof *ref), *sum = malloc(f->P * sizeof *sum);
  double *pre_ref = malloc(f->n * sizeof(double)), *pre = malloc(f->n * sizeof(double));
  double *post_ref = malloc(f->n * sizeof(double)), *post = malloc(f->n * sizeof(double));
  int first = 1;
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
    for (size_t t = 0; t < 2; t++) {
      dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, chunks[c], threads[t]);
      assert_non_null(ws);
      assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, caps, first ? ref : sum,
                                                   first ? pre_ref : pre,
                                                   first ? post_ref : post),
                       0);
      dpgd_grad_ws_free(ws);
      if (first) {
        first = 0;
        continue;
      }
      double e = mt_rel_err(sum, ref, f->P, 1e-12);
      if (e > TOL_INVARIANT)
        fail_msg("chunk %zu threads %d: sum differs by %g", chunks[c], threads[t], e);
      if (memcmp(pre, pre_ref, f->n * sizeof(double)) ||
          memcmp(post, post_ref, f->n * sizeof(double)))
        fail_msg("chunk %zu threads %d: an example's norm differs", chunks[c], threads[t]);
    }
  /* The same chunking with 1 and 2 threads: the same chunk sums added in the same tree,
   * so the same bits (tests/model/test_reduce.c checks more thread counts). */
  dpgd_grad_ws *w1 = dpgd_grad_ws_alloc(f->m, 4, 1), *w2 = dpgd_grad_ws_alloc(f->m, 4, 2);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, w1, f->ds, caps, ref, NULL, NULL), 0);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, w2, f->ds, caps, sum, NULL, NULL), 0);
  assert_memory_equal(sum, ref, f->P * sizeof(double));
  dpgd_grad_ws_free(w1);
  dpgd_grad_ws_free(w2);
  /* Constant-time mode also computes the rows with cap 0 (caps[1]): the same sum
   * within TOL_INVARIANT, the same post bits (0 for cap 0), a measured pre for every
   * row, the same bits as in skipping mode for every other row. */
  w1 = dpgd_grad_ws_alloc(f->m, 4, 1);
  w2 = dpgd_grad_ws_alloc(f->m, 4, 1);
  dpgd_grad_ws_set_constant_time(w2, 1);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, w1, f->ds, caps, ref, pre_ref, post_ref),
                   0);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, w2, f->ds, caps, sum, pre, post), 0);
  assert_true(mt_rel_err(sum, ref, f->P, 1e-12) <= TOL_INVARIANT);
  assert_true(isnan(pre_ref[1]) && isfinite(pre[1]) && post[1] == 0 && post_ref[1] == 0);
  assert_memory_equal(post, post_ref, f->n * sizeof(double));
  for (size_t i = 0; i < f->n; i++)
    if (i != 1) assert_memory_equal(&pre[i], &pre_ref[i], sizeof(double));
  dpgd_grad_ws_free(w1);
  dpgd_grad_ws_free(w2);
  free(caps);
  free(ref);
  free(sum);
  free(pre_ref);
  free(pre);
  free(post_ref);
  free(post);
}

/* Clipping boundaries: cap 0 (skipped, zero contribution), cap above ||g|| by more
 * than the norm's rounding bound (untouched, bit for bit), cap exactly ||g|| and below
 * (norm of the contribution <= cap, and not much below), +inf. */
static void check_clipping(mt_fixture *f)
{
  size_t n = f->n, P = f->P;
  double *caps = calloc(n, sizeof *caps), *pre = calloc(n, sizeof *pre);
  double *post = calloc(n, sizeof *post), *sum = malloc(P * sizeof *sum);
  double *g = malloc(P * sizeof *g), *c = malloc(P * sizeof *c);
  for (size_t i = 0; i < n; i++) caps[i] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre, post), 0);
  /* Unclipped: post is pre raised by the norm's rounding bound, 2 (P + 8) u + 2^-50. */
  for (size_t i = 0; i < n; i++) {
    assert_true(isfinite(pre[i]) && pre[i] > 0);
    assert_true(post[i] >= pre[i] && post[i] <= pre[i] * (1 + 1e-9));
  }
  size_t i = n - 1;
  mt_engine_grad(f->m, f->ws, f->ds, i, g);
  double norm = sqrt(pre[i]);
  const double factors[] = {0.0, 0.3, 0.999, 1.0, 1.0 + 1e-9, 2.385};
  for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
    for (size_t q = 0; q < n; q++) caps[q] = 0.0;
    caps[i] = factors[k] * norm;
    if (factors[k] == 1.0) { /* the smallest cap with cap^2 >= ||g||^2: clipped, since
                              * the computed norm may be below the true one */
      caps[i] = sqrt(pre[i]);
      while (caps[i] * caps[i] < pre[i]) caps[i] = nextafter(caps[i], INFINITY);
    }
    assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, c, pre, post), 0);
    for (size_t q = 0; q < n; q++)
      if (q != i) {
        assert_true(isnan(pre[q]));
        assert_true(post[q] == 0.0);
      }
    double cn = mt_norm(c, P);
    if (factors[k] == 0.0) {
      assert_true(isnan(pre[i]));
      assert_true(post[i] == 0.0);
      assert_true(cn == 0.0);
    } else if (factors[k] > 1.0) {
      assert_memory_equal(c, g, P * sizeof *c); /* untouched */
      assert_true(post[i] >= pre[i] && post[i] <= caps[i] * caps[i]);
    } else {
      assert_true(cn <= caps[i]);
      assert_true(cn >= caps[i] * (1 - 1e-5));
      assert_true(post[i] <= caps[i] * caps[i]);
      assert_true(post[i] >= cn * cn);
      for (size_t p = 0; p < P; p++) /* same direction */
        assert_true(fabs(c[p] - g[p] * cn / norm) <= 1e-5 * norm);
    }
  }
  /* Invalid caps are refused. */
  caps[0] = NAN;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, NULL, NULL),
                   DPGD_EINVAL);
  caps[0] = -1.0;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, NULL, NULL),
                   DPGD_EINVAL);
  free(caps);
  free(pre);
  free(post);
  free(sum);
  free(g);
  free(c);
}

/* A NaN (or infinite) input makes a non-finite gradient: norm +inf, post 0, and the
 * chunk's sum is exactly the sum without that example. */
static void check_nan(mt_fixture *f)
{
  const size_t B = 4, d = f->ds->d, P = f->P;
  float *x = malloc(B * d * sizeof *x), *x2 = malloc(B * d * sizeof *x2);
  dpgd_data_unpack(x, f->ds, 0, B);
  uint8_t y[4];
  memcpy(y, f->ds->labels, B);
  double caps[4] = {INFINITY, INFINITY, 1.0, INFINITY}, pre[4], post[4];
  double *a = calloc(P, sizeof *a), *b = calloc(P, sizeof *b);
  for (int variant = 0; variant < 2; variant++) {
    memcpy(x2, x, B * d * sizeof *x);
    x2[1 * d + d / 2] = variant ? INFINITY : NAN;
    memset(a, 0, P * sizeof *a);
    assert_int_equal(dpgd_model_chunk_step_x(f->m, f->ws, a, pre, post, x2, y, caps, B), 0);
    assert_true(isinf(pre[1]) && pre[1] > 0);
    assert_true(post[1] == 0.0);
    for (size_t p = 0; p < P; p++) assert_true(isfinite(a[p]));
    /* Same chunk with example 1's cap 0 instead (rows kept aligned). */
    memcpy(x2, x, B * d * sizeof *x);
    double caps0[4] = {caps[0], 0.0, caps[2], caps[3]};
    memset(b, 0, P * sizeof *b);
    assert_int_equal(dpgd_model_chunk_step_x(f->m, f->ws, b, pre, post, x2, y, caps0, B), 0);
    assert_true(mt_rel_err(a, b, P, 1e-12) <= 1e-6);
  }
  free(x);
  free(x2);
  free(a);
  free(b);
}

static void run_all_checks(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                           size_t cols, int K, size_t n)
{
  mt_fixture *f = mt_fixture_make(t, act, rows, cols, K, n, 5, 2);
  check_per_example(f);
  check_batch(f);
  check_clipping(f);
  check_nan(f);
  check_invariance(f);
  check_independence(f);
  mt_fixture_free(f);
}

static void test_softmax_small(void **state)
{
  (void)state;
  run_all_checks(dpgd_model_softmax, DPGD_ACT_RELU, 7, 5, 4, 13);
}

static void test_softmax_mnist_shape(void **state)
{
  (void)state;
  mt_fixture *f = mt_fixture_make(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10, 70, 0, 2);
  assert_int_equal(f->P, 7850);
  check_per_example(f);
  check_clipping(f);
  check_invariance(f);
  mt_fixture_free(f);
}

static void test_cnn_ref_fd(void **state)
{
  (void)state;
  check_ref_fd(dpgd_model_cnn, DPGD_ACT_TANH, 28, 28, 10);
  check_ref_fd(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10);
}

static void test_cnn_tanh(void **state)
{
  (void)state;
  run_all_checks(dpgd_model_cnn, DPGD_ACT_TANH, 28, 28, 10, 11);
}

static void test_cnn_relu(void **state)
{
  (void)state;
  run_all_checks(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10, 11);
}

/* Tramer & Boneh's CNN on scattering features: a small one (5 channels of 7 x 7, 4
 * classes) through every check, and the MNIST shape (81 x 49, 10 classes). The inputs
 * are synthetic C x 49 arrays, read channels-first as the feature datasets store them. */
static void test_scatter_cnn_ref_fd(void **state)
{
  (void)state;
  check_ref_fd(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 5, 49, 4);
  check_ref_fd(dpgd_model_scatter_cnn, DPGD_ACT_RELU, 5, 49, 4);
  check_ref_fd(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 49, 10);
}

static void test_scatter_cnn_small(void **state)
{
  (void)state;
  run_all_checks(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 5, 49, 4, 11);
  run_all_checks(dpgd_model_scatter_cnn, DPGD_ACT_RELU, 3, 49, 3, 9);
}

static void test_scatter_cnn_mnist_shape(void **state)
{
  (void)state;
  mt_fixture *f = mt_fixture_make(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 49, 10, 40, 0, 2);
  assert_int_equal(f->P, 33066); /* 11,680 + 4,640 + 16,416 + 330, as in PyTorch */
  check_per_example(f);
  check_clipping(f);
  check_invariance(f);
  mt_fixture_free(f);
}

/* The fused step against the examples computed one at a time (unfused): with one leaf
 * of one chunk, each parameter of the per-example (convolution) part of the clipped sum
 * is the examples' clipped contributions, each computed alone, added in double in row
 * order from 0, bit for bit (a row's bits do not depend on the other rows, and
 * accumulate_rows adds row after row); the dense layers' part, summed by one dgemm,
 * agrees within 1e-12 relative. For models whose first tensors are formed per example
 * (the CNNs): pformed is their parameter count. */
static void check_unfused(mt_fixture *f, size_t pformed)
{
  const size_t n = f->n, P = f->P;
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, n, 1);
  assert_non_null(ws);
  double *caps = malloc(n * sizeof *caps), *one = calloc(n, sizeof *one);
  double *sum = malloc(P * sizeof *sum), *c = malloc(P * sizeof *c), *r = calloc(P, sizeof *r);
  for (size_t i = 0; i < n; i++) caps[i] = i % 3 == 0 ? INFINITY : 0.02 + 0.3 * (double)i;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, caps, sum, NULL, NULL), 0);
  for (size_t i = 0; i < n; i++) {
    one[i] = caps[i];
    assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, one, c, NULL, NULL), 0);
    one[i] = 0.0;
    for (size_t p = 0; p < P; p++) r[p] += c[p];
  }
  for (size_t p = 0; p < pformed; p++)
    if (memcmp(&sum[p], &r[p], sizeof(double)))
      fail_msg("%s: parameter %zu: fused sum %.17g, unfused %.17g", f->type->name, p, sum[p],
               r[p]);
  double e = mt_rel_err(sum + pformed, r + pformed, P - pformed, 1e-12);
  if (e > 1e-12) fail_msg("%s: dense part of the sum differs by %g", f->type->name, e);
  dpgd_grad_ws_free(ws);
  free(caps), free(one), free(sum), free(c), free(r);
}

static size_t conv_params(const dpgd_model *m)
{
  return m->tensors[0].size + m->tensors[1].size + m->tensors[2].size + m->tensors[3].size;
}

static void test_unfused(void **state)
{
  (void)state;
  mt_fixture *f = mt_fixture_make(dpgd_model_scatter_cnn, DPGD_ACT_TANH, 81, 49, 10, 13, 0, 1);
  check_unfused(f, conv_params(f->m));
  mt_fixture_free(f);
  f = mt_fixture_make(dpgd_model_cnn, DPGD_ACT_RELU, 28, 28, 10, 13, 0, 1);
  check_unfused(f, conv_params(f->m));
  mt_fixture_free(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgemm_is_openblas), cmocka_unit_test(test_softmax_ref_fd),
      cmocka_unit_test(test_softmax_small),     cmocka_unit_test(test_softmax_mnist_shape),
      cmocka_unit_test(test_cnn_ref_fd),        cmocka_unit_test(test_cnn_tanh),
      cmocka_unit_test(test_cnn_relu),          cmocka_unit_test(test_scatter_cnn_ref_fd),
      cmocka_unit_test(test_scatter_cnn_small), cmocka_unit_test(test_scatter_cnn_mnist_shape),
      cmocka_unit_test(test_unfused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
