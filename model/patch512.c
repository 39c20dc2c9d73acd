/* patch512.c -- im2col of a convolution with a 4 x 4 kernel on channels-last images of
 * cin channels, cin a multiple of 16 (the CNN's conv2: 16 channels), without patch.c's
 * channels-first stage. A patch row's PyTorch order is (c, ky, kx): for 16 channels,
 * a 16 (c) x 16 (ky, kx) block, whose transpose, 16 (ky, kx) x 16 (c), is the 16
 * pixels' channels as they lie in the image (four runs of four pixels). So a row is 16
 * vector loads, a 16 x 16 transpose in registers (four rounds of 16 shuffles) and 16
 * vector stores. Loads, shuffles and stores only move bits: the rows are dpgd_im2col_ref's
 * bit for bit (tests/model/test_layers_fast.c). The same transposes permute a weight
 * (cout, cin, 4, 4) into (cout, 4, 4, cin) for dpgd_weight_hwc, and transpose matrices
 * whose sides are multiples of 16 (dpgd_transpose16: flatten, weights for the products).
 * And conv2's input gradient added straight into the channels-last image as its product
 * tiles finish (dpgd_dgrad_col2im_k4c16: the products' chains, col2im's additions), its
 * forward and weight gradient read straight from that image (dpgd_conv_forward_k4c16,
 * dpgd_conv_wgrad_k4c16: the products' chains on the taps im2col would have copied). */
#include <string.h>

#include "layers.h"

/* dpgd_square16d by swaps. */
static void square16d_scalar(double *w, size_t count)
{
  for (size_t q = 0; q < count; q++, w += 256)
    for (size_t i = 0; i < 16; i++)
      for (size_t j = i + 1; j < 16; j++) {
        const double t = w[i * 16 + j];
        w[i * 16 + j] = w[j * 16 + i];
        w[j * 16 + i] = t;
      }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f")))
#define INLINE512 static inline __attribute__((always_inline)) T512

/* r[i] (row i of a 16 x 16 block) becomes column i: unpacks pair rows, shuffle_ps
 * gathers four rows' element e of each 128-bit lane into r[4 g + e], then two rounds of
 * 128-bit lane shuffles transpose the 4 x 4 lanes of r[e], r[4 + e], r[8 + e], r[12 + e]
 * into columns e, 4 + e, 8 + e, 12 + e. */
INLINE512 void transpose16(__m512 r[16])
{
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int e = 0; e < 4; e++) {
    const __m512 p = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88);
    const __m512 q = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xDD);
    const __m512 u = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88);
    const __m512 v = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xDD);
    t[e] = _mm512_shuffle_f32x4(p, u, 0x88);
    t[4 + e] = _mm512_shuffle_f32x4(q, v, 0x88);
    t[8 + e] = _mm512_shuffle_f32x4(p, u, 0xDD);
    t[12 + e] = _mm512_shuffle_f32x4(q, v, 0xDD);
  }
  for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* One image's rows; `padded` a constant at each call: without padding every pixel a
 * patch reads is inside the image, so the bounds tests fold away. */
INLINE512 void image_rows(float *row, const float *x, const conv_shape *s, const int padded)
{
  const size_t cin = s->cin, K = 16 * cin;
  const long p = (long)s->pad, h = (long)s->h, w = (long)s->w;
  for (size_t oy = 0; oy < s->oh; oy++)
    for (size_t ox = 0; ox < s->ow; ox++, row += K) {
      const long y0 = (long)(oy * s->stride) - p, x0 = (long)(ox * s->stride) - p;
      for (size_t cg = 0; cg < cin; cg += 16) {
        __m512 r[16];
        for (long ky = 0; ky < 4; ky++)
          for (long kx = 0; kx < 4; kx++) {
            const long iy = y0 + ky, ix = x0 + kx;
            r[ky * 4 + kx] = !padded || (iy >= 0 && ix >= 0 && iy < h && ix < w)
                                 ? _mm512_loadu_ps(x + ((size_t)(iy * w + ix)) * cin + cg)
                                 : _mm512_setzero_ps();
          }
        transpose16(r);
        for (size_t c = 0; c < 16; c++) _mm512_storeu_ps(row + (cg + c) * 16, r[c]);
      }
    }
}

static T512 void im2col_k4c16(float *cols, const float *x, const conv_shape *s, size_t B)
{
  const size_t nx = s->h * s->w * s->cin, nc = s->oh * s->ow * 16 * s->cin;
  for (size_t b = 0; b < B; b++) {
    if (s->pad) image_rows(cols + b * nc, x + b * nx, s, 1);
    else image_rows(cols + b * nc, x + b * nx, s, 0);
  }
}

/* Each output channel's weight (cin, 4, 4) as cin / 16 blocks of 16 (c) x 16 (ky, kx),
 * each transposed into 16 (ky, kx) runs of its 16 channels: dpgd_weight_hwc. */
static T512 void weight_k4c16(float *wp, const float *W, size_t cout, size_t cin)
{
  const size_t K = 16 * cin;
  for (size_t o = 0; o < cout; o++, W += K, wp += K)
    for (size_t cg = 0; cg < cin; cg += 16) {
      __m512 r[16];
      for (size_t c = 0; c < 16; c++) r[c] = _mm512_loadu_ps(W + (cg + c) * 16);
      transpose16(r);
      for (size_t q = 0; q < 16; q++) _mm512_storeu_ps(wp + q * cin + cg, r[q]);
    }
}

/* conv2's input gradient and col2im in one pass (dpgd_dgrad_col2im_k4c16): R positions
 * (ox0 .. ox0 + R - 1 of one output row) by kernel row ky, 4 R accumulators, the chain
 * over the output channels of dpgd_gemm's tiles (acc = +0, then acc = fma(dy(pos, t),
 * wp(t, col), acc) for t = 0..cout-1), then the R runs of four pixels added into dx in ox
 * order. */
INLINE512 void dgrad_tile(const int R, float *dxrow, const float *dy, const float *wp,
                          size_t cout, size_t K, size_t stride)
{
  const __m512 z = _mm512_setzero_ps();
  __m512 c[6][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) c[r][v] = z;
  for (size_t t = 0; t < cout; t++, wp += K) {
    const __m512 x[4] = {_mm512_loadu_ps(wp), _mm512_loadu_ps(wp + 16),
                         _mm512_loadu_ps(wp + 32), _mm512_loadu_ps(wp + 48)};
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      const __m512 b = _mm512_set1_ps(dy[r * cout + t]);
#pragma GCC unroll 4
      for (int v = 0; v < 4; v++) c[r][v] = _mm512_fmadd_ps(b, x[v], c[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; r++) {
    float *d = dxrow + r * stride * 16;
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++)
      _mm512_storeu_ps(d + 16 * v, _mm512_add_ps(_mm512_loadu_ps(d + 16 * v), c[r][v]));
  }
}
#define DGRAD_CASE(r)                                                                          \
  case r:                                                                                      \
    dgrad_tile(r, dxrow + ox0 * s->stride * 16, dyrow + ox0 * cout, wk, cout, K, s->stride);   \
    break;

/* Image by image, output row by output row (oy), kernel row by kernel row (ky): each
 * pixel of dx, zeroed first, receives its contributions in (oy, ox) order, as from
 * dpgd_col2im_hwc (one (ky, kx) per position and pixel; within a tile the positions
 * share ky, so the runs that overlap are added in ox order). */
static T512 void dgrad_col2im(float *dx, const float *dy, const float *wp, const conv_shape *s,
                              size_t B)
{
  const size_t cout = s->cout, K = 16 * 16, nx = s->h * s->w * 16;
  for (size_t b = 0; b < B; b++, dx += nx) {
    memset(dx, 0, nx * sizeof *dx);
    for (size_t oy = 0; oy < s->oh; oy++) {
      const float *dyrow = dy + (b * s->oh + oy) * s->ow * cout;
      for (size_t ky = 0; ky < 4; ky++) {
        float *dxrow = dx + (oy * s->stride + ky) * s->w * 16;
        const float *wk = wp + ky * 64;
        for (size_t ox0 = 0; ox0 < s->ow; ox0 += 6) switch (s->ow - ox0 < 6 ? s->ow - ox0 : 6) {
            DGRAD_CASE(1)
            DGRAD_CASE(2)
            DGRAD_CASE(3)
            DGRAD_CASE(4)
            DGRAD_CASE(5)
            DGRAD_CASE(6)
          default: break;
          }
      }
    }
  }
}
#undef DGRAD_CASE

/* conv2's forward from the channels-last image (dpgd_conv_forward_k4c16): R positions (1
 * to 8) by W vectors (1 or 2) of output channels, each element dpgd_gemm's chain (acc =
 * bias, then acc = fma(A(pos, t), wt(t, col), acc) for t = 0..255 in PyTorch's (c, ky, kx)
 * order), A(pos, t) read from the image where im2col would have copied it: position r's
 * pixel run starts at x[r], tap (ky, kx) of channel c lies at x[r] + ky rs + kx 16 + c.
 * rs (the image's row of 16-channel pixels) is a constant where the CNN calls it, so
 * every tap is a broadcast at a fixed displacement. */
INLINE512 void fwd_tile(const int R, const int W, float *y, size_t ldy, const float *const *x,
                        const float *wt, size_t ldw, const float *bias, const size_t rs)
{
  __m512 c[8][2];
  const __m512 b0 = _mm512_loadu_ps(bias), b1 = W > 1 ? _mm512_loadu_ps(bias + 16) : b0;
#pragma GCC unroll 8
  for (int r = 0; r < R; r++) c[r][0] = b0, c[r][1] = b1;
  for (size_t ch = 0; ch < 16; ch++) {
#pragma GCC unroll 16
    for (size_t q = 0; q < 16; q++) {
      const float *w = wt + (ch * 16 + q) * ldw;
      const __m512 w0 = _mm512_loadu_ps(w), w1 = W > 1 ? _mm512_loadu_ps(w + 16) : w0;
      const size_t d = (q / 4) * rs + (q % 4) * 16 + ch;
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        const __m512 a = _mm512_set1_ps(x[r][d]);
        c[r][0] = _mm512_fmadd_ps(a, w0, c[r][0]);
        if (W > 1) c[r][1] = _mm512_fmadd_ps(a, w1, c[r][1]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; r++) {
    _mm512_storeu_ps(y + r * ldy, c[r][0]);
    if (W > 1) _mm512_storeu_ps(y + r * ldy + 16, c[r][1]);
  }
}
#define FWD_CASE(r)                                                                            \
  case r:                                                                                      \
    for (size_t j = 0; j + 32 <= cout; j += 32)                                                \
      fwd_tile(r, 2, y + j, cout, px, wt + j, cout, bias + j, rs);                             \
    if (cout % 32)                                                                             \
      fwd_tile(r, 1, y + cout - 16, cout, px, wt + cout - 16, cout, bias + cout - 16, rs);     \
    break;

/* Positions eight at a time across the images' rows and the images; rs a constant at
 * the CNN's call (13 pixels of 16 channels). */
INLINE512 void fwd_all(float *y, const float *x, const float *wt, const float *bias,
                       const conv_shape *s, size_t B, const size_t rs)
{
  const size_t cout = s->cout, n = s->oh * s->ow, nx = s->h * s->w * 16, total = B * n;
  for (size_t i = 0; i < total; i += 8, y += 8 * cout) {
    const size_t R = total - i < 8 ? total - i : 8;
    const float *px[8];
    for (size_t r = 0; r < R; r++) {
      const size_t b = (i + r) / n, q = (i + r) % n, oy = q / s->ow, ox = q % s->ow;
      px[r] = x + b * nx + (oy * s->stride * s->w + ox * s->stride) * 16;
    }
    switch (R) {
      FWD_CASE(8)
      FWD_CASE(7)
      FWD_CASE(6)
      FWD_CASE(5)
      FWD_CASE(4)
      FWD_CASE(3)
      FWD_CASE(2)
      FWD_CASE(1)
    default: break;
    }
  }
}
#undef FWD_CASE

static T512 void fwd_k4c16(float *y, const float *x, const float *wt, const float *bias,
                           const conv_shape *s, size_t B)
{
  if (s->w == 13) fwd_all(y, x, wt, bias, s, B, 13 * 16);
  else fwd_all(y, x, wt, bias, s, B, s->w * 16);
}

/* One example's weight gradient in (cout, 4, 4, 16) order (dpgd_conv_wgrad_hwc): output
 * channels o0..o0+3 by kernel row ky, whose 64 columns are one run of four pixels'
 * channels in the image; each element dpgd_gemm's chain over the positions in (oy, ox)
 * order, acc = +0, then acc = fma(dy(pos, o), x(pos, col), acc): the chain of the same
 * element of dpgd_conv_wgrad on dpgd_im2col_hwc's rows. */
INLINE512 void wgrad_tile(float *dw, const float *dy, size_t cout, const float *x,
                          const conv_shape *s)
{
  const __m512 z = _mm512_setzero_ps();
  __m512 c[4][4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) c[r][v] = z;
  for (size_t oy = 0; oy < s->oh; oy++) {
    const float *xr = x + oy * s->stride * s->w * 16;
    for (size_t ox = 0; ox < s->ow; ox++, dy += cout) {
      const float *p = xr + ox * s->stride * 16;
      const __m512 v[4] = {_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_loadu_ps(p + 32),
                           _mm512_loadu_ps(p + 48)};
#pragma GCC unroll 4
      for (int r = 0; r < 4; r++) {
        const __m512 a = _mm512_set1_ps(dy[r]);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) c[r][q] = _mm512_fmadd_ps(a, v[q], c[r][q]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) _mm512_storeu_ps(dw + r * 256 + q * 16, c[r][q]);
}

static T512 void wgrad_k4c16(float *dW, const float *dy, const float *x, const conv_shape *s)
{
  for (size_t o = 0; o < s->cout; o += 4)
    for (size_t ky = 0; ky < 4; ky++)
      wgrad_tile(dW + o * 256 + ky * 64, dy + o, s->cout, x + ky * s->w * 16, s);
}

/* r[i] (row i of an 8 x 8 block of doubles) becomes column i: unpacks pair rows, a
 * two-source permute gathers four rows' element e and e + 4 of each pair of 128-bit
 * lanes, and 256-bit halves of rows 0-3 and 4-7 make the columns. */
INLINE512 void transpose8d(__m512d r[8])
{
  const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0),
                hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  __m512d t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 8; h += 4)
    for (int e = 0; e < 2; e++) {
      u[h + e] = _mm512_permutex2var_pd(t[h + e], lo, t[h + e + 2]);
      u[h + e + 2] = _mm512_permutex2var_pd(t[h + e], hi, t[h + e + 2]);
    }
  for (int e = 0; e < 4; e++) {
    r[e] = _mm512_shuffle_f64x2(u[e], u[4 + e], 0x44);
    r[4 + e] = _mm512_shuffle_f64x2(u[e], u[4 + e], 0xEE);
  }
}

/* The 8 x 8 block at a (row stride 16) transposed into b, read before written. */
INLINE512 void block8d(double *b, const double *a)
{
  __m512d r[8];
  for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_pd(a + 16 * i);
  transpose8d(r);
  for (int i = 0; i < 8; i++) _mm512_storeu_pd(b + 16 * i, r[i]);
}

/* count 16 x 16 blocks of doubles, each transposed in place: its two diagonal 8 x 8
 * blocks in place, its off-diagonal pair swapped as they are transposed. */
static T512 void square16d(double *w, size_t count)
{
  for (size_t q = 0; q < count; q++, w += 256) {
    block8d(w, w);
    block8d(w + 136, w + 136);
    __m512d a[8], b[8];
    for (int i = 0; i < 8; i++) a[i] = _mm512_loadu_pd(w + 8 + 16 * i);
    for (int i = 0; i < 8; i++) b[i] = _mm512_loadu_pd(w + 128 + 16 * i);
    transpose8d(a);
    transpose8d(b);
    for (int i = 0; i < 8; i++) _mm512_storeu_pd(w + 128 + 16 * i, a[i]);
    for (int i = 0; i < 8; i++) _mm512_storeu_pd(w + 8 + 16 * i, b[i]);
  }
}

/* dst (cols, rows) = src (rows, cols) transposed, both multiples of 16: block by block. */
static T512 void blocks16(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                          size_t cols)
{
  for (size_t i = 0; i < rows; i += 16)
    for (size_t j = 0; j < cols; j += 16) {
      __m512 r[16];
      for (size_t q = 0; q < 16; q++) r[q] = _mm512_loadu_ps(src + (i + q) * ss + j);
      transpose16(r);
      for (size_t q = 0; q < 16; q++) _mm512_storeu_ps(dst + (j + q) * ds + i, r[q]);
    }
}

void dpgd_square16d(double *w, size_t count)
{
  if (dpgd_gemm_avx512_cpu()) {
    square16d(w, count);
    return;
  }
  square16d_scalar(w, count);
}

int dpgd_transpose16(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                     size_t cols)
{
  if (rows % 16 || cols % 16 || !dpgd_gemm_avx512_cpu()) return 0;
  blocks16(dst, ds, src, ss, rows, cols);
  return 1;
}

int dpgd_weight_hwc_k4c16(float *wp, const float *W, size_t cout, size_t cin, size_t k)
{
  if (k != 4 || cin == 0 || cin % 16 != 0 || !dpgd_gemm_avx512_cpu()) return 0;
  weight_k4c16(wp, W, cout, cin);
  return 1;
}

/* The shapes the conv2 kernels take: k 4, 16 channels, no padding, cout a positive
 * multiple of cmod (forward 16, weight gradient 4, input gradient 1), on the AVX-512
 * tiles. */
static int k4c16_ok(const conv_shape *s, size_t cmod)
{
  return s->k == 4 && s->cin == 16 && s->pad == 0 && s->cout > 0 && s->cout % cmod == 0 &&
         dpgd_gemm_wide();
}

int dpgd_dgrad_col2im_k4c16(float *dx, const float *dy, const float *wp, const conv_shape *s,
                            size_t B)
{
  if (!k4c16_ok(s, 1)) return 0;
  dgrad_col2im(dx, dy, wp, s, B);
  return 1;
}

int dpgd_conv_forward_k4c16(float *y, const float *x, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B)
{
  if (!k4c16_ok(s, 16)) return 0;
  dpgd_transpose(wt, s->cout, W, 256, s->cout, 256);
  fwd_k4c16(y, x, wt, bias, s, B);
  return 1;
}

int dpgd_conv_wgrad_k4c16(float *dW, const float *dy, const float *x, const conv_shape *s)
{
  if (!k4c16_ok(s, 4)) return 0;
  wgrad_k4c16(dW, dy, x, s);
  return 1;
}

int dpgd_im2col_k4c16(float *cols, const float *x, const conv_shape *s, size_t B)
{
  if (s->k != 4 || s->cin == 0 || s->cin % 16 != 0 || !dpgd_gemm_avx512_cpu()) return 0;
  im2col_k4c16(cols, x, s, B);
  return 1;
}

#else

void dpgd_square16d(double *w, size_t count) { square16d_scalar(w, count); }

int dpgd_conv_forward_k4c16(float *y, const float *x, const float *W, const float *bias,
                            float *wt, const conv_shape *s, size_t B)
{
  (void)y, (void)x, (void)W, (void)bias, (void)wt, (void)s, (void)B;
  return 0;
}

int dpgd_conv_wgrad_k4c16(float *dW, const float *dy, const float *x, const conv_shape *s)
{
  (void)dW, (void)dy, (void)x, (void)s;
  return 0;
}

int dpgd_transpose16(float *dst, size_t ds, const float *src, size_t ss, size_t rows,
                     size_t cols)
{
  (void)dst, (void)ds, (void)src, (void)ss, (void)rows, (void)cols;
  return 0;
}

int dpgd_weight_hwc_k4c16(float *wp, const float *W, size_t cout, size_t cin, size_t k)
{
  (void)wp;
  (void)W;
  (void)cout;
  (void)cin;
  (void)k;
  return 0;
}

int dpgd_dgrad_col2im_k4c16(float *dx, const float *dy, const float *wp, const conv_shape *s,
                            size_t B)
{
  (void)dx, (void)dy, (void)wp, (void)s, (void)B;
  return 0;
}

int dpgd_im2col_k4c16(float *cols, const float *x, const conv_shape *s, size_t B)
{
  (void)cols;
  (void)x;
  (void)s;
  (void)B;
  return 0;
}

#endif
