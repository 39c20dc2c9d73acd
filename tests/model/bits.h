/* bits.h -- what the bit-for-bit kernel tests (test_layers_fast.c, test_gemm_fast.c)
 * share: a fixed xorshift stream, values that tell bits apart, and the comparison. */
#ifndef DPGD_TEST_BITS_H
#define DPGD_TEST_BITS_H

#include <stddef.h>
#include <stdint.h>

uint64_t next(void);
/* Uniform in [-2.385, 2.385), with about one value in eight a special one: +-0, a small
 * integer (ties in max pooling), +-inf or NaN when `special` is set. */
float draw(int special);
/* Identical bit patterns, or both NaN. */
int same_bits(const float *a, const float *b, size_t n);
/* n values of draw(special), malloc'ed (a cmocka failure when out of memory). */
float *vec(size_t n, int special);

#endif
