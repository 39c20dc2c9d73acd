/* cmd_eval.c -- 'dpgd eval' (accuracy and loss of a saved model on a dataset split) and
 * 'dpgd predict' (class and class probabilities of single PNG images). Both read the
 * model file written by 'dpgd train' (RUN_DIR/model.bin) and use the model module's
 * evaluation, so they see exactly the pixels and normalisation training saw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "dpgd_config.h"
#include "dpgd_data.h"
#include "dpgd_model.h"
#include "dpgd_train.h"

static void eval_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd eval --model FILE|RUN_DIR [--data DIR] [--split test|train] [--n N]\n"
          "                 [--predictions CSV]\n\n"
          "Accuracy and mean cross-entropy of a saved model (RUN_DIR/model.bin) on a split\n"
          "of a dataset directory (IDX files or a PNG folder; PNG samples with gaps in the\n"
          "indices, such as mnist_png_sample, are accepted). Runs on OpenMP's default\n"
          "number of threads (OMP_NUM_THREADS); the results do not depend on it.\n\n"
          "  --model FILE       the model file, or a run directory (its model.bin)\n"
          "  --data DIR         dataset directory (default: $DPGD_DATA_DIR, else\n"
          "                     data/mnist)\n"
          "  --split S          test (default) or train (figures on training data are a\n"
          "                     diagnostic, not private)\n"
          "  --n N              only the first N examples of the split\n"
          "  --predictions CSV  also write index,label,pred per example (index: the PNG\n"
          "                     file-name index, or the position in an IDX file)\n"
          "  --mean M --std S   pixel normalisation (p/255 - M)/S; default: data.mean and\n"
          "                     data.std of config.ini beside the model file (a run\n"
          "                     directory), else MNIST's %g and %g\n",
          DPGD_DATA_MNIST_MEAN, DPGD_DATA_MNIST_STD);
}

static void predict_usage(FILE *f)
{
  fprintf(f,
          "usage: dpgd predict --model FILE|RUN_DIR [--mean M --std S] IMAGE.png...\n\n"
          "Classifies 8-bit grayscale PNG images of the model's input size (28 x 28 for\n"
          "MNIST) with a saved model (RUN_DIR/model.bin). One line per image:\n"
          "  IMAGE.png: class K  p 0:P0 1:P1 ...\n"
          "with the model's softmax probability of every class. Pixels are normalised as\n"
          "in training: --mean/--std, else data.mean and data.std of config.ini beside the\n"
          "model file, else MNIST's %g and %g.\n",
          DPGD_DATA_MNIST_MEAN, DPGD_DATA_MNIST_STD);
}

/* Takes the value of option argv[*i] into *val; non-zero (printed) if there is none. */
static int option_value(const char *cmd, int argc, char **argv, int *i, const char **val)
{
  if (*i + 1 >= argc) return dpgd_cli_usage_error(cmd, "%s needs a value", argv[*i]);
  *val = argv[++*i];
  return 0;
}

/* The model file of --model ARG: ARG itself, or ARG/model.bin when ARG is a directory
 * (a run directory of 'dpgd train'). Written into buf. */
static int model_file(char *buf, size_t len, const char *cmd, const char *arg)
{
  size_t n = strlen(arg);
  int k = dpgd_path_is_dir(arg)
              ? snprintf(buf, len, "%s%smodel.bin", arg, n && arg[n - 1] == '/' ? "" : "/")
              : snprintf(buf, len, "%s", arg);
  if (k < 0 || (size_t)k >= len)
    return dpgd_cli_usage_error(cmd, "--model %s: path too long", arg);
  return 0;
}

static int load_model(dpgd_model **m, const char *path)
{
  int st = dpgd_model_load(m, path);
  return st ? dpgd_cli_status_error(st, "") : 0;
}

/* The pixel normalisation training used: --mean/--std if given (both or neither),
 * else data.mean/data.std of config.ini in the model file's folder (the run directory
 * 'dpgd train' wrote), else the MNIST defaults. Writes where it came from into from. */
typedef struct norm {
  const char *mean_text, *std_text; /* the options, or NULL */
  float mean, std;
  char from[4200];
  int have_config; /* from is the run's config.ini, read */
  size_t groups;   /* its model.scatter_groups */
  char type[64];   /* its model.type */
} norm;

static int resolve_norm(norm *nm, const char *cmd, const char *model_path)
{
  nm->mean = DPGD_DATA_MNIST_MEAN;
  nm->std = DPGD_DATA_MNIST_STD;
  snprintf(nm->from, sizeof nm->from, "MNIST default");
  if (!nm->mean_text != !nm->std_text)
    return dpgd_cli_usage_error(cmd, "give both --mean and --std, or neither");
  if (nm->mean_text) {
    double m, sd;
    if (dpgd_cli_parse_double("--mean", nm->mean_text, &m) ||
        dpgd_cli_parse_double("--std", nm->std_text, &sd))
      return DPGD_EXIT_USAGE;
    if (!(sd > 0)) return dpgd_cli_usage_error(cmd, "--std must be positive");
    if (dpgd_data_check_norm(m, sd, "--mean/--std"))
      return dpgd_cli_usage_error(cmd, "%s", dpgd_error_last());
    nm->mean = (float)m;
    nm->std = (float)sd;
    snprintf(nm->from, sizeof nm->from, "--mean/--std");
    return 0;
  }
  const char *slash = strrchr(model_path, '/');
  int k = slash ? snprintf(nm->from, sizeof nm->from, "%.*s/config.ini",
                           (int)(slash - model_path), model_path)
                : snprintf(nm->from, sizeof nm->from, "config.ini");
  if (k < 0 || (size_t)k >= sizeof nm->from)
    return dpgd_cli_error("path too long: %s", model_path);
  if (access(nm->from, F_OK)) {
    snprintf(nm->from, sizeof nm->from, "MNIST default");
    return 0;
  }
  dpgd_config c;
  dpgd_config_defaults(&c);
  int st = dpgd_config_load(&c, nm->from);
  if (!st) st = dpgd_data_check_norm(c.data_mean, c.data_std, nm->from);
  if (st) return dpgd_cli_status_error(st, "");
  nm->mean = (float)c.data_mean;
  nm->std = (float)c.data_std;
  nm->have_config = 1;
  nm->groups = c.model_scatter_groups;
  snprintf(nm->type, sizeof nm->type, "%s", c.model_type);
  return 0;
}

/* A scatter-* model reads the scattering features of the images (their group count from
 * the run's config.ini beside the model); other models read the pixels as they are. */
static int model_input(dpgd_dataset **ds, const dpgd_model *m, const norm *nm,
                       const char *model_path)
{
  const char *type = dpgd_model_type_name(dpgd_model_get_type(m));
  if (strncmp(type, "scatter-", 8)) return 0;
  if (!nm->have_config || strcmp(nm->type, type))
    return dpgd_cli_error("%s is a %s model: its features need the group count of the run's "
                          "config.ini beside it (model.type = %s), not found",
                          model_path, type, type);
  int st = dpgd_train_scatter_features(ds, nm->groups, 0);
  return st ? dpgd_cli_status_error(st, "") : 0;
}

static int write_predictions(const char *path, const dpgd_dataset *ds,
                             const size_t *index /* (n) */, const uint8_t *pred /* (n) */)
{
  FILE *f = fopen(path, "w");
  if (!f) return dpgd_cli_error("cannot write %s", path);
  fputs("index,label,pred\n", f);
  for (size_t i = 0; i < ds->n; i++)
    fprintf(f, "%zu,%d,%d\n", index[i], ds->labels[i], pred[i]);
  if (fclose(f)) return dpgd_cli_error("error writing %s", path);
  return 0;
}

/* The command line of 'dpgd eval'. */
typedef struct {
  const char *model_path, *data, *split, *pred_path, *n_text;
  size_t n_max;
  norm nm;
  char model_buf[4200]; /* the model file (model_file) */
} eval_args;

/* Fills *a from argv and checks it; returns DPGD_EXIT_OK or the exit status. */
static int parse_eval_args(eval_args *a, int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int rc = 0;
    if (!strcmp(o, "--model")) rc = option_value("eval", argc, argv, &i, &a->model_path);
    else if (!strcmp(o, "--data")) rc = option_value("eval", argc, argv, &i, &a->data);
    else if (!strcmp(o, "--split")) rc = option_value("eval", argc, argv, &i, &a->split);
    else if (!strcmp(o, "--n")) rc = option_value("eval", argc, argv, &i, &a->n_text);
    else if (!strcmp(o, "--predictions"))
      rc = option_value("eval", argc, argv, &i, &a->pred_path);
    else if (!strcmp(o, "--mean")) rc = option_value("eval", argc, argv, &i, &a->nm.mean_text);
    else if (!strcmp(o, "--std")) rc = option_value("eval", argc, argv, &i, &a->nm.std_text);
    else rc = dpgd_cli_usage_error("eval", "unexpected argument '%s'", o);
    if (rc) return rc;
  }
  if (!a->model_path) return dpgd_cli_usage_error("eval", "no --model FILE given");
  if (model_file(a->model_buf, sizeof a->model_buf, "eval", a->model_path))
    return DPGD_EXIT_USAGE;
  a->model_path = a->model_buf;
  if (strcmp(a->split, "test") && strcmp(a->split, "train"))
    return dpgd_cli_usage_error("eval", "--split '%s': expected test or train", a->split);
  if (a->n_text && dpgd_cli_parse_size("--n", a->n_text, &a->n_max)) return DPGD_EXIT_USAGE;
  if (a->n_text && a->n_max == 0) return dpgd_cli_usage_error("eval", "--n must be at least 1");
  return resolve_norm(&a->nm, "eval", a->model_path);
}

int dpgd_cmd_eval(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    eval_usage(stdout);
    return DPGD_EXIT_OK;
  }
  eval_args a = {.split = "test"};
  int nrc = parse_eval_args(&a, argc, argv);
  if (nrc) return nrc;
  const char *model_path = a.model_path, *split = a.split, *pred_path = a.pred_path;

  dpgd_model *m = NULL;
  if (load_model(&m, model_path)) return DPGD_EXIT_ERROR;
  char dir[4096];
  dpgd_dataset *ds = NULL;
  size_t *index = NULL;
  uint8_t *pred = NULL;
  int rc = DPGD_EXIT_OK, st = dpgd_data_find_dir(dir, sizeof dir, a.data);
  if (!st) st = dpgd_data_load_sparse(&ds, &index, dir, split);
  if (st) rc = dpgd_cli_status_error(st, "");
  if (!rc && a.n_text && a.n_max > ds->n)
    rc = dpgd_cli_error("--n %zu: the %s split of %s has only %zu examples", a.n_max, split,
                        dir, ds->n);
  if (!rc && a.n_text && (st = dpgd_data_truncate(ds, a.n_max)))
    rc = dpgd_cli_status_error(st, "");
  if (!rc) {
    ds->mean = a.nm.mean;
    ds->std = a.nm.std;
  }
  if (!rc) rc = model_input(&ds, m, &a.nm, model_path);
  if (!rc && !(pred = malloc(ds->n))) rc = dpgd_cli_error("out of memory");
  size_t correct = 0;
  double loss = 0;
  if (!rc && (st = dpgd_model_evaluate(m, ds, 0, ds->n, 0, pred, &correct, &loss)))
    rc = dpgd_cli_status_error(st, model_path);
  if (!rc && pred_path) rc = write_predictions(pred_path, ds, index, pred);
  if (!rc) {
    printf("model     %s (%zu parameters, %d classes)\n", model_path, dpgd_model_n_params(m),
           dpgd_model_n_classes(m));
    printf("data      %s, %s split: %zu examples\n", dir, split, ds->n);
    printf("pixels    (p/255 - %g) / %g (%s)\n", ds->mean, ds->std, a.nm.from);
    printf("accuracy  %.4f (%zu of %zu correct)\n", (double)correct / (double)ds->n, correct,
           ds->n);
    printf("loss      %.6f (mean cross-entropy)\n", loss / (double)ds->n);
    /* A model's fit on the data it was trained on is exact, with no noise: it tells how
     * the training points differ from others, which no eps covers. */
    if (!strcmp(split, "train"))
      printf("privacy   diagnostic (not private): accuracy and loss on the training split\n");
    if (pred_path) printf("predictions %s\n", pred_path);
  }
  free(pred);
  free(index);
  dpgd_data_free(ds);
  dpgd_model_free(m);
  return rc;
}
/* Class probabilities of example i: the cross-entropy of label k is -log p_k, so the
 * model's own evaluation (log-sum-exp in double) gives p_k = exp(-loss_k) without a
 * second implementation of the softmax. The example's label is changed and restored. */
static int class_probabilities(double *p /* (K) */, uint8_t *cls, const dpgd_model *m,
                               dpgd_dataset *ds, size_t i, int K)
{
  uint8_t saved = ds->labels[i];
  int st = DPGD_OK;
  for (int k = 0; k < K && !st; k++) {
    double loss;
    ds->labels[i] = (uint8_t)k;
    st = dpgd_model_evaluate(m, ds, i, 1, 1, cls, NULL, &loss);
    p[k] = exp(-loss);
  }
  ds->labels[i] = saved;
  return st;
}

int dpgd_cmd_predict(int argc, char **argv)
{
  if (dpgd_cli_wants_help(argc, argv)) {
    predict_usage(stdout);
    return DPGD_EXIT_OK;
  }
  const char *model_path = NULL;
  norm nm = {0};
  const char **images = calloc((size_t)argc, sizeof *images);
  if (!images) return dpgd_cli_error("out of memory");
  size_t n = 0;
  int rc = DPGD_EXIT_OK;
  for (int i = 1; i < argc && !rc; i++) {
    if (!strcmp(argv[i], "--model")) rc = option_value("predict", argc, argv, &i, &model_path);
    else if (!strcmp(argv[i], "--mean"))
      rc = option_value("predict", argc, argv, &i, &nm.mean_text);
    else if (!strcmp(argv[i], "--std"))
      rc = option_value("predict", argc, argv, &i, &nm.std_text);
    else if (argv[i][0] == '-' && argv[i][1])
      rc = dpgd_cli_usage_error("predict", "unknown option '%s'", argv[i]);
    else images[n++] = argv[i];
  }
  if (!rc && !model_path) rc = dpgd_cli_usage_error("predict", "no --model FILE given");
  char model_buf[4200];
  if (!rc && !(rc = model_file(model_buf, sizeof model_buf, "predict", model_path)))
    model_path = model_buf;
  if (!rc && !n) rc = dpgd_cli_usage_error("predict", "no IMAGE.png given");
  if (!rc) rc = resolve_norm(&nm, "predict", model_path);
  dpgd_model *m = NULL;
  dpgd_dataset *ds = NULL;
  if (!rc) rc = load_model(&m, model_path);
  int K = m ? dpgd_model_n_classes(m) : 0;
  int st;
  if (!rc && (st = dpgd_data_png_read_files(&ds, images, n, K)))
    rc = dpgd_cli_status_error(st, "");
  if (!rc) {
    ds->mean = nm.mean;
    ds->std = nm.std;
  }
  if (!rc) rc = model_input(&ds, m, &nm, model_path);
  /* All images are classified before anything is printed: an error stays one line. */
  double *p = !rc ? malloc(n * (size_t)K * sizeof *p) : NULL;
  uint8_t *cls = !rc ? malloc(n) : NULL;
  if (!rc && (!p || !cls)) rc = dpgd_cli_error("out of memory");
  for (size_t i = 0; i < n && !rc; i++)
    if ((st = class_probabilities(p + i * (size_t)K, cls + i, m, ds, i, K)))
      rc = dpgd_cli_status_error(st, images[i]);
  for (size_t i = 0; i < n && !rc; i++) {
    printf("%s: class %d  p", images[i], cls[i]);
    for (int k = 0; k < K; k++) printf(" %d:%.4f", k, p[i * (size_t)K + (size_t)k]);
    printf("\n");
  }
  free(p);
  free(cls);
  free(images);
  dpgd_data_free(ds);
  dpgd_model_free(m);
  return rc;
}
