/* mem.c -- dpgd_free: releases a buffer libdpgd allocated for its caller (the byte
 * strings of dpgd_*_serialize, dpgd_ledger_save), with the allocator the library itself
 * was linked with, whatever allocator the calling program or binding uses. */
#include <stdlib.h>

#include "dpgd_core.h"

void dpgd_free(void *p) { free(p); }
