/* noise_internal.h -- the secure sampler's conversions, private to noise.c and its test
 * (tests/train/test_noise.c calls them at the extreme inputs). */
#ifndef DPGD_NOISE_INTERNAL_H
#define DPGD_NOISE_INTERNAL_H

#include <stdint.h>

/* Largest Box-Muller radius sqrt(-2 log u) for u >= 2^-53: sqrt(106 log 2) = 8.5717...
 * (rounded up). Every standard normal of the secure stream is within it. */
#define NOISE_BM_RADIUS_MAX 8.5718

/* A 64-bit random word to a uniform in the OPEN interval (0, 1): its top 52 bits k give
 * (k + 1/2) 2^-52, exactly representable, in [2^-53, 1 - 2^-53]. */
double dpgd_noise_bits_to_uniform(uint64_t w);

/* Box-Muller (cosine branch) of two uniforms in (0, 1): a standard normal, |z| <=
 * NOISE_BM_RADIUS_MAX for uniforms from noise_bits_to_uniform. */
double dpgd_noise_box_muller(double u1, double u2);

#endif /* DPGD_NOISE_INTERNAL_H */
