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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
  if (!ds || ds->n != 1 || ds->rows == 0 || ds->cols == 0 ||
      ds->rows > DPGD_DATA_MAX_SIDE || ds->cols > DPGD_DATA_MAX_SIDE || ds->d != ds->rows * ds->cols)
    __builtin_trap();
  double mean, std; /* reads every pixel: ASan checks the image is that large */
  dpgd_data_pixel_moments(&mean, &std, ds->pixels, ds->d);
  if (!(mean >= 0.0 && mean <= 1.0)) __builtin_trap();
  dpgd_data_free(ds);
  return 0;
}
