/* test_queries_api.c -- sparse linear queries (dpgd_train.h, "Sparse linear queries"):
 * the noise against its closed-form accuracy bound and its streams, the guarantee
 * against the Gaussian curve and the zCDP conversion, plain composition, bad parameters,
 * the grid, the callback's failure, NaN values, the per-user report and the research
 * caveat. Every expected
 * value is computed here from the formulas of the header, never copied from a run. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "data/testutil.h"
#include "dpgd_train.h"
#include "qtrace.h"

static void check_bound_closed_form(const dpgd_queries *q, size_t dim)
{
  double sigma = dpgd_queries_sigma(q);
  const double betas[] = {0.1, 0.01, 0.5, 1e-6};
  for (size_t k = 0; k < sizeof betas / sizeof *betas; k++) {
    double b = dpgd_queries_bound(q, betas[k]);
    double want = sigma * sqrt(2 * log((double)dim / betas[k]));
    if (!(b >= want * (1 - 4 * DBL_EPSILON) && b <= want * (1 + 1e-9)))
      fail_msg("bound(beta = %g) = %.17g, sigma sqrt(2 log(dim / beta)) = %.17g", betas[k], b,
               want);
  }
  const double bad[] = {0, 1, -0.5, 1.5, NAN, INFINITY};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    if (!isnan(dpgd_queries_bound(q, bad[k]))) fail_msg("bound(beta = %g) is not NaN", bad[k]);
}

/* K answers of a dim-4 query whose values lie on the grid 2^-6 (so the exact sum is
 * the sum of the values, and no user is capped: ||v|| <= 1 = C, K C^2 < B). */
static void test_noise_bound(void **state)
{
  (void)state;
  enum { N = 20, D = 4, K = 2000 };
  const double sigma0 = 2.385, beta = 0.1;
  qt_setup s = {N, D, 2100, 2100 / (2 * sigma0 * sigma0), 1.0, 0xb0a7ULL};
  dpgd_queries *q = qt_open(&s);
  double sigma = dpgd_queries_sigma(q), want = sqrt(s.budget / (2 * s.kappa));
  if (!(fabs(sigma - want) <= 1e-12 * want))
    fail_msg("sigma %.17g, sqrt(B / (2 kappa)) = %.17g", sigma, want);
  check_bound_closed_form(q, D);
  double bound = dpgd_queries_bound(q, beta), sum = 0, sum2 = 0, values[N * D], a[D];
  size_t over = 0;
  for (size_t k = 0; k < K; k++) {
    double exact[D] = {0};
    for (size_t i = 0; i < N * D; i++) values[i] = floor(qt_urand() * 33) / 64;
    for (size_t i = 0; i < N * D; i++) exact[i % D] += values[i];
    assert_int_equal(dpgd_queries_answer(q, values, a), DPGD_OK);
    double worst = 0;
    for (size_t j = 0; j < D; j++) {
      double e = a[j] - exact[j];
      worst = fmax(worst, fabs(e));
      sum += e;
      sum2 += e * e;
    }
    over += worst > bound;
  }
  for (size_t i = 0; i < N; i++) assert_true(dpgd_filter_active(dpgd_queries_filter(q), i));
  dpgd_queries_free(q);
  double frac = (double)over / K, m = (double)K * D;
  /* At most beta (Corollary 4.7), and near the Gaussian's own tail probability. */
  assert_true(frac <= beta + 4 * sqrt(beta * (1 - beta) / K));
  double p = 1 - pow(1 - erfc(bound / sigma / M_SQRT2), D);
  if (!(fabs(frac - p) <= 4.5 * sqrt(p * (1 - p) / K) + 1.0 / K))
    fail_msg("fraction over the bound %.5f, Gaussian tail %.5f", frac, p);
  double mean = sum / m, var = sum2 / m - mean * mean;
  if (!(fabs(mean) <= 5 * sigma / sqrt(m)))
    fail_msg("noise mean %.6f, sigma %.6f over %g draws", mean, sigma, m);
  if (!(fabs(var / (sigma * sigma) - 1) <= 5 * sqrt(2 / m)))
    fail_msg("noise std %.6f, sigma %.6f", sqrt(var), sigma);
}

/* Research mode reproduces its seed's noise and no other; secure mode answers. */
static void test_noise_streams(void **state)
{
  (void)state;
  qt_setup s = {5, 2, 3.0, 0.5, 1.0, 0x2385ULL};
  double values[10] = {0}, a[2], b[2];
  dpgd_queries *q = qt_open(&s), *r = qt_open(&s);
  assert_int_equal(dpgd_queries_answer(q, values, a), DPGD_OK);
  assert_int_equal(dpgd_queries_answer(r, values, b), DPGD_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_true(a[0] != 0 && a[1] != 0 && a[0] != a[1]);
  dpgd_queries_free(r);
  s.seed++;
  r = qt_open(&s);
  assert_int_equal(dpgd_queries_answer(r, values, b), DPGD_OK);
  assert_true(a[0] != b[0] && a[1] != b[1]);
  dpgd_queries_free(r);
  dpgd_queries_free(q);
  dpgd_queries_free(NULL);
  dpgd_queries_params p = {5, 2, 3.0, 0.5, 1.0, DPGD_RNG_SECURE, {{0}}};
  assert_int_equal(dpgd_queries_open(&q, &p), DPGD_OK);
  assert_int_equal(dpgd_queries_answer(q, values, a), DPGD_OK);
  assert_true(isfinite(a[0]) && isfinite(a[1]) && a[0] != a[1]);
  dpgd_queries_free(q);
}

/* ---- 5. the guarantee: sqrt(2 kappa)-GDP, kappa-zCDP ---- */

/* delta(eps) of mu-GDP (docs/MATH.md "The Gaussian curve"), evaluated here with erfc. */
static double gdp_delta(double mu, double eps)
{
  return 0.5 * erfc((eps / mu - mu / 2) / M_SQRT2) -
         exp(eps) * 0.5 * erfc((eps / mu + mu / 2) / M_SQRT2);
}

/* The root of gdp_delta(mu, eps) = delta by bisection: [*lo, *hi] brackets it. */
static void gdp_eps_bracket(double mu, double delta, double *lo, double *hi)
{
  *lo = 0;
  *hi = 200;
  for (int k = 0; k < 200; k++) {
    double mid = (*lo + *hi) / 2;
    if (gdp_delta(mu, mid) > delta) *lo = mid;
    else *hi = mid;
  }
}

static void check_epsilon(const dpgd_queries *q, double kappa, double delta)
{
  double e, lo, hi, ref, mu = sqrt(2 * kappa);
  gdp_eps_bracket(mu, delta, &lo, &hi);
  assert_int_equal(dpgd_gdp_epsilon(mu, delta, &ref), DPGD_OK);
  assert_int_equal(dpgd_queries_epsilon(q, DPGD_ACCT_EXACT, delta, &e), DPGD_OK);
  if (!(e >= lo && e <= hi * (1 + 1e-9) && fabs(e - ref) <= 1e-9 * ref))
    fail_msg("kappa %g, delta %g: exact eps %.17g, Gaussian curve's root in [%.17g, %.17g], "
             "dpgd_gdp_epsilon %.17g",
             kappa, delta, e, lo, hi, ref);
  double z = kappa + 2 * sqrt(kappa * log(1 / delta));
  assert_int_equal(dpgd_queries_epsilon(q, DPGD_ACCT_ZCDP, delta, &e), DPGD_OK);
  if (!(e >= z * (1 - 4 * DBL_EPSILON) && e <= z * (1 + 1e-9)))
    fail_msg("kappa %g, delta %g: zcdp eps %.17g, kappa + 2 sqrt(kappa log(1/delta)) = %.17g",
             kappa, delta, e, z);
  const dpgd_acct_method rdp[] = {DPGD_ACCT_RDP_CLASSIC, DPGD_ACCT_RDP_BALLE,
                                  DPGD_ACCT_RDP_OPTIMAL};
  for (size_t k = 0; k < 3; k++) {
    assert_int_equal(dpgd_queries_epsilon(q, rdp[k], delta, &e), DPGD_OK);
    if (!(e >= lo)) fail_msg("method %d: eps %.17g below the exact %.17g", (int)rdp[k], e, lo);
  }
}

static void test_epsilon(void **state)
{
  (void)state;
  const double kappas[] = {0.05, 0.5, 2.385}, deltas[] = {1e-5, 1e-9};
  for (size_t k = 0; k < 3; k++) {
    /* The guarantee depends on kappa alone, not on B or C. */
    qt_setup s1 = {10, 2, 3.0, kappas[k], 1.0, 1}, s2 = {7, 1, 11.2, kappas[k], INFINITY, 2};
    dpgd_queries *q1 = qt_open(&s1), *q2 = qt_open(&s2);
    for (size_t d = 0; d < 2; d++) {
      check_epsilon(q1, kappas[k], deltas[d]);
      check_epsilon(q2, kappas[k], deltas[d]);
    }
    double e, bad[] = {0, 1, -1e-5, NAN};
    for (size_t b = 0; b < 4; b++)
      assert_int_equal(dpgd_queries_epsilon(q1, DPGD_ACCT_EXACT, bad[b], &e), DPGD_EINVAL);
    assert_int_equal(dpgd_queries_epsilon(q1, (dpgd_acct_method)99, 1e-5, &e), DPGD_EINVAL);
    dpgd_queries_free(q1);
    dpgd_queries_free(q2);
  }
}

/* ---- 6. plain composition: C = 1, B = k C^2 for k queries ---- */

static void check_plain_sums(const qt_setup *s, const double *data, size_t K)
{
  for (size_t t = 0; t < K; t++)
    for (size_t j = 0; j < s->dim; j++) {
      long double exact = 0;
      for (size_t i = 0; i < s->n; i++) {
        if (!qt_trace_a.active[t][i]) fail_msg("user %zu inactive at query %zu <= k", i, t);
        exact += data[(t * s->n + i) * s->dim + j];
      }
      double x = qt_trace_a.ans[t][j], y = qt_trace_b.ans[t][j], d = x - y;
      double tol = (double)s->n * qt_trace_a.quantum + 4 * qt_ulp(fmax(fabs(x), fabs(y)));
      if (!(fabs(d - (double)exact) <= tol))
        fail_msg("query %zu, entry %zu: answer minus noise %.17g, true sum %.17g", t, j, d,
                 (double)exact);
    }
}

static void test_plain(void **state)
{
  (void)state;
  enum { N = 30, D = 2, K = 7 };
  qt_setup s = {N, D, K * 1.0, 1.3, 1.0, 0x9a1ULL};
  static double data[(K + 1) * N * D], zero[(K + 1) * N * D];
  for (size_t t = 0; t <= K; t++)
    for (size_t i = 0; i < N; i++) {
      double *v = data + (t * N + i) * D, th = 2 * M_PI * qt_urand(), r = 0.999 * qt_urand();
      v[0] = r * cos(th);
      v[1] = r * sin(th);
      if (i < 3) { /* norm exactly C every time */
        v[0] = i == 1 ? 0 : (t % 2 ? -1 : 1);
        v[1] = i == 1 ? -1 : 0;
      }
    }
  qt_run_trace(&qt_trace_a, &s, data, K + 1, 0);
  qt_run_trace(&qt_trace_b, &s, zero, K + 1, 0);
  check_plain_sums(&s, data, K);
  for (size_t i = 0; i < N; i++) {
    double sp = qt_trace_a.spent[K][i];
    if (i < 3 && !(sp == K && !qt_trace_a.active[K][i]))
      fail_msg("user %zu of norm C: spend %.17g after k = %d queries, want k", i, sp, (int)K);
    if (i >= 3 && !(sp < K && qt_trace_a.active[K][i]))
      fail_msg("user %zu of norm < C: spend %.17g after k queries", i, sp);
  }
}

/* ---- 7. bad parameters, a failing callback, non-finite values ---- */

static void expect_open_fails(dpgd_queries_params p, const char *what)
{
  dpgd_queries *q = (dpgd_queries *)&p; /* must come back NULL */
  dpgd_error_clear();
  int st = dpgd_queries_open(&q, &p);
  if (st != DPGD_EINVAL) fail_msg("%s: status %d, want DPGD_EINVAL", what, st);
  if (q) fail_msg("%s: *out is not NULL", what);
  if (!dpgd_error_last()[0]) fail_msg("%s: no error message", what);
}

static void test_open_rejects(void **state)
{
  (void)state;
  const dpgd_queries_params ok = {10, 2, 3.0, 0.5, 1.0, DPGD_RNG_RESEARCH, {{[31] = 1}}};
  dpgd_queries *q = NULL;
  assert_int_equal(dpgd_queries_open(&q, &ok), DPGD_OK);
  dpgd_queries_free(q);
  dpgd_queries_params p = ok;
  p.n_users = 0, expect_open_fails(p, "n_users 0"), p = ok;
  p.dim = 0, expect_open_fails(p, "dim 0"), p = ok;
  const double bad[] = {0, -1, -INFINITY, NAN};
  for (size_t k = 0; k < 4; k++) {
    p.budget = bad[k], expect_open_fails(p, "budget <= 0 or NaN"), p = ok;
    p.kappa = bad[k], expect_open_fails(p, "kappa <= 0 or NaN"), p = ok;
    p.clip = bad[k], expect_open_fails(p, "clip <= 0 or NaN"), p = ok;
  }
  /* n sqrt(B) = 1e18 with no clip, or n C = 2^50: no grid of 2^-10 or finer is exact. */
  p.n_users = 1000, p.clip = INFINITY, p.budget = 1e30;
  expect_open_fails(p, "n sqrt(B) huge");
  p = ok;
  p.n_users = 1 << 20, p.clip = 0x1p30, p.budget = 0x1p61;
  expect_open_fails(p, "n C huge");
}

/* Infinite budget or kappa: sigma infinite or 0 ("nonsense parameters"). */
static void test_open_rejects_infinite(void **state)
{
  (void)state;
  const dpgd_queries_params ok = {10, 2, 3.0, 0.5, 1.0, DPGD_RNG_RESEARCH, {{[31] = 1}}};
  dpgd_queries_params p = ok;
  p.budget = INFINITY, expect_open_fails(p, "budget inf"), p = ok;
  p.kappa = INFINITY, expect_open_fails(p, "kappa inf"), p = ok;
}

/* Accepted parameters give a grid of 2^-F, F >= 10, on which n values of norm at most
 * min(C, sqrt(B)) sum exactly in double. */
static void test_grid(void **state)
{
  (void)state;
  const struct {
    size_t n;
    double clip, budget;
  } c[] = {{50, 0.8, 3.7}, {1, 1, 1}, {1000, INFINITY, 1e14}, {7, 2.385, 1e6}, {100000, 1, 2}};
  for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
    qt_setup s = {c[k].n, 3, c[k].budget, 0.5, c[k].clip, 1};
    dpgd_queries *q = qt_open(&s);
    double quantum = dpgd_queries_quantum(q), m = fmin(c[k].clip, sqrt(c[k].budget));
    int e;
    if (!(quantum > 0 && quantum <= 0x1p-10 && frexp(quantum, &e) == 0.5))
      fail_msg("case %zu: quantum %g is not a power of 2 at most 2^-10", k, quantum);
    if (!((double)c[k].n * m <= quantum * 0x1p53))
      fail_msg("case %zu: n min(C, sqrt(B)) = %g does not sum exactly on the grid %g", k,
               (double)c[k].n * m, quantum);
    dpgd_queries_free(q);
  }
}

static void test_callback_failure(void **state)
{
  (void)state;
  enum { N = 10, D = 2 };
  qt_setup s = {N, D, 3.0, 0.5, 1.0, 0xfa11ULL};
  double table[N * D], a[D], before[N];
  for (size_t i = 0; i < N * D; i++) table[i] = 0.5 - 0.03 * (double)i;
  dpgd_queries *q = qt_open(&s);
  const dpgd_filter *f = dpgd_queries_filter(q);
  for (int k = 0; k < 2; k++) assert_int_equal(dpgd_queries_answer(q, table, a), DPGD_OK);
  for (size_t i = 0; i < N; i++) before[i] = dpgd_filter_spent(f, i, 0);
  const long fail_at[] = {0, 4, N - 1};
  for (size_t k = 0; k < 3; k++) {
    qt_ctx c = {.table = table, .dim = D, .fail_user = fail_at[k]};
    dpgd_error_clear();
    assert_int_equal(dpgd_queries_answer_fn(q, qt_table_fn, &c, a), DPGD_EINVAL);
    assert_true(dpgd_error_last()[0] != 0);
    assert_int_equal(dpgd_queries_count(q), 2);
    for (size_t i = 0; i < N; i++)
      if (dpgd_filter_spent(f, i, 0) != before[i] || !dpgd_filter_active(f, i))
        fail_msg("failing callback at user %ld: user %zu charged", fail_at[k], i);
  }
  qt_ctx c = {.table = table, .dim = D, .fail_user = -1};
  assert_int_equal(dpgd_queries_answer_fn(q, qt_table_fn, &c, a), DPGD_OK);
  assert_int_equal(dpgd_queries_count(q), 3);
  assert_true(dpgd_filter_spent(f, 0, 0) > before[0]);
  dpgd_queries_free(q);
}

/* A value with a NaN or infinite entry gives what a zero value gives: nothing, no charge. */
static void test_nonfinite_values(void **state)
{
  (void)state;
  enum { N = 6, D = 3, T = 4 };
  qt_setup s = {N, D, 2.0, 0.5, 1.0, 0x7a7ULL};
  static double data[T * N * D], clean[T * N * D];
  qt_gen_data(data, T, N, D);
  const struct {
    size_t t, i;
    double v[D];
  } odd[] = {{0, 2, {0.3, NAN, 0.1}},
             {0, 4, {INFINITY, 0, 0}},
             {1, 5, {-INFINITY, NAN, 1}},
             {2, 1, {NAN, NAN, NAN}},
             {2, 0, {0.25, -0.5, INFINITY}}};
  memcpy(clean, data, sizeof data);
  for (size_t k = 0; k < sizeof odd / sizeof *odd; k++) {
    memcpy(data + (odd[k].t * N + odd[k].i) * D, odd[k].v, sizeof odd[k].v);
    memset(clean + (odd[k].t * N + odd[k].i) * D, 0, sizeof odd[k].v);
  }
  qt_run_trace(&qt_trace_a, &s, data, T, 0);
  qt_run_trace(&qt_trace_b, &s, clean, T, 0);
  for (size_t t = 0; t < T; t++)
    for (size_t j = 0; j < D; j++) assert_true(isfinite(qt_trace_a.ans[t][j]));
  qt_assert_same_trace(&qt_trace_a, &qt_trace_b, &s, T);
  qt_run_trace(&qt_trace_b, &s, data, T, 1); /* the table entry treats them alike */
  qt_assert_same_trace(&qt_trace_a, &qt_trace_b, &s, T);
}

/* ---- 8. the per-user report ---- */

/* Row i of the report against the filter and its odometer report at unit sigma. */
static void check_user_row(const char *line, size_t i, const dpgd_queries *q,
                           const dpgd_odometer *o, double budget)
{
  size_t user, level, lv;
  int active;
  double spend, frac, dl, mu_i, eps_i, mu, eps;
  if (sscanf(line, "%zu,%lf,%lf,%d,%zu,%lf,%lf,%lf", &user, &spend, &frac, &active, &level, &dl,
             &mu_i, &eps_i) != 8)
    fail_msg("row %zu unreadable: %s", i, line);
  const dpgd_filter *f = dpgd_queries_filter(q);
  double sp = dpgd_filter_spent(f, i, 0);
  assert_int_equal(user, i);
  if (!(fabs(spend - sp) <= 1e-9 * sp && fabs(frac - sp / budget) <= 1e-9 * sp / budget))
    fail_msg("row %zu: spend %.17g, spend_frac %.17g; filter spend %.17g", i, spend, frac, sp);
  assert_int_equal(active, dpgd_filter_active(f, i));
  assert_int_equal(dpgd_filter_report(f, i, o, dpgd_queries_sigma(q), &lv, &mu, &eps), DPGD_OK);
  assert_int_equal(level, lv);
  double d = dpgd_odometer_delta(o, lv);
  if (!(dl >= d && dl <= d * (1 + 1e-9) && mu_i >= mu && mu_i <= mu * (1 + 1e-9) &&
        eps_i >= eps && eps_i <= eps * (1 + 1e-9)))
    fail_msg("row %zu: delta_level %.17g mu_i %.17g eps_i %.17g; odometer %.17g %.17g %.17g", i,
             dl, mu_i, eps_i, d, mu, eps);
}

static void check_users_file(const char *path, const dpgd_queries *q, const qt_setup *s,
                             double delta)
{
  dpgd_odometer o;
  assert_int_equal(dpgd_queries_odometer(q, delta, &o), DPGD_OK);
  /* Levels cover the whole budget in GDP units at unit sigma: B / sigma^2 = 2 kappa. */
  assert_true(o.delta == delta && o.levels >= 1);
  assert_true((double)o.levels * o.level_mu2 >= 2 * s->kappa * (1 - 1e-12));
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  char line[512];
  assert_non_null(fgets(line, sizeof line, fp));
  assert_true(line[0] == '#');
  assert_non_null(fgets(line, sizeof line, fp));
  assert_string_equal(line, "user,spend,spend_frac,active,level,delta_level,mu_i,eps_i\n");
  double prev_eps = 0, prev_low = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!fgets(line, sizeof line, fp)) fail_msg("%zu rows, want %zu", i, s->n);
    check_user_row(line, i, q, &o, s->budget);
    /* The report grows with the spend: users 0..3 spent all, users 4.. more and more. */
    double eps_i = atof(strrchr(line, ',') + 1);
    if (i > 0 && i < 4) assert_true(eps_i == prev_eps);
    if (i >= 4) assert_true(eps_i <= prev_eps && eps_i >= prev_low);
    if (i >= 4) prev_low = eps_i;
    if (i < 4) prev_eps = eps_i;
  }
  assert_null(fgets(line, sizeof line, fp));
  fclose(fp);
}

static void test_write_users(void **state)
{
  (void)state;
  enum { N = 12, T = 3 };
  qt_setup s = {N, 1, 2.0, 0.6, 1.0, 0x5e9ULL};
  double table[N], a[1];
  for (size_t i = 0; i < N; i++) table[i] = i < 4 ? 1 : 0.05 * (double)i;
  dpgd_queries *q = qt_open(&s);
  for (size_t t = 0; t < T; t++) assert_int_equal(dpgd_queries_answer(q, table, a), DPGD_OK);
  const dpgd_filter *f = dpgd_queries_filter(q);
  for (size_t i = 0; i < N; i++) assert_int_equal(dpgd_filter_active(f, i), i >= 4);
  char dir[256], path[300];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/dpgd-test-queries-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/users.csv", dir);
  assert_int_equal(dpgd_queries_write_users(q, 1e-5, path), DPGD_OK);
  check_users_file(path, q, &s, 1e-5);
  unlink(path);
  snprintf(path, sizeof path, "%s/missing/users.csv", dir);
  assert_int_not_equal(dpgd_queries_write_users(q, 1e-5, path), DPGD_OK);
  assert_int_equal(rmdir(dir), 0); /* nothing left behind */
  dpgd_queries_free(q);
}

/* One research caveat for dpgd train and dpgd queries (DPGD_RESEARCH_CAVEAT_OF): each is
 * the shared sentence for its own seed option, which states the 128-bit condition and
 * that the default seed is public, followed by its own way to the secure generator. */
static void test_research_caveat_shared(void **state)
{
  (void)state;
  const char *shared[2] = {DPGD_RESEARCH_CAVEAT_OF("--seed", ""),
                           DPGD_RESEARCH_CAVEAT_OF("train.seed", "")};
  const char *caveat[2] = {DPGD_QUERIES_RESEARCH_CAVEAT, DPGD_RESEARCH_CAVEAT};
  const char *advice[2] = {"--rng secure", "train.rng = secure"};
  for (int k = 0; k < 2; k++) {
    size_t n = strlen(shared[k]);
    assert_true(strlen(caveat[k]) > n && !strncmp(caveat[k], shared[k], n));
    assert_non_null(strstr(caveat[k] + n, advice[k]));
    assert_non_null(strstr(shared[k], "at least 128 bits of secret entropy"));
    assert_non_null(strstr(shared[k], "the default seed (1) is public"));
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_noise_bound),
      cmocka_unit_test(test_noise_streams),
      cmocka_unit_test(test_epsilon),
      cmocka_unit_test(test_plain),
      cmocka_unit_test(test_open_rejects),
      cmocka_unit_test(test_open_rejects_infinite),
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_callback_failure),
      cmocka_unit_test(test_nonfinite_values),
      cmocka_unit_test(test_write_users),
      cmocka_unit_test(test_research_caveat_shared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
