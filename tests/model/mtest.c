/* mtest.c -- shared helpers of the model tests (see mtest.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "mtest.h"

static uint64_t xs(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

dpgd_dataset *mt_synthetic(size_t n, size_t rows, size_t cols, int K, uint64_t seed)
{
  dpgd_dataset *ds = dpgd_data_alloc(n, rows, cols, K);
  assert_non_null(ds);
  uint64_t s = seed * 2654435761u + 88172645463325252ull;
  for (size_t j = 0; j < n * rows * cols; j++) {
    uint64_t v = xs(&s);
    /* MNIST-like: about half the pixels dark, the rest spread over 1..255 */
    ds->pixels[j] = (v & 1) ? 0 : (uint8_t)(1 + (v >> 8) % 255);
  }
  for (size_t i = 0; i < n; i++) ds->labels[i] = (uint8_t)(xs(&s) % (uint64_t)K);
  return ds;
}

void mt_engine_grad(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds, size_t i,
                    double *g)
{
  double *caps = calloc(ds->n, sizeof *caps);
  assert_non_null(caps);
  caps[i] = INFINITY;
  int st = dpgd_model_clipped_grad_sum(m, ws, ds, caps, g, NULL, NULL);
  if (st) fail_msg("clipped_grad_sum: %s", dpgd_error_last());
  free(caps);
}

double mt_norm(const double *a, size_t n)
{
  double s = 0.0;
  for (size_t j = 0; j < n; j++) s += a[j] * a[j];
  return sqrt(s);
}

double mt_rel_err(const double *a, const double *b, size_t n, double floor)
{
  double s = 0.0;
  for (size_t j = 0; j < n; j++) s += (a[j] - b[j]) * (a[j] - b[j]);
  double nb = mt_norm(b, n);
  return sqrt(s) / (nb > floor ? nb : floor);
}

double *mt_params_d(const dpgd_model *m)
{
  size_t P = dpgd_model_n_params(m);
  double *t = malloc(P * sizeof *t);
  assert_non_null(t);
  const float *p = dpgd_model_params_const(m);
  for (size_t j = 0; j < P; j++) t[j] = p[j];
  return t;
}

void ref_fd_grad(const dpgd_model *m, double *theta, const float *x, int y, double h,
                 double *g)
{
  size_t P = dpgd_model_n_params(m);
  for (size_t j = 0; j < P; j++) {
    double t0 = theta[j];
    theta[j] = t0 + h;
    double lp = ref_loss(m, theta, x, y);
    theta[j] = t0 - h;
    double lm = ref_loss(m, theta, x, y);
    theta[j] = t0;
    g[j] = (lp - lm) / (2.0 * h);
  }
}
