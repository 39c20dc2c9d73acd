/* rows.c -- the engine's clipping rule and clipped sum applied to per-example gradients
 * that the caller computed itself (a model dpgd does not have): the same clip_scale,
 * squared norm and row accumulation as the fused step, so model/SENSITIVITY.md's contract
 * holds for these rows as it does for the CNN's; and secure mode's exact integer sum of them. */
#include <math.h>
#include <stdlib.h>

#include "model_internal.h"

int dpgd_model_clip_rows_sum(double *sum, double *sqnorm_post, const float *G,
                             const double *caps, size_t B, size_t P)
{
  if (!sum || !sqnorm_post || !G || !caps || P == 0)
    return DPGD_FAIL(DPGD_EINVAL, "clip_rows_sum: NULL argument or zero-length rows");
  for (size_t i = 0; i < B; i++) {
    sqnorm_post[i] = 0.0;
    /* A row with cap 0 is never read (it may hold anything, NaN included): the point
     * contributes exactly nothing, as in the fused step. */
    if (!(caps[i] > 0)) continue;
    const float *g = G + i * P;
    double pre;
    /* SENSITIVITY.md 2: sqnorm_d takes each term through at most P + 3 <= P + 8
     * roundings, the count clip_scale assumes. */
    float f = dpgd_clip_scale(dpgd_sqnorm_d(g, P), caps[i], P, &pre, &sqnorm_post[i]);
    /* SENSITIVITY.md 4: f * g[p] is exact in double; one rounding per row added. */
    dpgd_accumulate_rows(sum, g, &f, 1, P);
  }
  return DPGD_OK;
}

int dpgd_model_clip_rows_sum_int(int64_t *sum, double *sqnorm_post, const float *G,
                                 const double *caps, size_t B, size_t P, int F)
{
  if (!sum || !sqnorm_post || !G || !caps || P == 0 || F < 0 || F > DPGD_GRID_MAX_BITS)
    return DPGD_FAIL(DPGD_EINVAL, "clip_rows_sum_int: NULL argument, zero-length rows or "
                                  "grid outside 0..40");
  int st = dpgd_grid_caps_fit(caps, B, F);
  int64_t *irow = st ? NULL : malloc(P * sizeof *irow); /* the rare halving's scratch */
  if (!st && !irow) st = DPGD_FAIL(DPGD_ENOMEM, "no memory for a row of %zu", P);
  for (size_t i = 0; !st && i < B; i++) {
    sqnorm_post[i] = 0.0;
    if (!(caps[i] > 0)) continue; /* never read, as above */
    const float *g = G + i * P;
    dpgd_grid_row_add(sum, irow, g, P, dpgd_sqnorm_d(g, P), caps[i], P, F, &sqnorm_post[i]);
  }
  free(irow);
  return st;
}
