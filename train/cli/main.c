/* main.c -- the dpgd command-line binary: dispatches to one subcommand per file. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#ifndef DPGD_VERSION
#define DPGD_VERSION "unknown"
#endif
/* Where cmake --install puts the documentation (GNUInstallDirs): the full configured path,
 * and the bin and doc folders relative to the prefix. */
#ifndef DPGD_DOCDIR
#define DPGD_DOCDIR "/usr/local/share/doc/dpgd"
#endif
#ifndef DPGD_BINDIR_REL
#define DPGD_BINDIR_REL "bin"
#endif
#ifndef DPGD_DOCDIR_REL
#define DPGD_DOCDIR_REL "share/doc/dpgd"
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
    {"select", dpgd_cmd_select, "private hyperparameter selection over a sweep's grid"},
    {"data", dpgd_cmd_data, "dataset information, examples as PNG ('dpgd data info|png')"},
    {"bench", dpgd_cmd_bench, "benchmarks ('dpgd bench grads')"},
    {"audit", dpgd_cmd_audit, "empirical lower bound on eps from one run with canaries"},
};

/* The installed documentation folder: DPGD_DOCDIR_REL under the prefix this binary runs
 * from (PREFIX/DPGD_BINDIR_REL/dpgd, so any --prefix given to cmake --install) when
 * docs/MATH.md is there, else the configured DPGD_DOCDIR (where an install puts it; the
 * build tree's binary, which writes the man page, gives this one). */
static const char *docdir(char *buf, size_t size)
{
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return DPGD_DOCDIR;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  size_t bl = strlen(DPGD_BINDIR_REL);
  if (!slash) return DPGD_DOCDIR;
  *slash = 0; /* exe: the binary's folder */
  size_t el = strlen(exe);
  if (el <= bl || exe[el - bl - 1] != '/' || strcmp(exe + el - bl, DPGD_BINDIR_REL))
    return DPGD_DOCDIR;
  exe[el - bl - 1] = 0;     /* exe: the prefix */
  char math[PATH_MAX + 96]; /* buf (at most PATH_MAX + 64) and "/docs/MATH.md" */
  int m = snprintf(buf, size, "%s/%s", exe, DPGD_DOCDIR_REL);
  if (m < 0 || (size_t)m >= size) return DPGD_DOCDIR;
  snprintf(math, sizeof math, "%s/docs/MATH.md", buf);
  return access(math, R_OK) == 0 ? buf : DPGD_DOCDIR;
}

static void usage(FILE *f)
{
  char buf[PATH_MAX + 64];
  fprintf(f, "usage: dpgd <command> [options]   (dpgd <command> --help for details)\n\n"
             "Differentially private full-batch gradient descent with individual privacy\n"
             "filtering and exact (characteristic-function) privacy accounting.\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n  --version  print the version (also 'dpgd version')\n");
  fprintf(f,
          "\nDocumentation, installed in %s/ and in the source tree: README.md\n"
          "(an overview), docs/ (one page per topic; docs/MATH.md: every formula with its\n"
          "source and its test) and the derivations beside the code (accounting/, model/,\n"
          "train/). 'man dpgd' holds this text and every 'dpgd CMD --help'.\n",
          docdir(buf, sizeof buf));
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
