/* test_data_png.c -- the PNG readers on synthetic inputs (label quick): strict,
 * interlaced and sparse folders, every PNG defect the reader must refuse, and explicit
 * file lists. */
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
#include "testutil.h"

/* ---- PNG folders -------------------------------------------------------------------- */

enum { PW = 6, PH = 4 };

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
  tu_png_tree_n(split, 23, PW, PH); /* 23 > 10: "10.png" sorts before "2.png" as text */
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
  tu_expect_error(dpgd_data_png_read(&ds, split, 5), DPGD_EFORMAT, "unexpected entry '",
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
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "gap in the indices",
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
  tu_expect_error(dpgd_data_png_read_sparse(&ds, &idx, dir, 10), DPGD_EFORMAT,
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
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: RGB colour image",
                  "expected 8-bit grayscale");
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_RGB_ALPHA, 8);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "RGBA colour image", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY_ALPHA, 8);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "grayscale with alpha", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_PALETTE, 8);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "palette", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY, 16);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
                  "0/1.png: 16-bit grayscale, expected 8-bit", NULL);
  tree_with_png(dir, PW, PH, PNG_COLOR_TYPE_GRAY, 4);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "4-bit grayscale", NULL);
  tree_with_png(dir, PW + 1, PH, PNG_COLOR_TYPE_GRAY, 8);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
                  "0/1.png: image is 4 x 7, expected 4 x 6 like", "3/0.png");

  tree_with(dir, "P5\n6 4\n255\n", 11); /* a PGM, not a PNG */
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: not a PNG file",
                  NULL);
  tree_with(dir, "", 0);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "not a PNG file", NULL);
  tree_with(dir, "\x89PNG", 4);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "truncated PNG", NULL);

  /* Truncations of a valid file: in the header, in the image data, and just before
   * IEND (the pixels are complete; only reading to the end notices). */
  tree_with(dir, NULL, 0);
  size_t len;
  uint8_t *good = slurp(p, &len);
  const size_t cuts[3] = {20, len / 2 + 10, len - 12};
  for (int k = 0; k < 3; k++) {
    tree_with(dir, good, cuts[k]);
    tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT,
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
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "0/1.png: corrupt PNG",
                  "a chunk asks for");
  free(huge);
  /* A flipped bit in the image data: the chunk CRC catches it. */
  uint8_t *bad = malloc(len);
  memcpy(bad, good, len);
  bad[len / 2] ^= 0x10;
  tree_with(dir, bad, len);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "truncated or corrupt PNG",
                  NULL);
  free(bad);
  free(good);

  /* Bad names: leading zeros, not a number, a file where a label folder should be. */
  tree_with(dir, NULL, 0);
  snprintf(p, sizeof p, "%s/3/02.png", dir);
  tu_write(p, "x", 1);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "3/02.png: unexpected file",
                  NULL);
  remove(p);
  snprintf(p, sizeof p, "%s/3/x.png", dir);
  tu_write(p, "x", 1);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "3/x.png: unexpected", NULL);
  remove(p);
  snprintf(p, sizeof p, "%s/7", dir);
  tu_write(p, "x", 1);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "7 is not a folder", NULL);
  remove(p);
  /* A dangling link where an image should be: an I/O error naming it. */
  snprintf(p, sizeof p, "%s/3/5.png", dir);
  symlink("/nonexistent/dpgd", p);
  tu_expect_error(dpgd_data_png_read_sparse(&ds, &(size_t *){NULL}, dir, 10), DPGD_EIO,
                  "cannot open", "3/5.png");
  remove(p);
  tu_rmtree(dir);
  /* Empty and missing folders. */
  mkdir(dir, 0755);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EFORMAT, "no PNG images found", NULL);
  rmdir(dir);
  tu_expect_error(dpgd_data_png_read(&ds, dir, 10), DPGD_EIO, "cannot open PNG folder", NULL);
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
  tu_expect_error(dpgd_data_png_read_files(&ds, mixed, 2, 10), DPGD_EFORMAT,
                  "wide.png: image is 4 x 7, expected 4 x 6 like", p[0]);
  assert_null(ds);
  snprintf(bad, sizeof bad, "%s/fake.png", dir);
  tu_write(bad, "P5\n6 4\n255\n", 11);
  const char *with_bad[2] = {p[0], bad};
  tu_expect_error(dpgd_data_png_read_files(&ds, with_bad, 2, 10), DPGD_EFORMAT,
                  "fake.png: not a PNG file", NULL);
  assert_null(ds);
  snprintf(missing, sizeof missing, "%s/none.png", dir);
  tu_expect_error(dpgd_data_png_read_files(&ds, &(const char *){missing}, 1, 10), DPGD_EIO,
                  "cannot open", "none.png");
  assert_null(ds);
  tu_expect_error(dpgd_data_png_read_files(&ds, order, 0, 10), DPGD_EINVAL, "no PNG file",
                  NULL);
  assert_null(ds);
  tu_rmtree(dir);
  free(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_png_strict),          cmocka_unit_test(test_png_interlaced),
      cmocka_unit_test(test_png_sparse_and_gaps), cmocka_unit_test(test_png_defects),
      cmocka_unit_test(test_png_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
