/* gemm_fma.c -- the models' per-example matrix products, C = init + A B, by kernels whose
 * every output element is one fixed chain of operations over one row of A and one column
 * of B, the same at every position of the row in a chunk, every chunk size and every
 * width (model/SENSITIVITY.md 5: a row's values must not depend on which other rows are
 * present). OpenBLAS's sgemm is not used for them: its kernels sum an element in an
 * order that depends on where the row falls in the matrix and on the matrix's size.
 *   - With AVX2 and FMA (x86-64): a register-tiled kernel, nothing packed. Element (i, j)
 *     is acc = init[j] (or 0), then acc = fma(A(i, t), B(t, j), acc) for t = 0..T-1, one
 *     rounding per step; dpgd_gemm_fma_ref spells it out with fmaf. Columns past the
 *     last multiple of 8 go through masked vectors, rows past the last multiple of the
 *     tile's height through a shorter tile: the same chain. Where the CPU has AVX-512F
 *     the same chain runs in 16-lane tiles instead (gemm_avx512.c: twice the width, the
 *     same bits).
 *   - Elsewhere (or when a test forces it): the same loop with the product and the sum
 *     rounded separately, acc = acc + A(i, t) B(t, j) in float, vectorised over j
 *     (dpgd_gemm_muladd_ref spells it out). This file is built with -ffp-contract=off, so
 *     the compiler fuses neither (model/CMakeLists.txt).
 * Which of the two a process uses is part of its replay identity (dpgd_gemm_kernel).
 * The outer form (dpgd_gemm) in the CNN (cnn.c): the per-example convolution weight
 * gradients, dW (cout, K) = dY^T (cout, n) cols (n, K); the convolutions forward, y
 * (rows, cout) = b + cols (rows, K) W^T (W transposed); the input gradients of conv2 and
 * of the dense layers. The dot form (dpgd_gemm_nt, C = init + A B^T with both operands'
 * rows contiguous, eight partial sums per element added in a fixed tree) for the dense
 * layers forward and the softmax logits, y = b + x W^T without transposing W. */
#include <math.h>

#include "layers.h"
#include "vec4.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GEMM_X86 1
#endif

static int force_muladd; /* dpgd_gemm_force_muladd: tests only */
static int force_avx2;   /* dpgd_gemm_force_avx2: tests only */

/* Element by element, each one chain over t in order: fused (fmaf) or with the product
 * and the sum rounded on their own. */
static void chain_ref(int fused, float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                      const float *b, size_t ldb, const float *init, size_t m, size_t n,
                      size_t T)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float acc = init ? init[j] : 0.0f;
      for (size_t t = 0; t < T; t++) {
        const float x = a[i * ars + t * ats], y = b[t * ldb + j];
        if (fused) {
          acc = fmaf(x, y, acc);
        } else {
          const float p = x * y;
          acc = acc + p;
        }
      }
      c[i * ldc + j] = acc;
    }
}

void dpgd_gemm_fma_ref(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                       const float *b, size_t ldb, const float *init, size_t m, size_t n,
                       size_t T)
{
  chain_ref(1, c, ldc, a, ars, ats, b, ldb, init, m, n, T);
}

void dpgd_gemm_muladd_ref(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                          const float *b, size_t ldb, const float *init, size_t m, size_t n,
                          size_t T)
{
  chain_ref(0, c, ldc, a, ars, ats, b, ldb, init, m, n, T);
}

/* The dot form's chain for one element: eight partial sums s_l over t = l mod 8 in order
 * (fused or not), added as ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), then to
 * init. A partial sum starts at +0 and is never -0 (an addition with a zero result is
 * +0 in round to nearest), so an unused lane adds nothing. */
static float dot_finish(const float s[8], const float *init)
{
  const float h0 = s[0] + s[4], h1 = s[1] + s[5], h2 = s[2] + s[6], h3 = s[3] + s[7];
  const float tot = (h0 + h2) + (h1 + h3);
  return init ? *init + tot : tot;
}

static void dot_ref(int fused, float *c, size_t ldc, const float *a, size_t lda, const float *b,
                    size_t ldb, const float *init, size_t m, size_t n, size_t T)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float s[8] = {0};
      for (size_t t = 0; t < T; t++) {
        const float x = a[i * lda + t], y = b[j * ldb + t];
        if (fused) {
          s[t % 8] = fmaf(x, y, s[t % 8]);
        } else {
          const float p = x * y;
          s[t % 8] = s[t % 8] + p;
        }
      }
      c[i * ldc + j] = dot_finish(s, init ? init + j : NULL);
    }
}

void dpgd_gemm_nt_fma_ref(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                          size_t ldb, const float *init, size_t m, size_t n, size_t T)
{
  dot_ref(1, c, ldc, a, lda, b, ldb, init, m, n, T);
}

void dpgd_gemm_nt_muladd_ref(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                             size_t ldb, const float *init, size_t m, size_t n, size_t T)
{
  dot_ref(0, c, ldc, a, lda, b, ldb, init, m, n, T);
}

/* The mul-add dot form: whole blocks of eight as one eight-lane step (the vectoriser's),
 * the rest lane by lane, the same chain as dot_ref(0, ...). */
DPGD_CLONES void dpgd_gemm_nt_muladd(float *c, size_t ldc, const float *a, size_t lda,
                                     const float *b, size_t ldb, const float *init, size_t m,
                                     size_t n, size_t T)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      const float *x = a + i * lda, *y = b + j * ldb;
      float s[8] = {0};
      size_t t = 0;
      for (; t + 8 <= T; t += 8)
        for (size_t l = 0; l < 8; l++) s[l] = s[l] + x[t + l] * y[t + l];
      for (; t < T; t++) s[t % 8] = s[t % 8] + x[t] * y[t];
      c[i * ldc + j] = dot_finish(s, init ? init + j : NULL);
    }
}

/* Columns per block of the mul-add kernel's accumulator row. */
#define MA_COLS 64

/* Row i's columns [j, j + w): the accumulators in a row of floats, each step one
 * product and one addition per lane (the vectoriser keeps lanes apart). */
static inline void muladd_block(float *c, const float *a, size_t ats, const float *b,
                                size_t ldb, const float *init, size_t w, size_t T)
{
  float acc[MA_COLS];
  for (size_t jj = 0; jj < w; jj++) acc[jj] = init ? init[jj] : 0.0f;
  for (size_t t = 0; t < T; t++) {
    const float s = a[t * ats], *bt = b + t * ldb;
    for (size_t jj = 0; jj < w; jj++) acc[jj] = acc[jj] + s * bt[jj];
  }
  for (size_t jj = 0; jj < w; jj++) c[jj] = acc[jj];
}

DPGD_CLONES void dpgd_gemm_muladd(float *c, size_t ldc, const float *a, size_t ars, size_t ats,
                                  const float *b, size_t ldb, const float *init, size_t m,
                                  size_t n, size_t T)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j += MA_COLS)
      muladd_block(c + i * ldc + j, a + i * ars, ats, b + j, ldb, init ? init + j : NULL,
                   n - j < MA_COLS ? n - j : MA_COLS, T);
}

#ifdef GEMM_X86
#define FMA_TARGET __attribute__((target("avx2,fma")))

/* One tile: R rows (1 to 6) and W vectors of 8 columns (1 to 3) of C, R W accumulators
 * in registers (at most 15 with the W loads of B's row and one broadcast of A); with M
 * the last vector holds only the lanes of `mask` (loaded and stored masked: nothing
 * outside the matrix is touched). R, W and M are constants at every call, so the unused
 * accumulators and branches fold away; the accumulators are named, not an array (GCC
 * keeps an array of them in memory). */
#define LOADV(p, k)                                                                            \
  (W > (k) ? (M && W == (k) + 1 ? _mm256_maskload_ps((p) + 8 * (k), mask)                      \
                                : _mm256_loadu_ps((p) + 8 * (k)))                              \
           : z)
#define STOREV(p, k, v)                                                                        \
  if (W > (k)) {                                                                               \
    if (M && W == (k) + 1) _mm256_maskstore_ps((p) + 8 * (k), mask, v);                        \
    else _mm256_storeu_ps((p) + 8 * (k), v);                                                   \
  }
#define ROW(r)                                                                                 \
  if (R > r) {                                                                                 \
    __m256 s = _mm256_broadcast_ss(a + (r)*ars);                                               \
    c##r##0 = _mm256_fmadd_ps(s, x0, c##r##0);                                                 \
    if (W > 1) c##r##1 = _mm256_fmadd_ps(s, x1, c##r##1);                                      \
    if (W > 2) c##r##2 = _mm256_fmadd_ps(s, x2, c##r##2);                                      \
  }
#define STORE(r)                                                                               \
  if (R > r) {                                                                                 \
    STOREV(c + (r)*ldc, 0, c##r##0)                                                            \
    STOREV(c + (r)*ldc, 1, c##r##1)                                                            \
    STOREV(c + (r)*ldc, 2, c##r##2)                                                            \
  }
static inline __attribute__((always_inline)) FMA_TARGET void
tile(const int R, const int W, const int M, __m256i mask, float *c, size_t ldc, const float *a,
     size_t ars, size_t ats, const float *b, size_t ldb, const float *init, size_t T)
{
  const __m256 z = _mm256_setzero_ps();
  const __m256 i0 = init ? LOADV(init, 0) : z, i1 = init ? LOADV(init, 1) : z,
               i2 = init ? LOADV(init, 2) : z;
  __m256 c00 = i0, c01 = i1, c02 = i2, c10 = i0, c11 = i1, c12 = i2, c20 = i0, c21 = i1,
         c22 = i2, c30 = i0, c31 = i1, c32 = i2, c40 = i0, c41 = i1, c42 = i2, c50 = i0,
         c51 = i1, c52 = i2;
  for (size_t t = 0; t < T; t++, a += ats, b += ldb) {
    const __m256 x0 = LOADV(b, 0), x1 = LOADV(b, 1), x2 = LOADV(b, 2);
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
  }
  STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)
}
#undef LOADV
#undef STOREV
#undef ROW
#undef STORE

/* R rows of C: column blocks of 8 W, then the rest (under 8 W columns) as one tile of
 * as many vectors as it needs, the last one masked when the rest is not a multiple of 8. */
#define ROWS(R, W)                                                                             \
  do {                                                                                         \
    size_t j = 0;                                                                              \
    for (; j + 8 * (W) <= n; j += 8 * (W))                                                     \
      tile(R, W, 0, mask, c + j, ldc, a, ars, ats, b + j, ldb, init ? init + j : 0, T);        \
    const size_t rest = n - j, nv = (rest + 7) / 8;                                            \
    const float *ij = init ? init + j : 0;                                                     \
    if (rest % 8 == 0) {                                                                       \
      if (nv == 1) tile(R, 1, 0, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T);            \
      if (nv == 2) tile(R, 2, 0, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T);            \
    } else {                                                                                   \
      if (nv == 1) tile(R, 1, 1, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T);            \
      if (nv == 2) tile(R, 2, 1, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T);            \
      if (nv == 3) tile(R, 3, 1, mask, c + j, ldc, a, ars, ats, b + j, ldb, ij, T);            \
    }                                                                                          \
  } while (0)

/* Lanes [0, n % 8) of the last vector of a row (all eight when n % 8 == 0). */
static FMA_TARGET __m256i tail_mask(size_t n)
{
  const int k = n % 8 ? (int)(n % 8) : 8;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), lane);
}

/* Row blocks of R; the last, shorter block as one tile of its height. */
#define SWEEP(R, W)                                                                            \
  const __m256i mask = tail_mask(n);                                                           \
  for (size_t i = 0; i < m; i += (R)) {                                                        \
    switch (m - i >= (size_t)(R) ? (size_t)(R) : m - i) {                                      \
    case 6: ROWS(6, W); break;                                                                 \
    case 5: ROWS(5, W); break;                                                                 \
    case 4: ROWS(4, W); break;                                                                 \
    case 3: ROWS(3, W); break;                                                                 \
    case 2: ROWS(2, W); break;                                                                 \
    default: ROWS(1, W); break;                                                                \
    }                                                                                          \
    a += (R)*ars;                                                                              \
    c += (R)*ldc;                                                                              \
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
#undef ROWS

/* The dot form, C = init + A B^T with A (m, T) and B (n, T) rows contiguous in t: a tile
 * of R rows of A (1 or 2) by J rows of B (1 to 5), R J eight-lane accumulators (lane l
 * sums t = l mod 8), the last partial block of t loaded masked (zeros: they add
 * nothing), then each accumulator added across as dot_finish does. */
#define DOT(j)                                                                                 \
  if (J > j) {                                                                                 \
    const __m256 w =                                                                           \
        M ? _mm256_maskload_ps(b + (j)*ldb + t, tm) : _mm256_loadu_ps(b + (j)*ldb + t);        \
    s0##j = _mm256_fmadd_ps(x0, w, s0##j);                                                     \
    if (R > 1) s1##j = _mm256_fmadd_ps(x1, w, s1##j);                                          \
  }
#define DOT_STEP(M_)                                                                           \
  {                                                                                            \
    const int M = M_;                                                                          \
    const __m256 x0 = M ? _mm256_maskload_ps(a + t, tm) : _mm256_loadu_ps(a + t);              \
    const __m256 x1 = R < 2 ? z                                                                \
                      : M   ? _mm256_maskload_ps(a + lda + t, tm)                              \
                            : _mm256_loadu_ps(a + lda + t);                                      \
    DOT(0) DOT(1) DOT(2) DOT(3) DOT(4)                                                         \
  }
#define DOT_STORE(r, j)                                                                        \
  do {                                                                                         \
    if (R > r && J > j) c[(r)*ldc + (j)] = hsum(s##r##j, init ? init + (j) : NULL);            \
  } while (0)

static inline __attribute__((always_inline)) FMA_TARGET float hsum(__m256 v, const float *init)
{
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));     /* h0 + h2, h1 + h3 */
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1)); /* (h0 + h2) + (h1 + h3) */
  const float tot = _mm_cvtss_f32(h);
  return init ? *init + tot : tot;
}

static inline __attribute__((always_inline)) FMA_TARGET void
dot_tile(const int R, const int J, float *c, size_t ldc, const float *a, size_t lda,
         const float *b, size_t ldb, const float *init, size_t T, __m256i tm)
{
  const __m256 z = _mm256_setzero_ps();
  __m256 s00 = z, s01 = z, s02 = z, s03 = z, s04 = z, s10 = z, s11 = z, s12 = z, s13 = z,
         s14 = z;
  size_t t = 0;
  for (; t + 8 <= T; t += 8) DOT_STEP(0)
  if (t < T) DOT_STEP(1)
  DOT_STORE(0, 0);
  DOT_STORE(0, 1);
  DOT_STORE(0, 2);
  DOT_STORE(0, 3);
  DOT_STORE(0, 4);
  DOT_STORE(1, 0);
  DOT_STORE(1, 1);
  DOT_STORE(1, 2);
  DOT_STORE(1, 3);
  DOT_STORE(1, 4);
}
#undef DOT
#undef DOT_STEP
#undef DOT_STORE

/* Rows of A two at a time (then one), rows of B five at a time (then the rest). */
#define DOT_ROWS(R)                                                                            \
  do {                                                                                         \
    size_t j = 0;                                                                              \
    for (; j + 5 <= n; j += 5)                                                                 \
      dot_tile(R, 5, c + j, ldc, a, lda, b + j * ldb, ldb, init ? init + j : 0, T, tm);        \
    const float *ij = init ? init + j : 0;                                                     \
    switch (n - j) {                                                                           \
    case 4: dot_tile(R, 4, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;            \
    case 3: dot_tile(R, 3, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;            \
    case 2: dot_tile(R, 2, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;            \
    case 1: dot_tile(R, 1, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;            \
    default: break;                                                                            \
    }                                                                                          \
  } while (0)

static FMA_TARGET void dot_sweep(float *c, size_t ldc, const float *a, size_t lda,
                                 const float *b, size_t ldb, const float *init, size_t m,
                                 size_t n, size_t T)
{
  const __m256i tm = tail_mask(T);
  size_t i = 0;
  for (; i + 2 <= m; i += 2, a += 2 * lda, c += 2 * ldc) DOT_ROWS(2);
  if (i < m) DOT_ROWS(1);
}
#undef DOT_ROWS

/* The dot form in sixteen lanes, where the CPU has AVX-512F: lanes 0-7 of an accumulator
 * are row i's eight partial sums, lanes 8-15 row i + 1's, against a row of B loaded into
 * both halves: the same fused chains, each half added across by hsum. A tile is P pairs
 * of rows of A (1 to 3; with `odd`, the last pair has one row and zeros above it, which
 * are never stored) by J rows of B (1 to 4). */
#define T512 __attribute__((target("avx512f,avx2,fma")))
static inline __attribute__((always_inline)) T512 __m512 pair_of(__m256 lo, __m256 hi)
{
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)),
                                             _mm256_castps_pd(hi), 1));
}
static inline __attribute__((always_inline)) T512 __m256 load8(int M, const float *p,
                                                               __m256i tm)
{
  return M ? _mm256_maskload_ps(p, tm) : _mm256_loadu_ps(p);
}
#define NT_ROWS(p)                                                                             \
  const __m512 x##p =                                                                          \
      P > p ? pair_of(load8(M, a + 2 * (p)*lda + t, tm),                                       \
                      odd && P == (p) + 1 ? _mm256_setzero_ps()                                \
                                          : load8(M, a + (2 * (p) + 1) * lda + t, tm))         \
            : z
#define NT_COL(j)                                                                              \
  const __m512 w##j =                                                                          \
      J > j ? pair_of(load8(M, b + (j)*ldb + t, tm), load8(M, b + (j)*ldb + t, tm)) : z
#define NT_FMA(p, j)                                                                           \
  do {                                                                                         \
    if (P > p && J > j) s##p##j = _mm512_fmadd_ps(x##p, w##j, s##p##j);                        \
  } while (0)
#define NT_STEP(M_)                                                                            \
  {                                                                                            \
    const int M = M_;                                                                          \
    NT_ROWS(0);                                                                                \
    NT_ROWS(1);                                                                                \
    NT_ROWS(2);                                                                                \
    NT_COL(0);                                                                                 \
    NT_COL(1);                                                                                 \
    NT_COL(2);                                                                                 \
    NT_COL(3);                                                                                 \
    NT_FMA(0, 0);                                                                              \
    NT_FMA(0, 1);                                                                              \
    NT_FMA(0, 2);                                                                              \
    NT_FMA(0, 3);                                                                              \
    NT_FMA(1, 0);                                                                              \
    NT_FMA(1, 1);                                                                              \
    NT_FMA(1, 2);                                                                              \
    NT_FMA(1, 3);                                                                              \
    NT_FMA(2, 0);                                                                              \
    NT_FMA(2, 1);                                                                              \
    NT_FMA(2, 2);                                                                              \
    NT_FMA(2, 3);                                                                              \
  }
#define NT_STORE(p, j)                                                                         \
  do {                                                                                         \
    if (P > p && J > j) {                                                                      \
      const float *ij = init ? init + (j) : NULL;                                              \
      c[2 * (p)*ldc + (j)] = hsum(_mm512_castps512_ps256(s##p##j), ij);                        \
      if (!(odd && P == (p) + 1))                                                              \
        c[(2 * (p) + 1) * ldc + (j)] =                                                         \
            hsum(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s##p##j), 1)), ij);  \
    }                                                                                          \
  } while (0)
static inline __attribute__((always_inline)) T512 void
dot_tile512(const int P, const int odd, const int J, float *c, size_t ldc, const float *a,
            size_t lda, const float *b, size_t ldb, const float *init, size_t T, __m256i tm)
{
  const __m512 z = _mm512_setzero_ps();
  __m512 s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z, s20 = z,
         s21 = z, s22 = z, s23 = z;
  size_t t = 0;
  for (; t + 8 <= T; t += 8) NT_STEP(0)
  if (t < T) NT_STEP(1)
  NT_STORE(0, 0);
  NT_STORE(0, 1);
  NT_STORE(0, 2);
  NT_STORE(0, 3);
  NT_STORE(1, 0);
  NT_STORE(1, 1);
  NT_STORE(1, 2);
  NT_STORE(1, 3);
  NT_STORE(2, 0);
  NT_STORE(2, 1);
  NT_STORE(2, 2);
  NT_STORE(2, 3);
}
#undef NT_ROWS
#undef NT_COL
#undef NT_FMA
#undef NT_STEP
#undef NT_STORE

/* Rows of B four at a time, then the rest, for one block of rows of A (P pairs, odd). */
#define NT_BLOCK(P, odd)                                                                       \
  do {                                                                                         \
    size_t j = 0;                                                                              \
    for (; j + 4 <= n; j += 4)                                                                 \
      dot_tile512(P, odd, 4, c + j, ldc, a, lda, b + j * ldb, ldb, init ? init + j : 0, T,     \
                  tm);                                                                         \
    const float *ij = init ? init + j : 0;                                                     \
    switch (n - j) {                                                                           \
    case 3: dot_tile512(P, odd, 3, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;    \
    case 2: dot_tile512(P, odd, 2, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;    \
    case 1: dot_tile512(P, odd, 1, c + j, ldc, a, lda, b + j * ldb, ldb, ij, T, tm); break;    \
    default: break;                                                                            \
    }                                                                                          \
  } while (0)

/* Rows of A six at a time, the last block of one to five rows as one shorter tile. */
static T512 void dot_sweep512(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                              size_t ldb, const float *init, size_t m, size_t n, size_t T)
{
  const __m256i tm = tail_mask(T);
  for (size_t i = 0; i < m; i += 6, a += 6 * lda, c += 6 * ldc) {
    switch (m - i >= 6 ? 6 : m - i) {
    case 6: NT_BLOCK(3, 0); break;
    case 5: NT_BLOCK(3, 1); break;
    case 4: NT_BLOCK(2, 0); break;
    case 3: NT_BLOCK(2, 1); break;
    case 2: NT_BLOCK(1, 0); break;
    default: NT_BLOCK(1, 1); break;
    }
  }
}
#undef NT_BLOCK
#undef T512

static int have_fma(void)
{
  __builtin_cpu_init(); /* idempotent; needed only before constructors have run */
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

void dpgd_gemm_force_muladd(int on) { force_muladd = on != 0; }

const char *dpgd_gemm_kernel(void)
{
#ifdef GEMM_X86
  if (!force_muladd && have_fma()) return "fma";
#endif
  return "mul-add";
}

void dpgd_gemm_force_avx2(int on) { force_avx2 = on != 0; }

int dpgd_gemm_wide(void)
{
#ifdef GEMM_X86
  return !force_muladd && !force_avx2 && have_fma() && dpgd_gemm_avx512_cpu();
#else
  return 0;
#endif
}

int dpgd_gemm_fma(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
                  size_t ats, const float *b, size_t ldb, const float *init, size_t m, size_t n,
                  size_t T)
{
  if (!force_avx2 && dpgd_gemm_fma512(tiling, c, ldc, a, ars, ats, b, ldb, init, m, n, T))
    return 1;
#ifdef GEMM_X86
  if (have_fma()) {
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

void dpgd_gemm(dpgd_gemm_tile tiling, float *c, size_t ldc, const float *a, size_t ars,
               size_t ats, const float *b, size_t ldb, const float *init, size_t m, size_t n,
               size_t T)
{
  if (!force_muladd && dpgd_gemm_fma(tiling, c, ldc, a, ars, ats, b, ldb, init, m, n, T))
    return;
  dpgd_gemm_muladd(c, ldc, a, ars, ats, b, ldb, init, m, n, T);
}

void dpgd_conv_wgrad(float *dW, const float *dy, const float *cols, size_t n, size_t K,
                     size_t cout)
{
  /* A(o, t) = dy[t][o]. */
  dpgd_gemm(DPGD_TILE_4X3, dW, K, dy, 1, cout, cols, K, NULL, cout, K, n);
}

int dpgd_gemm_nt_fma(float *c, size_t ldc, const float *a, size_t lda, const float *b,
                     size_t ldb, const float *init, size_t m, size_t n, size_t T)
{
#ifdef GEMM_X86
  if (have_fma()) {
    if (dpgd_gemm_wide()) dot_sweep512(c, ldc, a, lda, b, ldb, init, m, n, T);
    else dot_sweep(c, ldc, a, lda, b, ldb, init, m, n, T);
    return 1;
  }
#endif
  (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)ldb, (void)init, (void)m, (void)n;
  (void)T;
  return 0;
}

void dpgd_gemm_nt(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb,
                  const float *init, size_t m, size_t n, size_t T)
{
  if (!force_muladd && dpgd_gemm_nt_fma(c, ldc, a, lda, b, ldb, init, m, n, T)) return;
  dpgd_gemm_nt_muladd(c, ldc, a, lda, b, ldb, init, m, n, T);
}
