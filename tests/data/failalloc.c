/* failalloc.c -- the --wrap'ed allocator behind failalloc.h. Frees of blocks the
 * wrapped allocator did not hand out (made before arming) are not counted. */
#include "failalloc.h"

#include <stdint.h>
#include <stdlib.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static long fail_at = -1, calls, live;

void failalloc_arm(long n)
{
  fail_at = n;
  calls = 0;
  live = 0;
}

long failalloc_calls(void) { return calls; }
long failalloc_live(void) { return live; }

static int should_fail(void) { return fail_at >= 0 && calls++ == fail_at; }

void *__wrap_malloc(size_t n)
{
  if (should_fail()) return NULL;
  if (fail_at < 0) calls++;
  void *p = __real_malloc(n);
  if (p) live++;
  return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
  if (should_fail()) return NULL;
  if (fail_at < 0) calls++;
  void *p = __real_calloc(k, n);
  if (p) live++;
  return p;
}

void *__wrap_realloc(void *p, size_t n)
{
  if (should_fail()) return NULL;
  if (fail_at < 0) calls++;
  void *q = __real_realloc(p, n);
  if (q && !p) live++;
  return q;
}

void __wrap_free(void *p)
{
  if (p) live--;
  __real_free(p);
}
