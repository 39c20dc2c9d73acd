/* load.c -- dataset directories: which files hold a split (IDX pair or PNG folder),
 * loading a split, and finding the dataset directory itself (flag, environment,
 * documented defaults), with errors that say what was looked for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_internal.h"

static int is_file(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* Writes dir/<stem> or dir/<stem>.gz (raw first) into buf if either exists. */
static int find_idx(char *buf, size_t len, const char *dir, const char *stem)
{
  static const char *const ext[] = {"", ".gz"};
  for (int k = 0; k < 2; k++) {
    int w = snprintf(buf, len, "%s/%s%s", dir, stem, ext[k]);
    if (w >= 0 && (size_t)w < len && is_file(buf)) return 1;
  }
  buf[0] = '\0';
  return 0;
}

int dpgd_data_locate(dpgd_data_source *src, const char *dir, const char *split)
{
  memset(src, 0, sizeof *src);
  const char *prefix, *png;
  if (split && !strcmp(split, "train")) {
    prefix = "train";
    png = "training";
  } else if (split && !strcmp(split, "test")) {
    prefix = "t10k";
    png = "testing";
  } else {
    return DPGD_FAIL(DPGD_EINVAL, "unknown split '%s' (expected train or test)",
                     split ? split : "");
  }
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return DPGD_FAIL(DPGD_EIO, "cannot open dataset directory %s: %s", dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode))
    return DPGD_FAIL(DPGD_EIO, "dataset path %s is not a directory", dir);
  if (strlen(dir) + 40 >= sizeof src->images)
    return DPGD_FAIL(DPGD_EINVAL, "dataset path too long: %s", dir);
  char stem_img[32], stem_lab[32];
  snprintf(stem_img, sizeof stem_img, "%s-images-idx3-ubyte", prefix);
  snprintf(stem_lab, sizeof stem_lab, "%s-labels-idx1-ubyte", prefix);
  int has_img = find_idx(src->images, sizeof src->images, dir, stem_img);
  int has_lab = find_idx(src->labels, sizeof src->labels, dir, stem_lab);
  if (has_img && has_lab) {
    src->kind = DPGD_DATA_IDX;
    return DPGD_OK;
  }
  if (has_img || has_lab)
    return DPGD_FAIL(DPGD_EIO, "%s: found %s but no %s[.gz] beside it", dir,
                     has_img ? src->images : src->labels, has_img ? stem_lab : stem_img);
  snprintf(src->images, sizeof src->images, "%s/%s", dir, png);
  if (dpgd_path_is_dir(src->images)) {
    src->kind = DPGD_DATA_PNG;
    return DPGD_OK;
  }
  src->images[0] = '\0';
  return DPGD_FAIL(DPGD_EIO,
                   "%s: no %s split: expected %s and %s (raw or .gz), or a PNG folder "
                   "%s/ (run data/fetch-mnist.sh to download MNIST)",
                   dir, split, stem_img, stem_lab, png);
}

static int load(dpgd_dataset **out, size_t **index, const char *dir, const char *split)
{
  *out = NULL;
  if (index) *index = NULL;
  dpgd_data_source src;
  int st = dpgd_data_locate(&src, dir, split);
  if (st) return st;
  if (src.kind == DPGD_DATA_PNG)
    return index ? dpgd_data_png_read_sparse(out, index, src.images, DPGD_DATA_DEFAULT_CLASSES)
                 : dpgd_data_png_read(out, src.images, DPGD_DATA_DEFAULT_CLASSES);
  st = dpgd_data_idx_read(out, src.images, src.labels, DPGD_DATA_DEFAULT_CLASSES);
  if (st || !index) return st;
  *index = malloc((*out)->n * sizeof **index);
  if (!*index) {
    dpgd_data_free(*out);
    *out = NULL;
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory loading %s", dir);
  }
  for (size_t i = 0; i < (*out)->n; i++) (*index)[i] = i;
  return DPGD_OK;
}

int dpgd_data_load(dpgd_dataset **out, const char *dir, const char *split)
{
  return load(out, NULL, dir, split);
}

int dpgd_data_load_sparse(dpgd_dataset **out, size_t **index, const char *dir,
                          const char *split)
{
  return load(out, index, dir, split);
}

/* The default directory is taken only if it holds a train split (IDX or PNG), so an
 * empty or unrelated data/mnist is reported as no dataset. */
static int holds_dataset(const char *dir)
{
  dpgd_data_source src;
  if (!dpgd_path_is_dir(dir)) return 0;
  int st = dpgd_data_locate(&src, dir, "train");
  dpgd_error_clear();
  return st == DPGD_OK;
}

static int choose(char *buf, size_t buflen, const char *dir, const char *from)
{
  /* Fashion-MNIST's usual place is the one Debian's package makes: say how to get it. */
  static const char fashion[] = "/usr/share/datasets/fashion-mnist";
  size_t lf = sizeof fashion - 1;
  const char *hint = !strncmp(dir, fashion, lf) && (dir[lf] == '\0' || dir[lf] == '/')
                         ? " (apt-get install dataset-fashion-mnist installs it there)"
                         : "";
  if (!dpgd_path_is_dir(dir))
    return DPGD_FAIL(DPGD_EIO, "data directory %s (%s) does not exist or is not a directory%s",
                     dir, from, hint);
  int w = snprintf(buf, buflen, "%s", dir);
  if (w < 0 || (size_t)w >= buflen)
    return DPGD_FAIL(DPGD_EINVAL, "data directory path too long: %s", dir);
  return DPGD_OK;
}

int dpgd_data_find_dir(char *buf, size_t buflen, const char *explicit_dir)
{
  if (explicit_dir && explicit_dir[0]) return choose(buf, buflen, explicit_dir, "given");
  const char *env = getenv("DPGD_DATA_DIR");
  if (env && env[0]) return choose(buf, buflen, env, "from $DPGD_DATA_DIR");
  if (holds_dataset("data/mnist")) return choose(buf, buflen, "data/mnist", "default");
  return DPGD_FAIL(DPGD_EIO,
                   "no dataset found: no --data DIR or data directory in the config, "
                   "$DPGD_DATA_DIR unset, and data/mnist (under the current directory) "
                   "holds none (run data/fetch-mnist.sh)");
}
