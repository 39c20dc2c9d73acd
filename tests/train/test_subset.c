/* test_subset.c -- DP-SGD with fixed-size sampling without replacement
 * (train.sampling = subset). The sampler: exactly m points every draw; all C(n, m)
 * subsets equally likely, per-point inclusion counts uniform, and consecutive draws
 * independent (chi-square tests at fixed seeds against closed forms); deterministic for
 * a seed. The plan: its eps under every method is the accountant's replace-one
 * without-replacement Gaussian at sigma/2 (accounting/SAMPLING.md), exact and zcdp n/a,
 * the reported method the smallest rdp_*; calibration returns the smallest sigma; the
 * refusals. A run: m points charged per step, the eps it reports is the accountant's,
 * summary.json names sampler, m and m/n; m = n is full-batch GD bit for bit; the leaf
 * span of the run's workspace; a cut run resumes bit for bit; dpgd audit refuses subset
 * runs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_gamma.h>

#include "dpgd_accounting.h"
#include "dpgd_train.h"
#include "data/testutil.h"
#include "ttest.h"

static char *dir;
#define SLURP(run, name, len) tt_slurp_in(dir, run, name, len)
#define ASSERT_SAME_FILE(a, b, name) tt_assert_same_file(dir, a, b, name)
enum { N_TRAIN = 240, N_TEST = 120 };
/* A chi-square statistic passes when its upper tail probability is above this: a
 * correct sampler fails one such test in 10^4 seeds; the seeds are fixed. */
#define P_MIN 1e-4

static size_t count_in(const unsigned char *in, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += in[i] != 0;
  return k;
}

/* Exactly m distinct points for m = 0, 1, n and in between; m > n is refused. */
static void test_sampler_size(void **state)
{
  (void)state;
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_SAMPLE);
  const size_t cases[][2] = {{0, 5}, {1, 1}, {1, 9}, {3, 7}, {7, 7}, {100, 1000}, {999, 1000}};
  unsigned char in[1000];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int t = 0; t < 50; t++) {
      memset(in, 7, sizeof in);
      assert_int_equal(dpgd_rng_sample_subset(r, cases[c][0], in, cases[c][1]), DPGD_OK);
      assert_int_equal(count_in(in, cases[c][1]), cases[c][0]);
      for (size_t i = 0; i < cases[c][1]; i++) assert_true(in[i] == 0 || in[i] == 1);
    }
  assert_int_equal(dpgd_rng_sample_subset(r, 6, in, 5), DPGD_EINVAL);
  dpgd_error_clear();
  /* Secure mode draws from the OS generator: still exactly m. */
  dpgd_rng *s = dpgd_rng_alloc_u64(DPGD_RNG_SECURE, 0, DPGD_STREAM_SAMPLE);
  assert_int_equal(dpgd_rng_sample_subset(s, 37, in, 400), DPGD_OK);
  assert_int_equal(count_in(in, 400), 37);
  dpgd_rng_free(s);
  dpgd_rng_free(r);
}

/* Same seed, same draws; another seed, other draws. */
static void test_sampler_deterministic(void **state)
{
  (void)state;
  dpgd_rng *a = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 77, DPGD_STREAM_SAMPLE);
  dpgd_rng *b = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 77, DPGD_STREAM_SAMPLE);
  dpgd_rng *c = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 78, DPGD_STREAM_SAMPLE);
  unsigned char x[500], y[500], z[500];
  int differ = 0;
  for (int t = 0; t < 20; t++) {
    assert_int_equal(dpgd_rng_sample_subset(a, 41, x, 500), DPGD_OK);
    assert_int_equal(dpgd_rng_sample_subset(b, 41, y, 500), DPGD_OK);
    assert_int_equal(dpgd_rng_sample_subset(c, 41, z, 500), DPGD_OK);
    assert_memory_equal(x, y, 500);
    differ |= memcmp(x, z, 500) != 0;
  }
  assert_true(differ);
  dpgd_rng_free(a);
  dpgd_rng_free(b);
  dpgd_rng_free(c);
}

/* Upper tail of a chi-square statistic with df degrees of freedom. */
static void assert_chisq(const char *what, double stat, double df)
{
  double p = gsl_cdf_chisq_Q(stat, df);
  print_message("  %s: chi2 %.4g, df %g, p %.4g\n", what, stat, df, p);
  assert_true(p > P_MIN);
}

/* n = 8, m = 3: every one of the C(8, 3) = 56 subsets equally likely (chi-square over the
 * subsets, 55 df), and the overlap of consecutive draws hypergeometric (independence:
 * P(k) = C(3, k) C(5, 3 - k) / C(8, 3), chi-square 3 df). */
static void test_sampler_subsets_uniform(void **state)
{
  (void)state;
  enum { N = 8, M = 3, PER = 400 };
  double n_sub = gsl_sf_choose(N, M); /* 56 */
  size_t T = (size_t)n_sub * PER;
  size_t by_mask[1 << N] = {0}, overlap[M + 1] = {0};
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_SAMPLE);
  unsigned char in[N];
  unsigned prev = 0;
  for (size_t t = 0; t < T; t++) {
    assert_int_equal(dpgd_rng_sample_subset(r, M, in, N), DPGD_OK);
    unsigned mask = 0;
    for (int i = 0; i < N; i++) mask |= (unsigned)in[i] << i;
    by_mask[mask]++;
    if (t) overlap[__builtin_popcount(mask & prev)]++;
    prev = mask;
  }
  dpgd_rng_free(r);
  double stat = 0, seen = 0;
  for (unsigned mask = 0; mask < 1u << N; mask++) {
    if (__builtin_popcount(mask) != M) {
      assert_int_equal(by_mask[mask], 0);
      continue;
    }
    double d = (double)by_mask[mask] - PER;
    stat += d * d / PER;
    seen++;
  }
  assert_true(seen == n_sub);
  assert_chisq("subsets", stat, n_sub - 1);
  stat = 0;
  for (int k = 0; k <= M; k++) {
    double e = (double)(T - 1) * gsl_sf_choose(M, k) * gsl_sf_choose(N - M, M - k) / n_sub;
    double d = (double)overlap[k] - e;
    stat += d * d / e;
  }
  assert_chisq("overlap of consecutive draws", stat, M);
}

/* n = 200, m = 13, 5000 draws: per-point counts c_i have mean T p (p = m/n) and
 * covariance T p (1 - p) n/(n - 1) (I - 1 1^T / n) (fixed size: the counts sum to T m),
 * so sum (c_i - T p)^2 / (T p (1 - p) n/(n - 1)) is chi-square with n - 1 df. */
static void test_sampler_points_uniform(void **state)
{
  (void)state;
  enum { N = 200, M = 13, T = 5000 };
  size_t cnt[N] = {0};
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 9, DPGD_STREAM_SAMPLE);
  unsigned char in[N];
  for (int t = 0; t < T; t++) {
    assert_int_equal(dpgd_rng_sample_subset(r, M, in, N), DPGD_OK);
    for (int i = 0; i < N; i++) cnt[i] += in[i];
  }
  dpgd_rng_free(r);
  double p = (double)M / N, e = T * p, v = T * p * (1 - p) * N / (N - 1.0), stat = 0;
  for (int i = 0; i < N; i++) stat += ((double)cnt[i] - e) * ((double)cnt[i] - e) / v;
  assert_chisq("per-point counts", stat, N - 1);
}

/* Subset with m of the synthetic split, sigma given, `steps` steps. */
static void subset_config(dpgd_config *c, const char *run, size_t m, size_t steps)
{
  tt_sampled_config(c, dir, run, DPGD_SAMPLING_SUBSET, steps);
  c->train_batch_size = m;
}

/* eps under method m of `steps` replace-one without-replacement Gaussians (m of n,
 * noise std sigma against sensitivity 2: multiplier sigma / 2) and `queries` Gaussians
 * of mu 1/tau, straight from the accountant; NAN where the method has no answer. */
static double direct_eps(dpgd_acct_method meth, size_t m, size_t n, double sigma,
                         uint64_t steps, size_t queries, double tau, double delta)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  assert_int_equal(dpgd_acct_add_wor_gaussian(a, m, n, sigma / 2, DPGD_ACCT_REPLACE_ONE, steps),
                   DPGD_OK);
  return tt_acct_eps(a, queries, tau, meth, delta);
}

/* The plan: eps under every method is the accountant's (exact and zcdp none), with and
 * without queries; the reported method is the smallest rdp_*; sample_rate >= m/n. */
static void test_plan_equals_accountant(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "plan", 256, 50);
  c.privacy_sigma = 1.3;
  for (int with_queries = 0; with_queries < 2; with_queries++) {
    c.stopping_queries = with_queries ? 3 : 0;
    c.stopping_every = 5, c.stopping_tau_frac = 0.001;
    dpgd_plan p;
    assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
    assert_true(p.sampling == DPGD_SAMPLING_SUBSET && p.batch_size == 256 && p.steps == 50);
    assert_true(p.sample_rate >= 256.0 / 60000 && p.sample_rate < 256.0 / 60000 * (1 + 1e-15));
    for (int m = 0; m < DPGD_ACCT_N_METHODS; m++)
      tt_assert_same_eps(p.eps[m], direct_eps(m, 256, 60000, 1.3, 50, c.stopping_queries, 60,
                                              c.privacy_delta));
    assert_true(isnan(p.eps[DPGD_ACCT_EXACT]) && isnan(p.eps[DPGD_ACCT_ZCDP]));
    int rm = p.report_method;
    assert_true(rm >= DPGD_ACCT_RDP_CLASSIC && rm <= DPGD_ACCT_RDP_OPTIMAL);
    for (int m = DPGD_ACCT_RDP_CLASSIC; m <= DPGD_ACCT_RDP_OPTIMAL; m++)
      assert_true(p.eps[rm] <= p.eps[m]);
    assert_true(isnan(p.mu_train) && p.odometer.levels == 0);
  }
}

/* Calibration under an rdp_* method returns the smallest sigma (eps(sigma) <= target,
 * and a sigma 2e-7 smaller misses it); under exact it is refused. */
static void test_calibration(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "calib", 256, 50);
  c.privacy_sigma = 0;
  c.privacy_calibrate = DPGD_CALIBRATE_SIGMA;
  c.privacy_epsilon = 1.0;
  c.privacy_method = DPGD_ACCT_RDP_OPTIMAL;
  dpgd_plan p;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_OK);
  double at = direct_eps(DPGD_ACCT_RDP_OPTIMAL, 256, 60000, p.sigma, 50, 0, 1, 1e-5);
  double below =
      direct_eps(DPGD_ACCT_RDP_OPTIMAL, 256, 60000, p.sigma * (1 - 2e-7), 50, 0, 1, 1e-5);
  print_message("  sigma %.10g, eps %.12g, below %.12g\n", p.sigma, at, below);
  assert_true(at <= 1.0 && below > 1.0);
  assert_true(p.eps[p.report_method] <= 1.0);
  c.privacy_method = DPGD_ACCT_EXACT;
  assert_int_equal(dpgd_plan_make(&p, &c, 60000), DPGD_EINVAL);
  assert_non_null(strstr(dpgd_error_last(), "privacy.method = exact"));
  dpgd_error_clear();
}

/* One refusal: validation (or the plan, which knows n) fails naming the problem. */
static void assert_refused(const dpgd_config *c, size_t n, const char *words)
{
  dpgd_plan p;
  int rc = dpgd_plan_make(&p, c, n);
  assert_int_equal(rc, DPGD_EINVAL);
  if (!strstr(dpgd_error_last(), words))
    fail_msg("message '%s' lacks '%s'", dpgd_error_last(), words);
  dpgd_error_clear();
}

static void test_refusals(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "refused", 0, 10);
  assert_refused(&c, 100, "train.batch_size >= 1");
  c.train_batch_size = 101;
  assert_refused(&c, 100, "train.batch_size = 101 exceeds the 100 training points");
  c.train_batch_size = 10, c.filter_enabled = 1, c.filter_k = 5;
  assert_refused(&c, 100, "individual filtering");
  c.filter_enabled = 0, c.filter_k = 0, c.train_sample_rate = 0.1;
  assert_refused(&c, 100, "apply to train.sampling = poisson only");
  c.train_sample_rate = 0, c.train_epochs = 2;
  assert_refused(&c, 100, "apply to train.sampling = poisson only");
  c.train_epochs = 0, c.train_steps = 0;
  assert_refused(&c, 100, "train.steps > 0");
  c.train_steps = 10, c.train_sampling = DPGD_SAMPLING_FULL;
  assert_refused(&c, 100, "applies to train.sampling = subset only");
  c.train_sampling = DPGD_SAMPLING_SUBSET;
  dpgd_plan p;
  assert_int_equal(dpgd_plan_make(&p, &c, 100), DPGD_OK);
  c.train_batch_size = 100; /* m = n is allowed */
  assert_int_equal(dpgd_plan_make(&p, &c, 100), DPGD_OK);
  /* dpgd audit: its canaries would not be sampled independently. */
  dpgd_audit_params ap;
  dpgd_audit_defaults(&ap);
  dpgd_audit *a = NULL;
  char out[600];
  snprintf(out, sizeof out, "%s/audit-refused", dir);
  assert_int_equal(dpgd_audit_open(&a, &c, out, &ap), DPGD_EINVAL);
  assert_null(a);
  assert_non_null(
      strstr(dpgd_error_last(), "dpgd audit does not support train.sampling = subset"));
  dpgd_error_clear();
}

/* A run: after one step exactly m points are charged (a softmax gradient is never
 * zero), each at most C^2; after the run the accountant holds one release per step and
 * the eps the run reports is the direct one under the plan's method; summary.json. */
static void test_run_accounting(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "ref", 37, 12);
  c.output_checkpoint_every = 3;
  dpgd_run *r = tt_open_run(&c);
  assert_int_equal(dpgd_run_step(r), DPGD_OK);
  const dpgd_ledger *l = dpgd_run_ledger(r);
  size_t charged = 0;
  for (size_t i = 0; i < l->n; i++) {
    assert_true(l->spend[i] >= 0 && l->spend[i] <= 2.375 * 2.375 * (1 + 1e-6));
    charged += l->spend[i] > 0;
  }
  assert_int_equal(charged, 37);
  tt_finish_run(r);
  assert_int_equal(dpgd_run_releases(r), 12);
  int rm = dpgd_run_plan(r)->report_method;
  assert_true(rm >= DPGD_ACCT_RDP_CLASSIC);
  tt_assert_same_eps(dpgd_run_eps_now(r), direct_eps(rm, 37, N_TRAIN, 3.7, 12, 0, 1, 1e-5));
  dpgd_run_free(r);
  size_t len;
  char *s = (char *)SLURP("ref", "summary.json", &len);
  char want[160];
  snprintf(want, sizeof want,
           "\"sampling\": \"subset\", \"sample_rate\": %.17g,\n \"batch_size\": 37",
           dpgd_acct_wor_rate(37, N_TRAIN));
  if (!strstr(s, want)) fail_msg("summary.json lacks %s:\n%s", want, s);
  assert_non_null(strstr(s, "\"exact\": null"));
  free(s);
}

/* m = n samples everyone and divides by m = n: the model of full-batch GD bit for bit
 * (the sample has its own stream; the noise is untouched). */
static void test_all_points_is_full_batch(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "mn", N_TRAIN, 6);
  tt_run_through(&c);
  c.train_sampling = DPGD_SAMPLING_FULL, c.train_batch_size = 0;
  snprintf(c.output_dir, sizeof c.output_dir, "%s/full-mn", dir);
  tt_run_through(&c);
  ASSERT_SAME_FILE("mn", "full-mn", "model.bin");
}

/* The leaf span a run's workspace gets (dpgd_run_set_leaf_span): chunk * floor(n / m)
 * for subset, chunk * floor(1 / q) for Poisson, the chunk size for m = n and full batch. */
static void test_leaf_span(void **state)
{
  (void)state;
  dpgd_model *m = dpgd_model_alloc(dpgd_model_softmax, DPGD_ACT_TANH, 4, 4, 3);
  dpgd_grad_ws *ws = m ? dpgd_grad_ws_alloc(m, 5, 1) : NULL;
  assert_non_null(ws);
  dpgd_config c;
  subset_config(&c, "span", 37, 1);
  assert_int_equal(dpgd_run_set_leaf_span(ws, &c, N_TRAIN), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_span(ws), 5 * 6); /* 240 / 37 = 6.49 */
  c.train_batch_size = N_TRAIN;
  assert_int_equal(dpgd_run_set_leaf_span(ws, &c, N_TRAIN), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_span(ws), 5 * 4); /* at least four chunks */
  c.train_sampling = DPGD_SAMPLING_POISSON, c.train_sample_rate = 0.3;
  assert_int_equal(dpgd_run_set_leaf_span(ws, &c, N_TRAIN), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_span(ws), 5 * 4); /* 1 / 0.3 = 3.33 */
  c.train_sampling = DPGD_SAMPLING_POISSON, c.train_sample_rate = 0.2;
  assert_int_equal(dpgd_run_set_leaf_span(ws, &c, N_TRAIN), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_span(ws), 5 * 5);
  c.train_sampling = DPGD_SAMPLING_FULL;
  assert_int_equal(dpgd_run_set_leaf_span(ws, &c, N_TRAIN), DPGD_OK);
  assert_int_equal(dpgd_grad_ws_span(ws), 5 * 4);
  assert_int_equal(dpgd_run_set_leaf_span(NULL, &c, N_TRAIN), DPGD_EINVAL);
  dpgd_error_clear();
  dpgd_grad_ws_free(ws);
  dpgd_model_free(m);
}

/* Cut after step 7 (checkpoint at 6), resumed: the files of the uninterrupted run "ref"
 * of test_run_accounting, which needs the sampler's stream from the checkpoint. */
static void test_resume_bit_identical(void **state)
{
  (void)state;
  dpgd_config c;
  subset_config(&c, "cut", 37, 12);
  c.output_checkpoint_every = 3;
  tt_run_cut(&c, 7);
  tt_resume_through(dir, "cut", 6);
  tt_assert_same_results(dir, "ref", "cut");
}

/* The audit's gradient-canary coordinates (dpgd_audit_draw_coords) are the unbiased
 * sampler's draw: from the same stream position, exactly the m-subset that
 * dpgd_rng_sample_subset draws (so every m-subset is equally likely), distinct, in
 * increasing order, the same words consumed; m > p is refused. */
static void test_audit_coords(void **state)
{
  (void)state;
  const size_t cases[][2] = {{1, 1}, {3, 7}, {2, 3}, {100, 7850}, {7850, 7850}};
  unsigned char *in = malloc(7850);
  uint32_t *coords = malloc(7850 * sizeof *coords);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (uint64_t seed = 1; seed <= 20; seed++) {
      size_t m = cases[c][0], p = cases[c][1];
      dpgd_rng *a = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, seed, DPGD_STREAM_AUDIT);
      dpgd_rng *b = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, seed, DPGD_STREAM_AUDIT);
      assert_int_equal(dpgd_audit_draw_coords(a, m, p, coords), DPGD_OK);
      assert_int_equal(dpgd_rng_sample_subset(b, m, in, p), DPGD_OK);
      for (size_t j = 0; j < m; j++) {
        assert_true(coords[j] < p && in[coords[j]]);
        if (j) assert_true(coords[j] > coords[j - 1]);
      }
      assert_int_equal(count_in(in, p), m);
      uint64_t ua, ub;
      assert_int_equal(dpgd_rng_u64(a, &ua), DPGD_OK);
      assert_int_equal(dpgd_rng_u64(b, &ub), DPGD_OK);
      assert_true(ua == ub);
      dpgd_rng_free(a);
      dpgd_rng_free(b);
    }
  dpgd_rng *r = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 1, DPGD_STREAM_AUDIT);
  assert_int_equal(dpgd_audit_draw_coords(r, 8, 7, coords), DPGD_EINVAL);
  dpgd_error_clear();
  dpgd_rng_free(r);
  free(coords);
  free(in);
}

int main(void)
{
  dir = tu_tmpdir();
  tt_write_banded_split(dir, "train", N_TRAIN, 11);
  tt_write_banded_split(dir, "t10k", N_TEST, 12);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sampler_size),
      cmocka_unit_test(test_audit_coords),
      cmocka_unit_test(test_sampler_deterministic),
      cmocka_unit_test(test_sampler_subsets_uniform),
      cmocka_unit_test(test_sampler_points_uniform),
      cmocka_unit_test(test_plan_equals_accountant),
      cmocka_unit_test(test_calibration),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_run_accounting),
      cmocka_unit_test(test_all_points_is_full_batch),
      cmocka_unit_test(test_leaf_span),
      cmocka_unit_test(test_resume_bit_identical),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc == 0) tu_rmtree(dir); /* kept for inspection when a test failed */
  free(dir);
  return rc;
}
