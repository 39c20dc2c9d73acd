/* fuzz_config.c -- libFuzzer target for the configuration parser: arbitrary bytes as
 * an INI file, then as a --set override; then the resolved config is validated,
 * written and hashed. Any crash, sanitizer report or leak is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  dpgd_config c;
  dpgd_config_defaults(&c);
  dpgd_config_load_mem(&c, data, size, "fuzz.ini");

  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  dpgd_config_set(&c, text);
  free(text);

  dpgd_config_validate(&c);
  FILE *devnull = fopen("/dev/null", "w");
  if (devnull) {
    dpgd_config_write(&c, devnull);
    fclose(devnull);
  }
  (void)dpgd_config_hash(&c);
  return 0;
}
