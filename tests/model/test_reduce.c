/* test_reduce.c -- the reduction tree of the clipped sum (model/reduce.c, model/tree.c,
 * SENSITIVITY.md 4): the sum has the same bits for 1, 2 and 3 threads; it is the chunk
 * sums added bottom-up in the tree, computed here independently from the leaves; node
 * sums of any partition of the chunks (what MPI ranks send) combine to the same bits;
 * the cover of a range is aligned, exact and maximal; bad partitions are refused. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "data/testutil.h"
#include "model_internal.h"
#include "mtest.h"

typedef struct {
  dpgd_model *m;
  dpgd_dataset *ds;
  double *caps;
  size_t n, P, chunk, nc;
} fx;

/* A model of type t on n synthetic examples; caps of high entropy, some 0 (skipped)
 * and some +inf (unclipped). */
static fx make(const dpgd_model_type *t, size_t side, int K, size_t n, size_t chunk)
{
  fx f = {0};
  f.m = dpgd_model_alloc(t, DPGD_ACT_TANH, side, side, K);
  assert_non_null(f.m);
  dpgd_model_init(f.m, 2385);
  f.ds = mt_synthetic(n, side, side, K, 11);
  f.n = n;
  f.P = dpgd_model_n_params(f.m);
  f.chunk = chunk;
  f.nc = (n + chunk - 1) / chunk;
  f.caps = malloc(n * sizeof *f.caps);
  assert_non_null(f.caps);
  uint64_t s = 77;
  for (size_t i = 0; i < n; i++) {
    double u = tu_urand(&s);
    f.caps[i] = u < 0.1 ? 0.0 : u < 0.2 ? INFINITY : 0.013 + 2.385 * u;
  }
  return f;
}

static void drop(fx *f)
{
  dpgd_model_free(f->m);
  dpgd_data_free(f->ds);
  free(f->caps);
}

/* The full sum and the post norms with `threads` threads. */
static void full_sum(fx *f, int threads, double *sum, double *post)
{
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, f->chunk, threads);
  assert_non_null(ws);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, f->caps, sum, NULL, post), 0);
  dpgd_grad_ws_free(ws);
}

/* 1, 2, 3 threads and the OpenMP default: identical bits, sums and norms. */
static void check_threads(fx *f)
{
  double *ref = malloc(f->P * sizeof(double)), *sum = malloc(f->P * sizeof(double));
  double *pr = malloc(f->n * sizeof(double)), *po = malloc(f->n * sizeof(double));
  full_sum(f, 1, ref, pr);
  static const int threads[] = {2, 3, 0};
  for (size_t k = 0; k < 3; k++) {
    memset(sum, 0xff, f->P * sizeof(double));
    full_sum(f, threads[k], sum, po);
    if (memcmp(sum, ref, f->P * sizeof(double)))
      fail_msg("%d threads: the sum differs from 1 thread's", threads[k]);
    assert_memory_equal(po, pr, f->n * sizeof(double));
  }
  free(ref);
  free(sum);
  free(pr);
  free(po);
}

/* Each chunk's sum alone (a one-chunk range is one leaf), then the tree bottom-up:
 * level l + 1 holds v[2j] + v[2j + 1], or v[2j] when 2j + 1 is past the end. */
static void check_bottom_up(fx *f)
{
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, f->chunk, 1);
  assert_non_null(ws);
  double *v = malloc(f->nc * f->P * sizeof(double)), *sum = malloc(f->P * sizeof(double));
  assert_non_null(v);
  for (size_t c = 0; c < f->nc; c++) {
    assert_int_equal(dpgd_model_tree_count(f->nc, c, c + 1), 1);
    assert_int_equal(dpgd_model_clipped_grad_nodes(f->m, ws, f->ds, f->caps, c, c + 1,
                                                   v + c * f->P, NULL, NULL),
                     0);
  }
  for (size_t len = f->nc; len > 1; len = (len + 1) / 2)
    for (size_t j = 0; j < len; j += 2) {
      double *out = v + (j / 2) * f->P;
      const double *a = v + j * f->P, *b = v + (j + 1) * f->P;
      for (size_t p = 0; p < f->P; p++) out[p] = j + 1 < len ? a[p] + b[p] : a[p];
    }
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, f->caps, sum, NULL, NULL), 0);
  assert_memory_equal(sum, v, f->P * sizeof(double));
  dpgd_grad_ws_free(ws);
  free(v);
  free(sum);
}

/* k parts (random bounds, empty parts allowed), each computed by its own workspace with
 * 1 + s % 3 threads, combined: the full sum's bits, and the same post norms. */
static void check_partition(fx *f, size_t k, uint64_t *rs, const double *ref,
                            const double *post_ref)
{
  size_t bounds[8] = {0};
  bounds[k] = f->nc;
  for (size_t s = 1; s < k; s++) bounds[s] = (size_t)(tu_urand(rs) * (double)(f->nc + 1));
  for (size_t s = 1; s < k; s++) /* insertion sort of the inner bounds */
    for (size_t u = s; u > 1 && bounds[u - 1] > bounds[u]; u--) {
      size_t x = bounds[u];
      bounds[u] = bounds[u - 1];
      bounds[u - 1] = x;
    }
  size_t slots = 0;
  for (size_t s = 0; s < k; s++)
    slots += dpgd_model_tree_count(f->nc, bounds[s], bounds[s + 1]);
  double *nodes = malloc((slots ? slots : 1) * f->P * sizeof(double));
  double *post = malloc(f->n * sizeof(double));
  size_t at = 0;
  for (size_t s = 0; s < k; s++) {
    dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, f->chunk, 1 + (int)(s % 3));
    assert_non_null(ws);
    assert_int_equal(dpgd_model_clipped_grad_nodes(f->m, ws, f->ds, f->caps, bounds[s],
                                                   bounds[s + 1], nodes + at * f->P, NULL,
                                                   post),
                     0);
    at += dpgd_model_tree_count(f->nc, bounds[s], bounds[s + 1]);
    dpgd_grad_ws_free(ws);
  }
  size_t n_out = 0;
  assert_int_equal(dpgd_model_tree_combine(nodes, slots, f->P, f->nc, bounds, k, &n_out), 0);
  assert_int_equal(n_out, 1);
  if (memcmp(nodes, ref, f->P * sizeof(double)))
    fail_msg("%zu parts [%zu %zu %zu ...]: the combined sum differs", k, bounds[0], bounds[1],
             bounds[2]);
  assert_memory_equal(post, post_ref, f->n * sizeof(double));
  free(nodes);
  free(post);
}

static void check_model(const dpgd_model_type *t, size_t side, int K, size_t n, size_t chunk)
{
  fx f = make(t, side, K, n, chunk);
  check_threads(&f);
  check_bottom_up(&f);
  double *ref = malloc(f.P * sizeof(double)), *post = malloc(f.n * sizeof(double));
  full_sum(&f, 1, ref, post);
  uint64_t rs = 2385;
  for (size_t k = 1; k <= 6; k++)
    for (int rep = 0; rep < 3; rep++) check_partition(&f, k, &rs, ref, post);
  free(ref);
  free(post);
  drop(&f);
}

static void test_softmax(void **state)
{
  (void)state;
  check_model(dpgd_model_softmax, 6, 3, 1000, 7); /* 143 chunks, 8 levels */
  check_model(dpgd_model_softmax, 5, 4, 64, 64);  /* one chunk: the root is a leaf */
}

static void test_cnn(void **state)
{
  (void)state;
  check_model(dpgd_model_cnn, 28, 10, 150, 4); /* 38 chunks */
}

/* The cover of every range [c0, c1) of nc chunks: aligned nodes, in order, tiling the
 * range exactly, each maximal (its parent's chunks are not all inside the range), at
 * most 2 log2 nc of them (1 for the whole range). */
static void check_cover(size_t nc)
{
  unsigned L = dpgd_tree_levels(nc);
  assert_true(((size_t)1 << L) >= nc && (L == 0 || ((size_t)1 << (L - 1)) < nc));
  dpgd_tree_node out[DPGD_TREE_MAX_NODES];
  for (size_t c0 = 0; c0 <= nc; c0++)
    for (size_t c1 = c0; c1 <= nc; c1++) {
      size_t k = dpgd_tree_cover(out, nc, c0, c1), at = c0;
      assert_int_equal(k, dpgd_model_tree_count(nc, c0, c1));
      assert_true(k <= (L ? 2 * L : 1));
      if (c0 == 0 && c1 == nc) assert_int_equal(k, 1);
      for (size_t j = 0; j < k; j++) {
        size_t span = (size_t)1 << out[j].level;
        size_t hi = out[j].lo + span < nc ? out[j].lo + span : nc;
        assert_int_equal(out[j].lo % span, 0);
        assert_int_equal(out[j].lo, at);
        at = hi;
        size_t plo = out[j].lo & ~(2 * span - 1);
        size_t phi = plo + 2 * span < nc ? plo + 2 * span : nc;
        assert_true(out[j].level == L || plo < c0 || phi > c1);
      }
      assert_int_equal(at, k ? c1 : c0);
    }
}

static void test_cover(void **state)
{
  (void)state;
  for (size_t nc = 1; nc <= 70; nc++) check_cover(nc);
  check_cover(257);
}

/* Partitions that do not match the node sums given, and ranges past the end. */
static void test_refused(void **state)
{
  (void)state;
  double nodes[6 * 3] = {0};
  size_t n_out = 0, ok[3] = {0, 5, 9}, unordered[3] = {0, 6, 5}, past[3] = {0, 5, 12};
  /* 9 chunks, root (0, 4). [0, 5): (0, 2) and (4, 0); [5, 9): (5, 0), (6, 1) and (8, 3),
   * whose chunks are [8, 9) alone: 5 nodes. */
  assert_int_equal(dpgd_model_tree_count(9, 0, 5), 2);
  assert_int_equal(dpgd_model_tree_count(9, 5, 9), 3);
  for (size_t j = 0; j < 5; j++) nodes[j * 3] = (double)(j + 1) * 0.125;
  assert_int_equal(dpgd_model_tree_combine(nodes, 5, 3, 9, ok, 2, &n_out), 0);
  assert_int_equal(n_out, 1);
  assert_true(nodes[0] == (0.125 + ((0.25 + 0.375) + 0.5)) + 0.625);
  assert_int_equal(dpgd_model_tree_combine(nodes, 4, 3, 9, ok, 2, &n_out), DPGD_EINVAL);
  assert_int_equal(dpgd_model_tree_combine(nodes, 6, 3, 9, ok, 2, &n_out), DPGD_EINVAL);
  assert_int_equal(dpgd_model_tree_combine(nodes, 5, 3, 9, unordered, 2, &n_out), DPGD_EINVAL);
  assert_int_equal(dpgd_model_tree_combine(nodes, 5, 3, 9, past, 2, &n_out), DPGD_EINVAL);

  fx f = make(dpgd_model_softmax, 4, 3, 20, 3); /* 7 chunks */
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f.m, 3, 1);
  double *out = malloc(4 * f.P * sizeof(double));
  assert_int_equal(dpgd_model_clipped_grad_nodes(f.m, ws, f.ds, f.caps, 2, 8, out, NULL, NULL),
                   DPGD_EINVAL);
  assert_int_equal(dpgd_model_clipped_grad_nodes(f.m, ws, f.ds, f.caps, 5, 4, out, NULL, NULL),
                   DPGD_EINVAL);
  /* An empty range: no node, nothing written, fine. */
  assert_int_equal(dpgd_model_clipped_grad_nodes(f.m, ws, f.ds, f.caps, 4, 4, out, NULL, NULL),
                   0);
  free(out);
  dpgd_grad_ws_free(ws);
  drop(&f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cover),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_cnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
