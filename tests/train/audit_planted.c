/* audit_planted.c -- a TEST-ONLY program: 'dpgd audit' on a run whose noise is 0.1 of
 * what its claim assumes (a planted bug), so that tests/e2e/audit.sh can show the audit
 * catching it. Never installed; the dpgd binary cannot plant the bug.
 * Usage: audit_planted audit --config FILE ... (the arguments of 'dpgd audit'). */
#include "commands.h"

int main(int argc, char **argv)
{
  if (argc < 2) return DPGD_EXIT_USAGE;
  return dpgd_cmd_audit_planted(argc - 1, argv + 1, 0.1);
}
