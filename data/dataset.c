/* dataset.c -- the in-memory dataset: allocation, normalised unpacking of chunks,
 * truncation, summary statistics, free. Pixels stay uint8; a chunk becomes floats only
 * when a model asks for it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

int dpgd_data_check_classes(int n_classes)
{
  if (n_classes < 1 || n_classes > 256)
    return DPGD_FAIL(DPGD_EINVAL, "number of classes %d is outside 1..256", n_classes);
  return DPGD_OK;
}

dpgd_dataset *dpgd_data_wrap(uint8_t *pixels, uint8_t *labels, size_t n, size_t rows,
                             size_t cols, int n_classes)
{
  dpgd_dataset *ds = pixels && labels ? calloc(1, sizeof *ds) : NULL;
  if (!ds) {
    free(pixels);
    free(labels);
    return NULL;
  }
  ds->n = n;
  ds->rows = rows;
  ds->cols = cols;
  ds->d = rows * cols;
  ds->n_classes = n_classes;
  ds->pixels = pixels;
  ds->labels = labels;
  ds->mean = DPGD_DATA_MNIST_MEAN;
  ds->std = DPGD_DATA_MNIST_STD;
  return ds;
}

dpgd_dataset *dpgd_data_alloc(size_t n, size_t rows, size_t cols, int n_classes)
{
  size_t d, bytes;
  if (n == 0 || dpgd_data_check_classes(n_classes) || __builtin_mul_overflow(rows, cols, &d) ||
      d == 0 || __builtin_mul_overflow(n, d, &bytes))
    return NULL;
  return dpgd_data_wrap(malloc(bytes), malloc(n), n, rows, cols, n_classes);
}

void dpgd_data_class_counts(size_t *counts, const dpgd_dataset *ds)
{
  memset(counts, 0, (size_t)ds->n_classes * sizeof *counts);
  for (size_t i = 0; i < ds->n; i++)
    if (ds->labels[i] < ds->n_classes) counts[ds->labels[i]]++;
}

void dpgd_data_pixel_moments(double *mean, double *std, const uint8_t *px, size_t len)
{
  /* Integer histogram first: exact, and independent of the order of the pixels. */
  size_t hist[256] = {0};
  for (size_t i = 0; i < len; i++) hist[px[i]]++;
  double m = 0.0, v = 0.0;
  if (len) {
    for (int k = 0; k < 256; k++) m += (double)hist[k] * (k / 255.0);
    m /= (double)len;
    for (int k = 0; k < 256; k++) v += (double)hist[k] * (k / 255.0 - m) * (k / 255.0 - m);
    v /= (double)len;
  }
  *mean = m;
  *std = sqrt(v);
}

int dpgd_data_check_norm(double mean, double std, const char *what)
{
  if (!isfinite(mean) || !(std > 0) || !isfinite(std))
    return DPGD_FAIL(DPGD_EINVAL, "%s: mean %g and std %g: expected a finite mean and std > 0",
                     what, mean, std);
  /* The extremes are p = 0 and p = 255; unpack's float factors must stay finite too. */
  double far = fmax(fabs(mean), fabs(1 - mean)) / std;
  float fstd = (float)std, scale = 1.0f / (255.0f * fstd), shift = (float)mean / fstd;
  if (!(far <= DPGD_DATA_NORM_MAX) || !(fstd > 0) || !isfinite(scale) || !isfinite(shift))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: (p/255 - %g) / %g reaches %.3g in magnitude, above %g (std too "
                     "small for the float arithmetic of the models)",
                     what, mean, std, far, DPGD_DATA_NORM_MAX);
  return DPGD_OK;
}

/* Built for AVX-512F, AVX2 and the baseline (x86-64, GCC), picked by the CPU: each pixel
 * is converted (exactly), multiplied and shifted, each operation rounded on its own
 * (data/ is built with -ffp-contract=off), so every version gives the same floats. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(DPGD_NO_CLONES)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void dpgd_data_unpack(float *out, const dpgd_dataset *ds, size_t first, size_t count)
{
  if (ds->feat) {
    memcpy(out, ds->feat + first * ds->d, count * ds->d * sizeof *out);
    return;
  }
  const float scale = 1.0f / (255.0f * ds->std);
  const float shift = ds->mean / ds->std;
  const uint8_t *p = ds->pixels + first * ds->d;
  for (size_t i = 0; i < count * ds->d; i++) out[i] = (float)p[i] * scale - shift;
}

void dpgd_data_unpack_idx(float *out, const dpgd_dataset *ds, const size_t *idx, size_t count)
{
  /* The examples lie anywhere in the dataset: the next one's pixels are fetched while
   * this one is converted (a sampled batch is otherwise bound by the memory's latency). */
  if (ds->feat) { /* features: no conversion to overlap a fetch with */
    for (size_t k = 0; k < count; k++) dpgd_data_unpack(out + k * ds->d, ds, idx[k], 1);
    return;
  }
  for (size_t k = 0; k < count; k++) {
    if (k + 1 < count)
      for (size_t b = 0; b < ds->d; b += 64)
        __builtin_prefetch(ds->pixels + idx[k + 1] * ds->d + b);
    dpgd_data_unpack(out + k * ds->d, ds, idx[k], 1);
  }
}

int dpgd_data_truncate(dpgd_dataset *ds, size_t n)
{
  if (n > ds->n)
    return DPGD_FAIL(DPGD_EINVAL, "cannot keep %zu examples of a dataset of %zu", n, ds->n);
  ds->n = n; /* the buffers keep their size; only the first n are used */
  return DPGD_OK;
}

void dpgd_data_free(dpgd_dataset *ds)
{
  if (!ds) return;
  free(ds->pixels);
  free(ds->feat);
  free(ds->labels);
  free(ds);
}
