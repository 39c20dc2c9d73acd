/* test_rows.c -- row independence (model/SENSITIVITY.md 5): removing one example (cap 0,
 * skipped, the later rows of its leaf move up) leaves every other example's squared
 * norms bit for bit, and moves the clipped sum by that example's own contribution within
 * the rounding bound of section 4, for softmax, the CNN (relu, tanh) and the scatter CNN
 * (tanh, on 81 x 49 inputs), leaves of one
 * chunk and of several (full batch; Poisson and subset sampling), 1 and 2 threads, with
 * both of gemm_fma.c's kernels. The removed example's own norm, computed alone, is its
 * norm in the full run too. ctest runs it with OpenBLAS's own kernels and with
 * OPENBLAS_CORETYPE=Haswell (the clipped sums' dgemm still comes from OpenBLAS). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

typedef __float128 q128;

#include "data/testutil.h"
#include "layers.h"
#include "model_internal.h"
#include "mtest.h"

typedef struct {
  dpgd_model *m;
  dpgd_dataset *ds;
  dpgd_grad_ws *ws;
  size_t n, P;
  double *caps;
  double *sum, *pre, *post;    /* the whole dataset */
  double *sum2, *pre2, *post2; /* one example removed */
  double *one, *caps1;         /* that example alone */
} rx;

static double *dalloc(size_t n)
{
  double *p = malloc(n * sizeof *p);
  assert_non_null(p);
  return p;
}

/* n synthetic examples; caps: a fraction `zeros` 0 (skipped from the start, as the
 * unsampled points of a DP-SGD step), some +inf (never clipped), the rest spread over
 * the gradients' norms so that some are clipped and some not. */
static rx make(const dpgd_model_type *t, dpgd_activation act, size_t n, size_t chunk,
               size_t span, int threads, double zeros, uint64_t seed)
{
  rx f = {0};
  /* the scatter CNN takes 81 channels of 7 x 7, the pixel models 28 x 28 images */
  const size_t rows = t == dpgd_model_scatter_cnn ? 81 : 28,
               cols = t == dpgd_model_scatter_cnn ? 49 : 28;
  f.m = dpgd_model_alloc(t, act, rows, cols, 10);
  assert_non_null(f.m);
  dpgd_model_init(f.m, seed);
  f.ds = mt_synthetic(n, rows, cols, 10, seed + 1);
  f.n = n;
  f.P = dpgd_model_n_params(f.m);
  f.ws = dpgd_grad_ws_alloc(f.m, chunk, threads);
  assert_non_null(f.ws);
  assert_int_equal(dpgd_grad_ws_set_span(f.ws, span), 0);
  f.caps = dalloc(n);
  f.caps1 = dalloc(n);
  uint64_t s = seed * 7 + 3;
  for (size_t i = 0; i < n; i++) {
    double u = tu_urand(&s);
    f.caps[i] = u < zeros ? 0.0 : u < zeros + 0.1 ? INFINITY : 0.05 + 3.0 * u;
  }
  f.sum = dalloc(f.P);
  f.sum2 = dalloc(f.P);
  f.one = dalloc(f.P);
  f.pre = dalloc(n);
  f.post = dalloc(n);
  f.pre2 = dalloc(n);
  f.post2 = dalloc(n);
  return f;
}

static void drop(rx *f)
{
  dpgd_grad_ws_free(f->ws);
  dpgd_model_free(f->m);
  dpgd_data_free(f->ds);
  double *v[] = {f->caps, f->caps1, f->sum,  f->sum2, f->one,
                 f->pre,  f->post,  f->pre2, f->post2};
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) free(v[k]);
}

static void run(rx *f, const double *caps, double *sum, double *pre, double *post)
{
  if (dpgd_model_clipped_grad_sum(f->m, f->ws, f->ds, caps, sum, pre, post))
    fail_msg("clipped_grad_sum: %s", dpgd_error_last());
}

/* sqrt of a nonnegative double, rounded up (a bound on ||v_j|| from post_j). */
static double sqrt_up(double x) { return nextafter(sqrt(x), INFINITY); }

/* What SENSITIVITY.md 4 allows: S = V + E with ||E|| <= gamma sum_j ||v_j||, the same for
 * S' (example i removed) and for S_i (example i alone); the other examples' v_j being
 * the same, V - V' = v_i, so ||S - S' - S_i|| <= gamma (sum_D ||v_j|| + sum_D' ||v_j|| +
 * ||v_i||), each ||v_j|| bounded by sqrt(post_j). Computed in 113-bit arithmetic. */
static int sum_within(const rx *f, size_t i, double *excess)
{
  double b = 0.0;
  for (size_t j = 0; j < f->n; j++) b += sqrt_up(f->post[j]) + sqrt_up(f->post2[j]);
  b = (b + sqrt_up(f->post[i])) * dpgd_model_sum_error_bound(f->n) * (1.0 + 0x1p-30);
  q128 d2 = 0;
  for (size_t p = 0; p < f->P; p++) {
    q128 d = (q128)f->sum[p] - (q128)f->sum2[p] - (q128)f->one[p];
    d2 += d * d;
  }
  *excess = sqrt((double)d2) / b;
  return d2 <= (q128)b * (q128)b;
}

/* Every example i with a positive cap removed in turn (stride: every stride-th one). */
static void removals(rx *f, size_t stride)
{
  run(f, f->caps, f->sum, f->pre, f->post);
  size_t done = 0, moved_rows = 0, moved_at = SIZE_MAX, sum_bad = 0;
  double worst = 0.0, excess;
  for (size_t i = 0; i < f->n; i += stride) {
    if (!(f->caps[i] > 0)) continue;
    memcpy(f->caps1, f->caps, f->n * sizeof(double));
    f->caps1[i] = 0.0;
    run(f, f->caps1, f->sum2, f->pre2, f->post2);
    assert_true(isnan(f->pre2[i]) && f->post2[i] == 0.0);
    for (size_t j = 0; j < f->n; j++) {
      if (j == i) continue;
      /* bitwise: NaN (skipped) stays the same NaN */
      if (memcmp(&f->pre[j], &f->pre2[j], sizeof(double)) ||
          memcmp(&f->post[j], &f->post2[j], sizeof(double))) {
        moved_rows++;
        if (moved_at == SIZE_MAX) moved_at = i;
      }
    }
    memset(f->caps1, 0, f->n * sizeof(double));
    f->caps1[i] = f->caps[i];
    run(f, f->caps1, f->one, f->pre2, NULL);
    /* the example alone (first row of a one-row chunk) has its norm of the full run */
    if (memcmp(&f->pre[i], &f->pre2[i], sizeof(double))) {
      moved_rows++;
      if (moved_at == SIZE_MAX) moved_at = i;
    }
    sum_bad += !sum_within(f, i, &excess);
    worst = excess > worst ? excess : worst;
    done++;
  }
  if (moved_rows || sum_bad)
    fail_msg("%zu rows' norms changed (first when example %zu was removed); in %zu of "
             "%zu removals the sum moved beyond the example's own contribution by more than "
             "the rounding bound (worst %.3g times it)",
             moved_rows, moved_at, sum_bad, done, worst);
  assert_true(done > 10);
}

/* With the kernel this CPU uses (FMA where it has AVX2 and FMA), and with the mul-add
 * kernel that other CPUs use (every other example: it is slower). */
static void check_removals(rx *f, size_t stride)
{
  removals(f, stride);
  dpgd_gemm_force_muladd(1);
  removals(f, 2 * stride);
  dpgd_gemm_force_muladd(0);
}

/* The cases: model, activation, n, chunk, leaf span, threads, share of caps 0, seed.
 * Leaves of one chunk with few caps 0 are a full-batch step; leaves of several chunks
 * with most caps 0 a sampled one (Poisson, subset). */
static const struct {
  const char *name;
  const char *type;
  dpgd_activation act;
  size_t n, chunk, span;
  int threads;
  double zeros;
} cases[] = {
    {"softmax, full batch", "softmax", DPGD_ACT_RELU, 300, 64, 64, 1, 0.1},
    {"softmax, sampled", "softmax", DPGD_ACT_RELU, 600, 64, 256, 2, 0.6},
    {"cnn tanh, full batch", "cnn", DPGD_ACT_TANH, 80, 16, 16, 1, 0.1},
    {"cnn relu, sampled", "cnn", DPGD_ACT_RELU, 160, 16, 48, 2, 0.5},
    {"scatter-cnn tanh, full batch", "scatter-cnn", DPGD_ACT_TANH, 80, 16, 16, 1, 0.1},
    {"scatter-cnn tanh, sampled", "scatter-cnn", DPGD_ACT_TANH, 160, 16, 48, 2, 0.5},
};

static void test_case(void **state)
{
  const size_t k = *(const size_t *)*state;
  print_message("  %s\n", cases[k].name);
  rx f = make(dpgd_model_type_find(cases[k].type), cases[k].act, cases[k].n, cases[k].chunk,
              cases[k].span, cases[k].threads, cases[k].zeros, 41 + k);
  check_removals(&f, 1);
  drop(&f);
}

/* The replay identity names the row kernel, so that a checkpoint from another kernel
 * (or from the sgemm engine before it) is refused on resume (train/RUN_FORMAT.md). */
static void test_replay_id(void **state)
{
  (void)state;
  rx f = make(dpgd_model_cnn, DPGD_ACT_RELU, 16, 16, 16, 1, 0.0, 45);
  char id[320], forced[320], want[64];
  dpgd_grad_ws_replay_id(f.ws, id, sizeof id);
  snprintf(want, sizeof want, "; row gemm %s; linear sum %s;", dpgd_gemm_kernel(),
           dpgd_gemm_wide() ? "fma512" : "dgemm");
  if (!strstr(id, want)) fail_msg("replay identity '%s' lacks '%s'", id, want);
  dpgd_gemm_force_muladd(1);
  dpgd_grad_ws_replay_id(f.ws, forced, sizeof forced);
  dpgd_gemm_force_muladd(0);
  if (!strstr(forced, "; row gemm mul-add; linear sum dgemm;"))
    fail_msg("replay identity '%s'", forced);
  dpgd_gemm_force_avx2(1); /* FMA without the AVX-512 chains: another identity */
  dpgd_grad_ws_replay_id(f.ws, forced, sizeof forced);
  dpgd_gemm_force_avx2(0);
  if (strcmp(dpgd_gemm_kernel(), "fma") == 0 && !strstr(forced, "; linear sum dgemm;"))
    fail_msg("replay identity '%s'", forced);
  drop(&f);
}

int main(void)
{
  static const size_t ks[] = {0, 1, 2, 3, 4, 5};
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(test_case, (void *)&ks[0]),
      cmocka_unit_test_prestate(test_case, (void *)&ks[1]),
      cmocka_unit_test_prestate(test_case, (void *)&ks[2]),
      cmocka_unit_test_prestate(test_case, (void *)&ks[3]),
      cmocka_unit_test_prestate(test_case, (void *)&ks[4]),
      cmocka_unit_test_prestate(test_case, (void *)&ks[5]),
      cmocka_unit_test(test_replay_id),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
