/* test_acct_threads.c -- the accountant used from several threads at once (one
 * accountant per thread, as dpgd_accounting.h allows) gives the answers it gives alone.
 * The library's memories (Gauss-Legendre table, the subsampled Gaussian's panel slots,
 * last-value memories) are per thread and GSL's error handler is switched off once;
 * with shared memories the threads overwrite each other's slots mid-query and the
 * answers drift or the process crashes. A race may not show on every run: this test
 * guards against regressions, it does not prove the absence of races. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "dpgd_accounting.h"

enum { N_COMP = 4, N_THREADS = 4, ROUNDS = 3 };
static const dpgd_acct_method methods[2] = {DPGD_ACCT_EXACT, DPGD_ACCT_RDP_OPTIMAL};
static double ref[N_COMP][2];

/* Compositions that reach the cached paths: subsampled Gaussians of two different
 * (q, sigma) (the panel slots are replaced in turn), Laplace (closed-form terms and
 * formula B), and the benchmark's mixed composition. */
static dpgd_accountant *make(int k)
{
  dpgd_accountant *a = dpgd_acct_alloc();
  int rc = DPGD_OK;
  switch (k) {
  case 0: rc = dpgd_acct_add_subsampled_gaussian(a, 0.01, 1.0, 200); break;
  case 1:
    rc = dpgd_acct_add_subsampled_gaussian(a, 0.02, 1.5, 100);
    if (!rc) rc = dpgd_acct_add_laplace(a, 0.1, 5);
    break;
  case 2:
    rc = dpgd_acct_add_gaussian(a, 0.01, 100);
    if (!rc) rc = dpgd_acct_add_laplace(a, 0.1, 20);
    if (!rc) rc = dpgd_acct_add_rr(a, 0.5, 10);
    break;
  default: rc = dpgd_acct_add_laplace(a, 1.0, 3); break;
  }
  if (rc) {
    dpgd_acct_free(a);
    return NULL;
  }
  return a;
}

static int query(int k, int m, double *eps)
{
  dpgd_accountant *a = make(k);
  if (!a) return DPGD_EINVAL;
  dpgd_acct_value v;
  int rc = dpgd_acct_epsilon(a, methods[m], 1e-5, &v);
  dpgd_acct_free(a);
  *eps = v.value;
  return rc;
}

typedef struct {
  int id, bad;
} worker;

static void *work(void *arg)
{
  worker *w = arg;
  for (int r = 0; r < ROUNDS; r++)
    for (int j = 0; j < N_COMP * 2; j++) {
      int x = (j + w->id + r) % (N_COMP * 2), k = x / 2, m = x % 2; /* rotated orders */
      double e = NAN;
      if (query(k, m, &e) || !(fabs(e - ref[k][m]) <= 1e-12 * ref[k][m])) w->bad++;
    }
  return NULL;
}

static void test_threads_agree_with_serial(void **state)
{
  (void)state;
  for (int k = 0; k < N_COMP; k++)
    for (int m = 0; m < 2; m++) {
      assert_int_equal(query(k, m, &ref[k][m]), DPGD_OK);
      assert_true(isfinite(ref[k][m]) && ref[k][m] > 0);
    }
  pthread_t t[N_THREADS];
  worker w[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    w[i] = (worker){i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  int bad = 0;
  for (int i = 0; i < N_THREADS; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    bad += w[i].bad;
  }
  print_message("  %d threads x %d queries: %d differ from the serial answers\n", N_THREADS,
                ROUNDS * N_COMP * 2, bad);
  assert_int_equal(bad, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_agree_with_serial)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
