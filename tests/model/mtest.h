/* mtest.h -- what the model tests share: synthetic datasets, one example's gradient
 * read back through the public engine (all caps 0 but its own, +inf), vector
 * comparisons, and the double-precision reference models (ref_model.c) that the
 * engine is checked against. */
#ifndef DPGD_TEST_MTEST_H
#define DPGD_TEST_MTEST_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_model.h"

/* n examples of rows x cols random pixels and random labels < K (seeded). */
dpgd_dataset *mt_synthetic(size_t n, size_t rows, size_t cols, int K, uint64_t seed);

/* Example i's unclipped gradient from dpgd_model_clipped_grad_sum: g (P). */
void mt_engine_grad(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds, size_t i,
                    double *g);

/* ||a - b|| / max(||b||, floor) */
double mt_rel_err(const double *a, const double *b, size_t n, double floor);
double mt_norm(const double *a, size_t n);

/* Double-precision reference: loss of one normalised example x (d) with label y at
 * parameters theta (P, double), and its gradient by plain backpropagation written
 * from the definitions (NCHW, loops; nothing shared with model/). */
double ref_loss(const dpgd_model *m, const double *theta, const float *x, int y);
void ref_grad(const dpgd_model *m, const double *theta, const float *x, int y,
              double *g /* (P) out */);

/* The parameters finite differences are taken in (malloc'ed, *count of them): all of
 * them for small models; for the CNN a spread of 200 plus each tensor's first and
 * last element. */
size_t *mt_fd_indices(const dpgd_model *m, size_t *count);

/* Central differences, step h, of the summed ref_loss over examples [0, nx) of x
 * (nx, d) in the parameters idx: fd[j] for j in idx (other entries untouched). */
void mt_fd_loss_sum(double *fd, const dpgd_model *m, double *theta, const float *x,
                    const uint8_t *y, size_t nx, const size_t *idx, size_t ni, double h);

/* ||a - b|| / max(||b||, 1e-12) over the entries idx. */
double mt_sub_rel_err(const double *a, const double *b, const size_t *idx, size_t ni);

/* The model's parameters as doubles (malloc'ed). */
double *mt_params_d(const dpgd_model *m);

/* A model of type t (activation act, rows x cols inputs, K classes, initialised with seed
 * 2385), n synthetic examples (mt_synthetic, seed 7) and a gradient workspace (chunk,
 * threads); P is the model's parameter count. */
typedef struct mt_fixture {
  const dpgd_model_type *type;
  dpgd_activation act;
  size_t rows, cols, n;
  int K;
  dpgd_model *m;
  dpgd_dataset *ds;
  dpgd_grad_ws *ws;
  size_t P;
} mt_fixture;
mt_fixture *mt_fixture_make(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                            size_t cols, int K, size_t n, size_t chunk, int threads);
void mt_fixture_free(mt_fixture *f);
/* Example i of ds unpacked to floats (malloc'ed, ds->d entries). */
float *mt_unpack1(const dpgd_dataset *ds, size_t i);

#endif
