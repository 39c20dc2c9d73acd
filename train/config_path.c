/* config_path.c -- paths in the configuration: which ones config.ini can carry (checked
 * before a run writes anything, so that its own --resume reads back what it wrote), and
 * the splitting of key lines longer than inih's line buffer (long paths). */
#include <stdio.h>
#include <string.h>

#include "dpgd_config.h"

int dpgd_config_check_path(const char *path, const char *what)
{
  size_t n = strlen(path);
  if (n >= DPGD_CONFIG_PATH_MAX)
    return DPGD_FAIL(DPGD_EINVAL, "%s: path of %zu characters, longer than %d", what, n,
                     DPGD_CONFIG_PATH_MAX - 1);
  if (strpbrk(path, "\n\r"))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: a path with a line break cannot be written to "
                     "config.ini",
                     what);
  if (n && (strchr(" \t", path[0]) || strchr(" \t", path[n - 1])))
    return DPGD_FAIL(DPGD_EINVAL,
                     "%s: '%s': a path starting or ending with a space cannot "
                     "be written to config.ini",
                     what, path);
  for (size_t i = 1; i < n; i++)
    if (path[i] == ';' && (path[i - 1] == ' ' || path[i - 1] == '\t'))
      return DPGD_FAIL(DPGD_EINVAL, "%s: '%s': ' ;' would start a comment in config.ini", what,
                       path);
  return DPGD_OK;
}

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && strchr(" \t\r\n", s[n - 1])) s[--n] = '\0';
  return s;
}

int dpgd_config_split_line(char *line, char **name, char **value)
{
  char *s = trim(line), *eq = strpbrk(s, "=:");
  if (s[0] == '[' || !eq) return DPGD_EINVAL;
  *eq = '\0';
  char *v = eq + 1;
  for (char *q = v + 1; *v && *q; q++)
    if (*q == ';' && (q[-1] == ' ' || q[-1] == '\t')) {
      *q = '\0';
      break;
    }
  *name = trim(s);
  *value = trim(v);
  return DPGD_OK;
}
