/* dpgd_data.h -- image classification datasets: IDX (gzip or raw) and PNG-folder
 * readers with strict validation, on-the-fly normalisation, dataset lookup.
 * Pixels stay uint8 in memory (60000 x 784 = 47 MB for MNIST); a chunk is unpacked to
 * normalised floats only when a model needs it. Errors go through dpgd_error.h. */
#ifndef DPGD_DATA_H
#define DPGD_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_error.h"

/* MNIST normalisation constants (torchvision's), the default for every dataset. */
#define DPGD_DATA_MNIST_MEAN 0.1307f
#define DPGD_DATA_MNIST_STD 0.3081f

typedef struct dpgd_dataset {
  size_t n;          /* number of examples */
  size_t rows, cols; /* image height and width */
  size_t d;          /* rows * cols, features per example */
  int n_classes;     /* labels are in [0, n_classes) */
  uint8_t *pixels;   /* (n, d) row-major, raw 0..255 */
  uint8_t *labels;   /* (n) */
  float mean, std;   /* unpack gives (p / 255 - mean) / std */
} dpgd_dataset;

/* Reads an IDX image file (magic 0x00000803) and its label file (0x00000801), gzip or
 * raw. Validates magic, dimensions, matching counts, truncation, trailing bytes, and
 * labels < n_classes. On success *out owns everything (free with dpgd_data_free). */
int dpgd_data_idx_read(dpgd_dataset **out, const char *images_path,
                       const char *labels_path, int n_classes);

/* Reads one split of a PNG folder in the mnist_png layout: split_dir/<label>/<index>.png,
 * 8-bit grayscale, equal sizes; indices 0..n-1 with no gaps give the example order. */
int dpgd_data_png_read(dpgd_dataset **out, const char *split_dir, int n_classes);

/* Loads split "train" or "test" from dir: IDX files (train-images-idx3-ubyte[.gz] ...)
 * if present, else a PNG tree (dir/training, dir/testing). */
int dpgd_data_load(dpgd_dataset **out, const char *dir, const char *split);

/* Resolves the dataset directory: explicit (flag or config) wins; else $DPGD_DATA_DIR;
 * else data/mnist under the current directory; else ../shared/data/mnist. Writes the
 * chosen path into buf. Fails with a message listing what was tried. */
int dpgd_data_find_dir(char *buf, size_t buflen, const char *explicit_dir);

/* Keeps only the first n examples (n <= ds->n); used for test subsets. */
int dpgd_data_truncate(dpgd_dataset *ds, size_t n);

/* Writes normalised floats of examples [first, first + count) into out. */
void dpgd_data_unpack(float *out /* (count, d) row-major */, const dpgd_dataset *ds,
                      size_t first, size_t count);

/* Same for an arbitrary list of example indices. */
void dpgd_data_unpack_idx(float *out /* (count, d) row-major */, const dpgd_dataset *ds,
                          const size_t *idx /* (count) */, size_t count);

void dpgd_data_free(dpgd_dataset *ds);

#endif /* DPGD_DATA_H */
