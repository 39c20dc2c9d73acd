/* rng_model.c -- a model's initial parameters from the run's init stream (keyed by the
 * whole seed in research mode, getrandom in secure mode): one 64-bit word per parameter
 * (train/RUN_FORMAT.md). Apart from noise.c so that the streams do not depend on model/. */
#include "dpgd_train.h"

int dpgd_rng_init_model(dpgd_model *m, int mode, const dpgd_seed *seed)
{
  dpgd_rng *r = dpgd_rng_alloc(mode, seed, DPGD_STREAM_INIT);
  if (!r) return DPGD_FAIL(DPGD_ENOMEM, "no memory for the init stream");
  int rc = dpgd_model_init_draw(m, dpgd_rng_bits, r);
  dpgd_rng_free(r);
  return rc;
}
