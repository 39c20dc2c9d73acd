/* gemm_fma.c -- the CNN's small matrix products without packing: a register-tiled AVX2/FMA
 * kernel for C = init + A B, used where it beats OpenBLAS's sgemm on this network's
 * shapes (cnn.c):
 *   - the per-example convolution weight gradients, dW (cout, K) = dY^T (cout, n)
 *     cols (n, K): 16 x 64 x 196 and 32 x 256 x 25, two calls per example. sgemm packs
 *     both operands and zeroes dW on every call, and only its AVX-512 build has a
 *     small-matrix path;
 *   - the convolutions forward, y (rows, cout) = b + cols (rows, K) W^T: 16 output
 *     channels are too narrow for sgemm's kernels (about 0.8 of its large-matrix rate);
 *   - conv2's input gradient, dcols (rows, K) = dy (rows, cout) W.
 *
 * Every output element is one chain of fused multiply-adds in the order of the inner
 * index: acc = init[j] (or 0), then acc = fma(A(i, t), B(t, j), acc) for t = 0, 1, ...,
 * T - 1, one rounding per step, on every path that uses the kernel, at any tile size
 * and any position of the row in a chunk; dpgd_gemm_fma_ref spells it out with fmaf and
 * the tests compare them bit for bit. Without AVX2 and FMA (or on another architecture),
 * or for a width that is not a multiple of 8, the callers use sgemm as before, whose
 * order of summation is OpenBLAS's. Which of the two a process uses is part of its
 * replay identity (dpgd_gemm_fma_kernel).
 *
 * Privacy does not depend on these bits: the engine clips whatever gradient the model
 * computes by that gradient's own computed norm (model/SENSITIVITY.md section 1), and
 * each element is computed from one row of A and one column of B, so an example's
 * values depend on that example and the parameters only (section 5). */
#include <math.h>

#include <cblas.h>

#include "layers.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GEMM_X86 1
#endif

void dpgd_gemm_fma_ref(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                       const float *b, size_t ldb, const float *init, size_t m, size_t n,
                       size_t T)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float acc = init ? init[j] : 0.0f;
      for (size_t t = 0; t < T; t++) acc = fmaf(a[i * ars + t * ats], b[t * ldb + j], acc);
      c[i * ldc + j] = acc;
    }
}

#ifdef GEMM_X86
#define FMA_TARGET __attribute__((target("avx2,fma")))

/* One tile: R rows (1 to 6) and W vectors of 8 columns (1 to 3) of C, R W accumulators
 * in registers (at most 15 with the W loads of B's row and one broadcast of A). R and W
 * are constants at every call, so the unused accumulators and branches fold away; the
 * accumulators are named, not an array (GCC keeps an array of them in memory). */
#define ROW(r)                                                                                 \
  if (R > r) {                                                                                 \
    __m256 s = _mm256_broadcast_ss(a + (r)*ars);                                               \
    c##r##0 = _mm256_fmadd_ps(s, x0, c##r##0);                                                 \
    if (W > 1) c##r##1 = _mm256_fmadd_ps(s, x1, c##r##1);                                      \
    if (W > 2) c##r##2 = _mm256_fmadd_ps(s, x2, c##r##2);                                      \
  }
#define STORE(r)                                                                               \
  if (R > r) {                                                                                 \
    _mm256_storeu_ps(c + (r)*ldc, c##r##0);                                                    \
    if (W > 1) _mm256_storeu_ps(c + (r)*ldc + 8, c##r##1);                                     \
    if (W > 2) _mm256_storeu_ps(c + (r)*ldc + 16, c##r##2);                                    \
  }
static inline __attribute__((always_inline)) FMA_TARGET void
tile(const int R, const int W, float *c, size_t ldc, const float *a, size_t ars, size_t ats,
     const float *b, size_t ldb, const float *init, size_t T)
{
  const __m256 z = _mm256_setzero_ps();
  const __m256 i0 = init ? _mm256_loadu_ps(init) : z,
               i1 = init && W > 1 ? _mm256_loadu_ps(init + 8) : z,
               i2 = init && W > 2 ? _mm256_loadu_ps(init + 16) : z;
  __m256 c00 = i0, c01 = i1, c02 = i2, c10 = i0, c11 = i1, c12 = i2, c20 = i0, c21 = i1,
         c22 = i2, c30 = i0, c31 = i1, c32 = i2, c40 = i0, c41 = i1, c42 = i2, c50 = i0,
         c51 = i1, c52 = i2;
  for (size_t t = 0; t < T; t++, a += ats, b += ldb) {
    const __m256 x0 = _mm256_loadu_ps(b), x1 = W > 1 ? _mm256_loadu_ps(b + 8) : z,
                 x2 = W > 2 ? _mm256_loadu_ps(b + 16) : z;
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
  }
  STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)
}
#undef ROW
#undef STORE

/* Row blocks of R (then single rows), column blocks of 8 W (then 16 and 8). */
#define SWEEP(R, W)                                                                            \
  for (size_t i = 0; i < m;) {                                                                 \
    size_t r = m - i >= (size_t)(R) ? (size_t)(R) : 1, j = 0;                                  \
    const float *ai = a + i * ars;                                                             \
    float *ci = c + i * ldc;                                                                   \
    for (; j + 8 * (W) <= n; j += 8 * (W))                                                     \
      if (r == (R)) tile(R, W, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T); \
      else tile(1, W, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T);          \
    for (; j + 16 <= n; j += 16)                                                               \
      if (r == (R)) tile(R, 2, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T); \
      else tile(1, 2, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T);          \
    for (; j < n; j += 8)                                                                      \
      if (r == (R)) tile(R, 1, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T); \
      else tile(1, 1, ci + j, ldc, ai, ars, ats, b + j, ldb, init ? init + j : 0, T);          \
    i += r;                                                                                    \
  }

static FMA_TARGET void sweep_4x3(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                                 const float *b, size_t ldb, const float *init, size_t m,
                                 size_t n, size_t T)
{
  SWEEP(4, 3)
}
static FMA_TARGET void sweep_6x2(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                                 const float *b, size_t ldb, const float *init, size_t m,
                                 size_t n, size_t T)
{
  SWEEP(6, 2)
}
#undef SWEEP

static int have_fma(void)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

const char *dpgd_gemm_fma_kernel(void)
{
#ifdef GEMM_X86
  if (have_fma()) return "fma";
#endif
  return "sgemm";
}

int dpgd_gemm_fma(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
                  size_t ats, const float *b, size_t ldb, const float *init, size_t m, size_t n,
                  size_t T)
{
#ifdef GEMM_X86
  if (n % 8 == 0 && have_fma()) {
    switch (tiling) {
    case DPGD_TILE_4X3: sweep_4x3(c, ldc, a, ars, ats, b, ldb, init, m, n, T); return 1;
    case DPGD_TILE_6X2: sweep_6x2(c, ldc, a, ars, ats, b, ldb, init, m, n, T); return 1;
    }
  }
#endif
  (void)tiling, (void)c, (void)ldc, (void)a, (void)ars, (void)ats, (void)b, (void)ldb;
  (void)init, (void)m, (void)n, (void)T;
  return 0;
}

void dpgd_conv_wgrad(float *dW, const float *dy, const float *cols, size_t n, size_t K,
                     size_t cout)
{
  /* A(o, t) = dy[t][o]. */
  if (dpgd_gemm_fma(DPGD_TILE_4X3, dW, K, dy, 1, cout, cols, K, NULL, cout, K, n)) return;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)cout, (int)K, (int)n, 1.0f, dy,
              (int)cout, cols, (int)K, 0.0f, dW, (int)K);
}
