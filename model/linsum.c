/* linsum.c -- a linear layer's clipped sum (softmax, and the conv nets' two dense layers):
 * example i's gradient is rank one, (f_i r_i) x_i^T for the weight and f_i r_i for the
 * bias (f_i its clip factor, r_i its output gradient, x_i its input), so the chunk's sum
 * is accW += sum_i (f_i r_i) x_i^T and accb += sum_i f_i r_i, in double: rs = f r is exact
 * in double (two 24-bit significands), x converts exactly, and each element of accW is a
 * summation (SENSITIVITY.md 4). With AVX-512F each element is one chain in example order,
 * acc = fma(rs(i, k), x(i, j), acc), the product exact, so each step rounds once as an
 * addition does; elsewhere one cblas_dgemm (beta = 1 onto the accumulator). The bias is
 * added in example order either way. */
#include <string.h>

#include <cblas.h>

#include "layers.h"
#include "model_internal.h"
#include "vec4.h"

/* Rows with scale 0 become zero rows of rs and xd (their r or x may be NaN); the
 * others get rs = f r (exact in double) and xd = x. */
DPGD_CLONES static void linear_rows(double *rs, double *xd, const float *r, const float *x,
                                    const float *scale, size_t B, size_t K, size_t d)
{
  for (size_t i = 0; i < B; i++) {
    if (scale[i] == 0.0f) {
      memset(rs + i * K, 0, K * sizeof(double));
      memset(xd + i * d, 0, d * sizeof(double));
      continue;
    }
    const double f = scale[i];
    for (size_t k = 0; k < K; k++) rs[i * K + k] = f * (double)r[i * K + k];
    for (size_t j = 0; j < d; j++) xd[i * d + j] = x[i * d + j];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f")))
#define LINSUM_MAX 128 /* kept rows per group */

/* Rows k0 .. k0 + R - 1 (R 1 to 6) of accW by W vectors (1 to 4) of eight columns from j:
 * acc = accW(k, j), then acc = fma(rs(u, k), x_u(j), acc) for the n kept examples u in
 * order, x_u's floats converted as they are loaded. R W accumulators, W conversions and
 * R broadcasts per example. */
static inline __attribute__((always_inline)) T512 void
sum_tile(const int R, const int W, double *acc, size_t ld, const double *rs, size_t K,
         const float *const *xr, size_t j, size_t n)
{
  __m512d c[6][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < W; v++) c[r][v] = _mm512_loadu_pd(acc + r * ld + 8 * v);
  for (size_t u = 0; u < n; u++, rs += K) {
    __m512d x[4];
#pragma GCC unroll 4
    for (int v = 0; v < W; v++) x[v] = _mm512_cvtps_pd(_mm256_loadu_ps(xr[u] + j + 8 * v));
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      const __m512d a = _mm512_set1_pd(rs[r]);
#pragma GCC unroll 4
      for (int v = 0; v < W; v++) c[r][v] = _mm512_fmadd_pd(a, x[v], c[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < W; v++) _mm512_storeu_pd(acc + r * ld + 8 * v, c[r][v]);
}

#define SUM_COLS(r)                                                                            \
  case r:                                                                                      \
    for (j = 0; j + 32 <= d; j += 32)                                                          \
      sum_tile(r, 4, accW + k0 * d + j, d, rs + k0, K, x, j, n);                               \
    switch ((d - j) / 8) {                                                                     \
    case 3: sum_tile(r, 3, accW + k0 * d + j, d, rs + k0, K, x, j, n); break;                  \
    case 2: sum_tile(r, 2, accW + k0 * d + j, d, rs + k0, K, x, j, n); break;                  \
    case 1: sum_tile(r, 1, accW + k0 * d + j, d, rs + k0, K, x, j, n); break;                  \
    default: break;                                                                            \
    }                                                                                          \
    break;

/* accW (K, d), d a multiple of 8, += the n kept examples' rs (n, K) times their inputs
 * x[u] (d floats each): row blocks of six, column blocks of 32. */
static T512 void sum_512(double *accW, const double *rs, const float *const *x, size_t n,
                         size_t K, size_t d)
{
  for (size_t k0 = 0; k0 < K; k0 += 6) {
    size_t j;
    switch (K - k0 < 6 ? K - k0 : 6) {
      SUM_COLS(6)
      SUM_COLS(5)
      SUM_COLS(4)
      SUM_COLS(3)
      SUM_COLS(2)
      SUM_COLS(1)
    default: break;
    }
  }
}
#undef SUM_COLS

/* The kept rows' rs packed in example order and their inputs listed, LINSUM_MAX at a
 * time (each element's chain goes on from one group to the next); then the tiles. */
static int accumulate_512(double *accW, double *accb, double *rs, const float *r,
                          const float *x, const float *scale, size_t B, size_t K, size_t d)
{
  if (d % 8 != 0 || !dpgd_gemm_wide()) return 0;
  const float *xr[LINSUM_MAX];
  for (size_t i = 0; i < B;) {
    size_t n = 0;
    for (; i < B && n < LINSUM_MAX; i++) {
      if (scale[i] == 0.0f) continue; /* 0 * NaN would be NaN */
      const double f = scale[i];
      for (size_t k = 0; k < K; k++) rs[n * K + k] = f * (double)r[i * K + k];
      xr[n++] = x + i * d;
    }
    if (n == 0) break;
    sum_512(accW, rs, xr, n, K, d);
    for (size_t u = 0; u < n; u++)
      for (size_t k = 0; k < K; k++) accb[k] += rs[u * K + k];
  }
  return 1;
}
#else
static int accumulate_512(double *accW, double *accb, double *rs, const float *r,
                          const float *x, const float *scale, size_t B, size_t K, size_t d)
{
  (void)accW, (void)accb, (void)rs, (void)r, (void)x, (void)scale, (void)B, (void)K, (void)d;
  return 0;
}
#endif

const char *dpgd_linsum_kernel(void) { return dpgd_gemm_wide() ? "fma512" : "dgemm"; }

void dpgd_accumulate_linear(double *accW, double *accb, double *rs, double *xd, const float *r,
                            const float *x, const float *scale, size_t B, size_t K, size_t d)
{
  if (accumulate_512(accW, accb, rs, r, x, scale, B, K, d)) return;
  size_t used = 0;
  for (size_t i = 0; i < B; i++) used += scale[i] != 0.0f;
  if (used == 0) return;
  linear_rows(rs, xd, r, x, scale, B, K, d);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)d, (int)B, 1.0, rs, (int)K,
              xd, (int)d, 1.0, accW, (int)d);
  for (size_t i = 0; i < B; i++)
    for (size_t k = 0; k < K; k++) accb[k] += rs[i * K + k];
}

void dpgd_accumulate_linear_ref(double *accW, double *accb, const float *r, const float *x,
                                const float *scale, size_t B, size_t K, size_t d)
{
  for (size_t i = 0; i < B; i++) {
    if (scale[i] == 0.0f) continue;
    for (size_t k = 0; k < K; k++) {
      double rk = (double)scale[i] * (double)r[i * K + k];
      for (size_t j = 0; j < d; j++) accW[k * d + j] += rk * (double)x[i * d + j];
      accb[k] += rk;
    }
  }
}
