/* qtrace.h -- helpers shared by the sparse-query tests (test_queries.c,
 * test_queries_api.c): a callback serving one query's table, a query set-up, a traced
 * run with the filter's invariants checked at every query, and their synthetic data. */
#ifndef DPGD_TEST_QTRACE_H
#define DPGD_TEST_QTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_train.h"

#define MAXN 64 /* users in a traced run */
#define MAXD 4  /* answer length in a traced run */
#define TMAX 64 /* queries in a traced run */

/* A uniform draw in [0, 1) from the tests' one generator (seed 0x2385). */
double qt_urand(void);
/* The spacing of doubles at |x|. */
double qt_ulp(double x);

/* ---- the callback: serves one query's table and records whom it was asked for ---- */
typedef struct {
  const double *table; /* (n, dim) row-major: the current query's values */
  size_t dim;
  size_t asked[MAXN]; /* users asked, in call order */
  size_t n_asked;
  long fail_user; /* returns nonzero when asked for this user; -1: never */
} qt_ctx;

/* The callback (ctx a qt_ctx): records the user, fails for fail_user, else copies its row. */
int qt_table_fn(size_t user, double *value, void *ctx);

typedef struct {
  size_t n, dim;
  double budget, kappa, clip;
  uint64_t seed;
} qt_setup;

/* dpgd_queries_open of s (research stream, s->seed), failing the test on an error. */
dpgd_queries *qt_open(const qt_setup *s);

/* ---- a traced run: answers, and each user's spend and flag before every query ---- */
typedef struct {
  double ans[TMAX][MAXD];
  double spent[TMAX + 1][MAXN]; /* [t]: before query t; [T]: after the last */
  int active[TMAX + 1][MAXN];
  double quantum;
} qt_trace;

extern qt_trace qt_trace_a, qt_trace_b; /* static storage: too large for a test's stack */

/* Answers T queries of data (T, n, dim), through the callback or the table entry. */
void qt_run_trace(qt_trace *tr, const qt_setup *s, const double *data, size_t T, int use_table);
/* The answers and spends of two traced runs of T queries are the same bits. */
void qt_assert_same_trace(const qt_trace *a, const qt_trace *b, const qt_setup *s, size_t T);
/* v (dim) capped to norm min(clip, sqrt(B - spent)) as Algorithm 7 does, before the grid. */
double qt_capped(double *out, const double *v, size_t dim, double clip, double budget,
                 double spent);
/* users i % 5 == 0 dense, i % 7 == 3 always 0, the others non-zero one query in five;
 * entries in [0, 1] (dim 1) or [-1, 1]. */
void qt_gen_data(double *data /* (T, n, dim) */, size_t T, size_t n, size_t dim);

#endif
