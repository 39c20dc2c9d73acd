/* layers.c -- the CNN's kernels (im2col/col2im, linear via sgemm, activations, 2x2
 * stride-1 max pooling) and the softmax residual, each with its slow _ref twin that the
 * tests compare against. NaN inputs propagate (as in PyTorch): relu and max pooling
 * keep a NaN rather than dropping it, so a NaN input gives a NaN gradient, which the
 * engine treats as infinite norm. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "layers.h"

conv_shape dpgd_conv_shape_make(size_t h, size_t w, size_t cin, size_t cout, size_t k,
                                size_t stride, size_t pad)
{
  conv_shape s = {h, w, cin, k, stride, pad, 0, 0, cout};
  s.oh = (h + 2 * pad - k) / stride + 1;
  s.ow = (w + 2 * pad - k) / stride + 1;
  return s;
}

/* One input channel (conv1): each kernel row is a contiguous run of the input row,
 * copied whole, zeros where it overhangs the padding. */
static void im2col_1ch(float *cols, const float *x, const conv_shape *s, size_t B)
{
  const size_t k = s->k, kk = k * k;
  for (size_t b = 0; b < B; b++) {
    const float *xb = x + b * s->h * s->w;
    for (size_t oy = 0; oy < s->oh; oy++) {
      for (size_t ox = 0; ox < s->ow; ox++) {
        float *row = cols + ((b * s->oh + oy) * s->ow + ox) * kk;
        long ix0 = (long)(ox * s->stride) - (long)s->pad;
        size_t lo = ix0 < 0 ? (size_t)-ix0 : 0;
        size_t hi = (long)s->w - ix0 < (long)k ? (size_t)((long)s->w - ix0) : k;
        for (size_t ky = 0; ky < k; ky++) {
          long iy = (long)(oy * s->stride + ky) - (long)s->pad;
          float *dst = row + ky * k;
          if (iy < 0 || iy >= (long)s->h || lo >= hi) {
            for (size_t kx = 0; kx < k; kx++) dst[kx] = 0.0f;
            continue;
          }
          /* plain loops, not memcpy/memset: the runs are a few floats long */
          const float *src = xb + (size_t)iy * s->w + (size_t)ix0;
          for (size_t kx = 0; kx < lo; kx++) dst[kx] = 0.0f;
          for (size_t kx = lo; kx < hi; kx++) dst[kx] = src[kx];
          for (size_t kx = hi; kx < k; kx++) dst[kx] = 0.0f;
        }
      }
    }
  }
}

/* Row-oriented: per output position, per kernel offset, one bounds test, then the
 * channels of that input pixel (contiguous in channels-last input). */
void dpgd_im2col(float *cols, const float *x, const conv_shape *s, size_t B)
{
  if (s->cin == 1) {
    im2col_1ch(cols, x, s, B);
    return;
  }
  const size_t kk = s->k * s->k, K = s->cin * kk;
  for (size_t b = 0; b < B; b++) {
    const float *xb = x + b * s->h * s->w * s->cin;
    for (size_t oy = 0; oy < s->oh; oy++) {
      for (size_t ox = 0; ox < s->ow; ox++) {
        float *row = cols + ((b * s->oh + oy) * s->ow + ox) * K;
        for (size_t ky = 0; ky < s->k; ky++) {
          long iy = (long)(oy * s->stride + ky) - (long)s->pad;
          for (size_t kx = 0; kx < s->k; kx++) {
            long ix = (long)(ox * s->stride + kx) - (long)s->pad;
            float *dst = row + ky * s->k + kx;
            if (iy < 0 || ix < 0 || iy >= (long)s->h || ix >= (long)s->w) {
              for (size_t c = 0; c < s->cin; c++) dst[c * kk] = 0.0f;
            } else {
              const float *src = xb + ((size_t)iy * s->w + (size_t)ix) * s->cin;
              for (size_t c = 0; c < s->cin; c++) dst[c * kk] = src[c];
            }
          }
        }
      }
    }
  }
}

/* Element by element from the definition: each (column entry, input pixel) pair of the
 * convolution's patch matrix, gathered into cols (im2col) or scattered back into x
 * (col2im, its adjoint). */
static void patch_map_ref(float *cols, float *x, const conv_shape *s, size_t B, int scatter)
{
  const size_t K = s->cin * s->k * s->k;
  for (size_t b = 0; b < B; b++)
    for (size_t oy = 0; oy < s->oh; oy++)
      for (size_t ox = 0; ox < s->ow; ox++)
        for (size_t c = 0; c < s->cin; c++)
          for (size_t ky = 0; ky < s->k; ky++)
            for (size_t kx = 0; kx < s->k; kx++) {
              float *col =
                  &cols[((b * s->oh + oy) * s->ow + ox) * K + (c * s->k + ky) * s->k + kx];
              long iy = (long)(oy * s->stride + ky) - (long)s->pad;
              long ix = (long)(ox * s->stride + kx) - (long)s->pad;
              int inside = iy >= 0 && ix >= 0 && iy < (long)s->h && ix < (long)s->w;
              size_t at =
                  inside ? ((b * s->h + (size_t)iy) * s->w + (size_t)ix) * s->cin + c : 0;
              if (scatter) {
                if (inside) x[at] += *col;
              } else {
                *col = inside ? x[at] : 0.0f;
              }
            }
}

void dpgd_im2col_ref(float *cols, const float *x, const conv_shape *s, size_t B)
{
  patch_map_ref(cols, (float *)x, s, B, 0); /* gathers only: x is not written */
}

void dpgd_col2im(float *dx, const float *dcols, const conv_shape *s, size_t B)
{
  const size_t kk = s->k * s->k, K = s->cin * kk;
  for (size_t b = 0; b < B; b++) {
    float *db = dx + b * s->h * s->w * s->cin;
    for (size_t oy = 0; oy < s->oh; oy++) {
      for (size_t ox = 0; ox < s->ow; ox++) {
        const float *row = dcols + ((b * s->oh + oy) * s->ow + ox) * K;
        for (size_t ky = 0; ky < s->k; ky++) {
          long iy = (long)(oy * s->stride + ky) - (long)s->pad;
          if (iy < 0 || iy >= (long)s->h) continue;
          for (size_t kx = 0; kx < s->k; kx++) {
            long ix = (long)(ox * s->stride + kx) - (long)s->pad;
            if (ix < 0 || ix >= (long)s->w) continue;
            float *dst = db + ((size_t)iy * s->w + (size_t)ix) * s->cin;
            const float *src = row + ky * s->k + kx;
            for (size_t c = 0; c < s->cin; c++) dst[c] += src[c * kk];
          }
        }
      }
    }
  }
}

void dpgd_col2im_ref(float *dx, const float *dcols, const conv_shape *s, size_t B)
{
  patch_map_ref((float *)dcols, dx, s, B, 1); /* scatters only: dcols is not written */
}

void dpgd_linear_forward(float *y, const float *x, const float *W, const float *b, size_t rows,
                         size_t K, size_t cout)
{
  for (size_t r = 0; r < rows; r++) memcpy(y + r * cout, b, cout * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cout, (int)K, 1.0f, x,
              (int)K, W, (int)K, 1.0f, y, (int)cout);
}

void dpgd_linear_forward_ref(float *y, const float *x, const float *W, const float *b,
                             size_t rows, size_t K, size_t cout)
{
  for (size_t r = 0; r < rows; r++)
    for (size_t o = 0; o < cout; o++) {
      double acc = b[o];
      for (size_t k = 0; k < K; k++) acc += (double)x[r * K + k] * W[o * K + k];
      y[r * cout + o] = (float)acc;
    }
}

void dpgd_linear_backward_input(float *dx, const float *dy, const float *W, size_t rows,
                                size_t K, size_t cout)
{
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)K, (int)cout, 1.0f, dy,
              (int)cout, W, (int)K, 0.0f, dx, (int)K);
}

void dpgd_linear_backward_input_ref(float *dx, const float *dy, const float *W, size_t rows,
                                    size_t K, size_t cout)
{
  for (size_t r = 0; r < rows; r++)
    for (size_t k = 0; k < K; k++) {
      double acc = 0.0;
      for (size_t o = 0; o < cout; o++) acc += (double)dy[r * cout + o] * W[o * K + k];
      dx[r * K + k] = (float)acc;
    }
}

void dpgd_act_forward(float *a, size_t n, dpgd_activation act)
{
  if (act == DPGD_ACT_TANH) {
    dpgd_tanh_f32(a, n);
  } else {
    for (size_t i = 0; i < n; i++) a[i] = a[i] < 0.0f ? 0.0f : a[i]; /* NaN stays */
  }
}

void dpgd_act_backward(float *dy, const float *a, size_t n, dpgd_activation act)
{
  if (act == DPGD_ACT_TANH) {
    for (size_t i = 0; i < n; i++) dy[i] *= 1.0f - a[i] * a[i];
  } else {
    for (size_t i = 0; i < n; i++) dy[i] = a[i] > 0.0f ? dy[i] : 0.0f;
  }
}

/* Channel runs are contiguous: the four candidates of every output pixel are compared
 * over the channel vector at once. */
void dpgd_maxpool2s1_forward(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                             size_t w, size_t c)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t b = 0; b < B; b++)
    for (size_t i = 0; i < oh; i++)
      for (size_t j = 0; j < ow; j++) {
        const float *x00 = x + ((b * h + i) * w + j) * c, *x01 = x00 + c;
        const float *x10 = x00 + w * c, *x11 = x10 + c;
        float *yo = y + ((b * oh + i) * ow + j) * c;
        uint8_t *ao = arg + ((b * oh + i) * ow + j) * c;
        for (size_t ch = 0; ch < c; ch++) {
          float m = x00[ch];
          uint8_t a = 0;
          if (x01[ch] > m || (x01[ch] != x01[ch] && m == m)) {
            m = x01[ch];
            a = 1;
          }
          if (x10[ch] > m || (x10[ch] != x10[ch] && m == m)) {
            m = x10[ch];
            a = 2;
          }
          if (x11[ch] > m || (x11[ch] != x11[ch] && m == m)) {
            m = x11[ch];
            a = 3;
          }
          yo[ch] = m;
          ao[ch] = a;
        }
      }
}

void dpgd_maxpool2s1_forward_ref(float *y, uint8_t *arg, const float *x, size_t B, size_t h,
                                 size_t w, size_t c)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t b = 0; b < B; b++)
    for (size_t ch = 0; ch < c; ch++)
      for (size_t i = 0; i < oh; i++)
        for (size_t j = 0; j < ow; j++) {
          size_t o = ((b * oh + i) * ow + j) * c + ch;
          int best = -1;
          float m = 0.0f;
          for (int q = 0; q < 4; q++) {
            float v = x[((b * h + i + (size_t)(q / 2)) * w + j + (size_t)(q % 2)) * c + ch];
            if (best < 0 || (isnan(v) && !isnan(m)) || v > m) {
              m = v;
              best = q;
            }
          }
          y[o] = m;
          arg[o] = (uint8_t)best;
        }
}

void dpgd_maxpool2s1_backward(float *dx, const float *dy, const uint8_t *arg, size_t B,
                              size_t h, size_t w, size_t c)
{
  const size_t oh = h - 1, ow = w - 1;
  memset(dx, 0, B * h * w * c * sizeof(float));
  for (size_t b = 0; b < B; b++)
    for (size_t i = 0; i < oh; i++)
      for (size_t j = 0; j < ow; j++) {
        const float *g = dy + ((b * oh + i) * ow + j) * c;
        const uint8_t *a = arg + ((b * oh + i) * ow + j) * c;
        float *d00 = dx + ((b * h + i) * w + j) * c;
        for (size_t ch = 0; ch < c; ch++)
          d00[(a[ch] >> 1) * w * c + (a[ch] & 1) * c + ch] += g[ch];
      }
}

void dpgd_maxpool2s1_backward_ref(float *dx, const float *dy, const uint8_t *arg, size_t B,
                                  size_t h, size_t w, size_t c)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t q = 0; q < B * h * w * c; q++) dx[q] = 0.0f;
  for (size_t b = 0; b < B; b++)
    for (size_t ch = 0; ch < c; ch++)
      for (size_t i = 0; i < oh; i++)
        for (size_t j = 0; j < ow; j++) {
          size_t o = ((b * oh + i) * ow + j) * c + ch;
          size_t yi = i + arg[o] / 2, xj = j + arg[o] % 2;
          dx[((b * h + yi) * w + xj) * c + ch] += dy[o];
        }
}

void dpgd_softmax_residual(float *r, const uint8_t *y, size_t B, int K)
{
  for (size_t i = 0; i < B; i++) {
    float *z = r + i * (size_t)K;
    float m = z[0];
    for (int k = 1; k < K; k++) m = z[k] > m ? z[k] : m;
    double s = 0.0;
    for (int k = 0; k < K; k++) s += exp((double)z[k] - m);
    for (int k = 0; k < K; k++) z[k] = (float)(exp((double)z[k] - m) / s);
    z[y[i]] -= 1.0f;
  }
}
