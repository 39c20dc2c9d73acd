/* ttest.c -- see ttest.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "dpgd_core.h"
#include "ttest.h"

unsigned char *tt_slurp(const char *path, size_t *len)
{
  char *b = NULL;
  assert_int_equal(dpgd_file_slurp(&b, len, path), DPGD_OK);
  return (unsigned char *)b;
}
