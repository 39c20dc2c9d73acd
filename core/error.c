/* error.c -- the replaceable error handler shared by all dpgd libraries.
 * The default handler keeps the last reason per thread so the CLI can print one
 * clear line; nothing here prints or aborts. */
#include "dpgd_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_reason[1024];

static void default_handler(const char *reason, const char *file, int line, int status)
{
  (void)file;
  (void)line;
  (void)status;
  snprintf(last_reason, sizeof last_reason, "%s", reason);
}

static dpgd_error_handler_t *handler = default_handler;

dpgd_error_handler_t *dpgd_error_set_handler(dpgd_error_handler_t *h)
{
  dpgd_error_handler_t *old = handler;
  handler = h ? h : default_handler;
  return old;
}

int dpgd_error_report(int status, const char *file, int line, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  /* The default handler's buffer is always updated too, so dpgd_error_last works
   * whatever handler the application installed. */
  snprintf(last_reason, sizeof last_reason, "%s", buf);
  handler(buf, file, line, status);
  return status;
}

const char *dpgd_error_last(void) { return last_reason; }

static _Thread_local char notice[1024];
static _Thread_local int notice_pending;

void dpgd_notice(const char *fmt, ...)
{
  size_t at = 0;
  if (notice_pending) { /* joined to the one not taken yet */
    at = strlen(notice);
    at += (size_t)snprintf(notice + at, sizeof notice - at, "; ");
  }
  if (at < sizeof notice) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notice + at, sizeof notice - at, fmt, ap);
    va_end(ap);
  }
  notice_pending = 1;
}

const char *dpgd_notice_take(void)
{
  if (!notice_pending) return NULL;
  notice_pending = 0;
  return notice;
}

void dpgd_error_clear(void) { last_reason[0] = '\0'; }

const char *dpgd_error_str(int status)
{
  switch (status) {
  case DPGD_OK: return "success";
  case DPGD_EINVAL: return "invalid argument";
  case DPGD_ENOMEM: return "out of memory";
  case DPGD_EIO: return "input/output error";
  case DPGD_EFORMAT: return "malformed file";
  case DPGD_ERANGE: return "value out of range";
  case DPGD_ENOCONV: return "did not converge";
  default: return "unknown error";
  }
}
