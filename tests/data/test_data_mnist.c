/* test_data_mnist.c -- the readers on the real MNIST files (label mnist): counts and
 * class histograms as published, the first labels everyone knows, the torchvision
 * normalisation constants, and a PNG sample (written from the IDX files at test time)
 * decoding to exactly the IDX pixels at the indices its file names give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpgd_data.h"
#include "png_sample.h"
#include "testutil.h"

static char mnist[4096], sample[4200];
static char *sample_tmp; /* the temp folder of a sample written here, removed at the end */

/* DPGD_MNIST_DIR if set and non-empty (at test time), else DPGD_MNIST_DIR_DEFAULT (the
 * repository's data/mnist). The PNG sample is DPGD_MNIST_PNG_SAMPLE if set, else written
 * here from the IDX files: the first 10 examples of each class of each split. */
static void find_dirs(void)
{
  const char *m = getenv("DPGD_MNIST_DIR");
  if (!m || !m[0]) m = getenv("DPGD_MNIST_DIR_DEFAULT");
  if (!m || !m[0]) m = "data/mnist";
  snprintf(mnist, sizeof mnist, "%s", m);
  const char *s = getenv("DPGD_MNIST_PNG_SAMPLE");
  if (s && s[0]) {
    snprintf(sample, sizeof sample, "%s", s);
    return;
  }
  sample_tmp = tu_tmpdir();
  snprintf(sample, sizeof sample, "%s/mnist_png_sample", sample_tmp);
}

static int write_sample(void **state)
{
  (void)state;
  if (sample_tmp) tu_png_sample(mnist, sample, 10);
  return 0;
}

static int remove_sample(void **state)
{
  (void)state;
  if (sample_tmp) tu_rmtree(sample_tmp);
  free(sample_tmp);
  return 0;
}

static dpgd_dataset *load(const char *dir, const char *split)
{
  dpgd_dataset *ds = NULL;
  int st = dpgd_data_load(&ds, dir, split);
  if (st) fail_msg("loading %s of %s: %s", split, dir, dpgd_error_last());
  return ds;
}

static void check_split(const dpgd_dataset *ds, size_t n, const size_t *hist,
                        const uint8_t *first_labels)
{
  assert_int_equal(ds->n, n);
  assert_int_equal(ds->rows, 28);
  assert_int_equal(ds->cols, 28);
  assert_int_equal(ds->d, 784);
  assert_int_equal(ds->n_classes, 10);
  size_t counts[10];
  dpgd_data_class_counts(counts, ds);
  for (int k = 0; k < 10; k++)
    if (counts[k] != hist[k])
      fail_msg("class %d: %zu examples, expected %zu", k, counts[k], hist[k]);
  assert_memory_equal(ds->labels, first_labels, 5);
}

static void test_mnist_train(void **state)
{
  (void)state;
  /* Published MNIST class counts (training set). */
  static const size_t hist[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
  static const uint8_t first[5] = {5, 0, 4, 1, 9};
  dpgd_dataset *ds = load(mnist, "train");
  check_split(ds, 60000, hist, first);
  /* torchvision's normalisation constants are these moments, rounded to 4 digits. */
  double mean, std;
  dpgd_data_pixel_moments(&mean, &std, ds->pixels, ds->n * ds->d);
  assert_true(mean > 0.13065 && mean < 0.13075);
  assert_true(std > 0.30805 && std < 0.30815);
  /* Unpacking with those constants gives roughly zero mean, unit variance. */
  float x[784];
  double s = 0, s2 = 0;
  for (size_t i = 0; i < ds->n; i += 97) {
    dpgd_data_unpack(x, ds, i, 1);
    for (int j = 0; j < 784; j++) {
      s += x[j];
      s2 += (double)x[j] * x[j];
    }
  }
  double cnt = 784.0 * (double)((ds->n + 96) / 97);
  assert_true(s / cnt > -0.02 && s / cnt < 0.02);
  assert_true(s2 / cnt > 0.95 && s2 / cnt < 1.05);
  dpgd_data_free(ds);
}

static void test_mnist_test(void **state)
{
  (void)state;
  static const size_t hist[10] = {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009};
  static const uint8_t first[5] = {7, 2, 1, 0, 4};
  dpgd_dataset *ds = load(mnist, "test");
  check_split(ds, 10000, hist, first);
  dpgd_data_free(ds);
}

/* Each image of the PNG sample equals the IDX image whose index is its file name. */
static void test_png_sample_matches_idx(void **state)
{
  (void)state;
  static const char *const splits[2] = {"train", "test"};
  for (int k = 0; k < 2; k++) {
    dpgd_dataset *idx = load(mnist, splits[k]), *png = NULL;
    size_t *index = NULL;
    int st = dpgd_data_load_sparse(&png, &index, sample, splits[k]);
    if (st) fail_msg("PNG sample %s: %s", sample, dpgd_error_last());
    assert_int_equal(png->n, 100);
    assert_int_equal(png->d, 784);
    size_t counts[10];
    dpgd_data_class_counts(counts, png);
    for (int c = 0; c < 10; c++) assert_int_equal(counts[c], 10);
    for (size_t i = 0; i < png->n; i++) {
      if (i > 0) assert_true(index[i] > index[i - 1]);
      assert_true(index[i] < idx->n);
      assert_memory_equal(png->pixels + i * 784, idx->pixels + index[i] * 784, 784);
      assert_int_equal(png->labels[i], idx->labels[index[i]]);
    }
    /* Read strictly, the sample is refused for its gaps. */
    dpgd_dataset *strict;
    assert_int_equal(dpgd_data_load(&strict, sample, splits[k]), DPGD_EFORMAT);
    assert_non_null(strstr(dpgd_error_last(), "gap in the indices"));
    free(index);
    dpgd_data_free(png);
    dpgd_data_free(idx);
  }
}

int main(void)
{
  find_dirs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mnist_train),
      cmocka_unit_test(test_mnist_test),
      cmocka_unit_test_setup_teardown(test_png_sample_matches_idx, write_sample, remove_sample),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
