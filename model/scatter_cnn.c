/* scatter_cnn.c -- the small CNN of Tramer & Boneh (ICLR 2021, "ScatterNet + CNN" on
 * MNIST) on scattering features: C channels of 7 x 7 (C = 81 for J = 2, L = 8), stored
 * channels-first per example as the feature datasets hold them (data/scatter.c):
 *   Conv2d(C->16, k3, s2, p1) -> act -> Conv2d(16->32, k3, s1, p1) -> act -> flatten
 *   (512, PyTorch's C,H,W order) -> Linear(512->32) -> act -> Linear(32->K); cross-entropy.
 * act is tanh in the paper (relu is accepted). Their group normalisation of the input
 * channels (no affine part) is the feature path's (model.scatter_groups: the dataset's
 * features are normalised per example before the model sees them), so the model starts
 * at the first convolution. Parameters in PyTorch state_dict order: conv1.w (16,C,3,3),
 * conv1.b, conv2.w (32,16,3,3), conv2.b, fc1.w (32,512), fc1.b, fc2.w (K,32), fc2.b.
 * The per-example engine is cnn.c's: batched forward and backward through im2col and
 * gemm_fma.c's fixed-chain kernels (a row's bits do not depend on the other rows of its
 * chunk, SENSITIVITY.md 5), per-example conv gradients in a (B, 16C 9 + 4656) buffer,
 * rank-one dense-layer gradients never formed, clipped sums in double (convnet.c). */
#include <string.h>

#include "layers.h"
#include "model_internal.h"

enum {
  SIDE = 7, /* input 7 x 7 */
  S49 = SIDE * SIDE,
  C1 = 16,
  C2 = 32,
  KS = 3,
  OSIDE = 4, /* both convolutions' outputs are 4 x 4 */
  NQ = OSIDE * OSIDE,
  FLAT = C2 * NQ, /* 512 */
  HID = 32,
  MAX_CIN = 1024
};

/* Parameter offsets for cin input channels. */
typedef struct sc_off {
  size_t w1, b1, w2, b2, w3, b3, w4, b4, pconv;
} sc_off;

static sc_off offsets(size_t cin, size_t K)
{
  sc_off o;
  o.w1 = 0;
  o.b1 = o.w1 + C1 * cin * KS * KS;
  o.w2 = o.b1 + C1;
  o.b2 = o.w2 + C2 * C1 * KS * KS;
  o.w3 = o.b2 + C2;
  o.b3 = o.w3 + HID * FLAT;
  o.w4 = o.b3 + HID;
  o.b4 = o.w4 + K * HID;
  o.pconv = o.w3;
  return o;
}

static size_t sc_layout(tensor_spec *t, size_t rows, size_t cols, int n_classes)
{
  if (cols != S49 || rows > MAX_CIN) {
    DPGD_FAIL(DPGD_EINVAL,
              "the scatter-cnn model takes C x 49 features (C <= %d channels of 7 x 7), "
              "not %zu x %zu",
              MAX_CIN, rows, cols);
    return 0;
  }
  size_t cin = rows, K = (size_t)n_classes;
  t[0] = (tensor_spec){C1 * cin * KS * KS, cin * KS * KS};
  t[1] = (tensor_spec){C1, cin * KS * KS};
  t[2] = (tensor_spec){C2 * C1 * KS * KS, C1 * KS * KS};
  t[3] = (tensor_spec){C2, C1 * KS * KS};
  t[4] = (tensor_spec){HID * FLAT, FLAT};
  t[5] = (tensor_spec){HID, FLAT};
  t[6] = (tensor_spec){K * HID, HID};
  t[7] = (tensor_spec){K, HID};
  return 8;
}

/* Chunk buffers, carved in this order from the scratch slab; activations channels-last. */
typedef struct sc_bufs {
  conv_shape s1, s2;
  sc_off o;
  size_t kc1, kc2; /* im2col widths: 9 cin, 144 */
  float *xt, *cols1, *a1, *cols2, *a2, *f, *a3, *z;
  float *dz, *da3, *df, *da2, *dcols2, *da1, *G, *scale, *wt;
  float *w2p; /* conv2's weight in (C2, KS, KS, C1) order (dpgd_weight_hwc) */
  double *rsd, *xd;
} sc_bufs;

static size_t carve(sc_bufs *b, float *base, size_t B, size_t cin, size_t K)
{
  b->s1 = dpgd_conv_shape_make(SIDE, SIDE, cin, C1, KS, 2, 1);
  b->s2 = dpgd_conv_shape_make(OSIDE, OSIDE, C1, C2, KS, 1, 1);
  b->o = offsets(cin, K);
  b->kc1 = cin * KS * KS;
  b->kc2 = C1 * KS * KS;
  size_t off = 0;
  float **fl[] = {&b->xt,     &b->cols1, &b->a1, &b->cols2, &b->a2, &b->f,
                  &b->a3,     &b->z,     &b->dz, &b->da3,   &b->df, &b->da2,
                  &b->dcols2, &b->da1,   &b->G,  &b->scale, &b->wt, &b->w2p};
  const size_t wt = b->kc1 * C1 > b->kc2 * C2 ? b->kc1 * C1 : b->kc2 * C2;
  const size_t n[] = {B * S49 * cin,
                      B * NQ * b->kc1,
                      B * NQ * C1,
                      B * NQ * b->kc2,
                      B * FLAT,
                      B * FLAT,
                      B * HID,
                      B * K,
                      B * K,
                      B * HID,
                      B * FLAT,
                      B * FLAT,
                      B * NQ * b->kc2,
                      B * NQ * C1,
                      DPGD_CONVNET_GROUP * b->o.pconv,
                      B,
                      wt,
                      C2 * b->kc2};
  for (size_t k = 0; k < sizeof n / sizeof n[0]; k++) {
    if (base) *fl[k] = base + off;
    off += (n[k] + 15) / 16 * 16;
  }
  if (base) b->rsd = (double *)(base + off);
  off += (2 * B * (K > HID ? K : HID) + 15) / 16 * 16;
  if (base) b->xd = (double *)(base + off);
  off += (2 * B * FLAT + 15) / 16 * 16;
  return off;
}

static size_t sc_scratch(const dpgd_model *m, size_t chunk)
{
  sc_bufs b;
  return carve(&b, NULL, chunk, m->rows, (size_t)m->n_classes);
}

/* Channels-first (B, cin, 49) -> channels-last (B, 49, cin): a permutation, exact. */
static void to_channels_last(float *xt, const float *x, size_t B, size_t cin)
{
  for (size_t i = 0; i < B; i++)
    for (size_t c = 0; c < cin; c++)
      for (size_t q = 0; q < S49; q++) xt[(i * S49 + q) * cin + c] = x[(i * cin + c) * S49 + q];
}

/* Batched forward of B examples up to the logits (b->z), keeping what backward needs. */
static void forward(const dpgd_model *m, sc_bufs *b, const float *x, size_t B)
{
  const float *th = m->params;
  const sc_off *o = &b->o;
  to_channels_last(b->xt, x, B, m->rows);
  dpgd_im2col(b->cols1, b->xt, &b->s1, B);
  dpgd_conv_forward(b->a1, b->cols1, th + o->w1, th + o->b1, b->wt, B * NQ, b->kc1, C1);
  dpgd_act_forward(b->a1, B * NQ * C1, m->act);
  dpgd_im2col(b->cols2, b->a1, &b->s2, B);
  dpgd_conv_forward(b->a2, b->cols2, th + o->w2, th + o->b2, b->wt, B * NQ, b->kc2, C2);
  dpgd_act_forward(b->a2, B * NQ * C2, m->act);
  dpgd_flatten_chw(b->f, b->a2, B, NQ, C2);
  dpgd_linear_forward(b->a3, b->f, th + o->w3, th + o->b3, B, FLAT, HID);
  dpgd_act_forward(b->a3, B * HID, m->act);
  dpgd_linear_forward(b->z, b->a3, th + o->w4, th + o->b4, B, HID, (size_t)m->n_classes);
}

static void sc_logits(const dpgd_model *m, float *scratch, float *out, const float *x, size_t B)
{
  sc_bufs b;
  carve(&b, scratch, B, m->rows, (size_t)m->n_classes);
  forward(m, &b, x, B);
  memcpy(out, b.z, B * (size_t)m->n_classes * sizeof(float));
}

/* Per example: conv1 forward and weight gradient (2 n K cout each; its input gradient
 * is never needed), conv2 forward, input and weight gradients; the dense layers
 * forward, backward to their inputs and their clipped sums (2 in out each, three
 * times); norms 2 per term. */
static double sc_flops(const dpgd_model *m)
{
  const double K = m->n_classes, cin = (double)m->rows;
  const double conv1 = 2.0 * NQ * cin * KS * KS * C1, conv2 = 2.0 * NQ * C1 * KS * KS * C2;
  const double lin = 2.0 * FLAT * HID + 2.0 * HID * K;
  const double pconv = (double)offsets(m->rows, (size_t)K).pconv;
  return 2.0 * conv1 + 3.0 * conv2 + 3.0 * lin + 2.0 * (pconv + FLAT + HID + HID + K);
}

/* Forward and backward to every activation; the convolutions' gradients described for
 * later, the dense layers' as their factors (dpgd_dense2). */
static dpgd_dense2 backward(const dpgd_model *m, const sc_bufs *bp, float *x, const uint8_t *y,
                            size_t B)
{
  const float *th = m->params;
  const size_t K = (size_t)m->n_classes;
  sc_bufs b = *bp;
  const sc_off *o = &b.o;
  forward(m, &b, x, B);

  /* Batched backward to every activation. */
  memcpy(b.dz, b.z, B * K * sizeof(float));
  dpgd_softmax_residual(b.dz, y, B, (int)K);
  dpgd_linear_backward_input(b.da3, b.dz, th + o->w4, B, HID, K);
  dpgd_act_backward(b.da3, b.a3, B * HID, m->act); /* now fc1's output gradient */
  dpgd_linear_backward_input(b.df, b.da3, th + o->w3, B, FLAT, HID);
  dpgd_unflatten_chw(b.da2, b.df, B, NQ, C2);
  dpgd_act_backward(b.da2, b.a2, B * NQ * C2, m->act); /* conv2's output gradient */
  /* dcols2's rows in (ky, kx, c) order (as in cnn.c): runs of da1's pixels. */
  dpgd_weight_hwc(b.w2p, th + o->w2, C2, C1, KS);
  dpgd_linear_backward_input(b.dcols2, b.da2, b.w2p, B * NQ, b.kc2, C2);
  dpgd_col2im_hwc(b.da1, b.dcols2, &b.s2, B);
  dpgd_act_backward(b.da1, b.a1, B * NQ * C1, m->act); /* conv1's output gradient */

  /* The convolutions' per-example gradients are formed later, a group at a time. */
  return (dpgd_dense2){b.G,
                       o->pconv,
                       FLAT,
                       HID,
                       {{b.da1, b.cols1, NULL, NULL, NQ, b.kc1, C1, o->w1, o->b1, NULL},
                        {b.da2, b.cols2, NULL, NULL, NQ, b.kc2, C2, o->w2, o->b2, NULL}},
                       b.f,
                       b.da3,
                       b.a3,
                       b.dz,
                       b.scale,
                       b.rsd,
                       b.xd};
}

static void sc_chunk_step(const dpgd_model *m, float *scratch, double *acc, double *pre,
                          double *post, float *x, const uint8_t *y, const double *caps,
                          size_t B)
{
  sc_bufs b;
  carve(&b, scratch, B, m->rows, (size_t)m->n_classes);
  const dpgd_dense2 d = backward(m, &b, x, y, B);
  dpgd_convnet_clip_sum(m, &d, acc, pre, post, caps, B);
}

static void sc_chunk_rows(const dpgd_model *m, float *scratch, float *rows, float *x,
                          const uint8_t *y, size_t B)
{
  sc_bufs b;
  carve(&b, scratch, B, m->rows, (size_t)m->n_classes);
  const dpgd_dense2 d = backward(m, &b, x, y, B);
  dpgd_convnet_rows(m, &d, rows, B);
}

static const dpgd_model_type scatter_cnn_type = {
    .name = "scatter-cnn",
    .file_id = 4,
    .default_chunk = 16,
    .layout = sc_layout,
    .flops = sc_flops,
    .scratch_floats = sc_scratch,
    .logits = sc_logits,
    .chunk_step = sc_chunk_step,
    .chunk_rows = sc_chunk_rows,
};
const dpgd_model_type *dpgd_model_scatter_cnn = &scatter_cnn_type;
