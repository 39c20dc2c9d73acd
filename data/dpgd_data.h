/* dpgd_data.h -- image classification datasets: IDX (gzip or raw) and PNG-folder
 * readers with strict validation, on-the-fly normalisation, dataset lookup.
 * Pixels stay uint8 in memory (60000 x 784 = 47 MB for MNIST); a chunk is unpacked to
 * normalised floats only when a model needs it. Errors go through dpgd_error.h: every
 * failure reports one line naming the file and the problem, and returns a status. */
#ifndef DPGD_DATA_H
#define DPGD_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dpgd_core.h"

/* MNIST normalisation constants (torchvision's), the default for every dataset. */
#define DPGD_DATA_MNIST_MEAN 0.1307f
#define DPGD_DATA_MNIST_STD 0.3081f

/* Number of classes assumed by dpgd_data_load (MNIST, Fashion-MNIST). */
#define DPGD_DATA_DEFAULT_CLASSES 10

/* Largest image side either reader accepts; larger files are rejected as malformed
 * before anything is allocated for them. */
#define DPGD_DATA_MAX_SIDE 16384

typedef struct dpgd_dataset {
  size_t n;          /* number of examples */
  size_t rows, cols; /* image height and width */
  size_t d;          /* rows * cols, features per example */
  int n_classes;     /* labels are in [0, n_classes) */
  uint8_t *pixels;   /* (n, d) row-major, raw 0..255 */
  uint8_t *labels;   /* (n) */
  float mean, std;   /* unpack gives (p / 255 - mean) / std */
  /* Gradient points (train/AUDIT.md "Gradient canaries"; NULL in every other dataset):
   * when fixed_coord is set, rows i >= fixed_from carry no image (their pixels are
   * ignored): their per-example gradient is fixed_value times the unit vector on
   * coordinate fixed_coord[i - fixed_from], clipped, capped and summed by the engine
   * as every row is (model/engine.c). */
  size_t fixed_from;
  const uint32_t *fixed_coord;
  float fixed_value;
} dpgd_dataset;

/* An empty dataset of n examples of rows x cols pixels (contents uninitialised), with
 * the default normalisation; NULL if a size is zero, n_classes is outside 1..256, or
 * memory runs out. For synthetic data in tests and tools. */
dpgd_dataset *dpgd_data_alloc(size_t n, size_t rows, size_t cols, int n_classes);

/* ---- IDX files ---------------------------------------------------------------- */

/* One IDX array of unsigned bytes as stored in a file: labels (1-D, magic 0x00000801)
 * or images (3-D, magic 0x00000803). Other element types and ranks are rejected. */
typedef struct dpgd_data_idx {
  int ndim;       /* 1 (labels) or 3 (images) */
  size_t dims[3]; /* dims[0] = count; images: dims[1] = rows, dims[2] = cols */
  size_t size;    /* product of the dims: bytes in data */
  uint8_t *data;  /* (dims[0], dims[1], dims[2]) row-major, or (dims[0]) */
} dpgd_data_idx;

/* Parses an IDX file held in memory, gzip-compressed (detected by the gzip magic
 * 1f 8b, concatenated members allowed) or raw. ndim is the rank expected: 1, 3, or 0
 * for either. Rejects a wrong magic or rank, zero or oversized dimensions, a truncated
 * file or gzip stream, corrupt gzip data, and any byte after the last element. name
 * appears in error messages. On success *out owns its data (dpgd_data_idx_free). */
int dpgd_data_idx_parse(dpgd_data_idx **out, const void *buf /* (len) */, size_t len, int ndim,
                        const char *name);

/* Reads the whole file at path and parses it as above. */
int dpgd_data_idx_read_file(dpgd_data_idx **out, const char *path, int ndim);

void dpgd_data_idx_free(dpgd_data_idx *a);

/* Reads an IDX image file (magic 0x00000803) and its label file (0x00000801), gzip or
 * raw. Validates magic, dimensions, matching counts, truncation, trailing bytes, and
 * labels < n_classes. On success *out owns everything (free with dpgd_data_free). */
int dpgd_data_idx_read(dpgd_dataset **out, const char *images_path, const char *labels_path,
                       int n_classes);

/* ---- PNG folders ---------------------------------------------------------------- */

/* Reads one split of a PNG folder in the mnist_png layout: split_dir/<label>/<index>.png,
 * 8-bit grayscale, equal sizes; indices 0..n-1 with no gaps give the example order.
 * Label folders are decimal numbers below n_classes; file names are decimal numbers
 * without leading zeros; entries starting with '.' are ignored, anything else is an
 * error. Colour, other bit depths, a different size, a truncated, corrupt or non-PNG
 * file, a duplicate index and a gap are each reported with the file they concern. */
int dpgd_data_png_read(dpgd_dataset **out, const char *split_dir, int n_classes);

/* Same for a sample of such a folder (e.g. mnist_png_sample), whose
 * indices need not be contiguous: examples are ordered by index, gaps are allowed,
 * duplicates are not, and *index (malloc'ed, free it) gets each example's file-name
 * index, so example i is example index[i] of the full split. */
int dpgd_data_png_read_sparse(dpgd_dataset **out, size_t **index /* (n) */,
                              const char *split_dir, int n_classes);

/* Reads single PNG files (8-bit grayscale, all of one size) into a dataset of n
 * examples in the order given, every label 0: images to classify (`dpgd predict`).
 * Errors name the file, as for the folder readers. */
int dpgd_data_png_read_files(dpgd_dataset **out, const char *const *paths /* (n) */, size_t n,
                             int n_classes);

/* Writes example i of ds as an 8-bit grayscale PNG at path (through path.tmp and a
 * rename), the format dpgd_data_png_read_files reads: images to classify, made from an
 * IDX dataset (`dpgd data png`). DPGD_EINVAL for an example that does not exist,
 * DPGD_EIO naming the file when it cannot be written. */
int dpgd_data_png_write(const char *path, const dpgd_dataset *ds, size_t i);

/* ---- Dataset directories ------------------------------------------------------ */

enum { DPGD_DATA_IDX = 1, DPGD_DATA_PNG = 2 };

/* Where one split of a dataset directory lives. */
typedef struct dpgd_data_source {
  int kind;          /* DPGD_DATA_IDX or DPGD_DATA_PNG */
  char images[4096]; /* IDX image file, or the PNG split directory */
  char labels[4096]; /* IDX label file; empty for PNG */
} dpgd_data_source;

/* Finds split "train" or "test" in dir: the IDX pair <p>-images-idx3-ubyte[.gz] and
 * <p>-labels-idx1-ubyte[.gz] with p = train or t10k (raw preferred over .gz when both
 * exist), else the PNG split folder dir/training or dir/testing. Fails naming what is
 * missing (an image file without its label file is an error, not a fallback). */
int dpgd_data_locate(dpgd_data_source *src, const char *dir, const char *split);

/* Loads split "train" or "test" from dir (located as above), with
 * DPGD_DATA_DEFAULT_CLASSES classes; PNG folders must have indices 0..n-1. */
int dpgd_data_load(dpgd_dataset **out, const char *dir, const char *split);

/* Same, but a PNG folder may be a sample with gaps (dpgd_data_png_read_sparse);
 * *index gets each example's index in the full split (0..n-1 for IDX). */
int dpgd_data_load_sparse(dpgd_dataset **out, size_t **index /* (n) */, const char *dir,
                          const char *split);

/* Resolves the dataset directory: explicit (flag or config) wins and must be a
 * directory; else $DPGD_DATA_DIR if set and non-empty (must be a directory); else
 * data/mnist (under the current directory) if it holds a dataset (a train split, IDX
 * or PNG). Writes the chosen path into buf. Fails with a message listing what was
 * tried. */
int dpgd_data_find_dir(char *buf, size_t buflen, const char *explicit_dir);

/* ---- Using a dataset ---------------------------------------------------------- */

/* Keeps only the first n examples (n <= ds->n); used for test subsets. */
int dpgd_data_truncate(dpgd_dataset *ds, size_t n);

/* Largest magnitude a normalised pixel (p/255 - mean) / std may reach: beyond it the
 * models' float arithmetic overflows (NaN losses and predictions). */
#define DPGD_DATA_NORM_MAX 1e6

/* Checks a pixel normalisation before it is used: mean finite, std > 0 and finite, and
 * (p/255 - mean) / std of magnitude at most DPGD_DATA_NORM_MAX for every pixel p (in
 * float as unpack computes it). what names the source in the message ("--mean/--std",
 * "data.mean/data.std"). DPGD_EINVAL otherwise. */
int dpgd_data_check_norm(double mean, double std, const char *what);

/* Writes normalised floats of examples [first, first + count) into out. */
void dpgd_data_unpack(float *out /* (count, d) row-major */, const dpgd_dataset *ds,
                      size_t first, size_t count);

/* Same for an arbitrary list of example indices. */
void dpgd_data_unpack_idx(float *out /* (count, d) row-major */, const dpgd_dataset *ds,
                          const size_t *idx /* (count) */, size_t count);

/* Counts of each label: counts[k] = #{i : labels[i] == k} for k < n_classes. */
void dpgd_data_class_counts(size_t *counts /* (n_classes) */, const dpgd_dataset *ds);

/* Mean and population standard deviation of the pixel values p / 255 over bytes
 * [0, len): exact integer histogram first, so the result does not depend on order. */
void dpgd_data_pixel_moments(double *mean, double *std, const uint8_t *px /* (len) */,
                             size_t len);

void dpgd_data_free(dpgd_dataset *ds);

#endif /* DPGD_DATA_H */
