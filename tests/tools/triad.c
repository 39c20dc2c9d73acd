/* triad.c -- the machine's memory bandwidth, for the softmax pass's roof (README
 * "Speed"): the STREAM triad a[i] = b[i] + s c[i] over three arrays of doubles far
 * larger than the caches, on T OpenMP threads, median of R timed repetitions after one
 * untimed. Bytes are counted as STREAM counts them, 24 per element (two reads, one
 * write; the write-allocate read is not counted), so the figure is comparable with
 * STREAM's. Build and run:
 *   cc -O2 -fopenmp tests/tools/triad.c -o triad && ./triad [T] [R] [MiB per array]
 * Prints "triad threads=T mib=M gbps=G" (G in 10^9 bytes per second). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <omp.h>

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
  int T = argc > 1 ? atoi(argv[1]) : 2, R = argc > 2 ? atoi(argv[2]) : 9;
  long mib = argc > 3 ? atol(argv[3]) : 256;
  if (T < 1 || R < 1 || R > 1000 || mib < 1 || mib > 65536) {
    fprintf(stderr, "usage: triad [threads >= 1] [reps 1..1000] [MiB per array 1..65536]\n");
    return 2;
  }
  size_t n = (size_t)mib * 1048576 / sizeof(double);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  double *t = malloc((size_t)R * sizeof *t);
  if (!a || !b || !c || !t) {
    fprintf(stderr, "triad: out of memory for 3 x %ld MiB\n", mib);
    return 1;
  }
  omp_set_num_threads(T);
  /* First touch on the threads that use the pages. */
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
  const double s = 3.0;
  for (int r = -1; r < R; r++) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    if (r >= 0) t[r] = now() - t0;
  }
  qsort(t, (size_t)R, sizeof *t, cmp);
  double check = a[n / 2]; /* 7.0: keeps the loop from being dropped */
  printf("triad threads=%d mib=%ld gbps=%.2f check=%g\n", T, mib,
         24.0 * (double)n / t[R / 2] / 1e9, check);
  free(a);
  free(b);
  free(c);
  free(t);
  return 0;
}
