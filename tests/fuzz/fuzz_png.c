/* fuzz_png.c -- libFuzzer target for the PNG decoder (data/png.c through
 * dpgd_data_png_read_files: the one-image decode of `dpgd predict` and of the PNG-folder
 * loader). Any byte string must decode into one image of the size its header states
 * or be refused with a status and a message: libpng's longjmp errors unwind without a
 * leak, and no row is written outside the image. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "dpgd_data.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* Large allocations a tiny file can cause (not leaks, but they cut the rate to a few
 * inputs a second and, with ASan's quarantine of freed blocks at its default, grow the
 * RSS past libFuzzer's limit): a header may claim up to DPGD_DATA_MAX_SIDE^2 = 256 MB of
 * pixels, allocated before the data is read, so inputs whose first IHDR claims more
 * than MAX_PIXELS are skipped (a chunk that states a huge length is refused by the
 * reader itself: PNG_ALLOC_MAX in data/png.c). A small quarantine still catches a use
 * after free. */
#define MAX_PIXELS ((uint64_t)1 << 22)

const char *__asan_default_options(void) { return "quarantine_size_mb=32"; }

static uint32_t be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size >= 24 && memcmp(data + 12, "IHDR", 4) == 0 &&
      (uint64_t)be32(data + 16) * be32(data + 20) > MAX_PIXELS)
    return 0;
  const char *path = fuzz_temp_file(data, size, ".png");
  if (!path) return 0;
  dpgd_dataset *ds = (dpgd_dataset *)&ds; /* must be reset on every path */
  const char *paths[1] = {path};
  dpgd_error_clear();
  int st = dpgd_data_png_read_files(&ds, paths, 1, 10);
  unlink(path);
  if (st != DPGD_OK) {
    if (ds != NULL || dpgd_error_last()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (!ds || ds->n != 1 || ds->rows == 0 || ds->cols == 0 || ds->rows > DPGD_DATA_MAX_SIDE ||
      ds->cols > DPGD_DATA_MAX_SIDE || ds->d != ds->rows * ds->cols)
    __builtin_trap();
  double mean, std; /* reads every pixel: ASan checks the image is that large */
  dpgd_data_pixel_moments(&mean, &std, ds->pixels, ds->d);
  if (!(mean >= 0.0 && mean <= 1.0)) __builtin_trap();
  dpgd_data_free(ds);
  return 0;
}
