/* fuzz_util.h -- helpers shared by the libFuzzer targets whose parser reads a path:
 * the input is written to a file of this process (in $TMPDIR or /tmp) before each
 * call and removed after it, so a run leaves nothing behind. */
#ifndef DPGD_FUZZ_UTIL_H
#define DPGD_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpgd_core.h"

/* Writes data to a per-process file named by suffix (e.g. ".png") and returns its path
 * (static storage), or NULL if the file cannot be written (the input is then skipped). */
static inline const char *fuzz_temp_file(const uint8_t *data, size_t size, const char *suffix)
{
  static char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/dpgd-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(),
           suffix);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  size_t put = size ? fwrite(data, 1, size, f) : 0;
  if (fclose(f) != 0 || put != size) {
    unlink(path);
    return NULL;
  }
  return path;
}

/* Little-endian 32-bit store (the model file's and the accountant state's CRC). */
static inline void fuzz_put_le32(uint8_t *p, uint32_t v)
{
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* Hands the input to fn as it is and, when it has at least min_size bytes, again with
 * its last 4 bytes replaced by the CRC-32 of the rest (little-endian: the byte order of
 * dpgd's checksummed files on the little-endian hosts the fuzzers run on), so that
 * mutations also reach what lies behind the checksum. */
static inline void fuzz_as_is_and_crc_fixed(const uint8_t *data, size_t size, size_t min_size,
                                            void (*fn)(const uint8_t *, size_t))
{
  fn(data, size);
  if (size < min_size || size < 4) return;
  uint8_t *fixed = malloc(size);
  if (!fixed) return;
  memcpy(fixed, data, size);
  fuzz_put_le32(fixed + size - 4, dpgd_crc32(fixed, size - 4));
  fn(fixed, size);
  free(fixed);
}

#endif /* DPGD_FUZZ_UTIL_H */
