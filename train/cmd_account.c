/* cmd_account.c -- placeholder until its issue lands: the command says so and exits non-zero. */
#include "commands.h"

int dpgd_cmd_account(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("account", "the accountant (issue 5)");
}

int dpgd_cmd_calibrate(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("calibrate", "the accountant (issue 5)");
}
