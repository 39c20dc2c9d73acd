/* patch.c -- im2col and col2im through a staged, zero-padded channels-first copy of one
 * image: in that layout every (channel, kernel row) run of a patch is k contiguous floats,
 * so a patch row is cin * k block copies instead of cin * k * k strided single floats.
 * The results are bit-identical to the direct loops (copies are exact; col2im adds each
 * input pixel's contributions in the same order). Images too large for the stage take
 * the direct loops of layers.c. */
#include <string.h>

#include "layers.h"
#include "vec4.h"

/* Floats of the per-call stage (on the stack: 32 KB), enough for the CNN's two images
 * (1 x 34 x 34 padded, 16 x 13 x 13). */
#define STAGE_FLOATS 8192

int dpgd_patch_staged(const conv_shape *s)
{
  size_t hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
  return s->cin <= STAGE_FLOATS && hp <= STAGE_FLOATS / s->cin &&
         wp <= STAGE_FLOATS / s->cin / (hp ? hp : 1);
}

/* A (n, c) block of rows of stride sr into (c, n) of stride sc, or back: the bulk in
 * 4 x 4 transposes, the edges one float at a time. */
static inline void transpose(float *dst, size_t sd, const float *src, size_t ss, size_t n,
                             size_t c)
{
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    size_t ch = 0;
    for (; ch + 4 <= c; ch += 4)
      v4f_transpose_block(dst + ch * sd + i, sd, src + i * ss + ch, ss);
    for (; ch < c; ch++)
      for (size_t q = 0; q < 4; q++) dst[ch * sd + i + q] = src[(i + q) * ss + ch];
  }
  for (; i < n; i++)
    for (size_t ch = 0; ch < c; ch++) dst[ch * sd + i] = src[i * ss + ch];
}

void dpgd_transpose(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                    size_t cols)
{
  if (!dpgd_transpose16(dst, ds, src, ss, rows, cols)) transpose(dst, ds, src, ss, rows, cols);
}

/* stage (cin, h + 2 pad, w + 2 pad) = image x (h, w, cin) channels-last, zero border:
 * row by row, each row's (w, cin) block transposed into the channels' planes. */
static inline void stage_image(float *stage, const float *x, const conv_shape *s)
{
  const size_t p = s->pad, hp = s->h + 2 * p, wp = s->w + 2 * p, c = s->cin;
  if (p > 0) memset(stage, 0, c * hp * wp * sizeof(float));
  if (c == 1) {
    for (size_t y = 0; y < s->h; y++)
      memcpy(stage + (y + p) * wp + p, x + y * s->w, s->w * sizeof(float));
    return;
  }
  for (size_t y = 0; y < s->h; y++)
    transpose(stage + (y + p) * wp + p, hp * wp, x + y * s->w * c, c, s->w, c);
}

/* One image's patch rows from its stage. Inlined with k a constant for the CNN's
 * kernels (4, 8), so that a run is a few vector moves and the (c, ky) loops unroll. */
static inline void patch_rows(float *row, const float *stage, const conv_shape *s, size_t k,
                              size_t wp, size_t plane)
{
  const size_t K = s->cin * k * k;
  for (size_t oy = 0; oy < s->oh; oy++)
    for (size_t ox = 0; ox < s->ow; ox++, row += K) {
      const float *src = stage + oy * s->stride * wp + ox * s->stride;
      for (size_t c = 0; c < s->cin; c++)
        for (size_t ky = 0; ky < k; ky++) {
          float *d = row + (c * k + ky) * k;
          const float *r = src + c * plane + ky * wp;
          if (k == 8) {
            v8f v;
            V8_LOAD(v, r);
            V8_STORE(d, v);
          } else {
            memcpy(d, r, k * sizeof(float));
          }
        }
    }
}

DPGD_CLONES void dpgd_im2col_staged(float *cols, const float *x, const conv_shape *s, size_t B)
{
  float stage[STAGE_FLOATS];
  const size_t k = s->k, wp = s->w + 2 * s->pad, plane = (s->h + 2 * s->pad) * wp;
  for (size_t b = 0; b < B; b++) {
    stage_image(stage, x + b * s->h * s->w * s->cin, s);
    float *row = cols + b * s->oh * s->ow * s->cin * k * k;
    if (k == 4) patch_rows(row, stage, s, 4, wp, plane);
    else if (k == 8) patch_rows(row, stage, s, 8, wp, plane);
    else patch_rows(row, stage, s, k, wp, plane);
  }
}

/* The adjoint of patch_rows: each run added into the stage, element by element (four
 * lanes at a time for k = 4: the same additions). */
static inline void unpatch_rows(float *stage, const float *row, const conv_shape *s, size_t k,
                                size_t wp, size_t plane)
{
  const size_t K = s->cin * k * k;
  for (size_t oy = 0; oy < s->oh; oy++)
    for (size_t ox = 0; ox < s->ow; ox++, row += K) {
      float *dst = stage + oy * s->stride * wp + ox * s->stride;
      for (size_t c = 0; c < s->cin; c++)
        for (size_t ky = 0; ky < k; ky++) {
          float *d = dst + c * plane + ky * wp;
          const float *r = row + (c * k + ky) * k;
          if (k == 4) v4f_store(d, v4f_load(d) + v4f_load(r));
          else
            for (size_t q = 0; q < k; q++) d[q] += r[q];
        }
    }
}

/* The stage's interior back to dx (h, w, cin) channels-last; the padding is dropped. */
static inline void unstage_image(float *dx, const float *stage, const conv_shape *s)
{
  const size_t p = s->pad, hp = s->h + 2 * p, wp = s->w + 2 * p, c = s->cin;
  if (c == 1) {
    for (size_t y = 0; y < s->h; y++)
      memcpy(dx + y * s->w, stage + (y + p) * wp + p, s->w * sizeof(float));
    return;
  }
  for (size_t y = 0; y < s->h; y++)
    transpose(dx + y * s->w * c, c, stage + (y + p) * wp + p, hp * wp, c, s->w);
}

/* Every pixel starts at +0 and receives its contributions in (oy, ox) order, as in
 * zeroing dx and calling dpgd_col2im: for one pixel and one output position there is at
 * most one (ky, kx), so the inner loop order does not matter. */
DPGD_CLONES void dpgd_col2im_staged(float *dx, const float *dcols, const conv_shape *s,
                                    size_t B)
{
  float stage[STAGE_FLOATS];
  const size_t k = s->k, wp = s->w + 2 * s->pad, plane = (s->h + 2 * s->pad) * wp;
  for (size_t b = 0; b < B; b++) {
    memset(stage, 0, s->cin * plane * sizeof(float));
    const float *row = dcols + b * s->oh * s->ow * s->cin * k * k;
    if (k == 4) unpatch_rows(stage, row, s, 4, wp, plane);
    else unpatch_rows(stage, row, s, k, wp, plane);
    unstage_image(dx + b * s->h * s->w * s->cin, stage, s);
  }
}

void dpgd_col2im_set(float *dx, const float *dcols, const conv_shape *s, size_t B)
{
  if (dpgd_patch_staged(s)) {
    dpgd_col2im_staged(dx, dcols, s, B);
    return;
  }
  memset(dx, 0, B * s->h * s->w * s->cin * sizeof(float));
  dpgd_col2im(dx, dcols, s, B);
}

void dpgd_weight_hwc(float *wp, const float *W, size_t cout, size_t cin, size_t k)
{
  if (dpgd_weight_hwc_k4c16(wp, W, cout, cin, k)) return;
  const size_t kk = k * k, K = cin * kk;
  for (size_t o = 0; o < cout; o++)
    for (size_t c = 0; c < cin; c++)
      for (size_t q = 0; q < kk; q++) wp[o * K + q * cin + c] = W[o * K + c * kk + q];
}

/* Rows in (ky, kx, c) order: each pixel's channels copied as they lie, zeros at padding. */
void dpgd_im2col_hwc(float *cols, const float *x, const conv_shape *s, size_t B)
{
  const size_t k = s->k, c = s->cin;
  for (size_t b = 0; b < B; b++) {
    const float *xb = x + b * s->h * s->w * c;
    for (size_t oy = 0; oy < s->oh; oy++)
      for (size_t ox = 0; ox < s->ow; ox++)
        for (size_t ky = 0; ky < k; ky++)
          for (size_t kx = 0; kx < k; kx++, cols += c) {
            const long iy = (long)(oy * s->stride + ky) - (long)s->pad,
                       ix = (long)(ox * s->stride + kx) - (long)s->pad;
            if (iy < 0 || ix < 0 || iy >= (long)s->h || ix >= (long)s->w)
              memset(cols, 0, c * sizeof *cols);
            else memcpy(cols, xb + ((size_t)iy * s->w + (size_t)ix) * c, c * sizeof *cols);
          }
  }
}

void dpgd_conv_wgrad_hwc(float *dW, const float *dy, const float *x, const conv_shape *s,
                         float *cols)
{
  if (dpgd_conv_wgrad_k4c16(dW, dy, x, s)) return;
  dpgd_im2col_hwc(cols, x, s, 1);
  dpgd_conv_wgrad(dW, dy, cols, s->oh * s->ow, s->k * s->k * s->cin, s->cout);
}

/* Each output channel's (k k, cin) block transposed into (cin, k k). */
void dpgd_hwc_to_chw(float *W, const float *wp, size_t cout, size_t cin, size_t k)
{
  const size_t kk = k * k, K = cin * kk;
  for (size_t o = 0; o < cout; o++) dpgd_transpose(W + o * K, kk, wp + o * K, cin, kk, cin);
}

/* d[0..n) += r[0..n), element by element; n a constant where inlined with one. */
static inline void add_run(float *restrict d, const float *restrict r, size_t n)
{
  for (size_t i = 0; i < n; i++) d[i] += r[i];
}

/* Rows in (ky, kx, c) order: the run of ky covers the pixels (iy, ix0..ix1) of dx,
 * contiguous in channels-last dx, so it is added as one block (the CNN's conv2: 64
 * floats, four AVX-512 or eight AVX2 vectors). Per pixel, one (ky, kx) per position, so
 * each pixel receives its contributions in (oy, ox) order after the +0 of the memset,
 * as in dpgd_col2im_set. */
DPGD_CLONES void dpgd_col2im_hwc(float *dx, const float *dcols, const conv_shape *s, size_t B)
{
  const size_t k = s->k, c = s->cin, run = k * c, K = k * run, p = s->pad;
  memset(dx, 0, B * s->h * s->w * c * sizeof(float));
  for (size_t b = 0; b < B; b++) {
    float *db = dx + b * s->h * s->w * c;
    const float *row = dcols + b * s->oh * s->ow * K;
    for (size_t oy = 0; oy < s->oh; oy++)
      for (size_t ox = 0; ox < s->ow; ox++, row += K) {
        /* kernel columns [kx0, kx1) inside the image: ix = ox stride + kx - pad */
        const size_t x0 = ox * s->stride, kx0 = x0 < p ? p - x0 : 0;
        const size_t kx1 = x0 >= s->w + p ? 0 : x0 + k > s->w + p ? s->w + p - x0 : k;
        if (kx1 <= kx0) continue;
        const size_t n = (kx1 - kx0) * c;
        for (size_t ky = 0; ky < k; ky++) {
          const size_t iy = oy * s->stride + ky;
          if (iy < p || iy >= s->h + p) continue;
          float *d = db + ((iy - p) * s->w + x0 + kx0 - p) * c;
          const float *r = row + ky * run + kx0 * c;
          if (n == 64) add_run(d, r, 64);
          else add_run(d, r, n);
        }
      }
  }
}
