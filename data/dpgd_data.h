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
  uint8_t *pixels;   /* (n, d) row-major, raw 0..255; NULL for a features dataset */
  float *feat;       /* (n, d) precomputed features (dpgd_scatter_features) or NULL;
                        unpack copies them, rows x cols is then channels x positions */
  uint8_t *labels;   /* (n) */
  float mean, std;   /* unpack gives (p / 255 - mean) / std */
  /* Gradient points (train/AUDIT.md "Gradient canaries"; NULL in every other dataset):
   * when fixed_coord is set, rows i >= fixed_from carry no image (their pixels are
   * ignored): their per-example gradient is fixed_value times the unit vector on
   * coordinate fixed_coord[i - fixed_from], clipped, capped and summed by the engine
   * as every row is (model/engine.c); when fixed_sign is also set, row i's gradient is
   * fixed_sign[i - fixed_from] (+1 or -1) times that (coded gradient canaries: the
   * auditor sets the signs of each step before it, train/AUDIT.md "Coded canaries"). */
  size_t fixed_from;
  const uint32_t *fixed_coord;
  const signed char *fixed_sign;
  float fixed_value;
} dpgd_dataset;

/* Gradient row i's (i >= fixed_from) value on its coordinate: fixed_value, negated where
 * fixed_sign says -1 (exact: a float negated). The one definition the engine's float sums
 * and the secure integer sums (model/engine.c, model/intsum.c) both use. */
static inline float dpgd_data_fixed_value(const dpgd_dataset *ds, size_t i)
{
  return ds->fixed_sign && ds->fixed_sign[i - ds->fixed_from] < 0 ? -ds->fixed_value
                                                                  : ds->fixed_value;
}

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

/* ---- Scattering features (scatter.c, scatter_filters.c, scatter_cache.c) ------- */

/* The 2-D scattering transform of order 2 exactly as kymatio's Scattering2D defines it
 * (Andreux et al., JMLR 2020; docs/SCATTER.md): Morlet wavelets psi_{j, theta} (j < J,
 * theta < L) and the Gabor low-pass phi_J, reflect padding, modulus, subsampling by 2^J.
 * Channels, in kymatio's order: S0 = x * phi; S1 = |x * psi_{n1}| * phi for n1 = j L +
 * theta; S2 = ||x * psi_{n1}| * psi_{n2}| * phi for n1 < n2 with j2 > j1, n1 outer. Each
 * channel is (Mp / 2^J - 2) x (Np / 2^J - 2), Mp the padded side: for 28 x 28, J = 2,
 * L = 8: 81 channels of 7 x 7. Computed in double with FFTW3; one workspace per thread
 * (its plans are made under a lock; executing them is thread-safe). */
#define DPGD_SCATTER_MAX_J 6
#define DPGD_SCATTER_MAX_L 16
typedef struct dpgd_scatter dpgd_scatter;

/* NULL (after DPGD_FAIL naming the problem) unless 1 <= J <= DPGD_SCATTER_MAX_J, 1 <= L
 * <= DPGD_SCATTER_MAX_L and 2^J <= rows, cols <= 4096, or when memory runs out. */
dpgd_scatter *dpgd_scatter_alloc(size_t rows, size_t cols, int J, int L);
void dpgd_scatter_free(dpgd_scatter *s);
size_t dpgd_scatter_channels(const dpgd_scatter *s); /* 1 + J L + L^2 J (J - 1) / 2 */
size_t dpgd_scatter_out_rows(const dpgd_scatter *s);
size_t dpgd_scatter_out_cols(const dpgd_scatter *s);
size_t dpgd_scatter_dim(const dpgd_scatter *s); /* channels x out rows x out cols */

/* The transform of one image, in double throughout; the float version rounds the
 * result once. */
void dpgd_scatter_transform_d(dpgd_scatter *s, double *out /* (C, Mo, No) */,
                              const double *img /* (rows, cols) */);
void dpgd_scatter_transform(dpgd_scatter *s, float *out /* (C, Mo, No) */,
                            const float *img /* (rows, cols) */);

/* The filters in Fourier on the padded grid at resolution res (side Mp >> res, Np >> res):
 * wavelet n = j L + theta (res < min(j + 1, max(J - 1, 1))) and the low-pass (res < J);
 * NULL outside those ranges. */
const double *dpgd_scatter_psi(const dpgd_scatter *s, int n, int res);
const double *dpgd_scatter_phi(const dpgd_scatter *s, int res);

/* Group normalisation of one example's features (Wu & He 2018, no affine part): the C
 * channels in `groups` consecutive groups, each group of C / groups x S values shifted
 * to mean 0 and scaled to variance 1 (+ DPGD_SCATTER_GN_EPS, PyTorch's GroupNorm eps),
 * in double. It uses the example alone: no privacy cost. groups must divide C. */
#define DPGD_SCATTER_GN_EPS 1e-5
void dpgd_scatter_group_norm(float *x /* (C, S) in/out */, size_t C, size_t S, size_t groups);

/* The features of a dataset. */
typedef struct dpgd_scatter_opts {
  int J, L;      /* scales and angles (MNIST: 2 and 8) */
  size_t groups; /* group normalisation after the cache (0: none) */
} dpgd_scatter_opts;

/* What dpgd_scatter_features did with the cache. */
typedef struct dpgd_scatter_cache_info {
  int computed;    /* 1: the features were computed (no valid cache), 0: read */
  const char *why; /* why they were computed: "absent", "stale ...", "corrupt ..." */
  int write_rc;    /* status of writing the new cache (DPGD_EIO: not written) */
} dpgd_scatter_cache_info;

/* *out = the scattering features of img's images (normalised by img's mean and std as
 * dpgd_data_unpack gives them) with img's labels: rows = channels, cols = Mo x No, feat
 * set, pixels NULL. With cache_path, the features are read from that file when its
 * header matches the images' CRC-32, n, the image size, mean, std, J, L and the feature
 * size, and its payload's CRC-32 matches; otherwise they are computed (threads OpenMP
 * threads, 0: the default) and the file is replaced (through path.tmp and a rename). A
 * cache that cannot be written is not an error: info->write_rc says so. Group
 * normalisation (opts->groups) is applied after the cache. */
int dpgd_scatter_features(dpgd_dataset **out, const dpgd_dataset *img,
                          const dpgd_scatter_opts *opts, const char *cache_path, int threads,
                          dpgd_scatter_cache_info *info /* or NULL */);

void dpgd_data_free(dpgd_dataset *ds);

#endif /* DPGD_DATA_H */
