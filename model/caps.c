/* caps.c -- the scan of a step's caps that the engine's gather and the ledger's spend
 * share: a sampled step's caps are mostly 0, so both skip them eight at a time. A file
 * of its own, with no dependencies, so that the ledger's fuzz target links it alone. */
#include <stdint.h>
#include <string.h>

#include "dpgd_model.h"

size_t dpgd_zero_prefix8(const double *x, size_t n)
{
  size_t k = 0;
  for (; n - k >= 8; k += 8) {
    uint64_t any = 0; /* bitwise, so that the test vectorises; -0 and NaN are not +0 */
    for (int j = 0; j < 8; j++) {
      uint64_t b;
      memcpy(&b, x + k + j, sizeof b);
      any |= b;
    }
    if (any) break;
  }
  return k;
}
