/* sample_subset.c -- fixed-size sampling without replacement for DP-SGD
 * (train.sampling = subset): Floyd's algorithm over the run's sampling stream, with
 * bounded integers drawn by rejection so that every m-subset has probability exactly
 * 1/C(n, m) (accounting/SAMPLING.md, "dpgd train with train.sampling = subset"). */
#include <stdint.h>
#include <string.h>

#include "dpgd_train.h"

/* A uniform integer in [0, bound), bound >= 1: a 64-bit word below 2^64 mod bound is
 * rejected, so the accepted words span a multiple of bound and w mod bound has no
 * modulo bias. A word is rejected with probability below bound / 2^64. */
static int uniform_below(dpgd_rng *r, uint64_t bound, uint64_t *out)
{
  uint64_t floor = (0 - bound) % bound; /* (2^64 - bound) mod bound = 2^64 mod bound */
  for (;;) {
    uint64_t w;
    int rc = dpgd_rng_u64(r, &w);
    if (rc) return rc;
    if (w >= floor) {
      *out = w % bound;
      return DPGD_OK;
    }
  }
}

int dpgd_rng_sample_subset(dpgd_rng *r, size_t m, unsigned char *in, size_t n)
{
  if (m > n)
    return DPGD_FAIL(DPGD_EINVAL, "cannot sample %zu distinct points out of %zu", m, n);
  memset(in, 0, n);
  /* Floyd: for j = n - m .. n - 1, t uniform on [0, j]; take t, or j if t is taken. */
  for (size_t j = n - m; j < n; j++) {
    uint64_t t;
    int rc = uniform_below(r, (uint64_t)j + 1, &t);
    if (rc) return rc;
    if (in[t]) in[j] = 1;
    else in[t] = 1;
  }
  return DPGD_OK;
}
