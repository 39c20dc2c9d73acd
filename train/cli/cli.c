/* cli.c -- error printing and small argument parsers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dpgd_core.h"

int dpgd_cli_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("dpgd: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return DPGD_EXIT_ERROR;
}

int dpgd_cli_usage_error(const char *cmd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("dpgd: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see 'dpgd %s --help')\n", cmd);
  va_end(ap);
  return DPGD_EXIT_USAGE;
}

int dpgd_cli_status_error(int status, const char *doing)
{
  const char *why = dpgd_error_last();
  if (!why[0]) why = dpgd_error_str(status);
  if (doing && doing[0]) return dpgd_cli_error("%s: %s", doing, why);
  return dpgd_cli_error("%s", why);
}

int dpgd_cli_wants_help(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  return 0;
}

int dpgd_cli_parse_double(const char *flag, const char *text, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = text ? strtod(text, &end) : 0.0;
  if (!text || end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
    dpgd_cli_error("%s: '%s' is not a finite number", flag, text ? text : "");
    return 1;
  }
  *out = v;
  return 0;
}

int dpgd_cli_parse_size(const char *flag, const char *text, size_t *out)
{
  char *end = NULL;
  errno = 0;
  if (!text || !*text || text[0] == '-') {
    dpgd_cli_error("%s: '%s' is not a non-negative integer", flag, text ? text : "");
    return 1;
  }
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE) {
    dpgd_cli_error("%s: '%s' is not a non-negative integer", flag, text);
    return 1;
  }
  *out = (size_t)v;
  return 0;
}
