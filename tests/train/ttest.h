/* ttest.h -- helpers shared by the trainer tests (the dataset and temp-folder builders
 * come from tests/data/testutil.h). */
#ifndef DPGD_TEST_TRAIN_UTIL_H
#define DPGD_TEST_TRAIN_UTIL_H

#include <stddef.h>

/* The whole file, NUL-terminated (len excludes the NUL); fails the test if unreadable. */
unsigned char *tt_slurp(const char *path, size_t *len);

#endif
