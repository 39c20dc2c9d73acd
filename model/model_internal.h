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
  float *scratch; /* (type->scratch_floats(m, chunk)) model's buffers */
  float *x;       /* (chunk, d) normalised inputs */
  uint8_t *y;     /* (chunk) labels */
  double *caps;   /* (chunk) */
  double *pre;    /* (chunk) pre-clip squared norms */
  double *post;   /* (chunk) post-clip squared norms */
  size_t *idx;    /* (chunk) example index of each row */
  double *tmp;    /* (ws->tree_levels, P) right children's sums, one per tree level */
  /* Secure mode's integer sum (intsum.c; dpgd_grad_ws_set_grid), NULL until set: */
  float *rows;   /* (chunk, P) every example's gradient, formed by chunk_rows */
  int64_t *iacc; /* (P) this thread's exact sum on the grid */
} chunk_ws;

struct dpgd_model_type {
  const char *name;
  uint32_t file_id;     /* type code in model files; never reuse one */
  size_t default_chunk; /* measured default (see the benchmark) */
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
                     float *x /* (B, d), may be overwritten */, const uint8_t *y /* (B) */,
                     const double *caps /* (B) */, size_t B);
  /* Every example's whole gradient g_i (float, slab order) into rows (B, P): the same
   * per-example values as chunk_step (a linear layer's entries r_k x_j rounded to
   * float), row i a function of example i and the parameters only. For secure mode's
   * integer sum (intsum.c); NULL: the type has no integer sum. */
  void (*chunk_rows)(const dpgd_model *m, float *scratch, float *rows /* (B, P) */,
                     float *x /* (B, d), may be overwritten */, const uint8_t *y /* (B) */,
                     size_t B);
  /* NULL, or: chunk_step adds some clipped sums to acc in an order of the type's own
   * (cnn.c: conv2's weight in (cout, k, k, cin) order, read straight from its
   * channels-last input). acc_order permutes acc (P) from slab order into that order,
   * or back with to_slab; exact moves. The engine puts acc in the type's order before
   * a leaf's first chunk_step and back after its last (dpgd_engine_run_leaf). */
  void (*acc_order)(const dpgd_model *m, double *acc, int to_slab);
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
  size_t span; /* dataset indices per tree leaf, a multiple of chunk (dpgd_grad_ws_set_span) */
  int threads;
  int constant_time; /* 1: rows with cap 0 are computed too (dpgd_grad_ws_set_constant_time) */
  chunk_ws *per_thread; /* (threads) */
  void *slab;           /* everything the per_thread pointers point into */
  /* The reduction tree's buffers (dpgd_grad_ws_reserve), for datasets of up to
   * tree_levels levels: the per_thread tmp, and the node sums of every thread. */
  unsigned tree_levels;
  double *nodes; /* (threads * (2 tree_levels + 1), P) */
  double *tree_slab;
  int grid_bits;   /* F of secure mode's integer sum; -1 until dpgd_grad_ws_set_grid */
  void *grid_slab; /* the per_thread rows and iacc */
};

/* ---- the reduction tree (tree.c; SENSITIVITY.md 4) ----
 * Node (lo, level) of the tree over nc chunks holds chunks [lo, min(lo + 2^level, nc));
 * the root is (0, L), 2^L the least power of two >= nc. A leaf's sum is its chunk's
 * clipped sum from zero; any other node's is its left child's plus its right child's (a
 * node whose right child holds no chunk has its left child's sum). A range of chunks
 * [c0, c1) is covered by its maximal nodes (those inside it whose parent is not). */
#define DPGD_TREE_MAX_NODES 128 /* maximal nodes of a range: at most 2 * 63 */
typedef struct {
  size_t lo;
  unsigned level;
} dpgd_tree_node;
/* L: the least L with 2^L >= nc (0 for nc <= 1). */
unsigned dpgd_tree_levels(size_t nc);
/* The maximal nodes of [c0, c1) in left-to-right order into out (when non-NULL,
 * DPGD_TREE_MAX_NODES entries); returns their number. */
size_t dpgd_tree_cover(dpgd_tree_node *out, size_t nc, size_t c0, size_t c1);

/* The clipping rule (docs/MATH.md "Floating point: sensitivity and noise"; proof in
 * SENSITIVITY.md): given an example's
 * squared gradient norm sq, computed in double from float entries by sqnorm_d /
 * dpgd_linear_sqnorm (each term of it through at most P + 8 roundings, P the model's
 * parameter count), and its cap, the float factor f its gradient g is multiplied by and
 * the squared norm the ledger is charged (*post). In real arithmetic f ||g|| <= cap and
 * *post >= (f ||g||)^2, whatever the rounding of sq:
 *   - sq not finite (a NaN/Inf gradient): f = 0, *pre_out = +inf, *post = 0;
 *   - sqrt(sq) not a normal float (zero or below FLT_MIN), or cap^2 below DBL_MIN when
 *     clipping is needed: f = 0, *post = 0 (a zero contribution is within every cap);
 *   - sq (1 + 2(P + 8) u + 2^-50) <= cap^2: f = 1 (untouched), *post = that raised sq;
 *   - otherwise f = cap/sqrt(sq) (1 - 2^-20) rounded toward zero to float, *post =
 *     cap^2 (in double), or 0 when f is 0.
 * *pre_out is sq otherwise. *post <= fl(cap^2) in every case. */
float dpgd_clip_scale(double sq, double cap, size_t P, double *pre_out, double *post);

/* acc += sum_i scale[i] * G[i, :] over rows with scale[i] != 0 (rows with scale 0 are
 * skipped, so a NaN row contributes nothing), in double: scale[i] * G[i, p] is exact in
 * double, and each element is added to acc row after row. */
void dpgd_accumulate_rows(double *acc /* (P) */, const float *G /* (B, P) */,
                          const float *scale /* (B) */, size_t B, size_t P);

/* The clipped sum of a linear layer's per-example gradients r_i x_i^T (weights) and r_i
 * (bias), without forming one outer product: accW (K, d) += (S R)^T X, accb (K) +=
 * column sums of S R, where S = diag(scale), all in double (linsum.c: with AVX-512F and
 * d % 8 == 0 each element one fused chain in example order, else ONE dgemm). rs and xd
 * are scratch for S R and X in double (S R is exact there); rows with scale 0 are left
 * out (their r or x may be NaN). */
void dpgd_accumulate_linear(double *accW /* (K, d) */, double *accb /* (K) */,
                            double *rs /* (B, K) scratch */, double *xd /* (B, d) scratch */,
                            const float *r /* (B, K) */, const float *x /* (B, d) */,
                            const float *scale /* (B) */, size_t B, size_t K, size_t d);

/* What accumulate_linear runs where d % 8 == 0: "fma512" (the fused chains) or "dgemm"
 * (named in the replay identity: the two round differently). */
const char *dpgd_linsum_kernel(void);

/* accumulate_linear by plain loops in double, example after example (the reference the
 * tests compare it against). */
void dpgd_accumulate_linear_ref(double *accW /* (K, d) */, double *accb /* (K) */,
                                const float *r /* (B, K) */, const float *x /* (B, d) */,
                                const float *scale /* (B) */, size_t B, size_t K, size_t d);

/* ||v||^2 accumulated in double, in eight interleaved partial sums (a fixed order,
 * so results do not depend on anything but v; eight independent additions in flight
 * instead of one dependent chain). */
double dpgd_sqnorm_d(const float *v /* (n) */, size_t n);

/* out[i] = dpgd_sqnorm_d(G + i ld, n) for i < B, bit for bit: eight rows at a time
 * (AVX-512F), four (AVX), then one. */
void dpgd_sqnorm_d_rows(double *out /* (B) */, const float *G /* (B, ld) */, size_t ld,
                        size_t B, size_t n);

/* Squared norm of one example's linear-layer gradient r x^T (+ bias r):
 * (||x||^2 + 1) ||r||^2, in double. */
double dpgd_linear_sqnorm(const float *r /* (K) */, const float *x /* (d) */, size_t K,
                          size_t d);

/* Checks that a dataset fits the model (image size, classes). */
int dpgd_model_check_dataset(const dpgd_model *m, const dpgd_dataset *ds);

/* The engine's chunk step over x directly (what dpgd_model_clipped_grad_sum runs per
 * chunk after unpacking), in thread 0's scratch; for tests that need inputs a
 * dataset cannot hold (NaN). Skips nothing. */
int dpgd_model_chunk_step_x(dpgd_model *m, dpgd_grad_ws *ws, double *acc /* (P) */,
                            double *pre /* (B) */, double *post /* (B) */,
                            float *x /* (B, d), overwritten */, const uint8_t *y /* (B) */,
                            const double *caps /* (B) */, size_t B);

/* A linear layer's per-example gradient in slab order, for B examples into rows of
 * stride ld: out[i][k d + j] = r_ik x_ij rounded to float (weights (K, d)), then
 * out[i][K d + k] = r_ik (bias). */
void dpgd_outer_rows(float *out, size_t ld, const float *r /* (B, K) */,
                     const float *x /* (B, d) */, size_t B, size_t K, size_t d);

/* Secure mode's grid (intsum.c; SENSITIVITY.md 8). floor(c2 2^(2F)) for c2 = cap^2
 * rounded down to a double: the cap's square in grid units, rounded in the private
 * direction. cap must be finite, >= 0, with cap 2^F < 2^62. */
unsigned __int128 dpgd_grid_cap2(double cap, int F);
/* DPGD_OK when every cap is finite and >= 0 and sum_i floor(caps[i] 2^F) <= 2^62 (checked
 * exactly): then no partial sum of the rows, each coordinate at most its cap in grid
 * units, leaves int64 (model/SENSITIVITY.md 8). */
int dpgd_grid_caps_fit(const double *caps, size_t n, int F);
/* One example's row g (len floats) onto the grid: f = dpgd_clip_scale(sq, cap, P, pre,
 * .), v[p] = f g[p] 2^F rounded toward zero (f g[p] is exact in double), each |v[p]|
 * at most floor(cap 2^F); then, exactly in integers, ||v||^2 <= dpgd_grid_cap2(cap, F),
 * or every v[p] is halved toward zero until it holds. Returns ||v||^2 (exact) and sets
 * *post to it times 2^-2F rounded up: >= ||v 2^-F||^2, <= cap^2 rounded down. A row
 * with f = 0 (not finite, zero, ...) is all zeros. Same preconditions on cap as
 * dpgd_grid_cap2. */
unsigned __int128 dpgd_grid_row(int64_t *v /* (len) out */, const float *g /* (len) */,
                                size_t len, double sq, double cap, size_t P, int F, double *pre,
                                double *post);

/* acc (len) += the row dpgd_grid_row gives for g, and *post as it sets it, in one pass
 * over g adding as it goes (vectorised when cap 2^F < 2^26); when the exact norm passes
 * the cap (never, when clip_scale holds) the added part is taken back and
 * dpgd_grid_row's halving runs in irow (len, scratch). */
void dpgd_grid_row_add(int64_t *acc /* (len) in/out */, int64_t *irow /* (len) scratch */,
                       const float *g /* (len) */, size_t len, double sq, double cap, size_t P,
                       int F, double *post);

/* The engine's gather (engine.c): the rows of [*i, hi) to compute, in index order,
 * until chunk of them are found, into w's idx, y and caps; returns how many and leaves
 * *i after the last index looked at; the skipped rows get pre NAN and post 0. */
size_t dpgd_engine_gather(chunk_ws *w, const dpgd_dataset *ds, const double *caps, size_t *i,
                          size_t hi, size_t chunk, double *pre, double *post,
                          int constant_time);

/* Checks that ws was allocated for m. */
int dpgd_grad_ws_check(const dpgd_model *m, const dpgd_grad_ws *ws);

/* Leaf [lo, hi) of the dataset into acc (P), added: gathers the examples with a
 * positive cap (the others are skipped, pre NAN and post 0, unless constant_time) in
 * index order, at most `chunk` at a time, and runs the model's chunk step on each such
 * sub-batch in w's scratch (SENSITIVITY.md 4). */
void dpgd_engine_run_leaf(const dpgd_model *m, chunk_ws *w, double *acc /* (P) */,
                          const dpgd_dataset *ds, const double *caps /* (n) */, size_t lo,
                          size_t hi, size_t chunk, double *pre /* (n) or NULL */,
                          double *post /* (n) or NULL */, int constant_time);

#endif /* DPGD_MODEL_INTERNAL_H */
