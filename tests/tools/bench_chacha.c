/* bench_chacha.c -- the keystream's speed (train/chacha.c, stream.c's generator) against
 * libsodium's crypto_stream_chacha20_xor_ic, which the streams used before: GB/s of
 * keystream (10^9 bytes per second) for each path the CPU has, in requests of 16 blocks
 * (1 KiB: a stream's refill) and of 64 blocks (4 KiB: a bulk read of the Poisson
 * sampler, straight into its array), median of R timed repetitions of 256 MiB each
 * after one untimed. Build and run:
 *   cc -O3 -Itrain tests/tools/bench_chacha.c train/chacha.c -lsodium -o bench_chacha
 *   ./bench_chacha [R]
 * Prints "chacha path=P blocks=B gbps=G" per path and request size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "chacha.h"

#define TOTAL_BYTES (256.0 * 1024 * 1024)

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Seconds for TOTAL_BYTES of keystream in requests of `blocks` blocks; path 0 is
 * libsodium's. */
static double one_run(int path, size_t blocks, uint32_t *buf, const uint8_t key[32])
{
  static const unsigned char nonce[8] = {0};
  size_t calls = (size_t)(TOTAL_BYTES / (64.0 * (double)blocks));
  double t0 = now();
  for (size_t c = 0; c < calls; c++) {
    if (path == 0) {
      memset(buf, 0, 64 * blocks); /* stream.c's old fill: xor into zeros */
      crypto_stream_chacha20_xor_ic((unsigned char *)buf, (unsigned char *)buf, 64 * blocks,
                                    nonce, c * blocks, key);
    } else {
      dpgd_chacha20_blocks(buf, blocks, key, 0, c * blocks);
    }
  }
  return now() - t0;
}

int main(int argc, char **argv)
{
  int reps = argc > 1 ? atoi(argv[1]) : 7;
  if (reps < 1 || reps > 100 || sodium_init() < 0) return 1;
  static const char *const name[] = {"libsodium", "scalar", "avx2", "avx512"};
  static const size_t sizes[] = {16, 64};
  uint8_t key[32];
  for (int k = 0; k < 32; k++) key[k] = (uint8_t)k;
  uint32_t buf[64 * 16];
  double t[100];
  for (int path = 0; path <= DPGD_CHACHA_AVX512; path++) {
    if (path && !dpgd_chacha20_force(path)) {
      printf("chacha path=%s absent\n", name[path]);
      continue;
    }
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      one_run(path, sizes[s], buf, key);
      for (int r = 0; r < reps; r++) t[r] = one_run(path, sizes[s], buf, key);
      qsort(t, (size_t)reps, sizeof t[0], cmp_double);
      printf("chacha path=%s blocks=%zu gbps=%.2f\n", name[path], sizes[s],
             TOTAL_BYTES / t[reps / 2] * 1e-9);
      fflush(stdout);
    }
  }
  return buf[0] == 0x12345678; /* keeps the keystream live */
}
