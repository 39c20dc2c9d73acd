/* conv_stage.c -- a one-channel convolution with an 8 x 8 kernel (the CNN's conv1) read
 * straight from its zero-padded input image, im2col folded into the operand loads of
 * the AVX-512 products: no patch matrix (50 KB per MNIST image) is written or read back.
 * Element by element the chains are those of dpgd_gemm_fma on im2col's output (forward:
 * acc = bias[j], then acc = fma(x(pos, t), W(j, t), acc) for t = ky k + kx in order;
 * weight gradient: acc = 0, then acc = fma(dy(pos, o), x(pos, t), acc) over the
 * positions in order), and im2col only copies, so the bits are the same
 * (tests/model/test_layers_fast.c). Used where dpgd_gemm runs the AVX-512 tiles
 * (dpgd_gemm_wide); elsewhere cnn.c takes im2col and dpgd_gemm. */
#include <string.h>

#include "layers.h"

int dpgd_conv_stage_ok(const conv_shape *s)
{
  return s->cin == 1 && s->k == 8 && s->cout <= 16 && s->cout % 4 == 0 && s->ow >= 1 &&
         s->ow <= 16 && dpgd_gemm_wide();
}

size_t dpgd_conv_stage_floats(const conv_shape *s)
{
  return (s->h + 2 * s->pad) * (s->w + 2 * s->pad);
}

void dpgd_conv_stage_images(float *stage, const float *x, const conv_shape *s, size_t B)
{
  const size_t p = s->pad, wp = s->w + 2 * p, n = dpgd_conv_stage_floats(s);
  memset(stage, 0, B * n * sizeof(float));
  for (size_t b = 0; b < B; b++)
    for (size_t y = 0; y < s->h; y++)
      memcpy(stage + b * n + (y + p) * wp + p, x + (b * s->h + y) * s->w, s->w * sizeof(float));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f")))

/* Forward, one output row of one image: R positions (ox = 0..R-1, all of the row), their
 * pixels at a + ox stride + ky wp + kx, times wt (64, cout) rows, cout lanes of `mask`. */
#define FWD_ACC(r) __m512 c##r = i0;
#define FWD_ROW(r)                                                                             \
  if (R > r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(p[(r)*st]), w, c##r);
#define FWD_STORE(r)                                                                           \
  if (R > r) _mm512_mask_storeu_ps(y + (r)*cout, mask, c##r);
#define FWD_ROWS(X)                                                                            \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
static inline __attribute__((always_inline)) T512 void
fwd_tile(const int R, float *y, const float *a, size_t st, size_t wp, const float *wt,
         const float *bias, size_t cout, __mmask16 mask)
{
  const __m512 i0 = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
  FWD_ROWS(FWD_ACC)
  for (size_t ky = 0; ky < 8; ky++)
    for (size_t kx = 0; kx < 8; kx++, wt += cout) {
      const float *p = a + ky * wp + kx;
      const __m512 w = _mm512_maskz_loadu_ps(mask, wt);
      FWD_ROWS(FWD_ROW)
    }
  FWD_ROWS(FWD_STORE)
}
#define FWD_CASE(r)                                                                            \
  case r + 1: fwd_tile(r + 1, y, a, st, wp, wt, bias, cout, mask); break;

/* The same row at stride 2, each pixel loaded once per kernel row: pixel (ky, col) is
 * x(pos r, t = 8 ky + kx) for every r with col = 2 r + kx, so one broadcast of it feeds
 * up to four accumulators, with the kernel row's eight weight vectors held in registers.
 * For each accumulator the multiply-adds still come in t order (kx = col - 2 r rises
 * with col), so every element is the chain above, bit for bit. */
static inline __attribute__((always_inline)) T512 void
fwd_tile_s2(const int R, float *y, const float *a, size_t wp, const float *wt,
            const float *bias, size_t cout, __mmask16 mask)
{
  __m512 c[16], w[8];
  const __m512 i0 = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) c[r] = i0;
  for (size_t ky = 0; ky < 8; ky++, a += wp) {
#pragma GCC unroll 8
    for (int kx = 0; kx < 8; kx++)
      w[kx] = _mm512_maskz_loadu_ps(mask, wt + (ky * 8 + kx) * cout);
#pragma GCC unroll 40
    for (int col = 0; col < 2 * R + 6; col++) {
      const __m512 v = _mm512_set1_ps(a[col]);
#pragma GCC unroll 16
      for (int r = 0; r < R; r++)
        if (col - 2 * r >= 0 && col - 2 * r < 8)
          c[r] = _mm512_fmadd_ps(v, w[col - 2 * r], c[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + r * cout, mask, c[r]);
}
#define FWD_CASE_S2(r)                                                                         \
  case r + 1: fwd_tile_s2(r + 1, y, a, wp, wt, bias, cout, mask); break;

static T512 void forward512(float *y, const float *stage, const float *wt, const float *bias,
                            const conv_shape *s, size_t B)
{
  const size_t wp = s->w + 2 * s->pad, n = dpgd_conv_stage_floats(s), st = s->stride;
  const size_t cout = s->cout;
  const __mmask16 mask = (__mmask16)((1u << cout) - 1u);
  for (size_t b = 0; b < B; b++)
    for (size_t oy = 0; oy < s->oh; oy++, y += s->ow * cout) {
      const float *a = stage + b * n + oy * st * wp;
      if (st == 2) {
        switch (s->ow) {
          FWD_ROWS(FWD_CASE_S2)
        default: break;
        }
        continue;
      }
      switch (s->ow) {
        FWD_ROWS(FWD_CASE)
      default: break;
      }
    }
}
#undef FWD_ACC
#undef FWD_ROW
#undef FWD_STORE
#undef FWD_ROWS
#undef FWD_CASE
#undef FWD_CASE_S2

/* Weight gradient of one example, four rows of dW (output channels o0 .. o0 + 3) by its
 * 64 columns: column vector v is kernel rows 2v and 2v + 1 of the patch, two runs of
 * eight pixels wp apart in the stage. */
#define WG_ROW(r)                                                                              \
  {                                                                                            \
    const __m512 s = _mm512_set1_ps(g[r]);                                                     \
    c##r##0 = _mm512_fmadd_ps(s, x0, c##r##0);                                                 \
    c##r##1 = _mm512_fmadd_ps(s, x1, c##r##1);                                                 \
    c##r##2 = _mm512_fmadd_ps(s, x2, c##r##2);                                                 \
    c##r##3 = _mm512_fmadd_ps(s, x3, c##r##3);                                                 \
  }
#define WG_STORE(r)                                                                            \
  _mm512_storeu_ps(dW + (r)*64, c##r##0);                                                      \
  _mm512_storeu_ps(dW + (r)*64 + 16, c##r##1);                                                 \
  _mm512_storeu_ps(dW + (r)*64 + 32, c##r##2);                                                 \
  _mm512_storeu_ps(dW + (r)*64 + 48, c##r##3);
static inline __attribute__((always_inline)) T512 __m512 two_runs(const float *p, size_t wp)
{
  const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(p)));
  return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(p + wp)), 1));
}
/* With `bias`, also db (cout) = the column sums of dy, position after position from +0:
 * convnet.c's bias_grad, lane by lane, the same additions in the same order. */
static inline __attribute__((always_inline)) T512 void wgrad4(const int bias, float *dW,
                                                              float *db, const float *dy,
                                                              const float *stage,
                                                              const conv_shape *s, size_t o0)
{
  const size_t wp = s->w + 2 * s->pad, st = s->stride, cout = s->cout;
  const __mmask16 mask = (__mmask16)((1u << cout) - 1u);
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z, c20 = z,
         c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z, sb = z;
  const float *g = dy + o0;
  for (size_t oy = 0; oy < s->oh; oy++)
    for (size_t ox = 0; ox < s->ow; ox++, g += cout) {
      const float *p = stage + oy * st * wp + ox * st;
      const __m512 x0 = two_runs(p, wp), x1 = two_runs(p + 2 * wp, wp),
                   x2 = two_runs(p + 4 * wp, wp), x3 = two_runs(p + 6 * wp, wp);
      if (bias) sb = _mm512_add_ps(sb, _mm512_maskz_loadu_ps(mask, g - o0));
      WG_ROW(0) WG_ROW(1) WG_ROW(2) WG_ROW(3)
    }
  dW += o0 * 64;
  if (bias) _mm512_mask_storeu_ps(db, mask, sb);
  WG_STORE(0) WG_STORE(1) WG_STORE(2) WG_STORE(3)
}
static T512 void wgrad_all(float *dW, float *db, const float *dy, const float *stage,
                           const conv_shape *s)
{
  if (db) wgrad4(1, dW, db, dy, stage, s, 0);
  else wgrad4(0, dW, db, dy, stage, s, 0);
  for (size_t o0 = 4; o0 < s->cout; o0 += 4) wgrad4(0, dW, db, dy, stage, s, o0);
}
#undef WG_ROW
#undef WG_STORE
#endif

int dpgd_conv_stage_forward(float *y, const float *stage, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B)
{
  if (!dpgd_conv_stage_ok(s)) return 0;
#if defined(__x86_64__) && defined(__GNUC__)
  const size_t K = 64;
  dpgd_transpose(wt, s->cout, W, K, s->cout, K);
  forward512(y, stage, wt, bias, s, B);
  return 1;
#else
  (void)y, (void)stage, (void)W, (void)bias, (void)wt, (void)B;
  return 0;
#endif
}

int dpgd_conv_stage_wgrad(float *dW, float *db, const float *dy, const float *stage,
                          const conv_shape *s)
{
  if (!dpgd_conv_stage_ok(s)) return 0;
#if defined(__x86_64__) && defined(__GNUC__)
  wgrad_all(dW, db, dy, stage, s);
  return 1;
#else
  (void)dW, (void)db, (void)dy, (void)stage;
  return 0;
#endif
}
