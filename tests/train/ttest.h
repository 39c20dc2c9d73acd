/* ttest.h -- helpers shared by the trainer tests (the dataset and temp-folder builders
 * come from tests/data/testutil.h). */
#ifndef DPGD_TEST_TRAIN_UTIL_H
#define DPGD_TEST_TRAIN_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The whole file, NUL-terminated (len excludes the NUL); fails the test if unreadable. */
unsigned char *tt_slurp(const char *path, size_t *len);

/* A learnable synthetic split in IDX form, to/<prefix>-{images-idx3,labels-idx1}-ubyte:
 * n 28x28 images, class k a bright horizontal band at rows 2k+3..2k+5 over a low random
 * background (from seed). */
void tt_write_banded_split(const char *to, const char *prefix, size_t n, uint64_t seed);

#endif
