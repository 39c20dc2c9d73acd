/* test_data.c -- the dataset readers on synthetic inputs (label quick): IDX raw and
 * gzip round trips, every malformation the parser must refuse, dataset lookup,
 * statistics against closed forms, and allocation failure at every allocation of each
 * reader with no leak. PNG folders and every PNG defect: test_data_png.c. */
#define _GNU_SOURCE
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_data.h"
#include "failalloc.h"
#include "testutil.h"

/* cmocka 1.1's assert_float_equal works in float; this one keeps double. */
#define assert_close(a, b, tol)                                                                \
  do {                                                                                         \
    double a_ = (a), b_ = (b);                                                                 \
    if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);         \
  } while (0)

/* ---- IDX --------------------------------------------------------------------------- */

enum { N_IMG = 7, ROWS = 5, COLS = 3 };

/* A valid images file: 7 images of 5 x 3 with high-entropy pixels. */
static uint8_t *images_file(size_t *len, uint8_t *body /* (N_IMG * ROWS * COLS) */)
{
  const uint32_t dims[3] = {N_IMG, ROWS, COLS};
  tu_bytes(body, N_IMG * ROWS * COLS, 2385);
  return tu_idx(len, 3, dims, body, N_IMG * ROWS * COLS);
}

static void test_idx_raw_and_gzip_round_trip(void **state)
{
  (void)state;
  uint8_t body[N_IMG * ROWS * COLS];
  size_t len, zlen;
  uint8_t *raw = images_file(&len, body);
  uint8_t *gz = tu_gzip(&zlen, raw, len);
  const uint8_t *inputs[2] = {raw, gz};
  const size_t lens[2] = {len, zlen};
  for (int k = 0; k < 2; k++) {
    dpgd_data_idx *a;
    assert_int_equal(dpgd_data_idx_parse(&a, inputs[k], lens[k], 3, "t"), DPGD_OK);
    assert_int_equal(a->ndim, 3);
    assert_int_equal(a->dims[0], N_IMG);
    assert_int_equal(a->dims[1], ROWS);
    assert_int_equal(a->dims[2], COLS);
    assert_int_equal(a->size, sizeof body);
    assert_memory_equal(a->data, body, sizeof body);
    dpgd_data_idx_free(a);
  }
  /* Two concatenated gzip members are one file, as for gzip(1). */
  size_t z1, z2;
  uint8_t *m1 = tu_gzip(&z1, raw, 10), *m2 = tu_gzip(&z2, raw + 10, len - 10);
  uint8_t *cat = malloc(z1 + z2);
  memcpy(cat, m1, z1);
  memcpy(cat + z1, m2, z2);
  dpgd_data_idx *a;
  assert_int_equal(dpgd_data_idx_parse(&a, cat, z1 + z2, 0, "t"), DPGD_OK);
  assert_memory_equal(a->data, body, sizeof body);
  dpgd_data_idx_free(a);
  dpgd_data_idx_free(NULL);
  free(cat);
  free(m1);
  free(m2);
  free(gz);
  free(raw);
}

static void test_idx_labels(void **state)
{
  (void)state;
  const uint8_t labels[6] = {3, 1, 4, 1, 5, 9};
  const uint32_t dims[1] = {6};
  size_t len;
  uint8_t *f = tu_idx(&len, 1, dims, labels, 6);
  dpgd_data_idx *a;
  assert_int_equal(dpgd_data_idx_parse(&a, f, len, 0, "lab"), DPGD_OK);
  assert_int_equal(a->ndim, 1);
  assert_int_equal(a->dims[0], 6);
  assert_memory_equal(a->data, labels, 6);
  dpgd_data_idx_free(a);
  /* Asking for images gets a clear rank error, and the reverse too. */
  tu_expect_error(dpgd_data_idx_parse(&a, f, len, 3, "lab"), DPGD_EFORMAT, "lab: magic",
                  "expected images");
  assert_null(a);
  uint8_t body[N_IMG * ROWS * COLS];
  size_t ilen;
  uint8_t *img = images_file(&ilen, body);
  tu_expect_error(dpgd_data_idx_parse(&a, img, ilen, 1, "img"), DPGD_EFORMAT, "img: magic",
                  "expected labels");
  tu_expect_error(dpgd_data_idx_parse(&a, img, ilen, 2, "img"), DPGD_EINVAL, "rank 2", NULL);
  free(img);
  free(f);
}

/* Parses a copy of buf (raw, then gzip unless raw_only) and expects the error. */
static void expect_parse_error(const uint8_t *buf, size_t len, const char *frag_raw,
                               const char *frag_gz)
{
  dpgd_data_idx *a = (void *)1;
  tu_expect_error(dpgd_data_idx_parse(&a, buf, len, 0, "bad.idx"), DPGD_EFORMAT,
                  "bad.idx: ", frag_raw);
  assert_null(a);
  if (!frag_gz) return;
  size_t zlen;
  uint8_t *gz = tu_gzip(&zlen, buf, len);
  tu_expect_error(dpgd_data_idx_parse(&a, gz, zlen, 0, "bad.idx.gz"), DPGD_EFORMAT,
                  "bad.idx.gz: ", frag_gz);
  assert_null(a);
  free(gz);
}

static void test_idx_malformed(void **state)
{
  (void)state;
  uint8_t body[N_IMG * ROWS * COLS];
  size_t len;
  uint8_t *good = images_file(&len, body);
  uint8_t *b = malloc(len + 16);

  expect_parse_error(good, 0, "empty file", NULL);
  /* Wrong magic: another element type (0x09 = signed byte), another rank, garbage. */
  static const uint8_t magics[3][4] = {{0, 0, 9, 3}, {0, 0, 8, 2}, {0x50, 0x4b, 3, 4}};
  for (int k = 0; k < 3; k++) {
    memcpy(b, good, len);
    memcpy(b, magics[k], 4);
    expect_parse_error(b, len, "bad magic", "bad magic");
  }
  /* Truncated: inside the magic, inside the header, one byte short of the data. */
  expect_parse_error(good, 3, "truncated", "truncated");
  expect_parse_error(good, 9, "truncated inside the IDX header", "truncated inside");
  expect_parse_error(good, len - 1, "truncated", "truncated");
  /* Trailing garbage: one byte, and a whole extra image. */
  memcpy(b, good, len);
  b[len] = 0x2a;
  expect_parse_error(b, len + 1, "1 bytes of trailing garbage", "trailing garbage");
  /* Count too large for the data (a count mismatch inside one file). */
  memcpy(b, good, len);
  b[7] = N_IMG + 1;
  expect_parse_error(b, len, "truncated", "truncated");
  /* Zero dimensions and a side beyond the limit. */
  memcpy(b, good, len);
  b[7] = 0;
  expect_parse_error(b, len, "declares 0 images", "declares 0 images");
  memcpy(b, good, len);
  b[11] = 0;
  expect_parse_error(b, len, "image size 0 x 3", "image size 0 x 3");
  memcpy(b, good, len);
  b[13] = 0x7f; /* cols = 0x7f0003 */
  expect_parse_error(b, len, "outside 1..", NULL);
  /* A huge declared count in a tiny file is refused before any allocation. */
  memcpy(b, good, len);
  b[4] = b[5] = b[6] = b[7] = 0xff;
  failalloc_arm(-1);
  expect_parse_error(b, len, "truncated", "truncated");
  assert_true(failalloc_calls() < 8);
  free(b);
  free(good);
}

static void test_idx_bad_gzip(void **state)
{
  (void)state;
  uint8_t body[N_IMG * ROWS * COLS];
  size_t len, zlen;
  uint8_t *good = images_file(&len, body);
  uint8_t *gz = tu_gzip(&zlen, good, len);
  uint8_t *b = malloc(zlen + 8);
  dpgd_data_idx *a;
  /* The CRC-32 in the gzip trailer no longer matches the data. */
  memcpy(b, gz, zlen);
  b[zlen - 6] ^= 0x55;
  tu_expect_error(dpgd_data_idx_parse(&a, b, zlen, 0, "z"), DPGD_EFORMAT,
                  "z: corrupt gzip data", "incorrect data check");
  /* An invalid deflate block type (BTYPE = 3) right after the 10-byte gzip header. */
  memcpy(b, gz, zlen);
  b[10] = 0x07;
  tu_expect_error(dpgd_data_idx_parse(&a, b, zlen, 0, "z"), DPGD_EFORMAT,
                  "z: corrupt gzip data", "invalid block type");
  /* A cut compressed stream, and bytes after the gzip member. */
  tu_expect_error(dpgd_data_idx_parse(&a, gz, zlen - 9, 0, "z"), DPGD_EFORMAT,
                  "z: truncated: the gzip stream ends", NULL);
  tu_expect_error(dpgd_data_idx_parse(&a, gz, 2, 0, "z"), DPGD_EFORMAT, "z: truncated", NULL);
  memcpy(b, gz, zlen);
  memcpy(b + zlen, "JUNK", 4);
  tu_expect_error(dpgd_data_idx_parse(&a, b, zlen + 4, 0, "z"), DPGD_EFORMAT,
                  "z: 4 bytes of trailing garbage after the gzip data", NULL);
  free(b);
  free(gz);
  free(good);
}

/* Writes images (count n_img) and labels into dir; returns their paths. */
static void write_pair(char *img_path, char *lab_path, const char *dir, uint32_t n_img,
                       const uint8_t *labels, uint32_t n_lab, int gzip)
{
  uint8_t body[N_IMG * ROWS * COLS];
  tu_bytes(body, sizeof body, 2385);
  const uint32_t di[3] = {n_img, ROWS, COLS}, dl[1] = {n_lab};
  size_t li, ll;
  uint8_t *fi = tu_idx(&li, 3, di, body, (size_t)n_img * ROWS * COLS);
  uint8_t *fl = tu_idx(&ll, 1, dl, labels, n_lab);
  sprintf(img_path, "%s/img%s", dir, gzip ? ".gz" : "");
  sprintf(lab_path, "%s/lab%s", dir, gzip ? ".gz" : "");
  if (gzip) {
    size_t zi, zl;
    uint8_t *gi = tu_gzip(&zi, fi, li), *gl = tu_gzip(&zl, fl, ll);
    tu_write(img_path, gi, zi);
    tu_write(lab_path, gl, zl);
    free(gi);
    free(gl);
  } else {
    tu_write(img_path, fi, li);
    tu_write(lab_path, fl, ll);
  }
  free(fi);
  free(fl);
}

static void test_idx_read_pair(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  char ip[600], lp[600];
  const uint8_t labels[N_IMG + 1] = {7, 0, 9, 2, 2, 5, 8, 10};
  uint8_t body[N_IMG * ROWS * COLS];
  tu_bytes(body, sizeof body, 2385);
  for (int gz = 0; gz < 2; gz++) {
    dpgd_dataset *ds;
    write_pair(ip, lp, dir, N_IMG, labels, N_IMG, gz);
    assert_int_equal(dpgd_data_idx_read(&ds, ip, lp, 10), DPGD_OK);
    assert_int_equal(ds->n, N_IMG);
    assert_int_equal(ds->rows, ROWS);
    assert_int_equal(ds->cols, COLS);
    assert_int_equal(ds->d, ROWS * COLS);
    assert_int_equal(ds->n_classes, 10);
    assert_memory_equal(ds->pixels, body, sizeof body);
    assert_memory_equal(ds->labels, labels, N_IMG);
    assert_float_equal(ds->mean, DPGD_DATA_MNIST_MEAN, 0);
    dpgd_data_free(ds);
    /* A label equal to the class count is out of range; so is one past 9 with 10. */
    tu_expect_error(dpgd_data_idx_read(&ds, ip, lp, 9), DPGD_EFORMAT,
                    "label 9 of example 2 is outside 0..8", lp);
    assert_null(ds);
    /* Counts of images and labels disagree. */
    write_pair(ip, lp, dir, N_IMG, labels, N_IMG + 1, gz);
    tu_expect_error(dpgd_data_idx_read(&ds, ip, lp, 11), DPGD_EFORMAT, "holds 7 images but",
                    "holds 8 labels");
    write_pair(ip, lp, dir, N_IMG - 1, labels, N_IMG + 1, gz);
    tu_expect_error(dpgd_data_idx_read(&ds, ip, lp, 11), DPGD_EFORMAT, "holds 6 images", NULL);
    /* Swapped files: each has the wrong magic for its role. */
    tu_expect_error(dpgd_data_idx_read(&ds, lp, ip, 11), DPGD_EFORMAT, "expected images", lp);
  }
  dpgd_dataset *ds;
  tu_expect_error(dpgd_data_idx_read(&ds, ip, lp, 0), DPGD_EINVAL, "classes 0", NULL);
  tu_expect_error(dpgd_data_idx_read(&ds, ip, lp, 257), DPGD_EINVAL, "classes 257", NULL);
  /* I/O errors: missing file, a directory, a device. */
  dpgd_data_idx *a;
  char missing[700];
  snprintf(missing, sizeof missing, "%s/nope", dir);
  tu_expect_error(dpgd_data_idx_read_file(&a, missing, 0), DPGD_EIO, "cannot open", missing);
  tu_expect_error(dpgd_data_idx_read_file(&a, dir, 0), DPGD_EIO, "is a directory", dir);
  tu_expect_error(dpgd_data_idx_read_file(&a, "/dev/null", 0), DPGD_EIO,
                  "/dev/null is not a regular file", NULL);
  tu_expect_error(dpgd_data_idx_read(&ds, ip, missing, 10), DPGD_EIO, "cannot open", NULL);
  tu_rmtree(dir);
  free(dir);
}

/* ---- dataset directories ------------------------------------------------------------ */

enum { PW = 6, PH = 4 }; /* the PNG trees' image size */

static void test_locate_and_load(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  dpgd_data_source src;
  dpgd_dataset *ds;
  tu_expect_error(dpgd_data_locate(&src, dir, "train"), DPGD_EIO, "no train split",
                  "train-images-idx3-ubyte");
  tu_expect_error(dpgd_data_locate(&src, dir, "valid"), DPGD_EINVAL, "unknown split 'valid'",
                  NULL);
  /* Test split, gzip images with raw labels. */
  char ip[600], lp[600], p[700];
  const uint8_t labels[N_IMG] = {1, 6, 1, 8, 0, 3, 3};
  write_pair(ip, lp, dir, N_IMG, labels, N_IMG, 1);
  snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", dir);
  rename(ip, p);
  tu_expect_error(dpgd_data_locate(&src, dir, "test"), DPGD_EIO,
                  "t10k-images-idx3-ubyte.gz but no t10k-labels-idx1-ubyte[.gz]", NULL);
  write_pair(ip, lp, dir, N_IMG, labels, N_IMG, 0);
  snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
  rename(lp, p);
  assert_int_equal(dpgd_data_locate(&src, dir, "test"), DPGD_OK);
  assert_int_equal(src.kind, DPGD_DATA_IDX);
  assert_non_null(strstr(src.images, "t10k-images-idx3-ubyte.gz"));
  size_t *index;
  assert_int_equal(dpgd_data_load_sparse(&ds, &index, dir, "test"), DPGD_OK);
  assert_int_equal(ds->n, N_IMG);
  assert_memory_equal(ds->labels, labels, N_IMG);
  for (size_t i = 0; i < N_IMG; i++) assert_int_equal(index[i], i);
  free(index);
  dpgd_data_free(ds);
  /* A raw image file beside the .gz is preferred. */
  snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
  rename(ip, p);
  assert_int_equal(dpgd_data_locate(&src, dir, "test"), DPGD_OK);
  assert_string_equal(src.images, p);
  /* A file is not a dataset directory. */
  tu_expect_error(dpgd_data_locate(&src, p, "test"), DPGD_EIO, "is not a directory", NULL);
  tu_rmtree(dir);
  tu_expect_error(dpgd_data_load(&ds, dir, "test"), DPGD_EIO, "cannot open dataset directory",
                  NULL);
  free(dir);
}

static void test_find_dir(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  char cwd[1024], buf[1024], p[700];
  assert_non_null(getcwd(cwd, sizeof cwd));
  /* Work in a folder beside a sibling folder shared/data/mnist that holds a dataset (the
   * layout of the project's own machines; a user's has none): the library looks in no
   * directory outside the one it runs in. */
  const size_t index[1] = {0};
  const uint8_t labels[1] = {2};
  snprintf(p, sizeof p, "%s/shared", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/shared/data", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/shared/data/mnist", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/shared/data/mnist/training", dir);
  tu_png_tree(p, index, labels, 1, PW, PH);
  snprintf(p, sizeof p, "%s/work", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  assert_int_equal(chdir(p), 0);
  unsetenv("DPGD_DATA_DIR");
  tu_expect_error(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_EIO, "no dataset found",
                  "data/mnist (under the current directory) holds none");
  /* An empty data/mnist does not count as a dataset. */
  mkdir("data", 0755);
  mkdir("data/mnist", 0755);
  tu_expect_error(dpgd_data_find_dir(buf, sizeof buf, ""), DPGD_EIO, "no dataset found", NULL);
  tu_png_tree("data/mnist/training", index, labels, 1, PW, PH);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_OK);
  assert_string_equal(buf, "data/mnist");
  /* The environment beats the default; an explicit directory beats both. */
  setenv("DPGD_DATA_DIR", dir, 1);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_OK);
  assert_string_equal(buf, dir);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, "data"), DPGD_OK);
  assert_string_equal(buf, "data");
  tu_expect_error(dpgd_data_find_dir(buf, sizeof buf, "nowhere"), DPGD_EIO, "nowhere (given)",
                  NULL);
  snprintf(p, sizeof p, "%s/missing", dir);
  setenv("DPGD_DATA_DIR", p, 1);
  tu_expect_error(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_EIO, "from $DPGD_DATA_DIR",
                  NULL);
  unsetenv("DPGD_DATA_DIR");
  tu_expect_error(dpgd_data_find_dir(buf, 5, "data/mnist"), DPGD_EINVAL, "too long", NULL);
  assert_int_equal(chdir(cwd), 0);
  tu_rmtree(dir);
  free(dir);
}

/* ---- statistics and the dataset object --------------------------------------------- */

static void test_statistics(void **state)
{
  (void)state;
  /* Closed form: values a/255 and b/255 in equal numbers have mean (a+b)/510 and
   * standard deviation |a-b|/510. */
  uint8_t px[6] = {37, 219, 219, 37, 37, 219};
  double mean, std;
  dpgd_data_pixel_moments(&mean, &std, px, 6);
  assert_close(mean, (37.0 + 219.0) / 510.0, 1e-15);
  assert_close(std, (219.0 - 37.0) / 510.0, 1e-15);
  dpgd_data_pixel_moments(&mean, &std, px, 0);
  assert_close(mean, 0.0, 0);
  assert_close(std, 0.0, 0);
  dpgd_dataset *ds = dpgd_data_alloc(5, 1, 1, 4);
  assert_non_null(ds);
  memcpy(ds->labels, (uint8_t[]){3, 0, 3, 3, 1}, 5);
  size_t counts[4];
  dpgd_data_class_counts(counts, ds);
  assert_int_equal(counts[0], 1);
  assert_int_equal(counts[1], 1);
  assert_int_equal(counts[2], 0);
  assert_int_equal(counts[3], 3);
  dpgd_data_free(ds);
  assert_null(dpgd_data_alloc(0, 28, 28, 10));
  assert_null(dpgd_data_alloc(3, 0, 28, 10));
  assert_null(dpgd_data_alloc(3, 28, 28, 0));
  assert_null(dpgd_data_alloc(SIZE_MAX / 2, 28, 28, 10));
}

/* ---- allocation failure --------------------------------------------------------------- */

/* Runs op with allocation k failing, for k = 0, 1, ... until op succeeds: every failure
 * must be DPGD_ENOMEM with nothing left allocated. Returns the number of allocations. */
static long fail_each_allocation(int (*op)(void *ctx), void *ctx)
{
  for (long k = 0; k < 100000; k++) {
    failalloc_arm(k);
    int st = op(ctx);
    long live = failalloc_live();
    failalloc_arm(-1);
    if (st == DPGD_OK) return k;
    if (st != DPGD_ENOMEM || live != 0)
      fail_msg("allocation %ld failing gave status %d and %ld live blocks (%s)", k, st, live,
               dpgd_error_last());
  }
  fail_msg("never succeeded");
  return 0;
}

struct files {
  char img[600], lab[600], split[600];
};

static int op_idx_read(void *ctx)
{
  struct files *f = ctx;
  dpgd_dataset *ds;
  int st = dpgd_data_idx_read(&ds, f->img, f->lab, 10);
  if (!st) {
    assert_int_equal(ds->n, N_IMG);
    dpgd_data_free(ds);
  }
  return st;
}

static int op_png_read(void *ctx)
{
  struct files *f = ctx;
  dpgd_dataset *ds;
  size_t *index;
  int st = dpgd_data_png_read_sparse(&ds, &index, f->split, 10);
  if (!st) {
    assert_int_equal(ds->n, 23);
    free(index);
    dpgd_data_free(ds);
  }
  return st;
}

static int op_png_files(void *ctx)
{
  struct files *f = ctx;
  char p[2][700];
  snprintf(p[0], sizeof p[0], "%s/3/0.png", f->split);
  snprintf(p[1], sizeof p[1], "%s/7/22.png", f->split);
  const char *paths[3] = {p[1], p[0], p[1]};
  dpgd_dataset *ds;
  int st = dpgd_data_png_read_files(&ds, paths, 3, 10);
  if (!st) {
    assert_int_equal(ds->n, 3);
    dpgd_data_free(ds);
  }
  return st;
}

static void test_allocation_failures(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  struct files f;
  const uint8_t labels[N_IMG] = {2, 7, 1, 8, 2, 8, 1};
  write_pair(f.img, f.lab, dir, N_IMG, labels, N_IMG, 1);
  long n_gz = fail_each_allocation(op_idx_read, &f);
  assert_true(n_gz >= 11); /* 2 x (file buffer, idx, inflate state, window, data) + dataset */
  write_pair(f.img, f.lab, dir, N_IMG, labels, N_IMG, 0);
  long n_raw = fail_each_allocation(op_idx_read, &f);
  assert_true(n_raw >= 7);
  snprintf(f.split, sizeof f.split, "%s/training", dir);
  tu_png_tree_n(f.split, 23, PW, PH);
  long n_png = fail_each_allocation(op_png_read, &f);
  assert_true(n_png > 23); /* libpng allocates per file */
  long n_files = fail_each_allocation(op_png_files, &f);
  assert_true(n_files > 3);
  print_message("failed each of %ld (IDX gzip), %ld (IDX raw), %ld (PNG), %ld (PNG files) "
                "allocations\n",
                n_gz, n_raw, n_png, n_files);
  tu_rmtree(dir);
  free(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idx_raw_and_gzip_round_trip),
      cmocka_unit_test(test_idx_labels),
      cmocka_unit_test(test_idx_malformed),
      cmocka_unit_test(test_idx_bad_gzip),
      cmocka_unit_test(test_idx_read_pair),
      cmocka_unit_test(test_locate_and_load),
      cmocka_unit_test(test_find_dir),
      cmocka_unit_test(test_statistics),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
