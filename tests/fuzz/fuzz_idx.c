/* fuzz_idx.c -- libFuzzer target for the IDX parser (dpgd_data_idx_parse): any byte
 * string, raw or gzip, must either parse into an array whose shape matches its header
 * or be refused with a status and a message -- never crash, leak, read out of bounds
 * or allocate more than the input can justify. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dpgd_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  dpgd_data_idx *a = (dpgd_data_idx *)&a; /* must be reset to NULL on every path */
  dpgd_error_clear();
  int st = dpgd_data_idx_parse(&a, data, size, 0, "fuzz");
  if (st != DPGD_OK) {
    if (a != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (!a || (a->ndim != 1 && a->ndim != 3)) __builtin_trap();
  size_t prod = 1;
  for (int k = 0; k < a->ndim; k++) prod *= a->dims[k];
  if (prod != a->size || prod == 0) __builtin_trap();
  /* Raw input: the body is the input after the header, byte for byte. */
  if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) {
    size_t hdr = 4 + 4 * (size_t)a->ndim;
    if (hdr + a->size != size || memcmp(a->data, data + hdr, a->size) != 0) __builtin_trap();
  }
  double mean, std; /* reads every byte: ASan checks the buffer is that large */
  dpgd_data_pixel_moments(&mean, &std, a->data, a->size);
  if (!(mean >= 0.0 && mean <= 1.0 && std >= 0.0 && std <= 0.5)) __builtin_trap();
  dpgd_data_idx_free(a);
  return 0;
}
