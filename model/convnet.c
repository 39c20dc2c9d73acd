/* convnet.c -- what the two convolutional models (cnn.c on pixels, scatter_cnn.c on
 * scattering features) share: a convolution forward after im2col, one example's
 * convolution weight and bias gradients, the PyTorch flatten order, and the end of the
 * chunk step (norms over every parameter, clip factors, clipped sums in double). */

#include <string.h>

#include "layers.h"
#include "model_internal.h"
#include "vec4.h"

/* Each example's (hw, c) block transposed (dpgd_transpose). */
void dpgd_flatten_chw(float *f, const float *p, size_t B, size_t hw, size_t c)
{
  for (size_t i = 0; i < B; i++) dpgd_transpose(f + i * hw * c, hw, p + i * hw * c, c, hw, c);
}

void dpgd_unflatten_chw(float *p, const float *f, size_t B, size_t hw, size_t c)
{
  for (size_t i = 0; i < B; i++) dpgd_transpose(p + i * hw * c, c, f + i * hw * c, hw, c, hw);
}

void dpgd_conv_forward(float *y, const float *cols, const float *W, const float *bias,
                       float *wt, size_t rows, size_t K, size_t cout)
{
  dpgd_transpose(wt, cout, W, K, cout, K);
  dpgd_gemm(DPGD_TILE_6X2, y, cout, cols, K, 1, wt, cout, bias, rows, cout, K);
}

/* db (cout) = the column sums of dy (n, cout), row after row: for 16 and 32 channels
 * in eight-lane vectors held in registers (the same additions lane by lane), otherwise
 * one float at a time. */
#define SUMS_MAXV 4
static inline void column_sums8(float *db, const float *dy, size_t n, size_t nv)
{
  v8f s[SUMS_MAXV], v;
  for (size_t t = 0; t < nv; t++) s[t] = (v8f){0.0f};
  for (size_t q = 0; q < n; q++)
    for (size_t t = 0; t < nv; t++) {
      V8_LOAD(v, dy + (q * nv + t) * 8);
      s[t] += v;
    }
  for (size_t t = 0; t < nv; t++) V8_STORE(db + t * 8, s[t]);
}

DPGD_CLONES static void bias_grad(float *db, const float *dy, size_t n, size_t cout)
{
  if (cout == 16) {
    column_sums8(db, dy, n, 2);
  } else if (cout == 32) {
    column_sums8(db, dy, n, 4);
  } else {
    for (size_t o = 0; o < cout; o++) db[o] = 0.0f;
    for (size_t q = 0; q < n; q++)
      for (size_t o = 0; o < cout; o++) db[o] += dy[q * cout + o];
  }
}

void dpgd_conv_grad_example(float *dW, float *db, const float *dy, const float *cols, size_t n,
                            size_t K, size_t cout)
{
  dpgd_conv_wgrad(dW, dy, cols, n, K, cout);
  bias_grad(db, dy, n, cout);
}

/* Example i's convolution gradients into the row g (the slab offsets conv[c].w, .b). */
static void conv_grads_row(const dpgd_dense2 *d, float *g, size_t i)
{
  for (int c = 0; c < 2; c++) {
    const dpgd_conv_grads *v = &d->conv[c];
    const float *dy = v->dy + i * v->n * v->cout;
    if (v->image) {
      const conv_shape *sh = v->shape;
      dpgd_conv_wgrad_hwc(g + v->w, dy, v->image + i * sh->h * sh->w * sh->cin, sh,
                          (float *)v->cols);
      bias_grad(g + v->b, dy, v->n, v->cout);
    } else if (v->cols) {
      dpgd_conv_grad_example(g + v->w, g + v->b, dy, v->cols + i * v->n * v->K, v->n, v->K,
                             v->cout);
    } else {
      dpgd_conv_stage_wgrad(g + v->w, g + v->b, dy,
                            v->stage + i * dpgd_conv_stage_floats(v->shape), v->shape);
    }
  }
}

/* Examples [i0, i1) of the chunk, at most DPGD_CONVNET_GROUP: their convolution
 * gradients into G's rows 0 .. i1 - i0, norms, clip factors, and the rows' clipped sums. */
static void clip_group(const dpgd_model *m, const dpgd_dense2 *d, double *acc, double *pre,
                       double *post, const double *caps, size_t i0, size_t i1)
{
  const size_t K = (size_t)m->n_classes, pc = d->pconv, fl = d->flat, hid = d->hid;
  for (size_t i = i0; i < i1; i++) conv_grads_row(d, d->G + (i - i0) * pc, i);
  dpgd_sqnorm_d_rows(pre + i0, d->G, pc, i1 - i0, pc); /* the convolutions' part */
  for (size_t i = i0; i < i1; i++) {
    double sq = pre[i];
    sq += dpgd_linear_sqnorm(d->dh + i * hid, d->f + i * fl, hid, fl);
    sq += dpgd_linear_sqnorm(d->dz + i * K, d->h + i * hid, K, hid);
    d->scale[i] = dpgd_clip_scale(sq, caps[i], m->n_params, &pre[i], &post[i]);
  }
  dpgd_accumulate_rows(acc, d->G, d->scale + i0, i1 - i0, pc);
}

void dpgd_convnet_clip_sum(const dpgd_model *m, const dpgd_dense2 *d, double *acc, double *pre,
                           double *post, const double *caps, size_t B)
{
  const size_t K = (size_t)m->n_classes, pc = d->pconv, fl = d->flat, hid = d->hid;
  for (size_t i0 = 0; i0 < B; i0 += DPGD_CONVNET_GROUP)
    clip_group(m, d, acc, pre, post, caps, i0,
               B - i0 < DPGD_CONVNET_GROUP ? B : i0 + DPGD_CONVNET_GROUP);
  double *acc3 = acc + pc, *acc4 = acc3 + hid * fl + hid;
  dpgd_accumulate_linear(acc3, acc3 + hid * fl, d->rsd, d->xd, d->dh, d->f, d->scale, B, hid,
                         fl);
  dpgd_accumulate_linear(acc4, acc4 + K * hid, d->rsd, d->xd, d->dz, d->h, d->scale, B, K, hid);
}

void dpgd_convnet_rows(const dpgd_model *m, const dpgd_dense2 *d, float *rows, size_t B)
{
  const size_t K = (size_t)m->n_classes, P = m->n_params, pc = d->pconv, fl = d->flat;
  for (size_t i = 0; i < B; i++) {
    float *g = rows + i * P;
    conv_grads_row(d, g, i);
    for (int c = 0; c < 2; c++) { /* rows in slab order: (cout, k, k, cin) put back */
      const dpgd_conv_grads *v = &d->conv[c];
      if (!v->image) continue;
      memcpy(d->G, g + v->w, v->cout * v->K * sizeof(float));
      dpgd_hwc_to_chw(g + v->w, d->G, v->cout, v->shape->cin, v->shape->k);
    }
  }
  float *fc1 = rows + pc, *fc2 = fc1 + d->hid * fl + d->hid;
  dpgd_outer_rows(fc1, P, d->dh, d->f, B, d->hid, fl);
  dpgd_outer_rows(fc2, P, d->dz, d->h, B, K, d->hid);
}
