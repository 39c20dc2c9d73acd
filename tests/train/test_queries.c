/* test_queries.c -- sparse linear queries under individual filtering (dpgd_train.h,
 * "Sparse linear queries"; Feldman & Zrnic (2021), Theorem 1.2 and Corollary 4.7): neighbouring
 * datasets move the answers by exactly the capped value, the filter's spend and
 * activity, the callback contract, the noise against its closed-form accuracy bound,
 * the guarantee against the Gaussian curve and the zCDP conversion, plain composition,
 * bad parameters, NaN values and the per-user report. Every expected value is computed
 * here from the formulas of the header, never copied from a run. */
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

#define MAXN 64 /* users in a traced run */
#define MAXD 4  /* answer length in a traced run */
#define TMAX 64 /* queries in a traced run */

static uint64_t rng_state = 0x2385ULL;
static double urand(void) { return tu_urand(&rng_state); } /* in [0, 1) */

static double ulp(double x)
{
  x = fabs(x);
  return nextafter(x, INFINITY) - x;
}

/* ---- the callback: serves one query's table and records whom it was asked for ---- */
typedef struct {
  const double *table; /* (n, dim) row-major: the current query's values */
  size_t dim;
  size_t asked[MAXN]; /* users asked, in call order */
  size_t n_asked;
  long fail_user; /* returns nonzero when asked for this user; -1: never */
} qctx;

static int table_fn(size_t user, double *value, void *ctx)
{
  qctx *c = ctx;
  if (c->n_asked < MAXN) c->asked[c->n_asked] = user;
  c->n_asked++;
  if ((long)user == c->fail_user) return 1;
  memcpy(value, c->table + user * c->dim, c->dim * sizeof *value);
  return 0;
}

typedef struct {
  size_t n, dim;
  double budget, kappa, clip;
  uint64_t seed;
} setup;

static dpgd_queries *open_q(const setup *s)
{
  dpgd_queries_params p = {.n_users = s->n,
                           .dim = s->dim,
                           .budget = s->budget,
                           .kappa = s->kappa,
                           .clip = s->clip,
                           .rng = DPGD_RNG_RESEARCH,
                           .seed = dpgd_seed_from_u64(s->seed)};
  dpgd_queries *q = NULL;
  int st = dpgd_queries_open(&q, &p);
  if (st) fail_msg("dpgd_queries_open: status %d (%s)", st, dpgd_error_last());
  assert_non_null(q);
  return q;
}

/* ---- a traced run: answers, and each user's spend and flag before every query ---- */
typedef struct {
  double ans[TMAX][MAXD];
  double spent[TMAX + 1][MAXN]; /* [t]: before query t; [T]: after the last */
  int active[TMAX + 1][MAXN];
  double quantum;
} trace;

static trace trace_a, trace_b; /* static: too large for a test's stack */

/* The filter's invariants at every snapshot: 0 <= s(i) <= B exactly, active iff
 * s(i) < B, spends never decrease. */
static void snapshot(trace *tr, const dpgd_filter *f, size_t t, const setup *s)
{
  for (size_t i = 0; i < s->n; i++) {
    double sp = dpgd_filter_spent(f, i, 0);
    int act = dpgd_filter_active(f, i);
    if (!(sp >= 0 && sp <= s->budget))
      fail_msg("user %zu before query %zu: spend %.17g outside [0, B = %.17g]", i, t, sp,
               s->budget);
    if (act != (sp < s->budget))
      fail_msg("user %zu before query %zu: active %d but spend %.17g, B %.17g", i, t, act, sp,
               s->budget);
    if (t > 0 && sp < tr->spent[t - 1][i])
      fail_msg("user %zu: spend went down at query %zu", i, t);
    tr->spent[t][i] = sp;
    tr->active[t][i] = act;
  }
}

/* The callback was asked once for every active user, in user order, and for nobody
 * else. */
static void check_asked(const qctx *c, const int *active /* (n) */, size_t n, size_t t)
{
  size_t n_active = 0;
  for (size_t i = 0; i < n; i++) n_active += active[i] != 0;
  if (c->n_asked != n_active)
    fail_msg("query %zu: callback asked %zu times, %zu users active", t, c->n_asked, n_active);
  for (size_t k = 0; k < c->n_asked; k++) {
    if (!active[c->asked[k]])
      fail_msg("query %zu: inactive user %zu was asked for its value", t, c->asked[k]);
    if (k > 0 && c->asked[k] <= c->asked[k - 1])
      fail_msg("query %zu: users asked out of order (%zu after %zu)", t, c->asked[k],
               c->asked[k - 1]);
  }
}

/* Answers T queries of data (T, n, dim), through the callback or the table entry. */
static void run_trace(trace *tr, const setup *s, const double *data, size_t T, int use_table)
{
  assert_true(s->n <= MAXN && s->dim <= MAXD && T <= TMAX);
  dpgd_queries *q = open_q(s);
  const dpgd_filter *f = dpgd_queries_filter(q);
  assert_non_null(f);
  assert_int_equal(dpgd_filter_n(f), s->n);
  tr->quantum = dpgd_queries_quantum(q);
  for (size_t t = 0;; t++) {
    snapshot(tr, f, t, s);
    if (t == T) break;
    const double *table = data + t * s->n * s->dim;
    qctx c = {.table = table, .dim = s->dim, .fail_user = -1};
    int st = use_table ? dpgd_queries_answer(q, table, tr->ans[t])
                       : dpgd_queries_answer_fn(q, table_fn, &c, tr->ans[t]);
    if (st) fail_msg("query %zu: status %d (%s)", t, st, dpgd_error_last());
    if (!use_table) check_asked(&c, tr->active[t], s->n, t);
    assert_int_equal(dpgd_queries_count(q), t + 1);
  }
  dpgd_queries_free(q);
}

/* The answers and spends of two traced runs of T queries are the same bits. */
static void assert_same_trace(const trace *a, const trace *b, const setup *s, size_t T)
{
  for (size_t t = 0; t <= T; t++) {
    if (t < T && memcmp(a->ans[t], b->ans[t], s->dim * sizeof(double)))
      fail_msg("query %zu: the answers differ", t);
    if (memcmp(a->spent[t], b->spent[t], s->n * sizeof(double)))
      fail_msg("the spends before query %zu differ", t);
  }
}

/* v (dim) capped to norm min(clip, sqrt(B - spent)) as Algorithm 7 does, before the grid. */
static double capped(double *out, const double *v, size_t dim, double clip, double budget,
                     double spent)
{
  double cap = fmin(clip, sqrt(budget - spent)), norm = 0;
  for (size_t j = 0; j < dim; j++) norm += v[j] * v[j];
  norm = sqrt(norm);
  double f = norm > cap ? cap / norm : 1;
  for (size_t j = 0; j < dim; j++) out[j] = v[j] * f;
  return cap;
}

/* users i % 5 == 0 dense, i % 7 == 3 always 0, the others non-zero one query in five;
 * entries in [0, 1] (dim 1) or [-1, 1]. */
static void gen_data(double *data /* (T, n, dim) */, size_t T, size_t n, size_t dim)
{
  for (size_t t = 0; t < T; t++)
    for (size_t i = 0; i < n; i++) {
      double p = i % 5 == 0 ? 1.0 : i % 7 == 3 ? 0.0 : 0.2;
      int on = urand() < p;
      for (size_t j = 0; j < dim; j++) {
        double v = dim == 1 ? urand() : 2 * urand() - 1;
        data[(t * n + i) * dim + j] = on ? v : 0;
      }
    }
}

static int is_zero(const double *v, size_t dim)
{
  for (size_t j = 0; j < dim; j++)
    if (v[j] != 0) return 0;
  return 1;
}

/* ---- 1. neighbours: one user present, or replaced by a null user ---- */

/* Query t of a (user u present) against b (u's values zeroed, same seed): where u was
 * active with a non-zero value the answers differ by its capped value, rounded toward
 * zero onto the grid (within one quantum an entry, plus the rounding of adding the
 * noise), and the difference's norm is at most the cap; elsewhere they are bitwise
 * equal. Returns 1 when the remaining budget, not the clip, capped the value. */
static int check_neighbour_query(const trace *a, const trace *b, const double *v, size_t t,
                                 size_t u, const setup *s)
{
  size_t dim = s->dim;
  if (!a->active[t][u] || is_zero(v, dim)) {
    if (memcmp(a->ans[t], b->ans[t], dim * sizeof(double)))
      fail_msg("user %zu, query %zu (active %d): answers differ, but the user gives nothing", u,
               t, a->active[t][u]);
    return 0;
  }
  double c[MAXD], d2 = 0, slack = 0, n2 = 0;
  double cap = capped(c, v, dim, s->clip, s->budget, a->spent[t][u]);
  for (size_t j = 0; j < dim; j++) {
    double x = a->ans[t][j], y = b->ans[t][j], d = x - y;
    double r = 4 * ulp(fmax(fabs(x), fabs(y))) + 4 * ulp(c[j]);
    if (!(fabs(d - c[j]) <= a->quantum + r))
      fail_msg("user %zu, query %zu, entry %zu: answers differ by %.17g, capped value %.17g "
               "(spend %.17g, cap %.17g, quantum %g)",
               u, t, j, d, c[j], a->spent[t][u], cap, a->quantum);
    if (!(fabs(d) <= fabs(c[j]) + r))
      fail_msg("user %zu, query %zu, entry %zu: %.17g is not rounded toward zero from %.17g", u,
               t, j, d, c[j]);
    d2 += d * d;
    n2 += v[j] * v[j];
    slack = fmax(slack, r);
  }
  if (!(sqrt(d2) <= cap + sqrt((double)dim) * slack))
    fail_msg("user %zu, query %zu: the answers moved by %.17g, more than the cap %.17g", u, t,
             sqrt(d2), cap);
  return cap < s->clip && sqrt(n2) > cap;
}

static void neighbours(size_t dim, double clip, double budget)
{
  enum { N = 50, T = 40 };
  setup s = {N, dim, budget, 0.7, clip, 0x5eed2385ULL};
  static double data[T * N * MAXD], zeroed[T * N * MAXD];
  gen_data(data, T, N, dim);
  run_trace(&trace_a, &s, data, T, 0);
  size_t n_budget_capped = 0, n_dropped = 0;
  for (size_t u = 0; u < N; u++) {
    memcpy(zeroed, data, sizeof data);
    for (size_t t = 0; t < T; t++) memset(zeroed + (t * N + u) * dim, 0, dim * sizeof(double));
    run_trace(&trace_b, &s, zeroed, T, 0);
    assert_true(trace_b.quantum == trace_a.quantum);
    for (size_t t = 0; t <= T; t++) {
      if (t < T)
        n_budget_capped +=
            check_neighbour_query(&trace_a, &trace_b, data + (t * N + u) * dim, t, u, &s);
      /* The other users' filters do not see u: their spends are the same bits. */
      for (size_t i = 0; i < N; i++)
        if (i != u && trace_b.spent[t][i] != trace_a.spent[t][i])
          fail_msg("removing user %zu changed user %zu's spend before query %zu", u, i, t);
      assert_true(trace_b.spent[t][u] == 0 && trace_b.active[t][u]);
    }
    n_dropped += !trace_a.active[T][u];
  }
  /* The data must reach the filter's boundaries: budget caps below the clip, drops. */
  assert_true(n_budget_capped >= 5);
  assert_true(n_dropped >= 5);
}

static void test_neighbours_scalar(void **state)
{
  (void)state;
  neighbours(1, 0.8, 3.7);
}

static void test_neighbours_vector(void **state)
{
  (void)state;
  neighbours(3, 0.8, 3.7);
}

/* ---- 2. a dense user: value 1 in every query, clip 1 ---- */
enum { DENSE_N = 8, DENSE_T = 10, DENSE_U = 3 };

static void dense_runs(const setup *s)
{
  static double data[DENSE_T * DENSE_N], zeroed[DENSE_T * DENSE_N];
  gen_data(data, DENSE_T, DENSE_N, 1);
  for (size_t t = 0; t < DENSE_T; t++) data[t * DENSE_N + DENSE_U] = 1;
  memcpy(zeroed, data, sizeof data);
  for (size_t t = 0; t < DENSE_T; t++) zeroed[t * DENSE_N + DENSE_U] = 0;
  run_trace(&trace_a, s, data, DENSE_T, 0);
  run_trace(&trace_b, s, zeroed, DENSE_T, 0);
}

static double dense_diff(size_t t, double *tol)
{
  double x = trace_a.ans[t][0], y = trace_b.ans[t][0];
  *tol = trace_a.quantum + 4 * ulp(fmax(fabs(x), fabs(y)));
  return x - y;
}

/* The first five queries carry 1 each (on the grid: charged exactly), so B = 5 is
 * spent exactly and the user is dropped from query 6 on. */
static void check_dense_first_five(void)
{
  for (size_t t = 0; t < 5; t++) {
    double tol, d = dense_diff(t, &tol);
    assert_true(trace_a.active[t][DENSE_U]);
    if (trace_a.spent[t][DENSE_U] != (double)t)
      fail_msg("dense user before query %zu: spend %.17g, want %zu", t + 1,
               trace_a.spent[t][DENSE_U], t);
    if (!(fabs(d - 1) <= tol))
      fail_msg("dense user, query %zu: answers differ by %.17g, want 1", t + 1, d);
  }
}

static void test_dense_user_exhausted(void **state)
{
  (void)state;
  setup s = {DENSE_N, 1, 5.0, 1.0, 1.0, 0xde45eULL};
  dense_runs(&s);
  check_dense_first_five();
  for (size_t t = 5; t < DENSE_T; t++) {
    assert_false(trace_a.active[t][DENSE_U]);
    assert_true(trace_a.spent[t][DENSE_U] == 5.0);
    if (memcmp(trace_a.ans[t], trace_b.ans[t], sizeof(double)))
      fail_msg("dense user dropped, query %zu: answers differ by %.17g", t + 1,
               trace_a.ans[t][0] - trace_b.ans[t][0]);
  }
}

/* B = 5.5: query 6 carries what is left, sqrt(0.5); afterwards the user gives at most
 * the square root of whatever the grid left unspent. */
static void test_dense_user_partial(void **state)
{
  (void)state;
  setup s = {DENSE_N, 1, 5.5, 1.0, 1.0, 0xde45eULL};
  dense_runs(&s);
  check_dense_first_five();
  double tol, d = dense_diff(5, &tol);
  assert_true(trace_a.active[5][DENSE_U]);
  if (!(fabs(d - sqrt(0.5)) <= tol))
    fail_msg("dense user, query 6: answers differ by %.17g, want sqrt(0.5) = %.17g", d,
             sqrt(0.5));
  double s6 = trace_a.spent[6][DENSE_U];
  if (!(s6 <= 5.5 && s6 >= 5.5 - 2 * trace_a.quantum - 8 * ulp(5.5)))
    fail_msg("dense user after query 6: spend %.17g, want 5.5 within the grid", s6);
  for (size_t t = 6; t < DENSE_T; t++) {
    d = dense_diff(t, &tol);
    double left = sqrt(5.5 - trace_a.spent[t][DENSE_U]);
    if (!trace_a.active[t][DENSE_U])
      assert_memory_equal(trace_a.ans[t], trace_b.ans[t], sizeof(double));
    else if (!(d >= -tol && d <= left + tol))
      fail_msg("dense user, query %zu: answers differ by %.17g, budget left %.17g", t + 1, d,
               left);
  }
}

/* ---- 3. the spend: s(i) += ||qbar_t(i)||^2, never above B ---- */

/* Each query's charge against the capped value computed from the spend before it. */
static void check_step_charges(const setup *s, const double *data, size_t T)
{
  double c[MAXD], q = trace_a.quantum;
  for (size_t t = 0; t < T; t++)
    for (size_t i = 0; i < s->n; i++) {
      double ds = trace_a.spent[t + 1][i] - trace_a.spent[t][i];
      if (!trace_a.active[t][i]) {
        if (ds != 0) fail_msg("user %zu charged %.17g at query %zu while inactive", i, ds, t);
        continue;
      }
      double cap = capped(c, data + (t * s->n + i) * s->dim, s->dim, s->clip, s->budget,
                          trace_a.spent[t][i]);
      double c2 = 0;
      for (size_t j = 0; j < s->dim; j++) c2 += c[j] * c[j];
      if (!(fabs(ds - c2) <= 2 * cap * sqrt((double)s->dim) * q + 8 * ulp(s->budget)))
        fail_msg("user %zu, query %zu: charged %.17g, capped value's squared norm %.17g", i, t,
                 ds, c2);
    }
}

/* The whole history against a model of Algorithm 7 kept here, with no grid. */
static void check_model_spend(const setup *s, const double *data, size_t T)
{
  double c[MAXD], q = trace_a.quantum;
  double tol = 2 * (double)T * s->clip * sqrt((double)s->dim) * q + 64 * ulp(s->budget);
  for (size_t i = 0; i < s->n; i++) {
    double model = 0;
    for (size_t t = 0; t < T; t++) {
      if (!(model < s->budget)) break;
      capped(c, data + (t * s->n + i) * s->dim, s->dim, s->clip, s->budget, model);
      for (size_t j = 0; j < s->dim; j++) model += c[j] * c[j];
    }
    if (!(fabs(trace_a.spent[T][i] - model) <= tol))
      fail_msg("user %zu: spend %.17g, the sum of its capped squared norms %.17g", i,
               trace_a.spent[T][i], model);
  }
}

static void test_spend(void **state)
{
  (void)state;
  enum { N = 40, T = 60, D = 3 };
  setup s = {N, D, 4.7, 0.8, 0.9, 0x5bedULL};
  static double data[T * N * D];
  gen_data(data, T, N, D);
  run_trace(&trace_a, &s, data, T, 0); /* checks the callback contract at every query */
  check_step_charges(&s, data, T);
  check_model_spend(&s, data, T);
  size_t dropped = 0;
  for (size_t i = 0; i < N; i++) dropped += !trace_a.active[T][i];
  assert_true(dropped >= 8); /* the dense users (i % 5 == 0) at least */
  /* The table entry answers the same bits as the callback. */
  run_trace(&trace_b, &s, data, T, 1);
  assert_same_trace(&trace_a, &trace_b, &s, T);
}

/* ---- 4. the noise against Corollary 4.7's bound ---- */

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
  setup s = {N, D, 2100, 2100 / (2 * sigma0 * sigma0), 1.0, 0xb0a7ULL};
  dpgd_queries *q = open_q(&s);
  double sigma = dpgd_queries_sigma(q), want = sqrt(s.budget / (2 * s.kappa));
  if (!(fabs(sigma - want) <= 1e-12 * want))
    fail_msg("sigma %.17g, sqrt(B / (2 kappa)) = %.17g", sigma, want);
  check_bound_closed_form(q, D);
  double bound = dpgd_queries_bound(q, beta), sum = 0, sum2 = 0, values[N * D], a[D];
  size_t over = 0;
  for (size_t k = 0; k < K; k++) {
    double exact[D] = {0};
    for (size_t i = 0; i < N * D; i++) values[i] = floor(urand() * 33) / 64;
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
  setup s = {5, 2, 3.0, 0.5, 1.0, 0x2385ULL};
  double values[10] = {0}, a[2], b[2];
  dpgd_queries *q = open_q(&s), *r = open_q(&s);
  assert_int_equal(dpgd_queries_answer(q, values, a), DPGD_OK);
  assert_int_equal(dpgd_queries_answer(r, values, b), DPGD_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_true(a[0] != 0 && a[1] != 0 && a[0] != a[1]);
  dpgd_queries_free(r);
  s.seed++;
  r = open_q(&s);
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
    setup s1 = {10, 2, 3.0, kappas[k], 1.0, 1}, s2 = {7, 1, 11.2, kappas[k], INFINITY, 2};
    dpgd_queries *q1 = open_q(&s1), *q2 = open_q(&s2);
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

static void check_plain_sums(const setup *s, const double *data, size_t K)
{
  for (size_t t = 0; t < K; t++)
    for (size_t j = 0; j < s->dim; j++) {
      long double exact = 0;
      for (size_t i = 0; i < s->n; i++) {
        if (!trace_a.active[t][i]) fail_msg("user %zu inactive at query %zu <= k", i, t);
        exact += data[(t * s->n + i) * s->dim + j];
      }
      double x = trace_a.ans[t][j], y = trace_b.ans[t][j], d = x - y;
      double tol = (double)s->n * trace_a.quantum + 4 * ulp(fmax(fabs(x), fabs(y)));
      if (!(fabs(d - (double)exact) <= tol))
        fail_msg("query %zu, entry %zu: answer minus noise %.17g, true sum %.17g", t, j, d,
                 (double)exact);
    }
}

static void test_plain(void **state)
{
  (void)state;
  enum { N = 30, D = 2, K = 7 };
  setup s = {N, D, K * 1.0, 1.3, 1.0, 0x9a1ULL};
  static double data[(K + 1) * N * D], zero[(K + 1) * N * D];
  for (size_t t = 0; t <= K; t++)
    for (size_t i = 0; i < N; i++) {
      double *v = data + (t * N + i) * D, th = 2 * M_PI * urand(), r = 0.999 * urand();
      v[0] = r * cos(th);
      v[1] = r * sin(th);
      if (i < 3) { /* norm exactly C every time */
        v[0] = i == 1 ? 0 : (t % 2 ? -1 : 1);
        v[1] = i == 1 ? -1 : 0;
      }
    }
  run_trace(&trace_a, &s, data, K + 1, 0);
  run_trace(&trace_b, &s, zero, K + 1, 0);
  check_plain_sums(&s, data, K);
  for (size_t i = 0; i < N; i++) {
    double sp = trace_a.spent[K][i];
    if (i < 3 && !(sp == K && !trace_a.active[K][i]))
      fail_msg("user %zu of norm C: spend %.17g after k = %d queries, want k", i, sp, (int)K);
    if (i >= 3 && !(sp < K && trace_a.active[K][i]))
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
    setup s = {c[k].n, 3, c[k].budget, 0.5, c[k].clip, 1};
    dpgd_queries *q = open_q(&s);
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
  setup s = {N, D, 3.0, 0.5, 1.0, 0xfa11ULL};
  double table[N * D], a[D], before[N];
  for (size_t i = 0; i < N * D; i++) table[i] = 0.5 - 0.03 * (double)i;
  dpgd_queries *q = open_q(&s);
  const dpgd_filter *f = dpgd_queries_filter(q);
  for (int k = 0; k < 2; k++) assert_int_equal(dpgd_queries_answer(q, table, a), DPGD_OK);
  for (size_t i = 0; i < N; i++) before[i] = dpgd_filter_spent(f, i, 0);
  const long fail_at[] = {0, 4, N - 1};
  for (size_t k = 0; k < 3; k++) {
    qctx c = {.table = table, .dim = D, .fail_user = fail_at[k]};
    dpgd_error_clear();
    assert_int_equal(dpgd_queries_answer_fn(q, table_fn, &c, a), DPGD_EINVAL);
    assert_true(dpgd_error_last()[0] != 0);
    assert_int_equal(dpgd_queries_count(q), 2);
    for (size_t i = 0; i < N; i++)
      if (dpgd_filter_spent(f, i, 0) != before[i] || !dpgd_filter_active(f, i))
        fail_msg("failing callback at user %ld: user %zu charged", fail_at[k], i);
  }
  qctx c = {.table = table, .dim = D, .fail_user = -1};
  assert_int_equal(dpgd_queries_answer_fn(q, table_fn, &c, a), DPGD_OK);
  assert_int_equal(dpgd_queries_count(q), 3);
  assert_true(dpgd_filter_spent(f, 0, 0) > before[0]);
  dpgd_queries_free(q);
}

/* A value with a NaN or infinite entry gives what a zero value gives: nothing, no charge. */
static void test_nonfinite_values(void **state)
{
  (void)state;
  enum { N = 6, D = 3, T = 4 };
  setup s = {N, D, 2.0, 0.5, 1.0, 0x7a7ULL};
  static double data[T * N * D], clean[T * N * D];
  gen_data(data, T, N, D);
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
  run_trace(&trace_a, &s, data, T, 0);
  run_trace(&trace_b, &s, clean, T, 0);
  for (size_t t = 0; t < T; t++)
    for (size_t j = 0; j < D; j++) assert_true(isfinite(trace_a.ans[t][j]));
  assert_same_trace(&trace_a, &trace_b, &s, T);
  run_trace(&trace_b, &s, data, T, 1); /* the table entry treats them alike */
  assert_same_trace(&trace_a, &trace_b, &s, T);
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

static void check_users_file(const char *path, const dpgd_queries *q, const setup *s,
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
  setup s = {N, 1, 2.0, 0.6, 1.0, 0x5e9ULL};
  double table[N], a[1];
  for (size_t i = 0; i < N; i++) table[i] = i < 4 ? 1 : 0.05 * (double)i;
  dpgd_queries *q = open_q(&s);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_neighbours_scalar),
      cmocka_unit_test(test_neighbours_vector),
      cmocka_unit_test(test_dense_user_exhausted),
      cmocka_unit_test(test_dense_user_partial),
      cmocka_unit_test(test_spend),
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
