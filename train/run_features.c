/* run_features.c -- the datasets of a scatter-* model: the training and evaluation
 * images replaced by their scattering features (data/scatter*.c), read from the feature
 * cache when it matches the images and the transform, computed and cached otherwise. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

/* The transform of every scatter-* model: J = 2, L = 8 (kymatio's and Tramer & Boneh's
 * MNIST setting; 81 channels of 7 x 7 on 28 x 28 images). */
#define RUN_SCATTER_J 2
#define RUN_SCATTER_L 8

int dpgd_run_is_scatter(const dpgd_config *c)
{
  return strncmp(c->model_type, "scatter-", 8) == 0;
}

/* *ds (images) replaced by its features (cache_path: NULL for none). */
static int swap_features(dpgd_dataset **ds, size_t groups, int threads, const char *cache_path)
{
  dpgd_scatter_opts o = {RUN_SCATTER_J, RUN_SCATTER_L, groups};
  dpgd_dataset *f = NULL;
  dpgd_scatter_cache_info info;
  int rc = dpgd_scatter_features(&f, *ds, &o, cache_path, threads, &info);
  if (rc) return rc;
  if (cache_path && info.write_rc)
    dpgd_notice("the features were computed but not cached (%s); set data.feature_cache to "
                "a writable folder, or the next run computes them again",
                dpgd_error_last());
  dpgd_data_free(*ds);
  *ds = f;
  return DPGD_OK;
}

/* The cache file is named by the split, the transform and the example count (the header
 * decides whether it is valid). */
static int to_features(dpgd_dataset **ds, const char *cache_dir, const char *split,
                       const dpgd_config *c)
{
  char path[DPGD_CONFIG_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/scatter-J%d-L%d-%s-%zu.feat", cache_dir, RUN_SCATTER_J,
           RUN_SCATTER_L, split, (*ds)->n);
  return swap_features(ds, c->model_scatter_groups, c->model_threads, path);
}

int dpgd_train_scatter_features(dpgd_dataset **ds, size_t groups, int threads)
{
  return swap_features(ds, groups, threads, NULL);
}

int dpgd_run_features(dpgd_dataset **train, dpgd_dataset **test, const dpgd_config *c,
                      const char *data_dir)
{
  if (!dpgd_run_is_scatter(c)) return DPGD_OK;
  const char *dir = c->data_feature_cache[0] ? c->data_feature_cache : data_dir;
  /* A named cache folder is made as `mkdir -p` would; if that fails, the features are
   * computed all the same and swap_features says why they were not cached. */
  char failed[DPGD_CONFIG_PATH_MAX];
  if (c->data_feature_cache[0]) (void)dpgd_path_mkdirs(dir, 0755, failed, sizeof failed);
  int rc = to_features(train, dir, c->data_validation ? "train-head" : "train", c);
  if (!rc && test && *test)
    rc = to_features(test, dir, c->data_validation ? "validation" : "test", c);
  return rc;
}

/* Upper bound on the squared norm of v (d floats): the squares are exact in double and
 * their recursive sum is within (d - 1) 2^-53 of the true sum (relative), so
 * sum (1 + d 2^-52), rounded up, is above it. */
static double sq_norm_up(const float *v, size_t d)
{
  double s = 0;
  for (size_t k = 0; k < d; k++) s += (double)v[k] * v[k];
  return nextafter(s * (1 + (double)d * 0x1p-52), INFINITY);
}

int dpgd_pnsgd_features_bound(dpgd_dataset *ds, double *x2, size_t *scaled)
{
  double bound = (double)ds->d; /* exact: d < 2^53 */
  *x2 = bound;
  *scaled = 0;
  for (size_t i = 0; i < ds->n; i++) {
    float *v = ds->feat + i * ds->d;
    double sq = sq_norm_up(v, ds->d);
    if (!isfinite(sq)) return DPGD_FAIL(DPGD_EFORMAT, "feature example %zu is not finite", i);
    if (sq <= bound) continue;
    (*scaled)++;
    for (int it = 0; sq > bound; it++) {
      if (it == 64) return DPGD_FAIL(DPGD_ERANGE, "feature example %zu cannot be bounded", i);
      float f = (float)(sqrt(bound / sq) * (1 - ldexp(1, it - 24)));
      for (size_t k = 0; k < ds->d; k++) v[k] *= f;
      sq = sq_norm_up(v, ds->d);
    }
  }
  if (*scaled)
    dpgd_notice("pnsgd: %zu feature examples were scaled down to the public norm bound "
                "sqrt(%zu) (train/LASTITERATE.md section 1)",
                *scaled, ds->d);
  return DPGD_OK;
}
