/* fuzz_util.h -- helpers shared by the libFuzzer targets whose parser reads a path:
 * the input is written to a file of this process (in $TMPDIR or /tmp) before each
 * call and removed after it, so a run leaves nothing behind. */
#ifndef DPGD_FUZZ_UTIL_H
#define DPGD_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#endif /* DPGD_FUZZ_UTIL_H */
