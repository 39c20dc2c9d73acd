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

/* Central finite differences of ref_loss in every parameter, step h. */
void ref_fd_grad(const dpgd_model *m, double *theta, const float *x, int y, double h,
                 double *g /* (P) out */);

/* The model's parameters as doubles (malloc'ed). */
double *mt_params_d(const dpgd_model *m);

#endif
