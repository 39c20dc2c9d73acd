/* fuzz_summary.c -- libFuzzer target for the summary.json reader of `dpgd plot` and
 * `dpgd sweep` (dpgd_run_summary_parse, a small JSON reader). The input is handed over
 * in a buffer of exactly its length (no terminating NUL), so a read past len is an ASan
 * report; deep nesting must not exhaust the stack. A summary that parses satisfies the
 * documented ranges. */
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
  dpgd_run_summary s;
  dpgd_error_clear();
  int st = dpgd_run_summary_parse(&s, buf, size, "fuzz.json");
  free(buf);
  if (st != DPGD_OK) {
    if (dpgd_error_last()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (strcmp(s.algorithm, "filtered") && strcmp(s.algorithm, "plain")) __builtin_trap();
  /* mu is null (NaN) only where no GDP statement exists: subsampled or secure runs. */
  int no_gdp = !strcmp(s.sampling, "poisson") || !strcmp(s.sampling, "subset") ||
               !strcmp(s.rng, "secure");
  if (!(s.mu >= 0 || (no_gdp && isnan(s.mu))) || !(s.delta > 0 && s.delta < 1) ||
      !(s.test_acc >= 0 && s.test_acc <= 1) || !(s.steps >= 0))
    __builtin_trap();
  int any = 0;
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) any |= !isnan(s.eps[m]);
  if (!any) __builtin_trap();
  if (memchr(s.model, '\0', sizeof s.model) == NULL ||
      memchr(s.rng, '\0', sizeof s.rng) == NULL)
    __builtin_trap();
  return 0;
}
