/* fuzz_run_dir.c -- libFuzzer target for reading a finished run directory as
 * `dpgd plot` does (dpgd_run_read: summary.json, metrics.csv and points.csv through the
 * readers of plot_run.c, then the RUN_FORMAT.md range checks). The input is split at
 * NUL bytes into summary.json, metrics.csv and (if there is a third part) points.csv,
 * written into a directory <tmp>/dpgd-fuzz-run-<pid>/cell/seed1 (a sweep trial's
 * layout, for the label). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char top[512], cell[600], dir[700];
static const char *files[3] = {"summary.json", "metrics.csv", "points.csv"};

static void remove_dirs(void)
{
  rmdir(dir);
  rmdir(cell);
  rmdir(top);
}

static int put(const char *name, const uint8_t *p, size_t n)
{
  char path[800];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = n ? fwrite(p, 1, n, f) : 0;
  return fclose(f) == 0 && w == n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(top, sizeof top, "%s/dpgd-fuzz-run-%ld", t && *t ? t : "/tmp", (long)getpid());
    snprintf(cell, sizeof cell, "%s/cell", top);
    snprintf(dir, sizeof dir, "%s/seed1", cell);
    if (mkdir(top, 0700) || mkdir(cell, 0700) || mkdir(dir, 0700)) abort();
    atexit(remove_dirs);
  }
  const uint8_t *p = data, *end = data + size;
  int n_files = 0, ok = 1;
  for (; n_files < 3 && ok; n_files++) {
    const uint8_t *z = memchr(p, '\0', (size_t)(end - p));
    size_t n = z ? (size_t)(z - p) : (size_t)(end - p);
    ok = put(files[n_files], p, n) == 0;
    if (!z) {
      n_files++;
      break;
    }
    p = z + 1;
  }
  if (ok) {
    dpgd_plot_run r;
    dpgd_error_clear();
    int st = dpgd_plot_run_read(&r, dir);
    if (st != DPGD_OK) {
      if (dpgd_error_last()[0] == '\0' || r.metrics || r.points) __builtin_trap();
    } else {
      if (!r.metrics || (n_files == 3) != (r.points != NULL)) __builtin_trap();
      if (strcmp(r.label, "cell/seed1")) __builtin_trap();
      dpgd_plot_run_clear(&r);
    }
  }
  for (int k = 0; k < 3; k++) {
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    unlink(path);
  }
  return 0;
}
