/* ttest.c -- see ttest.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ttest.h"

unsigned char *tt_slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  unsigned char *b = malloc(*len + 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, *len, f), *len);
  b[*len] = 0;
  fclose(f);
  return b;
}
