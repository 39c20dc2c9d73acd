/* wgrad.c -- a convolution's weight gradient for one example, dW (cout, K) = dY^T (cout, n)
 * cols (n, K), formed per example before clipping (cnn.c).
 *
 * OpenBLAS's sgemm packs both operands and zeroes dW on every call; for these small
 * products (16 x 64 x 196 and 32 x 256 x 25 in the MNIST CNN) that is a fifth of the
 * time, and only its AVX-512 build has a small-matrix path. On x86-64 CPUs with AVX2 and
 * FMA this file's kernel keeps a 4 x 8w tile of dW in registers, streams the rows of dY
 * and cols once per tile from cache and writes dW once, packing nothing.
 *
 * Every output element is the same computation on every path that uses the kernel:
 * acc = 0, then acc = fma(dY[t][o], cols[t][k], acc) for t = 0, 1, ..., n-1 (one rounding
 * per step), which dpgd_conv_wgrad_ref spells out with fmaf; the tests compare them bit
 * for bit. Elsewhere (no AVX2/FMA, another architecture, shapes the tiles do not cover)
 * dpgd_conv_wgrad calls sgemm as before, whose order of summation is OpenBLAS's. Which
 * of the two a process uses is part of its replay identity (dpgd_conv_wgrad_kernel).
 *
 * Privacy does not depend on these bits: the engine clips whatever gradient the model
 * computes by that gradient's own computed norm (model/SENSITIVITY.md section 1), and the
 * kernel computes each element from row o of dY and column k of cols of one example
 * only, at any position in a chunk (section 5's assumption, met without exception). */
#include <math.h>

#include <cblas.h>

#include "layers.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define WGRAD_X86 1
#endif

void dpgd_conv_wgrad_ref(float *dW, const float *dy, const float *cols, size_t n, size_t K,
                         size_t cout)
{
  for (size_t o = 0; o < cout; o++)
    for (size_t k = 0; k < K; k++) {
      float acc = 0.0f;
      for (size_t t = 0; t < n; t++) acc = fmaf(dy[t * cout + o], cols[t * K + k], acc);
      dW[o * K + k] = acc;
    }
}

#ifdef WGRAD_X86
#define WGRAD_TARGET __attribute__((target("avx2,fma")))

/* One tile: rows o..o+3 of dW, columns k..k+8W-1, with d = dy + o and c = cols + k: W
 * vectors of 8 columns, 4 W accumulators, W loads and 4 broadcasts per position. Written
 * out with named accumulators (GCC keeps an array of them in memory). */
#define WGRAD_FMA(r, j) a##r##j = _mm256_fmadd_ps(b, x##j, a##r##j)
#define WGRAD_ROW1(r) b = _mm256_broadcast_ss(d + r), WGRAD_FMA(r, 0)
#define WGRAD_ROW2(r) WGRAD_ROW1(r), WGRAD_FMA(r, 1)
#define WGRAD_ROW3(r) WGRAD_ROW2(r), WGRAD_FMA(r, 2)
#define WGRAD_ROWS(W) WGRAD_ROW##W(0), WGRAD_ROW##W(1), WGRAD_ROW##W(2), WGRAD_ROW##W(3)
#define WGRAD_STORE(j)                                                                         \
  _mm256_storeu_ps(w + 8 * j, a0##j);                                                          \
  _mm256_storeu_ps(w + K + 8 * j, a1##j);                                                      \
  _mm256_storeu_ps(w + 2 * K + 8 * j, a2##j);                                                  \
  _mm256_storeu_ps(w + 3 * K + 8 * j, a3##j)

static inline WGRAD_TARGET void tile1(float *w, const float *d, const float *c, size_t n,
                                      size_t K, size_t cout)
{
  __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00;
  for (size_t t = 0; t < n; t++, d += cout, c += K) {
    __m256 x0 = _mm256_loadu_ps(c);
    __m256 b;
    WGRAD_ROWS(1);
  }
  WGRAD_STORE(0);
}

static inline WGRAD_TARGET void tile2(float *w, const float *d, const float *c, size_t n,
                                      size_t K, size_t cout)
{
  __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00;
  __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;
  for (size_t t = 0; t < n; t++, d += cout, c += K) {
    __m256 x0 = _mm256_loadu_ps(c), x1 = _mm256_loadu_ps(c + 8);
    __m256 b;
    WGRAD_ROWS(2);
  }
  WGRAD_STORE(0);
  WGRAD_STORE(1);
}

static inline WGRAD_TARGET void tile3(float *w, const float *d, const float *c, size_t n,
                                      size_t K, size_t cout)
{
  __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00;
  __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;
  __m256 a02 = a00, a12 = a00, a22 = a00, a32 = a00;
  for (size_t t = 0; t < n; t++, d += cout, c += K) {
    __m256 x0 = _mm256_loadu_ps(c), x1 = _mm256_loadu_ps(c + 8), x2 = _mm256_loadu_ps(c + 16);
    __m256 b;
    WGRAD_ROWS(3);
  }
  WGRAD_STORE(0);
  WGRAD_STORE(1);
  WGRAD_STORE(2);
}

static WGRAD_TARGET void wgrad_fma(float *dW, const float *dy, const float *cols, size_t n,
                                   size_t K, size_t cout)
{
  /* Three-vector tiles (12 accumulators) where the row is long, two-vector ones
   * otherwise: measured faster for K = 256 and K = 64 respectively. */
  size_t wide = K >= 128 ? 24 : 16;
  for (size_t o = 0; o < cout; o += 4) {
    const float *d = dy + o;
    float *w = dW + o * K;
    size_t k = 0;
    if (wide == 24)
      for (; k + 24 <= K; k += 24) tile3(w + k, d, cols + k, n, K, cout);
    for (; k + 16 <= K; k += 16) tile2(w + k, d, cols + k, n, K, cout);
    for (; k < K; k += 8) tile1(w + k, d, cols + k, n, K, cout);
  }
}

static int have_fma(void)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

static int fast_shape(size_t K, size_t cout) { return K % 8 == 0 && cout % 4 == 0 && K > 0; }

const char *dpgd_conv_wgrad_kernel(void)
{
#ifdef WGRAD_X86
  if (have_fma()) return "fma";
#endif
  return "sgemm";
}

void dpgd_conv_wgrad(float *dW, const float *dy, const float *cols, size_t n, size_t K,
                     size_t cout)
{
#ifdef WGRAD_X86
  if (fast_shape(K, cout) && have_fma()) {
    wgrad_fma(dW, dy, cols, n, K, cout);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)cout, (int)K, (int)n, 1.0f, dy,
              (int)cout, cols, (int)K, 0.0f, dW, (int)K);
}
