/* path.c -- path helpers every folder needs: mkdir -p, is-a-directory, and reading a
 * whole file into memory. */
#include "dpgd_core.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int dpgd_path_mkdirs(const char *path, unsigned mode, char *failed, size_t failed_size)
{
  char buf[PATH_MAX];
  int k = snprintf(buf, sizeof buf, "%s", path);
  if (k < 0 || (size_t)k >= sizeof buf) {
    if (failed && failed_size) snprintf(failed, failed_size, "%s", path);
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char end = *p;
    *p = '\0';
    if (mkdir(buf, (mode_t)mode) && errno != EEXIST) {
      int e = errno;
      if (failed && failed_size) snprintf(failed, failed_size, "%s", buf);
      errno = e;
      return -1;
    }
    *p = end;
    if (!end) return 0;
  }
}

int dpgd_path_is_dir(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int dpgd_file_slurp(char **buf, size_t *len, const char *path)
{
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return DPGD_FAIL(DPGD_EIO, "cannot open %s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *b = malloc(cap);
  int st = b ? DPGD_OK : DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", path);
  while (!st) {
    if (n + 1 >= cap) {
      char *nb = realloc(b, cap * 2);
      if (!nb) {
        st = DPGD_FAIL(DPGD_ENOMEM, "out of memory reading %s", path);
        break;
      }
      b = nb;
      cap *= 2;
    }
    size_t k = fread(b + n, 1, cap - 1 - n, f);
    n += k;
    if (k == 0) {
      if (ferror(f)) st = DPGD_FAIL(DPGD_EIO, "read error on %s: %s", path, strerror(errno));
      break;
    }
  }
  fclose(f);
  if (st) {
    free(b);
    return st;
  }
  b[n] = '\0';
  *buf = b;
  *len = n;
  return DPGD_OK;
}
