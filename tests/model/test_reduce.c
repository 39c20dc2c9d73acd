/* test_reduce.c -- the reduction tree of the clipped sum (model/reduce.c, model/tree.c,
 * SENSITIVITY.md 4): the sum has the same bits for 1, 2 and 3 threads; it is the leaf
 * sums added bottom-up in the tree, computed here independently from the leaves; node
 * sums of any partition of the leaves (what MPI ranks send) combine to the same bits;
 * with a leaf span above the chunk size, each leaf is its rows to compute run through
 * the chunk step at most `chunk` at a time in index order, and the sum is within the
 * rounding bound of an independent 128-bit sum of the examples' contributions; the
 * cover of a range is aligned, exact and maximal; bad partitions and spans are
 * refused. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

typedef __float128 q128;

#include "data/testutil.h"
#include "model_internal.h"
#include "mtest.h"

typedef struct {
  dpgd_model *m;
  dpgd_dataset *ds;
  double *caps;
  size_t n, P, chunk, span, nc;
} fx;

/* A model of type t on n synthetic examples, leaves of span examples (span = chunk: the
 * default); caps of high entropy, a fraction `zeros` of them 0 (skipped: a sampled
 * step's caps are mostly 0) and some +inf (unclipped). */
static fx make_span(const dpgd_model_type *t, size_t side, int K, size_t n, size_t chunk,
                    size_t span, double zeros)
{
  fx f = {0};
  /* the scatter CNN: side channels of 7 x 7; the pixel models: side x side images */
  const size_t cols = t == dpgd_model_scatter_cnn ? 49 : side;
  f.m = dpgd_model_alloc(t, DPGD_ACT_TANH, side, cols, K);
  assert_non_null(f.m);
  dpgd_model_init(f.m, 2385);
  f.ds = mt_synthetic(n, side, cols, K, 11);
  f.n = n;
  f.P = dpgd_model_n_params(f.m);
  f.chunk = chunk;
  f.span = span;
  f.nc = (n + span - 1) / span;
  f.caps = malloc(n * sizeof *f.caps);
  assert_non_null(f.caps);
  uint64_t s = 77;
  for (size_t i = 0; i < n; i++) {
    double u = tu_urand(&s);
    /* a few caps of -0: >= 0, so accepted, and skipped like +0 */
    f.caps[i] = u < zeros         ? (i % 13 == 5 ? -0.0 : 0.0)
                : u < zeros + 0.1 ? INFINITY
                                  : 0.013 + 2.385 * u;
  }
  return f;
}

static fx make(const dpgd_model_type *t, size_t side, int K, size_t n, size_t chunk)
{
  return make_span(t, side, K, n, chunk, chunk, 0.1);
}

/* A workspace of f's chunk size and leaf span. */
static dpgd_grad_ws *ws_of(const fx *f, int threads)
{
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f->m, f->chunk, threads);
  assert_non_null(ws);
  assert_int_equal(dpgd_grad_ws_set_span(ws, f->span), 0);
  assert_int_equal(dpgd_grad_ws_span(ws), f->span);
  return ws;
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
  dpgd_grad_ws *ws = ws_of(f, threads);
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
  dpgd_grad_ws *ws = ws_of(f, 1);
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
    dpgd_grad_ws *ws = ws_of(f, 1 + (int)(s % 3));
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

/* Each leaf alone (a one-leaf range), against the leaf rebuilt here: its rows with a
 * positive cap in index order, cut into groups of at most chunk, each group unpacked and
 * run through the chunk step into one accumulator from zero. Same bits. */
static void check_leaves(fx *f)
{
  dpgd_grad_ws *ws = ws_of(f, 1), *w1 = dpgd_grad_ws_alloc(f->m, f->chunk, 1);
  assert_non_null(w1);
  size_t d = f->ds->d, C = f->chunk;
  double *got = malloc(f->P * sizeof(double)), *acc = malloc(f->P * sizeof(double));
  float *x = malloc(C * d * sizeof(float));
  size_t *idx = malloc(C * sizeof(size_t));
  uint8_t *y = malloc(C);
  double *caps = malloc(C * sizeof(double)), pre[64], post[64];
  assert_true(C <= 64 && got && acc && x && idx && y && caps);
  for (size_t c = 0; c < f->nc; c++) {
    assert_int_equal(
        dpgd_model_clipped_grad_nodes(f->m, ws, f->ds, f->caps, c, c + 1, got, NULL, NULL), 0);
    memset(acc, 0, f->P * sizeof(double));
    size_t lo = c * f->span, hi = lo + f->span < f->n ? lo + f->span : f->n, B = 0;
    for (size_t i = lo; i <= hi; i++) {
      if (i < hi && f->caps[i] > 0.0) {
        idx[B] = i, y[B] = f->ds->labels[i], caps[B] = f->caps[i];
        B++;
      }
      if (B > 0 && (B == C || i == hi)) {
        dpgd_data_unpack_idx(x, f->ds, idx, B);
        assert_int_equal(dpgd_model_chunk_step_x(f->m, w1, acc, pre, post, x, y, caps, B), 0);
        B = 0;
      }
    }
    if (memcmp(got, acc, f->P * sizeof(double)))
      fail_msg("leaf %zu of span %zu, chunk %zu: not its sub-batches' sum", c, f->span, C);
  }
  dpgd_grad_ws_free(ws);
  dpgd_grad_ws_free(w1);
  free(got), free(acc), free(x), free(idx), free(y), free(caps);
}

/* Constant time (every row computed, so the sub-batches are the chunk-aligned blocks of
 * the dataset): each example's contribution alone is its block run through the chunk
 * step with every other cap 0 (the same g_i bits; at most one rounding per element, a
 * double product, so |vt_i - v_i| <= u |v_i|); their sum in 128 bits R. Contract (c)
 * then gives ||S - R|| <= (gamma + u) sum ||v_i|| <= (gamma + 2u) sum ||vt_i||, the norms
 * in double within a relative 2^-30. */
static void check_reference(fx *f)
{
  dpgd_grad_ws *ws = ws_of(f, 2), *w1 = dpgd_grad_ws_alloc(f->m, f->chunk, 1);
  assert_non_null(w1);
  dpgd_grad_ws_set_constant_time(ws, 1);
  size_t d = f->ds->d, C = f->chunk;
  double *S = malloc(f->P * sizeof(double)), *acc = malloc(f->P * sizeof(double));
  q128 *R = calloc(f->P, sizeof(q128));
  float *xb = malloc(C * d * sizeof(float)), *x = malloc(C * d * sizeof(float));
  double caps[64], pre[64], post[64], norms = 0.0;
  assert_true(C <= 64 && S && acc && R && xb && x);
  assert_int_equal(dpgd_model_clipped_grad_sum(f->m, ws, f->ds, f->caps, S, NULL, NULL), 0);
  for (size_t lo = 0; lo < f->n; lo += C) {
    size_t B = f->n - lo < C ? f->n - lo : C;
    dpgd_data_unpack(xb, f->ds, lo, B);
    for (size_t i = 0; i < B; i++) {
      if (!(f->caps[lo + i] > 0.0)) continue;
      for (size_t b = 0; b < B; b++) caps[b] = b == i ? f->caps[lo + i] : 0.0;
      memcpy(x, xb, B * d * sizeof(float));
      memset(acc, 0, f->P * sizeof(double));
      assert_int_equal(
          dpgd_model_chunk_step_x(f->m, w1, acc, pre, post, x, f->ds->labels + lo, caps, B), 0);
      for (size_t p = 0; p < f->P; p++) R[p] += acc[p];
      norms += mt_norm(acc, f->P);
    }
  }
  q128 e2 = 0;
  for (size_t p = 0; p < f->P; p++) e2 += (S[p] - R[p]) * (S[p] - R[p]);
  double bound = (dpgd_model_sum_error_bound(f->n) + 0x1p-52) * norms * (1.0 + 0x1p-30);
  if (!((double)e2 <= bound * bound))
    fail_msg("span %zu: ||S - R|| = %g above the bound %g", f->span, sqrt((double)e2), bound);
  assert_true(norms > 0.0);
  dpgd_grad_ws_free(ws);
  dpgd_grad_ws_free(w1);
  free(S), free(acc), free(R), free(xb), free(x);
}

static void check_model(const dpgd_model_type *t, size_t side, int K, size_t n, size_t chunk,
                        size_t span, double zeros)
{
  fx f = make_span(t, side, K, n, chunk, span, zeros);
  check_threads(&f);
  check_bottom_up(&f);
  check_leaves(&f);
  check_reference(&f);
  double *ref = malloc(f.P * sizeof(double)), *post = malloc(f.n * sizeof(double));
  double *pre = malloc(f.n * sizeof(double));
  /* Rows with cap 0 (runs of them skipped eight at a time) are not computed: pre NaN,
   * post 0; every other row is. */
  dpgd_grad_ws *ws = ws_of(&f, 1);
  assert_int_equal(dpgd_model_clipped_grad_sum(f.m, ws, f.ds, f.caps, ref, pre, post), 0);
  dpgd_grad_ws_free(ws);
  for (size_t i = 0; i < f.n; i++)
    if (f.caps[i] > 0.0) assert_false(isnan(pre[i]));
    else assert_true(isnan(pre[i]) && post[i] == 0.0);
  free(pre);
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
  check_model(dpgd_model_softmax, 6, 3, 1000, 7, 7, 0.1); /* 143 chunks, 8 levels */
  check_model(dpgd_model_softmax, 5, 4, 64, 64, 64, 0.1); /* one chunk: the root is a leaf */
}

static void test_cnn(void **state)
{
  (void)state;
  check_model(dpgd_model_cnn, 28, 10, 150, 4, 4, 0.1); /* 38 chunks */
}

static void test_scatter_cnn(void **state)
{
  (void)state;
  check_model(dpgd_model_scatter_cnn, 81, 10, 150, 4, 4, 0.1);  /* 38 chunks */
  check_model(dpgd_model_scatter_cnn, 81, 10, 150, 4, 16, 0.6); /* leaves of 4 chunks */
}

/* Leaves of several chunks, caps mostly 0 as in a sampled step: leaves of 10 and of
 * 70 examples over chunks of 7 (a few rows per leaf, some leaves with none, some with
 * more than one sub-batch), a span past n (one leaf), and the CNN. */
static void test_span(void **state)
{
  (void)state;
  check_model(dpgd_model_softmax, 6, 3, 1000, 7, 70, 0.85);
  check_model(dpgd_model_softmax, 6, 3, 1000, 7, 14, 0.3);
  check_model(dpgd_model_softmax, 5, 4, 300, 5, 400, 0.5);
  check_model(dpgd_model_cnn, 28, 10, 150, 4, 16, 0.6);
}

/* dpgd_zero_prefix8: the +0 run at the start, in whole groups of eight; -0 and NaN end
 * it like any other value. */
static void test_zero_prefix8(void **state)
{
  (void)state;
  double x[40];
  static const double stop[] = {1.0, -0.0, NAN, 4.9e-324};
  for (size_t n = 0; n <= 40; n++)
    for (size_t at = 0; at <= n; at++)
      for (size_t s = 0; s < 4; s++) {
        for (size_t i = 0; i < n; i++) x[i] = i == at ? stop[s] : 0.0;
        const size_t zeros = at < n ? at : n; /* the +0 run */
        assert_int_equal(dpgd_zero_prefix8(x, n), zeros / 8 * 8);
      }
}

/* The span rule: chunk * max(4, floor(1 / rate)); spans that are not positive multiples
 * of the chunk size are refused and leave the span as it was. */
static void test_span_rule(void **state)
{
  (void)state;
  assert_int_equal(dpgd_model_leaf_span(256, 256.0 / 60000.0), 256 * 234);
  assert_int_equal(dpgd_model_leaf_span(256, 0.2), 1280);
  assert_int_equal(dpgd_model_leaf_span(256, 0.25), 1024);
  assert_int_equal(dpgd_model_leaf_span(256, 0.3), 1024);
  assert_int_equal(dpgd_model_leaf_span(256, 1.0), 1024);
  assert_int_equal(dpgd_model_leaf_span(256, 2.0), 1024);
  assert_int_equal(dpgd_model_leaf_span(256, NAN), 1024);
  assert_int_equal(dpgd_model_leaf_span(256, 0.0), 1024);
  assert_int_equal(dpgd_model_leaf_span(3, 1e-300) % 3, 0);
  assert_true(dpgd_model_leaf_span(3, 1e-300) <= ((size_t)1 << 40));
  fx f = make(dpgd_model_softmax, 4, 3, 20, 3);
  dpgd_grad_ws *ws = dpgd_grad_ws_alloc(f.m, 3, 1);
  assert_int_equal(dpgd_grad_ws_span(ws), 12);
  assert_int_equal(dpgd_grad_ws_set_span(ws, 0), DPGD_EINVAL);
  assert_int_equal(dpgd_grad_ws_set_span(ws, 7), DPGD_EINVAL);
  assert_int_equal(dpgd_grad_ws_set_span(ws, ((size_t)1 << 40) + 3), DPGD_EINVAL);
  assert_int_equal(dpgd_grad_ws_span(ws), 12);
  assert_int_equal(dpgd_grad_ws_set_span(ws, 9), 0);
  assert_int_equal(dpgd_grad_ws_span(ws), 9);
  dpgd_grad_ws_free(ws);
  drop(&f);
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
  assert_int_equal(dpgd_grad_ws_set_span(ws, 3), 0); /* leaves of one chunk */
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
      cmocka_unit_test(test_cover),       cmocka_unit_test(test_refused),
      cmocka_unit_test(test_softmax),     cmocka_unit_test(test_cnn),
      cmocka_unit_test(test_scatter_cnn), cmocka_unit_test(test_span),
      cmocka_unit_test(test_span_rule),   cmocka_unit_test(test_zero_prefix8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
