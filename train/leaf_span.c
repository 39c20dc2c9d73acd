/* leaf_span.c -- the gradient workspace's leaf span for a run, from the config's public
 * sampling rate (dpgd_model_leaf_span): the one rule the trainer and every MPI rank
 * apply, so that they sum in the same tree. */
#include "dpgd_train.h"

int dpgd_run_set_leaf_span(dpgd_grad_ws *ws, const dpgd_config *c, size_t n)
{
  if (!ws || !c) return DPGD_FAIL(DPGD_EINVAL, "no workspace or config given");
  double rate = 1.0;
  if (c->train_sampling == DPGD_SAMPLING_POISSON) rate = c->train_sample_rate;
  else if (c->train_sampling == DPGD_SAMPLING_SUBSET && n > 0)
    rate = (double)c->train_batch_size / (double)n;
  return dpgd_grad_ws_set_span(ws, dpgd_model_leaf_span(dpgd_grad_ws_chunk(ws), rate));
}
