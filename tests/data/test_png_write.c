/* test_png_write.c -- dpgd_data_png_write: every pixel of a written example comes back
 * from the PNG reader unchanged (odd sizes, every byte value), the file appears only
 * whole (no .tmp left), and a missing example or an unwritable path is an error naming
 * the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_data.h"

static void round_trip(size_t rows, size_t cols)
{
  char dir[] = "/tmp/dpgd_test_png_write_XXXXXX";
  assert_non_null(mkdtemp(dir));
  dpgd_dataset *ds = dpgd_data_alloc(3, rows, cols, 10);
  assert_non_null(ds);
  for (size_t i = 0; i < 3 * rows * cols; i++) ds->pixels[i] = (uint8_t)((i * 37 + 11) % 256);
  for (size_t i = 0; i < 3; i++) ds->labels[i] = (uint8_t)i;
  char path[256], tmp[300];
  snprintf(path, sizeof path, "%s/x.png", dir);
  assert_int_equal(dpgd_data_png_write(path, ds, 2), DPGD_OK);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  assert_int_not_equal(access(tmp, F_OK), 0);
  dpgd_dataset *back = NULL;
  const char *paths[1] = {path};
  assert_int_equal(dpgd_data_png_read_files(&back, paths, 1, 10), DPGD_OK);
  assert_true(back->n == 1 && back->rows == rows && back->cols == cols);
  assert_memory_equal(back->pixels, ds->pixels + 2 * rows * cols, rows * cols);
  /* No such example; no such folder. */
  assert_int_equal(dpgd_data_png_write(path, ds, 3), DPGD_EINVAL);
  snprintf(path, sizeof path, "%s/missing/x.png", dir);
  assert_int_equal(dpgd_data_png_write(path, ds, 0), DPGD_EIO);
  assert_non_null(strstr(dpgd_error_last(), "missing/x.png"));
  dpgd_error_clear();
  dpgd_data_free(back);
  dpgd_data_free(ds);
  snprintf(path, sizeof path, "%s/x.png", dir);
  unlink(path);
  rmdir(dir);
}

static void test_round_trip(void **state)
{
  (void)state;
  round_trip(28, 28);
  round_trip(7, 13); /* odd sizes: rows are not padded */
  round_trip(1, 256);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
