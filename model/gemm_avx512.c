/* gemm_avx512.c -- dpgd_gemm's fused chain (gemm_fma.c) in sixteen-lane AVX-512 vectors,
 * for CPUs with AVX-512F: where the core executes 512-bit FMAs at full width (AMD Zen 5,
 * Intel server cores) the products run at up to twice the AVX2 kernel's rate. Element
 * (i, j) is the same chain, acc = init[j] (or 0), then acc = fma(A(i, t), B(t, j), acc)
 * for t = 0..T-1, so the bits are those of the AVX2 tiles and of dpgd_gemm_fma_ref
 * (tests/model/test_layers_fast.c); the wider tiles only change speed. */
#include "layers.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f")))

/* One tile: R rows (1 to 12) and W vectors of 16 columns (1 to 4) of C, R W accumulators
 * in registers; with M the last vector holds only the lanes of `mask` (loaded and stored
 * masked: nothing outside the matrix is touched). R, W and M are constants at every
 * call, so the unused accumulators and branches fold away. */
#define LOADV(p, k)                                                                            \
  (W > (k) ? (M && W == (k) + 1 ? _mm512_maskz_loadu_ps(mask, (p) + 16 * (k))                  \
                                : _mm512_loadu_ps((p) + 16 * (k)))                             \
           : z)
#define STOREV(p, k, v)                                                                        \
  if (W > (k)) {                                                                               \
    if (M && W == (k) + 1) _mm512_mask_storeu_ps((p) + 16 * (k), mask, v);                     \
    else _mm512_storeu_ps((p) + 16 * (k), v);                                                  \
  }
#define ACC(r) __m512 c##r##_0 = i0, c##r##_1 = i1, c##r##_2 = i2, c##r##_3 = i3;
#define ROW(r)                                                                                 \
  if (R > r) {                                                                                 \
    const __m512 s = _mm512_set1_ps(a[(r)*ars]);                                               \
    c##r##_0 = _mm512_fmadd_ps(s, x0, c##r##_0);                                               \
    if (W > 1) c##r##_1 = _mm512_fmadd_ps(s, x1, c##r##_1);                                    \
    if (W > 2) c##r##_2 = _mm512_fmadd_ps(s, x2, c##r##_2);                                    \
    if (W > 3) c##r##_3 = _mm512_fmadd_ps(s, x3, c##r##_3);                                    \
  }
#define STORE(r)                                                                               \
  if (R > r) {                                                                                 \
    STOREV(c + (r)*ldc, 0, c##r##_0)                                                           \
    STOREV(c + (r)*ldc, 1, c##r##_1)                                                           \
    STOREV(c + (r)*ldc, 2, c##r##_2)                                                           \
    STOREV(c + (r)*ldc, 3, c##r##_3)                                                           \
  }
static inline __attribute__((always_inline)) T512 void
tile(const int R, const int W, const int M, __mmask16 mask, float *c, size_t ldc,
     const float *a, size_t ars, size_t ats, const float *b, size_t ldb, const float *init,
     size_t T)
{
  const __m512 z = _mm512_setzero_ps();
  const __m512 i0 = init ? LOADV(init, 0) : z, i1 = init ? LOADV(init, 1) : z,
               i2 = init ? LOADV(init, 2) : z, i3 = init ? LOADV(init, 3) : z;
  ACC(0)
  ACC(1)
  ACC(2)
  ACC(3)
  ACC(4)
  ACC(5)
  ACC(6) ACC(7) ACC(8) ACC(9) ACC(10) ACC(11) for (size_t t = 0; t < T; t++, a += ats, b += ldb)
  {
    const __m512 x0 = LOADV(b, 0), x1 = LOADV(b, 1), x2 = LOADV(b, 2), x3 = LOADV(b, 3);
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7) ROW(8) ROW(9) ROW(10) ROW(11)
  }
  STORE(0)
  STORE(1)
  STORE(2) STORE(3) STORE(4) STORE(5) STORE(6) STORE(7) STORE(8) STORE(9) STORE(10) STORE(11)
}
#undef LOADV
#undef STOREV
#undef ACC
#undef ROW
#undef STORE

/* R rows of C: column blocks of 16 W, then the rest (under 16 W columns) as one tile of
 * as many vectors as it needs, the last one masked when the rest is not a multiple of 16. */
#define TILE(R, W, M) tile(R, W, M, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T)
#define ROWS(R, W)                                                                             \
  do {                                                                                         \
    size_t j = 0;                                                                              \
    const float *ij = init;                                                                    \
    for (; j + 16 * (W) <= n; j += 16 * (W), ij = init ? init + j : 0) TILE(R, W, 0);          \
    const size_t rest = n - j, nv = (rest + 15) / 16;                                          \
    if (rest % 16 == 0) {                                                                      \
      if ((W) > 1 && nv == 1) TILE(R, 1, 0);                                                   \
      if ((W) > 2 && nv == 2) TILE(R, 2, 0);                                                   \
      if ((W) > 3 && nv == 3) TILE(R, 3, 0);                                                   \
    } else {                                                                                   \
      if (nv == 1) TILE(R, 1, 1);                                                              \
      if ((W) > 1 && nv == 2) TILE(R, 2, 1);                                                   \
      if ((W) > 2 && nv == 3) TILE(R, 3, 1);                                                   \
      if ((W) > 3 && nv == 4) TILE(R, 4, 1);                                                   \
    }                                                                                          \
  } while (0)

/* Lanes [0, n % 16) of the last vector of a row (all sixteen when n % 16 == 0). */
static __mmask16 tail_mask(size_t n)
{
  const unsigned k = n % 16 ? (unsigned)(n % 16) : 16;
  return (__mmask16)((1u << k) - 1u);
}

/* Row blocks of R; the last, shorter block as one tile of its height. */
#define CASE(r, W)                                                                             \
  case r:                                                                                      \
    ROWS(r, W);                                                                                \
    break;
#define SWEEP(R, W)                                                                            \
  const __mmask16 mask = tail_mask(n);                                                         \
  for (size_t i = 0; i < m; i += (R)) {                                                        \
    switch (m - i >= (size_t)(R) ? (size_t)(R) : m - i) {                                      \
      SWEEP_CASES_##R(W) default : ROWS(1, W);                                                 \
      break;                                                                                   \
    }                                                                                          \
    a += (R)*ars;                                                                              \
    c += (R)*ldc;                                                                              \
  }
#define SWEEP_CASES_4(W) CASE(4, W) CASE(3, W) CASE(2, W)
#define SWEEP_CASES_6(W) CASE(6, W) CASE(5, W) SWEEP_CASES_4(W)
#define SWEEP_CASES_8(W) CASE(8, W) CASE(7, W) SWEEP_CASES_6(W)
#define SWEEP_CASES_12(W) CASE(12, W) CASE(11, W) CASE(10, W) CASE(9, W) SWEEP_CASES_8(W)

/* The weight gradients (dpgd_conv_wgrad: 16 x 64 and 32 x 256 per example, A read down
 * the columns of dY): four rows by four vectors. */
static T512 void sweep_4x4(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                           const float *b, size_t ldb, const float *init, size_t m, size_t n,
                           size_t T)
{
  SWEEP(4, 4)
}
/* Tall, narrow products (a convolution forward with up to 16 output channels): twelve
 * rows by one vector. */
static T512 void sweep_12x1(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                            const float *b, size_t ldb, const float *init, size_t m, size_t n,
                            size_t T)
{
  SWEEP(12, 1)
}
/* Wide products (input gradients of 256 and 512 columns): six rows by four vectors. */
static T512 void sweep_6x4(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                           const float *b, size_t ldb, const float *init, size_t m, size_t n,
                           size_t T)
{
  SWEEP(6, 4)
}
/* The rest (a convolution forward with 32 output channels): eight rows by two vectors. */
static T512 void sweep_8x2(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                           const float *b, size_t ldb, const float *init, size_t m, size_t n,
                           size_t T)
{
  SWEEP(8, 2)
}
#undef SWEEP
#undef CASE
#undef ROWS
#undef TILE

static int have_avx512(void)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  return __builtin_cpu_supports("avx512f");
}
#endif

int dpgd_gemm_avx512_cpu(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  return have_avx512();
#else
  return 0;
#endif
}

int dpgd_gemm_fma512(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
                     size_t ats, const float *b, size_t ldb, const float *init, size_t m,
                     size_t n, size_t T)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_avx512()) {
    if (tiling == DPGD_TILE_4X3) sweep_4x4(c, ldc, a, ars, ats, b, ldb, init, m, n, T);
    else if (n <= 16) sweep_12x1(c, ldc, a, ars, ats, b, ldb, init, m, n, T);
    else if (n <= 32) sweep_8x2(c, ldc, a, ars, ats, b, ldb, init, m, n, T);
    else sweep_6x4(c, ldc, a, ars, ats, b, ldb, init, m, n, T);
    return 1;
  }
#endif
  (void)tiling, (void)c, (void)ldc, (void)a, (void)ars, (void)ats, (void)b, (void)ldb;
  (void)init, (void)m, (void)n, (void)T;
  return 0;
}
