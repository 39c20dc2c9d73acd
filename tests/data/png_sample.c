/* png_sample.c -- writes the MNIST PNG sample (png_sample.h) with libpng; also a program,
 * tests/data/mnist_png_sample MNIST_DIR OUT [PER_CLASS], for the end-to-end scripts. */
#include "png_sample.h"

#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dpgd_data.h"
#include "testutil.h"

static void write_split(const char *mnist, const char *out, const char *split,
                        const char *folder, int per_class)
{
  dpgd_dataset *ds = NULL;
  if (dpgd_data_load(&ds, mnist, split) != DPGD_OK)
    fail_msg("PNG sample: reading %s of %s: %s", split, mnist, dpgd_error_last());
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", out, folder);
  mkdir(out, 0755);
  mkdir(path, 0755);
  int taken[256] = {0};
  for (size_t i = 0; i < ds->n; i++) {
    unsigned label = ds->labels[i];
    if (taken[label]++ >= per_class) continue;
    snprintf(path, sizeof path, "%s/%s/%u", out, folder, label);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%u/%zu.png", out, folder, label, i);
    tu_png(path, (int)ds->cols, (int)ds->rows, PNG_COLOR_TYPE_GRAY, 8, 0,
           ds->pixels + i * ds->d);
  }
  dpgd_data_free(ds);
}

void tu_png_sample(const char *mnist, const char *out, int per_class)
{
  write_split(mnist, out, "train", "training", per_class);
  write_split(mnist, out, "test", "testing", per_class);
}

#ifdef TU_PNG_SAMPLE_MAIN
int main(int argc, char **argv)
{
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: mnist_png_sample MNIST_DIR OUT [PER_CLASS (default 10)]\n");
    return 2;
  }
  tu_png_sample(argv[1], argv[2], argc == 4 ? atoi(argv[3]) : 10);
  return 0;
}
#endif
