/* qtrace.c -- see qtrace.h: the sparse-query tests' callback, set-up and traced runs,
 * with the filter's invariants (spends in [0, B], active iff below B, never decreasing,
 * the callback asked once per active user in order) checked at every query. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "data/testutil.h"
#include "qtrace.h"

static uint64_t qt_rng_state = 0x2385ULL;
double qt_urand(void) { return tu_urand(&qt_rng_state); } /* in [0, 1) */

double qt_ulp(double x)
{
  x = fabs(x);
  return nextafter(x, INFINITY) - x;
}

int qt_table_fn(size_t user, double *value, void *ctx)
{
  qt_ctx *c = ctx;
  if (c->n_asked < MAXN) c->asked[c->n_asked] = user;
  c->n_asked++;
  if ((long)user == c->fail_user) return 1;
  memcpy(value, c->table + user * c->dim, c->dim * sizeof *value);
  return 0;
}

dpgd_queries *qt_open(const qt_setup *s)
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

qt_trace qt_trace_a, qt_trace_b;

/* The filter's invariants at every snapshot: 0 <= s(i) <= B exactly, active iff
 * s(i) < B, spends never decrease. */
static void snapshot(qt_trace *tr, const dpgd_filter *f, size_t t, const qt_setup *s)
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
static void check_asked(const qt_ctx *c, const int *active /* (n) */, size_t n, size_t t)
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
void qt_run_trace(qt_trace *tr, const qt_setup *s, const double *data, size_t T, int use_table)
{
  assert_true(s->n <= MAXN && s->dim <= MAXD && T <= TMAX);
  dpgd_queries *q = qt_open(s);
  const dpgd_filter *f = dpgd_queries_filter(q);
  assert_non_null(f);
  assert_int_equal(dpgd_filter_n(f), s->n);
  tr->quantum = dpgd_queries_quantum(q);
  for (size_t t = 0;; t++) {
    snapshot(tr, f, t, s);
    if (t == T) break;
    const double *table = data + t * s->n * s->dim;
    qt_ctx c = {.table = table, .dim = s->dim, .fail_user = -1};
    int st = use_table ? dpgd_queries_answer(q, table, tr->ans[t])
                       : dpgd_queries_answer_fn(q, qt_table_fn, &c, tr->ans[t]);
    if (st) fail_msg("query %zu: status %d (%s)", t, st, dpgd_error_last());
    if (!use_table) check_asked(&c, tr->active[t], s->n, t);
    assert_int_equal(dpgd_queries_count(q), t + 1);
  }
  dpgd_queries_free(q);
}

/* The answers and spends of two traced runs of T queries are the same bits. */
void qt_assert_same_trace(const qt_trace *a, const qt_trace *b, const qt_setup *s, size_t T)
{
  for (size_t t = 0; t <= T; t++) {
    if (t < T && memcmp(a->ans[t], b->ans[t], s->dim * sizeof(double)))
      fail_msg("query %zu: the answers differ", t);
    if (memcmp(a->spent[t], b->spent[t], s->n * sizeof(double)))
      fail_msg("the spends before query %zu differ", t);
  }
}

/* v (dim) capped to norm min(clip, sqrt(B - spent)) as Algorithm 7 does, before the grid. */
double qt_capped(double *out, const double *v, size_t dim, double clip, double budget,
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
void qt_gen_data(double *data /* (T, n, dim) */, size_t T, size_t n, size_t dim)
{
  for (size_t t = 0; t < T; t++)
    for (size_t i = 0; i < n; i++) {
      double p = i % 5 == 0 ? 1.0 : i % 7 == 3 ? 0.0 : 0.2;
      int on = qt_urand() < p;
      for (size_t j = 0; j < dim; j++) {
        double v = dim == 1 ? qt_urand() : 2 * qt_urand() - 1;
        data[(t * n + i) * dim + j] = on ? v : 0;
      }
    }
}
