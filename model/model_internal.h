/* model_internal.h -- what model.c, engine.c, io.c and the model types share: the
 * vtable behind dpgd_model_type, the model and workspace structs, and the clipping
 * rule every model type applies to its per-example gradients. Private to model/ (and
 * the model tests, which call one chunk directly to feed it NaN inputs). */
#ifndef DPGD_MODEL_INTERNAL_H
#define DPGD_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_model.h"

#define MODEL_MAX_TENSORS 8

/* One parameter tensor of the slab: its length and the fan-in of its layer (PyTorch's
 * default init draws it uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))). */
typedef struct tensor_spec {
  size_t size;
  size_t fan_in;
} tensor_spec;

/* Per-thread scratch of the engine, carved from one slab: the model type's chunk
 * buffers plus the engine's own (inputs, labels, caps, norms). */
typedef struct chunk_ws {
  float *scratch;   /* (type->scratch_floats(m, chunk)) model's buffers */
  float *x;         /* (chunk, d) normalised inputs */
  uint8_t *y;       /* (chunk) labels */
  double *caps;     /* (chunk) */
  double *pre;      /* (chunk) pre-clip squared norms */
  double *post;     /* (chunk) post-clip squared norms */
  size_t *idx;      /* (chunk) example index of each row */
  double *acc;      /* (P) this thread's running clipped sum */
} chunk_ws;

struct dpgd_model_type {
  const char *name;
  uint32_t file_id;      /* type code in model files; never reuse one */
  size_t default_chunk;  /* measured default (see the benchmark) */
  /* Checks that the model supports images of rows x cols and n_classes outputs; fills
   * the tensor list in slab order and returns the number of tensors (0 on failure,
   * after DPGD_FAIL). */
  size_t (*layout)(tensor_spec *t /* (MODEL_MAX_TENSORS) */, size_t rows, size_t cols,
                   int n_classes);
  /* Floating-point operations of one example's fused step (dpgd_model.h). */
  double (*flops)(const dpgd_model *m);
  /* Floats of scratch one thread needs for chunks of up to `chunk` examples. */
  size_t (*scratch_floats)(const dpgd_model *m, size_t chunk);
  /* Logits of B examples: out (B, K). */
  void (*logits)(const dpgd_model *m, float *scratch, float *out /* (B, K) */,
                 const float *x /* (B, d) */, size_t B);
  /* One chunk of the fused step: every example's gradient, its squared norm into
   * pre[i], clipping to caps[i] (clip_scale), clipped gradients added to acc. pre and
   * post are set for every row (no row is skipped here). */
  void (*chunk_step)(const dpgd_model *m, float *scratch, double *acc /* (P) */,
                     double *pre /* (B) */, double *post /* (B) */,
                     float *x /* (B, d), may be overwritten */,
                     const uint8_t *y /* (B) */, const double *caps /* (B) */, size_t B);
};

struct dpgd_model {
  const dpgd_model_type *type;
  dpgd_activation act;
  size_t rows, cols, d;
  int n_classes;
  size_t n_params;
  size_t n_tensors;
  tensor_spec tensors[MODEL_MAX_TENSORS];
  float *params; /* (n_params) one slab, tensors in order */
};

struct dpgd_grad_ws {
  const dpgd_model_type *type;
  size_t n_params, d, chunk;
  int threads;
  chunk_ws *per_thread; /* (threads) */
  void *slab;           /* everything the per_thread pointers point into */
};

/* The clipping rule (MATH.md section 1): given an example's squared gradient norm sq
 * and its cap, the factor its gradient is multiplied by, and the squared norm the
 * ledger is charged (*post). Non-finite sq (a NaN/Inf gradient) gives 0 and *pre_out
 * = +inf. A gradient within its cap gets exactly 1 (untouched). A clipped one gets
 * cap/||g|| shrunk by 2^-20, so that float rounding of the scaled gradient cannot
 * push its norm above the cap; *post is then cap^2 (an upper bound, private direction). */
float clip_scale(double sq, double cap, double *pre_out, double *post);

/* acc += sum_i scale[i] * G[i, :] over rows with scale[i] != 0 (rows with scale 0 are
 * skipped, so a NaN row contributes nothing), through one float sgemv into tmp and a
 * double accumulation. */
void accumulate_rows(double *acc /* (P) */, float *tmp /* (P) */,
                     float *G /* (B, P), rows with scale 0 zeroed */, const float *scale /* (B) */, size_t B,
                     size_t P);

/* The clipped sum of a linear layer's per-example gradients r_i x_i^T (weights) and r_i
 * (bias), without forming one outer product: accW (K, d) += (S R)^T X in ONE sgemm,
 * accb (K) += column sums of S R, where S = diag(scale). Rows with scale 0 are zeroed
 * in rs and x first (0 * NaN would be NaN). tmp holds K * d floats. */
void accumulate_linear(double *accW /* (K, d) */, double *accb /* (K) */,
                       float *tmp /* (K * d) */, float *rs /* (B, K) out */,
                       const float *r /* (B, K) */, float *x /* (B, d) */,
                       const float *scale /* (B) */, size_t B, size_t K, size_t d);

/* ||v||^2 accumulated in double, in eight interleaved partial sums (a fixed order,
 * so results do not depend on anything but v; eight independent additions in flight
 * instead of one dependent chain). */
double sqnorm_d(const float *v /* (n) */, size_t n);

/* Squared norm of one example's linear-layer gradient r x^T (+ bias r):
 * (||x||^2 + 1) ||r||^2, in double. */
double linear_sqnorm(const float *r /* (K) */, const float *x /* (d) */, size_t K, size_t d);

/* Checks that a dataset fits the model (image size, classes). */
int model_check_dataset(const dpgd_model *m, const dpgd_dataset *ds);

/* The engine's chunk step over x directly (what dpgd_model_clipped_grad_sum runs per
 * chunk after unpacking), in thread 0's scratch; for tests that need inputs a
 * dataset cannot hold (NaN). Skips nothing. */
int model_chunk_step_x(dpgd_model *m, dpgd_grad_ws *ws, double *acc /* (P) */,
                       double *pre /* (B) */, double *post /* (B) */,
                       float *x /* (B, d), overwritten */, const uint8_t *y /* (B) */,
                       const double *caps /* (B) */, size_t B);

#endif /* DPGD_MODEL_INTERNAL_H */
