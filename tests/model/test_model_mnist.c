/* test_model_mnist.c -- the models on real MNIST images (label mnist; the first few
 * examples of the test split): the double reference against central finite
 * differences, and the engine's per-example gradients and norms against the
 * reference, at PyTorch-default initial parameters (near-uniform predictions, so every
 * class carries gradient), for softmax and the CNN with both activations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mtest.h"

/* Engine (float) against the double reference, relative, whole vector. */
#define TOL_GRAD 2e-5
/* Reference against central differences (h = 1e-6) in double. */
#define TOL_FD 1e-6

static dpgd_dataset *ds;

static int setup(void **state)
{
  (void)state;
  const char *env = getenv("DPGD_MNIST_DIR");
  if (!env || !env[0]) env = getenv("DPGD_MNIST_DIR_DEFAULT");
  char dir[4096];
  if (dpgd_data_find_dir(dir, sizeof dir, env && env[0] ? env : NULL) != 0 ||
      dpgd_data_load(&ds, dir, "test") != 0) {
    fprintf(stderr, "MNIST: %s\n", dpgd_error_last());
    return -1;
  }
  return dpgd_data_truncate(ds, 8);
}

static int teardown(void **state)
{
  (void)state;
  dpgd_data_free(ds);
  return 0;
}

static void check(const dpgd_model_type *t, dpgd_activation act, size_t n_fd)
{
  dpgd_model *m = dpgd_model_alloc(t, act, 28, 28, 10);
  assert_non_null(m);
  dpgd_model_init(m, 31337);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(m, 3, 2);
  assert_non_null(ws);
  size_t P = dpgd_model_n_params(m), ni, *idx = mt_fd_indices(m, &ni);
  double *th = mt_params_d(m), *r = malloc(P * sizeof *r), *g = malloc(P * sizeof *g);
  double *fd = malloc(P * sizeof *fd), *caps = malloc(ds->n * sizeof *caps);
  double *pre = malloc(ds->n * sizeof *pre), *sum = malloc(P * sizeof *sum);
  float *x = malloc(ds->n * ds->d * sizeof *x);
  assert_true(r && g && fd && caps && pre && sum && x);
  dpgd_data_unpack(x, ds, 0, ds->n);
  for (size_t i = 0; i < ds->n; i++) caps[i] = INFINITY;
  assert_int_equal(dpgd_model_clipped_grad_sum(m, ws, ds, caps, sum, pre, NULL), 0);
  for (size_t i = 0; i < ds->n; i++) {
    ref_grad(m, th, x + i * ds->d, ds->labels[i], r);
    if (i < n_fd) {
      mt_fd_loss_sum(fd, m, th, x + i * ds->d, &ds->labels[i], 1, idx, ni, 1e-6);
      double e = mt_sub_rel_err(r, fd, idx, ni);
      if (e > TOL_FD)
        fail_msg("%s image %zu: reference vs finite differences %g", dpgd_model_type_name(t), i,
                 e);
    }
    mt_engine_grad(m, ws, ds, i, g);
    double e = mt_rel_err(g, r, P, 1e-12), nr = mt_norm(r, P);
    if (e > TOL_GRAD)
      fail_msg("%s image %zu: engine vs reference %g", dpgd_model_type_name(t), i, e);
    if (fabs(pre[i] - nr * nr) > 2 * TOL_GRAD * nr * nr)
      fail_msg("%s image %zu: squared norm %.9g, reference %.9g", dpgd_model_type_name(t), i,
               pre[i], nr * nr);
  }
  free(idx);
  free(th);
  free(r);
  free(g);
  free(fd);
  free(caps);
  free(pre);
  free(sum);
  free(x);
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

static void test_softmax(void **state)
{
  (void)state;
  check(dpgd_model_softmax, DPGD_ACT_RELU, 2);
}

static void test_cnn_relu(void **state)
{
  (void)state;
  check(dpgd_model_cnn, DPGD_ACT_RELU, 2);
}

static void test_cnn_tanh(void **state)
{
  (void)state;
  check(dpgd_model_cnn, DPGD_ACT_TANH, 2);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_cnn_relu),
      cmocka_unit_test(test_cnn_tanh),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
