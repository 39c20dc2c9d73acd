/* main.c -- the dpgd command-line binary: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef DPGD_VERSION
#define DPGD_VERSION "unknown"
#endif

static const struct {
  const char *name;
  dpgd_cmd_fn *fn;
  const char *summary;
} commands[] = {
    {"train", dpgd_cmd_train, "train a private model from an INI config (Algorithms 6/7)"},
    {"eval", dpgd_cmd_eval, "test accuracy of a saved model"},
    {"predict", dpgd_cmd_predict, "classify PNG images with a saved model"},
    {"account", dpgd_cmd_account, "privacy of a composition of mechanisms, every method"},
    {"calibrate", dpgd_cmd_calibrate, "noise (sigma) or budget (B_norm) for a target eps"},
    {"queries", dpgd_cmd_queries, "answer a CSV of users x queries with individual filtering"},
    {"plot", dpgd_cmd_plot, "PNG figures from run directories"},
    {"sweep", dpgd_cmd_sweep, "run a config over seeds and a grid of overrides"},
    {"data", dpgd_cmd_data, "dataset information, examples as PNG ('dpgd data info|png')"},
    {"bench", dpgd_cmd_bench, "benchmarks ('dpgd bench grads')"},
    {"audit", dpgd_cmd_audit, "empirical lower bound on eps from one run with canaries"},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: dpgd <command> [options]   (dpgd <command> --help for details)\n\n"
             "Differentially private full-batch gradient descent with individual privacy\n"
             "filtering and exact (characteristic-function) privacy accounting.\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n  --version  print the version (also 'dpgd version')\n");
  fprintf(f,
          "\nDocumentation: README.md of the source tree (an overview) and docs/ (one page\n"
          "per topic; docs/MATH.md: every formula with its source and its test). 'man dpgd'\n"
          "holds this text and every 'dpgd CMD --help'.\n");
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    dpgd_cli_error("no command given; usage: dpgd <command> [options] (see 'dpgd --help')");
    return DPGD_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return DPGD_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("dpgd %s\n", DPGD_VERSION);
    return DPGD_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  dpgd_cli_error("unknown command '%s' (see 'dpgd --help')", argv[1]);
  return DPGD_EXIT_USAGE;
}
