/* dpgd_model.h -- models with fast per-example gradients: softmax regression and the
 * MNIST CNN of Feldman & Zrnic's experiments (the Opacus example network). One small vtable per model type
 * (gsl_rng_type style); the fused per-example step computes every example's gradient
 * in chunks, clips each to its own cap, and sums -- the whole-dataset gradient matrix
 * is never formed. Errors go through dpgd_error.h. */
#ifndef DPGD_MODEL_H
#define DPGD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_data.h"
#include "dpgd_core.h"

typedef enum { DPGD_ACT_RELU = 0, DPGD_ACT_TANH = 1 } dpgd_activation;

typedef struct dpgd_model dpgd_model;
typedef struct dpgd_model_type dpgd_model_type;

extern const dpgd_model_type *dpgd_model_softmax; /* 784 -> 10, 7,850 parameters */
extern const dpgd_model_type *dpgd_model_cnn;     /* 26,010 parameters */
/* Softmax regression on scattering features (docs/SCATTER.md): 3969 -> 10 on MNIST. */
extern const dpgd_model_type *dpgd_model_scatter_softmax;
/* Tramer & Boneh's small CNN on scattering features (81 x 7 x 7 on MNIST), 33,066
 * parameters. */
extern const dpgd_model_type *dpgd_model_scatter_cnn;

/* Looks a type up by name ("softmax", "cnn", "scatter-softmax",
 * "scatter-cnn"); NULL if unknown. */
const dpgd_model_type *dpgd_model_type_find(const char *name);
const char *dpgd_model_type_name(const dpgd_model_type *t);

/* A model for images of rows x cols with n_classes outputs. */
dpgd_model *dpgd_model_alloc(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                             size_t cols, int n_classes);
void dpgd_model_free(dpgd_model *m);

size_t dpgd_model_n_params(const dpgd_model *m);
int dpgd_model_n_classes(const dpgd_model *m);
const dpgd_model_type *dpgd_model_get_type(const dpgd_model *m);
/* what it was allocated as */                             /* outputs (labels 0..n_classes-1) */
float *dpgd_model_params(dpgd_model *m);                   /* (P) one contiguous slab */
const float *dpgd_model_params_const(const dpgd_model *m); /* (P) */

/* PyTorch-default initialisation: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights
 * and biases. Parameter j of the slab (tensors in slab order) takes the j-th 64-bit word
 * w that draw(ctx, &w) gives: u = (w >> 11) 2^-53 in [0, 1), p = (float)((2u - 1) bound).
 * A training run draws the words from its keyed init stream (dpgd_rng_init_model), so
 * the initial parameters depend on the whole seed. Returns draw's first nonzero status
 * (the parameters are then partly written). */
typedef int (*dpgd_model_draw_fn)(void *ctx, uint64_t *word);
int dpgd_model_init_draw(dpgd_model *m, dpgd_model_draw_fn draw, void *ctx);

/* The same with the words of splitmix64 started at seed (Steele, Lea & Flood 2014): a
 * fixed model for tests and benchmarks, 64 bits of seed only; never a run's. */
void dpgd_model_init(dpgd_model *m, uint64_t seed);

/* Evaluation on examples [first, first + count): predicted class per example (pred may
 * be NULL), number correct and summed cross-entropy loss (either may be NULL). OpenMP
 * threads over chunks of examples (threads = 0: OpenMP's default) with single-threaded
 * OpenBLAS inside, as in the private step; the loss is reduced in chunk order, so the
 * results do not depend on the thread count. */
int dpgd_model_evaluate(const dpgd_model *m, const dpgd_dataset *ds, size_t first, size_t count,
                        int threads, uint8_t *pred /* (count) or NULL */, size_t *n_correct,
                        double *loss_sum);

/* Workspace of the per-example engine: chunk buffers per thread, sized at alloc so
 * the step does not allocate. chunk = 0 picks the measured default. threads = 0 uses
 * the OpenMP default. */
typedef struct dpgd_grad_ws dpgd_grad_ws;
dpgd_grad_ws *dpgd_grad_ws_alloc(const dpgd_model *m, size_t chunk, int threads);
void dpgd_grad_ws_free(dpgd_grad_ws *ws);
/* on = 1: dpgd_model_clipped_grad_sum computes every example, also those with cap 0
 * (contributing 0), so that the step's time does not depend on how many caps are 0.
 * Default 0: such examples are skipped. */
void dpgd_grad_ws_set_constant_time(dpgd_grad_ws *ws, int on);
/* What, besides the build, decides the bits of dpgd_model_clipped_grad_sum: the
 * OpenBLAS kernel (core name and build config: the dense layers' clipped sums), the row
 * gemm kernel (fma or mul-add: every example's values), the chunk size and the leaf span
 * (they shape the summation; the span is named only when it is not the chunk size) and
 * the constant-time mode; not the thread count. One line of text. */
void dpgd_grad_ws_replay_id(const dpgd_grad_ws *ws, char *buf, size_t len);
/* The leaf span: how many consecutive dataset indices one leaf of the reduction tree
 * covers (n_leaves = ceil(n / span)). A leaf computes its rows to sum (those with a
 * positive cap, all under constant time) in index order, at most the chunk size at a
 * time, into one accumulator. Default: a full batch's, dpgd_model_leaf_span(chunk, 1),
 * four chunks. DPGD_EINVAL unless span is a
 * positive multiple of the chunk size, at most 2^40. Set it before reserving. */
int dpgd_grad_ws_set_span(dpgd_grad_ws *ws, size_t span);
size_t dpgd_grad_ws_span(const dpgd_grad_ws *ws);
/* The span the trainer uses at sampling rate `rate` (poisson: q; subset: m / n; full
 * batch: 1): chunk * max(4, floor(1 / rate)), capped at 2^40, so that a leaf holds about
 * chunk sampled rows on average, and at least four chunks (the tree's own work per leaf,
 * a memset and an addition of P doubles, stays small). A rate above 1/4, of 1 or more,
 * or not a number gives 4 chunk.
 * Public quantities only: the span decides no privacy parameter, only how the sum is
 * rounded (within dpgd_model_sum_error_bound whatever the span). */
size_t dpgd_model_leaf_span(size_t chunk, double rate);
/* The length of the run of +0 (bitwise: not -0, not NaN) at the start of x[0..n), counted
 * eight at a time (a multiple of 8, at most n): how the engine and the ledger skip a
 * sampled step's mostly-zero caps. */
size_t dpgd_zero_prefix8(const double *x, size_t n);

/* The fused private step over all ds->n examples:
 *   g_i = grad of loss at example i; if g_i is not finite its norm is +inf;
 *   gbar_i = g_i * min(1, caps[i] / ||g_i||)   (gbar_i = 0 when caps[i] == 0 or
 *                                               ||g_i|| is infinite)
 *   sum = sum_i gbar_i, in double: each leaf of ws's span summed from zero (in
 *   sub-batches of at most the chunk size), the leaf sums added in a fixed binary tree
 *   (model/SENSITIVITY.md 4), so the bits do not depend on the thread count, nor on how
 *   dpgd_model_clipped_grad_nodes splits the leaves.
 * Examples with caps[i] == 0 are skipped unless the workspace is in constant-time mode:
 * their sqnorm_pre is then NAN (not computed) and sqnorm_post 0. Outputs sqnorm_pre / sqnorm_post may be NULL.
 *
 * Contract in floating point (proof and assumptions in model/SENSITIVITY.md). Let g_i
 * be the per-example gradient the model computes (float entries; a linear layer's
 * entries r_k x_j as exact real products) and v_i the vector example i contributes,
 * in exact real arithmetic before the summation's rounding. Then v_i = f_i g_i with a
 * float factor 0 <= f_i <= 1, and:
 *   (a) ||v_i||_2 <= caps[i] exactly (as real numbers);
 *   (b) sqnorm_post[i] >= ||v_i||^2 (a true upper bound), sqnorm_post[i] <=
 *       fl(caps[i]^2), and sqnorm_post[i] = 0 when v_i = 0;
 *   (c) ||sum - sum_i v_i||_2 <= gamma * sum_i ||v_i||_2 with gamma =
 *       dpgd_model_sum_error_bound(ds->n).
 * v_i = 0 (sqnorm_post 0) when g_i is not finite, when ||g_i|| is zero or below FLT_MIN,
 * or when caps[i]^2 is below DBL_MIN and g_i needs clipping. g_i is left unclipped
 * (f_i = 1) only when ||g_i||^2, raised by a bound on its rounding error, is within
 * caps[i]^2; otherwise f_i = caps[i]/||g_i|| (1 - 2^-20) rounded toward zero. Each g_i,
 * f_i, sqnorm_pre[i] and sqnorm_post[i] depends on example i, caps[i] and the parameters
 * only: not on the other examples present nor on i's position in a chunk, skipping or
 * constant-time mode alike (SENSITIVITY.md 5). So when one example is added or removed
 * the sum moves by at most caps[i] + 2 gamma sum_j caps[j]. */
int dpgd_model_clipped_grad_sum(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                const double *caps /* (n) */, double *sum /* (P) out */,
                                double *sqnorm_pre /* (n) out or NULL */,
                                double *sqnorm_post /* (n) out or NULL */);

/* The reduction tree of the clipped sum over n_chunks = ceil(n / span) leaves (called
 * chunks below; span = dpgd_grad_ws_span): node (lo, level) holds leaves [lo, min(lo +
 * 2^level, n_chunks)); a leaf's sum is its span's sum from zero, any other node's is its
 * left child's plus its right child's. A range [c0, c1) of leaves is covered by its maximal nodes (inside it, parent not);
 * dpgd_model_tree_count says how many (0 for an empty range; at most 2 log2 n_chunks). */
size_t dpgd_model_tree_count(size_t n_chunks, size_t c0, size_t c1);

/* The clipped sums of the maximal nodes of chunks [c0, c1), left to right, into nodes
 * (dpgd_model_tree_count(n_chunks, c0, c1), P), and sqnorm_pre / sqnorm_post (indexed by
 * example, (n) or NULL) for the examples of those chunks only. Same contract per
 * example as dpgd_model_clipped_grad_sum; caps are read for those examples only. */
int dpgd_model_clipped_grad_nodes(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                  const double *caps /* (n) */, size_t c0, size_t c1,
                                  double *nodes /* (count, P) out */,
                                  double *sqnorm_pre /* (n) out or NULL */,
                                  double *sqnorm_post /* (n) out or NULL */);

/* Combines, in place, the node sums of a partition of chunks [bounds[0], bounds[k]) into
 * parts [bounds[s], bounds[s + 1]) (empty parts allowed): nodes holds `slots` vectors,
 * the maximal nodes of part 0, then of part 1, ...; on return nodes[0 .. *n_out) are
 * the maximal nodes of the whole range, with the bits dpgd_model_clipped_grad_nodes
 * gives for it (for the range of all chunks: one node, the sum). DPGD_EINVAL when the
 * bounds are not ordered or slots is not the parts' node count. */
int dpgd_model_tree_combine(double *nodes /* (slots, P) in/out */, size_t slots, size_t P,
                            size_t n_chunks, const size_t *bounds /* (k + 1) */, size_t k,
                            size_t *n_out);

/* The chunk size of ws: the most rows one chunk step computes. */
size_t dpgd_grad_ws_chunk(const dpgd_grad_ws *ws);
/* Sizes ws's reduction buffers for datasets of up to n examples, so that the calls that
 * follow do not allocate (a call over more examples grows them). */
int dpgd_grad_ws_reserve(dpgd_grad_ws *ws, size_t n);

/* The relative factor gamma of contract (c) above for a dataset of n examples, whatever
 * the chunk size and thread count: gamma_m = m u / (1 - m u) (rounded up), u = 2^-53,
 * m = n + 1026 (at least the most roundings one term of an output element goes through:
 * n + 1 in its leaf and the reduction tree together, for every span; SENSITIVITY.md 4).
 * +inf when m u >= 1/2. For MNIST (n = 60000): about 6.8e-12. A ledger that needs the
 * sum's sensitivity to stay within C charges 2 gamma n C on top of C. */
double dpgd_model_sum_error_bound(size_t n);

/* The same clipping rule and sum for per-example gradients computed outside dpgd (a model
 * it does not have): row i of G is example i's gradient g_i (float, as the engine's);
 * sum (P) += sum_i f_i g_i in double, row after row, with f_i and sqnorm_post[i] from
 * the rule above, so that contract (a)-(c) holds with gamma =
 * dpgd_model_sum_error_bound(n) for any n >= B. A row with caps[i] == 0 is not read
 * (sqnorm_post 0); a row with a NaN or infinite entry contributes 0. The caller answers
 * for the engine's other assumption: g_i depends on example i and public values only. */
int dpgd_model_clip_rows_sum(double *sum /* (P) in/out */, double *sqnorm_post /* (B) out */,
                             const float *G /* (B, P) row-major */,
                             const double *caps /* (B) */, size_t B, size_t P);
/* The same rows summed exactly on the grid 2^-F (0..DPGD_GRID_MAX_BITS) as
 * dpgd_model_clipped_grad_sum_int does (model/SENSITIVITY.md 8): sum (P, int64) += each
 * row with caps[i] > 0, clipped by the rule above, rounded toward zero onto the grid and
 * its squared norm checked exactly against caps[i]^2; sqnorm_post[i] that norm rounded up.
 * DPGD_ERANGE (nothing added) when sum_i floor(caps[i] 2^F) exceeds 2^62. */
int dpgd_model_clip_rows_sum_int(int64_t *sum /* (P) in/out */,
                                 double *sqnorm_post /* (B) out */, const float *G,
                                 const double *caps /* (B) */, size_t B, size_t P, int F);

/* ---- Secure mode's integer sum (model/intsum.c; proof in model/SENSITIVITY.md 8) ----
 * Each example's clipped gradient v_i = f_i g_i (the rule above) is rounded toward zero
 * onto the public grid 2^-F: w_i[p] = trunc(v_i[p] 2^F), an int64 vector with |w_i[p]|
 * <= |v_i[p]| 2^F, so ||w_i|| 2^-F <= ||v_i|| <= caps[i]; its squared norm is then
 * checked EXACTLY in integers against floor(c2 2^(2F)), c2 = caps[i]^2 rounded down to
 * a double (a row that fails is halved toward zero until it passes; with the rule above
 * none fails), and sum = sum_i w_i exactly in int64: no rounding, so no order, thread
 * count, leaf span or partition changes a bit, and removing example i moves sum by
 * exactly w_i. sqnorm_post[i] = ||w_i||^2 2^-2F rounded up (<= c2), 0 for a zero row. */
#define DPGD_GRID_MAX_BITS 40
/* The grid of a run: the largest F <= 40 with n C 2^F <= 2^62 (no partial sum of n rows
 * of norm <= C leaves int64, with room for the noise), noise_std 2^F <= 2^30 (the
 * discrete Gaussian's sigma in grid units below 2^31, dpgd_dgauss_from_std) and C 2^F <
 * 2^26 (row coordinates in 27 bits: the rounding pass vectorises). Public inputs only.
 * DPGD_ERANGE when no F >= 0 meets all three. */
int dpgd_model_grid_bits(size_t n, double clip, double noise_std, int *bits);
/* Sets the grid 2^-bits (0..DPGD_GRID_MAX_BITS) of ws's integer sum, allocating its
 * buffers (one chunk of whole gradients and two int64 vectors per thread) the first
 * time. DPGD_EINVAL for a model type without an integer sum. */
int dpgd_grad_ws_set_grid(dpgd_grad_ws *ws, int bits);
/* The grid's F, or -1 when none is set. */
int dpgd_grad_ws_grid(const dpgd_grad_ws *ws);
/* sum (P) = sum_i w_i over the examples with caps[i] > 0 (all of them in constant-time
 * mode), exactly. Caps must be finite and >= 0, and sum_i floor(caps[i] 2^F) <= 2^62
 * (DPGD_ERANGE otherwise: then no coordinate could overflow); sqnorm_post as above (may
 * be NULL). The same g_i as dpgd_model_clipped_grad_sum computes (a linear layer's
 * entries r_k x_j rounded to float). */
int dpgd_model_clipped_grad_sum_int(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                    const double *caps /* (n) */, int64_t *sum /* (P) out */,
                                    double *sqnorm_post /* (n) out or NULL */);

/* Floating-point operations per example of dpgd_model_clipped_grad_sum, counted
 * analytically: 2 m n k for every matrix product the step performs (forward,
 * backward to activations, per-example weight gradients, clipped sums), plus 2 per
 * squared-norm term; elementwise work (activations, pooling, im2col, softmax) is not
 * counted. For benchmarks ('dpgd bench grads'). */
double dpgd_model_flops_per_example(const dpgd_model *m);

/* Model files: magic, format version, type, activation, shapes, parameters, CRC-32. */
int dpgd_model_save(const dpgd_model *m, const char *path);
int dpgd_model_load(dpgd_model **out, const char *path);

#endif /* DPGD_MODEL_H */
