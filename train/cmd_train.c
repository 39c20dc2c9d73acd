/* cmd_train.c -- placeholder until its issue lands: the command says so and exits non-zero. */
#include "commands.h"

int dpgd_cmd_train(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return dpgd_cli_not_landed("train", "private training (issue 4)");
}
