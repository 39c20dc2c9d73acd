/* cmd_eval.c -- placeholder until its issue lands: the command says so and exits non-zero. */
#include "commands.h"

int dpgd_cmd_eval(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("eval", "private training (issue 4)");
}

int dpgd_cmd_predict(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("predict", "private training (issue 4)");
}
