/* handles.c -- heap handles for callers that cannot size or read dpgd's structs, such as
 * the Python bindings (python/dpgd): a configuration on the heap and a run's directory. */
#include <stdlib.h>

#include "run_internal.h"

dpgd_config *dpgd_config_alloc(void)
{
  dpgd_config *c = malloc(sizeof *c);
  if (!c) {
    DPGD_FAIL(DPGD_ENOMEM, "no memory for a configuration");
    return NULL;
  }
  dpgd_config_defaults(c);
  return c;
}

void dpgd_config_free(dpgd_config *c) { free(c); }

const char *dpgd_run_dir(const dpgd_run *r) { return r->dir; }
