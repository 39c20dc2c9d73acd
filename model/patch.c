/* patch.c -- im2col and col2im through a staged, zero-padded channels-first copy of one
 * image: in that layout every (channel, kernel row) run of a patch is k contiguous floats,
 * so a patch row is cin * k block copies instead of cin * k * k strided single floats.
 * The results are bit-identical to the direct loops (copies are exact; col2im adds each
 * input pixel's contributions in the same order). Images too large for the stage take
 * the direct loops of layers.c. */
#include <string.h>

#include "layers.h"

/* Floats of the per-call stage (on the stack: 32 KB), enough for the CNN's two images
 * (1 x 34 x 34 padded, 16 x 13 x 13). */
#define STAGE_FLOATS 8192

int dpgd_patch_staged(const conv_shape *s)
{
  size_t hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
  return s->cin <= STAGE_FLOATS && hp <= STAGE_FLOATS / s->cin &&
         wp <= STAGE_FLOATS / s->cin / (hp ? hp : 1);
}

/* stage (cin, h + 2 pad, w + 2 pad) = image x (h, w, cin) channels-last, zero border. */
static void stage_image(float *stage, const float *x, const conv_shape *s)
{
  const size_t p = s->pad, hp = s->h + 2 * p, wp = s->w + 2 * p, c = s->cin;
  if (p > 0) memset(stage, 0, c * hp * wp * sizeof(float));
  if (c == 1) {
    for (size_t y = 0; y < s->h; y++)
      memcpy(stage + (y + p) * wp + p, x + y * s->w, s->w * sizeof(float));
    return;
  }
  for (size_t y = 0; y < s->h; y++)
    for (size_t xx = 0; xx < s->w; xx++) {
      const float *src = x + (y * s->w + xx) * c;
      float *dst = stage + (y + p) * wp + xx + p;
      for (size_t ch = 0; ch < c; ch++) dst[ch * hp * wp] = src[ch];
    }
}

/* Copies of k floats: fixed sizes for the CNN's kernels, so the compiler emits a few
 * vector moves instead of a call. */
static inline void copy_run(float *dst, const float *src, size_t k)
{
  if (k == 4) memcpy(dst, src, 4 * sizeof(float));
  else if (k == 8) memcpy(dst, src, 8 * sizeof(float));
  else
    for (size_t q = 0; q < k; q++) dst[q] = src[q];
}

void dpgd_im2col_staged(float *cols, const float *x, const conv_shape *s, size_t B)
{
  float stage[STAGE_FLOATS];
  const size_t k = s->k, hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
  const size_t K = s->cin * k * k, plane = hp * wp;
  for (size_t b = 0; b < B; b++) {
    stage_image(stage, x + b * s->h * s->w * s->cin, s);
    float *row = cols + b * s->oh * s->ow * K;
    for (size_t oy = 0; oy < s->oh; oy++)
      for (size_t ox = 0; ox < s->ow; ox++, row += K) {
        const float *src = stage + oy * s->stride * wp + ox * s->stride;
        for (size_t c = 0; c < s->cin; c++)
          for (size_t ky = 0; ky < k; ky++)
            copy_run(row + (c * k + ky) * k, src + c * plane + ky * wp, k);
      }
  }
}

/* dst[q] += src[q] for k floats; each element is one addition, so its order among the
 * contributions to one pixel is that of the caller's loop. */
static inline void add_run(float *dst, const float *src, size_t k)
{
  if (k == 4)
    for (size_t q = 0; q < 4; q++) dst[q] += src[q];
  else
    for (size_t q = 0; q < k; q++) dst[q] += src[q];
}

/* The stage's interior back to dx (h, w, cin) channels-last; the padding is dropped. */
static void unstage_image(float *dx, const float *stage, const conv_shape *s)
{
  const size_t p = s->pad, hp = s->h + 2 * p, wp = s->w + 2 * p, c = s->cin;
  for (size_t y = 0; y < s->h; y++)
    for (size_t xx = 0; xx < s->w; xx++) {
      const float *src = stage + (y + p) * wp + xx + p;
      float *dst = dx + (y * s->w + xx) * c;
      for (size_t ch = 0; ch < c; ch++) dst[ch] = src[ch * hp * wp];
    }
}

/* Every pixel starts at +0 and receives its contributions in (oy, ox) order, as in
 * zeroing dx and calling dpgd_col2im: for one pixel and one output position there is at
 * most one (ky, kx), so the inner loop order does not matter. */
void dpgd_col2im_staged(float *dx, const float *dcols, const conv_shape *s, size_t B)
{
  float stage[STAGE_FLOATS];
  const size_t k = s->k, hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
  const size_t K = s->cin * k * k, plane = hp * wp;
  for (size_t b = 0; b < B; b++) {
    memset(stage, 0, s->cin * plane * sizeof(float));
    const float *row = dcols + b * s->oh * s->ow * K;
    for (size_t oy = 0; oy < s->oh; oy++)
      for (size_t ox = 0; ox < s->ow; ox++, row += K) {
        float *dst = stage + oy * s->stride * wp + ox * s->stride;
        for (size_t c = 0; c < s->cin; c++)
          for (size_t ky = 0; ky < k; ky++)
            add_run(dst + c * plane + ky * wp, row + (c * k + ky) * k, k);
      }
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
