/* test_queries.c -- sparse linear queries under individual filtering (dpgd_train.h,
 * "Sparse linear queries"; Feldman & Zrnic (2021), Theorem 1.2 and Corollary 4.7): neighbouring
 * datasets move the answers by exactly the capped value, a dense user's exhaustion, and
 * the filter's spend and activity against the capped values. The noise, the guarantee,
 * plain composition, bad parameters, NaN values and the per-user report are in
 * test_queries_api.c. Every expected value is computed here from the formulas of the
 * header, never copied from a run. */
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
static int check_neighbour_query(const qt_trace *a, const qt_trace *b, const double *v,
                                 size_t t, size_t u, const qt_setup *s)
{
  size_t dim = s->dim;
  if (!a->active[t][u] || is_zero(v, dim)) {
    if (memcmp(a->ans[t], b->ans[t], dim * sizeof(double)))
      fail_msg("user %zu, query %zu (active %d): answers differ, but the user gives nothing", u,
               t, a->active[t][u]);
    return 0;
  }
  double c[MAXD], d2 = 0, slack = 0, n2 = 0;
  double cap = qt_capped(c, v, dim, s->clip, s->budget, a->spent[t][u]);
  for (size_t j = 0; j < dim; j++) {
    double x = a->ans[t][j], y = b->ans[t][j], d = x - y;
    double r = 4 * qt_ulp(fmax(fabs(x), fabs(y))) + 4 * qt_ulp(c[j]);
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
  qt_setup s = {N, dim, budget, 0.7, clip, 0x5eed2385ULL};
  static double data[T * N * MAXD], zeroed[T * N * MAXD];
  qt_gen_data(data, T, N, dim);
  qt_run_trace(&qt_trace_a, &s, data, T, 0);
  size_t n_budget_capped = 0, n_dropped = 0;
  for (size_t u = 0; u < N; u++) {
    memcpy(zeroed, data, sizeof data);
    for (size_t t = 0; t < T; t++) memset(zeroed + (t * N + u) * dim, 0, dim * sizeof(double));
    qt_run_trace(&qt_trace_b, &s, zeroed, T, 0);
    assert_true(qt_trace_b.quantum == qt_trace_a.quantum);
    for (size_t t = 0; t <= T; t++) {
      if (t < T)
        n_budget_capped +=
            check_neighbour_query(&qt_trace_a, &qt_trace_b, data + (t * N + u) * dim, t, u, &s);
      /* The other users' filters do not see u: their spends are the same bits. */
      for (size_t i = 0; i < N; i++)
        if (i != u && qt_trace_b.spent[t][i] != qt_trace_a.spent[t][i])
          fail_msg("removing user %zu changed user %zu's spend before query %zu", u, i, t);
      assert_true(qt_trace_b.spent[t][u] == 0 && qt_trace_b.active[t][u]);
    }
    n_dropped += !qt_trace_a.active[T][u];
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

static void dense_runs(const qt_setup *s)
{
  static double data[DENSE_T * DENSE_N], zeroed[DENSE_T * DENSE_N];
  qt_gen_data(data, DENSE_T, DENSE_N, 1);
  for (size_t t = 0; t < DENSE_T; t++) data[t * DENSE_N + DENSE_U] = 1;
  memcpy(zeroed, data, sizeof data);
  for (size_t t = 0; t < DENSE_T; t++) zeroed[t * DENSE_N + DENSE_U] = 0;
  qt_run_trace(&qt_trace_a, s, data, DENSE_T, 0);
  qt_run_trace(&qt_trace_b, s, zeroed, DENSE_T, 0);
}

static double dense_diff(size_t t, double *tol)
{
  double x = qt_trace_a.ans[t][0], y = qt_trace_b.ans[t][0];
  *tol = qt_trace_a.quantum + 4 * qt_ulp(fmax(fabs(x), fabs(y)));
  return x - y;
}

/* The first five queries carry 1 each (on the grid: charged exactly), so B = 5 is
 * spent exactly and the user is dropped from query 6 on. */
static void check_dense_first_five(void)
{
  for (size_t t = 0; t < 5; t++) {
    double tol, d = dense_diff(t, &tol);
    assert_true(qt_trace_a.active[t][DENSE_U]);
    if (qt_trace_a.spent[t][DENSE_U] != (double)t)
      fail_msg("dense user before query %zu: spend %.17g, want %zu", t + 1,
               qt_trace_a.spent[t][DENSE_U], t);
    if (!(fabs(d - 1) <= tol))
      fail_msg("dense user, query %zu: answers differ by %.17g, want 1", t + 1, d);
  }
}

static void test_dense_user_exhausted(void **state)
{
  (void)state;
  qt_setup s = {DENSE_N, 1, 5.0, 1.0, 1.0, 0xde45eULL};
  dense_runs(&s);
  check_dense_first_five();
  for (size_t t = 5; t < DENSE_T; t++) {
    assert_false(qt_trace_a.active[t][DENSE_U]);
    assert_true(qt_trace_a.spent[t][DENSE_U] == 5.0);
    if (memcmp(qt_trace_a.ans[t], qt_trace_b.ans[t], sizeof(double)))
      fail_msg("dense user dropped, query %zu: answers differ by %.17g", t + 1,
               qt_trace_a.ans[t][0] - qt_trace_b.ans[t][0]);
  }
}

/* B = 5.5: query 6 carries what is left, sqrt(0.5); afterwards the user gives at most
 * the square root of whatever the grid left unspent. */
static void test_dense_user_partial(void **state)
{
  (void)state;
  qt_setup s = {DENSE_N, 1, 5.5, 1.0, 1.0, 0xde45eULL};
  dense_runs(&s);
  check_dense_first_five();
  double tol, d = dense_diff(5, &tol);
  assert_true(qt_trace_a.active[5][DENSE_U]);
  if (!(fabs(d - sqrt(0.5)) <= tol))
    fail_msg("dense user, query 6: answers differ by %.17g, want sqrt(0.5) = %.17g", d,
             sqrt(0.5));
  double s6 = qt_trace_a.spent[6][DENSE_U];
  if (!(s6 <= 5.5 && s6 >= 5.5 - 2 * qt_trace_a.quantum - 8 * qt_ulp(5.5)))
    fail_msg("dense user after query 6: spend %.17g, want 5.5 within the grid", s6);
  for (size_t t = 6; t < DENSE_T; t++) {
    d = dense_diff(t, &tol);
    double left = sqrt(5.5 - qt_trace_a.spent[t][DENSE_U]);
    if (!qt_trace_a.active[t][DENSE_U])
      assert_memory_equal(qt_trace_a.ans[t], qt_trace_b.ans[t], sizeof(double));
    else if (!(d >= -tol && d <= left + tol))
      fail_msg("dense user, query %zu: answers differ by %.17g, budget left %.17g", t + 1, d,
               left);
  }
}

/* ---- 3. the spend: s(i) += ||qbar_t(i)||^2, never above B ---- */

/* Each query's charge against the capped value computed from the spend before it. */
static void check_step_charges(const qt_setup *s, const double *data, size_t T)
{
  double c[MAXD], q = qt_trace_a.quantum;
  for (size_t t = 0; t < T; t++)
    for (size_t i = 0; i < s->n; i++) {
      double ds = qt_trace_a.spent[t + 1][i] - qt_trace_a.spent[t][i];
      if (!qt_trace_a.active[t][i]) {
        if (ds != 0) fail_msg("user %zu charged %.17g at query %zu while inactive", i, ds, t);
        continue;
      }
      double cap = qt_capped(c, data + (t * s->n + i) * s->dim, s->dim, s->clip, s->budget,
                             qt_trace_a.spent[t][i]);
      double c2 = 0;
      for (size_t j = 0; j < s->dim; j++) c2 += c[j] * c[j];
      if (!(fabs(ds - c2) <= 2 * cap * sqrt((double)s->dim) * q + 8 * qt_ulp(s->budget)))
        fail_msg("user %zu, query %zu: charged %.17g, capped value's squared norm %.17g", i, t,
                 ds, c2);
    }
}

/* The whole history against a model of Algorithm 7 kept here, with no grid. */
static void check_model_spend(const qt_setup *s, const double *data, size_t T)
{
  double c[MAXD], q = qt_trace_a.quantum;
  double tol = 2 * (double)T * s->clip * sqrt((double)s->dim) * q + 64 * qt_ulp(s->budget);
  for (size_t i = 0; i < s->n; i++) {
    double model = 0;
    for (size_t t = 0; t < T; t++) {
      if (!(model < s->budget)) break;
      qt_capped(c, data + (t * s->n + i) * s->dim, s->dim, s->clip, s->budget, model);
      for (size_t j = 0; j < s->dim; j++) model += c[j] * c[j];
    }
    if (!(fabs(qt_trace_a.spent[T][i] - model) <= tol))
      fail_msg("user %zu: spend %.17g, the sum of its qt_capped squared norms %.17g", i,
               qt_trace_a.spent[T][i], model);
  }
}

static void test_spend(void **state)
{
  (void)state;
  enum { N = 40, T = 60, D = 3 };
  qt_setup s = {N, D, 4.7, 0.8, 0.9, 0x5bedULL};
  static double data[T * N * D];
  qt_gen_data(data, T, N, D);
  qt_run_trace(&qt_trace_a, &s, data, T, 0); /* checks the callback contract at every query */
  check_step_charges(&s, data, T);
  check_model_spend(&s, data, T);
  size_t dropped = 0;
  for (size_t i = 0; i < N; i++) dropped += !qt_trace_a.active[T][i];
  assert_true(dropped >= 8); /* the dense users (i % 5 == 0) at least */
  /* The table entry answers the same bits as the callback. */
  qt_run_trace(&qt_trace_b, &s, data, T, 1);
  qt_assert_same_trace(&qt_trace_a, &qt_trace_b, &s, T);
}

/* ---- 4. the noise against Corollary 4.7's bound ---- */

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_neighbours_scalar),
      cmocka_unit_test(test_neighbours_vector),
      cmocka_unit_test(test_dense_user_exhausted),
      cmocka_unit_test(test_dense_user_partial),
      cmocka_unit_test(test_spend),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
