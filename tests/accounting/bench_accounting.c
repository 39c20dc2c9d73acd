/* bench_accounting.c -- query time of eps(delta = 1e-5) under every method for four
 * compositions (median over repetitions; single thread; the accountant has no
 * threading): 420 Gaussian steps (sigma 100), 100 Gaussian + 20 Laplace + 10 RR, 3 Laplace
 * (a pure composition with atoms) and 1000 Poisson-subsampled Gaussian steps (q = 0.01,
 * sigma = 1). Not a ctest test: the figures depend on the machine.
 * Usage: bench_accounting [repetitions] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dpgd_accounting.h"

/* Wall time and this process's CPU time: on a shared machine the CPU time is the
 * figure to compare. */
static double now_ms(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void bench(const char *name, const dpgd_accountant *a, int reps)
{
  printf("%s\n", name);
  for (int m = 0; m < DPGD_ACCT_N_METHODS; m++) {
    double *t = malloc(2 * reps * sizeof *t), *c = t + reps;
    dpgd_acct_value v = {0, 0};
    int st = 0;
    for (int r = 0; r < reps && !st; r++) {
      double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
      st = dpgd_acct_epsilon(a, m, 1e-5, &v);
      t[r] = now_ms(CLOCK_MONOTONIC) - t0;
      c[r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    if (st) {
      printf("  %-12s n/a (%s)\n", dpgd_acct_method_name(m), dpgd_error_last());
    } else {
      qsort(t, reps, sizeof *t, cmp);
      qsort(c, reps, sizeof *c, cmp);
      printf("  %-12s eps %-12.8g err %-8.2g median cpu %9.3f ms, wall %9.3f ms "
             "(cpu min %.3f max %.3f, %d reps)\n",
             dpgd_acct_method_name(m), v.value, v.err, c[reps / 2], t[reps / 2], c[0],
             c[reps - 1], reps);
    }
    free(t);
  }
}

int main(int argc, char **argv)
{
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) {
    fprintf(stderr, "bench_accounting: repetitions must be >= 1\n");
    return 2;
  }
  dpgd_accountant *a = dpgd_acct_alloc();
  if (!a || dpgd_acct_add_gaussian(a, 1 / 100.0, 420)) return 1;
  bench("420 Gaussian steps, sigma 100 (mu = sqrt(420)/100), delta 1e-5", a, reps);
  dpgd_acct_free(a);
  a = dpgd_acct_alloc();
  if (!a || dpgd_acct_add_gaussian(a, 1 / 100.0, 100) || dpgd_acct_add_laplace(a, 0.1, 20) ||
      dpgd_acct_add_rr(a, 0.5, 10))
    return 1;
  bench("100 Gaussian (sigma 100) + 20 Laplace (b 10) + 10 RR (eps0 0.5), delta 1e-5", a, reps);
  dpgd_acct_free(a);
  a = dpgd_acct_alloc();
  if (!a || dpgd_acct_add_laplace(a, 1.0, 3)) return 1;
  bench("3 Laplace (b 1), delta 1e-5", a, reps);
  dpgd_acct_free(a);
  a = dpgd_acct_alloc();
  if (!a || dpgd_acct_add_subsampled_gaussian(a, 0.01, 1.0, 1000)) return 1;
  bench("1000 subsampled Gaussian steps, q 0.01, sigma 1, delta 1e-5", a, reps);
  dpgd_acct_free(a);
  return 0;
}
