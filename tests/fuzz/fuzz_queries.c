/* fuzz_queries.c -- libFuzzer target for the input of `dpgd queries`: the CSV reader
 * (dpgd_csv_parse), the checks and query layout (dpgd_qlayout_build), then the query
 * machine itself (dpgd_queries_*) over every laid-out query, with a budget and a clip
 * taken from the input's last bytes so that users are capped, quantized and dropped.
 * A layout that builds has n >= 1 queries of one dim >= 1 within the table's columns;
 * every answer is finite; no user's spend passes its budget (dpgd_filter_check) and a
 * dropped user stays dropped. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_train.h"
#include "queries_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Answers every query of L; traps on a broken invariant. */
static void answer_all(const dpgd_csv *t, const dpgd_qlayout *L, double budget, double clip)
{
  dpgd_queries_params p = {t->n_rows,         L->dim,      budget, 0.5, clip,
                           DPGD_RNG_RESEARCH, {{[31] = 1}}};
  dpgd_queries *q = NULL;
  if (dpgd_queries_open(&q, &p)) return;
  double *a = calloc(L->dim, sizeof *a);
  char *was = calloc(t->n_rows, 1);
  for (size_t k = 0; a && was && k < L->n; k++) {
    dpgd_qcolumn c = {t, L->col[k], L->dim};
    if (dpgd_queries_answer_fn(q, dpgd_qcolumn_value, &c, a)) __builtin_trap();
    for (size_t j = 0; j < L->dim; j++)
      if (!isfinite(a[j])) __builtin_trap();
    const dpgd_filter *f = dpgd_queries_filter(q);
    if (dpgd_filter_check(f)) __builtin_trap();
    for (size_t i = 0; i < t->n_rows; i++) {
      int act = dpgd_filter_active(f, i);
      if (was[i] && act) __builtin_trap(); /* a dropped user came back */
      was[i] = (char)!act;
    }
  }
  free(a);
  free(was);
  dpgd_queries_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* The last two bytes, when present, set the budget and the clip. */
  double budget = size >= 2 ? 0.25 + data[size - 2] / 16.0 : 1.0;
  double clip = size >= 2 && data[size - 1] < 128 ? 0.05 + data[size - 1] / 32.0 : INFINITY;
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  if (size) memcpy(buf, data, size);
  dpgd_csv *t = NULL;
  int st = dpgd_csv_parse(&t, buf, size, "fuzz.csv");
  free(buf);
  if (st) return 0;
  dpgd_qlayout L = {0};
  dpgd_error_clear();
  st = dpgd_qlayout_build(&L, t, "fuzz.csv");
  if (st) {
    if (L.col != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
  } else {
    if (L.n == 0 || L.dim == 0 || L.n * L.dim != t->n_cols) __builtin_trap();
    if (t->n_rows * t->n_cols <= 20000) answer_all(t, &L, budget, clip);
    dpgd_qlayout_free(&L);
  }
  dpgd_csv_free(t);
  return 0;
}
