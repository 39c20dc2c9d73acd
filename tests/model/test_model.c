/* test_model.c -- the models on synthetic data (label quick): OpenBLAS is the sgemm
 * linked; per-example gradients against the double reference (ref_model.c), which is
 * itself checked against central finite differences; per-example sums against the
 * batch gradient; independence; chunk/thread invariance; clipping boundaries; NaN
 * inputs; initialisation; evaluation; model files and every corruption; allocation
 * failure at each allocation. Tolerances are stated where used. */
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

/* Engine (float) against the double reference: relative error of the whole vector. */
#define TOL_GRAD 2e-5
/* Different chunk sizes / thread counts: float sums in other groupings. */
#define TOL_INVARIANT 1e-5

typedef struct fixture {
  const dpgd_model_type *type;
  dpgd_activation act;
  size_t rows, cols, n;
  int K;
  dpgd_model *m;
  dpgd_dataset *ds;
  dpgd_grad_ws *ws;
  size_t P;
} fixture;

static fixture *fixture_make(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                             size_t cols, int K, size_t n, size_t chunk, int threads)
{
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->type = t;
  f->act = act;
  f->rows = rows;
  f->cols = cols;
  f->K = K;
  f->n = n;
  f->m = dpgd_model_alloc(t, act, rows, cols, K);
  if (!f->m) fail_msg("alloc: %s", dpgd_error_last());
  dpgd_model_init(f->m, 2385);
  f->P = dpgd_model_n_params(f->m);
  f->ds = mt_synthetic(n, rows, cols, K, 7);
  f->ws = dpgd_grad_ws_alloc(f->m, chunk, threads);
  assert_non_null(f->ws);
  return f;
}

static void fixture_free(fixture *f)
{
  dpgd_grad_ws_free(f->ws);
  dpgd_data_free(f->ds);
  dpgd_model_free(f->m);
  free(f);
}

static float *unpack1(const dpgd_dataset *ds, size_t i)
{
  float *x = malloc(ds->d * sizeof *x);
  assert_non_null(x);
  dpgd_data_unpack(x, ds, i, 1);
  return x;
}

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
  fixture *f = fixture_make(t, act, rows, cols, K, 3, 0, 1);
  double *th = mt_params_d(f->m);
  double *g = malloc(f->P * sizeof *g), *fd = malloc(f->P * sizeof *fd);
  size_t ni, *idx = mt_fd_indices(f->m, &ni);
  for (size_t i = 0; i < f->n; i++) {
    float *x = unpack1(f->ds, i);
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
  fixture_free(f);
}

static void test_softmax_ref_fd(void **state)
{
  (void)state;
  check_ref_fd(dpgd_model_softmax, DPGD_ACT_RELU, 7, 5, 4);
}

/* ---- per-example gradients ------------------------------------------------------ */

/* Each example's gradient (through the public engine) and its pre-clip squared norm
 * against the double reference. */
static void check_per_example(fixture *f)
{
  double *th = mt_params_d(f->m);
  double *g = malloc(f->P * sizeof *g), *r = malloc(f->P * sizeof *r);
  double *caps = malloc(f->n * sizeof *caps), *pre = malloc(f->n * sizeof *pre);
  double *sum = malloc(f->P * sizeof *sum);
  for (size_t i = 0; i < f->n; i++) caps[i] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre, NULL), 0);
  for (size_t i = 0; i < f->n; i++) {
    float *x = unpack1(f->ds, i);
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
static void check_batch(fixture *f)
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
static void check_independence(fixture *f)
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
static void check_invariance(fixture *f)
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
static void check_clipping(fixture *f)
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
static void check_nan(fixture *f)
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
  fixture *f = fixture_make(t, act, rows, cols, K, n, 5, 2);
  check_per_example(f);
  check_batch(f);
  check_clipping(f);
  check_nan(f);
  check_invariance(f);
  check_independence(f);
  fixture_free(f);
}

static void test_softmax_small(void **state)
{
  (void)state;
  run_all_checks(dpgd_model_softmax, DPGD_ACT_RELU, 7, 5, 4, 13);
}

static void test_softmax_mnist_shape(void **state)
{
  (void)state;
  fixture *f = fixture_make(dpgd_model_softmax, DPGD_ACT_RELU, 28, 28, 10, 70, 0, 2);
  assert_int_equal(f->P, 7850);
  check_per_example(f);
  check_clipping(f);
  check_invariance(f);
  fixture_free(f);
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
  fixture *f = fixture_make(dpgd_model_softmax, DPGD_ACT_RELU, 6, 6, 3, 300, 0, 1);
  double *th = mt_params_d(f->m);
  uint8_t *pred = malloc(f->n);
  size_t correct;
  double loss;
  assert_int_equal(dpgd_model_evaluate(f->m, f->ds, 0, f->n, 0, pred, &correct, &loss), 0);
  double lref = 0.0;
  size_t cref = 0;
  for (size_t i = 0; i < f->n; i++) {
    float *x = unpack1(f->ds, i);
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
  fixture_free(f);
}

/* Evaluation of a range that starts inside a chunk and spans several, with 1, 2 and 3
 * threads (and the OpenMP default): the same predictions, count and loss bit for bit
 * (the loss is reduced in chunk order), and agreeing with example-by-example evaluation
 * up to float rounding (below). Both model types; the CNN's logits use sgemm. */
static void check_evaluate_threads(const dpgd_model_type *t, size_t side, int K, size_t n)
{
  fixture *f = fixture_make(t, DPGD_ACT_RELU, side, side, K, n, 0, 1);
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
  fixture_free(f);
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

static void check_roundtrip(const dpgd_model_type *t, dpgd_activation act)
{
  dpgd_model *m = dpgd_model_alloc(t, act, 28, 28, 10);
  assert_non_null(m);
  dpgd_model_init(m, 99);
  char path[512];
  snprintf(path, sizeof path, "%s/%s.model", tmpdir, t->name);
  assert_int_equal(dpgd_model_save(m, path), 0);
  dpgd_model *l = NULL;
  assert_int_equal(dpgd_model_load(&l, path), 0);
  assert_ptr_equal(l->type, t);
  assert_int_equal(l->act, act);
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
  check_roundtrip(dpgd_model_softmax, DPGD_ACT_RELU);
  check_roundtrip(dpgd_model_softmax, DPGD_ACT_TANH);
  check_roundtrip(dpgd_model_cnn, DPGD_ACT_RELU);
  check_roundtrip(dpgd_model_cnn, DPGD_ACT_TANH);

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
      cmocka_unit_test(test_sgemm_is_openblas),
      cmocka_unit_test(test_softmax_ref_fd),
      cmocka_unit_test(test_softmax_small),
      cmocka_unit_test(test_softmax_mnist_shape),
      cmocka_unit_test(test_cnn_ref_fd),
      cmocka_unit_test(test_cnn_tanh),
      cmocka_unit_test(test_cnn_relu),
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
