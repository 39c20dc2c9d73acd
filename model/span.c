/* span.c -- the leaf span of the gradient workspace: how many consecutive dataset
 * indices one leaf of the reduction tree covers, decoupled from the chunk (the most rows
 * one chunk step computes), and the rule that picks it from the sampling rate. */
#include <math.h>
#include <stdint.h>

#include "model_internal.h"

/* Spans stay at most 2^40 indices: far above any dataset, far from size_t overflow. */
#define MAX_SPAN ((size_t)1 << 40)

size_t dpgd_grad_ws_chunk(const dpgd_grad_ws *ws) { return ws->chunk; }

size_t dpgd_grad_ws_span(const dpgd_grad_ws *ws) { return ws->span; }

int dpgd_grad_ws_set_span(dpgd_grad_ws *ws, size_t span)
{
  if (!ws) return DPGD_FAIL(DPGD_EINVAL, "no workspace given");
  if (span == 0 || span % ws->chunk != 0 || span > MAX_SPAN)
    return DPGD_FAIL(DPGD_EINVAL,
                     "leaf span %zu is not a positive multiple of the chunk size %zu "
                     "(at most 2^40)",
                     span, ws->chunk);
  ws->span = span;
  return DPGD_OK;
}

size_t dpgd_model_leaf_span(size_t chunk, double rate)
{
  if (chunk == 0) return 0;
  /* A leaf of chunk / rate indices holds chunk sampled rows on average; a rate of 1 (a
   * full batch), above 1, or not a number keeps span = chunk. */
  double k = rate > 0.0 && rate < 1.0 ? floor(1.0 / rate) : 1.0;
  double most = (double)(MAX_SPAN / chunk);
  if (!(k <= most)) k = most;
  return chunk * (k >= 1.0 ? (size_t)k : 1);
}
