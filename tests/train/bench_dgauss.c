/* bench_dgauss.c -- the cost of one noise vector (a program, not a test): the exact
 * discrete Gaussian (train/dgauss.c, on getrandom: secure mode) against research mode's
 * floating-point Gaussian (dpgd_rng_gaussian_add, GSL's ziggurat on the ChaCha20 stream),
 * alternating, median of the rounds.
 * build/tests/train/bench_dgauss P NOISE_STD GRID_BITS ROUNDS
 * (the paper's CNN: P = 26010, noise std sigma C = 1700, grid 2^-20). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dpgd_train.h"

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: bench_dgauss P NOISE_STD GRID_BITS ROUNDS\n");
    return 2;
  }
  size_t P = strtoul(argv[1], NULL, 10), rounds = strtoul(argv[4], NULL, 10);
  double std = atof(argv[2]);
  int bits = atoi(argv[3]);
  double s2 = ceil(ldexp(std, bits) * ldexp(std, bits)); /* sigma^2 on the grid, rounded up */
  dpgd_dgauss g;
  if (rounds < 1 || rounds > 1000 || !(s2 >= 1 && s2 <= 0x1p62) ||
      dpgd_dgauss_init(&g, (uint64_t)s2, 1)) {
    fprintf(stderr, "bench_dgauss: bad arguments (sigma^2 on the grid %g)\n", s2);
    return 2;
  }
  dpgd_rng *r = dpgd_rng_alloc(DPGD_RNG_SECURE, NULL, DPGD_STREAM_STEP),
           *res = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, 1, DPGD_STREAM_STEP);
  int64_t *xi = calloc(P, sizeof *xi);
  double *xd = calloc(P, sizeof *xd), *td = calloc(rounds, sizeof *td),
         *tf = calloc(rounds, sizeof *tf);
  if (!r || !res || !xi || !xd || !td || !tf) return 1;
  dpgd_bits b;
  dpgd_bits_init(&b, dpgd_rng_bits, r);
  for (size_t k = 0; k < rounds; k++) {
    for (int which = 0; which < 2; which++) {
      int disc = (k + which) % 2 == 0; /* alternate the order */
      double t0 = now();
      int rc = disc ? dpgd_dgauss_add(&g, &b, xi, P) : dpgd_rng_gaussian_add(res, std, xd, P);
      double dt = now() - t0;
      if (rc) return 1;
      if (disc) td[k] = dt;
      else tf[k] = dt;
      for (size_t j = 0; j < P; j++) xi[j] = 0;
    }
  }
  qsort(td, rounds, sizeof *td, cmp);
  qsort(tf, rounds, sizeof *tf, cmp);
  printf("P %zu, noise std %g, grid 2^-%d (sigma on the grid %.6g), %zu rounds\n", P, std, bits,
         sqrt(s2), rounds);
  printf("discrete Gaussian (exact)      median %.3f ms  (%.0f ns per coordinate)\n",
         1e3 * td[rounds / 2], 1e9 * td[rounds / 2] / (double)P);
  printf("research float Gaussian        median %.3f ms  (%.0f ns per coordinate)\n",
         1e3 * tf[rounds / 2], 1e9 * tf[rounds / 2] / (double)P);
  dpgd_rng_free(r);
  dpgd_rng_free(res);
  free(xi), free(xd), free(td), free(tf);
  return 0;
}
