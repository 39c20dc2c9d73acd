/* test_scatter_cache.c -- the scattering feature cache (data/scatter_cache.c): a second
 * call reads what the first wrote, bit for bit; a changed image byte, mean, transform
 * parameter or payload byte makes it recompute (never a stale read); the features equal
 * the transform of each image and do not depend on the thread count; group
 * normalisation is (x - mean) / sqrt(var + eps) per group of the raw features. */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_data.h"

enum { N = 12 };

static dpgd_dataset *images(void)
{
  dpgd_dataset *ds = dpgd_data_alloc(N, 28, 28, 10);
  assert_non_null(ds);
  uint32_t x = 2385;
  for (size_t i = 0; i < N * 784; i++) {
    x = x * 1664525u + 1013904223u;
    ds->pixels[i] = (uint8_t)((i % 28 > 5 && i % 28 < 22) ? x >> 24 : 0);
  }
  for (size_t i = 0; i < N; i++) ds->labels[i] = (uint8_t)(i % 10);
  return ds;
}

static char dir[64], path[128];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/dpgd_scatter_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  snprintf(path, sizeof path, "%s/feat.bin", dir);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  unlink(path);
  rmdir(dir);
  return 0;
}

/* The features of img through the cache, with what the cache did. */
static dpgd_dataset *feats(const dpgd_dataset *img, int J, size_t groups, int threads,
                           dpgd_scatter_cache_info *info)
{
  dpgd_scatter_opts o = {J, 8, groups};
  dpgd_dataset *f = NULL;
  assert_int_equal(dpgd_scatter_features(&f, img, &o, path, threads, info), DPGD_OK);
  assert_non_null(f);
  return f;
}

static int same(const dpgd_dataset *a, const dpgd_dataset *b)
{
  return a->n == b->n && a->d == b->d &&
         memcmp(a->feat, b->feat, a->n * a->d * sizeof(float)) == 0 &&
         memcmp(a->labels, b->labels, a->n) == 0;
}

static void test_cache_roundtrip_and_staleness(void **state)
{
  (void)state;
  dpgd_dataset *img = images();
  dpgd_scatter_cache_info info;
  dpgd_dataset *a = feats(img, 2, 0, 1, &info);
  assert_int_equal(info.computed, 1);
  assert_int_equal(info.write_rc, DPGD_OK);
  assert_int_equal(a->rows, 81);
  assert_int_equal(a->cols, 49);
  assert_int_equal(a->d, 3969);
  assert_null(a->pixels);
  /* each example is the transform of its image */
  dpgd_scatter *s = dpgd_scatter_alloc(28, 28, 2, 8);
  float x[784], y[3969];
  dpgd_data_unpack(x, img, 5, 1);
  dpgd_scatter_transform(s, y, x);
  assert_memory_equal(y, a->feat + 5 * 3969, sizeof y);
  dpgd_scatter_free(s);

  dpgd_dataset *b = feats(img, 2, 0, 2, &info); /* read back */
  assert_int_equal(info.computed, 0);
  assert_true(same(a, b));
  dpgd_data_free(b);

  img->pixels[7 * 784 + 400] ^= 1; /* one image byte */
  b = feats(img, 2, 0, 1, &info);
  assert_int_equal(info.computed, 1);
  assert_non_null(strstr(info.why, "stale"));
  assert_false(same(a, b));
  assert_memory_equal(a->feat, b->feat, 7 * 3969 * sizeof(float)); /* others unchanged */
  dpgd_data_free(b);
  img->pixels[7 * 784 + 400] ^= 1;
  b = feats(img, 2, 0, 2, &info); /* the cache now holds the changed image: recomputed */
  assert_int_equal(info.computed, 1);
  assert_true(same(a, b)); /* and 2 threads give 1 thread's bits */
  dpgd_data_free(b);

  img->mean = 0.2f; /* a normalisation parameter */
  b = feats(img, 2, 0, 1, &info);
  assert_int_equal(info.computed, 1);
  dpgd_data_free(b);
  img->mean = DPGD_DATA_MNIST_MEAN;
  b = feats(img, 1, 0, 1, &info); /* a transform parameter */
  assert_int_equal(info.computed, 1);
  assert_int_equal(b->rows, 9); /* 1 + L */
  dpgd_data_free(b);
  b = feats(img, 2, 0, 1, &info);
  assert_int_equal(info.computed, 1);
  dpgd_data_free(b);

  FILE *f = fopen(path, "r+b"); /* one payload byte */
  assert_non_null(f);
  fseek(f, 100 + 3 * 3969 * 4, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, 100 + 3 * 3969 * 4, SEEK_SET);
  fputc(ch ^ 0x10, f);
  fclose(f);
  b = feats(img, 2, 0, 1, &info);
  assert_int_equal(info.computed, 1);
  assert_non_null(strstr(info.why, "corrupt"));
  assert_true(same(a, b));
  dpgd_data_free(b);
  dpgd_data_free(a);
  dpgd_data_free(img);
}

static void test_group_norm(void **state)
{
  (void)state;
  dpgd_dataset *img = images();
  dpgd_scatter_cache_info info;
  dpgd_dataset *a = feats(img, 2, 27, 1, &info), *raw = feats(img, 2, 0, 1, &info);
  for (size_t i = 0; i < N; i++)
    for (size_t g = 0; g < 27; g++) {
      const float *v = a->feat + i * 3969 + g * 3 * 49, *r = raw->feat + i * 3969 + g * 3 * 49;
      double m = 0, q = 0, mv = 0;
      for (int k = 0; k < 147; k++) m += r[k];
      m /= 147;
      for (int k = 0; k < 147; k++) q += (r[k] - m) * (r[k] - m);
      double inv = 1 / sqrt(q / 147 + DPGD_SCATTER_GN_EPS);
      for (int k = 0; k < 147; k++) {
        assert_true(fabs(v[k] - (r[k] - m) * inv) <= 1e-6 * (1 + fabs((r[k] - m) * inv)));
        mv += v[k];
      }
      assert_true(fabs(mv / 147) < 1e-6);
    }
  dpgd_data_free(raw);
  dpgd_data_free(a);
  /* groups that do not divide 81: an error naming them */
  dpgd_scatter_opts o = {2, 8, 4};
  dpgd_dataset *b = (dpgd_dataset *)1;
  assert_int_equal(dpgd_scatter_features(&b, img, &o, NULL, 1, NULL), DPGD_EINVAL);
  assert_null(b);
  assert_non_null(strstr(dpgd_error_last(), "4 groups"));
  dpgd_data_free(img);
}

static void test_unwritable_cache(void **state)
{
  (void)state;
  dpgd_dataset *img = images(), *f = NULL;
  dpgd_scatter_opts o = {2, 8, 0};
  dpgd_scatter_cache_info info;
  assert_int_equal(dpgd_scatter_features(&f, img, &o, "/nonexistent-dir/feat.bin", 1, &info),
                   DPGD_OK);
  assert_int_equal(info.computed, 1);
  assert_int_equal(info.write_rc, DPGD_EIO);
  dpgd_data_free(f);
  dpgd_data_free(img);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cache_roundtrip_and_staleness, setup, teardown),
      cmocka_unit_test_setup_teardown(test_group_norm, setup, teardown),
      cmocka_unit_test(test_unwritable_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
