/* audit_planted.c -- a TEST-ONLY program: 'dpgd audit' on a run whose noise is 0.1 of
 * what its claim assumes (a planted bug), so that tests/e2e/audit.sh can show the audit
 * catching it. Never installed; the dpgd binary cannot plant the bug.
 * Usage: audit_planted audit --config FILE ... (the arguments of 'dpgd audit');
 * AUDIT_PLANTED_SCALE=s in the environment plants s instead of 0.1 (power studies). */
#include <stdlib.h>

#include "commands.h"

int main(int argc, char **argv)
{
  if (argc < 2) return DPGD_EXIT_USAGE;
  const char *s = getenv("AUDIT_PLANTED_SCALE");
  double scale = s && *s ? strtod(s, NULL) : 0.1;
  return dpgd_cmd_audit_planted(argc - 1, argv + 1, scale);
}
