/* model.c -- the model object: type lookup, allocation of the parameter slab,
 * PyTorch-default initialisation, and evaluation (predictions, accuracy, loss). The
 * model types themselves (softmax.c, cnn.c) only supply a vtable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "model_internal.h"

/* Evaluation works in chunks of this many examples (a buffer of chunk * d floats). */
#define EVAL_CHUNK 256

const dpgd_model_type *dpgd_model_type_find(const char *name)
{
  const dpgd_model_type *types[] = {dpgd_model_softmax, dpgd_model_cnn,
                                    dpgd_model_scatter_softmax, dpgd_model_scatter_cnn};
  if (!name) return NULL;
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    if (strcmp(types[k]->name, name) == 0) return types[k];
  return NULL;
}

const char *dpgd_model_type_name(const dpgd_model_type *t) { return t ? t->name : "(none)"; }

dpgd_model *dpgd_model_alloc(const dpgd_model_type *t, dpgd_activation act, size_t rows,
                             size_t cols, int n_classes)
{
  if (!t) {
    DPGD_FAIL(DPGD_EINVAL, "no model type given");
    return NULL;
  }
  if (act != DPGD_ACT_RELU && act != DPGD_ACT_TANH) {
    DPGD_FAIL(DPGD_EINVAL, "unknown activation %d (relu = 0, tanh = 1)", (int)act);
    return NULL;
  }
  if (n_classes < 2 || n_classes > 256) {
    DPGD_FAIL(DPGD_EINVAL, "number of classes %d is outside 2..256", n_classes);
    return NULL;
  }
  if (rows == 0 || cols == 0 || rows > DPGD_DATA_MAX_SIDE || cols > DPGD_DATA_MAX_SIDE) {
    DPGD_FAIL(DPGD_EINVAL, "image size %zu x %zu is outside 1..%d per side", rows, cols,
              DPGD_DATA_MAX_SIDE);
    return NULL;
  }
  tensor_spec spec[MODEL_MAX_TENSORS];
  size_t nt = t->layout(spec, rows, cols, n_classes);
  if (nt == 0) return NULL;
  dpgd_model *m = calloc(1, sizeof *m);
  if (!m) {
    DPGD_FAIL(DPGD_ENOMEM, "out of memory allocating a %s model", t->name);
    return NULL;
  }
  m->type = t;
  m->act = act;
  m->rows = rows;
  m->cols = cols;
  m->d = rows * cols;
  m->n_classes = n_classes;
  m->n_tensors = nt;
  memcpy(m->tensors, spec, nt * sizeof spec[0]);
  for (size_t k = 0; k < nt; k++) m->n_params += spec[k].size;
  m->params = calloc(m->n_params, sizeof(float));
  if (!m->params) {
    DPGD_FAIL(DPGD_ENOMEM, "out of memory allocating %zu parameters", m->n_params);
    free(m);
    return NULL;
  }
  return m;
}

void dpgd_model_free(dpgd_model *m)
{
  if (!m) return;
  free(m->params);
  free(m);
}

size_t dpgd_model_n_params(const dpgd_model *m) { return m->n_params; }

double dpgd_model_flops_per_example(const dpgd_model *m) { return m->type->flops(m); }
int dpgd_model_n_classes(const dpgd_model *m) { return m->n_classes; }
const dpgd_model_type *dpgd_model_get_type(const dpgd_model *m) { return m->type; }
float *dpgd_model_params(dpgd_model *m) { return m->params; }
const float *dpgd_model_params_const(const dpgd_model *m) { return m->params; }

/* Tensors in slab order, elements in order: weights and biases alike
 * uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch.nn.Linear / Conv2d
 * reset_parameters: kaiming_uniform(a = sqrt(5)) gives exactly this bound), one word
 * of draw per parameter. */
int dpgd_model_init_draw(dpgd_model *m, dpgd_model_draw_fn draw, void *ctx)
{
  float *p = m->params;
  for (size_t k = 0; k < m->n_tensors; k++) {
    double bound = 1.0 / sqrt((double)m->tensors[k].fan_in);
    for (size_t j = 0; j < m->tensors[k].size; j++) {
      uint64_t w;
      int rc = draw(ctx, &w);
      if (rc) return rc;
      double u = (double)(w >> 11) * 0x1p-53; /* [0, 1) */
      *p++ = (float)((2.0 * u - 1.0) * bound);
    }
  }
  return DPGD_OK;
}

/* splitmix64 (Steele, Lea & Flood 2014): a tiny generator with no allocation, so this
 * initialisation cannot fail. */
static int splitmix64(void *ctx, uint64_t *word)
{
  uint64_t *state = ctx;
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  *word = z ^ (z >> 31);
  return DPGD_OK;
}

void dpgd_model_init(dpgd_model *m, uint64_t seed)
{
  uint64_t state = seed;
  (void)dpgd_model_init_draw(m, splitmix64, &state);
}

int dpgd_model_check_dataset(const dpgd_model *m, const dpgd_dataset *ds)
{
  if (!ds) return DPGD_FAIL(DPGD_EINVAL, "no dataset given");
  if (ds->rows != m->rows || ds->cols != m->cols)
    return DPGD_FAIL(DPGD_EINVAL, "dataset images are %zu x %zu, the model expects %zu x %zu",
                     ds->rows, ds->cols, m->rows, m->cols);
  if (ds->n_classes > m->n_classes)
    return DPGD_FAIL(DPGD_EINVAL, "dataset has %d classes, the model only %d", ds->n_classes,
                     m->n_classes);
  return DPGD_OK;
}

/* Examples [lo, hi) in one chunk buffer: predictions into pred[lo - first ...], the
 * number correct and the summed loss of the chunk. */
static void evaluate_chunk(const dpgd_model *m, const dpgd_dataset *ds, size_t first, size_t lo,
                           size_t hi, float *x, float *z, float *scratch, uint8_t *pred,
                           size_t *n_correct, double *loss_sum)
{
  size_t K = (size_t)m->n_classes, B = hi - lo, correct = 0;
  double loss = 0.0;
  dpgd_data_unpack(x, ds, lo, B);
  m->type->logits(m, scratch, z, x, B);
  for (size_t i = 0; i < B; i++) {
    const float *zi = z + i * K;
    size_t best = 0;
    for (size_t k = 1; k < K; k++)
      if (zi[k] > zi[best]) best = k;
    double zmax = zi[best];
    double se = 0.0;
    for (size_t k = 0; k < K; k++) se += exp((double)zi[k] - zmax);
    uint8_t y = ds->labels[lo + i];
    loss += log(se) + zmax - (double)zi[y];
    if (pred) pred[lo - first + i] = (uint8_t)best;
    correct += best == y;
  }
  *n_correct = correct;
  *loss_sum = loss;
}

/* The arguments of dpgd_model_evaluate: a dataset of the model's shape, a range inside it,
 * a thread count >= 0. */
static int check_evaluate_args(const dpgd_model *m, const dpgd_dataset *ds, size_t first,
                               size_t count, int threads)
{
  int st = dpgd_model_check_dataset(m, ds);
  if (st) return st;
  if (first > ds->n || count > ds->n - first)
    return DPGD_FAIL(DPGD_EINVAL, "examples %zu..%zu are outside the dataset of %zu", first,
                     first + count, ds->n);
  if (threads < 0) return DPGD_FAIL(DPGD_EINVAL, "thread count %d is negative", threads);
  return DPGD_OK;
}

int dpgd_model_evaluate(const dpgd_model *m, const dpgd_dataset *ds, size_t first, size_t count,
                        int threads, uint8_t *pred, size_t *n_correct, double *loss_sum)
{
  int st = check_evaluate_args(m, ds, first, count, threads);
  if (st) return st;
  const size_t K = (size_t)m->n_classes, chunk = EVAL_CHUNK;
  const size_t n_chunks = (count + chunk - 1) / chunk;
#ifdef _OPENMP
  if (threads == 0) threads = omp_get_max_threads();
#else
  threads = 1;
#endif
  if ((size_t)threads > n_chunks) threads = n_chunks ? (int)n_chunks : 1;
  const size_t per = chunk * m->d + chunk * K + m->type->scratch_floats(m, chunk);
  /* Per chunk: number correct and loss, reduced in chunk order afterwards, so the
   * result does not depend on the thread count. */
  size_t *c_correct = malloc((n_chunks ? n_chunks : 1) * sizeof *c_correct);
  double *c_loss = malloc((n_chunks ? n_chunks : 1) * sizeof *c_loss);
  float *buf = malloc(per * (size_t)threads * sizeof(float));
  if (!c_correct || !c_loss || !buf) {
    free(c_correct);
    free(c_loss);
    free(buf);
    return DPGD_FAIL(DPGD_ENOMEM, "out of memory for evaluation buffers");
  }
  int saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    int t = 0, nt = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    nt = omp_get_num_threads();
#endif
    float *x = buf + per * (size_t)t, *z = x + chunk * m->d, *scratch = z + chunk * K;
    size_t c0 = n_chunks * (size_t)t / (size_t)nt, c1 = n_chunks * (size_t)(t + 1) / (size_t)nt;
    for (size_t c = c0; c < c1; c++) {
      size_t lo = first + c * chunk,
             hi = lo + chunk < first + count ? lo + chunk : first + count;
      evaluate_chunk(m, ds, first, lo, hi, x, z, scratch, pred, &c_correct[c], &c_loss[c]);
    }
  }
  openblas_set_num_threads(saved);
  size_t correct = 0;
  double loss = 0.0;
  for (size_t c = 0; c < n_chunks; c++) {
    correct += c_correct[c];
    loss += c_loss[c];
  }
  free(c_correct);
  free(c_loss);
  free(buf);
  if (n_correct) *n_correct = correct;
  if (loss_sum) *loss_sum = loss;
  return DPGD_OK;
}
