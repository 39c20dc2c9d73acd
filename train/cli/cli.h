/* cli.h -- what every subcommand of the dpgd binary shares: the one-line error
 * convention and the subcommand signature. Only the CLI prints and exits (STYLE.md 7). */
#ifndef DPGD_CLI_H
#define DPGD_CLI_H

#include <stdio.h>

/* Exit codes of the dpgd binary. */
enum { DPGD_EXIT_OK = 0, DPGD_EXIT_ERROR = 1, DPGD_EXIT_USAGE = 2 };

/* A subcommand: argv[0] is the subcommand's name. Returns the process exit code. */
typedef int dpgd_cmd_fn(int argc, char **argv);

/* Prints "dpgd: error: <message>" on one line to stderr; returns DPGD_EXIT_ERROR. */
int dpgd_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Same, exit code DPGD_EXIT_USAGE, with a hint to run --help. */
int dpgd_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the last library error (dpgd_error_last) for a failed status, prefixed with
 * what was being done; returns DPGD_EXIT_ERROR. */
int dpgd_cli_status_error(int status, const char *doing);

/* True if argv has -h or --help. */
int dpgd_cli_wants_help(int argc, char **argv);

/* Parses a finite double / a non-negative integer from a flag value; on failure prints
 * an error naming the flag and returns non-zero. */
int dpgd_cli_parse_double(const char *flag, const char *text, double *out);
int dpgd_cli_parse_size(const char *flag, const char *text, size_t *out);

#endif /* DPGD_CLI_H */
