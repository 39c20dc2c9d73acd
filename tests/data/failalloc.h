/* failalloc.h -- allocation-failure injection for tests (STYLE.md 17): the test binary
 * is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free, so every
 * allocation made by our code (and by zlib/libpng, which allocate through our
 * callbacks) can be made to fail, and allocations still live are counted. */
#ifndef DPGD_TEST_FAILALLOC_H
#define DPGD_TEST_FAILALLOC_H

#include <stddef.h>

/* From now on, the allocation number n (0-based) fails and all after it succeed;
 * n < 0 disarms. Resets the counters. */
void failalloc_arm(long n);

/* Allocations attempted since failalloc_arm, and blocks allocated minus freed. */
long failalloc_calls(void);
long failalloc_live(void);

/* The wrappers the linker substitutes for the C library's allocator. */
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

#endif
