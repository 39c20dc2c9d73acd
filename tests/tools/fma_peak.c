/* fma_peak.c -- one core's peak single-precision FMA rate, for the CNN pass's roof
 * (docs/SPEED.md): twelve independent chains of 16-lane AVX-512 fused multiply-adds
 * (more than the FMA latency times the FMA units, so the loop is bound by throughput),
 * median of R timed runs of N iterations after one untimed. Counts 2 FLOP per lane per
 * FMA, as dpgd bench grads does. x86-64 with AVX-512F only. Build and run:
 *   cc -O2 tests/tools/fma_peak.c -o fma_peak && ./fma_peak [R] [N]
 * Prints "fma_peak gflops=G" (10^9 FLOP per second, one thread). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { CHAINS = 12 };

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Seconds for n iterations of CHAINS FMAs; *sink keeps the result alive. */
__attribute__((target("avx512f"))) static double run(long n, float *sink)
{
  __m512 a[CHAINS];
  for (int i = 0; i < CHAINS; i++) a[i] = _mm512_set1_ps(1.0f + (float)i * 1e-7f);
  const __m512 m = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
  const double t0 = now();
  for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; i++) a[i] = _mm512_fmadd_ps(a[i], m, b);
  }
  const double t = now() - t0;
  float s = 0.0f;
  for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(a[i]);
  *sink += s;
  return t;
}

int main(int argc, char **argv)
{
  const int R = argc > 1 ? atoi(argv[1]) : 5;
  const long N = argc > 2 ? atol(argv[2]) : 100000000L;
  if (R < 1 || R > 1000 || N < 1) {
    fprintf(stderr, "usage: fma_peak [R in 1..1000] [N >= 1]\n");
    return 2;
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    fprintf(stderr, "fma_peak: this CPU has no AVX-512F\n");
    return 1;
  }
  float sink = 0.0f;
  double *t = malloc((size_t)R * sizeof *t);
  if (!t) return 1;
  run(N / 10 + 1, &sink);
  for (int r = 0; r < R; r++) t[r] = run(N, &sink);
  qsort(t, (size_t)R, sizeof *t, cmp);
  printf("fma_peak gflops=%.1f (sink %g)\n", (double)N * CHAINS * 32.0 / t[R / 2] / 1e9,
         (double)sink);
  free(t);
  return 0;
}
