/* intsum.c -- secure mode's clipped sum in integers (model/SENSITIVITY.md 8): every
 * example's whole gradient formed in float (the type's chunk_rows), clipped by the
 * engine's rule, rounded toward zero onto the public grid 2^-F, its squared norm checked
 * exactly in integers against the cap, and the rows summed exactly in int64: the sum
 * depends on no order, thread count or partition, and one example moves it by exactly
 * its own row. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <cblas.h>

#include "model_internal.h"
#include "vec4.h"

typedef unsigned __int128 u128;

#define ALIGN 64
/* |sum| per coordinate stays at most 2^62: room for the noise below 2^63. */
#define SUM_MAX ((u128)1 << 62)

void dpgd_outer_rows(float *out, size_t ld, const float *r, const float *x, size_t B, size_t K,
                     size_t d)
{
  for (size_t i = 0; i < B; i++) {
    float *o = out + i * ld;
    const float *ri = r + i * K, *xi = x + i * d;
    for (size_t k = 0; k < K; k++)
      for (size_t j = 0; j < d; j++) o[k * d + j] = ri[k] * xi[j];
    memcpy(o + K * d, ri, K * sizeof(float));
  }
}

int dpgd_model_grid_bits(size_t n, double clip, double noise_std, int *bits)
{
  if (!bits || n == 0 || !(clip > 0) || !isfinite(clip) || !(noise_std > 0) ||
      !isfinite(noise_std))
    return DPGD_FAIL(DPGD_EINVAL,
                     "grid: n %zu, clip %g and noise std %g must be > 0 and finite", n, clip,
                     noise_std);
  /* The largest F with n C 2^F <= 2^62, std 2^F <= 2^30 and C 2^F < 2^26, padded by
   * 2^-20 against the rounding of the quotients (dpgd_model_clipped_grad_sum_int checks
   * the first exactly). */
  double t1 = 0x1p62 / ((double)n * clip) * (1 - 0x1p-20), t2 = 0x1p30 / noise_std;
  double t3 = 0x1p26 / clip * (1 - 0x1p-20);
  double t = t1 < t2 ? t1 : t2;
  if (t3 < t) t = t3;
  int e = DPGD_GRID_MAX_BITS + 1;
  if (isfinite(t)) frexp(t, &e); /* t = f 2^e, f in [1/2, 1): floor(log2 t) = e - 1 */
  if (e - 1 < 0)
    return DPGD_FAIL(DPGD_ERANGE,
                     "grid: %zu examples of norm %g with noise std %g leave no integer grid "
                     "(n C, the noise std and C must stay below 2^62, 2^30 and 2^26)",
                     n, clip, noise_std);
  *bits = e - 1 > DPGD_GRID_MAX_BITS ? DPGD_GRID_MAX_BITS : e - 1;
  return DPGD_OK;
}

int dpgd_grad_ws_set_grid(dpgd_grad_ws *ws, int bits)
{
  if (!ws) return DPGD_FAIL(DPGD_EINVAL, "no workspace given");
  if (!ws->type->chunk_rows)
    return DPGD_FAIL(DPGD_EINVAL, "model %s has no integer sum (secure mode)", ws->type->name);
  if (bits < 0 || bits > DPGD_GRID_MAX_BITS)
    return DPGD_FAIL(DPGD_EINVAL, "grid 2^-%d: F must lie in 0..%d", bits, DPGD_GRID_MAX_BITS);
  if (!ws->grid_slab) {
    size_t P = ws->n_params, T = (size_t)ws->threads;
    size_t fl = (ws->chunk * P * sizeof(float) + ALIGN - 1) / ALIGN * ALIGN;
    size_t block = fl + 2 * ((P * sizeof(int64_t) + ALIGN - 1) / ALIGN * ALIGN);
    char *slab = malloc(block * T + ALIGN);
    if (!slab)
      return DPGD_FAIL(DPGD_ENOMEM, "out of memory for the integer sum (%zu x %zu bytes)", T,
                       block);
    char *base = slab + (ALIGN - (uintptr_t)slab % ALIGN) % ALIGN;
    for (size_t t = 0; t < T; t++) {
      ws->per_thread[t].rows = (float *)(base + t * block);
      ws->per_thread[t].iacc = (int64_t *)(base + t * block + fl);
    }
    ws->grid_slab = slab;
  }
  ws->grid_bits = bits;
  return DPGD_OK;
}

int dpgd_grad_ws_grid(const dpgd_grad_ws *ws) { return ws ? ws->grid_bits : -1; }

u128 dpgd_grid_cap2(double cap, int F)
{
  double c2 = cap * cap;
  if (fma(cap, cap, -c2) < 0) c2 = nextafter(c2, 0.0); /* rounded down: c2 <= cap^2 */
  if (!(c2 > 0)) return 0;
  int e;
  double fr = frexp(c2, &e); /* c2 = m 2^(e - 53), m a 53-bit integer */
  u128 m = (u128)(uint64_t)ldexp(fr, 53);
  int s = e - 53 + 2 * F;
  if (s >= 0) return s < 74 ? m << s : (u128)-1; /* beyond the preconditions */
  return s > -128 ? m >> -s : 0;
}

/* ||v||^2 if it is at most lim, else lim + 1 (the running sum stays below 2^126). */
static u128 norm2_capped(const int64_t *v, size_t len, u128 lim)
{
  u128 s = 0;
  for (size_t p = 0; p < len; p++) {
    uint64_t a = v[p] < 0 ? -(uint64_t)v[p] : (uint64_t)v[p];
    s += (u128)a * a;
    if (s > lim) return lim + 1;
  }
  return s;
}

/* One coordinate: f g 2^F (exact: f g has 48 bits, 2^F is a power of two) clamped to
 * [-lim, lim] and truncated toward zero. */
static inline int64_t grid_coord(float f, float g, double scale, double lim)
{
  double t = (double)f * (double)g * scale;
  t = t > lim ? lim : t < -lim ? -lim : t;
  return (int64_t)t;
}

/* s (< 2^126) times 2^-2F rounded up to a double (the ledger's charge): c2 2^-2F is a
 * double, so the rounded-up value stays at most it when s <= c2. */
static double charge_up(u128 s, int F)
{
  if (s == 0) return 0.0;
  double d = (double)s;
  if ((u128)d < s) d = nextafter(d, INFINITY);
  return ldexp(d, -2 * F);
}

u128 dpgd_grid_row(int64_t *v, const float *g, size_t len, double sq, double cap, size_t P,
                   int F, double *pre, double *post)
{
  double dummy;
  const float f = dpgd_clip_scale(sq, cap, P, pre, &dummy);
  *post = 0.0;
  if (f == 0.0f) { /* also a NaN row: 0 * NaN is never formed */
    memset(v, 0, len * sizeof *v);
    return 0;
  }
  /* |v[p]| <= floor(cap 2^F): a coordinate beyond it would break the norm anyway. */
  const double scale = ldexp(1.0, F), lim = floor(cap * scale);
  for (size_t p = 0; p < len; p++) v[p] = grid_coord(f, g[p], scale, lim);
  const u128 c2 = dpgd_grid_cap2(cap, F);
  u128 s;
  while ((s = norm2_capped(v, len, c2)) > c2) /* never taken when clip_scale holds */
    for (size_t p = 0; p < len; p++) v[p] /= 2;
  *post = charge_up(s, F);
  return s;
}

/* grid_row_add's loop when lim < 2^26: every coordinate fits in 27 bits, its square in
 * 52, so a block of 2048 squares sums exactly in int64 (below 2^63) and the loop
 * vectorises (double to int32 truncation, 32-bit products, 64-bit sums). Returns the
 * exact squared norm, or c2 + 1 as soon as a block's end finds it above c2 (then
 * [0, *done) was added). */
DPGD_CLONES static u128 round_add_small(int64_t *acc, const float *g, size_t len, float f,
                                        double scale, double lim, u128 c2, size_t *done)
{
  u128 s = 0;
  for (size_t p = 0; p < len; p += 2048) {
    size_t e = len - p > 2048 ? p + 2048 : len;
    int64_t b = 0;
    for (size_t q = p; q < e; q++) {
      double t = (double)f * (double)g[q] * scale;
      t = t > lim ? lim : t < -lim ? -lim : t;
      int32_t v = (int32_t)t;
      acc[q] += v;
      b += (int64_t)v * v;
    }
    s += (u128)b;
    *done = e;
    if (s > c2) return c2 + 1;
  }
  return s;
}

/* The same for any lim (< 2^62): 128-bit squares, checked every 8 coordinates (the
 * running norm stays below c2 + 8 2^124 < 2^128). */
static u128 round_add_big(int64_t *acc, const float *g, size_t len, float f, double scale,
                          double lim, u128 c2, size_t *done)
{
  u128 s = 0;
  for (size_t p = 0; p < len; p += 8) {
    size_t e = len - p > 8 ? p + 8 : len;
    for (size_t q = p; q < e; q++) {
      int64_t v = grid_coord(f, g[q], scale, lim);
      uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v;
      acc[q] += v;
      s += (u128)a * a;
    }
    *done = e;
    if (s > c2) return c2 + 1;
  }
  return s;
}

void dpgd_grid_row_add(int64_t *acc, int64_t *irow, const float *g, size_t len, double sq,
                       double cap, size_t P, int F, double *post)
{
  double pre, dummy;
  const float f = dpgd_clip_scale(sq, cap, P, &pre, &dummy);
  *post = 0.0;
  if (f == 0.0f) return;
  const double scale = ldexp(1.0, F), lim = floor(cap * scale);
  const u128 c2 = dpgd_grid_cap2(cap, F);
  size_t done = 0;
  u128 s = lim < 0x1p26 ? round_add_small(acc, g, len, f, scale, lim, c2, &done)
                        : round_add_big(acc, g, len, f, scale, lim, c2, &done);
  if (s > c2) {
    for (size_t q = 0; q < done; q++) acc[q] -= grid_coord(f, g[q], scale, lim);
    if (dpgd_grid_row(irow, g, len, sq, cap, P, F, &pre, post))
      for (size_t q = 0; q < len; q++) acc[q] += irow[q];
    return;
  }
  *post = charge_up(s, F);
}

/* Adds row v into acc. */
static void add_row(int64_t *acc, const int64_t *v, size_t P)
{
  for (size_t p = 0; p < P; p++) acc[p] += v[p];
}

/* Examples [lo, hi) into w->iacc: gathered and computed as dpgd_engine_run_leaf does
 * (rows with cap 0 skipped unless constant time), each row onto the grid and added. */
static void leaf_int(const dpgd_model *m, chunk_ws *w, int64_t *irow, const dpgd_dataset *ds,
                     const double *caps, size_t lo, size_t hi, size_t chunk, int F,
                     double *post, int constant_time)
{
  const size_t P = m->n_params;
  double pre;
  if (ds->fixed_coord && ds->fixed_from < hi) { /* rows v e_k: one coordinate each */
    size_t split = ds->fixed_from > lo ? ds->fixed_from : lo;
    dpgd_dataset images = *ds;
    images.fixed_coord = NULL;
    leaf_int(m, w, irow, &images, caps, lo, split, chunk, F, post, constant_time);
    for (size_t i = split; i < hi; i++) {
      double po = 0.0, v = ds->fixed_value;
      if (caps[i] > 0.0 || constant_time) {
        int64_t t;
        const float g = dpgd_data_fixed_value(ds, i);
        dpgd_grid_row(&t, &g, 1, v * v, caps[i], P, F, &pre, &po);
        w->iacc[ds->fixed_coord[i - ds->fixed_from]] += t;
      }
      if (post) post[i] = po;
    }
    return;
  }
  for (size_t i = lo; i < hi;) {
    size_t start = i,
           B = dpgd_engine_gather(w, ds, caps, &i, hi, chunk, NULL, post, constant_time);
    if (B == 0) continue;
    if (B == i - start) dpgd_data_unpack(w->x, ds, start, B);
    else dpgd_data_unpack_idx(w->x, ds, w->idx, B);
    m->type->chunk_rows(m, w->scratch, w->rows, w->x, w->y, B);
    for (size_t b = 0; b < B; b++) {
      const float *g = w->rows + b * P;
      double po;
      dpgd_grid_row_add(w->iacc, irow, g, P, dpgd_sqnorm_d(g, P), w->caps[b], P, F, &po);
      if (post) post[w->idx[b]] = po;
    }
  }
}

/* Checks the caps and that the sum cannot overflow: sum_i floor(cap_i 2^F) <= 2^62
 * bounds every partial sum of every coordinate (|v_i[p]| <= ||v_i|| <= cap_i 2^F). */
static int check_int_call(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                          const double *caps, const int64_t *sum)
{
  int st = dpgd_grad_ws_check(m, ws);
  if (!st) st = dpgd_model_check_dataset(m, ds);
  if (st) return st;
  if (!caps || !sum) return DPGD_FAIL(DPGD_EINVAL, "no caps or output sum given");
  if (ws->grid_bits < 0 || !ws->grid_slab)
    return DPGD_FAIL(DPGD_EINVAL, "integer sum: no grid set (dpgd_grad_ws_set_grid)");
  for (size_t i = 0; i < ds->n; i++)
    if (ds->labels[i] >= m->n_classes)
      return DPGD_FAIL(DPGD_EINVAL, "label %u of example %zu is outside 0..%d", ds->labels[i],
                       i, m->n_classes - 1);
  return dpgd_grid_caps_fit(caps, ds->n, ws->grid_bits);
}

int dpgd_grid_caps_fit(const double *caps, size_t n, int F)
{
  u128 bound = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(caps[i] >= 0.0) || !isfinite(caps[i]))
      return DPGD_FAIL(DPGD_EINVAL,
                       "cap of example %zu is %g; the integer sum needs finite "
                       "caps >= 0",
                       i, caps[i]);
    double c = floor(ldexp(caps[i], F));
    bound += c < 0x1p63 ? (u128)(uint64_t)c : SUM_MAX + 1;
    if (bound > SUM_MAX)
      return DPGD_FAIL(DPGD_ERANGE,
                       "integer sum: the caps in units of 2^-%d add up past 2^62 (a "
                       "coordinate could overflow); use a coarser grid",
                       F);
  }
  return DPGD_OK;
}

int dpgd_model_clipped_grad_sum_int(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                    const double *caps, int64_t *sum, double *sqnorm_post)
{
  int st = ds && ws ? DPGD_OK : DPGD_FAIL(DPGD_EINVAL, "no dataset or workspace given");
  if (!st) st = check_int_call(m, ws, ds, caps, sum);
  if (st) return st;
  const size_t P = m->n_params, span = ws->span, nb = (ds->n + span - 1) / span;
  int used = 1, saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
#ifdef _OPENMP
#pragma omp parallel num_threads(ws->threads)
#endif
  {
    size_t t = 0;
#ifdef _OPENMP
    t = (size_t)omp_get_thread_num();
    if (t == 0) used = omp_get_num_threads();
#endif
    chunk_ws *w = &ws->per_thread[t];
    int64_t *irow = w->iacc + (P + 7) / 8 * 8;
    memset(w->iacc, 0, P * sizeof(int64_t));
    /* Any schedule: integer addition is exact, so the sum does not depend on it. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (size_t b = 0; b < nb; b++) {
      size_t lo = b * span, hi = ds->n - lo > span ? lo + span : ds->n;
      leaf_int(m, w, irow, ds, caps, lo, hi, ws->chunk, ws->grid_bits, sqnorm_post,
               ws->constant_time);
    }
  }
  openblas_set_num_threads(saved);
  memset(sum, 0, P * sizeof(int64_t));
  for (int t = 0; t < used; t++) add_row(sum, ws->per_thread[t].iacc, P);
  return DPGD_OK;
}
