/* cmd_data.c -- 'dpgd data info DIR|FILE': what a dataset holds (counts, image size,
 * class histogram, pixel mean/std), for a dataset directory (both splits) or a single
 * IDX file. One "key  value" line each, so people can read it and tests can grep it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "dpgd_data.h"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd data info [--sparse] [--classes K] DIR|FILE\n"
          "       dpgd data png DIR [--split train|test] [--first I] [--count N] --out "
          "FOLDER\n\n"
          "data png writes examples as PNG files for 'dpgd predict' (dpgd data png --help).\n\n"
          "Prints the number of examples, image size, class histogram and pixel mean/std\n"
          "(of p/255, over all pixels) of a dataset. The training split's figures are\n"
          "exact statistics of training data: a diagnostic (not private).\n\n"
          "  DIR    a dataset directory: both splits, train and test, each either the IDX\n"
          "         pair <p>-images-idx3-ubyte[.gz] + <p>-labels-idx1-ubyte[.gz] (p = train,\n"
          "         t10k) or a PNG folder training/ or testing/ laid out <label>/<index>.png\n"
          "  FILE   one IDX file (images or labels, gzip or raw)\n\n"
          "  --sparse     accept PNG folders whose indices have gaps (samples such as\n"
          "               mnist_png_sample); examples keep their file-name indices\n"
          "  --classes K  labels must lie in 0..K-1 (default %d)\n",
          DPGD_DATA_DEFAULT_CLASSES);
}

static void print_histogram(const uint8_t *labels, size_t n, int n_classes)
{
  size_t counts[256] = {0};
  for (size_t i = 0; i < n; i++) counts[labels[i]]++;
  printf("  classes     %d\n  histogram  ", n_classes);
  for (int k = 0; k < n_classes; k++) printf(" %d:%zu", k, counts[k]);
  printf("\n");
}

static void print_images(const uint8_t *pixels, size_t n, size_t rows, size_t cols)
{
  double mean, std;
  dpgd_data_pixel_moments(&mean, &std, pixels, n * rows * cols);
  printf("  examples    %zu\n", n);
  printf("  image size  %zu x %zu (%zu pixels)\n", rows, cols, rows * cols);
  printf("  pixels      mean %.6f  std %.6f  (of p/255)\n", mean, std);
}

/* One loaded split; both splits are loaded before anything is printed, so a failure
 * leaves only the one-line error. */
typedef struct split_info {
  dpgd_data_source src;
  dpgd_dataset *ds;
  size_t *index; /* (n) file-name indices, PNG with --sparse only */
} split_info;

static int load_split(split_info *si, const char *dir, const char *split, int sparse,
                      int n_classes)
{
  int st = dpgd_data_locate(&si->src, dir, split);
  if (st) return st;
  if (si->src.kind == DPGD_DATA_IDX)
    return dpgd_data_idx_read(&si->ds, si->src.images, si->src.labels, n_classes);
  if (sparse) return dpgd_data_png_read_sparse(&si->ds, &si->index, si->src.images, n_classes);
  return dpgd_data_png_read(&si->ds, si->src.images, n_classes);
}

static void print_split(const split_info *si, const char *split)
{
  const dpgd_dataset *ds = si->ds;
  if (si->src.kind == DPGD_DATA_IDX)
    printf("%-11s IDX  %s + %s\n", split, strrchr(si->src.images, '/') + 1,
           strrchr(si->src.labels, '/') + 1);
  else printf("%-11s PNG  %s/<label>/<index>.png\n", split, strrchr(si->src.images, '/') + 1);
  print_images(ds->pixels, ds->n, ds->rows, ds->cols);
  print_histogram(ds->labels, ds->n, ds->n_classes);
  /* Exact counts and moments of the training set: no noise, so no eps covers them. */
  if (!strcmp(split, "train"))
    printf("  privacy     diagnostic (not private): training data\n");
  if (si->index)
    printf("  indices     %zu..%zu (sample, gaps allowed)\n", si->index[0],
           si->index[ds->n - 1]);
}

static int info_dir(const char *dir, int sparse, int n_classes)
{
  static const char *const splits[2] = {"train", "test"};
  split_info si[2];
  memset(si, 0, sizeof si);
  int st = DPGD_OK;
  for (int k = 0; k < 2 && !st; k++) st = load_split(&si[k], dir, splits[k], sparse, n_classes);
  if (!st) {
    printf("dataset     %s\n", dir);
    for (int k = 0; k < 2; k++) print_split(&si[k], splits[k]);
  }
  for (int k = 0; k < 2; k++) {
    dpgd_data_free(si[k].ds);
    free(si[k].index);
  }
  return st ? dpgd_cli_status_error(st, "") : DPGD_EXIT_OK;
}

static int info_file(const char *path, int n_classes)
{
  dpgd_data_idx *a;
  int st = dpgd_data_idx_read_file(&a, path, 0);
  if (st) return dpgd_cli_status_error(st, "");
  printf("file        %s\n", path);
  if (a->ndim == 3) {
    printf("  format      IDX images (magic 0x00000803)\n");
    print_images(a->data, a->dims[0], a->dims[1], a->dims[2]);
  } else {
    printf("  format      IDX labels (magic 0x00000801)\n");
    printf("  examples    %zu\n", a->dims[0]);
    for (size_t i = 0; i < a->size; i++) {
      if (a->data[i] >= n_classes) {
        int code = dpgd_cli_error("%s: label %u of example %zu is outside 0..%d", path,
                                  a->data[i], i, n_classes - 1);
        dpgd_data_idx_free(a);
        return code;
      }
    }
    print_histogram(a->data, a->size, n_classes);
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (!strncmp(base, "train", 5))
    printf("  privacy     diagnostic (not private): training data\n");
  dpgd_data_idx_free(a);
  return DPGD_EXIT_OK;
}

int dpgd_cmd_data(int argc, char **argv)
{
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    if (argc < 2) return dpgd_cli_usage_error("data", "no data command given (try 'info')");
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  if (!strcmp(argv[1], "png")) return dpgd_cmd_data_png(argc, argv);
  if (strcmp(argv[1], "info") != 0)
    return dpgd_cli_usage_error("data", "unknown data command '%s' (info, png)", argv[1]);
  if (dpgd_cli_wants_help(argc - 1, argv + 1)) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  int sparse = 0;
  size_t classes = DPGD_DATA_DEFAULT_CLASSES;
  const char *target = NULL;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--sparse")) {
      sparse = 1;
    } else if (!strcmp(argv[i], "--classes")) {
      if (i + 1 >= argc) return dpgd_cli_usage_error("data", "--classes needs a value");
      if (dpgd_cli_parse_size("--classes", argv[++i], &classes)) return DPGD_EXIT_USAGE;
      if (classes < 1 || classes > 256)
        return dpgd_cli_usage_error("data", "--classes %zu is outside 1..256", classes);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return dpgd_cli_usage_error("data", "unknown option '%s'", argv[i]);
    } else if (target) {
      return dpgd_cli_usage_error("data", "one DIR or FILE expected, got '%s' and '%s'", target,
                                  argv[i]);
    } else {
      target = argv[i];
    }
  }
  if (!target) return dpgd_cli_usage_error("data", "info needs a DIR or FILE");
  struct stat sb;
  if (stat(target, &sb) != 0)
    return dpgd_cli_error("cannot open %s: no such file or directory", target);
  if (!S_ISDIR(sb.st_mode)) return info_file(target, (int)classes);
  return info_dir(target, sparse, (int)classes);
}
