/* layers.h -- the kernels the models are built from, each beside a slow, obviously
 * correct _ref version the tests compare it with (STYLE.md 10). Activations are
 * channels-last (B, H, W, C) inside the CNN so that a convolution over a whole chunk is
 * one im2col + one matrix product; weights keep PyTorch's layouts. Backward kernels accumulate
 * into their outputs unless stated. */
#ifndef DPGD_MODEL_LAYERS_H
#define DPGD_MODEL_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_model.h"

/* Geometry of a square-kernel convolution on channels-last images. */
typedef struct conv_shape {
  size_t h, w, cin; /* input */
  size_t k, stride, pad;
  size_t oh, ow, cout; /* output */
} conv_shape;

conv_shape dpgd_conv_shape_make(size_t h, size_t w, size_t cin, size_t cout, size_t k,
                                size_t stride, size_t pad);

/* im2col of B channels-last images: cols (B * oh * ow, cin * k * k), columns ordered
 * (cin, ky, kx) like PyTorch's weight (cout, cin, k, k); zero padding. */
void dpgd_im2col(float *cols, const float *x /* (B, h, w, cin) */, const conv_shape *s,
                 size_t B);
void dpgd_im2col_ref(float *cols, const float *x, const conv_shape *s, size_t B);

/* Adjoint of im2col: dx (B, h, w, cin) += scatter of dcols. */
void dpgd_col2im(float *dx, const float *dcols /* (B * oh * ow, cin * k * k) */,
                 const conv_shape *s, size_t B);
void dpgd_col2im_ref(float *dx, const float *dcols, const conv_shape *s, size_t B);

/* dx (B, h, w, cin) = scatter of dcols (overwrites dx): bit-identical to zeroing dx
 * and calling dpgd_col2im. */
void dpgd_col2im_set(float *dx, const float *dcols /* (B * oh * ow, cin * k * k) */,
                     const conv_shape *s, size_t B);

/* patch.c: im2col and col2im_set through a zero-padded channels-first stage of one image
 * on the stack, for the shapes dpgd_patch_staged accepts (cin (h + 2 pad) (w + 2 pad) up
 * to 8192 floats); dpgd_im2col and dpgd_col2im_set use them there, and they are exposed
 * so the tests can compare them with the _ref kernels bit for bit. */
int dpgd_patch_staged(const conv_shape *s);
void dpgd_im2col_staged(float *cols, const float *x, const conv_shape *s, size_t B);
void dpgd_col2im_staged(float *dx, const float *dcols, const conv_shape *s, size_t B);

/* Patch rows in channels-last order, (ky, kx, c) instead of PyTorch's (c, ky, kx): a
 * row is k runs (ky) of k cin floats, each the channels-last pixels (iy, ix..ix + k - 1),
 * the layout of the image itself. dpgd_weight_hwc permutes a weight W (cout, cin, k, k)
 * into wp (cout, k, k, cin), wp[o][(ky k + kx) cin + c] = W[o][(c k + ky) k + kx], so
 * that dpgd_linear_backward_input with wp forms the same elements (the same chain over
 * cout each) as with W, at permuted columns: rows in this order. dpgd_col2im_hwc
 * scatters such rows: dx (B, h, w, cin) = the adjoint (overwrites dx), bit for bit
 * dpgd_col2im_set on the PyTorch-order rows (every pixel starts at +0 and receives its
 * contributions in (oy, ox) order); each run is added as a whole, clipped at padding. */
void dpgd_weight_hwc(float *wp, const float *W, size_t cout, size_t cin, size_t k);
void dpgd_col2im_hwc(float *dx, const float *dcols_hwc, const conv_shape *s, size_t B);
/* dpgd_im2col in (ky, kx, c) row order (zeros at padding), and dpgd_weight_hwc's inverse:
 * W (cout, cin, k, k) from wp (cout, k, k, cin) (W and wp apart). Only copies. */
void dpgd_im2col_hwc(float *cols, const float *x, const conv_shape *s, size_t B);
void dpgd_hwc_to_chw(float *W, const float *wp, size_t cout, size_t cin, size_t k);
/* One example's weight gradient in (cout, k, k, cin) order from its channels-last image
 * x (h, w, cin) and output gradient dy (oh ow, cout): dpgd_conv_wgrad on
 * dpgd_im2col_hwc's rows (cols: scratch of oh ow k k cin floats), or
 * dpgd_conv_wgrad_k4c16 where it applies; each element the chain of the same element of
 * dpgd_conv_wgrad on PyTorch-order rows, so dW holds dpgd_weight_hwc of that gradient. */
void dpgd_conv_wgrad_hwc(float *dW, const float *dy, const float *x, const conv_shape *s,
                         float *cols);

/* patch512.c: im2col (PyTorch-order rows) straight from channels-last images for cin a
 * multiple of 16 and k = 4, where the CPU has AVX-512F: per position and 16-channel
 * group, the 16 (ky, kx) pixels' 16 channels transposed in registers into the 16
 * (c, ky, kx) runs of 16 floats; exact moves, so bit for bit dpgd_im2col_ref. Returns 0
 * and writes nothing for other shapes or CPUs (dpgd_im2col then stages). */
int dpgd_im2col_k4c16(float *cols, const float *x, const conv_shape *s, size_t B);
/* dpgd_weight_hwc for k = 4 and cin a multiple of 16 by the same transposes (0: not
 * done, as above). */
int dpgd_weight_hwc_k4c16(float *wp, const float *W, size_t cout, size_t cin, size_t k);
/* A convolution's input gradient straight into the image, for k = 4, cin = 16 and no
 * padding (the CNN's conv2) where dpgd_gemm runs the AVX-512 tiles: dx (B, h, w, 16) =
 * dpgd_col2im_hwc of dpgd_linear_backward_input(dy (B oh ow, cout), wp (cout, 256) from
 * dpgd_weight_hwc), bit for bit (each element the same chain over cout, each pixel the
 * same additions in the same order), without writing the (B oh ow, 256) rows. Returns 0
 * and writes nothing elsewhere. */
int dpgd_dgrad_col2im_k4c16(float *dx, const float *dy, const float *wp, const conv_shape *s,
                            size_t B);
/* For k = 4, cin = 16, no padding where dpgd_gemm runs the AVX-512 tiles (else 0, having
 * written nothing), straight from the channels-last images, without im2col's rows:
 * dpgd_conv_forward_k4c16 is dpgd_conv_forward on dpgd_im2col's rows bit for bit (cout a
 * multiple of 16; wt scratch of 256 cout floats), dpgd_conv_wgrad_k4c16 is
 * dpgd_conv_wgrad_hwc (cout a multiple of 4). */
int dpgd_conv_forward_k4c16(float *y, const float *x, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B);
int dpgd_conv_wgrad_k4c16(float *dW, const float *dy, const float *x, const conv_shape *s);
/* dst (cols, rows; row stride ds) = the transpose of src (rows, cols; row stride ss) by
 * the same 16 x 16 transposes, where both sides are multiples of 16 and the CPU has
 * AVX-512F; otherwise returns 0 and writes nothing. */
int dpgd_transpose16(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                     size_t cols);
/* count consecutive 16 x 16 blocks of doubles, each transposed in place (AVX-512F 8 x 8
 * transposes where the CPU has it, else swaps; only moves). */
void dpgd_square16d(double *w, size_t count);
/* The same transpose for any sides (patch.c): dpgd_transpose16 where it applies, else
 * 4 x 4 blocks and single floats. Only copies. */
void dpgd_transpose(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                    size_t cols);

/* y (rows, cout) = x (rows, K) W^T + b, W (cout, K): a linear layer (rows = B), by
 * dpgd_gemm_nt: each row of y depends on that row of x and the parameters only. */
void dpgd_linear_forward(float *y, const float *x, const float *W, const float *b, size_t rows,
                         size_t K, size_t cout);
void dpgd_linear_forward_ref(float *y, const float *x, const float *W, const float *b,
                             size_t rows, size_t K, size_t cout);

/* dx (rows, K) = dy (rows, cout) W (overwrites dx), by dpgd_gemm. */
void dpgd_linear_backward_input(float *dx, const float *dy, const float *W, size_t rows,
                                size_t K, size_t cout);
void dpgd_linear_backward_input_ref(float *dx, const float *dy, const float *W, size_t rows,
                                    size_t K, size_t cout);

/* gemm_fma.c: C (m, n; row stride ldc) = init + A B, A(i, t) = a[i ars + t ats], B (T, n;
 * row stride ldb), init a row of n added to every row (NULL: 0); every element is one
 * chain over t = 0..T-1 in order, the same at every position, for every m and n
 * (model/SENSITIVITY.md 5):
 *   - dpgd_gemm_fma (x86-64 with AVX2 and FMA; returns 0 and writes nothing elsewhere):
 *     acc = init[j], then acc = fma(A(i, t), B(t, j), acc), bit for bit
 *     dpgd_gemm_fma_ref; the tiling (rows x 8-column vectors per register tile, or
 *     16-column ones with AVX-512F: gemm_avx512.c) only changes speed;
 *   - dpgd_gemm_muladd (everywhere): acc = acc + A(i, t) B(t, j), product and sum each
 *     rounded in float, bit for bit dpgd_gemm_muladd_ref;
 *   - dpgd_gemm: the first where the CPU has it, else the second; dpgd_gemm_kernel names
 *     which ("fma" or "mul-add") for a run's replay identity. dpgd_gemm_force_muladd(1)
 *     makes dpgd_gemm use the second everywhere (for tests; not thread-safe). */
typedef enum { DPGD_TILE_4X3, DPGD_TILE_6X2 } dpgd_gemm_tile;
void dpgd_gemm(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
               size_t ats, const float *b, size_t ldb, const float *init, size_t m, size_t n,
               size_t T);
int dpgd_gemm_fma(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
                  size_t ats, const float *b, size_t ldb, const float *init, size_t m, size_t n,
                  size_t T);
void dpgd_gemm_fma_ref(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                       const float *b, size_t ldb, const float *init, size_t m, size_t n,
                       size_t T);
void dpgd_gemm_muladd(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                      const float *b, size_t ldb, const float *init, size_t m, size_t n,
                      size_t T);
void dpgd_gemm_muladd_ref(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                          const float *b, size_t ldb, const float *init, size_t m, size_t n,
                          size_t T);
const char *dpgd_gemm_kernel(void);
void dpgd_gemm_force_muladd(int on);
/* gemm_avx512.c: dpgd_gemm_fma's chain in 16-lane AVX-512 tiles, which dpgd_gemm_fma
 * runs where the CPU has AVX-512F (returns 0 and writes nothing elsewhere); the same
 * bits as the AVX2 tiles. dpgd_gemm_force_avx2(1) makes dpgd_gemm_fma use the AVX2
 * tiles everywhere (for tests; not thread-safe). */
int dpgd_gemm_fma512(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
                     size_t ats, const float *b, size_t ldb, const float *init, size_t m,
                     size_t n, size_t T);
void dpgd_gemm_force_avx2(int on);
/* 1 where the CPU has AVX-512F (dpgd_gemm_avx512_cpu); dpgd_gemm_wide: 1 where
 * dpgd_gemm runs the AVX-512 tiles (FMA and AVX-512F, nothing forced). */
int dpgd_gemm_avx512_cpu(void);
int dpgd_gemm_wide(void);

/* conv_stage.c: a one-channel convolution with an 8 x 8 kernel and at most 16 output
 * channels (a multiple of 4) and 16 output columns, straight from zero-padded images
 * (dpgd_conv_stage_floats(s) floats each, dpgd_conv_stage_images), im2col folded into
 * the AVX-512 products' loads: where dpgd_conv_stage_ok, forward y (B * oh * ow, cout)
 * = b + im2col(x) W^T (W transposed into wt, cout * 64 floats) and one example's
 * weight gradient dW (cout, 64) = dy^T (cout, oh * ow) im2col(x) (overwrites), bit for
 * bit dpgd_conv_forward and dpgd_conv_wgrad on im2col's output, with its bias gradient
 * db (cout) = dy's column sums in position order from +0 where db is not NULL; they
 * return 0 and write nothing where not dpgd_conv_stage_ok. */
int dpgd_conv_stage_ok(const conv_shape *s);
size_t dpgd_conv_stage_floats(const conv_shape *s);
void dpgd_conv_stage_images(float *stage, const float *x /* (B, h, w) */, const conv_shape *s,
                            size_t B);
int dpgd_conv_stage_forward(float *y, const float *stage, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B);
/* The forward from the unpadded images x (B, h, w) themselves, the padding's taps left
 * out, bit for bit dpgd_conv_stage_forward on their stage, where it can be (stride 2,
 * pad 3, w = 2 ow, every weight finite, no bias of -0: conv_stage.c); returns 0 and
 * writes nothing elsewhere, and the caller stages the images. */
int dpgd_conv_image_forward(float *y, const float *x, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B);
int dpgd_conv_stage_wgrad(float *dW, float *db /* NULL: no bias gradient */,
                          const float *dy /* (oh * ow, cout) */,
                          const float *stage /* one image */, const conv_shape *s);

/* The dot form, C (m, n; row stride ldc) = init + A B^T with A (m, T) and B (n, T) rows
 * of stride lda, ldb, contiguous in t (a linear layer's y = b + x W^T without
 * transposing W). Element (i, j): eight partial sums s_l, lane l over t = l mod 8 in
 * order (fused: s_l = fma(A(i, t), B(j, t), s_l); mul-add: product and sum rounded on
 * their own), then ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), then init[j] +
 * that: again one fixed chain per element, at every position, for every m and n.
 * dpgd_gemm_nt picks the kernel as dpgd_gemm does; each kernel is bit for bit its _ref. */
void dpgd_gemm_nt(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
                  const float *init, size_t m, size_t n, size_t T);
int dpgd_gemm_nt_fma(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                     size_t ldb, const float *init, size_t m, size_t n, size_t T);
void dpgd_gemm_nt_fma_ref(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                          size_t ldb, const float *init, size_t m, size_t n, size_t T);
void dpgd_gemm_nt_muladd(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                         size_t ldb, const float *init, size_t m, size_t n, size_t T);
void dpgd_gemm_nt_muladd_ref(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                             size_t ldb, const float *init, size_t m, size_t n, size_t T);

/* One example's convolution weight gradient, dW (cout, K) = dy^T (cout, n) cols (n, K)
 * (overwrites dW), by dpgd_gemm. */
void dpgd_conv_wgrad(float *dW, const float *dy, const float *cols, size_t n, size_t K,
                     size_t cout);

/* In place activation; backward multiplies dy by the derivative, computed from the
 * activation's output a (relu: a > 0; tanh: 1 - a^2). */
void dpgd_act_forward(float *a, size_t n, dpgd_activation act);
void dpgd_act_backward(float *dy, const float *a, size_t n, dpgd_activation act);

/* Max pooling, kernel 2, stride 1, channels-last: y (B, h-1, w-1, c); arg (same shape,
 * a byte each) the offset 0..3 (dy * 2 + dx) of the maximum, first in scan order on ties
 * (PyTorch). */
void dpgd_maxpool2s1_forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                             size_t w, size_t c);
void dpgd_maxpool2s1_forward_ref(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                                 size_t w, size_t c);
/* dpgd_maxpool2s1_forward of relu(x) (dpgd_act_forward's relu), bit for bit, with relu
 * applied as the candidates are read: x itself is left alone. Its arg is POOL_NONE
 * where the output is not > 0 (+0 or NaN): there relu's derivative at the maximum is 0,
 * so dpgd_maxpool2s1_backward on these args, which passes nothing through a POOL_NONE,
 * is the backward through relu and the pooling, bit for bit the reference scatter on
 * dpgd_maxpool2s1_forward_ref's args times relu's derivative (x > 0), without reading
 * x. */
#define POOL_NONE 4
void dpgd_maxpool2s1_relu_forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                                  size_t w, size_t c);
/* dx (B, h, w, c) = scatter of dy to the maxima (overwrites dx). */
void dpgd_maxpool2s1_backward(float *dx, const float *dy, const uint8_t *arg, size_t B,
                              size_t h, size_t w, size_t c);
void dpgd_maxpool2s1_backward_ref(float *dx, const float *dy, const uint8_t *arg, size_t B,
                                  size_t h, size_t w, size_t c);
/* dpgd_maxpool2s1_backward, then dpgd_act_backward(dx, a, ..., act), bit for bit, in one
 * pass: a (B, h, w, c) the activation's output (for relu its input serves as well). */
void dpgd_maxpool2s1_backward_act(float *dx, const float *dy, const uint8_t *arg,
                                  const float *a, size_t B, size_t h, size_t w, size_t c,
                                  dpgd_activation act);
/* pool512.c: the four above in 16-lane AVX-512 vectors, the same bits, which they run
 * where c % 16 == 0 and the CPU has AVX-512F: these return 1 there, else 0 having written
 * nothing. Backward applies act's derivative from a, or none where a is NULL.
 * dpgd_pool512_force_off(1) makes them return 0 everywhere (for tests and benchmarks;
 * not thread-safe). */
int dpgd_maxpool512_forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                            size_t w, size_t c, int relu);
int dpgd_maxpool512_backward(float *dx, const float *dy, const uint8_t *arg, const float *a,
                             size_t B, size_t h, size_t w, size_t c, dpgd_activation act);
void dpgd_pool512_force_off(int on);

/* Softmax over K logits per row, then minus the one-hot label: r = p - y (in place). */
void dpgd_softmax_residual(float *r /* (B, K) */, const uint8_t *y /* (B) */, size_t B, int K);

/* tanh of each element in place (tanh.c: in double, vectorised; within about 1 ulp of
 * tanhf, its bits the same on every x86-64 and in the scalar _ref). */
void dpgd_tanh_f32(float *a, size_t n);
void dpgd_tanh_f32_ref(float *a, size_t n);

/* ---- convnet.c: what cnn.c and scatter_cnn.c share ---- */

/* Channels-last (B, hw, c) -> PyTorch's flatten order (B, c, hw), and back. */
void dpgd_flatten_chw(float *f, const float *p, size_t B, size_t hw, size_t c);
void dpgd_unflatten_chw(float *p, const float *f, size_t B, size_t hw, size_t c);

/* A convolution after im2col, y (rows, cout) = b + cols (rows, K) W^T: W transposed
 * into wt (cout K floats), then dpgd_gemm's register tiles over 8-column vectors of y. */
void dpgd_conv_forward(float *y, const float *cols, const float *W, const float *bias,
                       float *wt, size_t rows, size_t K, size_t cout);

/* One example's convolution gradients: dW (cout, K) = dy^T (cout, n) cols (n, K) by
 * dpgd_conv_wgrad, and db (cout) the column sums of dy, row after row (overwrites). */
void dpgd_conv_grad_example(float *dW, float *db, const float *dy /* (n, cout) */,
                            const float *cols /* (n, K) */, size_t n, size_t K, size_t cout);

/* The end of a chunk step of a conv net whose parameters are its two convolutions'
 * (pconv of them) followed by two dense layers fc1 (flat -> hid) and fc2 (hid -> K), in
 * that slab order. Examples go DPGD_CONVNET_GROUP at a time: their convolution
 * gradients are formed in G (dpgd_conv_grad_example at the offsets conv[c].w and
 * conv[c].b of a row), their squared norms over every parameter taken while the rows
 * are in cache (G's rows by dpgd_sqnorm_d_rows, the dense layers' rank-one gradients by
 * dpgd_linear_sqnorm, added (conv + fc1) + fc2), the clip factors into scale, and the
 * rows' clipped sums added to acc (accumulate_rows: per element the same additions in
 * example order as one call over the chunk); then the dense layers' clipped sums
 * (accumulate_linear), all in double. */
#define DPGD_CONVNET_GROUP 8
typedef struct dpgd_conv_grads {
  const float *dy;         /* (B, n, cout) the convolution's output gradient */
  const float *cols;       /* (B, n, K) its im2col input, or NULL: */
  const float *stage;      /* (B, dpgd_conv_stage_floats) dpgd_conv_stage_wgrad's input */
  const conv_shape *shape; /* with stage or image: the convolution */
  size_t n, K, cout;
  size_t w, b; /* offsets of its weight (cout, K) and bias (cout) in a row of G */
  /* Or, set: (B, h, w, cin) its channels-last input, the weight gradient formed in
   * (cout, k, k, cin) order (dpgd_conv_wgrad_hwc; cols then its scratch of n K floats)
   * and so added to acc (the model type's acc_order puts acc right). */
  const float *image;
} dpgd_conv_grads;
typedef struct dpgd_dense2 {
  float *G; /* (DPGD_CONVNET_GROUP, pconv) scratch: a group's convolution gradients */
  size_t pconv, flat, hid;
  dpgd_conv_grads conv[2];
  const float *f;   /* (B, flat) fc1's input */
  const float *dh;  /* (B, hid) fc1's output gradient (after the activation) */
  const float *h;   /* (B, hid) fc2's input */
  const float *dz;  /* (B, K) the logits' gradient */
  float *scale;     /* (B) out: the clip factors */
  double *rsd, *xd; /* accumulate_linear's scratch: (B, max(hid, K)), (B, flat) */
} dpgd_dense2;
void dpgd_convnet_clip_sum(const dpgd_model *m, const dpgd_dense2 *d, double *acc /* (P) */,
                           double *pre /* (B) */, double *post /* (B) */,
                           const double *caps /* (B) */, size_t B);

/* The same conv net's whole per-example gradients for secure mode's integer sum: row i of
 * rows (B, P) is its convolutions' gradients, then fc1's and fc2's gradients in float
 * (dpgd_outer_rows). */
void dpgd_convnet_rows(const dpgd_model *m, const dpgd_dense2 *d, float *rows /* (B, P) */,
                       size_t B);

#endif /* DPGD_MODEL_LAYERS_H */
