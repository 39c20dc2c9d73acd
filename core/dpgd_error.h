/* dpgd_error.h -- status codes and the one replaceable error handler of every dpgd
 * library (GSL's GSL_ERROR / gsl_set_error_handler pattern, STYLE.md 7). Part of the
 * core/ leaf; outside code includes it through dpgd_core.h. Library code never prints
 * or exits: it reports through the handler and returns a status. Only the CLI prints. */
#ifndef DPGD_ERROR_H
#define DPGD_ERROR_H

enum {
  DPGD_OK = 0,
  DPGD_EINVAL = 1,  /* invalid argument or configuration value */
  DPGD_ENOMEM = 2,  /* allocation failed */
  DPGD_EIO = 3,     /* file missing, unreadable, or a write failed */
  DPGD_EFORMAT = 4, /* file content malformed: magic, sizes, checksum, truncation */
  DPGD_ERANGE = 5,  /* result not representable / outside the supported range */
  DPGD_ENOCONV = 6  /* an iterative method did not converge */
};

/* The handler receives the formatted reason, the source location and the status.
 * The default handler stores the reason (see dpgd_error_last) and returns. */
typedef void dpgd_error_handler_t(const char *reason, const char *file, int line, int status);

/* Installs h (NULL restores the default) and returns the previous handler. */
dpgd_error_handler_t *dpgd_error_set_handler(dpgd_error_handler_t *h);

/* Formats the reason printf-style, calls the handler, and returns status, so a
 * library function can write `return DPGD_FAIL(DPGD_EIO, "cannot open %s", path);`. */
int dpgd_error_report(int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define DPGD_FAIL(status, ...) dpgd_error_report((status), __FILE__, __LINE__, __VA_ARGS__)

/* The reason of the last error reported on this thread ("" if none). */
const char *dpgd_error_last(void);

/* Clears the last error of this thread. */
void dpgd_error_clear(void);

/* Notices: what a library function wants the user to know without failing (a cache that
 * could not be written). dpgd_notice formats one line and keeps it for this thread (a
 * later notice is joined to one not taken yet with "; "); dpgd_notice_take returns it
 * and forgets it (NULL when there is none). The CLI prints it; library code never does. */
void dpgd_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *dpgd_notice_take(void);

/* A fixed text for a status code ("invalid argument", ...). */
const char *dpgd_error_str(int status);

#endif /* DPGD_ERROR_H */
