/* fuzz_sweep.c -- libFuzzer target for the .sweep file parser of `dpgd sweep`
 * (dpgd_sweep_load: INI through inih, grid and seed lists), then the cell names and
 * overrides a sweep derives from it. A loaded sweep has at least one config, at most
 * DPGD_SWEEP_MAX_DIMS dimensions of 1..DPGD_SWEEP_MAX_VALUES values, distinct seeds
 * and 1..256 jobs; a refused one gives a status and a message. Nothing leaks either way
 * (dpgd_sweep_clear). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(data, size, ".sweep");
  if (!path) return 0;
  static dpgd_sweep s; /* large: seeds inline */
  dpgd_sweep_init(&s);
  dpgd_error_clear();
  int st = dpgd_sweep_load(&s, path);
  unlink(path);
  if (st != DPGD_OK) {
    if (dpgd_error_last()[0] == '\0') __builtin_trap();
    dpgd_sweep_clear(&s);
    return 0;
  }
  if (s.n_configs == 0 || s.n_dims > DPGD_SWEEP_MAX_DIMS || s.jobs < 1 || s.jobs > 256 ||
      s.n_seeds > DPGD_SWEEP_MAX_SEEDS)
    __builtin_trap();
  for (size_t d = 0; d < s.n_dims; d++)
    if (s.dims[d].n_values < 1 || s.dims[d].n_values > DPGD_SWEEP_MAX_VALUES) __builtin_trap();
  for (size_t i = 0; i < s.n_seeds; i++)
    for (size_t j = 0; j < i; j++)
      if (s.seeds[i] == s.seeds[j]) __builtin_trap();
  size_t n = dpgd_sweep_n_cells(&s);
  if (n == 0) __builtin_trap();
  /* A handful of cells spread over the grid: names and overrides stay in their buffers. */
  for (size_t k = 0; k < 8; k++) {
    size_t c = (size_t)((unsigned __int128)n * k / 8);
    char name[512], over[512];
    dpgd_error_clear();
    if (dpgd_sweep_cell_name(name, sizeof name, &s, c) != DPGD_OK && !dpgd_error_last()[0])
      __builtin_trap();
    if (!dpgd_sweep_cell_config(&s, c)) __builtin_trap();
    for (size_t d = 0; d < s.n_dims; d++) {
      dpgd_error_clear();
      if (dpgd_sweep_cell_override(over, sizeof over, &s, c, d) != DPGD_OK &&
          !dpgd_error_last()[0])
        __builtin_trap();
    }
  }
  dpgd_sweep_clear(&s);
  return 0;
}
