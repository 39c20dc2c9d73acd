/* engine.c -- the fused per-example step's parts: the workspace, one chunk of B
 * examples (gather, unpack, the model's chunk step with single-threaded OpenBLAS inside:
 * measured faster than threaded BLAS for these small matrices; see cmd_bench.c), the
 * clipping rule and the row accumulation the model types share. reduce.c runs the
 * chunks on threads and sums them in the reduction tree. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "layers.h"
#include "model_internal.h"
#include "vec4.h"

#define MAX_CHUNK 65536
#define MAX_THREADS 1024
#define ALIGN 64

/* The clipping rule and the clipped sums are a true sensitivity bound in floating
 * point; model/SENSITIVITY.md has the proof that the constants below serve. */

/* 2^-20: the shrink of a clipped gradient's factor. It absorbs the rounding of the
 * squared norm (relative (P + 8) u, at most 2^-21 for P < 2^32) and of the factor's own
 * three operations, so that factor * ||g|| < cap (1 - 2^-22) in real numbers. */
#define CLIP_SHRINK (1.0 - 0x1p-20)
#define U_DOUBLE 0x1p-53
/* 2^-252 = FLT_MIN^2: below it the norm is not a normal float. */
#define SQ_MIN 0x1p-252

float dpgd_clip_scale(double sq, double cap, size_t P, double *pre_out, double *post)
{
  if (!isfinite(sq)) {
    *pre_out = INFINITY;
    *post = 0.0;
    return 0.0f;
  }
  *pre_out = sq;
  /* e = k u bounds the relative rounding error of sq, k = P + 8 roundings a term of it
   * goes through (SENSITIVITY.md 2). A zero or sub-FLT_MIN norm, or a model too large
   * for CLIP_SHRINK, contributes nothing: v = 0 is within every cap. */
  const double e = (double)(P + 8) * U_DOUBLE;
  if (!(sq >= SQ_MIN) || !(e <= 0x1p-21)) {
    *post = 0.0;
    return 0.0f;
  }
  /* Unclipped only when sq, raised past its rounding error, is within cap^2; *post is
   * that raised value, an upper bound on ||g||^2 that the test keeps <= fl(cap^2). */
  const double c2 = cap * cap;
  const double up = sq * (1.0 + (2.0 * e + 0x1p-50));
  if (up <= c2) {
    *post = up;
    return 1.0f;
  }
  /* cap^2 is not a normal double (cap < 2^-511): its rounding error is not relative,
   * and no usable gradient is that small; the point contributes nothing. */
  if (!(c2 >= DBL_MIN)) {
    *post = 0.0;
    return 0.0f;
  }
  /* Clipped: sqrt(sq) >= FLT_MIN and cap >= 2^-511 keep every operation below normal,
   * and q < 1. Rounded toward zero to float, so that f <= q < cap/||g||. */
  double q = cap / sqrt(sq) * CLIP_SHRINK;
  float f = (float)q;
  if ((double)f > q) f = nextafterf(f, 0.0f);
  *post = f > 0.0f ? c2 : 0.0; /* a factor below the least float leaves nothing */
  return f;
}

/* acc[p] += f_t g_t[p] for n <= 4 rows, added in row order: the additions of n separate
 * passes, with one load and store of acc[p] instead of n. */
static inline void add_rows(double *acc, const float *const *g, const double *f, size_t n,
                            size_t P)
{
  if (n == 4) {
    for (size_t p = 0; p < P; p++)
      acc[p] = (((acc[p] + f[0] * (double)g[0][p]) + f[1] * (double)g[1][p]) +
                f[2] * (double)g[2][p]) +
               f[3] * (double)g[3][p];
    return;
  }
  for (size_t t = 0; t < n; t++)
    for (size_t p = 0; p < P; p++) acc[p] += f[t] * (double)g[t][p];
}

/* add_rows for R = 4 or 8 rows in eight-lane AVX-512 vectors (x86-64 CPUs with
 * AVX-512F). Each product f_t g_t[p] is exact in double (two 24-bit significands), so
 * the fused multiply-add rounds once where add_rows' multiplication (exact) and addition
 * (rounded) do: acc[p] gets the same R roundings in the same order, the same bits. Eight
 * rows load and store acc[p] once where two calls of four would twice (acc, 74 KB for
 * the CNN's convolutions, does not fit in L1). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
static inline __attribute__((always_inline, target("avx512f"))) void
add_rows_512(const int R, double *acc, const float *const *g, const double *f, size_t P)
{
  __m512d fv[8];
  for (int t = 0; t < R; t++) fv[t] = _mm512_set1_pd(f[t]);
  size_t p = 0;
  for (; p + 8 <= P; p += 8) {
    __m512d a = _mm512_loadu_pd(acc + p);
#pragma GCC unroll 8
    for (int t = 0; t < R; t++)
      a = _mm512_fmadd_pd(fv[t], _mm512_cvtps_pd(_mm256_loadu_ps(g[t] + p)), a);
    _mm512_storeu_pd(acc + p, a);
  }
  for (int h = 0; h < R; h += 4) {
    const float *tail[4] = {g[h] + p, g[h + 1] + p, g[h + 2] + p, g[h + 3] + p};
    add_rows(acc + p, tail, f + h, 4, P - p);
  }
}
static __attribute__((target("avx512f"))) void add_rows4_512(double *acc, const float *const *g,
                                                             const double *f, size_t P)
{
  add_rows_512(4, acc, g, f, P);
}
static __attribute__((target("avx512f"))) void add_rows8_512(double *acc, const float *const *g,
                                                             const double *f, size_t P)
{
  add_rows_512(8, acc, g, f, P);
}
#endif

/* add_rows for n <= 8 rows in row order: eight or four at a time on the widest vectors
 * the CPU has, the rest one at a time. */
static void add_rows_fast(double *acc, const float *const *g, const double *f, size_t n,
                          size_t P)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (dpgd_gemm_wide()) { /* AVX-512F, and not forced off by a test */
    if (n == 8) {
      add_rows8_512(acc, g, f, P);
      return;
    }
    if (n >= 4) {
      add_rows4_512(acc, g, f, P);
      g += 4, f += 4, n -= 4;
    }
  }
#endif
  for (; n >= 4; g += 4, f += 4, n -= 4) add_rows(acc, g, f, 4, P);
  add_rows(acc, g, f, n, P);
}

DPGD_CLONES void dpgd_accumulate_rows(double *acc, const float *G, const float *scale, size_t B,
                                      size_t P)
{
  const float *g[8];
  double f[8];
  size_t n = 0;
  for (size_t i = 0; i < B; i++) {
    if (scale[i] == 0.0f) continue; /* 0 * NaN would be NaN */
    /* float * float is exact in double: the only rounding is the addition. */
    g[n] = G + i * P;
    f[n++] = scale[i];
    if (n == 8) {
      add_rows_fast(acc, g, f, n, P);
      n = 0;
    }
  }
  add_rows_fast(acc, g, f, n, P);
}

double dpgd_model_sum_error_bound(size_t n)
{
  /* m: a bound on the roundings any term of an output element goes through: at most
   * S + 1 in its leaf of S = min(span, n) indices and ceil(log2 ceil(n/S)) in the
   * reduction tree, together at most n + 1 (SENSITIVITY.md 4); n + 1026 keeps 1025
   * roundings of slack. */
  double m = (double)n + MAX_THREADS + 2.0;
  double mu = m * U_DOUBLE;
  if (!(mu < 0.5)) return INFINITY;
  /* gamma_m = m u / (1 - m u), rounded up: (1 + 4u) covers the two roundings. */
  return mu / (1.0 - mu) * (1.0 + 4.0 * U_DOUBLE);
}

DPGD_CLONES double dpgd_sqnorm_d(const float *v, size_t n)
{
  double s[8] = {0};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t q = 0; q < 8; q++) s[q] += (double)v[j + q] * v[j + q];
  for (; j < n; j++) s[0] += (double)v[j] * v[j];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* Four rows' sqnorm_d at once (x86-64 with AVX): each row's eight partial sums in two
 * four-lane vectors, the same exact products and the same additions in the same order
 * per row, but eight chains of additions in flight instead of two, so the loop is not
 * bound by their latency. */
#if defined(__x86_64__) && defined(__GNUC__)
#define SQ_STEP(r)                                                                             \
  do {                                                                                         \
    const __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(g + (r)*ld + j));                          \
    const __m256d x1 = _mm256_cvtps_pd(_mm_loadu_ps(g + (r)*ld + j + 4));                      \
    s##r##0 = _mm256_add_pd(s##r##0, _mm256_mul_pd(x0, x0));                                   \
    s##r##1 = _mm256_add_pd(s##r##1, _mm256_mul_pd(x1, x1));                                   \
  } while (0)
#define SQ_END(r) sq_finish(out + (r), s##r##0, s##r##1, g + (r)*ld, j, n)
static inline __attribute__((always_inline, target("avx"))) void
sq_finish(double *out, __m256d lo, __m256d hi, const float *v, size_t j, size_t n)
{
  double t[8];
  _mm256_storeu_pd(t, lo);
  _mm256_storeu_pd(t + 4, hi);
  for (; j < n; j++) t[0] += (double)v[j] * v[j];
  *out = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}
static __attribute__((target("avx"))) void sqnorm_d4(double *out, const float *g, size_t ld,
                                                     size_t n)
{
  __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00,
          s30 = s00, s31 = s00;
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    SQ_STEP(0);
    SQ_STEP(1);
    SQ_STEP(2);
    SQ_STEP(3);
  }
  SQ_END(0);
  SQ_END(1);
  SQ_END(2);
  SQ_END(3);
}
#undef SQ_STEP
#undef SQ_END
/* Eight rows at once with each row's eight partial sums in one eight-lane AVX-512
 * vector: the squares are exact in double, so a fused multiply-add rounds as the
 * addition does. */
#define SQ_STEP(r)                                                                             \
  do {                                                                                         \
    const __m512d x = _mm512_cvtps_pd(_mm256_loadu_ps(g + (r)*ld + j));                        \
    s##r = _mm512_fmadd_pd(x, x, s##r);                                                        \
  } while (0)
#define SQ_END(r)                                                                              \
  sq_finish(out + (r), _mm512_castpd512_pd256(s##r), _mm512_extractf64x4_pd(s##r, 1),          \
            g + (r)*ld, j, n)
static __attribute__((target("avx512f"))) void sqnorm_d8_512(double *out, const float *g,
                                                             size_t ld, size_t n)
{
  __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0,
          s7 = s0;
  size_t j = 0;
  for (; j + 8 <= n; j += 8) { /* eight rows: eight chains in flight */
    SQ_STEP(0);
    SQ_STEP(1);
    SQ_STEP(2);
    SQ_STEP(3);
    SQ_STEP(4);
    SQ_STEP(5);
    SQ_STEP(6);
    SQ_STEP(7);
  }
  SQ_END(0);
  SQ_END(1);
  SQ_END(2);
  SQ_END(3);
  SQ_END(4);
  SQ_END(5);
  SQ_END(6);
  SQ_END(7);
}
#undef SQ_STEP
#undef SQ_END
static int have_avx(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
}
#endif

void dpgd_sqnorm_d_rows(double *out, const float *G, size_t ld, size_t B, size_t n)
{
  size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (dpgd_gemm_wide()) /* AVX-512F, and not forced off by a test */
    for (; i + 8 <= B; i += 8) sqnorm_d8_512(out + i, G + i * ld, ld, n);
  if (have_avx())
    for (; i + 4 <= B; i += 4) sqnorm_d4(out + i, G + i * ld, ld, n);
#endif
  for (; i < B; i++) out[i] = dpgd_sqnorm_d(G + i * ld, n);
}

double dpgd_linear_sqnorm(const float *r, const float *x, size_t K, size_t d)
{
  return (dpgd_sqnorm_d(x, d) + 1.0) * dpgd_sqnorm_d(r, K);
}

static size_t round_up(size_t bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

/* Bytes of one thread's block and, when base is non-NULL, the pointers carved from it. */
static size_t carve(chunk_ws *w, char *base, size_t scratch, size_t chunk, size_t d)
{
  size_t off = 0;
#define CARVE(field, type, count)                                                              \
  do {                                                                                         \
    if (base) w->field = (type *)(base + off);                                                 \
    off += round_up((count) * sizeof(type));                                                   \
  } while (0)
  CARVE(scratch, float, scratch);
  CARVE(x, float, chunk *d);
  CARVE(caps, double, chunk);
  CARVE(pre, double, chunk);
  CARVE(post, double, chunk);
  CARVE(idx, size_t, chunk);
  CARVE(y, uint8_t, chunk);
#undef CARVE
  return off;
}

dpgd_grad_ws *dpgd_grad_ws_alloc(const dpgd_model *m, size_t chunk, int threads)
{
  if (!m) {
    DPGD_FAIL(DPGD_EINVAL, "no model given");
    return NULL;
  }
  if (chunk == 0) chunk = m->type->default_chunk;
  if (chunk > MAX_CHUNK) {
    DPGD_FAIL(DPGD_EINVAL, "chunk size %zu is above %d", chunk, MAX_CHUNK);
    return NULL;
  }
  if (threads < 0 || threads > MAX_THREADS) {
    DPGD_FAIL(DPGD_EINVAL, "thread count %d is outside 0..%d", threads, MAX_THREADS);
    return NULL;
  }
#ifdef _OPENMP
  if (threads == 0) threads = omp_get_max_threads();
#else
  threads = 1; /* built without OpenMP: one thread whatever was asked */
#endif
  dpgd_grad_ws *ws = calloc(1, sizeof *ws);
  chunk_ws *pt = calloc((size_t)threads, sizeof *pt);
  size_t scratch = m->type->scratch_floats(m, chunk);
  size_t block = carve(&(chunk_ws){0}, NULL, scratch, chunk, m->d);
  /* malloc plus manual alignment (not posix_memalign), so the tests' wrapped
   * allocator sees and can fail this allocation like every other. */
  void *slab = ws && pt ? malloc(block * (size_t)threads + ALIGN) : NULL;
  if (!slab) {
    free(ws);
    free(pt);
    DPGD_FAIL(DPGD_ENOMEM, "out of memory for the gradient workspace (%d x %zu bytes)", threads,
              block);
    return NULL;
  }
  char *base = (char *)slab + (ALIGN - (uintptr_t)slab % ALIGN) % ALIGN;
  for (int t = 0; t < threads; t++)
    carve(&pt[t], base + (size_t)t * block, scratch, chunk, m->d);
  ws->type = m->type;
  ws->n_params = m->n_params;
  ws->d = m->d;
  ws->chunk = chunk;
  ws->span = dpgd_model_leaf_span(chunk, 1.0); /* a full batch's leaves */
  ws->threads = threads;
  ws->per_thread = pt;
  ws->slab = slab;
  ws->grid_bits = -1;
  return ws;
}

void dpgd_grad_ws_replay_id(const dpgd_grad_ws *ws, char *buf, size_t len)
{
  char *core = openblas_get_corename(), *config = openblas_get_config();
  char span[48] = "";
  if (ws->span != ws->chunk) snprintf(span, sizeof span, "; span %zu", ws->span);
  snprintf(buf, len, "blas %s (%s); row gemm %s; linear sum %s; chunk %zu%s; constant_time %d",
           core ? core : "?", config ? config : "?", dpgd_gemm_kernel(), dpgd_linsum_kernel(),
           ws->chunk, span, ws->constant_time);
}

void dpgd_grad_ws_set_constant_time(dpgd_grad_ws *ws, int on) { ws->constant_time = on != 0; }

void dpgd_grad_ws_free(dpgd_grad_ws *ws)
{
  if (!ws) return;
  free(ws->tree_slab);
  free(ws->grid_slab);
  free(ws->slab);
  free(ws->per_thread);
  free(ws);
}

int dpgd_grad_ws_check(const dpgd_model *m, const dpgd_grad_ws *ws)
{
  if (!m || !ws) return DPGD_FAIL(DPGD_EINVAL, "no model or workspace given");
  if (ws->type != m->type || ws->n_params != m->n_params || ws->d != m->d)
    return DPGD_FAIL(DPGD_EINVAL, "the workspace was allocated for another model");
  return DPGD_OK;
}

int dpgd_model_chunk_step_x(dpgd_model *m, dpgd_grad_ws *ws, double *acc, double *pre,
                            double *post, float *x, const uint8_t *y, const double *caps,
                            size_t B)
{
  int st = dpgd_grad_ws_check(m, ws);
  if (st) return st;
  if (B > ws->chunk)
    return DPGD_FAIL(DPGD_EINVAL, "%zu rows exceed the chunk size %zu", B, ws->chunk);
  int saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
  if (m->type->acc_order) m->type->acc_order(m, acc, 0);
  m->type->chunk_step(m, ws->per_thread[0].scratch, acc, pre, post, x, y, caps, B);
  if (m->type->acc_order) m->type->acc_order(m, acc, 1);
  openblas_set_num_threads(saved);
  return DPGD_OK;
}

/* A skipped row's norms: pre NaN (not computed), post 0 (nothing spent). */
static inline void skip_row(double *pre, double *post, size_t j)
{
  if (pre) pre[j] = NAN;
  if (post) post[j] = 0.0;
}

/* Gathers the rows of [*i, hi) to compute, in index order, until chunk of them are
 * found; returns how many and leaves *i after the last index looked at. */
size_t dpgd_engine_gather(chunk_ws *w, const dpgd_dataset *ds, const double *caps, size_t *i,
                          size_t hi, size_t chunk, double *pre, double *post, int constant_time)
{
  size_t B = 0;
  for (; *i < hi && B < chunk; (*i)++) {
    /* A sampled step's caps are mostly 0: at a skipped row, the run of skipped rows from
     * it eight at a time (a row to compute costs no scan). */
    if (!constant_time && caps[*i] == 0.0) {
      const size_t z = dpgd_zero_prefix8(caps + *i, hi - *i);
      for (size_t j = *i; j < *i + z; j++) skip_row(pre, post, j);
      *i += z;
      if (*i == hi) break;
    }
    /* Constant time: every row is computed, a cap of 0 makes its contribution 0. */
    if (caps[*i] > 0.0 || constant_time) {
      w->idx[B] = *i;
      w->y[B] = ds->labels[*i];
      w->caps[B] = caps[*i];
      B++;
    } else {
      skip_row(pre, post, *i);
    }
  }
  return B;
}

/* Gradient points [lo, hi) (dpgd_dataset's fixed rows): g_i = s_i v e_{k_i} (s_i the
 * row's sign, +1 without fixed_sign), ||g_i||^2 = v^2 exactly (a float squared is exact
 * in double); the clipping rule and the accumulation in index order are those of every
 * row. */
static void fixed_rows(const dpgd_model *m, double *acc, const dpgd_dataset *ds,
                       const double *caps, size_t lo, size_t hi, double *pre, double *post,
                       int constant_time)
{
  const double v = ds->fixed_value;
  for (size_t i = lo; i < hi; i++) {
    if (!(caps[i] > 0.0 || constant_time)) {
      if (pre) pre[i] = NAN;
      if (post) post[i] = 0.0;
      continue;
    }
    double pr, po;
    float f = dpgd_clip_scale(v * v, caps[i], m->n_params, &pr, &po);
    if (pre) pre[i] = pr;
    if (post) post[i] = po;
    if (f != 0.0f)
      acc[ds->fixed_coord[i - ds->fixed_from]] +=
          (double)f * (double)dpgd_data_fixed_value(ds, i);
  }
}

void dpgd_engine_run_leaf(const dpgd_model *m, chunk_ws *w, double *acc, const dpgd_dataset *ds,
                          const double *caps, size_t lo, size_t hi, size_t chunk, double *pre,
                          double *post, int constant_time)
{
  if (ds->fixed_coord && ds->fixed_from < hi) {
    size_t split = ds->fixed_from > lo ? ds->fixed_from : lo;
    dpgd_dataset images = *ds; /* the rows before fixed_from: images */
    images.fixed_coord = NULL;
    dpgd_engine_run_leaf(m, w, acc, &images, caps, lo, split, chunk, pre, post, constant_time);
    fixed_rows(m, acc, ds, caps, split, hi, pre, post, constant_time);
    return;
  }
  /* acc in the type's own order (acc_order) from before the first chunk to after the
   * last: a leaf whose rows are all skipped leaves it alone. */
  int ordered = 0;
  for (size_t i = lo; i < hi;) {
    size_t start = i,
           B = dpgd_engine_gather(w, ds, caps, &i, hi, chunk, pre, post, constant_time);
    if (B == 0) continue; /* then i == hi */
    if (B == i - start) dpgd_data_unpack(w->x, ds, start, B);
    else dpgd_data_unpack_idx(w->x, ds, w->idx, B);
    if (!ordered && m->type->acc_order) {
      m->type->acc_order(m, acc, 0);
      ordered = 1;
    }
    m->type->chunk_step(m, w->scratch, acc, w->pre, w->post, w->x, w->y, w->caps, B);
    for (size_t b = 0; b < B; b++) {
      if (pre) pre[w->idx[b]] = w->pre[b];
      if (post) post[w->idx[b]] = w->post[b];
    }
  }
  if (ordered) m->type->acc_order(m, acc, 1);
}
