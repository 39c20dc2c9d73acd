/* bits.c -- the bit-for-bit kernel tests' shared helpers (bits.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bits.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t next(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

float draw(int special)
{
  uint64_t r = next();
  float v = (float)((double)(r >> 11) / 9007199254740992.0 * 4.77 - 2.385);
  if (!special || (r & 7) != 0) return v;
  switch ((r >> 3) % 6) {
  case 0: return 0.0f;
  case 1: return -0.0f;
  case 2: return (float)((r >> 8) % 3);
  case 3: return INFINITY;
  case 4: return -INFINITY;
  default: return NAN;
  }
}

int same_bits(const float *a, const float *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(b[i]))) return 0;
  return 1;
}

float *vec(size_t n, int special)
{
  float *v = malloc((n ? n : 1) * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = draw(special);
  return v;
}
