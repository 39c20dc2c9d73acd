/* rows.c -- the engine's clipping rule and clipped sum applied to per-example gradients
 * that the caller computed itself (a model dpgd does not have): the same clip_scale,
 * squared norm and row accumulation as the fused step, so model/SENSITIVITY.md's contract
 * holds for these rows as it does for the CNN's. */
#include <math.h>

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
