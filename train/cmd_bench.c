/* cmd_bench.c -- placeholder until its issue lands: the command says so and exits non-zero. */
#include "commands.h"

int dpgd_cmd_bench(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("bench", "the per-example gradient engine (issue 3)");
}
