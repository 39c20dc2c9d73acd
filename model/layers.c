/* layers.c -- the CNN's kernels (im2col/col2im, linear via dpgd_gemm, activations, 2x2
 * stride-1 max pooling) and the softmax residual, each with its slow _ref twin that the
 * tests compare against. NaN inputs propagate (as in PyTorch): relu and max pooling
 * keep a NaN rather than dropping it, so a NaN input gives a NaN gradient, which the
 * engine treats as infinite norm. */
#include <math.h>
#include <string.h>

#include "layers.h"
#include "vec4.h"

conv_shape dpgd_conv_shape_make(size_t h, size_t w, size_t cin, size_t cout, size_t k,
                                size_t stride, size_t pad)
{
  conv_shape s = {h, w, cin, k, stride, pad, 0, 0, cout};
  s.oh = (h + 2 * pad - k) / stride + 1;
  s.ow = (w + 2 * pad - k) / stride + 1;
  return s;
}

/* k = 4 and cin a multiple of 16 with AVX-512F: patch512.c's transposes. Other images
 * that fit patch.c's stage go there. Larger ones, row-oriented: per output
 * position, per kernel offset, one bounds test, then the channels of that input pixel
 * (contiguous in channels-last input). */
void dpgd_im2col(float *cols, const float *x, const conv_shape *s, size_t B)
{
  if (dpgd_im2col_k4c16(cols, x, s, B)) return;
  if (dpgd_patch_staged(s)) {
    dpgd_im2col_staged(cols, x, s, B);
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
  dpgd_gemm_nt(y, cout, x, K, W, K, b, rows, cout, K);
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
  dpgd_gemm(DPGD_TILE_6X2, dx, K, dy, cout, 1, W, K, NULL, rows, K, cout);
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

DPGD_CLONES void dpgd_act_forward(float *a, size_t n, dpgd_activation act)
{
  if (act == DPGD_ACT_TANH) {
    dpgd_tanh_f32(a, n);
  } else {
    for (size_t i = 0; i < n; i++) a[i] = a[i] < 0.0f ? 0.0f : a[i]; /* NaN stays */
  }
}

DPGD_CLONES void dpgd_act_backward(float *dy, const float *a, size_t n, dpgd_activation act)
{
  if (act == DPGD_ACT_TANH) {
    for (size_t i = 0; i < n; i++) dy[i] *= 1.0f - a[i] * a[i];
  } else {
    for (size_t i = 0; i < n; i++) dy[i] = a[i] > 0.0f ? dy[i] : 0.0f;
  }
}

/* v wins over m where v > m, or v is NaN and m is not (NaN propagates, the first NaN
 * stays); ties keep m, the earlier candidate. */
static inline int pool_wins(float v, float m) { return v > m || (v != v && m == m); }

/* relu's value a < 0 ? +0 : a (NaN and -0 stay) when `relu`, else v: dpgd_act_forward's
 * operation, so that pooling it on the fly gives the bits of pooling its output. */
#define RELU8(v, relu)                                                                         \
  do {                                                                                         \
    if (relu) (v) = (v8f)((v8i)(v) & ~((v) < 0.0f));                                           \
  } while (0)
static inline float relu1(float v, int relu) { return relu && v < 0.0f ? 0.0f : v; }

static inline void pool_pick8(v8f *m, v8i *a, const float *p, int q, int relu)
{
  v8f v;
  V8_LOAD(v, p);
  RELU8(v, relu);
  v8i t = (v > *m) | ((v != v) & (*m == *m));
  *m = (v8f)(((v8i)v & t) | ((v8i)*m & ~t));
  *a = (q & t) | (*a & ~t);
}

/* One output pixel's channels: the four candidates of each channel compared eight
 * channels at a time. */
static inline void pool_pixel(float *yo, uint8_t *ao, const float *x00, const float *x01,
                              const float *x10, const float *x11, size_t c, int relu)
{
  size_t ch = 0;
  for (; ch + 8 <= c; ch += 8) {
    v8f m;
    V8_LOAD(m, x00 + ch);
    RELU8(m, relu);
    v8i a = {0};
    pool_pick8(&m, &a, x01 + ch, 1, relu);
    pool_pick8(&m, &a, x10 + ch, 2, relu);
    pool_pick8(&m, &a, x11 + ch, 3, relu);
    if (relu) a = (a & (m > 0.0f)) | (POOL_NONE & ~(m > 0.0f));
    const v8b ab = __builtin_convertvector(a, v8b);
    V8_STORE(yo + ch, m);
    V8_STORE(ao + ch, ab);
  }
  for (; ch < c; ch++) {
    float m = relu1(x00[ch], relu);
    int32_t a = 0;
    const float v[3] = {relu1(x01[ch], relu), relu1(x10[ch], relu), relu1(x11[ch], relu)};
    for (int32_t q = 0; q < 3; q++)
      if (pool_wins(v[q], m)) m = v[q], a = q + 1;
    yo[ch] = m;
    ao[ch] = (uint8_t)(relu && !(m > 0.0f) ? POOL_NONE : a);
  }
}

static inline __attribute__((always_inline)) void pool_forward(float *y, uint8_t *arg,
                                                               const float *x, size_t B,
                                                               size_t h, size_t w, size_t c,
                                                               int relu)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t b = 0; b < B; b++)
    for (size_t i = 0; i < oh; i++)
      for (size_t j = 0; j < ow; j++) {
        const float *x00 = x + ((b * h + i) * w + j) * c, *x10 = x00 + w * c;
        size_t o = ((b * oh + i) * ow + j) * c;
        pool_pixel(y + o, arg + o, x00, x00 + c, x10, x10 + c, c, relu);
      }
}

/* Where the CPU has AVX-512F and c % 16 == 0, pool512.c's kernels run instead: the same
 * rules in sixteen lanes, the same bits. */
DPGD_CLONES void dpgd_maxpool2s1_forward(float *y, uint8_t *arg, const float *x, size_t B,
                                         size_t h, size_t w, size_t c)
{
  if (dpgd_maxpool512_forward(y, arg, x, B, h, w, c, 0)) return;
  pool_forward(y, arg, x, B, h, w, c, 0);
}

DPGD_CLONES void dpgd_maxpool2s1_relu_forward(float *y, uint8_t *arg, const float *x, size_t B,
                                              size_t h, size_t w, size_t c)
{
  if (dpgd_maxpool512_forward(y, arg, x, B, h, w, c, 1)) return;
  pool_forward(y, arg, x, B, h, w, c, 1);
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

/* One input pixel's channels: d = the sum, in scan order, of dy over the (up to four)
 * output pixels n[0..nq) whose maximum it is, i.e. whose arg equals q[.]; it starts at
 * +0, and an output pixel whose maximum is elsewhere adds +0 (a zero bit pattern),
 * which changes nothing: a sum that starts at +0 is never -0 in round to nearest. So d
 * has the bits of the reference's zeroing and scattering. */
enum { ACT_NONE, ACT_RELU, ACT_TANH }; /* what pool_gather multiplies its sums by */

static inline __attribute__((always_inline)) void pool_gather(float *d, const float *const *g,
                                                              const uint8_t *const *a,
                                                              const int32_t *q, int nq,
                                                              size_t c, const float *z, int act)
{
  size_t ch = 0;
  for (; ch + 8 <= c; ch += 8) {
    v8f dv = {0.0f}, gv;
    v8b ab;
    for (int t = 0; t < nq; t++) {
      V8_LOAD(gv, g[t] + ch);
      V8_LOAD(ab, a[t] + ch);
      dv += (v8f)((v8i)gv & (__builtin_convertvector(ab, v8i) == q[t]));
    }
    if (act) {
      v8f zv;
      V8_LOAD(zv, z + ch);
      dv = act == ACT_RELU ? (v8f)((v8i)dv & (zv > 0.0f)) : dv * (1.0f - zv * zv);
    }
    V8_STORE(d + ch, dv);
  }
  for (; ch < c; ch++) {
    float dv = 0.0f;
    for (int t = 0; t < nq; t++) dv += a[t][ch] == q[t] ? g[t][ch] : 0.0f;
    if (act == ACT_RELU) dv = z[ch] > 0.0f ? dv : 0.0f;
    if (act == ACT_TANH) dv *= 1.0f - z[ch] * z[ch];
    d[ch] = dv;
  }
}

/* Gathered per input pixel rather than scattered per output pixel, so that every store
 * is a whole channel run and no zeroing pass is needed; the neighbours (y-1, x-1),
 * (y-1, x), (y, x-1), (y, x) are the output pixels' scan order. */
static inline __attribute__((always_inline)) void pool_backward(float *dx, const float *dy,
                                                                const uint8_t *arg, size_t B,
                                                                size_t h, size_t w, size_t c,
                                                                const float *z, int act)
{
  const size_t oh = h - 1, ow = w - 1;
  for (size_t b = 0; b < B; b++)
    for (size_t yy = 0; yy < h; yy++)
      for (size_t xx = 0; xx < w; xx++) {
        const float *g[4];
        const uint8_t *a[4];
        int32_t q[4];
        int nq = 0;
        if (yy > 0 && xx > 0 && yy < oh && xx < ow) { /* interior: all four, unrolled */
          size_t o = ((b * oh + yy - 1) * ow + xx - 1) * c;
          const size_t off[4] = {0, c, ow * c, (ow + 1) * c};
          for (int t = 0; t < 4; t++) {
            g[t] = dy + o + off[t];
            a[t] = arg + o + off[t];
            q[t] = 3 - t;
          }
          const size_t at = ((b * h + yy) * w + xx) * c;
          pool_gather(dx + at, g, a, q, 4, c, act ? z + at : NULL, act);
          continue;
        }
        for (int t = 0; t < 4; t++) {
          size_t i = yy + (size_t)(t >> 1) - 1, j = xx + (size_t)(t & 1) - 1; /* may wrap */
          if (i >= oh || j >= ow) continue;
          size_t o = ((b * oh + i) * ow + j) * c;
          g[nq] = dy + o;
          a[nq] = arg + o;
          q[nq++] = 3 - t; /* the offset of (yy, xx) in that output pixel's window */
        }
        const size_t at = ((b * h + yy) * w + xx) * c;
        pool_gather(dx + at, g, a, q, nq, c, act ? z + at : NULL, act);
      }
}

DPGD_CLONES void dpgd_maxpool2s1_backward(float *dx, const float *dy, const uint8_t *arg,
                                          size_t B, size_t h, size_t w, size_t c)
{
  if (dpgd_maxpool512_backward(dx, dy, arg, NULL, B, h, w, c, DPGD_ACT_RELU)) return;
  pool_backward(dx, dy, arg, B, h, w, c, NULL, ACT_NONE);
}

DPGD_CLONES void dpgd_maxpool2s1_backward_act(float *dx, const float *dy, const uint8_t *arg,
                                              const float *a, size_t B, size_t h, size_t w,
                                              size_t c, dpgd_activation act)
{
  if (dpgd_maxpool512_backward(dx, dy, arg, a, B, h, w, c, act)) return;
  if (act == DPGD_ACT_TANH) pool_backward(dx, dy, arg, B, h, w, c, a, ACT_TANH);
  else pool_backward(dx, dy, arg, B, h, w, c, a, ACT_RELU);
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
          if (arg[o] > 3) continue; /* POOL_NONE */
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
