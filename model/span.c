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

/* Leaves hold at least MIN_CHUNKS chunks. Each leaf costs the tree a memset of its P
 * doubles and one addition of P doubles into its parent, as much as about half a chunk's
 * clipped sum; with leaves of one chunk that was 3-4 % of the CNN's full-batch pass (docs/SPEED.md),
 * with four under 1 %, and the tests' small datasets (a few hundred examples) still have
 * several leaves to split among threads and ranks. */
#define MIN_CHUNKS 4.0

size_t dpgd_model_leaf_span(size_t chunk, double rate)
{
  if (chunk == 0) return 0;
  /* A leaf of chunk / rate indices holds chunk sampled rows on average; a rate of 1 (a
   * full batch), above 1, or not a number gives the fewest chunks. */
  double k = rate > 0.0 && rate < 1.0 ? floor(1.0 / rate) : 1.0;
  if (k < MIN_CHUNKS) k = MIN_CHUNKS;
  double most = (double)(MAX_SPAN / chunk);
  if (!(k <= most)) k = most;
  return chunk * (k >= 1.0 ? (size_t)k : 1);
}
