/* test_core.c -- the core/ leaf: the replaceable error handler (STYLE.md 7), CRC-32
 * against its published check value, mkdir -p, is-a-directory and whole-file reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include <cmocka.h>

#include "dpgd_core.h"

static int calls, seen_status, seen_line;
static char seen_reason[128];

static void counting_handler(const char *reason, const char *file, int line, int status)
{
  (void)file;
  calls++;
  seen_status = status;
  seen_line = line;
  snprintf(seen_reason, sizeof seen_reason, "%s", reason);
}

static void test_error_handler_is_replaceable(void **state)
{
  (void)state;
  dpgd_error_handler_t *old = dpgd_error_set_handler(counting_handler);
  assert_non_null(old);
  int line = __LINE__ + 1;
  int st = DPGD_FAIL(DPGD_ERANGE, "value %d of %s", 27, "x");
  assert_int_equal(st, DPGD_ERANGE);
  assert_int_equal(calls, 1);
  assert_int_equal(seen_status, DPGD_ERANGE);
  assert_int_equal(seen_line, line);
  assert_string_equal(seen_reason, "value 27 of x");
  /* dpgd_error_last works whatever handler is installed. */
  assert_string_equal(dpgd_error_last(), "value 27 of x");
  /* NULL restores the default, which only stores the reason. */
  assert_ptr_equal(dpgd_error_set_handler(NULL), counting_handler);
  dpgd_error_clear();
  assert_string_equal(dpgd_error_last(), "");
  DPGD_FAIL(DPGD_EIO, "second");
  assert_int_equal(calls, 1);
  assert_string_equal(dpgd_error_last(), "second");
  assert_string_equal(dpgd_error_str(DPGD_EINVAL), "invalid argument");
  assert_string_equal(dpgd_error_str(99), "unknown error");
}

static void test_crc32_check_value(void **state)
{
  (void)state;
  assert_int_equal(dpgd_crc32("123456789", 9), 0xCBF43926u);
  assert_int_equal(dpgd_crc32("", 0), 0u);
}

static void test_paths(void **state)
{
  (void)state;
  char root[] = "/tmp/dpgd_test_core.XXXXXX";
  assert_non_null(mkdtemp(root));
  char deep[256], file[256], failed[256];
  snprintf(deep, sizeof deep, "%s/a/b/c", root);
  assert_false(dpgd_path_is_dir(deep));
  assert_int_equal(dpgd_path_mkdirs(deep, 0755, failed, sizeof failed), 0);
  assert_true(dpgd_path_is_dir(deep));
  assert_int_equal(dpgd_path_mkdirs(deep, 0755, NULL, 0), 0); /* exists: fine */

  snprintf(file, sizeof file, "%s/a/f.txt", root);
  assert_int_equal(dpgd_file_write_atomic(file, "hello\n", 6, NULL), 0);
  assert_false(dpgd_path_is_dir(file));
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(dpgd_file_slurp(&buf, &len, file), DPGD_OK);
  assert_int_equal(len, 6);
  assert_string_equal(buf, "hello\n");
  free(buf);

  /* A regular file in the way: the prefix that failed is named. */
  char below[300];
  snprintf(below, sizeof below, "%s/x/y", file);
  assert_int_equal(dpgd_path_mkdirs(below, 0755, failed, sizeof failed), -1);
  assert_int_equal(errno, ENOTDIR);
  char first[300];
  snprintf(first, sizeof first, "%s/x", file);
  assert_string_equal(failed, first);

  snprintf(below, sizeof below, "%s/missing", root);
  assert_int_equal(dpgd_file_slurp(&buf, &len, below), DPGD_EIO);
  assert_null(buf);
  assert_int_equal(len, 0);
  assert_non_null(strstr(dpgd_error_last(), below));

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_handler_is_replaceable),
      cmocka_unit_test(test_crc32_check_value),
      cmocka_unit_test(test_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
