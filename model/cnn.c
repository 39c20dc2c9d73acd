/* cnn.c -- the MNIST CNN of Feldman & Zrnic's experiments (the Opacus example network), exactly:
 *   Conv2d(1->16, k8, s2, p3) -> act -> MaxPool(2, s1) -> Conv2d(16->32, k4, s2) -> act
 *   -> MaxPool(2, s1) -> flatten (512, PyTorch's C,H,W order) -> Linear(512->32) -> act
 *   -> Linear(32->10); cross-entropy. act is ReLU (the paper's) or tanh.
 * Parameters in PyTorch state_dict order: conv1.w (16,1,8,8), conv1.b, conv2.w
 * (32,16,4,4), conv2.b, fc1.w (32,512), fc1.b, fc2.w (K,32), fc2.b.
 * Per chunk: batched forward (one matrix product per layer, channels-last activations,
 * im2col folded into the products where the AVX-512 kernels run), batched backward to
 * activations, then per-example weight gradients of the two convs into a (B, 9264)
 * buffer, conv2's in (C2, K2, K2, C1) order straight from its channels-last input (the
 * clipped sums in that order too, put back into slab order by cnn_acc_order). Every
 * matrix product of a row's values (convolutions, dense layers, forward and backward)
 * goes through gemm_fma.c's kernels, whose every element is one fixed chain over one
 * row (SENSITIVITY.md 5): a row's bits do not depend on the other rows of its chunk.
 * The two linear layers' per-example gradients are rank one: their norms come from
 * ||dy||^2 (||x||^2 + 1) and their clipped sum is one product of scaled output gradients
 * (accumulate_linear), so 16,746 of the 26,010 gradient entries per example are never
 * written. Clipped sums are accumulated in double (SENSITIVITY.md). */
#include <math.h>
#include <string.h>

#include "layers.h"
#include "model_internal.h"

enum {
  IMG = 28,
  C1 = 16,
  K1 = 8,
  C2 = 32,
  K2 = 4,
  FLAT = 512,
  HID = 32,
  /* parameter offsets */
  OW1 = 0,
  OB1 = OW1 + C1 * K1 * K1,
  OW2 = OB1 + C1,
  OB2 = OW2 + C2 * C1 * K2 * K2,
  OW3 = OB2 + C2,
  OB3 = OW3 + HID * FLAT,
  OW4 = OB3 + HID,
  PCONV = OW3 /* 9264: the conv parameters, formed per example */
};

static size_t cnn_layout(tensor_spec *t, size_t rows, size_t cols, int n_classes)
{
  if (rows != IMG || cols != IMG) {
    DPGD_FAIL(DPGD_EINVAL, "the cnn model takes 28 x 28 images, not %zu x %zu", rows, cols);
    return 0;
  }
  size_t K = (size_t)n_classes;
  t[0] = (tensor_spec){C1 * K1 * K1, K1 * K1};
  t[1] = (tensor_spec){C1, K1 * K1};
  t[2] = (tensor_spec){C2 * C1 * K2 * K2, C1 * K2 * K2};
  t[3] = (tensor_spec){C2, C1 * K2 * K2};
  t[4] = (tensor_spec){HID * FLAT, FLAT};
  t[5] = (tensor_spec){HID, FLAT};
  t[6] = (tensor_spec){K * HID, HID};
  t[7] = (tensor_spec){K, HID};
  return 8;
}

/* Chunk buffers, carved in this order from the scratch slab. */
typedef struct cnn_bufs {
  conv_shape s1, s2;
  size_t n1, q1, n2, q2; /* positions: conv1 out (196), pool1 out (169), 25, 16 */
  float *stage1, *cols1, *a1, *p1, *cols2, *a2, *p2, *f, *a3, *z;
  float *dz, *da3, *da2, *df, *dp2, *dcols2, *dp1, *da1, *G, *scale;
  float *wt;            /* a convolution's weight, transposed (conv_forward) */
  float *w2p;           /* conv2's weight in (C2, K2, K2, C1) order (dpgd_weight_hwc) */
  double *rsd, *xd;     /* accumulate_linear's scratch: (B, max(HID, K)), (B, FLAT) */
  uint8_t *arg1, *arg2; /* bytes */
} cnn_bufs;

static size_t carve(cnn_bufs *b, float *base, size_t B, size_t K)
{
  b->s1 = dpgd_conv_shape_make(IMG, IMG, 1, C1, K1, 2, 3);
  b->n1 = b->s1.oh * b->s1.ow;
  size_t h1 = b->s1.oh - 1;
  b->q1 = h1 * h1;
  b->s2 = dpgd_conv_shape_make(h1, h1, C1, C2, K2, 2, 0);
  b->n2 = b->s2.oh * b->s2.ow;
  b->q2 = (b->s2.oh - 1) * (b->s2.ow - 1);
  size_t off = 0;
#define TAKE(field, count)                                                                     \
  do {                                                                                         \
    if (base) b->field = base + off;                                                           \
    off += ((count) + 15) / 16 * 16;                                                           \
  } while (0)
#define TAKE_DOUBLES(field, count)                                                             \
  do {                                                                                         \
    if (base) b->field = (double *)(base + off);                                               \
    off += ((count)*2 + 15) / 16 * 16;                                                         \
  } while (0)
#define TAKE_BYTES(field, count)                                                               \
  do {                                                                                         \
    if (base) b->field = (uint8_t *)(base + off);                                              \
    off += ((count) + 63) / 64 * 16;                                                           \
  } while (0)
  TAKE(stage1, B * dpgd_conv_stage_floats(&b->s1));
  TAKE(cols1, B * b->n1 * K1 * K1);
  TAKE(a1, B * b->n1 * C1);
  TAKE(p1, B * b->q1 * C1);
  TAKE_BYTES(arg1, B * b->q1 * C1);
  TAKE(cols2, B * b->n2 * C1 * K2 * K2);
  TAKE(a2, B * b->n2 * C2);
  TAKE(p2, B * b->q2 * C2);
  TAKE_BYTES(arg2, B * b->q2 * C2);
  TAKE(f, B * FLAT);
  TAKE(a3, B * HID);
  TAKE(z, B * K);
  TAKE(dz, B * K);
  TAKE(da3, B * HID);
  TAKE(da2, B * b->n2 * C2);
  TAKE(df, B * FLAT);
  TAKE(dp2, B * FLAT);
  TAKE(dcols2, B * b->n2 * C1 * K2 * K2);
  TAKE(dp1, B * b->q1 * C1);
  TAKE(da1, B * b->n1 * C1);
  TAKE(G, DPGD_CONVNET_GROUP * PCONV);
  TAKE(scale, B);
  TAKE(wt, C1 * K2 * K2 * C2 > C1 * K1 * K1 ? C1 * K2 * K2 * C2 : C1 * K1 * K1);
  TAKE(w2p, C2 * C1 * K2 * K2);
  TAKE_DOUBLES(rsd, B * (K > HID ? K : HID));
  TAKE_DOUBLES(xd, B * FLAT);
#undef TAKE
#undef TAKE_DOUBLES
#undef TAKE_BYTES
  return off;
}

static size_t cnn_scratch(const dpgd_model *m, size_t chunk)
{
  cnn_bufs b;
  return carve(&b, NULL, chunk, (size_t)m->n_classes);
}

/* The activation and max pooling of a convolution's output a (B, h, h, c): relu
 * applied as the pooling reads a (its derivative goes into arg: pool_backward), tanh in
 * place first (backward takes its derivative from a). */
static void pool(float *p, uint8_t *arg, float *a, size_t B, size_t h, size_t c,
                 dpgd_activation act)
{
  if (act == DPGD_ACT_RELU) {
    dpgd_maxpool2s1_relu_forward(p, arg, a, B, h, h, c);
    return;
  }
  dpgd_act_forward(a, B * h * h * c, act);
  dpgd_maxpool2s1_forward(p, arg, a, B, h, h, c);
}

/* Back through pool's pooling and activation: relu's derivative is in the args
 * (dpgd_maxpool2s1_relu_forward's POOL_NONE), tanh's comes from its output a. */
static void pool_backward(const dpgd_model *m, float *da, const float *dp, const uint8_t *arg,
                          const float *a, size_t B, size_t h, size_t c)
{
  if (m->act == DPGD_ACT_RELU) dpgd_maxpool2s1_backward(da, dp, arg, B, h, h, c);
  else dpgd_maxpool2s1_backward_act(da, dp, arg, a, B, h, h, c, m->act);
}

/* Batched forward of B examples up to the logits (b->z), keeping what backward needs. */
static void forward(const dpgd_model *m, cnn_bufs *b, const float *x, size_t B)
{
  const float *th = m->params;
  const size_t K = (size_t)m->n_classes;
  const size_t h1 = b->s1.oh, h2 = b->s2.oh;
  if (dpgd_conv_stage_ok(&b->s1)) { /* im2col folded into the products (conv_stage.c) */
    dpgd_conv_stage_images(b->stage1, x, &b->s1, B);
    if (!dpgd_conv_image_forward(b->a1, x, th + OW1, th + OB1, b->wt, &b->s1, B))
      dpgd_conv_stage_forward(b->a1, b->stage1, th + OW1, th + OB1, b->wt, &b->s1, B);
  } else {
    dpgd_im2col(b->cols1, x, &b->s1, B);
    dpgd_conv_forward(b->a1, b->cols1, th + OW1, th + OB1, b->wt, B * b->n1, K1 * K1, C1);
  }
  pool(b->p1, b->arg1, b->a1, B, h1, C1, m->act);
  if (!dpgd_conv_forward_k4c16(b->a2, b->p1, th + OW2, th + OB2, b->wt, &b->s2, B)) {
    dpgd_im2col(b->cols2, b->p1, &b->s2, B);
    dpgd_conv_forward(b->a2, b->cols2, th + OW2, th + OB2, b->wt, B * b->n2, C1 * K2 * K2, C2);
  }
  pool(b->p2, b->arg2, b->a2, B, h2, C2, m->act);
  dpgd_flatten_chw(b->f, b->p2, B, b->q2, C2);
  dpgd_linear_forward(b->a3, b->f, th + OW3, th + OB3, B, FLAT, HID);
  dpgd_act_forward(b->a3, B * HID, m->act);
  dpgd_linear_forward(b->z, b->a3, th + OW4, th + OW4 + K * HID, B, HID, K);
}

static void cnn_logits(const dpgd_model *m, float *scratch, float *out, const float *x,
                       size_t B)
{
  cnn_bufs b;
  carve(&b, scratch, B, (size_t)m->n_classes);
  forward(m, &b, x, B);
  memcpy(out, b.z, B * (size_t)m->n_classes * sizeof(float));
}

/* Per example: the two convolutions forward (2 n K cout each), conv2's input gradient
 * (same; conv1's is never needed), both convs' weight gradients (same again); the
 * linear layers forward, backward to their inputs and their clipped sums (2 in out
 * each, three times); norms 2 per term. */
static double cnn_flops(const dpgd_model *m)
{
  cnn_bufs b;
  carve(&b, NULL, 1, (size_t)m->n_classes);
  double K = m->n_classes;
  double conv1 = 2.0 * (double)b.n1 * K1 * K1 * C1,
         conv2 = 2.0 * (double)b.n2 * C1 * K2 * K2 * C2;
  double lin = 2.0 * FLAT * HID + 2.0 * HID * K;
  double norms = 2.0 * (PCONV + FLAT + HID + HID + K);
  return 2.0 * conv1 + 3.0 * conv2 + 3.0 * lin + norms;
}

/* Forward and backward to every activation; the convolutions' gradients described for
 * later, the dense layers' as their factors (dpgd_dense2, which points into *bp: bp must
 * outlive it). */
static dpgd_dense2 backward(const dpgd_model *m, const cnn_bufs *bp, float *x, const uint8_t *y,
                            size_t B)
{
  const float *th = m->params;
  const size_t K = (size_t)m->n_classes;
  cnn_bufs b = *bp;
  const size_t h1 = b.s1.oh, h2 = b.s2.oh, kc1 = K1 * K1, kc2 = C1 * K2 * K2;
  forward(m, &b, x, B);

  /* Batched backward to every activation. */
  memcpy(b.dz, b.z, B * K * sizeof(float));
  dpgd_softmax_residual(b.dz, y, B, (int)K);
  dpgd_linear_backward_input(b.da3, b.dz, th + OW4, B, HID, K);
  dpgd_act_backward(b.da3, b.a3, B * HID, m->act); /* now fc1's output gradient */
  dpgd_linear_backward_input(b.df, b.da3, th + OW3, B, FLAT, HID);
  dpgd_unflatten_chw(b.dp2, b.df, B, b.q2, C2);
  /* conv2's output gradient */
  pool_backward(m, b.da2, b.dp2, b.arg2, b.a2, B, h2, C2);
  /* dcols2's rows in (ky, kx, c) order, each element the same chain over C2 as with
   * PyTorch's order: a row's runs are dp1's pixels, added without transposes. */
  dpgd_weight_hwc(b.w2p, th + OW2, C2, C1, K2);
  if (!dpgd_dgrad_col2im_k4c16(b.dp1, b.da2, b.w2p, &b.s2, B)) {
    dpgd_linear_backward_input(b.dcols2, b.da2, b.w2p, B * b.n2, kc2, C2);
    dpgd_col2im_hwc(b.dp1, b.dcols2, &b.s2, B);
  }
  /* conv1's output gradient */
  pool_backward(m, b.da1, b.dp1, b.arg1, b.a1, B, h1, C1);

  /* The convolutions' per-example gradients are formed later, a group at a time. */
  const int staged = dpgd_conv_stage_ok(&b.s1); /* as forward decided */
  return (dpgd_dense2){
      b.G,
      PCONV,
      FLAT,
      HID,
      {staged ? (dpgd_conv_grads){b.da1, NULL, b.stage1, &bp->s1, b.n1, kc1, C1, OW1, OB1, NULL}
              : (dpgd_conv_grads){b.da1, b.cols1, NULL, NULL, b.n1, kc1, C1, OW1, OB1, NULL},
       {b.da2, b.cols2, NULL, &bp->s2, b.n2, kc2, C2, OW2, OB2, b.p1}},
      b.f,
      b.da3,
      b.a3,
      b.dz,
      b.scale,
      b.rsd,
      b.xd};
}

static void cnn_chunk_step(const dpgd_model *m, float *scratch, double *acc, double *pre,
                           double *post, float *x, const uint8_t *y, const double *caps,
                           size_t B)
{
  cnn_bufs b;
  carve(&b, scratch, B, (size_t)m->n_classes);
  const dpgd_dense2 d = backward(m, &b, x, y, B);
  dpgd_convnet_clip_sum(m, &d, acc, pre, post, caps, B);
}

static void cnn_chunk_rows(const dpgd_model *m, float *scratch, float *rows, float *x,
                           const uint8_t *y, size_t B)
{
  cnn_bufs b;
  carve(&b, scratch, B, (size_t)m->n_classes);
  const dpgd_dense2 d = backward(m, &b, x, y, B);
  dpgd_convnet_rows(m, &d, rows, B);
}

/* conv2's weight gradient is formed and summed in (C2, K2, K2, C1) order (convnet.c,
 * dpgd_conv_wgrad_hwc); with C1 = K2 K2 each output channel's block is a 16 x 16
 * transpose of the slab's (C1, K2, K2), its own inverse. */
static void cnn_acc_order(const dpgd_model *m, double *acc, int to_slab)
{
  (void)m, (void)to_slab;
  _Static_assert(C1 == 16 && K2 * K2 == 16, "conv2's block permutation: 16 x 16 transposes");
  dpgd_square16d(acc + OW2, C2);
}

static const dpgd_model_type cnn_type = {
    .name = "cnn",
    .file_id = 2,
    .default_chunk = 16,
    .layout = cnn_layout,
    .flops = cnn_flops,
    .scratch_floats = cnn_scratch,
    .logits = cnn_logits,
    .chunk_step = cnn_chunk_step,
    .chunk_rows = cnn_chunk_rows,
    .acc_order = cnn_acc_order,
};
const dpgd_model_type *dpgd_model_cnn = &cnn_type;
