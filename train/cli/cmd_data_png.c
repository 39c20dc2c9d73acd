/* cmd_data_png.c -- 'dpgd data png DIR [--split train|test] [--first I] [--count N] --out
 * FOLDER': writes examples of a dataset as 8-bit grayscale PNG files FOLDER/<split>-<i>.png,
 * images that `dpgd predict` classifies, and prints each file with its label. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "dpgd_core.h"
#include "dpgd_data.h"

#define CMD "data png"

static void usage(FILE *f)
{
  fprintf(f, "usage: dpgd data png DIR [--split train|test] [--first I] [--count N] "
             "--out FOLDER\n\n"
             "Writes examples I .. I+N-1 (default 0 .. 9) of a split (default test) of the\n"
             "dataset in DIR as 8-bit grayscale PNG files FOLDER/<split>-<index>.png, the\n"
             "images 'dpgd predict' takes, and prints each file with its label.\n");
}

typedef struct {
  const char *dir, *out, *split;
  size_t first, count;
} png_args;

static int parse(png_args *a, int argc, char **argv)
{
  *a = (png_args){NULL, NULL, "test", 0, 10};
  for (int i = 2; i < argc; i++) {
    const char *f = argv[i];
    int valued = !strcmp(f, "--split") || !strcmp(f, "--first") || !strcmp(f, "--count") ||
                 !strcmp(f, "--out");
    if (f[0] == '-' && f[1] && !valued)
      return dpgd_cli_usage_error(CMD, "unknown option '%s'", f);
    if (!valued) {
      if (a->dir)
        return dpgd_cli_usage_error(CMD, "one DIR expected, got '%s' and '%s'", a->dir, f);
      a->dir = f;
      continue;
    }
    if (i + 1 >= argc) return dpgd_cli_usage_error(CMD, "%s needs a value", f);
    const char *v = argv[++i];
    if (!strcmp(f, "--split")) a->split = v;
    else if (!strcmp(f, "--out")) a->out = v;
    else if (dpgd_cli_parse_size(f, v, !strcmp(f, "--first") ? &a->first : &a->count))
      return DPGD_EXIT_USAGE;
  }
  if (!a->dir) return dpgd_cli_usage_error(CMD, "needs a dataset DIR");
  if (!a->out) return dpgd_cli_usage_error(CMD, "needs --out FOLDER");
  if (strcmp(a->split, "train") && strcmp(a->split, "test"))
    return dpgd_cli_usage_error(CMD, "--split must be train or test (got '%s')", a->split);
  if (a->count < 1) return dpgd_cli_usage_error(CMD, "--count must be >= 1");
  return DPGD_EXIT_OK;
}

int dpgd_cmd_data_png(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc - 1, argv + 1)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  png_args a;
  int code = parse(&a, argc, argv);
  if (code) return code;
  dpgd_dataset *ds = NULL;
  int st = dpgd_data_load(&ds, a.dir, a.split);
  if (st) return dpgd_cli_status_error(st, "");
  if (a.first >= ds->n || a.count > ds->n - a.first) {
    size_t n = ds->n;
    dpgd_data_free(ds);
    return dpgd_cli_usage_error(CMD, "examples %zu .. %zu do not exist: the %s split has %zu",
                                a.first, a.first + a.count - 1, a.split, n);
  }
  char failed[512] = "";
  if (dpgd_path_mkdirs(a.out, 0755, failed, sizeof failed)) {
    dpgd_data_free(ds);
    return dpgd_cli_error("cannot create %s", failed[0] ? failed : a.out);
  }
  for (size_t i = a.first; !st && i < a.first + a.count; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s-%zu.png", a.out, a.split, i);
    st = dpgd_data_png_write(path, ds, i);
    if (!st) printf("%s  label %u\n", path, ds->labels[i]);
  }
  dpgd_data_free(ds);
  return st ? dpgd_cli_status_error(st, "") : DPGD_EXIT_OK;
}
