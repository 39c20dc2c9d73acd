/* tree.c -- the canonical reduction tree over chunk indices (SENSITIVITY.md 4): which
 * nodes cover a range of chunks, and how the node sums of a partition of a range combine
 * into the sums of that range's own nodes, adding exactly what the tree adds. Whoever
 * computes a node (a thread, an MPI rank), its sum has the same bits. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model_internal.h"

unsigned dpgd_tree_levels(size_t nc)
{
  unsigned L = 0;
  while (L < 63 && ((size_t)1 << L) < nc) L++;
  return L;
}

/* The chunks of node (lo, level) clipped to the nc chunks: [lo, *hi). */
static size_t node_hi(size_t lo, unsigned level, size_t nc)
{
  size_t span = (size_t)1 << level;
  return nc - lo > span ? lo + span : nc;
}

/* Appends the maximal nodes of [c0, c1) under node (lo, level) to out (when non-NULL)
 * from index k on, left to right; returns the new count. */
static size_t cover(dpgd_tree_node *out, size_t k, size_t lo, unsigned level, size_t nc,
                    size_t c0, size_t c1)
{
  if (lo >= nc) return k; /* an empty right child */
  size_t hi = node_hi(lo, level, nc);
  if (hi <= c0 || lo >= c1) return k;
  if (c0 <= lo && hi <= c1) {
    if (out) out[k] = (dpgd_tree_node){lo, level};
    return k + 1;
  }
  /* Partly inside: not a leaf (a leaf is one chunk), so level >= 1. */
  k = cover(out, k, lo, level - 1, nc, c0, c1);
  return cover(out, k, lo + ((size_t)1 << (level - 1)), level - 1, nc, c0, c1);
}

size_t dpgd_tree_cover(dpgd_tree_node *out, size_t nc, size_t c0, size_t c1)
{
  if (c1 > nc) c1 = nc;
  if (c0 >= c1) return 0;
  return cover(out, 0, 0, dpgd_tree_levels(nc), nc, c0, c1);
}

size_t dpgd_model_tree_count(size_t n_chunks, size_t c0, size_t c1)
{
  return dpgd_tree_cover(NULL, n_chunks, c0, c1);
}

typedef struct {
  double *nodes; /* (slots, P) */
  size_t P, nc, k, next, slots;
  const size_t *bounds; /* (k + 1) the partition */
} fold_ctx;

/* The part (index into bounds) that holds chunk c: the last s with bounds[s] <= c. */
static size_t part_of(const fold_ctx *f, size_t c)
{
  size_t a = 0, b = f->k; /* bounds[a] <= c < bounds[b] */
  while (b - a > 1) {
    size_t mid = a + (b - a) / 2;
    if (f->bounds[mid] <= c) a = mid;
    else b = mid;
  }
  return a;
}

/* The slot that holds the sum of node (lo, level), which lies inside the partitioned
 * range: a node inside one part is that part's next maximal node (the parts' lists are
 * consumed left to right); any other node is its left child's sum plus its right
 * child's, added into the left's slot. SIZE_MAX when the slots run out. */
static size_t fold(fold_ctx *f, size_t lo, unsigned level)
{
  size_t hi = node_hi(lo, level, f->nc);
  if (hi <= f->bounds[part_of(f, lo) + 1]) return f->next < f->slots ? f->next++ : SIZE_MAX;
  size_t a = fold(f, lo, level - 1);
  size_t mid = lo + ((size_t)1 << (level - 1));
  if (a == SIZE_MAX || mid >= f->nc) return a;
  size_t b = fold(f, mid, level - 1);
  if (b == SIZE_MAX) return b;
  double *x = f->nodes + a * f->P;
  const double *y = f->nodes + b * f->P;
  for (size_t p = 0; p < f->P; p++) x[p] += y[p];
  return a;
}

int dpgd_model_tree_combine(double *nodes, size_t slots, size_t P, size_t n_chunks,
                            const size_t *bounds, size_t k, size_t *n_out)
{
  if (!nodes || !bounds || k == 0)
    return DPGD_FAIL(DPGD_EINVAL, "tree combine: no nodes or no partition given");
  for (size_t s = 0; s < k; s++)
    if (bounds[s] > bounds[s + 1] || bounds[s + 1] > n_chunks)
      return DPGD_FAIL(DPGD_EINVAL, "tree combine: the partition of %zu chunks is not ordered",
                       n_chunks);
  dpgd_tree_node top[DPGD_TREE_MAX_NODES];
  size_t nt = dpgd_tree_cover(top, n_chunks, bounds[0], bounds[k]);
  fold_ctx f = {nodes, P, n_chunks, k, 0, slots, bounds};
  for (size_t j = 0; j < nt; j++) {
    size_t a = fold(&f, top[j].lo, top[j].level);
    if (a == SIZE_MAX)
      return DPGD_FAIL(DPGD_EINVAL, "tree combine: %zu node sums given, the partition has more",
                       slots);
    /* a >= j, and later nodes' slots lie above a: moving down overwrites nothing live. */
    if (a != j) memcpy(nodes + j * P, nodes + a * P, P * sizeof(double));
  }
  if (f.next != slots)
    return DPGD_FAIL(DPGD_EINVAL, "tree combine: %zu node sums given, the partition has %zu",
                     slots, f.next);
  *n_out = nt;
  return DPGD_OK;
}
