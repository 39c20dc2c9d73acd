/* audit_planted.c -- a TEST-ONLY program: 'dpgd audit' on a run with a planted bug, so
 * that tests/e2e/audit.sh can show the audit catching it. Never installed; the dpgd
 * binary cannot plant a bug.
 * Usage: audit_planted audit --config FILE ... (the arguments of 'dpgd audit').
 * AUDIT_PLANTED_BUG in the environment picks the bug: noise (default: the noise scaled
 * by AUDIT_PLANTED_SCALE, default 0.1, while the claim assumes the configured noise),
 * clip (the run clips to 2C while the noise and the claim assume C), rate (Poisson
 * sampling at twice the rate the claim accounts). */
#include <stdlib.h>
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
  if (argc < 2) return DPGD_EXIT_USAGE;
  const char *bug = getenv("AUDIT_PLANTED_BUG"), *s = getenv("AUDIT_PLANTED_SCALE");
  if (bug && !strcmp(bug, "clip")) return dpgd_cmd_audit_planted(argc - 1, argv + 1, 1, 2, 1);
  if (bug && !strcmp(bug, "rate")) return dpgd_cmd_audit_planted(argc - 1, argv + 1, 1, 1, 0.5);
  double scale = s && *s ? strtod(s, NULL) : 0.1;
  return dpgd_cmd_audit_planted(argc - 1, argv + 1, scale, 1, 1);
}
