/* fuzz_csv.c -- libFuzzer target for the numeric CSV reader of `dpgd plot` and
 * `dpgd sweep` (dpgd_csv_parse: metrics.csv, points.csv). The input is handed over in a
 * buffer of exactly its length (no terminating NUL), so a read past len is an ASan
 * report. A table that parses has n_cols distinct non-empty names and
 * n_rows x n_cols values, each a finite number or NAN (an empty field). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  if (size) memcpy(buf, data, size);
  dpgd_csv *t = (dpgd_csv *)&t; /* must be reset on every path */
  dpgd_error_clear();
  int st = dpgd_csv_parse(&t, buf, size, "fuzz.csv");
  free(buf);
  if (st != DPGD_OK) {
    if (t != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (!t || t->n_cols == 0) __builtin_trap();
  for (size_t c = 0; c < t->n_cols; c++) {
    if (!t->names[c] || !t->names[c][0]) __builtin_trap();
    if (dpgd_csv_col(t, t->names[c]) != (int)c) __builtin_trap(); /* names are distinct */
  }
  for (size_t r = 0; r < t->n_rows; r++)
    for (size_t c = 0; c < t->n_cols; c++) {
      double v = dpgd_csv_at(t, r, (int)c);
      if (isinf(v)) __builtin_trap();
    }
  if (t->n_rows && !isnan(dpgd_csv_at(t, 0, -1))) __builtin_trap();
  dpgd_csv_free(t);
  return 0;
}
