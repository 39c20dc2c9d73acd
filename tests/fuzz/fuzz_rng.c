/* fuzz_rng.c -- libFuzzer target for the noise-stream state a checkpoint carries
 * (dpgd_rng_state_set, research mode: a tag and the ChaCha20 stream's position; an older
 * dpgd's MT19937 state must be refused by its length). The input is tried as it
 * is (a length other than the state's must be refused) and then cut or zero-padded to
 * the state's length; a state that is accepted must give draws without reading outside
 * the generator's state, and finite Gaussians. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static dpgd_rng *rng;

static void set_and_draw(const uint8_t *data, size_t size)
{
  dpgd_error_clear();
  int st = dpgd_rng_state_set(rng, data, size);
  if (st != DPGD_OK) {
    if (dpgd_error_last()[0] == '\0') __builtin_trap();
    return;
  }
  uint64_t u;
  double x[16] = {0}, g;
  /* 800 words, more than one 256-word keystream buffer: the refill runs at least once. */
  for (int k = 0; k < 400; k++)
    if (dpgd_rng_u64(rng, &u) != DPGD_OK) __builtin_trap();
  if (dpgd_rng_gaussian_add(rng, 2.385, x, 16) != DPGD_OK) __builtin_trap();
  if (dpgd_rng_gaussian(rng, 1.0, &g) != DPGD_OK) __builtin_trap();
  for (int k = 0; k < 16; k++)
    if (!isfinite(x[k])) __builtin_trap();
  if (!isfinite(g)) __builtin_trap();
  /* What it restored, it gives back. */
  size_t n = dpgd_rng_state_size(rng);
  uint8_t *back = malloc(n);
  if (back) {
    dpgd_rng_state_get(rng, back);
    if (dpgd_rng_state_set(rng, back, n) != DPGD_OK) __builtin_trap();
    free(back);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!rng) rng = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 2385, DPGD_STREAM_STEP);
  if (!rng) return 0;
  size_t n = dpgd_rng_state_size(rng);
  if (size != n) set_and_draw(data, size);
  uint8_t *state = calloc(1, n);
  if (!state) return 0;
  memcpy(state, data, size < n ? size : n);
  set_and_draw(state, n);
  free(state);
  return 0;
}
