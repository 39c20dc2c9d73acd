/* test_data.c -- the dataset readers on synthetic inputs (label quick): IDX raw and
 * gzip round trips, every malformation the parser must refuse, PNG folders (strict and
 * sparse) and every PNG defect, dataset lookup, statistics against closed forms, and
 * allocation failure at every allocation of each reader with no leak. */
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

/* Asserts status st and that the last error message contains each given fragment. */
static void expect_error(int st, int want, const char *frag1, const char *frag2)
{
  const char *msg = dpgd_error_last();
  if (st != want || !strstr(msg, frag1) || (frag2 && !strstr(msg, frag2)))
    fail_msg("status %d (want %d), message '%s' (want '%s'%s%s)", st, want, msg, frag1,
             frag2 ? " and " : "", frag2 ? frag2 : "");
}

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
  expect_error(dpgd_data_idx_parse(&a, f, len, 3, "lab"), DPGD_EFORMAT, "lab: magic",
               "expected images");
  assert_null(a);
  uint8_t body[N_IMG * ROWS * COLS];
  size_t ilen;
  uint8_t *img = images_file(&ilen, body);
  expect_error(dpgd_data_idx_parse(&a, img, ilen, 1, "img"), DPGD_EFORMAT, "img: magic",
               "expected labels");
  expect_error(dpgd_data_idx_parse(&a, img, ilen, 2, "img"), DPGD_EINVAL, "rank 2", NULL);
  free(img);
  free(f);
}

/* Parses a copy of buf (raw, then gzip unless raw_only) and expects the error. */
static void expect_parse_error(const uint8_t *buf, size_t len, const char *frag_raw,
                               const char *frag_gz)
{
  dpgd_data_idx *a = (void *)1;
  expect_error(dpgd_data_idx_parse(&a, buf, len, 0, "bad.idx"), DPGD_EFORMAT,
               "bad.idx: ", frag_raw);
  assert_null(a);
  if (!frag_gz) return;
  size_t zlen;
  uint8_t *gz = tu_gzip(&zlen, buf, len);
  expect_error(dpgd_data_idx_parse(&a, gz, zlen, 0, "bad.idx.gz"), DPGD_EFORMAT,
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
  expect_error(dpgd_data_idx_parse(&a, b, zlen, 0, "z"), DPGD_EFORMAT, "z: corrupt gzip data",
               "incorrect data check");
  /* An invalid deflate block type (BTYPE = 3) right after the 10-byte gzip header. */
  memcpy(b, gz, zlen);
  b[10] = 0x07;
  expect_error(dpgd_data_idx_parse(&a, b, zlen, 0, "z"), DPGD_EFORMAT, "z: corrupt gzip data",
               "invalid block type");
  /* A cut compressed stream, and bytes after the gzip member. */
  expect_error(dpgd_data_idx_parse(&a, gz, zlen - 9, 0, "z"), DPGD_EFORMAT,
               "z: truncated: the gzip stream ends", NULL);
  expect_error(dpgd_data_idx_parse(&a, gz, 2, 0, "z"), DPGD_EFORMAT, "z: truncated", NULL);
  memcpy(b, gz, zlen);
  memcpy(b + zlen, "JUNK", 4);
  expect_error(dpgd_data_idx_parse(&a, b, zlen + 4, 0, "z"), DPGD_EFORMAT,
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
    expect_error(dpgd_data_idx_read(&ds, ip, lp, 9), DPGD_EFORMAT,
                 "label 9 of example 2 is outside 0..8", lp);
    assert_null(ds);
    /* Counts of images and labels disagree. */
    write_pair(ip, lp, dir, N_IMG, labels, N_IMG + 1, gz);
    expect_error(dpgd_data_idx_read(&ds, ip, lp, 11), DPGD_EFORMAT, "holds 7 images but",
                 "holds 8 labels");
    write_pair(ip, lp, dir, N_IMG - 1, labels, N_IMG + 1, gz);
    expect_error(dpgd_data_idx_read(&ds, ip, lp, 11), DPGD_EFORMAT, "holds 6 images", NULL);
    /* Swapped files: each has the wrong magic for its role. */
    expect_error(dpgd_data_idx_read(&ds, lp, ip, 11), DPGD_EFORMAT, "expected images", lp);
  }
  dpgd_dataset *ds;
  expect_error(dpgd_data_idx_read(&ds, ip, lp, 0), DPGD_EINVAL, "classes 0", NULL);
  expect_error(dpgd_data_idx_read(&ds, ip, lp, 257), DPGD_EINVAL, "classes 257", NULL);
  /* I/O errors: missing file, a directory, a device. */
  dpgd_data_idx *a;
  char missing[700];
  snprintf(missing, sizeof missing, "%s/nope", dir);
  expect_error(dpgd_data_idx_read_file(&a, missing, 0), DPGD_EIO, "cannot open", missing);
  expect_error(dpgd_data_idx_read_file(&a, dir, 0), DPGD_EIO, "is a directory", dir);
  expect_error(dpgd_data_idx_read_file(&a, "/dev/null", 0), DPGD_EIO,
               "/dev/null is not a regular file", NULL);
  expect_error(dpgd_data_idx_read(&ds, ip, missing, 10), DPGD_EIO, "cannot open", NULL);
  tu_rmtree(dir);
  free(dir);
}

/* ---- PNG folders -------------------------------------------------------------------- */

enum { PW = 6, PH = 4 };

/* A strict tree of n images, labels from a fixed high-entropy sequence. */
static void make_tree(const char *split, size_t n)
{
  size_t index[64];
  uint8_t labels[64];
  for (size_t i = 0; i < n; i++) {
    index[i] = i;
    labels[i] = (uint8_t)((i * 7 + 3) % 10);
  }
  tu_png_tree(split, index, labels, n, PW, PH);
}

static void check_image(const dpgd_dataset *ds, size_t i, size_t index)
{
  uint8_t want[PW * PH];
  tu_bytes(want, sizeof want, index);
  assert_memory_equal(ds->pixels + i * ds->d, want, sizeof want);
  assert_int_equal(ds->labels[i], (index * 7 + 3) % 10);
}

static void test_png_strict(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  char split[600];
  snprintf(split, sizeof split, "%s/training", dir);
  make_tree(split, 23); /* 23 > 10: "10.png" sorts before "2.png" as text */
  dpgd_dataset *ds;
  assert_int_equal(dpgd_data_png_read(&ds, split, 10), DPGD_OK);
  assert_int_equal(ds->n, 23);
  assert_int_equal(ds->rows, PH);
  assert_int_equal(ds->cols, PW);
  for (size_t i = 0; i < 23; i++) check_image(ds, i, i);
  dpgd_data_free(ds);
  dpgd_data_free(NULL);
  /* Dot files are ignored. */
  char p[700];
  snprintf(p, sizeof p, "%s/.DS_Store", split);
  tu_write(p, "x", 1);
  assert_int_equal(dpgd_data_png_read(&ds, split, 10), DPGD_OK);
  dpgd_data_free(ds);
  /* The same tree through dpgd_data_load, since dir has a training/ folder. */
  assert_int_equal(dpgd_data_load(&ds, dir, "train"), DPGD_OK);
  assert_int_equal(ds->n, 23);
  dpgd_data_free(ds);
  /* Labels beyond the class count are unexpected folders. */
  expect_error(dpgd_data_png_read(&ds, split, 5), DPGD_EFORMAT, "unexpected entry '",
               "label folders 0..4");
  assert_null(ds);
  tu_rmtree(dir);
  free(dir);
}

static void test_png_interlaced(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  char p[700];
  snprintf(p, sizeof p, "%s/4", dir);
  mkdir(p, 0755);
  uint8_t px[13 * 11];
  tu_bytes(px, sizeof px, 77);
  snprintf(p, sizeof p, "%s/4/0.png", dir);
  tu_png(p, 13, 11, PNG_COLOR_TYPE_GRAY, 8, 1, px);
  dpgd_dataset *ds;
  assert_int_equal(dpgd_data_png_read(&ds, dir, 10), DPGD_OK);
  assert_int_equal(ds->rows, 11);
  assert_int_equal(ds->cols, 13);
  assert_memory_equal(ds->pixels, px, sizeof px);
  assert_int_equal(ds->labels[0], 4);
  dpgd_data_free(ds);
  tu_rmtree(dir);
  free(dir);
}

static void test_png_sparse_and_gaps(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  const size_t index[5] = {17, 3, 40, 4, 0};
  uint8_t labels[5];
  for (int k = 0; k < 5; k++) labels[k] = (uint8_t)((index[k] * 7 + 3) % 10);
  tu_png_tree(dir, index, labels, 5, PW, PH);
  dpgd_dataset *ds;
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "gap in the indices",
               "1.png is missing");
  size_t *idx;
  assert_int_equal(dpgd_data_png_read_sparse(&ds, &idx, dir, 10), DPGD_OK);
  const size_t sorted[5] = {0, 3, 4, 17, 40};
  assert_int_equal(ds->n, 5);
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(idx[i], sorted[i]);
    check_image(ds, i, sorted[i]);
  }
  free(idx);
  dpgd_data_free(ds);
  /* A duplicate index (same number under two labels) is refused in both modes. */
  const size_t dup[1] = {17};
  const uint8_t dup_label[1] = {(17 * 7 + 3) % 10 == 2 ? 5 : 2};
  tu_png_tree(dir, dup, dup_label, 1, PW, PH);
  expect_error(dpgd_data_png_read_sparse(&ds, &idx, dir, 10), DPGD_EFORMAT,
               "index 17 appears twice", NULL);
  assert_null(ds);
  assert_null(idx);
  tu_rmtree(dir);
  free(dir);
}

/* Builds a valid 3-image tree in dir and replaces 1.png (label 0) with bytes. */
static void tree_with(const char *dir, const void *bytes, size_t len)
{
  const size_t index[3] = {0, 1, 2};
  const uint8_t labels[3] = {3, 0, 3};
  tu_png_tree(dir, index, labels, 3, PW, PH);
  char p[700];
  snprintf(p, sizeof p, "%s/0/1.png", dir);
  if (bytes) tu_write(p, bytes, len);
}

static void tree_with_png(const char *dir, int w, int h, int type, int depth)
{
  tree_with(dir, NULL, 0);
  uint8_t px[8 * PW * PH * 8];
  tu_bytes(px, sizeof px, 5);
  char p[700];
  snprintf(p, sizeof p, "%s/0/1.png", dir);
  tu_png(p, w, h, type, depth, 0, px);
}

static uint8_t *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  uint8_t *b = malloc(1 << 16);
  *len = fread(b, 1, 1 << 16, f);
  fclose(f);
  return b;
}

static void test_png_defects(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  dpgd_dataset *ds;
  char p[700];
  snprintf(p, sizeof p, "%s/0/1.png", dir);

  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_RGB, 8);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: RGB colour image",
               "expected 8-bit grayscale");
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_RGB_ALPHA, 8);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "RGBA colour image", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY_ALPHA, 8);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "grayscale with alpha", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_PALETTE, 8);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "palette", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY, 16);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
               "0/1.png: 16-bit grayscale, expected 8-bit", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY, 4);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "4-bit grayscale", NULL);
  tree_with_png(dir, PW + 1, PH, PNG_COLOR_TYPE_GRAY, 8);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
               "0/1.png: image is 4 x 7, expected 4 x 6 like", "3/0.png");

  tree_with(dir, "P5\n6 4\n255\n", 11); /* a PGM, not a PNG */
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: not a PNG file", NULL);
  tree_with(dir, "", 0);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "not a PNG file", NULL);
  tree_with(dir, "\x89PNG", 4);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "truncated PNG", NULL);

  /* Truncations of a valid file: in the header, in the image data, and just before
   * IEND (the pixels are complete; only reading to the end notices). */
  tree_with(dir, NULL, 0);
  size_t len;
  uint8_t *good = slurp(p, &len);
  const size_t cuts[3] = {20, len / 2 + 10, len - 12};
  for (int k = 0; k < 3; k++) {
    tree_with(dir, good, cuts[k]);
    expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
                 "0/1.png: truncated or corrupt PNG (libpng: ", NULL);
    assert_null(ds);
  }
  /* A text chunk stating 2 GB after the header: libpng would allocate that much for a
   * file of a few dozen bytes; refused as corrupt without the allocation. */
  uint8_t *huge = malloc(len + 15);
  memcpy(huge, good, 33); /* signature and IHDR */
  memcpy(huge + 33, "\x7f\xff\xff\xf0tEXtComment", 15);
  memcpy(huge + 48, good + 33, len - 33);
  tree_with(dir, huge, len + 15);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: corrupt PNG",
               "a chunk asks for");
  free(huge);
  /* A flipped bit in the image data: the chunk CRC catches it. */
  uint8_t *bad = malloc(len);
  memcpy(bad, good, len);
  bad[len / 2] ^= 0x10;
  tree_with(dir, bad, len);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "truncated or corrupt PNG",
               NULL);
  free(bad);
  free(good);

  /* Bad names: leading zeros, not a number, a file where a label folder should be. */
  tree_with(dir, NULL, 0);
  snprintf(p, sizeof p, "%s/3/02.png", dir);
  tu_write(p, "x", 1);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "3/02.png: unexpected file",
               NULL);
  remove(p);
  snprintf(p, sizeof p, "%s/3/x.png", dir);
  tu_write(p, "x", 1);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "3/x.png: unexpected", NULL);
  remove(p);
  snprintf(p, sizeof p, "%s/7", dir);
  tu_write(p, "x", 1);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "7 is not a folder", NULL);
  remove(p);
  /* A dangling link where an image should be: an I/O error naming it. */
  snprintf(p, sizeof p, "%s/3/5.png", dir);
  symlink("/nonexistent/dpgd", p);
  expect_error(dpgd_data_png_read_sparse(&ds, &(size_t *){NULL}, dir, 10), DPGD_EIO,
               "cannot open", "3/5.png");
  remove(p);
  tu_rmtree(dir);
  /* Empty and missing folders. */
  mkdir(dir, 0755);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "no PNG images found", NULL);
  rmdir(dir);
  expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EIO, "cannot open PNG folder", NULL);
  free(dir);
}

/* Single files (dpgd predict): any names, read in the order given, labels 0; a file of
 * another size, a non-PNG and a missing file are refused naming the file. */
static void test_png_files(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  char p[3][700];
  const uint64_t seeds[3] = {41, 7, 2385};
  for (int k = 0; k < 3; k++) {
    uint8_t px[PW * PH];
    tu_bytes(px, sizeof px, seeds[k]);
    snprintf(p[k], sizeof p[k], "%s/img-%c.png", dir, "zab"[k]);
    tu_png(p[k], PW, PH, PNG_COLOR_TYPE_GRAY, 8, k == 1, px);
  }
  const char *order[3] = {p[2], p[0], p[1]};
  dpgd_dataset *ds;
  assert_int_equal(dpgd_data_png_read_files(&ds, order, 3, 10), DPGD_OK);
  assert_int_equal(ds->n, 3);
  assert_int_equal(ds->rows, PH);
  assert_int_equal(ds->cols, PW);
  const uint64_t want_seed[3] = {2385, 41, 7};
  for (size_t i = 0; i < 3; i++) {
    uint8_t want[PW * PH];
    tu_bytes(want, sizeof want, want_seed[i]);
    assert_memory_equal(ds->pixels + i * ds->d, want, sizeof want);
    assert_int_equal(ds->labels[i], 0);
  }
  dpgd_data_free(ds);
  /* The same file twice is fine (two examples). */
  const char *twice[2] = {p[1], p[1]};
  assert_int_equal(dpgd_data_png_read_files(&ds, twice, 2, 10), DPGD_OK);
  assert_memory_equal(ds->pixels, ds->pixels + ds->d, ds->d);
  dpgd_data_free(ds);

  char odd[700], bad[700], missing[700];
  uint8_t px[(PW + 1) * PH];
  tu_bytes(px, sizeof px, 3);
  snprintf(odd, sizeof odd, "%s/wide.png", dir);
  tu_png(odd, PW + 1, PH, PNG_COLOR_TYPE_GRAY, 8, 0, px);
  const char *mixed[2] = {p[0], odd};
  expect_error(dpgd_data_png_read_files(&ds, mixed, 2, 10), DPGD_EFORMAT,
               "wide.png: image is 4 x 7, expected 4 x 6 like", p[0]);
  assert_null(ds);
  snprintf(bad, sizeof bad, "%s/fake.png", dir);
  tu_write(bad, "P5\n6 4\n255\n", 11);
  const char *with_bad[2] = {p[0], bad};
  expect_error(dpgd_data_png_read_files(&ds, with_bad, 2, 10), DPGD_EFORMAT,
               "fake.png: not a PNG file", NULL);
  assert_null(ds);
  snprintf(missing, sizeof missing, "%s/none.png", dir);
  expect_error(dpgd_data_png_read_files(&ds, &(const char *){missing}, 1, 10), DPGD_EIO,
               "cannot open", "none.png");
  assert_null(ds);
  expect_error(dpgd_data_png_read_files(&ds, order, 0, 10), DPGD_EINVAL, "no PNG file", NULL);
  assert_null(ds);
  tu_rmtree(dir);
  free(dir);
}

/* ---- dataset directories ------------------------------------------------------------ */

static void test_locate_and_load(void **state)
{
  (void)state;
  char *dir = tu_tmpdir();
  dpgd_data_source src;
  dpgd_dataset *ds;
  expect_error(dpgd_data_locate(&src, dir, "train"), DPGD_EIO, "no train split",
               "train-images-idx3-ubyte");
  expect_error(dpgd_data_locate(&src, dir, "valid"), DPGD_EINVAL, "unknown split 'valid'",
               NULL);
  /* Test split, gzip images with raw labels. */
  char ip[600], lp[600], p[700];
  const uint8_t labels[N_IMG] = {1, 6, 1, 8, 0, 3, 3};
  write_pair(ip, lp, dir, N_IMG, labels, N_IMG, 1);
  snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", dir);
  rename(ip, p);
  expect_error(dpgd_data_locate(&src, dir, "test"), DPGD_EIO,
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
  expect_error(dpgd_data_locate(&src, p, "test"), DPGD_EIO, "is not a directory", NULL);
  tu_rmtree(dir);
  expect_error(dpgd_data_load(&ds, dir, "test"), DPGD_EIO, "cannot open dataset directory",
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
  expect_error(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_EIO, "no dataset found",
               "data/mnist (under the current directory) holds none");
  /* An empty data/mnist does not count as a dataset. */
  mkdir("data", 0755);
  mkdir("data/mnist", 0755);
  expect_error(dpgd_data_find_dir(buf, sizeof buf, ""), DPGD_EIO, "no dataset found", NULL);
  tu_png_tree("data/mnist/training", index, labels, 1, PW, PH);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_OK);
  assert_string_equal(buf, "data/mnist");
  /* The environment beats the default; an explicit directory beats both. */
  setenv("DPGD_DATA_DIR", dir, 1);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_OK);
  assert_string_equal(buf, dir);
  assert_int_equal(dpgd_data_find_dir(buf, sizeof buf, "data"), DPGD_OK);
  assert_string_equal(buf, "data");
  expect_error(dpgd_data_find_dir(buf, sizeof buf, "nowhere"), DPGD_EIO, "nowhere (given)",
               NULL);
  snprintf(p, sizeof p, "%s/missing", dir);
  setenv("DPGD_DATA_DIR", p, 1);
  expect_error(dpgd_data_find_dir(buf, sizeof buf, NULL), DPGD_EIO, "from $DPGD_DATA_DIR",
               NULL);
  unsetenv("DPGD_DATA_DIR");
  expect_error(dpgd_data_find_dir(buf, 5, "data/mnist"), DPGD_EINVAL, "too long", NULL);
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
  make_tree(f.split, 23);
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
      cmocka_unit_test(test_png_strict),
      cmocka_unit_test(test_png_interlaced),
      cmocka_unit_test(test_png_sparse_and_gaps),
      cmocka_unit_test(test_png_defects),
      cmocka_unit_test(test_png_files),
      cmocka_unit_test(test_locate_and_load),
      cmocka_unit_test(test_find_dir),
      cmocka_unit_test(test_statistics),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
