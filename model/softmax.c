/* softmax.c -- softmax regression (d -> K, weights (K, d) then bias (K), PyTorch's
 * nn.Linear layout). Its per-example gradient is rank one, (p - y) x^T and (p - y) for
 * the bias, so ||g||^2 = (||x||^2 + 1) ||p - y||^2 (model/SENSITIVITY.md section 2):
 * norms cost O(d + K), and the clipped sum is ONE dgemm per chunk, X^T times the
 * residuals scaled by each example's clip factor -- no per-example outer product. */
#include <math.h>
#include <string.h>

#include "layers.h"
#include "model_internal.h"

static size_t softmax_layout(tensor_spec *t, size_t rows, size_t cols, int n_classes)
{
  size_t d = rows * cols, K = (size_t)n_classes;
  t[0] = (tensor_spec){K * d, d}; /* weight (K, d) */
  t[1] = (tensor_spec){K, d};     /* bias (K) */
  return 2;
}

/* Logits 2Kd, clipped sum 2Kd (one dgemm), norms 2(d + K). */
static double softmax_flops(const dpgd_model *m)
{
  double d = (double)m->d, K = m->n_classes;
  return 4.0 * K * d + 2.0 * (d + K);
}

/* Scratch, in this order: residuals (B, K) and factors (B) in float, then in double
 * the scaled residuals (B, K) and the inputs (B, d); each part starts on 16 floats. */
static size_t up16(size_t floats) { return (floats + 15) / 16 * 16; }

static size_t softmax_scratch(const dpgd_model *m, size_t chunk)
{
  size_t K = (size_t)m->n_classes;
  return up16(chunk * K) + up16(chunk) + up16(2 * chunk * K) + 2 * chunk * m->d;
}

/* out (B, K) = b + x W^T by dpgd_gemm_nt: each row's logits depend on that row only. */
static void softmax_logits(const dpgd_model *m, float *scratch, float *out, const float *x,
                           size_t B)
{
  (void)scratch;
  const size_t d = m->d, K = (size_t)m->n_classes;
  dpgd_linear_forward(out, x, m->params, m->params + K * d, B, d, K);
}

static void softmax_chunk_step(const dpgd_model *m, float *scratch, double *acc, double *pre,
                               double *post, float *x, const uint8_t *y, const double *caps,
                               size_t B)
{
  const size_t d = m->d, K = (size_t)m->n_classes;
  float *r = scratch, *scale = r + up16(B * K);
  double *rs = (double *)(scale + up16(B)), *xd = rs + up16(2 * B * K) / 2;
  softmax_logits(m, NULL, r, x, B);
  dpgd_softmax_residual(r, y, B, (int)K);
  for (size_t i = 0; i < B; i++)
    scale[i] = dpgd_clip_scale(dpgd_linear_sqnorm(r + i * K, x + i * d, K, d), caps[i],
                               m->n_params, &pre[i], &post[i]);
  dpgd_accumulate_linear(acc, acc + K * d, rs, xd, r, x, scale, B, K, d);
}

/* The rows of secure mode's integer sum: the residuals, then every r_k x_j in float. */
static void softmax_chunk_rows(const dpgd_model *m, float *scratch, float *rows, float *x,
                               const uint8_t *y, size_t B)
{
  const size_t d = m->d, K = (size_t)m->n_classes;
  softmax_logits(m, NULL, scratch, x, B);
  dpgd_softmax_residual(scratch, y, B, (int)K);
  dpgd_outer_rows(rows, m->n_params, scratch, x, B, K, d);
}

/* One vtable for both names: the pixel model and the same model on scattering features
 * (data/scatter.c). The trainer hands the latter a dataset of C x S features per example
 * (81 x 49 on MNIST), so d = 3969 and everything above -- gradients, norms, clipping,
 * the sensitivity contract -- applies unchanged; its own name and file code tell the
 * trainer to compute the features and keep its model files apart from the pixel
 * model's. */
#define SOFTMAX_TYPE(type_name, code)                                                          \
  {                                                                                            \
    .name = type_name, .file_id = code, .default_chunk = 64, .layout = softmax_layout,         \
    .flops = softmax_flops, .scratch_floats = softmax_scratch, .logits = softmax_logits,       \
    .chunk_step = softmax_chunk_step, .chunk_rows = softmax_chunk_rows,                        \
  }
static const dpgd_model_type softmax_type = SOFTMAX_TYPE("softmax", 1);
static const dpgd_model_type scatter_softmax_type = SOFTMAX_TYPE("scatter-softmax", 3);
const dpgd_model_type *dpgd_model_softmax = &softmax_type;
const dpgd_model_type *dpgd_model_scatter_softmax = &scatter_softmax_type;
