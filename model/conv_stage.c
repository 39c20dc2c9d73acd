/* conv_stage.c -- a one-channel convolution with an 8 x 8 kernel (the CNN's conv1) read
 * straight from its zero-padded input image, im2col folded into the operand loads of
 * the AVX-512 products: no patch matrix (50 KB per MNIST image) is written or read back.
 * Element by element the chains are those of dpgd_gemm_fma on im2col's output (forward:
 * acc = bias[j], then acc = fma(x(pos, t), W(j, t), acc) for t = ky k + kx in order;
 * weight gradient: acc = 0, then acc = fma(dy(pos, o), x(pos, t), acc) over the
 * positions in order), and im2col only copies, so the bits are the same
 * (tests/model/test_gemm_fast.c). Used where dpgd_gemm runs the AVX-512 tiles
 * (dpgd_gemm_wide); elsewhere cnn.c takes im2col and dpgd_gemm. Where the padding is
 * MNIST's (stride 2, pad 3, w = 2 ow) and the weights allow it, the forward reads the
 * unpadded images and leaves the padding's taps out (fwd_tile_s2: the same chains). */
#include <math.h>
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
 * with col), so every element is the chain above, bit for bit. One kernel row: the
 * padded row's columns lo .. hi - 1, column col at a[col - off]. */
static inline __attribute__((always_inline)) T512 void
s2_kernel_row(const int R, const int lo, const int hi, const int off, __m512 c[16],
              const float *a, const float *wrow, size_t cout, __mmask16 mask)
{
  __m512 w[8];
#pragma GCC unroll 8
  for (int kx = 0; kx < 8; kx++) w[kx] = _mm512_maskz_loadu_ps(mask, wrow + kx * cout);
#pragma GCC unroll 40
  for (int col = lo; col < hi; col++) {
    const __m512 v = _mm512_set1_ps(a[col - off]);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
      if (col - 2 * r >= 0 && col - 2 * r < 8) c[r] = _mm512_fmadd_ps(v, w[col - 2 * r], c[r]);
  }
}

/* One output row at stride 2 from the padded stage (image 0), or (image 1) from an
 * unpadded image x of width 2 R (pad 3, so the padded row spans exactly the 2 R + 6
 * columns that the output row reads) with the kernel rows and columns that fall on the
 * padding left out. Each left-out step is acc = fma(+0, W(j, t), acc), which is acc
 * itself when W(j, t) is finite and acc is not -0; acc starts at bias[j] and becomes -0
 * only from -0 (an exactly zero sum of a -0 and a product is -0 only when both are), so
 * with every weight finite and no bias of -0 (image_ok) every element is still the
 * chain over all 64 taps, bit for bit, with 13.8 % fewer multiply-adds for MNIST's
 * 28 x 28. */
static inline __attribute__((always_inline)) T512 void
fwd_tile_s2(const int R, const int image, float *y, const float *a, size_t wp, size_t h,
            size_t oy, const float *wt, const float *bias, size_t cout, __mmask16 mask)
{
  __m512 c[16];
  const __m512 i0 = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) c[r] = i0;
  if (image) {
    const size_t ky0 = 2 * oy < 3 ? 3 - 2 * oy : 0;
    const size_t ky1 = h + 3 - 2 * oy < 8 ? h + 3 - 2 * oy : 8;
    for (size_t ky = ky0; ky < ky1; ky++) /* a: the image; its row 2 oy + ky - 3 */
      s2_kernel_row(R, 3, 2 * R + 3, 3, c, a + (2 * oy + ky - 3) * (size_t)(2 * R),
                    wt + ky * 8 * cout, cout, mask);
  } else {
    for (size_t ky = 0; ky < 8; ky++, a += wp) /* a: the stage's row 2 oy */
      s2_kernel_row(R, 0, 2 * R + 6, 0, c, a, wt + ky * 8 * cout, cout, mask);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + r * cout, mask, c[r]);
}
#define FWD_CASE_S2(r)                                                                         \
  case r + 1:                                                                                  \
    fwd_tile_s2(r + 1, 0, y, a, wp, 0, 0, wt, bias, cout, mask);                               \
    break;

#define IMG_CASE(r)                                                                            \
  case r + 1: fwd_tile_s2(r + 1, 1, y, x, 0, s->h, oy, wt, bias, cout, mask); break;

static T512 void forward_image(float *y, const float *x, const float *wt, const float *bias,
                               const conv_shape *s, size_t B)
{
  const size_t cout = s->cout;
  const __mmask16 mask = (__mmask16)((1u << cout) - 1u);
  for (size_t b = 0; b < B; b++, x += s->h * s->w)
    for (size_t oy = 0; oy < s->oh; oy++, y += s->ow * cout) switch (s->ow) {
        FWD_ROWS(IMG_CASE)
      default: break;
      }
}
#undef IMG_CASE

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

/* Weight gradient of one example: column vector v of the patch is kernel rows 2v and
 * 2v + 1, two runs of eight pixels wp apart in the stage. */
static inline __attribute__((always_inline)) T512 __m512 two_runs(const float *p, size_t wp)
{
  const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(p)));
  return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(p + wp)), 1));
}
/* One output row's positions for R rows of dW: patch vectors V0 .. V1 - 1 (the others,
 * where the row leaves them out, are two rows of padding: see wgrad_rows). */
static inline __attribute__((always_inline)) T512 void
wgrad_positions(const int R, const int V0, const int V1, const int bias, __m512 c[6][4],
                __m512 *sb, const float *g, const float *p, const conv_shape *s, size_t o0)
{
  const size_t wp = s->w + 2 * s->pad, st = s->stride, cout = s->cout;
  const __mmask16 mask = (__mmask16)((1u << cout) - 1u);
  for (size_t ox = 0; ox < s->ow; ox++, g += cout, p += st) {
    __m512 x[4];
#pragma GCC unroll 4
    for (int v = V0; v < V1; v++) x[v] = two_runs(p + 2 * v * wp, wp);
    if (bias) *sb = _mm512_add_ps(*sb, _mm512_maskz_loadu_ps(mask, g - o0));
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      const __m512 b = _mm512_set1_ps(g[r]);
#pragma GCC unroll 4
      for (int v = V0; v < V1; v++) c[r][v] = _mm512_fmadd_ps(b, x[v], c[r][v]);
    }
  }
}

/* Whether patch vector v (stage rows st oy + 2 v and + 1) is two rows of padding. */
static int pad_pair(const conv_shape *s, size_t oy, size_t v)
{
  const size_t r = oy * s->stride + 2 * v;
  return r + 1 < s->pad || r >= s->h + s->pad;
}

/* R rows of dW (output channels o0 .. o0 + R - 1, R = 4 or 6) by its 64 columns. With
 * `bias`, also db (cout) = the column sums of dy, position after position from +0:
 * convnet.c's bias_grad, lane by lane, the same additions in the same order. With
 * `skip`, an output row whose first or last patch vector is two rows of padding
 * (MNIST's first and last: 3.6 % of the multiply-adds) leaves that vector's steps out:
 * each is acc = fma(dy, +0, acc), which is acc when dy is finite (wgrad_all checks those
 * rows of dy) since acc starts at +0 and so is never -0. */
static inline __attribute__((always_inline)) T512 void
wgrad_rows(const int R, const int bias, float *dW, float *db, const float *dy,
           const float *stage, const conv_shape *s, size_t o0, int skip)
{
  const size_t wp = s->w + 2 * s->pad, st = s->stride, cout = s->cout;
  const __mmask16 mask = (__mmask16)((1u << cout) - 1u);
  const __m512 z = _mm512_setzero_ps();
  __m512 c[6][4], sb = z;
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) c[r][v] = z;
  const float *g = dy + o0;
  for (size_t oy = 0; oy < s->oh; oy++, g += s->ow * cout) {
    const float *p = stage + oy * st * wp;
    const int top = skip && pad_pair(s, oy, 0), bot = skip && pad_pair(s, oy, 3);
    if (top && bot) wgrad_positions(R, 1, 3, bias, c, &sb, g, p, s, o0);
    else if (top) wgrad_positions(R, 1, 4, bias, c, &sb, g, p, s, o0);
    else if (bot) wgrad_positions(R, 0, 3, bias, c, &sb, g, p, s, o0);
    else wgrad_positions(R, 0, 4, bias, c, &sb, g, p, s, o0);
  }
  dW += o0 * 64;
  if (bias) _mm512_mask_storeu_ps(db, mask, sb);
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) _mm512_storeu_ps(dW + r * 64 + v * 16, c[r][v]);
}

/* Whether dy is finite on every output row that leaves a padding vector out. */
static T512 int skip_rows_finite(const float *dy, const conv_shape *s)
{
  const size_t n = s->ow * s->cout;
  __mmask16 bad = 0;
  for (size_t oy = 0; oy < s->oh; oy++) {
    if (!pad_pair(s, oy, 0) && !pad_pair(s, oy, 3)) continue;
    const float *g = dy + oy * n;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) /* x - x is NaN exactly where x is not finite */
      bad |= _mm512_cmp_ps_mask(_mm512_sub_ps(_mm512_loadu_ps(g + i), _mm512_loadu_ps(g + i)),
                                _mm512_setzero_ps(), _CMP_NEQ_UQ);
    for (; i < n; i++) bad |= !isfinite(g[i]);
  }
  return bad == 0;
}

/* Six rows at a time, then fours (cout is a multiple of 4: 16 as 6, 6, 4). */
static T512 void wgrad_all(float *dW, float *db, const float *dy, const float *stage,
                           const conv_shape *s)
{
  const int skip = skip_rows_finite(dy, s);
  size_t o0 = 0;
  const int six = s->cout >= 6 && s->cout != 8;
  if (db) {
    if (six) wgrad_rows(6, 1, dW, db, dy, stage, s, 0, skip);
    else wgrad_rows(4, 1, dW, db, dy, stage, s, 0, skip);
    o0 = six ? 6 : 4;
  }
  for (; o0 + 6 <= s->cout && s->cout - o0 != 8; o0 += 6)
    wgrad_rows(6, 0, dW, db, dy, stage, s, o0, skip);
  for (; o0 < s->cout; o0 += 4) wgrad_rows(4, 0, dW, db, dy, stage, s, o0, skip);
}
#endif

/* W transposed into wt (64, cout), then the forward from the stage or the image. */
static int forward_from(int image, float *y, const float *src, const float *W,
                        const float *bias, float *wt, const conv_shape *s, size_t B)
{
#if defined(__x86_64__) && defined(__GNUC__)
  const size_t K = 64;
  dpgd_transpose(wt, s->cout, W, K, s->cout, K);
  if (image) forward_image(y, src, wt, bias, s, B);
  else forward512(y, src, wt, bias, s, B);
  return 1;
#else
  (void)image, (void)y, (void)src, (void)W, (void)bias, (void)wt, (void)s, (void)B;
  return 0;
#endif
}

int dpgd_conv_stage_forward(float *y, const float *stage, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B)
{
  return dpgd_conv_stage_ok(s) && forward_from(0, y, stage, W, bias, wt, s, B);
}

/* Where forward_image is the stage's forward bit for bit (see fwd_tile_s2): stride 2,
 * pad 3, width twice the output width, every weight finite and no bias of -0. */
static int image_ok(const float *W, const float *bias, const conv_shape *s)
{
  if (!dpgd_conv_stage_ok(s) || s->stride != 2 || s->pad != 3 || s->w != 2 * s->ow) return 0;
  int ok = 1;
  for (size_t i = 0; i < s->cout * 64; i++) ok &= isfinite(W[i]) != 0;
  if (bias)
    for (size_t j = 0; j < s->cout; j++) ok &= !(bias[j] == 0.0f && signbit(bias[j]));
  return ok;
}

int dpgd_conv_image_forward(float *y, const float *x, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B)
{
  return image_ok(W, bias, s) && forward_from(1, y, x, W, bias, wt, s, B);
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
