/* audit_data.c -- the data of a one-run audit (train/AUDIT.md): the base training and
 * test sets of the config, M canary images drawn from the audit's seed, each canary's
 * inclusion coin, and the IDX directory the audited run reads (base then canaries). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit_internal.h"

/* The base data's images, also for a scatter-* model: the canaries are made beside
 * them and audit_data holds images; its features come later (dpgd_audit_features). */
int dpgd_audit_load_base(dpgd_audit *a)
{
  return dpgd_run_load_images(&a->base, &a->test, &a->cfg, a->data_src);
}

/* A features dataset of n rows shaped as like's, zero (calloc: rows never written stay
 * unmapped pages), or NULL. */
static dpgd_dataset *zero_features(const dpgd_dataset *like, size_t n)
{
  dpgd_dataset *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  *t = *like;
  t->n = n;
  t->pixels = NULL;
  t->feat = calloc(n * like->d, sizeof *t->feat);
  t->labels = calloc(n, 1);
  if (!t->feat || !t->labels) {
    dpgd_data_free(t);
    return NULL;
  }
  return t;
}

int dpgd_audit_features(dpgd_audit *a, dpgd_dataset **train)
{
  *train = NULL;
  int rc = dpgd_run_features(&a->base, &a->test, &a->cfg, a->data_src);
  if (!rc && a->ap.kind == DPGD_AUDIT_INPUT)
    rc = dpgd_train_scatter_features(&a->canaries, a->cfg.model_scatter_groups,
                                     a->cfg.model_threads);
  if (rc) return rc;
  const dpgd_dataset *b = a->base, *cf = a->canaries;
  dpgd_dataset *t = zero_features(b, a->n_base + a->M);
  if (!t) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu feature rows", a->n_base + a->M);
  memcpy(t->feat, b->feat, a->n_base * b->d * sizeof *t->feat);
  memcpy(t->labels, b->labels, a->n_base);
  memcpy(t->labels + a->n_base, cf->labels, a->M);
  if (a->ap.kind == DPGD_AUDIT_INPUT) /* gradient canaries' rows stay zero, never read */
    memcpy(t->feat + a->n_base * b->d, cf->feat, a->M * b->d * sizeof *t->feat);
  *train = t;
  return DPGD_OK;
}

/* The two pixel values whose normalised values (p/255 - mean)/std lie symmetrically
 * about 0, as far apart as the byte range allows: canaries made of them have gradients
 * nearly orthogonal to each other. Falls back to 0 and 255 when the mean leaves no
 * room. */
static void canary_levels(const dpgd_config *c, uint8_t *lo, uint8_t *hi)
{
  double centre = 255 * c->data_mean;
  double h = fmin(centre, 255 - centre);
  if (!(h >= 16)) {
    *lo = 0, *hi = 255;
    return;
  }
  *lo = (uint8_t)lround(centre - h);
  *hi = (uint8_t)lround(centre + h);
}

/* Canary images (random lo/hi pixels), labels uniform over the classes, and the
 * inclusion coins S_j, all from the audit's own stream. */
int dpgd_audit_make_canaries(dpgd_audit *a)
{
  const dpgd_dataset *b = a->base;
  size_t M = a->M;
  a->canaries = dpgd_data_alloc(M, b->rows, b->cols, b->n_classes);
  a->in = calloc(M, 1);
  dpgd_rng *g = dpgd_rng_alloc_u64(DPGD_RNG_RESEARCH, a->ap.seed, DPGD_STREAM_AUDIT);
  int rc = DPGD_OK;
  if (!a->canaries || !a->in || !g)
    rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu canaries", M);
  uint8_t lo, hi;
  canary_levels(&a->cfg, &lo, &hi);
  uint64_t u = 0;
  for (size_t j = 0; !rc && j < M; j++) {
    uint8_t *px = a->canaries->pixels + j * b->d;
    if (a->ap.kind == DPGD_AUDIT_GRADIENT) { /* a placeholder image: its pixels are unused */
      memset(px, 0, b->d);
      rc = dpgd_rng_u64(g, &u);
      a->canaries->labels[j] = 0;
      a->in[j] = (uint8_t)(u & 1);
      continue;
    }
    for (size_t k = 0; !rc && k < b->d; k++) {
      if (k % 64 == 0) rc = dpgd_rng_u64(g, &u);
      px[k] = (u >> (k % 64)) & 1 ? hi : lo;
    }
    if (!rc) rc = dpgd_rng_u64(g, &u);
    a->canaries->labels[j] = (uint8_t)((u >> 8) % (uint64_t)b->n_classes);
    a->in[j] = (uint8_t)(u & 1);
  }
  a->g = g; /* gradient canaries draw their coordinates from it once P is known */
  if (rc) return rc;
  a->canaries->mean = (float)a->cfg.data_mean;
  a->canaries->std = (float)a->cfg.data_std;
  for (size_t j = 0; j < M; j++) a->included += a->in[j];
  return DPGD_OK;
}

/* One IDX file: images (n, rows, cols) when rows > 0, labels (n) otherwise. */
static int write_idx(const char *path, const uint8_t *data, size_t n, size_t rows, size_t cols)
{
  size_t hdr = rows ? 16 : 8, len = hdr + n * (rows ? rows * cols : 1);
  uint8_t *buf = malloc(len);
  if (!buf) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %s", path);
  uint32_t words[4] = {rows ? 0x803u : 0x801u, (uint32_t)n, (uint32_t)rows, (uint32_t)cols};
  for (size_t w = 0; w < hdr / 4; w++)
    for (int k = 0; k < 4; k++) buf[4 * w + (size_t)k] = (uint8_t)(words[w] >> (24 - 8 * k));
  memcpy(buf + hdr, data, len - hdr);
  int rc = dpgd_write_atomic(path, buf, len);
  free(buf);
  /* A copy of training data: its owner's alone (the directory is 0700 meanwhile). */
  if (!rc && chmod(path, 0600))
    rc = DPGD_FAIL(DPGD_EIO, "cannot make %s private (chmod 0600)", path);
  return rc;
}

static int write_split(const char *dir, const char *prefix, const dpgd_dataset *first,
                       const dpgd_dataset *second)
{
  size_t d = first->d, n = first->n + (second ? second->n : 0);
  uint8_t *px = malloc(n * d), *lab = malloc(n);
  int rc = DPGD_OK;
  if (!px || !lab) rc = DPGD_FAIL(DPGD_ENOMEM, "no memory for the audit's %s split", prefix);
  char path[DPGD_CONFIG_PATH_MAX + 64];
  if (!rc) {
    memcpy(px, first->pixels, first->n * d);
    memcpy(lab, first->labels, first->n);
    if (second) {
      memcpy(px + first->n * d, second->pixels, second->n * d);
      memcpy(lab + first->n, second->labels, second->n);
    }
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefix);
    rc = write_idx(path, px, n, first->rows, first->cols);
  }
  if (!rc) {
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, prefix);
    rc = write_idx(path, lab, n, 0, 0);
  }
  free(px);
  free(lab);
  return rc;
}

/* DIR/SENSITIVE, the marker of what the directory holds (train/AUDIT.md "Outputs"). */
static int write_marker(const char *dir)
{
  char p[DPGD_CONFIG_PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/SENSITIVE", dir);
  return dpgd_write_atomic(p, DPGD_AUDIT_SENSITIVE_NOTE "\n",
                           strlen(DPGD_AUDIT_SENSITIVE_NOTE) + 1);
}

/* <dir>/audit_data: the base training set followed by ALL M canaries (n = n_base + M is
 * public; an excluded canary is a null point of the run, docs/MATH.md
 * "Neighbours"), and the base test set, in a directory of mode 0700 with files of mode
 * 0600 (a byte-identical copy of the training data); <dir>/SENSITIVE says so. The
 * config is pointed at it. */
int dpgd_audit_write_data(dpgd_audit *a, const char *dir)
{
  char data[DPGD_CONFIG_PATH_MAX];
  int n = snprintf(data, sizeof data, "%s/audit_data", dir);
  if (n < 0 || (size_t)n >= sizeof data)
    return DPGD_FAIL(DPGD_EINVAL, "audit directory name too long: %s", dir);
  char failed[DPGD_CONFIG_PATH_MAX];
  if (dpgd_path_mkdirs(data, 0700, failed, sizeof failed))
    return DPGD_FAIL(DPGD_EIO, "cannot create directory %s", failed);
  if (chmod(data, 0700)) /* it may have existed */
    return DPGD_FAIL(DPGD_EIO, "cannot make %s private (chmod 0700)", data);
  int rc = write_marker(dir);
  if (!rc) rc = write_split(data, "train", a->base, a->canaries);
  if (!rc) rc = write_split(data, "t10k", a->test, NULL);
  if (rc) return rc;
  snprintf(a->cfg.data_dir, sizeof a->cfg.data_dir, "%s", data);
  a->cfg.data_n_train = 0;
  a->cfg.data_n_test = 0;
  return DPGD_OK;
}

signed char dpgd_audit_code_sign(uint32_t r, size_t t, size_t K)
{
  return (signed char)(__builtin_popcountll((unsigned long long)(r & (t % K))) & 1 ? -1 : 1);
}

/* Gradient canaries (train/AUDIT.md "Gradient canaries", "Coded canaries"): K, the
 * least power of 2 with K P >= M; M distinct slots of the K P (coordinate, code) pairs
 * from the audit stream (dpgd_audit_draw_coords: every M-subset equally likely, no
 * modulo bias; slot s is coordinate s / K with Walsh row s mod K, so K = 1 is one
 * canary per coordinate); and the run's training rows n_base .. n_base + M - 1 made
 * gradient points: canary j's gradient is h(r_j, t) 4 C e_{k_j}, so that every cap the
 * run applies (at most C) clips it. */
int dpgd_audit_grad_attach(dpgd_audit *a)
{
  size_t M = a->M, P = a->P, T = a->run->plan.steps, K = 1, kmax = 1;
  if (a->ap.kind != DPGD_AUDIT_GRADIENT) return DPGD_OK;
  while (kmax * 2 <= T && kmax * 2 * P <= UINT32_MAX) kmax *= 2;
  while (K * P < M && K < kmax) K *= 2;
  if (K * P < M)
    return DPGD_FAIL(DPGD_EINVAL,
                     "%zu gradient canaries are more than this model's %zu parameters times "
                     "the %zu orthogonal codes its %zu steps allow: use at most %zu",
                     M, P, kmax, T, kmax * P);
  a->codes = K;
  if (!a->coords) a->coords = malloc(M * sizeof *a->coords); /* scatter: made already */
  a->code = malloc(M * sizeof *a->code);
  a->sign = malloc(M);
  a->csq = calloc(P, sizeof *a->csq);
  if (!a->coords || !a->code || !a->sign || !a->csq)
    return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu gradient canaries", M);
  int rc = dpgd_audit_draw_coords(a->g, M, K * P, a->coords);
  for (size_t j = 0; j < M; j++) {
    a->code[j] = (uint32_t)(a->coords[j] % K);
    a->coords[j] = (uint32_t)(a->coords[j] / K);
    a->sign[j] = 1;
  }
  dpgd_dataset *tr = a->run->train;
  tr->fixed_from = a->n_base;
  tr->fixed_coord = a->coords;
  tr->fixed_sign = a->sign;
  tr->fixed_value = (float)(4 * a->run->plan.clip);
  return rc;
}

int dpgd_audit_draw_coords(dpgd_rng *g, size_t m, size_t p, uint32_t *coords)
{
  if (m > p || p > UINT32_MAX)
    return DPGD_FAIL(DPGD_EINVAL, "cannot draw %zu distinct coordinates out of %zu", m, p);
  unsigned char *in = malloc(p ? p : 1);
  if (!in) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu coordinates", p);
  int rc = dpgd_rng_sample_subset(g, m, in, p); /* every m-subset equally likely */
  for (size_t k = 0, j = 0; !rc && k < p; k++)
    if (in[k]) coords[j++] = (uint32_t)k;
  free(in);
  return rc;
}
