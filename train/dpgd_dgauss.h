/* dpgd_dgauss.h -- the exact discrete Gaussian of secure mode (train/dgauss.c; the
 * grid variance and the release in train/noise.c), part of dpgd_train.h's API (it
 * includes this file), split out by concern. */
#ifndef DPGD_DGAUSS_H
#define DPGD_DGAUSS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dpgd_rng dpgd_rng; /* a noise stream (dpgd_train.h) */

/* ===== Exact discrete Gaussian (train/dgauss.c; docs/MATH.md "Discrete Gaussian") =====
 * N_Z(0, sigma^2), P[y] proportional to exp(-y^2 / (2 sigma^2)) on the integers, sampled
 * exactly (Canonne, Kamath & Steinke 2020, Algorithms 1-3) for a rational sigma^2 =
 * num/den, in integer arithmetic only (the unit holds no floating-point instruction:
 * tests/train/dgauss_nofloat.sh). Random bits come from a callback: the run's streams
 * through dpgd_rng_bits (getrandom in secure mode), a seeded stream in tests. */
typedef int (*dpgd_bits_fn)(void *ctx, uint64_t *word); /* 64 uniform bits; a status */
typedef struct {
  dpgd_bits_fn fn;
  void *ctx;
  uint64_t word; /* unused bits, lowest first */
  unsigned left; /* how many */
} dpgd_bits;
void dpgd_bits_init(dpgd_bits *b, dpgd_bits_fn fn, void *ctx);
/* The dpgd_bits_fn of a dpgd_rng (ctx is the dpgd_rng *). */
int dpgd_rng_bits(void *rng, uint64_t *word);

/* Range of sigma^2 = num/den: 1 <= num <= 2^62, 1 <= den <= 2^32 (every intermediate then
 * fits in 128 bits: dgauss.c). */
#define DPGD_DGAUSS_NUM_MAX (UINT64_C(1) << 62)
#define DPGD_DGAUSS_DEN_MAX (UINT64_C(1) << 32)
typedef struct {
  uint64_t num, den; /* sigma^2 = num/den */
  uint64_t t;        /* floor(sigma) + 1: the Laplace proposal's scale */
} dpgd_dgauss;
/* DPGD_EINVAL (reported) outside the range. */
int dpgd_dgauss_init(dpgd_dgauss *g, uint64_t num, uint64_t den);
/* sigma^2 = the smallest integer at least (std 2^bits)^2, or at most one more: noise of
 * std at least `std` in the units of the grid 2^-bits (the private direction). DPGD_ERANGE
 * where std 2^bits exceeds 2^31, DPGD_EINVAL for std not finite and > 0 or bits outside
 * 0..60. (Computed in noise.c: dgauss.c holds no floating point.) */
int dpgd_dgauss_from_std(dpgd_dgauss *g, double std, int bits);
/* One draw. DPGD_ERANGE only on events of probability below exp(-2^31) (dgauss.c), or
 * the callback's status. */
int dpgd_dgauss_sample(const dpgd_dgauss *g, dpgd_bits *b, int64_t *out);
/* x[j] += one draw each, in index order; DPGD_ERANGE if a sum overflows int64. */
int dpgd_dgauss_add(const dpgd_dgauss *g, dpgd_bits *b, int64_t *x /* (n) */, size_t n);
/* The release of an exact integer vector on the grid 2^-bits: x[j] += one draw each (bits
 * from rng's stream), then out[j] = x[j] 2^-bits rounded to the nearest double (exact for
 * |x[j]| <= 2^53), post-processing only. The noise step of every secure release. */
int dpgd_dgauss_release(const dpgd_dgauss *g, dpgd_rng *rng, int64_t *x /* (n) */,
                        double *out /* (n) */, size_t n, int bits);
/* The building blocks, exposed for their tests: Bernoulli(exp(-num/den)) (den >= 1) and
 * the discrete Laplace P[y] proportional to exp(-|y|/t), 1 <= t <= 2^31 + 1. */
int dpgd_dgauss_bernoulli_exp(dpgd_bits *b, uint64_t num, uint64_t den, int *out);
int dpgd_dgauss_laplace(dpgd_bits *b, uint64_t t, int64_t *out);

#endif /* DPGD_DGAUSS_H */
