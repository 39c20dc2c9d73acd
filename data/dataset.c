/* dataset.c -- the in-memory dataset: normalised unpacking of chunks, truncation, free.
 * Pixels stay uint8; a chunk becomes floats only when a model asks for it. */
#include <stdlib.h>
#include <string.h>

#include "dpgd_data.h"

void dpgd_data_unpack(float *out, const dpgd_dataset *ds, size_t first, size_t count)
{
  const float scale = 1.0f / (255.0f * ds->std);
  const float shift = ds->mean / ds->std;
  const uint8_t *p = ds->pixels + first * ds->d;
  for (size_t i = 0; i < count * ds->d; i++) out[i] = (float)p[i] * scale - shift;
}

void dpgd_data_unpack_idx(float *out, const dpgd_dataset *ds, const size_t *idx,
                          size_t count)
{
  for (size_t k = 0; k < count; k++) dpgd_data_unpack(out + k * ds->d, ds, idx[k], 1);
}

int dpgd_data_truncate(dpgd_dataset *ds, size_t n)
{
  if (n > ds->n)
    return DPGD_FAIL(DPGD_EINVAL, "cannot keep %zu examples of a dataset of %zu", n, ds->n);
  ds->n = n; /* the buffers keep their size; only the first n are used */
  return DPGD_OK;
}

void dpgd_data_free(dpgd_dataset *ds)
{
  if (!ds) return;
  free(ds->pixels);
  free(ds->labels);
  free(ds);
}
