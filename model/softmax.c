/* softmax.c -- softmax regression (d -> K, weights (K, d) then bias (K), PyTorch's
 * nn.Linear layout). Its per-example gradient is rank one, (p - y) x^T and (p - y) for
 * the bias, so ||g||^2 = (||x||^2 + 1) ||p - y||^2 (DESIGN.md "Performance model"):
 * norms cost O(d + K), and the clipped sum is ONE sgemm per chunk, X^T times the
 * residuals scaled by each example's clip factor -- no per-example outer product. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "layers.h"
#include "model_internal.h"

static size_t softmax_layout(tensor_spec *t, size_t rows, size_t cols, int n_classes)
{
  size_t d = rows * cols, K = (size_t)n_classes;
  t[0] = (tensor_spec){K * d, d}; /* weight (K, d) */
  t[1] = (tensor_spec){K, d};     /* bias (K) */
  return 2;
}

/* Scratch: residuals (B, K), their scaled copy (B, K), factors (B), gradient (K*d + K). */
static size_t softmax_scratch(const dpgd_model *m, size_t chunk)
{
  size_t K = (size_t)m->n_classes;
  return 2 * chunk * K + chunk + m->n_params;
}

static void softmax_logits(const dpgd_model *m, float *scratch, float *out, const float *x,
                           size_t B)
{
  (void)scratch;
  const size_t d = m->d, K = (size_t)m->n_classes;
  const float *W = m->params, *b = m->params + K * d;
  for (size_t i = 0; i < B; i++) memcpy(out + i * K, b, K * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, (int)K, (int)d, 1.0f, x,
              (int)d, W, (int)d, 1.0f, out, (int)K);
}

static void softmax_chunk_step(const dpgd_model *m, float *scratch, double *acc,
                               double *pre, double *post, float *x, const uint8_t *y,
                               const double *caps, size_t B)
{
  const size_t d = m->d, K = (size_t)m->n_classes;
  float *r = scratch, *rs = r + B * K, *scale = rs + B * K, *g = scale + B;
  softmax_logits(m, NULL, r, x, B);
  softmax_residual(r, y, B, (int)K);
  for (size_t i = 0; i < B; i++) {
    double xx = 0.0, rr = 0.0;
    for (size_t j = 0; j < d; j++) xx += (double)x[i * d + j] * x[i * d + j];
    for (size_t k = 0; k < K; k++) rr += (double)r[i * K + k] * r[i * K + k];
    scale[i] = clip_scale((xx + 1.0) * rr, caps[i], &pre[i], &post[i]);
    for (size_t k = 0; k < K; k++) rs[i * K + k] = scale[i] * r[i * K + k];
    if (scale[i] == 0.0f) { /* 0 * NaN would be NaN: drop the row entirely */
      memset(rs + i * K, 0, K * sizeof(float));
      memset(x + i * d, 0, d * sizeof(float));
    }
  }
  /* Weight part: sum_i s_i r_i x_i^T = Rs^T X, (K, d). Bias part: column sums of Rs. */
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)d, (int)B, 1.0f, rs,
              (int)K, x, (int)d, 0.0f, g, (int)d);
  for (size_t p = 0; p < K * d; p++) acc[p] += g[p];
  for (size_t i = 0; i < B; i++)
    for (size_t k = 0; k < K; k++) acc[K * d + k] += rs[i * K + k];
}

static const dpgd_model_type softmax_type = {
    .name = "softmax",
    .file_id = 1,
    .default_chunk = 64,
    .layout = softmax_layout,
    .scratch_floats = softmax_scratch,
    .logits = softmax_logits,
    .chunk_step = softmax_chunk_step,
};
const dpgd_model_type *dpgd_model_softmax = &softmax_type;
