/* reduce.c -- dpgd_model_clipped_grad_sum and dpgd_model_clipped_grad_nodes: leaves of
 * the dataset (ws->span indices each) on OpenMP threads, each thread summing the maximal
 * tree nodes of its contiguous range of leaves, and the node sums combined as the tree adds them (tree.c).
 * The result has the same bits for any thread count, and for any split of the chunks
 * among processes that combine their node sums the same way (train/MPI.md). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "model_internal.h"
#include "vec4.h"

#define MAX_THREADS 1024

int dpgd_grad_ws_reserve(dpgd_grad_ws *ws, size_t n)
{
  if (!ws) return DPGD_FAIL(DPGD_EINVAL, "no workspace given");
  unsigned L = dpgd_tree_levels((n + ws->span - 1) / ws->span);
  if (ws->tree_slab && L <= ws->tree_levels) return DPGD_OK;
  size_t T = (size_t)ws->threads, P = ws->n_params;
  size_t vecs = T * (2 * (size_t)L + 1) + T * L;
  double *slab = vecs <= SIZE_MAX / sizeof(double) / (P ? P : 1)
                     ? malloc(vecs * (P ? P : 1) * sizeof(double))
                     : NULL;
  if (!slab)
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory for the reduction tree (%zu x %zu doubles)",
                     vecs, P);
  free(ws->tree_slab);
  ws->tree_slab = slab;
  ws->tree_levels = L;
  ws->nodes = slab;
  for (size_t t = 0; t < T; t++) ws->per_thread[t].tmp = slab + (T * (2 * L + 1) + t * L) * P;
  return DPGD_OK;
}

/* What every node sum of one call reads. */
typedef struct {
  const dpgd_model *m;
  const dpgd_dataset *ds;
  const double *caps;
  double *pre, *post;
  size_t nc, span, chunk, P;
  int constant_time;
} reduce_job;

/* out[p] += tmp[p]: one addition per element, so the AVX2 clone has the same bits. */
DPGD_CLONES static void add_into(double *out, const double *tmp, size_t P)
{
  for (size_t p = 0; p < P; p++) out[p] += tmp[p];
}

/* The sum of node (lo, level) into out: a leaf is its span's clipped sum from zero; any
 * other node its left child's sum plus its right child's (summed into w->tmp[level-1],
 * which the right child's own recursion leaves alone: it uses lower levels only). */
static void node_sum(const reduce_job *j, chunk_ws *w, size_t lo, unsigned level, double *out)
{
  if (level == 0) {
    memset(out, 0, j->P * sizeof(double));
    size_t a = lo * j->span, b = j->ds->n - a > j->span ? a + j->span : j->ds->n;
    dpgd_engine_run_leaf(j->m, w, out, j->ds, j->caps, a, b, j->chunk, j->pre, j->post,
                         j->constant_time);
    return;
  }
  size_t mid = lo + ((size_t)1 << (level - 1));
  node_sum(j, w, lo, level - 1, out);
  if (mid >= j->nc) return; /* no right child */
  double *tmp = w->tmp + (size_t)(level - 1) * j->P;
  node_sum(j, w, mid, level - 1, tmp);
  add_into(out, tmp, j->P);
}

/* Thread t of nt: its share of [c0, c1), and the slot of its first node. */
static void thread_share(size_t c0, size_t c1, size_t nc, size_t t, size_t nt, size_t *a,
                         size_t *b, size_t *off)
{
  *off = 0;
  for (size_t u = 0; u < t; u++)
    *off += dpgd_tree_cover(NULL, nc, c0 + (c1 - c0) * u / nt, c0 + (c1 - c0) * (u + 1) / nt);
  *a = c0 + (c1 - c0) * t / nt;
  *b = c0 + (c1 - c0) * (t + 1) / nt;
}

/* The maximal nodes of [c0, c1) into ws->nodes[0 .. *k). */
static int reduce_range(const reduce_job *j, dpgd_grad_ws *ws, size_t c0, size_t c1, size_t *k)
{
  int used = 1;
  int saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
#ifdef _OPENMP
#pragma omp parallel num_threads(ws->threads)
#endif
  {
    size_t t = 0, nt = 1;
#ifdef _OPENMP
    t = (size_t)omp_get_thread_num();
    nt = (size_t)omp_get_num_threads();
    if (t == 0) used = (int)nt;
#endif
    size_t a, b, off;
    thread_share(c0, c1, j->nc, t, nt, &a, &b, &off);
    dpgd_tree_node list[DPGD_TREE_MAX_NODES];
    size_t kt = dpgd_tree_cover(list, j->nc, a, b);
    for (size_t i = 0; i < kt; i++)
      node_sum(j, &ws->per_thread[t], list[i].lo, list[i].level, ws->nodes + (off + i) * j->P);
  }
  openblas_set_num_threads(saved);
  size_t bounds[MAX_THREADS + 1], slots = 0;
  for (size_t t = 0; t <= (size_t)used; t++) bounds[t] = c0 + (c1 - c0) * t / (size_t)used;
  for (size_t t = 0; t < (size_t)used; t++)
    slots += dpgd_tree_cover(NULL, j->nc, bounds[t], bounds[t + 1]);
  return dpgd_model_tree_combine(ws->nodes, slots, j->P, j->nc, bounds, (size_t)used, k);
}

/* Checks the arguments of one call over the examples of leaves [c0, c1). */
static int check_call(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                      const double *caps, const double *out, size_t c0, size_t c1)
{
  int st = dpgd_grad_ws_check(m, ws);
  if (!st) st = dpgd_model_check_dataset(m, ds);
  if (st) return st;
  if (!caps || !out) return DPGD_FAIL(DPGD_EINVAL, "no caps or output sum given");
  size_t nc = (ds->n + ws->span - 1) / ws->span;
  if (c0 > c1 || c1 > nc)
    return DPGD_FAIL(DPGD_EINVAL, "leaf range [%zu, %zu) is not within the %zu leaves", c0, c1,
                     nc);
  size_t lo = c0 * ws->span, hi = c1 < nc ? c1 * ws->span : ds->n;
  /* Branch-free scans first (they vectorise: every step checks all n), the culprit only
   * then. */
  int ok = 1;
  for (size_t i = lo; i < hi; i++) ok &= caps[i] >= 0.0; /* false for NaN */
  for (size_t i = lo; !ok && i < hi; i++)
    if (!(caps[i] >= 0.0))
      return DPGD_FAIL(DPGD_EINVAL, "cap of example %zu is %g; caps must be >= 0", i, caps[i]);
  const unsigned K = (unsigned)m->n_classes;
  for (size_t i = lo; i < hi; i++) ok &= ds->labels[i] < K;
  for (size_t i = lo; !ok && i < hi; i++)
    if (ds->labels[i] >= K)
      return DPGD_FAIL(DPGD_EINVAL, "label %u of example %zu is outside 0..%d", ds->labels[i],
                       i, m->n_classes - 1);
  return dpgd_grad_ws_reserve(ws, ds->n);
}

int dpgd_model_clipped_grad_nodes(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                  const double *caps, size_t c0, size_t c1, double *nodes,
                                  double *sqnorm_pre, double *sqnorm_post)
{
  int st = check_call(m, ws, ds, caps, nodes, c0, c1);
  if (st) return st;
  reduce_job j = {m,           ds,
                  caps,        sqnorm_pre,
                  sqnorm_post, (ds->n + ws->span - 1) / ws->span,
                  ws->span,    ws->chunk,
                  m->n_params, ws->constant_time};
  size_t k = 0;
  if (c0 < c1) st = reduce_range(&j, ws, c0, c1, &k);
  if (!st) memcpy(nodes, ws->nodes, k * j.P * sizeof(double));
  return st;
}

int dpgd_model_clipped_grad_sum(dpgd_model *m, dpgd_grad_ws *ws, const dpgd_dataset *ds,
                                const double *caps, double *sum, double *sqnorm_pre,
                                double *sqnorm_post)
{
  int st = ds && ws ? DPGD_OK : DPGD_FAIL(DPGD_EINVAL, "no dataset or workspace given");
  size_t nc = st ? 0 : (ds->n + ws->span - 1) / ws->span;
  if (!st) st = check_call(m, ws, ds, caps, sum, 0, nc);
  if (st) return st;
  reduce_job j = {m,  ds,       caps,      sqnorm_pre,  sqnorm_post,
                  nc, ws->span, ws->chunk, m->n_params, ws->constant_time};
  size_t k = 0;
  if (nc > 0) st = reduce_range(&j, ws, 0, nc, &k);
  if (st) return st;
  /* The whole range is the root's: one node (none for an empty dataset). */
  if (k == 1) memcpy(sum, ws->nodes, j.P * sizeof(double));
  else memset(sum, 0, j.P * sizeof(double));
  return DPGD_OK;
}
