/* fuzz_model.c -- libFuzzer target for model files (dpgd_model_load, model/io.c), the
 * file `dpgd predict` and `dpgd eval` read. Each input is loaded as it is and with its
 * trailing CRC-32 recomputed, so mutations get past the checksum to the header checks.
 * A file that loads holds exactly its shape's parameters, all finite, bit for bit those
 * of the file; a refused one gives a status and a message and no model. Allocation is
 * bounded by the file's size, never by the shape its header claims. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpgd_model.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 40

static void load_one(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(data, size, ".model");
  if (!path) return;
  dpgd_model *m = (dpgd_model *)&m; /* must be reset on every path */
  dpgd_error_clear();
  int st = dpgd_model_load(&m, path);
  unlink(path);
  if (st != DPGD_OK) {
    if (m != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
    return;
  }
  size_t P = dpgd_model_n_params(m);
  if (size != HEADER_BYTES + 4 * P + 4) __builtin_trap();
  const float *w = dpgd_model_params_const(m);
  for (size_t j = 0; j < P; j++) {
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) u |= (uint32_t)data[HEADER_BYTES + 4 * j + k] << (8 * k);
    if (!isfinite(w[j]) || memcmp(&u, &w[j], 4) != 0) __builtin_trap();
  }
  int K = dpgd_model_n_classes(m);
  if (K < 2 || K > 256) __builtin_trap();
  dpgd_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_as_is_and_crc_fixed(data, size, HEADER_BYTES + 4, load_one);
  return 0;
}
