/* mtest.c -- shared helpers of the model tests (see mtest.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "model_internal.h"
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

/* The parameters finite differences are taken in: all of them for small models; for
 * the CNN (26,010, each difference a full double forward) a spread of 200 that hits
 * every tensor, first and last elements included. */
size_t *mt_fd_indices(const dpgd_model *m, size_t *count)
{
  size_t P = dpgd_model_n_params(m), n = P <= 8000 ? P : 200, k = 0;
  size_t *idx = malloc((n + 2 * MODEL_MAX_TENSORS) * sizeof *idx);
  assert_non_null(idx);
  if (n == P) {
    for (size_t j = 0; j < P; j++) idx[k++] = j;
  } else {
    size_t off = 0;
    for (size_t t = 0; t < m->n_tensors; t++) {
      idx[k++] = off;
      idx[k++] = off + m->tensors[t].size - 1;
      off += m->tensors[t].size;
    }
    for (size_t j = 0; j < n; j++) idx[k++] = (j * 7919u + 13) % P;
  }
  *count = k;
  return idx;
}

/* Central differences of the summed reference loss over examples [0, nx) in the
 * parameters idx, step h: fd[j] for j in idx. */
void mt_fd_loss_sum(double *fd, const dpgd_model *m, double *th, const float *x,
                    const uint8_t *y, size_t nx, const size_t *idx, size_t ni, double h)
{
  size_t d = m->d;
  for (size_t q = 0; q < ni; q++) {
    size_t j = idx[q];
    double t0 = th[j], lp = 0.0, lm = 0.0;
    th[j] = t0 + h;
    for (size_t i = 0; i < nx; i++) lp += ref_loss(m, th, x + i * d, y[i]);
    th[j] = t0 - h;
    for (size_t i = 0; i < nx; i++) lm += ref_loss(m, th, x + i * d, y[i]);
    th[j] = t0;
    fd[j] = (lp - lm) / (2 * h);
  }
}

/* ||a - b|| / ||b|| over the entries idx. */
double mt_sub_rel_err(const double *a, const double *b, const size_t *idx, size_t ni)
{
  double e = 0.0, nb = 0.0;
  for (size_t q = 0; q < ni; q++) {
    double t = a[idx[q]] - b[idx[q]];
    e += t * t;
    nb += b[idx[q]] * b[idx[q]];
  }
  return sqrt(e) / (sqrt(nb) > 1e-12 ? sqrt(nb) : 1e-12);
}

mt_fixture *mt_fixture_make(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                            size_t cols, int K, size_t n, size_t chunk, int threads)
{
  mt_fixture *f = calloc(1, sizeof *f);
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

void mt_fixture_free(mt_fixture *f)
{
  dpgd_grad_ws_free(f->ws);
  dpgd_data_free(f->ds);
  dpgd_model_free(f->m);
  free(f);
}

float *mt_unpack1(const dpgd_dataset *ds, size_t i)
{
  float *x = malloc(ds->d * sizeof *x);
  assert_non_null(x);
  dpgd_data_unpack(x, ds, i, 1);
  return x;
}
