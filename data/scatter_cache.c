/* scatter_cache.c -- scattering features of a whole dataset: computed in parallel (one
 * transform workspace per OpenMP thread), cached on disk under a header that names the
 * images' checksum and every parameter of the transform, so that a cache is used only
 * for the images and transform it was made from; per-example group normalisation. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "data_internal.h"
#include "scatter_internal.h"

#define CACHE_MAGIC "DPGDSCAT"
#define CACHE_VERSION 1u

/* The cache header: what the features were computed from, then the payload's CRC-32.
 * Every field is fixed-width; a header that differs in any field is a stale cache. */
typedef struct cache_header {
  char magic[8];
  uint32_t version;
  uint32_t J, L;
  uint32_t images_crc; /* CRC-32 of the n x rows x cols pixel bytes */
  uint64_t n, rows, cols, dim;
  float mean, std;      /* the pixels' normalisation before the transform */
  uint32_t payload_crc; /* CRC-32 of the (n, dim) floats that follow */
  uint32_t pad;
} cache_header;

static cache_header header_for(const dpgd_dataset *img, const dpgd_scatter_opts *o, size_t dim)
{
  cache_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CACHE_MAGIC, 8);
  h.version = CACHE_VERSION;
  h.J = (uint32_t)o->J;
  h.L = (uint32_t)o->L;
  h.images_crc = dpgd_crc32(img->pixels, img->n * img->d);
  h.n = img->n;
  h.rows = img->rows;
  h.cols = img->cols;
  h.dim = dim;
  h.mean = img->mean;
  h.std = img->std;
  return h;
}

/* The features of images [0, n) into feat (n, dim): one workspace per thread, images
 * shared out dynamically (each image's features do not depend on which thread makes
 * them: the same plans and filters in every workspace). */
static int compute_all(float *feat, const dpgd_dataset *img, const dpgd_scatter_opts *o,
                       size_t dim, int threads)
{
  int failed = 0;
#ifdef _OPENMP
  int nt = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(nt) reduction(| : failed)
#else
  (void)threads;
#endif
  {
    dpgd_scatter *s = dpgd_scatter_alloc(img->rows, img->cols, o->J, o->L);
    float *x = malloc(img->d * sizeof *x);
    if (!s || !x) failed = 1;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
    for (size_t i = 0; i < img->n; i++)
      if (s && x) {
        dpgd_data_unpack(x, img, i, 1);
        dpgd_scatter_transform(s, feat + i * dim, x);
      }
    free(x);
    dpgd_scatter_free(s);
  }
  if (failed) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the scattering transform");
  return DPGD_OK;
}

/* 1 when path holds a cache with header *want (its payload read into feat and its CRC
 * checked), 0 otherwise (absent, stale or corrupt: the caller recomputes). */
static int cache_read(const char *path, const cache_header *want, float *feat, size_t bytes,
                      const char **why)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    *why = "absent";
    return 0;
  }
  cache_header h;
  int ok = fread(&h, sizeof h, 1, f) == 1;
  uint32_t crc = h.payload_crc;
  h.payload_crc = 0;
  *why = "stale (images or transform parameters differ)";
  if (ok) ok = memcmp(&h, want, sizeof h) == 0;
  if (ok) {
    *why = "corrupt (short or checksum mismatch)";
    ok = fread(feat, 1, bytes, f) == bytes && fgetc(f) == EOF && dpgd_crc32(feat, bytes) == crc;
  }
  fclose(f);
  return ok;
}

/* Writes the cache through path.tmp and a rename; DPGD_EIO naming the file on failure. */
static int cache_write(const char *path, cache_header h, const float *feat, size_t bytes)
{
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return DPGD_FAIL(DPGD_EINVAL, "feature cache path too long: %s", path);
  h.payload_crc = dpgd_crc32(feat, bytes);
  int fd = dpgd_file_open_write(tmp, O_TRUNC);
  int ok = fd >= 0 && dpgd_file_write_all(fd, &h, sizeof h) == 0 &&
           dpgd_file_write_all(fd, feat, bytes) == 0 && dpgd_file_fsync(fd) == 0;
  if (fd >= 0 && dpgd_file_close(fd) != 0) ok = 0;
  if (ok) ok = dpgd_file_rename(tmp, path) == 0;
  if (!ok) {
    int e = errno;
    unlink(tmp);
    return DPGD_FAIL(DPGD_EIO, "cannot write the feature cache %s: %s", path, strerror(e));
  }
  return DPGD_OK;
}

void dpgd_scatter_group_norm(float *x, size_t C, size_t S, size_t groups)
{
  size_t per = C / groups * S;
  for (size_t g = 0; g < groups; g++) {
    float *v = x + g * per;
    double m = 0, q = 0;
    for (size_t k = 0; k < per; k++) m += v[k];
    m /= (double)per;
    for (size_t k = 0; k < per; k++) q += (v[k] - m) * (v[k] - m);
    double inv = 1.0 / sqrt(q / (double)per + DPGD_SCATTER_GN_EPS);
    for (size_t k = 0; k < per; k++) v[k] = (float)((v[k] - m) * inv);
  }
}

/* A features dataset of img's labels: (n, C x So) floats, no pixels. */
static dpgd_dataset *features_dataset(const dpgd_dataset *img, size_t C, size_t So)
{
  size_t dim = C * So;
  dpgd_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return NULL;
  ds->feat = malloc(img->n * dim * sizeof *ds->feat);
  ds->labels = malloc(img->n);
  if (!ds->feat || !ds->labels) {
    dpgd_data_free(ds);
    return NULL;
  }
  memcpy(ds->labels, img->labels, img->n);
  ds->n = img->n;
  ds->rows = C;
  ds->cols = So;
  ds->d = dim;
  ds->n_classes = img->n_classes;
  ds->mean = img->mean;
  ds->std = img->std;
  return ds;
}

int dpgd_scatter_features(dpgd_dataset **out, const dpgd_dataset *img,
                          const dpgd_scatter_opts *o, const char *cache_path, int threads,
                          dpgd_scatter_cache_info *info)
{
  *out = NULL;
  dpgd_scatter_cache_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  if (!img->pixels) return DPGD_FAIL(DPGD_EINVAL, "scattering needs images, not features");
  dpgd_scatter *s = dpgd_scatter_alloc(img->rows, img->cols, o->J, o->L);
  if (!s) return DPGD_EINVAL;
  size_t C = dpgd_scatter_channels(s), So = s->Mo * s->No;
  dpgd_scatter_free(s);
  if (o->groups && C % o->groups)
    return DPGD_FAIL(DPGD_EINVAL, "%zu groups do not divide the %zu scattering channels",
                     o->groups, C);
  dpgd_dataset *ds = features_dataset(img, C, So);
  if (!ds) return DPGD_FAIL(DPGD_ENOMEM, "no memory for %zu x %zu features", img->n, C * So);
  size_t bytes = img->n * ds->d * sizeof(float);
  cache_header h = header_for(img, o, ds->d);
  info->why = "no cache path";
  int rc = DPGD_OK;
  if (!cache_path || !cache_read(cache_path, &h, ds->feat, bytes, &info->why)) {
    rc = compute_all(ds->feat, img, o, ds->d, threads);
    info->computed = 1;
    if (!rc && cache_path) info->write_rc = cache_write(cache_path, h, ds->feat, bytes);
  }
  for (size_t i = 0; !rc && o->groups && i < ds->n; i++)
    dpgd_scatter_group_norm(ds->feat + i * ds->d, C, So, o->groups);
  if (rc) dpgd_data_free(ds);
  else *out = ds;
  return rc;
}
