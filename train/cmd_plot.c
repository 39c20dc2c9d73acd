/* cmd_plot.c -- placeholder until its issue lands: the command says so and exits non-zero. */
#include "commands.h"

int dpgd_cmd_plot(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("plot", "experiments and figures (issue 6)");
}

int dpgd_cmd_sweep(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("sweep", "experiments and figures (issue 6)");
}
