/* data_internal.h -- helpers shared by the readers of data/ (not part of the API). */
#ifndef DPGD_DATA_INTERNAL_H
#define DPGD_DATA_INTERNAL_H

#include "dpgd_data.h"

/* Wraps existing buffers (pixels (n, rows * cols), labels (n)) into a dataset with the
 * default normalisation. Takes ownership of both buffers: on failure (NULL return)
 * they are freed too, so callers have one cleanup path. */
dpgd_dataset *dpgd_data_wrap(uint8_t *pixels, uint8_t *labels, size_t n, size_t rows,
                             size_t cols, int n_classes);

/* Reports DPGD_EINVAL unless 1 <= n_classes <= 256 (labels are bytes). */
int dpgd_data_check_classes(int n_classes);

#endif /* DPGD_DATA_INTERNAL_H */
