/* eval_fixture.c -- inputs for tests/e2e/eval.sh, which tests `dpgd eval`/`predict`
 * without training: an initialised (untrained) model file, and a dataset directory of
 * synthetic 8-bit grayscale PNGs (DIR/testing/<label>/<index>.png). An untrained model
 * still gives varied predictions, which is all a consistency test of the two commands
 * needs; nothing here pretends to be a training result.
 *   eval_fixture model OUT TYPE SEED
 *   eval_fixture pngs DIR N W H */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "data/testutil.h"
#include "dpgd_model.h"

static int make_model(const char *out, const char *type, const char *seed)
{
  const dpgd_model_type *t = dpgd_model_type_find(type);
  dpgd_model *m = t ? dpgd_model_alloc(t, DPGD_ACT_RELU, 28, 28, 10) : NULL;
  if (!m) {
    fprintf(stderr, "eval_fixture: cannot make a %s model: %s\n", type, dpgd_error_last());
    return 1;
  }
  dpgd_model_init(m, strtoull(seed, NULL, 10));
  int st = dpgd_model_save(m, out);
  if (st) fprintf(stderr, "eval_fixture: %s\n", dpgd_error_last());
  dpgd_model_free(m);
  return st != DPGD_OK;
}

static int make_pngs(const char *dir, size_t n, int w, int h)
{
  char split[1024];
  snprintf(split, sizeof split, "%s/testing", dir);
  mkdir(dir, 0755);
  size_t *index = malloc(n * sizeof *index);
  uint8_t *labels = malloc(n);
  if (!index || !labels) return 1;
  for (size_t i = 0; i < n; i++) {
    index[i] = i;
    labels[i] = (uint8_t)((i * 7 + 3) % 10);
  }
  tu_png_tree(split, index, labels, n, w, h);
  free(index);
  free(labels);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc == 5 && !strcmp(argv[1], "model")) return make_model(argv[2], argv[3], argv[4]);
  if (argc == 6 && !strcmp(argv[1], "pngs"))
    return make_pngs(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), atoi(argv[5]));
  fprintf(stderr, "usage: eval_fixture model OUT TYPE SEED | pngs DIR N W H\n");
  return 2;
}
